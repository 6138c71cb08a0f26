//! `cargo xtask gpu-bundle`: every test binary, built here against the CUDA
//! 13.0 headers (the GPU machine's toolkit and driver), in `.gpu-bundle/`
//! with `run.sh`, which runs them all and writes `summary.json`.

use crate::cmd::run_cmd;
use crate::headers;
use std::path::Path;
use std::process::Command;

/// The release the GPU machine's driver and toolkit implement.
const GPU_RELEASE: &str = "13.0";

/// Builds of the test suite that go to the GPU: (name suffix, cargo features,
/// test targets; empty for all). The feature builds only carry the tests
/// whose outcome the feature changes, to keep the bundle small.
const VARIANTS: [(&str, &str, &[&str]); 6] = [
    ("", "", &[]),
    // Run-time loading: the whole device suite through the loader, with the
    // static runtime and with libcudart.so loaded too.
    ("-loaded", "dynamic-loading", &[]),
    (
        "-loaded-dynamic-cudart",
        "dynamic-loading,dynamic-cudart",
        &[],
    ),
    (
        "-loaded-ptds",
        "dynamic-loading,per-thread-default-stream",
        &["abi_symbols", "device_smoke"],
    ),
    (
        "-ptds",
        "per-thread-default-stream",
        &["abi_symbols", "device_smoke"],
    ),
    (
        "-dynamic-cudart",
        "dynamic-cudart",
        &["abi_symbols", "device_smoke"],
    ),
];

/// The test targets that touch a GPU (the rest are checks against the C
/// compiler, which prove nothing more on the GPU machine).
pub const ON_GPU: [&str; 7] = [
    "abi_symbols",
    "device_smoke",
    "vmm",
    "unified_addressing",
    "stream_ordered_allocator",
    "tensor_map",
    "external_interop",
];

/// The target folder of every release's device build, here and in `gpu-bundle --matrix`.
pub fn device_target_dir(workspace: &Path) -> std::path::PathBuf {
    workspace.join("target/device-compile")
}

pub fn run(workspace: &Path) -> Result<(), String> {
    let include = headers::fetch(workspace, GPU_RELEASE)?;
    let bundle = workspace.join(".gpu-bundle");
    let _ = std::fs::remove_dir_all(&bundle);
    std::fs::create_dir_all(bundle.join("bin")).map_err(|e| e.to_string())?;
    for (suffix, features, tests) in VARIANTS {
        let target_dir = workspace
            .join("target/gpu-bundle")
            .join(format!("build{suffix}"));
        build_tests(
            workspace,
            &include,
            features,
            tests,
            &target_dir,
            &bundle,
            suffix,
        )?;
    }
    // The examples, built like the first variant's tests (run.sh runs them).
    crate::examples::bundle(
        workspace,
        &include,
        &workspace.join("target/gpu-bundle/build"),
        &bundle,
    )?;
    bench(workspace, &include, &bundle)?;
    // The symbol test preprocesses the same headers on the GPU machine.
    run_cmd(
        Command::new("cp")
            .arg("-r")
            .arg(&include)
            .arg(bundle.join("include")),
    )?;
    std::fs::write(bundle.join("run.sh"), RUN_SH).map_err(|e| e.to_string())?;
    std::fs::write(
        bundle.join("headers.txt"),
        format!(
            "CUDA {GPU_RELEASE} headers from {}\n",
            headers::wheel_names(workspace, GPU_RELEASE)
        ),
    )
    .map_err(|e| e.to_string())?;
    run_cmd(Command::new("chmod").arg("+x").arg(bundle.join("run.sh")))?;
    run_cmd(Command::new("du").arg("-sh").arg(&bundle))?;
    println!(
        "{}\nOn the GPU machine: .gpu-bundle/run.sh [--sanitize] [--api-errors] [test filter]  \
         (writes $OUT or .gpu-bundle/results; then `cargo xtask device-report <that folder>`)",
        bundle.display()
    );
    Ok(())
}

/// `cargo test --no-run` of `tests` (every device test where empty) with
/// `features`, each test binary copied into `into/bin/<name><suffix>`.
pub fn build_tests(
    workspace: &Path,
    include: &Path,
    features: &str,
    tests: &[&str],
    target_dir: &Path,
    into: &Path,
    suffix: &str,
) -> Result<(), String> {
    let out = Command::new(env!("CARGO"))
        .current_dir(workspace)
        .args([
            "test",
            "--no-run",
            "--message-format=json-render-diagnostics",
        ])
        .args(
            if tests.is_empty() { &ON_GPU[..] } else { tests }
                .iter()
                .map(|t| format!("--test={t}")),
        )
        .args(["--package", "cuda-mem-sys", "--package", "abi-proofs"])
        .args(["--features", features])
        .env(crate::locate::INCLUDE_DIR_VAR, include)
        .env("CARGO_TARGET_DIR", target_dir)
        // No debug information (the symbol table stays: abi_symbols reads it).
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .env("CARGO_PROFILE_DEV_STRIP", "debuginfo")
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "building the device tests ({features:?}, {}) failed",
            include.display()
        ));
    }
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let (Some(exe), Some(name)) = (json_str(line, "executable"), json_str(line, "name")) else {
            continue;
        };
        if !line.contains("\"test\":true") || !ON_GPU.contains(&name) {
            continue;
        }
        let dest = into.join("bin").join(format!("{name}{suffix}"));
        std::fs::copy(exe, &dest).map_err(|e| format!("copying {exe}: {e}"))?;
    }
    Ok(())
}

/// The call-cost benchmark (`bench/`), release builds: cuda-mem-sys linked,
/// cuda-mem-sys loaded, cudarc 0.19 loaded; `bench.sh` runs them interleaved.
fn bench(workspace: &Path, include: &Path, bundle: &Path) -> Result<(), String> {
    std::fs::create_dir_all(bundle.join("bench")).map_err(|e| e.to_string())?;
    for (name, features) in [("linked", ""), ("loaded", "loaded"), ("cudarc", "cudarc")] {
        let target_dir = workspace.join("target/gpu-bundle/bench");
        run_cmd(
            Command::new(env!("CARGO"))
                .current_dir(workspace)
                .args(["build", "--release", "--package", "cuda-mem-sys-bench"])
                .args(["--features", features])
                .env(crate::locate::INCLUDE_DIR_VAR, include)
                .env("CARGO_TARGET_DIR", &target_dir),
        )?;
        std::fs::copy(
            target_dir.join("release/cuda-mem-sys-bench"),
            bundle.join("bench").join(name),
        )
        .map_err(|e| e.to_string())?;
    }
    std::fs::write(bundle.join("bench.sh"), BENCH_SH).map_err(|e| e.to_string())?;
    run_cmd(Command::new("chmod").arg("+x").arg(bundle.join("bench.sh")))
}

/// Seven rounds of the three builds, their order rotated each round, pinned
/// to one core; the loaded build adds its same-process comparison. Prints
/// every figure and the median per (build, operation).
const BENCH_SH: &str = include_str!("../scripts/bench.sh");

/// The string value of `"key":"..."` in one line of cargo's JSON output.
pub fn json_str<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(&format!("\"{key}\":\""))? + key.len() + 4;
    let len = line[start..].find('"')?;
    Some(&line[start..start + len])
}

/// `run.sh` of a bundle (`xtask/scripts/run.sh`: how to call it is at its top).
pub const RUN_SH: &str = include_str!("../scripts/run.sh");
