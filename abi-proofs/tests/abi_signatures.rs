//! Every function's Rust declaration against the C prototype of its
//! documented name: the build script spells each Rust signature in C and
//! asserts `__builtin_types_compatible_p(__typeof__(&name), R (*)(A...))`;
//! the C compiler, with the headers the crate was generated from, judges.

use libtest_mimic::{Completion, Failed};
use std::path::Path;

const ABI_DIR: &str = concat!(env!("OUT_DIR"), "/abi");

/// Compiles `file`, returning the functions whose assertion failed.
fn failing_signatures(file: &Path) -> Result<Result<Vec<String>, String>, Failed> {
    let dirs = match test_support::include_dirs() {
        Ok(d) => d,
        Err(reason) => return Ok(Err(reason)),
    };
    let compiler = test_support::c_compiler(&dirs)
        .try_get_compiler()
        .map_err(|e| e.to_string())?;
    // No error limit: gcc's flag, or clang's (it stops at 20 by default).
    let no_limit = if compiler.is_like_clang() {
        "-ferror-limit=0"
    } else {
        "-fmax-errors=0"
    };
    let out = test_support::host_output(
        compiler
            .to_command()
            .args(["-fsyntax-only", no_limit])
            .arg(file),
    )
    .map_err(|e| format!("running the C compiler: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    // gcc: `static assertion failed: "signature of f"`; clang: `static
    // assertion failed due to requirement '...': signature of f`.
    let failed: Vec<String> = stderr
        .lines()
        .filter(|l| l.contains("static assertion failed"))
        .filter_map(|l| l.rsplit_once("signature of ").map(|(_, f)| f))
        .map(|s| s.trim().trim_end_matches('"').to_string())
        .collect();
    if !out.status.success() && failed.is_empty() {
        return Err(format!("the C compiler failed on {}:\n{stderr}", file.display()).into());
    }
    Ok(Ok(failed))
}

fn every_declaration_matches_its_c_prototype() -> Result<Completion, Failed> {
    let file = Path::new(ABI_DIR).join("signatures.c");
    let failed = match failing_signatures(&file)? {
        Ok(f) => f,
        Err(reason) => return Ok(Completion::ignored_with(reason)),
    };
    let source = std::fs::read_to_string(&file).unwrap();
    let checked = source.matches("_Static_assert").count();
    let summary = std::fs::read_to_string(Path::new(ABI_DIR).join("signatures.txt")).unwrap();
    let unspellable: Vec<&str> = summary.lines().skip(1).filter(|l| !l.is_empty()).collect();
    println!(
        "signatures: {checked} functions checked by the C compiler, {} mismatched, {} not spellable in C",
        failed.len(),
        unspellable.len()
    );
    if !failed.is_empty() || !unspellable.is_empty() {
        return Err(format!(
            "Rust declarations that differ from C: {failed:?}; not checked: {unspellable:?}"
        )
        .into());
    }
    if checked < 500 {
        return Err(format!("only {checked} functions checked").into());
    }
    Ok(Completion::Completed)
}

/// The check must catch a wrong parameter type: `cuMemAdvise` declared with
/// CUDA 12's `CUdevice` where 13.0 takes a `CUmemLocation`.
fn a_wrong_parameter_type_is_caught() -> Result<Completion, Failed> {
    let failed = match failing_signatures(&Path::new(ABI_DIR).join("signatures_wrong.c"))? {
        Ok(f) => f,
        Err(reason) => return Ok(Completion::ignored_with(reason)),
    };
    if cuda_mem_sys::CUDA_VERSION < 13000 {
        // Before 13.0 that *is* cuMemAdvise's signature.
        if !failed.is_empty() {
            return Err(format!("the CUDA 12 form was rejected: {failed:?}").into());
        }
        return Ok(Completion::Completed);
    }
    if failed != ["cuMemAdvise"] {
        return Err(format!("expected exactly cuMemAdvise to fail, got {failed:?}").into());
    }
    Ok(Completion::Completed)
}

fn main() {
    test_support::main(test_support::checks![
        every_declaration_matches_its_c_prototype,
        a_wrong_parameter_type_is_caught,
    ]);
}
