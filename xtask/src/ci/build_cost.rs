//! What a build of the crate costs its users, checked in CI: one copy of each
//! build dependency, and a build without the `bindgen` feature that needs no
//! libclang and compiles neither bindgen nor syn. Also the one-line dependent
//! that `bench-build` times.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A one-line library depending on this crate with `dependency` as its
/// dependency spec (`{ path = "...", default-features = false }`), in `dir`.
pub fn dependent(workspace: &Path, dir: &Path, features: &str) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir.join("src")).map_err(|e| e.to_string())?;
    let manifest = dir.join("Cargo.toml");
    std::fs::write(
        &manifest,
        format!(
            "[package]\nname = \"cuda-mem-sys-user\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n\
             [dependencies]\ncuda-mem-sys = {{ path = {:?}{features} }}\n\n[workspace]\n",
            workspace.display().to_string()
        ),
    )
    .map_err(|e| e.to_string())?;
    std::fs::write(dir.join("src/lib.rs"), "pub use cuda_mem_sys;\n").map_err(|e| e.to_string())?;
    Ok(manifest)
}

/// `cargo tree -d` over normal and build dependencies, all targets: the
/// duplicated packages it prints (empty: none).
fn duplicates(manifest: &Path, package: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "-d",
            "-e",
            "normal,build",
            "--target",
            "all",
            "-p",
            package,
        ])
        .arg("--manifest-path")
        .arg(manifest)
        .args(args)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "cargo tree failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Fails when a normal or build dependency of the crate is compiled twice
/// (two versions of syn, as bindgen's and the generator's once were). Proves
/// the check on a manifest with that very mistake first.
pub fn no_duplicate_dependencies(workspace: &Path) -> Result<(), String> {
    let wrong = workspace.join("target/ci-duplicates");
    std::fs::create_dir_all(wrong.join("src")).map_err(|e| e.to_string())?;
    std::fs::write(
        wrong.join("Cargo.toml"),
        "[package]\nname = \"duplicated\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n\
         [build-dependencies]\nbindgen = \"0.73\"\nsyn = \"2\"\n\n[workspace]\n",
    )
    .map_err(|e| e.to_string())?;
    std::fs::write(wrong.join("src/lib.rs"), "").map_err(|e| e.to_string())?;
    let caught = duplicates(&wrong.join("Cargo.toml"), "duplicated", &[])?;
    if !caught.contains("syn v2") || !caught.contains("syn v3") {
        return Err(format!(
            "the duplicate check missed syn 2 beside bindgen's syn 3:\n{caught}"
        ));
    }
    println!("the check catches syn 2 beside bindgen's syn 3");
    let manifest = workspace.join("Cargo.toml");
    for features in [&[][..], &["--all-features"], &["--no-default-features"]] {
        let found = duplicates(&manifest, "cuda-mem-sys", features)?;
        if !found.is_empty() {
            return Err(format!(
                "cuda-mem-sys compiles these dependencies twice ({features:?}):\n{found}"
            ));
        }
    }
    println!("cargo tree -d -e normal,build: nothing duplicated");
    Ok(())
}

/// A one-line dependent with `default-features = false`, built where libclang
/// cannot be found (`LIBCLANG_PATH` at an empty folder), without CUDA and with
/// the pinned headers: it builds, and neither its dependency tree nor its
/// target folder holds bindgen or syn.
pub fn builds_without_bindgen(workspace: &Path, pinned: &Path) -> Result<(), String> {
    let dir = workspace.join("target/ci-no-bindgen");
    let manifest = dependent(workspace, &dir, ", default-features = false")?;
    let no_libclang = dir.join("no-libclang");
    std::fs::create_dir_all(&no_libclang).map_err(|e| e.to_string())?;
    let tree = Command::new(env!("CARGO"))
        .args([
            "tree",
            "-e",
            "normal,build",
            "--target",
            "all",
            "--prefix",
            "none",
        ])
        .arg("--manifest-path")
        .arg(&manifest)
        .output()
        .map_err(|e| e.to_string())?;
    let tree = String::from_utf8_lossy(&tree.stdout).into_owned();
    let banned = |text: &str| {
        ["bindgen", "clang-sys", "syn "]
            .into_iter()
            .filter(|b| text.lines().any(|l| l.starts_with(b)))
            .collect::<Vec<_>>()
    };
    if !tree.contains("cuda-mem-sys") || !banned(&tree).is_empty() {
        return Err(format!(
            "the default-features = false tree holds {:?}:\n{tree}",
            banned(&tree)
        ));
    }
    for (what, include) in [("no CUDA", None), ("the CUDA 13.0 headers", Some(pinned))] {
        let target = dir.join(if include.is_some() {
            "t-headers"
        } else {
            "t-none"
        });
        let mut c = Command::new(env!("CARGO"));
        c.args(["build", "--manifest-path"])
            .arg(&manifest)
            .env("CARGO_TARGET_DIR", &target)
            .env("LIBCLANG_PATH", &no_libclang);
        for var in generator::locate::ROOT_VARS {
            c.env_remove(var);
        }
        if let Some(i) = include {
            c.env(generator::locate::INCLUDE_DIR_VAR, i);
        }
        crate::cmd::run_cmd(&mut c)?;
        let compiled: Vec<String> = std::fs::read_dir(target.join("debug/deps"))
            .map_err(|e| e.to_string())?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("libbindgen-") || n.starts_with("libsyn-"))
            .collect();
        if !compiled.is_empty() {
            return Err(format!(
                "the build without bindgen ({what}) compiled {compiled:?}"
            ));
        }
        println!(
            "default-features = false, {what}, no libclang: built, no bindgen or syn compiled"
        );
    }
    Ok(())
}

/// `cargo xtask build-cost`: the two checks CI runs, alone.
pub fn check(workspace: &Path) -> Result<(), String> {
    let pinned = crate::headers::fetch(workspace, generator::release::PINNED_RELEASE)?;
    no_duplicate_dependencies(workspace)?;
    builds_without_bindgen(workspace, &pinned)
}
