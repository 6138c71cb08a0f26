//! `cargo xtask ci`: the whole test suite on a machine with nothing but the
//! Rust toolchain (what `.ci/run` calls), and `cargo xtask demo`.
//!
//! Installs libclang 19 where it is missing (Debian/Ubuntu, as root), fetches
//! the CUDA headers it needs from the Python package index, then runs every
//! check a machine without a GPU can run; device tests report ignored.

use crate::{headers, run_cmd};
use std::path::Path;
use std::process::Command;

/// Releases whose layouts and symbols CI checks besides the pinned 13.0.
pub const CI_RELEASES: [&str; 3] = ["12.0", "12.9", "13.5"];

fn step(title: &str) {
    println!("\n==== {title}");
}

/// libclang 19 (Debian 12's newest; older ones lose doc comments).
pub fn ensure_libclang() -> Result<(), String> {
    let dir = Path::new("/usr/lib/llvm-19/lib");
    if !dir.join("libclang.so").exists() && !dir.join("libclang-19.so").exists() {
        step("installing libclang-19-dev");
        run_cmd(Command::new("apt-get").args(["update", "-qq"]))?;
        run_cmd(Command::new("apt-get").args(["install", "-y", "-qq", "libclang-19-dev"]))?;
    }
    std::env::set_var("LIBCLANG_PATH", dir);
    Ok(())
}

fn cargo(workspace: &Path) -> Command {
    let mut c = Command::new(env!("CARGO"));
    c.current_dir(workspace);
    for var in crate::locate::ROOT_VARS {
        c.env_remove(var);
    }
    c
}

pub fn demo(workspace: &Path) -> Result<(), String> {
    ensure_libclang()?;
    let include = headers::fetch(workspace, "13.0")?;
    run_cmd(
        cargo(workspace)
            .args(["run", "--quiet", "--example", "demo"])
            .env("CUDA_MEM_SYS_INCLUDE_DIR", &include),
    )
}

pub fn run(workspace: &Path) -> Result<(), String> {
    ensure_libclang()?;
    let pinned = headers::fetch(workspace, "13.0")?;

    step("format and lints");
    run_cmd(cargo(workspace).args(["fmt", "--all", "--", "--check"]))?;
    run_cmd(
        cargo(workspace)
            .args([
                "clippy",
                "--all-targets",
                "--workspace",
                "--",
                "-D",
                "warnings",
            ])
            .env("CUDA_MEM_SYS_INCLUDE_DIR", &pinned),
    )?;

    step("the whole suite against the CUDA 13.0 headers (device tests report ignored)");
    run_cmd(
        cargo(workspace)
            .args(["test", "--workspace"])
            .env("CUDA_MEM_SYS_INCLUDE_DIR", &pinned),
    )?;

    step("per-thread default stream: symbols and signatures");
    run_cmd(
        cargo(workspace)
            .args(["test", "--features", "per-thread-default-stream"])
            .args([
                "--test",
                "abi_symbols",
                "--test",
                "abi_signatures",
                "--test",
                "fallback",
            ])
            .env("CUDA_MEM_SYS_INCLUDE_DIR", &pinned),
    )?;

    step("dynamic libcudart: symbols resolve in libcudart.so");
    let lib = pinned.parent().unwrap().join("lib");
    run_cmd(
        cargo(workspace)
            .args([
                "test",
                "--features",
                "dynamic-cudart",
                "--test",
                "abi_symbols",
            ])
            .env("CUDA_MEM_SYS_INCLUDE_DIR", &pinned)
            .env("LD_LIBRARY_PATH", &lib),
    )?;

    step("no CUDA at all: the committed fallback bindings");
    run_cmd(
        cargo(workspace)
            .args(["test", "--test", "fallback", "--test", "device_smoke"])
            .env("CARGO_TARGET_DIR", workspace.join("target/fallback")),
    )?;

    step("build cost: one copy of each dependency; no bindgen, no libclang without the feature");
    crate::build_cost::check(workspace)?;

    step("documentation");
    run_cmd(
        cargo(workspace)
            .args(["doc", "--no-deps", "-p", "cuda-mem-sys"])
            .env("CUDA_MEM_SYS_INCLUDE_DIR", &pinned)
            .env("RUSTDOCFLAGS", "-D warnings"),
    )?;

    for release in CI_RELEASES {
        step(&format!("CUDA {release}: ABI checks"));
        crate::abi::ci_release(workspace, release)?;
    }
    Ok(())
}
