//! Bad build input gets an error naming the problem and the fix, never a
//! bindgen panic: the build script is run (through cargo, in a target folder
//! of its own) against deliberately broken setups.

use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "cuda-mem-sys-build-errors-{name}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `cargo build` of this crate with `env` set (and every CUDA variable unset);
/// returns (success, stderr).
fn build_with(env: &[(&str, &Path)]) -> (bool, String) {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(manifest)
        .args(["build", "--quiet", "-p", "cuda-mem-sys", "--lib"])
        .env("CARGO_TARGET_DIR", manifest.join("target/build-errors"));
    for var in [
        "CUDA_MEM_SYS_INCLUDE_DIR",
        "CUDA_PATH",
        "CUDA_HOME",
        "CUDA_ROOT",
        "CUDA_TOOLKIT_ROOT_DIR",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("running cargo");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_clean_error(stderr: &str, expected: &[&str]) {
    assert!(
        !stderr.contains("panicked"),
        "the build script panicked:\n{stderr}"
    );
    for e in expected {
        assert!(
            stderr.contains(e),
            "expected {e:?} in the build error:\n{stderr}"
        );
    }
}

#[test]
fn an_include_dir_without_cuda_h_is_named() {
    let empty = scratch("empty");
    let (ok, stderr) = build_with(&[("CUDA_MEM_SYS_INCLUDE_DIR", &empty)]);
    assert!(!ok);
    assert_clean_error(
        &stderr,
        &[
            "CUDA_MEM_SYS_INCLUDE_DIR=",
            "holds no cuda.h",
            "cargo xtask headers",
        ],
    );
}

#[test]
fn a_cuda_path_that_points_nowhere_is_named() {
    let (ok, stderr) = build_with(&[("CUDA_PATH", Path::new("/nonexistent/cuda"))]);
    assert!(!ok);
    assert_clean_error(&stderr, &["CUDA_PATH=/nonexistent/cuda points nowhere"]);
}

#[test]
fn headers_older_than_12_0_are_refused() {
    let old = scratch("old");
    std::fs::write(old.join("cuda.h"), "#define CUDA_VERSION 11080\n").unwrap();
    let (ok, stderr) = build_with(&[("CUDA_MEM_SYS_INCLUDE_DIR", &old)]);
    assert!(!ok);
    assert_clean_error(&stderr, &["release 11.8", "needs 12.0 or newer"]);
}

#[test]
fn missing_libclang_is_named_with_the_package_to_install() {
    let Some(include) = option_env!("CUDA_MEM_SYS_INCLUDE_DIRS") else {
        eprintln!("skipped: built without CUDA headers, so libclang is never needed");
        return;
    };
    let include = std::env::split_paths(include).next().unwrap();
    let (ok, stderr) = build_with(&[
        ("CUDA_MEM_SYS_INCLUDE_DIR", &include),
        ("LIBCLANG_PATH", Path::new("/nonexistent/libclang")),
    ]);
    assert!(!ok);
    assert_clean_error(&stderr, &["libclang was not found", "libclang-19-dev"]);
}
