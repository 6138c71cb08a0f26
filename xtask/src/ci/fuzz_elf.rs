//! `cargo xtask fuzz-elf [--seconds N]`: the loader's ELF reader
//! (`src/loader/elf/`) fuzzed with libFuzzer for a bounded time, after its
//! unit tests in a release build (each malformed form refused with its
//! reason there too).
//!
//! The fuzz target is the workspace package `elf-fuzz/` (the reader's very
//! file, compiled without the crate), built with `libfuzzer-sys` and the
//! coverage flags cargo-fuzz passes, on the stable toolchain (no `-Z`
//! flag: no sanitizer; the image the target reads checks every read
//! against the mapping itself, and overflow checks and debug assertions are
//! on). No cargo-fuzz to install. The corpus starts from the seeds
//! `elf_seeds` writes (a well-formed library and each malformed form) in
//! `target/fuzz-elf/corpus/`; a failing input is kept in
//! `target/fuzz-elf/artifacts/`, and the message says how to replay it.

use crate::cmd::{cargo, run_cmd, step};
use std::path::Path;
use std::process::Command;

/// The fuzzing time `cargo xtask ci` gives (a step of its own).
pub const CI_SECONDS: u64 = 60;

/// The flags cargo-fuzz gives a libFuzzer target (`--cfg fuzzing`, sancov's
/// coverage), with overflow checks and debug assertions, without a sanitizer.
const RUSTFLAGS: &str = "--cfg fuzzing -Cpasses=sancov-module \
    -Cllvm-args=-sanitizer-coverage-level=4 \
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
    -Cllvm-args=-sanitizer-coverage-pc-table \
    -Cllvm-args=-sanitizer-coverage-trace-compares \
    -Cdebug-assertions -Coverflow-checks";

/// `--seconds N` (default [`CI_SECONDS`]), checked before anything runs.
pub fn parse(args: &[&str]) -> Result<u64, String> {
    match args {
        [] => Ok(CI_SECONDS),
        ["--seconds", n] => match n.parse() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!(
                "--seconds takes a number of seconds above 0, not {n:?}"
            )),
        },
        _ => Err("fuzz-elf takes at most `--seconds N`".into()),
    }
}

pub fn run(workspace: &Path, args: &[&str]) -> Result<(), String> {
    let seconds = parse(args)?;
    let dir = workspace.join("target/fuzz-elf");
    step("the ELF reader's unit tests in a release build: each malformed form refused with its reason");
    run_cmd(
        cargo(workspace)
            .args(["test", "--release", "-p", "elf-fuzz"])
            .arg("--target-dir")
            .arg(&dir),
    )?;
    step(&format!(
        "fuzzing the ELF reader for {seconds} s (libFuzzer, elf-fuzz/)"
    ));
    let started = std::time::Instant::now();
    let host = host_triple()?;
    run_cmd(
        cargo(workspace)
            .args(["build", "--release", "-p", "elf-fuzz", "--features", "fuzz"])
            .args(["--bin", "elf_reader", "--target", &host])
            .arg("--target-dir")
            .arg(&dir)
            .env("RUSTFLAGS", RUSTFLAGS),
    )?;
    let corpus = dir.join("corpus");
    let artifacts = dir.join("artifacts");
    let _ = std::fs::remove_dir_all(&corpus);
    std::fs::create_dir_all(&artifacts).map_err(|e| format!("{}: {e}", artifacts.display()))?;
    run_cmd(
        cargo(workspace)
            .args([
                "run",
                "--release",
                "-p",
                "elf-fuzz",
                "--bin",
                "elf_seeds",
                "--",
            ])
            .arg(&corpus)
            .env("CARGO_TARGET_DIR", &dir),
    )?;
    let target = dir.join(&host).join("release/elf_reader");
    let built = started.elapsed().as_secs_f64();
    let status = Command::new(&target)
        .arg(format!("-max_total_time={seconds}"))
        .args(["-max_len=16384", "-rss_limit_mb=1024", "-timeout=10"])
        .args(["-print_final_stats=1"])
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .arg(&corpus)
        .status()
        .map_err(|e| format!("{}: {e}", target.display()))?;
    if !status.success() {
        return Err(format!(
            "the ELF reader failed under the fuzzer ({status}): the input is in {} \
             (replay it: {} <file>)",
            artifacts.display(),
            target.display()
        ));
    }
    println!(
        "fuzz-elf: {built:.0} s to build, {:.0} s in all, no failure",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// rustc's host triple: the fuzz build names its target, so that the
/// coverage flags reach the target's code only, not build scripts.
fn host_triple() -> Result<String, String> {
    let out = Command::new("rustc")
        .arg("-vV")
        .output()
        .map_err(|e| format!("rustc -vV: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_string)
        .ok_or_else(|| "rustc -vV names no host".into())
}
