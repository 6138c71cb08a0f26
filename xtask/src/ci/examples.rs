//! The programs in `examples/`: CI builds them all and runs each on its
//! machine without a GPU, where each must print its documented `no GPU:` line
//! and exit with its documented code; `gpu-bundle` carries them to the GPU
//! machine, where `run.sh` runs them and records each.

use crate::gpu_lab::suite::EXAMPLES;
use std::path::Path;
use std::process::Command;

/// The examples in `examples/` missing from the suite's list ([`EXAMPLES`]), and the listed
/// ones that have no file.
pub fn unlisted(files: &[String], listed: &[&str]) -> Vec<String> {
    let mut problems: Vec<String> = files
        .iter()
        .filter(|f| !listed.contains(&f.as_str()))
        .map(|f| format!("examples/{f}.rs is not in EXAMPLES"))
        .collect();
    problems.extend(
        listed
            .iter()
            .filter(|n| !files.iter().any(|f| f == *n))
            .map(|n| format!("EXAMPLES lists {n}, which has no examples/{n}.rs")),
    );
    problems
}

/// The names of `examples/*.rs`.
fn example_files(workspace: &Path) -> Result<Vec<String>, String> {
    let dir = workspace.join("examples");
    let mut names = vec![];
    for entry in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_some_and(|e| e == "rs") {
            names.push(path.file_stem().unwrap().to_string_lossy().into_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// Judges one run: where there is no GPU, the documented exit code and a last
/// line starting `no GPU:`; on a machine with one, exit 0 and a last line
/// starting `OK:`. Anything else is an error naming what was seen.
pub fn verdict(
    name: &str,
    no_gpu_exit: i32,
    code: Option<i32>,
    stdout: &str,
) -> Result<&'static str, String> {
    let last = stdout.lines().last().unwrap_or("").trim();
    if code == Some(no_gpu_exit) && last.starts_with("no GPU:") {
        Ok("no GPU, as documented")
    } else if code == Some(0) && last.starts_with("OK:") {
        Ok("ran on a GPU, every check passed")
    } else {
        Err(format!(
            "{name}: exit {code:?}, last line {last:?}; expected exit {no_gpu_exit} and a line \
             starting `no GPU:` (or, on a GPU, exit 0 and `OK:`)"
        ))
    }
}

/// Builds every example against `include` and runs each (CI, no GPU).
pub fn check_without_gpu(
    workspace: &Path,
    include: &Path,
    cargo: impl Fn() -> Command,
) -> Result<(), String> {
    let listed: Vec<&str> = EXAMPLES.iter().map(|e| e.name).collect();
    let problems = unlisted(&example_files(workspace)?, &listed);
    if !problems.is_empty() {
        return Err(problems.join("\n"));
    }
    crate::cmd::run_cmd(
        cargo()
            .args(["build", "--examples"])
            .env(generator::locate::INCLUDE_DIR_VAR, include),
    )?;
    let mut failures = vec![];
    for e in EXAMPLES {
        let (name, no_gpu_exit) = (e.name, e.no_gpu_exit);
        // `cargo run` puts the build's stub libcuda on the library path.
        let out = cargo()
            .args(["run", "--quiet", "--example", name])
            .env(generator::locate::INCLUDE_DIR_VAR, include)
            .stderr(std::process::Stdio::inherit())
            .output()
            .map_err(|e| format!("cargo run --example {name}: {e}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        match verdict(name, no_gpu_exit, out.status.code(), &stdout) {
            Ok(what) => println!("example {name}: exit {:?}, {what}", out.status.code()),
            Err(e) => failures.push(e),
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_documented_no_gpu_run_passes() {
        let out = "bindings ...\nno GPU: cuInit returned 34; nothing to run\n";
        assert!(verdict("vmm", 77, Some(77), out).is_ok());
        assert!(verdict("demo", 0, Some(0), out).is_ok());
        assert!(verdict("vmm", 77, Some(0), "...\nOK: vmm\n").is_ok());
    }

    #[test]
    fn a_wrong_exit_code_or_line_is_caught() {
        let no_gpu = "no GPU: cuInit returned 34; nothing to run\n";
        // The no-GPU line with success's exit code, and the reverse.
        assert!(verdict("vmm", 77, Some(0), no_gpu).is_err());
        assert!(verdict("vmm", 77, Some(77), "OK: vmm\n").is_err());
        // A failure, a crash (no exit code), silence.
        assert!(verdict("vmm", 77, Some(1), "FAILED: cuMemMap returned 1\n").is_err());
        assert!(verdict("vmm", 77, None, no_gpu).is_err());
        assert!(verdict("vmm", 77, Some(77), "").is_err());
        // The no-GPU line is the last line, not any line.
        assert!(verdict("vmm", 77, Some(77), "no GPU: x\npanicked at ...\n").is_err());
    }

    #[test]
    fn every_example_file_is_listed_with_its_exit_code() {
        let files = example_files(&crate::cmd::workspace()).unwrap();
        assert_eq!(
            unlisted(&files, &EXAMPLES.map(|e| e.name)),
            Vec::<String>::new()
        );
    }

    #[test]
    fn an_unlisted_or_missing_example_is_caught() {
        let files = vec!["demo".to_string(), "new_one".to_string()];
        assert_eq!(
            unlisted(&files, &["demo", "gone"]),
            [
                "examples/new_one.rs is not in EXAMPLES",
                "EXAMPLES lists gone, which has no examples/gone.rs"
            ]
        );
    }
}
