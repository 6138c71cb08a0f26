//! The committed fallback bindings (`src/generated/`) are exactly what the
//! generator makes from the pinned release's headers, and a build without
//! CUDA uses them.
mod abi_support;

use libtest_mimic::{Completion, Failed};

const GENERATED: &str = include_str!(concat!(env!("OUT_DIR"), "/cuda_mem_sys.rs"));

fn committed() -> &'static str {
    if cfg!(feature = "per-thread-default-stream") {
        include_str!("../src/generated/cuda-13.0-ptds.rs")
    } else {
        include_str!("../src/generated/cuda-13.0.rs")
    }
}

/// Built against `cargo xtask headers 13.0` (the pinned release): the output
/// must equal the committed file, byte for byte.
fn committed_bindings_match_the_pinned_headers() -> Result<Completion, Failed> {
    if cfg!(cuda_mem_sys_fallback) {
        return Ok(Completion::ignored_with(
            "this build used the committed bindings themselves",
        ));
    }
    let dirs = option_env!("CUDA_MEM_SYS_INCLUDE_DIRS").unwrap_or_default();
    // x86_64's or aarch64's 13.0 wheels (`cargo xtask headers 13.0 [--target ...]`):
    // the committed file must hold for both Linux targets.
    let pinned = [
        "cuda-headers/13.0/",
        "cuda-headers/aarch64-unknown-linux-gnu/13.0/",
    ];
    if !pinned.iter().any(|p| dirs.contains(p)) {
        return Ok(Completion::ignored_with(format!(
            "built against {dirs}, not the pinned headers of `cargo xtask headers 13.0`"
        )));
    }
    if GENERATED != committed() {
        let line = GENERATED
            .lines()
            .zip(committed().lines())
            .position(|(a, b)| a != b)
            .map_or("(length)".into(), |n| (n + 1).to_string());
        return Err(format!(
            "src/generated differs from what the pinned headers produce (first difference at line {line}): \
             run `cargo xtask regen`"
        )
        .into());
    }
    Ok(Completion::Completed)
}

/// Without headers the build uses the committed file and says so with a cfg.
fn a_build_without_cuda_uses_the_fallback() -> Result<Completion, Failed> {
    if !cfg!(cuda_mem_sys_fallback) {
        return Ok(Completion::ignored_with("this build found CUDA headers"));
    }
    if GENERATED != committed() || cuda_mem_sys::CUDA_VERSION != 13000 {
        return Err("the fallback build did not use the committed CUDA 13.0 bindings".into());
    }
    Ok(Completion::Completed)
}

fn main() {
    abi_support::main(vec![
        (
            "committed_bindings_match_the_pinned_headers",
            committed_bindings_match_the_pinned_headers,
        ),
        (
            "a_build_without_cuda_uses_the_fallback",
            a_build_without_cuda_uses_the_fallback,
        ),
    ]);
}
