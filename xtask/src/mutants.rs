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

use crate::cmd::{run_cmd, step};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// Set: this program is cargo-mutants' `cargo`; the value is the tree the
/// mutants are copied from.
const ORIGINAL_VAR: &str = "CUDA_MEM_SYS_MUTANTS_ORIGINAL";
/// The real cargo, for [`as_cargo`].
const CARGO_VAR: &str = "CUDA_MEM_SYS_MUTANTS_CARGO";

/// The files mutated unless `--file` names others (cargo-mutants' globs;
/// `build/`'s files are the `generator` package's, which cargo-mutants
/// names `generator/../build/...`: `**/build/...` matches them).
pub const FILES: [&str; 6] = [
    "src/loader/**",
    "**/build/**",
    "test-support/**",
    // abi-proofs' build script, as the `abi-proofs-build` package compiles
    // it (cargo-mutants mutates no build script; it names these files
    // `abi-proofs/build-as-lib/../build/...`).
    "abi-proofs/build-as-lib/**",
    "abi-proofs/tests/abi_constants.rs",
    "tests/docs_agree.rs",
];

/// A path as cargo-mutants names it, from the workspace root: the
/// generator's and abi-proofs' build-script packages' `../` taken out.
fn normal(path: &str) -> String {
    path.replace("generator/../", "")
        .replace("abi-proofs/build-as-lib/../", "abi-proofs/")
        .replace("abi-proofs/build-as-lib/", "abi-proofs/build/")
}

/// Where a mutant's one changed file is looked for ([`changed_files`]):
/// the folders and files of [`FILES`].
const MUTATED: [&str; 6] = [
    "src/loader",
    "build",
    "test-support/src",
    "abi-proofs/build",
    "abi-proofs/tests/abi_constants.rs",
    "tests/docs_agree.rs",
];
/// The globs of the run, for the baseline's groups.
const FILES_VAR: &str = "CUDA_MEM_SYS_MUTANTS_FILES";
/// `--groups`: the only groups run (names, space-separated); unset, all.
const GROUPS_VAR: &str = "CUDA_MEM_SYS_MUTANTS_GROUPS";

/// One group of tests: the files whose mutants it sees (path prefixes,
/// from the workspace root), and its `cargo test` arguments.
pub struct Group {
    pub name: &'static str,
    pub files: &'static [&'static str],
    pub args: &'static [&'static str],
    /// Built and run under `--cfg loom`, in a target folder of its own.
    pub loom: bool,
    /// Packages whose build outputs are removed (`cargo clean -p`) before
    /// each mutant is built: a build script that, mutated, writes nothing
    /// would otherwise leave the last build's files for the tests to read
    /// (abi-proofs' generated halves), and its mutant would pass.
    pub clean: &'static [&'static str],
}

/// Every test that needs no GPU and compiles a mutated file, in the order
/// run (the first failure ends a mutant's run: caught). Not here: the
/// device tests (they need a GPU; here each reports itself ignored) and
/// the tests of the test kit and the documents (`pair_loop`, `os_helpers`,
/// `process_death_plumbing`, `quoted_paths`, `package`), which compile
/// neither the loader's nor the generator's code into what they check.
pub const GROUPS: [Group; 12] = [
    Group {
        name: "loader",
        files: &["src/loader/", "build/codegen/loader.rs"],
        args: &[
            "-p",
            "cuda-mem-sys",
            "-p",
            "abi-proofs",
            "--features",
            "abi-proofs/dynamic-loading",
            "--lib",
            "--test",
            "dynamic_loading",
            "--test",
            "abi_symbols",
        ],
        loom: false,
        clean: &[],
    },
    // The runtime loaded at run time (CI's `dynamic-loading,dynamic-cudart`):
    // the static runtime of the group above never loads one.
    Group {
        name: "loader-cudart",
        files: &["src/loader/", "build/codegen/loader.rs"],
        args: &[
            "-p",
            "cuda-mem-sys",
            "-p",
            "abi-proofs",
            "--features",
            "abi-proofs/dynamic-loading,abi-proofs/dynamic-cudart",
            "--lib",
            "--test",
            "dynamic_loading",
        ],
        loom: false,
        clean: &[],
    },
    Group {
        name: "models",
        files: &["src/loader/once.rs"],
        args: &["-p", "loader-model"],
        loom: false,
        clean: &[],
    },
    Group {
        name: "loom",
        files: &["src/loader/once.rs"],
        args: &["-p", "loader-model", "--release"],
        loom: true,
        clean: &[],
    },
    Group {
        name: "c-names",
        files: &["src/loader/slots.rs", "build/codegen/loader.rs"],
        args: &[
            "-p",
            "cuda-mem-sys",
            "--features",
            "dynamic-loading",
            "--test",
            "exported_c_names",
        ],
        loom: false,
        clean: &[],
    },
    Group {
        name: "generator",
        files: &["build/"],
        args: &["-p", "generator"],
        loom: false,
        clean: &[],
    },
    Group {
        name: "proofs",
        files: &["build/"],
        args: &["-p", "abi-proofs", "--features", "dynamic-loading"],
        loom: false,
        clean: &[],
    },
    Group {
        name: "crate",
        files: &["build/"],
        args: &[
            "-p",
            "cuda-mem-sys",
            "--test",
            "build_errors",
            "--test",
            "metadata",
            "--test",
            "macros",
            "--test",
            "entry_points",
            "--test",
            "stable_names",
            "--test",
            "nvidia_text",
            "--test",
            "ignored_reasons",
        ],
        loom: false,
        clean: &[],
    },
    // The proofs' own code, each against the tests that use it.
    // test-support's requirement of GPUs: its unit tests, `required_gpus`.
    Group {
        name: "test-support",
        files: &["test-support/"],
        args: &[
            "-p",
            "test-support",
            "-p",
            "cuda-mem-sys",
            "--lib",
            "--test",
            "required_gpus",
        ],
        loom: false,
        clean: &[],
    },
    // abi-proofs' build script (the C and Rust halves it generates) and
    // test-support's C compiler, headers and scratch folders: every ABI
    // proof (default features; the generated bindings).
    Group {
        name: "proofs-own",
        files: &["abi-proofs/build/", "test-support/src/lib.rs"],
        args: &[
            "-p",
            "abi-proofs",
            "--test",
            "abi_layout",
            "--test",
            "abi_field_types",
            "--test",
            "abi_constants",
            "--test",
            "abi_by_value",
            "--test",
            "abi_signatures",
            "--test",
            "abi_bad_input",
        ],
        loom: false,
        clean: &["abi-proofs"],
    },
    Group {
        name: "constants-check",
        files: &["abi-proofs/tests/abi_constants.rs"],
        args: &["-p", "abi-proofs", "--test", "abi_constants"],
        loom: false,
        clean: &[],
    },
    Group {
        name: "docs",
        files: &["tests/docs_agree.rs"],
        args: &["-p", "cuda-mem-sys", "--test", "docs_agree"],
        loom: false,
        clean: &[],
    },
];

/// The groups that see a mutant of `changed`; for the baseline (nothing
/// changed), the groups that see any file of the run's `globs`.
pub fn groups_for(changed: &[String], globs: &[&str]) -> Vec<&'static Group> {
    // A glob's literal start: `**/build/codegen/*.rs` -> `build/codegen/`.
    let starts: Vec<String> = globs
        .iter()
        .map(|g| {
            let g = normal(g.trim_start_matches("**/"));
            g[..g.find('*').unwrap_or(g.len())].to_string()
        })
        .collect();
    GROUPS
        .iter()
        .filter(|g| {
            if changed.is_empty() {
                starts.iter().any(|s| {
                    g.files
                        .iter()
                        .any(|f| f.starts_with(s.as_str()) || s.starts_with(f))
                })
            } else {
                changed
                    .iter()
                    .any(|c| g.files.iter().any(|f| c.starts_with(f)))
            }
        })
        .collect()
}

/// `groups` less those `only` (names, space-separated) leaves out; an
/// empty `only` leaves every one.
pub fn only_named(groups: Vec<&'static Group>, only: &str) -> Vec<&'static Group> {
    if only.trim().is_empty() {
        return groups;
    }
    groups
        .into_iter()
        .filter(|g| only.split(' ').any(|n| n == g.name))
        .collect()
}

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

/// Per file: mutants, caught, missed, unviable, timeouts, over the runs'
/// output folders (cargo-mutants' `caught.txt`, `missed.txt`,
/// `unviable.txt`, `timeout.txt`, one mutant a line `file:line:col: what`),
/// as a Markdown table; then every missed and timed-out mutant.
pub fn summary(dirs: &[&str]) -> Result<String, String> {
    const KINDS: [&str; 5] = [
        "caught",
        "missed",
        "unviable",
        "timeout",
        "previously_caught",
    ];
    let mut per_file: BTreeMap<String, [usize; 5]> = BTreeMap::new();
    let mut survivors = vec![];
    for dir in dirs {
        let dir = Path::new(dir);
        // cargo-mutants writes into `mutants.out` under --output.
        let dir = if dir.join("mutants.out").is_dir() {
            dir.join("mutants.out")
        } else {
            dir.to_path_buf()
        };
        // An `--iterate` run's skipped mutants (`previously_caught.txt`):
        // those an earlier run into the folder caught *or found unviable*
        // (cargo-mutants' `load_previously_caught` reads both files), so
        // counted apart, never as caught.
        let files = KINDS
            .iter()
            .enumerate()
            .map(|(k, kind)| (k, format!("{kind}.txt")));
        for (k, file) in files {
            let kind = KINDS[k];
            let Ok(text) = std::fs::read_to_string(dir.join(&file)) else {
                continue;
            };
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                let line = normal(line);
                let file = line.split(':').next().unwrap_or_default().to_string();
                per_file.entry(file).or_default()[k] += 1;
                if k == 1 || k == 3 {
                    survivors.push(format!("{kind}: {line}"));
                }
            }
        }
    }
    let mut t = String::from(
        "| file | mutants | caught | missed | unviable | timeouts | skipped (`--iterate`: caught or unviable before) | caught of viable run |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (file, [c, m, u, to, before]) in &per_file {
        let viable = c + m + to;
        let share = if viable == 0 {
            "-".to_string()
        } else {
            format!("{:.0} %", 100.0 * *c as f64 / viable as f64)
        };
        t.push_str(&format!(
            "| `{file}` | {} | {c} | {m} | {u} | {to} | {before} | {share} |\n",
            c + m + u + to + before
        ));
    }
    t.push('\n');
    for s in survivors {
        t.push_str(&s);
        t.push('\n');
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mutant of each kind of file runs the groups that compile it; the
    /// wrong cases: a loader mutant never runs the generator's tests, a
    /// mutant outside once.rs never runs loom, the baseline runs all.
    #[test]
    fn each_file_is_tested_by_the_groups_that_compile_it() {
        let names = |c: &[&str]| -> Vec<&str> {
            let c: Vec<String> = c.iter().map(|s| s.to_string()).collect();
            groups_for(&c, &FILES).iter().map(|g| g.name).collect()
        };
        assert_eq!(
            names(&["src/loader/once.rs"]),
            ["loader", "loader-cudart", "models", "loom"]
        );
        assert_eq!(
            names(&["src/loader/library.rs"]),
            ["loader", "loader-cudart"]
        );
        assert_eq!(
            names(&["src/loader/slots.rs"]),
            ["loader", "loader-cudart", "c-names"]
        );
        assert_eq!(
            names(&["build/codegen/loader.rs"]),
            [
                "loader",
                "loader-cudart",
                "c-names",
                "generator",
                "proofs",
                "crate"
            ]
        );
        assert_eq!(
            names(&["build/codegen/postprocess.rs"]),
            ["generator", "proofs", "crate"]
        );
        // The proofs' own code: each file against the tests that use it.
        assert_eq!(names(&["test-support/src/require.rs"]), ["test-support"]);
        assert_eq!(
            names(&["test-support/src/lib.rs"]),
            ["test-support", "proofs-own"]
        );
        assert_eq!(names(&["abi-proofs/build/by_value.rs"]), ["proofs-own"]);
        assert_eq!(
            names(&["abi-proofs/build/layout_check/field_types.rs"]),
            ["proofs-own"]
        );
        assert_eq!(
            names(&["abi-proofs/tests/abi_constants.rs"]),
            ["constants-check"]
        );
        assert_eq!(names(&["tests/docs_agree.rs"]), ["docs"]);
        // abi-proofs' build script writes the files its tests read: cleaned
        // before each mutant, so that a script that writes nothing fails.
        let own = GROUPS.iter().find(|g| g.name == "proofs-own").unwrap();
        assert_eq!(own.clean, ["abi-proofs"]);
        assert_eq!(names(&[]).len(), GROUPS.len());
        // The baseline of a run over the loader alone, or once.rs alone.
        let base = |globs: &[&str]| -> Vec<&str> {
            groups_for(&[], globs).iter().map(|g| g.name).collect()
        };
        assert_eq!(
            base(&["src/loader/**"]),
            ["loader", "loader-cudart", "models", "loom", "c-names"]
        );
        assert_eq!(
            base(&["src/loader/once.rs"]),
            ["loader", "loader-cudart", "models", "loom"]
        );
        assert_eq!(
            base(&["**/build/codegen/postprocess.rs"]),
            ["generator", "proofs", "crate"]
        );
        // abi-proofs' build script through its package, as cargo-mutants names it.
        assert_eq!(base(&["abi-proofs/build-as-lib/**"]), ["proofs-own"]);
        assert_eq!(
            base(&["abi-proofs/build-as-lib/../build/by_value.rs"]),
            ["proofs-own"]
        );
        assert_eq!(base(&["test-support/**"]), ["test-support", "proofs-own"]);
    }

    /// The mutant's one file is found in every mutated folder and file,
    /// the proofs' own among them; a file outside them is not looked at.
    #[test]
    fn the_changed_file_is_found_where_mutants_are_made() {
        let root = std::env::temp_dir().join(format!("xtask-changed-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (tree, original) = (root.join("tree"), root.join("original"));
        let files = [
            "src/loader/once.rs",
            "test-support/src/require.rs",
            "abi-proofs/build/layout_check/field_types.rs",
            "abi-proofs/tests/abi_constants.rs",
            "tests/docs_agree.rs",
            "tests/vmm.rs",
        ];
        for dir in [&tree, &original] {
            for f in files {
                std::fs::create_dir_all(dir.join(f).parent().unwrap()).unwrap();
                std::fs::write(dir.join(f), "fn a() {}\n").unwrap();
            }
        }
        assert!(changed_files(&tree, &original).is_empty());
        for f in &files[1..] {
            std::fs::write(tree.join(f), "fn a() { () }\n").unwrap();
        }
        let found = changed_files(&tree, &original);
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(
            found,
            [
                "abi-proofs/build/layout_check/field_types.rs",
                "abi-proofs/tests/abi_constants.rs",
                "test-support/src/require.rs",
                "tests/docs_agree.rs",
            ]
        );
    }

    #[test]
    fn shards_and_timeouts_are_checked() {
        let a = parse(&[
            "--shard",
            "2/8",
            "--timeout",
            "300",
            "--file",
            "src/loader/once.rs",
        ])
        .unwrap();
        assert_eq!(a.shard, Some((2, 8)));
        assert_eq!(a.timeout, 300);
        assert_eq!(a.files, ["src/loader/once.rs"]);
        assert!(!a.iterate);
        assert!(parse(&["--iterate", "--timeout", "90"]).unwrap().iterate);
        assert_eq!(
            parse(&["--groups", "generator,proofs"]).unwrap().groups,
            ["generator", "proofs"]
        );
        // Only the groups named run, none added; unnamed, every one.
        let named = |only: &str| -> Vec<&str> {
            let c = ["build/codegen/loader.rs".to_string()];
            only_named(groups_for(&c, &FILES), only)
                .iter()
                .map(|g| g.name)
                .collect()
        };
        assert_eq!(named("generator"), ["generator"]);
        assert_eq!(named("generator loom"), ["generator"]);
        assert_eq!(named("").len(), 6);
        for bad in [
            &["--shard", "8/8"][..],
            &["--shard", "1"],
            &["--shard", "0/0"],
            &["--timeout", "0"],
            &["--timeout"],
            &["--summary"],
            &["--groups", "generator,nonsense"],
            &["--groups"],
            &["--nonsense"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_summary_counts_each_outcome_per_file() {
        let dir = std::env::temp_dir().join(format!("xtask-mutants-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("caught.txt"),
            "src/loader/once.rs:1:1: a\nsrc/loader/once.rs:2:1: b\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("missed.txt"),
            "generator/../build/codegen/docs.rs:3:1: c\n",
        )
        .unwrap();
        std::fs::write(dir.join("timeout.txt"), "src/loader/once.rs:4:1: d\n").unwrap();
        std::fs::write(
            dir.join("unviable.txt"),
            "abi-proofs/build-as-lib/../build/by_value.rs:5:1: f\n",
        )
        .unwrap();
        // An --iterate run's skipped mutants (caught or unviable before) are
        // counted apart, not as caught.
        std::fs::write(
            dir.join("previously_caught.txt"),
            "src/loader/once.rs:5:1: e\n",
        )
        .unwrap();
        let t = summary(&[&dir.to_string_lossy()]).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            t.contains("| `src/loader/once.rs` | 4 | 2 | 0 | 0 | 1 | 1 | 67 % |"),
            "{t}"
        );
        assert!(
            t.contains("| `build/codegen/docs.rs` | 1 | 0 | 1 | 0 | 0 | 0 | 0 % |"),
            "{t}"
        );
        assert!(t.contains("missed: build/codegen/docs.rs:3:1: c"), "{t}");
        assert!(
            t.contains("| `abi-proofs/build/by_value.rs` | 1 | 0 | 0 | 1 | 0 | 0 | - |"),
            "{t}"
        );
    }
}
