//! `cargo xtask abi <release>... | fallback | --all`: builds the crate against
//! each CUDA release's headers (one target directory per release under
//! `target/abi/`) and runs every ABI proof a release has ([`RELEASE_PROOFS`],
//! the same list CI's ABI steps run): `abi-proofs/tests/abi_layout.rs` (layout
//! and constants against the C compiler), `abi_field_types` and
//! `abi_constants` (every field's type, every constant of the headers;
//! `by_type.rs`), `tests/stable_names.rs`, and [`MORE`]: `abi_symbols`,
//! `abi_signatures`, `abi_by_value` and `tests/header_coverage.rs`.
//! The crate generates its bindings for every release named, the pinned one
//! too ([`ALWAYS_GENERATE`]). `--all` does every release and
//! the committed fallback and writes `docs/abi-report.md`.
//!
//! Each run leaves, in `target/abi/<release>/`, the bindings (`cuda_mem_sys.rs`)
//! and the check's table (`abi.txt`): `cargo xtask changes` reads them.
//!
//! The wing of the C-compiler proofs: this command, [`msvc`] (the same
//! proofs for x86_64-pc-windows-msvc with no file from Microsoft),
//! [`winarm`] (`--target aarch64-pc-windows-msvc`: the proofs that need no
//! program run, for Windows on Arm) and [`libclang22`] (the bindings from
//! libclang 22 against 19's).

mod by_type;
pub mod libclang22;
pub mod msvc;
mod report;
pub mod winarm;

pub use report::keep_target_sections;
use report::{report, splice_section, target_section};

use crate::headers;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The ABI checks that run on the Windows targets (under Wine), MinGW's and MSVC's.
pub const WINDOWS_ABI_TESTS: [&str; 8] = [
    "abi_layout",
    "abi_field_types",
    "abi_constants",
    "abi_by_value",
    "abi_signatures",
    "abi_bad_input",
    "stable_names",
    "fallback",
];

/// The ABI checks by type and by presence: every field's C type, every
/// constant of the headers bound with C's value (associated ones too).
pub const BY_TYPE: [&str; 2] = ["abi_field_types", "abi_constants"];

/// The proofs `abi` runs after the layout, by-type and stable-names checks:
/// the symbols and signatures, every by-value type both ways, the headers
/// `wrapper.h` reads or lists.
pub const MORE: [&str; 4] = [
    "abi_symbols",
    "abi_signatures",
    "abi_by_value",
    "header_coverage",
];

/// The proofs of [`MORE`] that need the `bindgen` feature (abi-proofs'
/// `required-features`): not run for `fallback`, which builds without it.
pub const NEED_BINDGEN: [&str; 2] = ["abi_symbols", "abi_signatures"];

/// [`MORE`] for a build with (`bindgen`) or without the generator.
pub fn more(bindgen: bool) -> Vec<&'static str> {
    MORE.into_iter()
        .filter(|t| bindgen || !NEED_BINDGEN.contains(t))
        .collect()
}

/// Every ABI proof a release has: what `abi <release>` and CI's ABI step
/// for a release ([`ci_release_for`]) both run.
pub fn release_proofs() -> Vec<&'static str> {
    let mut all = vec!["abi_layout"];
    all.extend(BY_TYPE);
    all.push("stable_names");
    all.extend(MORE);
    all
}

/// Set for the crate's build: bindgen runs even for the pinned release's
/// headers (not `committed-same-headers`), so the checks prove the
/// generator's output on every release named (`build/config.rs`).
pub const ALWAYS_GENERATE: &str = "CUDA_MEM_SYS_ALWAYS_GENERATE";

// The release of the committed fallback bindings (`build/release.rs`).
use generator::release::PINNED_RELEASE;
const FALLBACK: &str = "fallback";

/// One release's result.
pub struct Row {
    pub release: String,
    pub note: Option<String>,
    pub summary: Option<Summary>,
    /// The test's own words when it failed or was ignored.
    pub failure: Option<String>,
    pub stable_names: String,
    pub wheels: String,
}

#[derive(Default, Clone)]
pub struct Summary {
    pub cuda_version: u32,
    pub bindings: String,
    pub compiler: String,
    pub counts: Vec<(String, u64)>,
    pub mismatches: Vec<String>,
}

impl Summary {
    pub fn get(&self, key: &str) -> u64 {
        self.counts
            .iter()
            .find(|(k, _)| k == key)
            .map_or(0, |(_, v)| *v)
    }
}

pub fn target_dir(workspace: &Path, release: &str) -> PathBuf {
    target_dir_for(workspace, release, HOST)
}

/// `target/abi/<release>` for x86_64 Linux, `target/abi/<triple>/<release>` for another target.
pub fn target_dir_for(workspace: &Path, release: &str, target: &str) -> PathBuf {
    headers::per_target(&workspace.join("target/abi"), release, target)
}

use headers::HOST_TARGET as HOST;

/// Makes a `cargo test` command build for `target` and run its programs
/// there: `--target`, the cross linker and the runner (each only where the
/// environment does not set it already; the tests read the runner from the
/// same `CARGO_TARGET_<TRIPLE>_RUNNER` for the C programs they run).
pub fn for_target(cmd: &mut Command, workspace: &Path, target: &str) -> Result<(), String> {
    if target == HOST {
        return Ok(());
    }
    let (linker, runner) = match target {
        "aarch64-unknown-linux-gnu" => (
            "aarch64-linux-gnu-gcc",
            "qemu-aarch64 -L /usr/aarch64-linux-gnu",
        ),
        "x86_64-pc-windows-gnu" => ("x86_64-w64-mingw32-gcc", "wine"),
        _ => {
            return Err(format!(
                "abi: unknown target {target} (aarch64-unknown-linux-gnu, x86_64-pc-windows-gnu)"
            ))
        }
    };
    let var = |what: &str| {
        format!(
            "CARGO_TARGET_{}_{what}",
            target.to_uppercase().replace('-', "_")
        )
    };
    cmd.args(["--target", target]);
    let wine_runner;
    let runner = if runner == "wine" {
        wine_runner = crate::cmd::wine_runner(workspace)?.display().to_string();
        wine_runner.as_str()
    } else {
        runner
    };
    for (name, value) in [(var("LINKER"), linker), (var("RUNNER"), runner)] {
        if std::env::var_os(&name).is_none() {
            cmd.env(name, value);
        }
    }
    if target.contains("windows") {
        // libclang finds no compiler headers (mm_malloc.h) for a MinGW target by itself.
        cmd.env(
            format!("BINDGEN_EXTRA_CLANG_ARGS_{}", target.replace('-', "_")),
            "-isystem /usr/lib/llvm-19/lib/clang/19/include",
        )
        .env("WINEDEBUG", "-all")
        .env("WINEPATH", crate::cmd::wine_shim(workspace)?);
    }
    Ok(())
}

/// The ABI tests (symbols, signatures, layouts and constants, stable names)
/// against one release's headers, in the target folder `xtask abi` uses.
pub fn ci_release(workspace: &Path, release: &str) -> Result<(), String> {
    ci_release_for(workspace, release, HOST)
}

/// The same for `target` (built for it, its programs run through its runner);
/// for the pinned release also the bad-input fixture and the committed fallback.
pub fn ci_release_for(workspace: &Path, release: &str, target: &str) -> Result<(), String> {
    let include = headers::fetch_for(workspace, release, target)?;
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(workspace)
        .arg("test")
        .args(release_proofs().into_iter().flat_map(|t| ["--test", t]));
    if target != HOST && release == PINNED_RELEASE {
        cmd.args(["--test", "abi_bad_input", "--test", "fallback"]);
    }
    for_target(&mut cmd, workspace, target)?;
    cmd.env("CARGO_PROFILE_DEV_DEBUG", "0")
        .env(ALWAYS_GENERATE, "1")
        .env(generator::locate::INCLUDE_DIR_VAR, &include)
        // The 12.x wheels hold only libcudart.so.12, linked dynamically.
        .env("LD_LIBRARY_PATH", include.parent().unwrap().join("lib"))
        .env(
            "CARGO_TARGET_DIR",
            target_dir_for(workspace, release, target),
        );
    crate::cmd::run_cmd(&mut cmd)
}

/// The ABI checks on the bindings a build without `bindgen` compiles (the
/// committed bindings of `release`, for its very headers: no bindgen run, no
/// `CUDA_MEM_SYS_ALWAYS_GENERATE`): layout, field types, constants, by
/// value, stable names, header coverage and the committed bindings'
/// comparison with the generator's. The signature and symbol checks need
/// abi-proofs' generated bindings (`bindgen`): [`ci_release`] runs them on
/// the generator's output, which `cargo xtask regen --check` proves equal
/// to the committed.
pub fn ci_release_committed(workspace: &Path, release: &str) -> Result<(), String> {
    let include = headers::fetch(workspace, release)?;
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(workspace)
        .args(["test", "--no-default-features"])
        .args(["--test", "abi_layout", "--test", "stable_names"])
        .args(BY_TYPE.iter().flat_map(|t| ["--test", t]))
        .args([
            "--test",
            "abi_by_value",
            "--test",
            "header_coverage",
            "--test",
            "fallback",
        ])
        .env_remove(ALWAYS_GENERATE)
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .env(generator::locate::INCLUDE_DIR_VAR, &include)
        .env("LD_LIBRARY_PATH", include.parent().unwrap().join("lib"))
        .env(
            "CARGO_TARGET_DIR",
            target_dir(workspace, release).join("committed"),
        );
    crate::cmd::run_cmd(&mut cmd)
}

/// `abi`'s arguments, checked: `[--target <triple>] (<release>... | --all)`,
/// each release known (or `fallback`) and the target one `for_target` runs.
pub fn parse<'a>(args: &[&'a str]) -> Result<(&'a str, Vec<String>, bool), String> {
    let (target, args): (&str, Vec<&str>) = match args {
        ["--target", t, rest @ ..] => (t, rest.to_vec()),
        _ => (HOST, args.to_vec()),
    };
    if ![
        HOST,
        "aarch64-unknown-linux-gnu",
        "x86_64-pc-windows-gnu",
        winarm::WINARM,
    ]
    .contains(&target)
    {
        return Err(format!(
            "abi: unknown target {target} (aarch64-unknown-linux-gnu, x86_64-pc-windows-gnu, \
             {})",
            winarm::WINARM
        ));
    }
    let all = args == ["--all"];
    if target == winarm::WINARM && args.contains(&FALLBACK) {
        return Err(format!(
            "abi: the committed fallback is not proven for {target}: name releases ({}) or --all",
            winarm::releases().join(", ")
        ));
    }
    let releases: Vec<String> = if all && target == winarm::WINARM {
        winarm::releases()
    } else if all {
        crate::releases::ALL
            .iter()
            .map(|r| r.to_string())
            .chain([FALLBACK.to_string()])
            .collect()
    } else if args.is_empty() {
        return Err("abi: name releases (12.0 ... 13.5, fallback) or --all".into());
    } else {
        for a in &args {
            if *a != FALLBACK {
                headers::check(a, target).map_err(|e| format!("abi: {e}"))?;
            }
        }
        args.iter().map(|a| a.to_string()).collect()
    };
    Ok((target, releases, all))
}

pub fn run(workspace: &Path, args: &[&str]) -> Result<(), String> {
    let (target, releases, all) = parse(args)?;
    if target == winarm::WINARM {
        // Nothing here runs an aarch64 Windows program: the compile-time proofs.
        return winarm::run(workspace, &releases);
    }
    let mut rows = vec![];
    for release in &releases {
        eprintln!("== abi {release}");
        let row = check(workspace, release, target)?;
        print_row(&row);
        rows.push(row);
    }
    // A target's section lists the releases run (CI's, or --all).
    if all || target != HOST {
        let path = workspace.join("docs/abi-report.md");
        std::fs::create_dir_all(workspace.join("docs")).map_err(|e| e.to_string())?;
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        let doc = if target == HOST {
            keep_target_sections(&report(workspace, &rows), &old)
        } else {
            splice_section(&old, target, &target_section(target, &rows))
        };
        std::fs::write(&path, doc).map_err(|e| format!("writing {}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    let bad: Vec<&str> = rows
        .iter()
        .filter(|r| {
            r.failure.is_some()
                || r.summary.as_ref().is_some_and(|s| !s.mismatches.is_empty())
                || (r.stable_names != "pass" && r.stable_names != "not run")
        })
        .map(|r| r.release.as_str())
        .collect();
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the ABI check or stable_names failed for: {}",
            bad.join(", ")
        ))
    }
}

fn print_row(row: &Row) {
    match (&row.summary, &row.failure) {
        (_, Some(f)) => println!("{}: FAILED\n{f}", row.release),
        (Some(s), None) => println!(
            "{}: CUDA_VERSION {}, {} types, {} fields, {} bitfields, {} constants checked; {} mismatches; stable_names {}",
            row.release,
            s.cuda_version,
            s.get("types"),
            s.get("fields"),
            s.get("bitfields"),
            s.get("constants"),
            s.mismatches.len(),
            row.stable_names
        ),
        (None, None) => println!("{}: {}", row.release, row.note.as_deref().unwrap_or("not run")),
    }
}

fn check(workspace: &Path, release: &str, target: &str) -> Result<Row, String> {
    let fallback = release == FALLBACK;
    let headers_release = if fallback { PINNED_RELEASE } else { release };
    let mut row = Row {
        release: release.to_string(),
        note: None,
        summary: None,
        failure: None,
        stable_names: "not run".into(),
        wheels: String::new(),
    };
    if fallback {
        let file = workspace.join(format!("src/generated/cuda-{PINNED_RELEASE}.rs"));
        if !file.is_file() {
            row.note = Some(format!(
                "no committed fallback in this checkout (src/generated/cuda-{PINNED_RELEASE}.rs)"
            ));
            return Ok(row);
        }
    }
    let include = headers::fetch_for(workspace, headers_release, target)?;
    row.wheels = headers::wheel_names_for(workspace, headers_release, target);
    if let Some(from) = headers::headers_only_from(target, headers_release) {
        row.wheels = format!(
            "{} (no {target} wheel: the {from} wheels' headers, identical text; a stub libcudart)",
            row.wheels
        );
    }
    let dir = target_dir_for(workspace, release, target);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let dump = dir.join("abi.txt");
    let _ = std::fs::remove_file(&dump);
    let cargo = |test: &str| {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.current_dir(workspace)
            // abi_layout is abi-proofs', stable_names the crate's: both default members.
            .args(["test", "--test", test])
            .env(ALWAYS_GENERATE, "1");
        // The committed bindings against the headers found: a build without
        // the `bindgen` feature takes them for headers of their release
        // (abi-proofs still makes its inputs from those headers).
        if fallback {
            cmd.arg("--no-default-features");
        }
        for_target(&mut cmd, workspace, target)?;
        cmd.env(generator::locate::INCLUDE_DIR_VAR, &include)
            .env("CARGO_TARGET_DIR", &dir)
            .env("CARGO_PROFILE_DEV_DEBUG", "0")
            .env("CUDA_MEM_SYS_ABI_DUMP", &dump)
            // The 12.x wheels hold only libcudart.so.12, linked dynamically.
            .env("LD_LIBRARY_PATH", include.parent().unwrap().join("lib"));
        Ok::<Command, String>(cmd)
    };
    let out = cargo("abi_layout")?
        .output()
        .map_err(|e| format!("running cargo: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    if let Ok(text) = std::fs::read_to_string(&dump) {
        let summary = parse_dump(&text);
        if let Some(out_dir) = text.lines().find_map(|l| l.strip_prefix("out_dir ")) {
            let bindings = Path::new(out_dir).join("cuda_mem_sys.rs");
            std::fs::copy(&bindings, dir.join("cuda_mem_sys.rs"))
                .map_err(|e| format!("copying {}: {e}", bindings.display()))?;
        }
        row.summary = Some(summary);
    }
    let mismatches = row
        .summary
        .as_ref()
        .is_some_and(|s| !s.mismatches.is_empty());

    if (!out.status.success() && !mismatches) || row.summary.is_none() {
        // The compiler's errors, or the test's failures and ignore reasons.
        let errors: Vec<&str> = stderr
            .lines()
            .skip_while(|l| !l.starts_with("error"))
            .take(40)
            .collect();
        let failures: Vec<&str> = stdout
            .lines()
            .filter(|l| l.contains("ignored,") || l.contains("FAILED") || l.starts_with("  "))
            .take(40)
            .collect();
        row.failure = Some(format!(
            "cargo test --test abi_layout: {}\n{}\n{}",
            out.status,
            failures.join("\n"),
            errors.join("\n")
        ));
    }
    let mut by_type = cargo(BY_TYPE[0])?;
    by_type.args(BY_TYPE[1..].iter().flat_map(|t| ["--test", t]));
    if let Some(failure) = by_type::check(!fallback, &dump, by_type)? {
        row.failure = Some(match row.failure.take() {
            Some(f) => format!("{f}\n{failure}"),
            None => failure,
        });
    }
    let tests = more(!fallback);
    let mut more = cargo(tests[0])?;
    more.args(tests[1..].iter().flat_map(|t| ["--test", t]));
    if let Some(failure) = by_type::tests_failed(&tests, more)? {
        row.failure = Some(match row.failure.take() {
            Some(f) => format!("{f}\n{failure}"),
            None => failure,
        });
    }
    let names = cargo("stable_names")?
        .output()
        .map_err(|e| format!("running cargo: {e}"))?;
    let names_err = String::from_utf8_lossy(&names.stderr);
    row.stable_names = if names.status.success() {
        "pass".into()
    } else if names_err.contains("could not compile") {
        let first = names_err
            .lines()
            .find(|l| l.starts_with("error"))
            .unwrap_or("")
            .to_string();
        format!(
            "does not compile ({})",
            first.replace('|', "\\|").replace('`', "'")
        )
    } else {
        "fails".into()
    };
    Ok(row)
}

/// The summary lines of `abi.txt` (written by abi-proofs/tests/abi_layout.rs).
pub fn parse_dump(text: &str) -> Summary {
    let mut s = Summary::default();
    for line in text.lines() {
        let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
        match key {
            "cuda_version" => s.cuda_version = rest.trim().parse().unwrap_or(0),
            "bindings" => s.bindings = rest.to_string(),
            "compiler" => s.compiler = rest.to_string(),
            "summary" => {
                s.counts = rest
                    .split_whitespace()
                    .filter_map(|kv| {
                        let (k, v) = kv.split_once('=')?;
                        Some((k.to_string(), v.parse().ok()?))
                    })
                    .collect()
            }
            "mismatch" => s.mismatches.push(rest.to_string()),
            _ => {}
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::{more, release_proofs, BY_TYPE, MORE, NEED_BINDGEN};

    /// `abi <release>` runs what CI's ABI step runs: the layout check, the
    /// checks by type, `stable_names` (each on its own) and the rest
    /// together; the by-value and header-coverage proofs among them.
    #[test]
    fn abi_runs_every_proof_of_a_release() {
        let all = release_proofs();
        for t in [
            "abi_by_value",
            "header_coverage",
            "abi_signatures",
            "abi_symbols",
        ] {
            assert!(MORE.contains(&t), "{t}");
        }
        let mut run_by_abi = vec!["abi_layout", "stable_names"];
        run_by_abi.extend(BY_TYPE);
        run_by_abi.extend(MORE);
        run_by_abi.sort();
        let mut sorted = all.clone();
        sorted.sort();
        assert_eq!(run_by_abi, sorted);
        sorted.dedup();
        assert_eq!(sorted.len(), all.len(), "a proof listed twice: {all:?}");
        // `fallback` (no `bindgen`): the rest of them, by value and header
        // coverage still; abi-proofs' manifest says which need the feature.
        assert_eq!(more(true), MORE);
        assert_eq!(more(false), ["abi_by_value", "header_coverage"]);
        let manifest = include_str!("../../../abi-proofs/Cargo.toml");
        for t in MORE {
            let needs = manifest
                .split("[[test]]")
                .find(|b| b.contains(&format!("name = \"{t}\"")))
                .is_some_and(|b| b.contains("required-features = [\"bindgen\"]"));
            assert_eq!(needs, NEED_BINDGEN.contains(&t), "{t}");
        }
    }
}
