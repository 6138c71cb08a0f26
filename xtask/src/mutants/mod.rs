//! `cargo xtask mutants`: cargo-mutants (crates.io; installed if missing)
//! over the run-time loader (`src/loader/`), the generator (`build/`,
//! compiled as the `generator` package) and the proofs' own code
//! (`test-support/`, abi-proofs' build script and `abi_constants.rs`,
//! `tests/docs_agree.rs`: [`FILES`]), each mutant tested by the checks
//! that need no GPU and can see it ([`GROUPS`]), with a timeout per mutant
//! and in shards (`--shard k/n`), so that a run fits in pieces.
//!
//! cargo-mutants runs `cargo test` in its copy of the tree (never the tree
//! itself: no `--in-place`). Its `cargo` is this program ([`as_cargo`],
//! through `CARGO`), which runs, for the one file the mutant changed, the
//! groups of tests that compile that file: the loader's tests and the ABI
//! proofs with `dynamic-loading`, the loom models for `once.rs` (under
//! `--cfg loom`, in a target folder of their own), the generator's tests
//! and the proofs for `build/`. The baseline (no file changed) runs them
//! all. `.cargo/mutants.toml` holds what cargo-mutants reads itself (the
//! files left out, and why). The tests' builds share `target/mutants/`
//! across mutants and runs; each run's outcomes go to
//! `target/mutants/out/<files>-<shard>/`, and `--summary` tabulates runs
//! per file (docs/mutation-testing.md).

mod groups;
mod summary;
#[cfg(test)]
mod tests;

use groups::{groups_for, only_named, FILES_VAR, GROUPS_VAR, MUTATED};
pub use groups::{FILES, GROUPS};
pub use summary::summary;

use crate::cmd::{run_cmd, step};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// Set: this program is cargo-mutants' `cargo`; the value is the tree the
/// mutants are copied from.
const ORIGINAL_VAR: &str = "CUDA_MEM_SYS_MUTANTS_ORIGINAL";
/// The real cargo, for [`as_cargo`].
const CARGO_VAR: &str = "CUDA_MEM_SYS_MUTANTS_CARGO";

/// `cargo xtask mutants`'s arguments.
#[derive(Debug, PartialEq)]
pub struct Args<'a> {
    pub shard: Option<(u32, u32)>,
    pub files: Vec<&'a str>,
    /// Seconds a mutant's tests may take.
    pub timeout: u32,
    /// Skip cargo-mutants' unmutated run (the timeout is given).
    pub no_baseline: bool,
    /// `--iterate`: cargo-mutants skips the mutants an earlier run into the
    /// same output folder caught (`previously_caught.txt`), e.g. a run
    /// stopped to lower its timeout.
    pub iterate: bool,
    /// `--groups a,b`: only these groups (names in [`GROUPS`]), e.g. the
    /// cheap `generator` first, then `--iterate` with every group for what
    /// it missed.
    pub groups: Vec<&'a str>,
    /// `--in-diff <file>`: only the mutants on lines a diff adds or changes
    /// (cargo-mutants' `--in-diff`): a change re-run without the rest of
    /// its files.
    pub in_diff: Option<&'a str>,
    pub list: bool,
    /// `--summary <dir>...`: tabulate finished runs instead.
    pub summary: Vec<&'a str>,
}

pub fn parse<'a>(rest: &[&'a str]) -> Result<Args<'a>, String> {
    let mut a = Args {
        shard: None,
        files: vec![],
        timeout: 600,
        no_baseline: false,
        iterate: false,
        in_diff: None,
        groups: vec![],
        list: false,
        summary: vec![],
    };
    let mut i = 0;
    while i < rest.len() {
        let value = rest.get(i + 1).copied();
        match (rest[i], value) {
            ("--shard", Some(v)) => {
                let shard = v
                    .split_once('/')
                    .and_then(|(k, n)| Some((k.parse().ok()?, n.parse().ok()?)))
                    .filter(|&(k, n)| n > 0 && k < n);
                a.shard = Some(shard.ok_or_else(|| {
                    format!("--shard takes k/n with 0 <= k < n (cargo-mutants' form), not {v:?}")
                })?);
                i += 2;
            }
            ("--file", Some(v)) => {
                a.files.push(v);
                i += 2;
            }
            ("--timeout", Some(v)) => {
                a.timeout = v
                    .parse()
                    .ok()
                    .filter(|&t| t > 0)
                    .ok_or_else(|| format!("--timeout takes seconds above 0, not {v:?}"))?;
                i += 2;
            }
            ("--no-baseline", _) => {
                a.no_baseline = true;
                i += 1;
            }
            ("--list", _) => {
                a.list = true;
                i += 1;
            }
            ("--iterate", _) => {
                a.iterate = true;
                i += 1;
            }
            ("--in-diff", Some(v)) => {
                a.in_diff = Some(v);
                i += 2;
            }
            ("--groups", Some(v)) => {
                for g in v.split(',') {
                    if !GROUPS.iter().any(|k| k.name == g) {
                        return Err(format!(
                            "--groups: no group {g:?}; the groups: {}",
                            GROUPS.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
                        ));
                    }
                    a.groups.push(g);
                }
                i += 2;
            }
            ("--summary", _) => {
                a.summary = rest[i + 1..].to_vec();
                if a.summary.is_empty() {
                    return Err("--summary takes the output folders of runs".into());
                }
                break;
            }
            (other, _) => return Err(format!("mutants: unknown or incomplete argument {other:?}")),
        }
    }
    Ok(a)
}

/// cargo-mutants, installed from crates.io where missing.
fn ensure_cargo_mutants() -> Result<(), String> {
    let installed = Command::new(env!("CARGO"))
        .args(["mutants", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        step("installing cargo-mutants (cargo install cargo-mutants --locked)");
        run_cmd(Command::new(env!("CARGO")).args(["install", "cargo-mutants", "--locked"]))?;
    }
    Ok(())
}

pub fn run(workspace: &Path, rest: &[&str]) -> Result<(), String> {
    let args = parse(rest)?;
    if !args.summary.is_empty() {
        print!("{}", summary(&args.summary)?);
        return Ok(());
    }
    ensure_cargo_mutants()?;
    crate::cmd::ensure_libclang()?;
    let pinned = crate::headers::fetch(workspace, generator::release::PINNED_RELEASE)?;
    let files: Vec<&str> = if args.files.is_empty() {
        FILES.to_vec()
    } else {
        args.files.clone()
    };
    let base = workspace.join("target/mutants");
    // This program as cargo-mutants' cargo: a copy, which a later build of
    // xtask cannot replace under a running shard.
    let shim = base.join("bin/cargo");
    std::fs::create_dir_all(shim.parent().unwrap()).map_err(|e| e.to_string())?;
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&shim);
    std::fs::copy(&me, &shim).map_err(|e| format!("copying {}: {e}", me.display()))?;
    let name = files
        .iter()
        .map(|f| {
            f.replace(['/', '*', '.'], "_")
                .trim_matches('_')
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("+");
    let out = base.join("out").join(match args.shard {
        Some((k, n)) => format!("{name}-{k}of{n}"),
        None => name,
    });
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut cmd = Command::new("cargo-mutants");
    cmd.arg("mutants")
        .current_dir(workspace)
        .args(["--workspace", "--jobs", "1"])
        .arg("--timeout")
        .arg(args.timeout.to_string())
        .arg("--build-timeout")
        // The first build in cargo-mutants' copy builds every package anew
        // (the copy's path is new): long on a loaded machine.
        .arg((args.timeout * 3).max(1800).to_string())
        .arg("--output")
        .arg(&out);
    for f in &files {
        cmd.args(["--file", f]);
    }
    if let Some((k, n)) = args.shard {
        cmd.arg("--shard").arg(format!("{k}/{n}"));
    }
    if args.no_baseline {
        cmd.args(["--baseline", "skip"]);
    }
    if args.list {
        cmd.arg("--list");
    }
    if args.iterate {
        cmd.arg("--iterate");
    }
    if let Some(diff) = args.in_diff {
        cmd.arg("--in-diff").arg(diff);
    }
    cmd.env("CARGO", &shim)
        .env(CARGO_VAR, env!("CARGO"))
        .env(ORIGINAL_VAR, workspace)
        .env(FILES_VAR, files.join(" "))
        .env(GROUPS_VAR, args.groups.join(" "))
        .env(generator::locate::INCLUDE_DIR_VAR, &pinned);
    step(&format!(
        "cargo-mutants over {} ({}), each mutant's tests ({}) within {} s; outcomes in {}",
        files.join(" "),
        args.shard
            .map_or("every mutant".into(), |(k, n)| format!("shard {k}/{n}")),
        if args.groups.is_empty() {
            "every group that compiles it".to_string()
        } else {
            format!("only {}", args.groups.join(", "))
        },
        args.timeout,
        out.display()
    ));
    // cargo-mutants fails where a mutant was missed: the outcome, not an error.
    let status = cmd.status().map_err(|e| format!("cargo-mutants: {e}"))?;
    if !args.list {
        print!("{}", summary(&[&out.to_string_lossy()])?);
    }
    match status.code() {
        // 0: all caught; 2: some missed; 3: some timed out (cargo-mutants' codes).
        Some(0 | 2 | 3) => Ok(()),
        _ => Err(format!(
            "cargo-mutants failed ({status}); its log: {}",
            out.display()
        )),
    }
}

/// When this program runs as cargo-mutants' `cargo` ([`ORIGINAL_VAR`]
/// set): `test` (and `test --no-run`, its build) runs the groups that see
/// the changed file; anything else goes to the real cargo.
pub fn as_cargo() -> Option<ExitCode> {
    let original = PathBuf::from(std::env::var_os(ORIGINAL_VAR)?);
    let real = std::env::var_os(CARGO_VAR).unwrap_or_else(|| "cargo".into());
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) != Some("test") {
        let status = Command::new(&real).args(&args).status();
        return Some(match status {
            Ok(s) if s.success() => ExitCode::SUCCESS,
            _ => ExitCode::FAILURE,
        });
    }
    let build_only = args.iter().any(|a| a == "--no-run");
    let tree = std::env::current_dir().ok()?;
    let changed = changed_files(&tree, &original);
    let globs = std::env::var(FILES_VAR).unwrap_or_else(|_| FILES.join(" "));
    let globs: Vec<&str> = globs.split(' ').collect();
    let only = std::env::var(GROUPS_VAR).unwrap_or_default();
    let groups = only_named(groups_for(&changed, &globs), &only);
    let target = original.join("target/mutants");
    eprintln!(
        "mutants: {} changed; groups {}",
        if changed.is_empty() {
            "nothing (the baseline)".to_string()
        } else {
            changed.join(" ")
        },
        groups.iter().map(|g| g.name).collect::<Vec<_>>().join(", ")
    );
    for g in groups {
        if build_only {
            for p in g.clean {
                let mut clean = Command::new(&real);
                clean
                    .current_dir(&tree)
                    .args(["clean", "-p", p])
                    .env("CARGO_TARGET_DIR", target.join("build"));
                eprintln!("mutants: group {}: {clean:?}", g.name);
                if !clean.status().is_ok_and(|s| s.success()) {
                    eprintln!("mutants: group {}: cleaning {p} failed", g.name);
                    return Some(ExitCode::FAILURE);
                }
            }
        }
        let mut c = Command::new(&real);
        c.current_dir(&tree).arg("test");
        if build_only {
            c.arg("--no-run");
        }
        c.args(g.args).env_remove("CARGO_ENCODED_RUSTFLAGS");
        if g.loom {
            c.env("CARGO_TARGET_DIR", target.join("loom"))
                .env("RUSTFLAGS", "--cfg loom")
                .env("LOOM_MAX_PREEMPTIONS", "3");
        } else {
            c.env("CARGO_TARGET_DIR", target.join("build"))
                .env_remove("RUSTFLAGS");
        }
        eprintln!("mutants: group {}: {c:?}", g.name);
        match c.status() {
            Ok(s) if s.success() => {}
            _ => {
                eprintln!("mutants: group {} failed", g.name);
                return Some(ExitCode::FAILURE);
            }
        }
    }
    Some(ExitCode::SUCCESS)
}

/// The files of [`MUTATED`] that differ between cargo-mutants' copy `tree`
/// and `original` (the mutant's one file).
fn changed_files(tree: &Path, original: &Path) -> Vec<String> {
    let mut found = vec![];
    let mut stack: Vec<PathBuf> = MUTATED.iter().map(PathBuf::from).collect();
    while let Some(rel) = stack.pop() {
        let here = tree.join(&rel);
        if here.is_file() {
            if std::fs::read(&here).ok() != std::fs::read(original.join(&rel)).ok() {
                found.push(rel.to_string_lossy().into_owned());
            }
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&here) else {
            continue;
        };
        for e in entries.flatten() {
            stack.push(rel.join(e.file_name()));
        }
    }
    found.sort();
    found
}
