//! The builds of the device suite ([`super::suite`]) that go to a GPU
//! machine, one function each for the bundle and the matrix: the test
//! binaries, the examples, the wrapper crate's device tests, each copied
//! into a bundle's folder.

use super::suite::{self, WRAPPER};
use crate::cmd::{bundle_build, cargo, json_str};
use std::path::{Path, PathBuf};

/// The target folder of every release's device build, here and in `gpu-bundle --matrix`.
pub fn device_target_dir(workspace: &Path) -> PathBuf {
    workspace.join("target/device-compile")
}

/// Whether the builds for the GPU leave out cuda-mem-sys's default features
/// (`bindgen`): `gpu-bundle --matrix --no-bindgen`, the build a library
/// following the README makes (the committed bindings, no bindgen compiled).
static WITHOUT_BINDGEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Builds from here on leave out the default features (`--no-default-features`).
pub fn without_bindgen() {
    WITHOUT_BINDGEN.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// One cargo command of a build for the GPU: cuda-mem-sys with `features`
/// against the headers in `include`, in `target_dir`, with no debug
/// information (the symbol table stays: abi_symbols reads it); cargo's JSON
/// lines on its standard output.
fn for_gpu(
    workspace: &Path,
    args: &[&str],
    features: &str,
    include: &Path,
    target_dir: &Path,
) -> Result<String, String> {
    let mut cmd = cargo(workspace);
    cmd.args(args);
    if WITHOUT_BINDGEN.load(std::sync::atomic::Ordering::Relaxed) {
        cmd.arg("--no-default-features");
    }
    let out = bundle_build(
        cmd.args(["--features", features])
            .env(generator::locate::INCLUDE_DIR_VAR, include)
            .env("CARGO_TARGET_DIR", target_dir),
    )?;
    if !out.status.success() {
        return Err(format!(
            "cargo {} (features {features:?}) against {} failed",
            args.join(" "),
            include.display()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The device-test binaries `tests` (every one of the suite where empty)
/// built with `features`, each copied into `into/bin/<name><suffix>`.
pub fn tests(
    workspace: &Path,
    include: &Path,
    features: &str,
    tests: &[&str],
    target_dir: &Path,
    into: &Path,
    suffix: &str,
) -> Result<(), String> {
    let every = suite::device_test_names();
    let tests = if tests.is_empty() { &every[..] } else { tests };
    // abi-proofs' symbol check needs its generated bindings (`bindgen`); the
    // builds with it prove the symbols of the same committed bindings.
    let tests: Vec<&str> = tests
        .iter()
        .copied()
        .filter(|t| {
            !(WITHOUT_BINDGEN.load(std::sync::atomic::Ordering::Relaxed) && *t == "abi_symbols")
        })
        .collect();
    let mut args = vec!["test", "--no-run"];
    for p in ["cuda-mem-sys", "abi-proofs"] {
        args.extend(["--package", p]);
    }
    for t in &tests {
        args.extend(["--test", t]);
    }
    let stdout = for_gpu(workspace, &args, features, include, target_dir)?;
    for line in stdout.lines() {
        let (Some(exe), Some(name)) = (json_str(line, "executable"), json_str(line, "name")) else {
            continue;
        };
        if !line.contains("\"test\":true") || !tests.contains(&name) {
            continue;
        }
        let dest = into.join("bin").join(format!("{name}{suffix}"));
        std::fs::copy(exe, &dest).map_err(|e| format!("copying {exe}: {e}"))?;
    }
    Ok(())
}

/// Every example built with `features` against `include` (into the tests'
/// target folder), copied into `into/examples/`.
pub fn examples(
    workspace: &Path,
    include: &Path,
    features: &str,
    target_dir: &Path,
    into: &Path,
) -> Result<(), String> {
    let args = ["build", "--examples", "--package", "cuda-mem-sys"];
    let stdout = for_gpu(workspace, &args, features, include, target_dir)?;
    let dir = into.join("examples");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut copied = vec![];
    for line in stdout.lines() {
        if !line.contains("\"kind\":[\"example\"]") {
            continue;
        }
        let (Some(exe), Some(name)) = (json_str(line, "executable"), json_str(line, "name")) else {
            continue;
        };
        std::fs::copy(exe, dir.join(name)).map_err(|e| format!("copying {exe}: {e}"))?;
        copied.push(name.to_string());
    }
    match suite::EXAMPLES
        .iter()
        .find(|e| !copied.iter().any(|c| c == e.name))
    {
        Some(e) => Err(format!("the example {} was not built", e.name)),
        None => Ok(()),
    }
}

/// The wrapper's device tests ([`WRAPPER`], `wrap/tests/wrap_device.rs`)
/// built against the headers in `include` with `features` of cuda-mem-sys
/// (`bindgen` for a linked build; an empty list means the same) in
/// `target_dir`, the executable copied to `dest`.
pub fn wrapper(
    workspace: &Path,
    include: &Path,
    features: &str,
    target_dir: &Path,
    dest: &Path,
) -> Result<(), String> {
    let without = WITHOUT_BINDGEN.load(std::sync::atomic::Ordering::Relaxed);
    let features = if features.is_empty() && !without {
        "bindgen"
    } else {
        features
    };
    let args = [
        "test",
        "--no-run",
        "-p",
        WRAPPER.package,
        "--test",
        WRAPPER.name,
    ];
    let stdout = for_gpu(workspace, &args, features, include, target_dir)?;
    let exe = stdout
        .lines()
        .filter(|l| l.contains("\"test\":true"))
        .find_map(|l| {
            (json_str(l, "name") == Some(WRAPPER.name))
                .then(|| json_str(l, "executable"))
                .flatten()
        })
        .ok_or(format!("cargo named no {} executable", WRAPPER.name))?;
    std::fs::copy(exe, dest).map_err(|e| format!("copying {exe}: {e}"))?;
    Ok(())
}
