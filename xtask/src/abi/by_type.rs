//! `cargo xtask abi`'s checks by type and by presence, beside the layout
//! check: the crate generated its bindings for the release named (the
//! pinned one too: `CUDA_MEM_SYS_ALWAYS_GENERATE`, never
//! `committed-same-headers`), and abi-proofs' `abi_field_types` (every
//! field's C type) and `abi_constants` (every constant of the headers, with
//! C's value, associated ones too) pass against that release's headers.

use std::path::Path;
use std::process::Command;

/// `None` where all holds; else what failed, in the tests' own words.
/// `generated`: the crate must have generated its bindings (not for
/// `fallback`); `dump`: the layout check's `abi.txt`; `tests`: the cargo
/// command running the two tests, set up as the layout check's.
pub fn check(generated: bool, dump: &Path, tests: Command) -> Result<Option<String>, String> {
    let mut failures = vec![];
    if generated {
        let text = std::fs::read_to_string(dump).unwrap_or_default();
        let bindings = crate_bindings(&text);
        if bindings != Some("generated") {
            failures.push(format!(
                "the crate did not generate its bindings (DEP_CUDA_MEM_SYS_BINDINGS: {}): the \
                 checks would prove the committed copy, not the generator",
                bindings.unwrap_or("not in the layout check's dump")
            ));
        }
    }
    failures.extend(tests_failed(&super::BY_TYPE, tests)?);
    Ok((!failures.is_empty()).then(|| failures.join("\n")))
}

/// Runs `tests` (the cargo command running the test binaries `names`),
/// printing their summary lines; `Some` with their own words where one
/// failed or did not build.
pub fn tests_failed(names: &[&str], mut tests: Command) -> Result<Option<String>, String> {
    let out = tests.output().map_err(|e| format!("running cargo: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in stdout.lines().filter(|l| {
        [
            "field types:",
            "constants:",
            "abi_by_value:",
            "header coverage",
        ]
        .iter()
        .any(|p| l.starts_with(p))
    }) {
        println!("{line}");
    }
    let run: Vec<String> = names.iter().map(|n| format!("--test {n}")).collect();
    if out.status.success() {
        let passed: u64 = stdout
            .lines()
            .filter_map(|l| l.strip_prefix("test result: ok. "))
            .filter_map(|l| l.split_whitespace().next()?.parse::<u64>().ok())
            .sum();
        println!("cargo test {}: {passed} passed", run.join(" "));
        return Ok(None);
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("FAILED") || l.starts_with("  ") || l.contains("ignored,"))
        .chain(stderr.lines().skip_while(|l| !l.starts_with("error")))
        .take(40)
        .collect();
    Ok(Some(format!(
        "cargo test {}: {}\n{}",
        run.join(" "),
        out.status,
        said.join("\n")
    )))
}

/// The `crate_bindings` line of the layout check's dump.
fn crate_bindings(dump: &str) -> Option<&str> {
    dump.lines()
        .find_map(|l| l.strip_prefix("crate_bindings "))
        .map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::crate_bindings;

    #[test]
    fn the_dump_says_what_the_crate_built() {
        assert_eq!(
            crate_bindings("compiler gcc\ncrate_bindings generated\nsummary x=1\n"),
            Some("generated")
        );
        // The wrong twin: the committed copy for the very headers is not generated.
        assert_eq!(
            crate_bindings("crate_bindings committed-same-headers\n"),
            Some("committed-same-headers")
        );
        assert_eq!(crate_bindings("compiler gcc\n"), None);
    }
}
