//! Project tasks: `cargo xtask <command>`.

mod abi;
mod bench_build;
mod build_cost;
mod changes;
mod ci;
#[allow(dead_code)]
#[path = "../../build/codegen/mod.rs"]
mod codegen;
mod device_compile;
mod device_report;
mod examples;
mod gpu_bundle;
mod headers;
#[allow(dead_code)]
#[path = "../../build/locate.rs"]
mod locate;
mod regen;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const USAGE: &str = "usage: cargo xtask <command>
  headers <version> [--target <triple>]
                         fetch CUDA <version>'s headers and libcudart (12.0 ... 13.5) into
                         target/cuda-headers/ and print the include directory; for another
                         target (aarch64-unknown-linux-gnu, x86_64-pc-windows-gnu) its wheels,
                         into target/cuda-headers/<triple>/<version>/
  demo                   install libclang if missing, fetch the CUDA 13.0 headers, build
                         and run examples/demo.rs
  ci                     the whole test suite as CI runs it (installs what it needs)
  ci --cross             only its aarch64 Linux (qemu) and Windows x86_64 (MinGW, wine) part
  msrv                   check the library with the toolchain of Cargo.toml's rust-version (no
                         CUDA, the 13.0 headers, no bindgen, a generating loaded build; a step of `ci`)
  examples               build every example and run each without a GPU, expecting its
                         documented `no GPU:` line and exit code (a step of `ci`)
  regen                  regenerate the committed fallback bindings (src/generated/) from the
                         pinned release's headers
  bench-build            clean and no-op build times beside cudarc 0.19 (docs/build-times.md)
  build-cost             CI's build-cost checks alone: no duplicated dependency, a
                         default-features = false dependent builds without libclang or bindgen
  gpu-bundle             build every test binary against the CUDA 13.0 headers into
                         .gpu-bundle/ with run.sh, for a GPU machine without Rust
  device-compile [--examples-only|--tests-only] (--all | --ci | <release>|unseen ...)
                         compile the device tests (cargo test --no-run) and the examples
                         against each release's headers, linked and with dynamic-loading;
                         `unseen`: headers claiming CUDA 13.7, a release the crate does not
                         know; --ci: 12.0 12.2 12.8 13.0 13.2 13.5 unseen (a step of `ci`)
  gpu-bundle --matrix [--examples-only] [<release>...]
                         the release matrix: device tests and examples of every release
                         (or those named), linked and loaded (+ per-thread default stream
                         for 12.0 12.9 13.5), in .gpu-bundle-matrix/part-<n>.tar.xz files
                         that fit one GPU call each; matrix.sh runs a part
  device-report <dir>... Markdown for docs/device-results.md from what run.sh wrote in <dir>s:
                         bad-input table, process-death figures, compute-sanitizer counts
  abi <version>...       build against each release's headers and check the bindings' layout and
                         constants against the C compiler (tests/abi_layout.rs) and stable names
                         (tests/stable_names.rs); `fallback`: the committed bindings
  abi --all              every release 12.0 ... 13.5 and the fallback; writes docs/abi-report.md
  abi --target <triple> <version>... | --all
                         the same built for aarch64-unknown-linux-gnu (run under qemu-aarch64) or
                         x86_64-pc-windows-gnu (under wine); writes that target's section of
                         docs/abi-report.md (the releases run)
  changes                docs/release-changes.md: what changed between releases in the five groups
                         (from the bindings `abi --all` leaves in target/abi/)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["headers", release] => {
            headers::fetch(&workspace(), release).map(|dir| println!("{}", dir.display()))
        }
        ["headers", release, "--target", target] | ["headers", "--target", target, release] => {
            headers::fetch_for(&workspace(), release, target)
                .map(|dir| println!("{}", dir.display()))
        }
        ["demo"] => ci::demo(&workspace()),
        ["ci"] => ci::run(&workspace()),
        ["ci", "--cross"] => ci::cross(&workspace()),
        ["examples"] => ci::examples(&workspace()),
        ["msrv"] => ci::msrv_alone(&workspace()),
        ["regen"] => regen::run(&workspace()),
        ["bench-build"] => bench_build::run(&workspace()),
        ["build-cost"] => build_cost::check(&workspace()),
        ["gpu-bundle"] => gpu_bundle::run(&workspace()),
        ["gpu-bundle", "--matrix", rest @ ..] => gpu_bundle::matrix(&workspace(), rest),
        ["device-compile", rest @ ..] => device_compile::run(&workspace(), rest),
        ["device-report", rest @ ..] => device_report::run(&workspace(), rest),
        ["abi", rest @ ..] => abi::run(&workspace(), rest),
        ["changes"] => changes::run(&workspace()),
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Runs a command, failing with its description if it fails.
pub fn run_cmd(cmd: &mut Command) -> Result<(), String> {
    let status = cmd.status().map_err(|e| format!("{cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed ({status})"))
    }
}
