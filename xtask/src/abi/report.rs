//! `docs/abi-report.md`: the table of every release's check, made from the
//! rows [`super::run`] gathers, one section per target (each target's run
//! rewrites its own section and keeps the others').

use super::Row;
use generator::release::PINNED_RELEASE;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

pub fn command_line(cmd: &str, args: &[&str]) -> String {
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

pub fn report(workspace: &Path, rows: &[Row]) -> String {
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
         - Beside this table, for each release: every field's type against C's \
           (`abi-proofs/tests/abi_field_types.rs`) and every constant of the headers present with \
           C's value, associated constants too (`abi-proofs/tests/abi_constants.rs`), with the \
           crate generating its bindings (`CUDA_MEM_SYS_ALWAYS_GENERATE`); a failure of either \
           is listed under Mismatches as the check not completing.\n\
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

pub fn markers(target: &str) -> (String, String) {
    (
        format!("<!-- target {target} -->"),
        format!("<!-- end of target {target} -->"),
    )
}

/// Another target's rows: its own table, mismatches and headers, between
/// markers, so that each target's `abi --all` rewrites only its own part.
pub fn target_section(target: &str, rows: &[Row]) -> String {
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
pub fn splice_section(doc: &str, target: &str, section: &str) -> String {
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
