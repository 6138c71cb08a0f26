//! `cargo xtask abi <release>... | fallback | --all`: builds the crate against
//! each CUDA release's headers (one target directory per release under
//! `target/abi/`) and runs `abi-proofs/tests/abi_layout.rs` (layout and constants against
//! the C compiler) and `tests/stable_names.rs`. `--all` does every release and
//! the committed fallback and writes `docs/abi-report.md`.
//!
//! Each run leaves, in `target/abi/<release>/`, the bindings (`cuda_mem_sys.rs`)
//! and the check's table (`abi.txt`): `cargo xtask changes` reads them.

use crate::headers;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The ABI checks that run on the Windows targets (under Wine), MinGW's and MSVC's.
pub const WINDOWS_ABI_TESTS: [&str; 5] = [
    "abi_layout",
    "abi_signatures",
    "abi_bad_input",
    "stable_names",
    "fallback",
];

// The release of the committed fallback bindings (`build/release.rs`).
use crate::release::PINNED_RELEASE;
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
        .args(["test", "--test", "abi_symbols", "--test", "abi_signatures"])
        .args(["--test", "abi_layout", "--test", "stable_names"])
        .args(["--test", "header_coverage"]);
    if target != HOST && release == PINNED_RELEASE {
        cmd.args(["--test", "abi_bad_input", "--test", "fallback"]);
    }
    for_target(&mut cmd, workspace, target)?;
    cmd.env("CARGO_PROFILE_DEV_DEBUG", "0")
        .env(crate::locate::INCLUDE_DIR_VAR, &include)
        // The 12.x wheels hold only libcudart.so.12, linked dynamically.
        .env("LD_LIBRARY_PATH", include.parent().unwrap().join("lib"))
        .env(
            "CARGO_TARGET_DIR",
            target_dir_for(workspace, release, target),
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
    if ![HOST, "aarch64-unknown-linux-gnu", "x86_64-pc-windows-gnu"].contains(&target) {
        return Err(format!(
            "abi: unknown target {target} (aarch64-unknown-linux-gnu, x86_64-pc-windows-gnu)"
        ));
    }
    let all = args == ["--all"];
    let releases: Vec<String> = if all {
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
            .args(["test", "--test", test]);
        // The committed bindings against the headers found: a build without
        // the `bindgen` feature takes them for headers of their release
        // (abi-proofs still makes its inputs from those headers).
        if fallback {
            cmd.arg("--no-default-features");
        }
        for_target(&mut cmd, workspace, target)?;
        cmd.env(crate::locate::INCLUDE_DIR_VAR, &include)
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

fn command_line(cmd: &str, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_string)
        })
        .unwrap_or_else(|| "?".into())
}

fn report(workspace: &Path, rows: &[Row]) -> String {
    let compiler = rows
        .iter()
        .find_map(|r| r.summary.as_ref().map(|s| s.compiler.clone()))
        .unwrap_or_else(|| "?".into());
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# ABI report: layout and constants against the C compiler\n\n\
         Written by `cargo xtask abi --all`. For each CUDA release the crate is built against that \
         release's headers (the NVIDIA wheels named below) and `abi-proofs/tests/abi_layout.rs` compares, for \
         every type, field and constant the bindings expose, what Rust says (`size_of`, `align_of`, \
         `offset_of!`, the constants) with what the C compiler says (`sizeof`, `_Alignof`, \
         `offsetof`, the headers' constants) compiled against the same headers. \
         `tests/stable_names.rs` is built and run against the same bindings.\n\n\
         - Host: {} / C compiler: {compiler} / {}\n\
         - There was no CUDA 12.7: NVIDIA went from 12.6 to 12.8.\n\
         - `fallback`: the committed bindings (`src/generated/cuda-{PINNED_RELEASE}.rs`, used where \
           no headers are found), checked against the {PINNED_RELEASE} headers they were generated from \
           (a build without the `bindgen` feature).\n",
        command_line("uname", &["-srm"]),
        command_line("rustc", &["--version"]),
    );
    md.push_str(
        "| Release | `CUDA_VERSION` | Bindings | Types checked (structs/unions, enums, typedefs) | Opaque types (no layout) \
         | Nested types (via parents) | Fields checked (anonymous members: offset only) | Bitfields | Constants \
         | Mismatches | `stable_names` |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        if r.release == "12.8" {
            md.push_str("| 12.7 | — | there was no CUDA 12.7 | | | | | | | | |\n");
        }
        match &r.summary {
            Some(s) => {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} ({}, {}, {}) | {} | {} | {} ({}) | {} | {} | {} | {} |",
                    r.release,
                    s.cuda_version,
                    s.bindings,
                    s.get("types"),
                    s.get("records"),
                    s.get("enums"),
                    s.get("typedefs"),
                    s.get("opaque"),
                    s.get("nested"),
                    s.get("fields"),
                    s.get("offset_only"),
                    s.get("bitfields"),
                    s.get("constants"),
                    if r.failure.is_some() && s.mismatches.is_empty() {
                        "check failed".to_string()
                    } else {
                        s.mismatches.len().to_string()
                    },
                    r.stable_names
                );
            }
            None => {
                let why = r
                    .note
                    .clone()
                    .unwrap_or_else(|| "check failed (see below)".into());
                let _ = writeln!(
                    md,
                    "| {} | | {why} | | | | | | | | {} |",
                    r.release, r.stable_names
                );
            }
        }
    }
    md.push_str("\n## Mismatches\n\n");
    let mut any = false;
    for r in rows {
        if let Some(s) = &r.summary {
            for m in &s.mismatches {
                any = true;
                let _ = writeln!(md, "- {}: `{m}`", r.release);
            }
        }
        if let Some(f) = &r.failure {
            any = true;
            let _ = writeln!(
                md,
                "- {}: the check did not complete:\n\n```\n{}\n```",
                r.release,
                f.trim()
            );
        }
    }
    if !any {
        md.push_str("None: Rust and C agree on every item checked, in every release.\n");
    }
    let all: Vec<&String> = rows
        .iter()
        .filter_map(|r| r.summary.as_ref())
        .flat_map(|s| &s.mismatches)
        .collect();
    let named = |what: &str| {
        let mut names: Vec<&str> = all
            .iter()
            .filter(|m| m.contains(what))
            .filter_map(|m| m.split(':').next()?.split_whitespace().nth(1))
            .collect();
        names.sort();
        names.dedup();
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let undeclared = named("not declared by the C headers");
    if !undeclared.is_empty() {
        let _ = writeln!(
            md,
            "\n*Not declared by the C headers* ({undeclared}): the bindings expose a name that a C \
             program including the same headers cannot use, such as a helper macro the headers \
             `#undef` after use. The generator should drop it."
        );
    }
    let signedness = named("other signedness");
    if !signedness.is_empty() {
        let _ = writeln!(
            md,
            "\n*The same bits with the other signedness* ({signedness}): the constant's Rust type has \
             the wrong sign, so its value differs from C's (a macro such as `(~0u)` evaluated to `-1` \
             and typed `i32`, where C has the `unsigned int` 4294967295). The generator should take \
             the type from the C compiler."
        );
    }
    md.push_str(
        "\n## What is checked, what is not\n\n\
         - Types: every struct, union and enum newtype with a C name (size and alignment), and every \
           other type alias (scalars, pointers, function pointers). C spells each the way the headers \
           declare it: a typedef, the tag, or the tag-less typedef.\n\
         - Fields: offset, size and alignment of every field, nested ones included (types declared \
           inside another have no C name: C reaches them through the parent, `offsetof(T, a.b)`, and \
           through element 0 of arrays). An anonymous member has no name in C: its offset is checked \
           (it is its first field's), its size and alignment are not (they are bounded by its fields, \
           all checked, and by the parent's size).\n\
         - Bitfields (none in these headers): the struct's bytes after setting each bitfield to all \
           ones through bindgen's setter vs a C assignment, and the value read back; bindgen's storage \
           units (`_bitfield_N`) and padding members have no C counterpart and are checked through \
           those bytes and the parent's size.\n\
         - Constants: the value of every enum constant and macro constant, pointer constants \
           (`CU_STREAM_LEGACY`) as addresses; none of other types (floating point) occurs.\n\
         - Opaque types (`struct CUctx_st`, declared but never defined) have no layout: counted, skipped.\n\
         - Function signatures are not compared with C here (docs/release-changes.md tracks how they \
           change between releases).\n\n## Headers\n\n",
    );
    for r in rows {
        if !r.wheels.is_empty() {
            let _ = writeln!(md, "- {}: {}", r.release, r.wheels);
        }
    }
    let _ = workspace;
    md
}

fn markers(target: &str) -> (String, String) {
    (
        format!("<!-- target {target} -->"),
        format!("<!-- end of target {target} -->"),
    )
}

/// Another target's rows: its own table, mismatches and headers, between
/// markers, so that each target's `abi --all` rewrites only its own part.
fn target_section(target: &str, rows: &[Row]) -> String {
    let (begin, end) = markers(target);
    let full = report(Path::new("."), rows);
    let table_start = full.find("| Release |").unwrap_or(0);
    let table_end = full[table_start..]
        .find("\n\n")
        .map_or(full.len(), |e| table_start + e);
    let section = |title: &str| {
        let start = full.find(title)?;
        let body = &full[start + title.len()..];
        let stop = body.find("\n## ").unwrap_or(body.len());
        Some(body[..stop].trim().to_string())
    };
    let compiler = rows
        .iter()
        .find_map(|r| r.summary.as_ref().map(|s| s.compiler.clone()))
        .unwrap_or_else(|| "?".into());
    let runner = match target {
        "x86_64-pc-windows-gnu" => "wine",
        _ => "qemu-aarch64 -L /usr/aarch64-linux-gnu",
    };
    format!(
        "{begin}\n## Target {target}\n\n\
         Written by `cargo xtask abi --target {target} --all`: the crate and the test built for \
         {target} against that target's wheels, the C half compiled by {compiler} and every program \
         run through `{runner}` (cargo's runner, `CARGO_TARGET_<TRIPLE>_RUNNER`).\n\n{}\n\n\
         ### Mismatches ({target})\n\n{}\n\n### Headers ({target})\n\n{}\n{end}\n",
        &full[table_start..table_end],
        section("## Mismatches\n\n").unwrap_or_default(),
        section("## Headers\n\n").unwrap_or_default(),
    )
}

/// `doc` with `section` (marked) in place of that target's old one, or
/// before "## What is checked" where it had none.
fn splice_section(doc: &str, target: &str, section: &str) -> String {
    let (begin, end) = markers(target);
    if let (Some(b), Some(e)) = (doc.find(&begin), doc.find(&end)) {
        let e = e + end.len();
        let e = if doc[e..].starts_with('\n') { e + 1 } else { e };
        return format!("{}{section}{}", &doc[..b], &doc[e..]);
    }
    match doc.find("## What is checked") {
        Some(at) => format!("{}{section}\n{}", &doc[..at], &doc[at..]),
        None => format!("{doc}\n{section}"),
    }
}

/// The x86_64 report with the other targets' sections of the old one kept.
pub fn keep_target_sections(new: &str, old: &str) -> String {
    let mut doc = new.to_string();
    let mut rest = old;
    while let Some(b) = rest.find("<!-- target ") {
        let after = &rest[b + "<!-- target ".len()..];
        let Some(t) = after.find(" -->").map(|e| &after[..e]) else {
            break;
        };
        let (begin, end) = markers(t);
        let Some(e) = rest.find(&end) else { break };
        let section = format!("{}\n", &rest[b..e + end.len()]);
        debug_assert!(section.starts_with(&begin));
        doc = splice_section(&doc, t, &section);
        rest = &rest[e + end.len()..];
    }
    doc
}
