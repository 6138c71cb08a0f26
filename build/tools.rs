//! What the tools compile of `build/` and the build script never calls: the
//! writers of the committed bindings' companion files ([`symbols_text`],
//! [`inputs_text`]; the build reads them back with `release::read_symbols`
//! and `release::same_inputs`), and readers of what the build and the
//! generator wrote ([`parse_line`] for the build script's timing lines,
//! [`use_renames`] for the bindings' `use … as …`). Only `shared.rs` declares
//! this module (the `generator` package, for xtask and abi-proofs' build
//! script): nothing here is dead code in the build script.

use super::codegen;
use super::committed::{self, Family, Variant};
use super::release::{self, fnv1a64};
use super::timings::PREFIX;
use std::path::{Path, PathBuf};

/// Every family of committed bindings, in the order the files are listed.
pub const FAMILIES: [Family; 5] = [
    Family::X86_64Linux,
    Family::Aarch64Linux,
    Family::X86_64WindowsGnu,
    Family::X86_64WindowsMsvc,
    Family::Aarch64WindowsMsvc,
];

/// The Rust target a family's bindings are generated for.
pub fn triple(family: Family) -> &'static str {
    match family {
        Family::X86_64Linux => "x86_64-unknown-linux-gnu",
        Family::Aarch64Linux => "aarch64-unknown-linux-gnu",
        Family::X86_64WindowsGnu => "x86_64-pc-windows-gnu",
        Family::X86_64WindowsMsvc => "x86_64-pc-windows-msvc",
        Family::Aarch64WindowsMsvc => "aarch64-pc-windows-msvc",
    }
}

/// The family of a Rust target triple.
pub fn family_of_triple(t: &str) -> Option<Family> {
    FAMILIES.into_iter().find(|f| triple(*f) == t)
}

/// Every committed variant: each family's releases, both modes.
pub fn variants() -> Vec<Variant> {
    let mut out = vec![];
    for family in FAMILIES {
        for release in family.releases() {
            for ptds in [false, true] {
                out.push(Variant {
                    release,
                    family,
                    ptds,
                });
            }
        }
    }
    out
}

/// `CUDA 12.4 (x86_64-linux)`, `..., per-thread default stream)`.
pub fn describe(v: Variant) -> String {
    format!(
        "CUDA {} ({}{})",
        v.release,
        v.family.name(),
        if v.ptds {
            ", per-thread default stream"
        } else {
            ""
        }
    )
}

/// The committed fallback files for one stream mode, as `cargo xtask regen`
/// writes them and `generator/tests/pinned_output.rs` compares them: each
/// file's path and text (the bindings, their inputs, their symbols),
/// generated from `include_dirs` (the pinned release's) with
/// [`codegen::Docs::Links`] (the published package carries none of
/// NVIDIA's text: `build/codegen/links.rs`).
pub fn committed_files(
    include_dirs: &[PathBuf],
    crate_dir: &Path,
    work_dir: &Path,
    per_thread_default_stream: bool,
) -> Result<[(PathBuf, String); 3], String> {
    let out = committed_output(include_dirs, crate_dir, work_dir, per_thread_default_stream)?;
    files_of(&out, include_dirs, crate_dir, per_thread_default_stream)
}

/// The generator's output from which the committed files are written.
pub fn committed_output(
    include_dirs: &[PathBuf],
    crate_dir: &Path,
    work_dir: &Path,
    per_thread_default_stream: bool,
) -> Result<codegen::Output, String> {
    output_with(
        include_dirs,
        crate_dir,
        work_dir,
        per_thread_default_stream,
        codegen::Docs::Links,
    )
}

/// The generator's output for this machine, documented as `docs` says.
pub fn output_with(
    include_dirs: &[PathBuf],
    crate_dir: &Path,
    work_dir: &Path,
    per_thread_default_stream: bool,
    docs: codegen::Docs,
) -> Result<codegen::Output, String> {
    output_for(
        include_dirs,
        crate_dir,
        work_dir,
        per_thread_default_stream,
        docs,
        host_cc(),
    )
}

/// The generator's output with the C compiler `cc` (set up for the target;
/// bindgen reads the target from `TARGET`, as in a build script).
pub fn output_for(
    include_dirs: &[PathBuf],
    crate_dir: &Path,
    work_dir: &Path,
    per_thread_default_stream: bool,
    docs: codegen::Docs,
    cc: cc::Build,
) -> Result<codegen::Output, String> {
    codegen::generate(&codegen::Input {
        include_dirs,
        crate_dir,
        work_dir,
        cc,
        per_thread_default_stream,
        docs,
        lap: &|_| {},
    })
}

/// The texts of one committed variant, generated from `include_dirs` for
/// the target `cc` is set up for: (bindings, symbols, inputs), each whole
/// (`cargo xtask regen` keeps all but the pinned ones as deltas).
pub fn variant_texts(
    include_dirs: &[PathBuf],
    crate_dir: &Path,
    work_dir: &Path,
    per_thread_default_stream: bool,
    cc: cc::Build,
) -> Result<[String; 3], String> {
    let out = output_for(
        include_dirs,
        crate_dir,
        work_dir,
        per_thread_default_stream,
        codegen::Docs::Links,
        cc,
    )?;
    let (driver, runtime) = codegen::linked_symbols(&out.file);
    Ok([
        pretty(&out),
        symbols_text(&driver, &runtime),
        inputs_text(include_dirs, &out.headers_read)?,
    ])
}

/// The C compiler for `target`, configured outside a build script (`CC_<target>`
/// names it where the default would not do).
pub fn cc_for(target: &str) -> cc::Build {
    let host = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    let mut b = cc::Build::new();
    b.target(target)
        .host(&host)
        .opt_level(0)
        .cargo_metadata(false)
        .warnings(false);
    b
}

/// The delta that turns `base` into `new` ([`super::committed::apply`]'s
/// format): Myers' line diff, each run of changed lines one hunk, after
/// `title` and the result's fingerprint.
pub fn delta(title: &str, base: &str, new: &str) -> String {
    use similar::DiffOp;
    let old: Vec<&str> = base.lines().collect();
    let now: Vec<&str> = new.lines().collect();
    let mut out = format!("# {title}\n# result {:016x}\n", fnv1a64(new.as_bytes()));
    // Runs of changes: what lies between two runs of equal lines (read
    // from the equal runs alone, which both texts pass in order).
    let mut runs: Vec<(usize, usize, usize, usize)> = vec![];
    let (mut o, mut n) = (0, 0);
    let equal = similar::capture_diff_slices(similar::Algorithm::Myers, &old, &now)
        .into_iter()
        .filter_map(|op| match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => Some((old_index, new_index, len)),
            _ => None,
        })
        .chain([(old.len(), now.len(), 0)]);
    for (oi, ni, len) in equal {
        if oi > o || ni > n {
            runs.push((o, oi, n, ni));
        }
        (o, n) = (oi + len, ni + len);
    }
    // Unified diffs name the line before an empty range.
    let at = |start: usize, len: usize| if len == 0 { start } else { start + 1 };
    for (os, oe, ns, ne) in runs {
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            at(os, oe - os),
            oe - os,
            at(ns, ne - ns),
            ne - ns
        ));
        for l in &old[os..oe] {
            out.push('-');
            out.push_str(l);
            out.push('\n');
        }
        for l in &now[ns..ne] {
            out.push('+');
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

/// The committed files of [`committed_output`]'s `out`.
pub fn files_of(
    out: &codegen::Output,
    include_dirs: &[PathBuf],
    crate_dir: &Path,
    ptds: bool,
) -> Result<[(PathBuf, String); 3], String> {
    let (driver, runtime) = codegen::linked_symbols(&out.file);
    let v = committed::find(
        release::PINNED_RELEASE,
        committed::Family::X86_64Linux,
        ptds,
    )
    .ok_or("the pinned release has no committed variant")?;
    Ok([
        (v.path(crate_dir, committed::Part::Rust), pretty(out)),
        (
            v.inputs_path(crate_dir),
            inputs_text(include_dirs, &out.headers_read)?,
        ),
        (
            v.path(crate_dir, committed::Part::Symbols),
            symbols_text(&driver, &runtime),
        ),
    ])
}

/// The committed form of the bindings: the build script's tree, pretty-printed
/// (`build/main.rs` writes the same tree as tokens, one item a line).
pub fn pretty(out: &codegen::Output) -> String {
    out.header.clone() + &prettyplease::unparse(&out.file)
}

/// The C compiler for this machine, configured outside a build script.
pub fn host_cc() -> cc::Build {
    let triple = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    let mut b = cc::Build::new();
    b.target(&triple)
        .host(&triple)
        .opt_level(0)
        .cargo_metadata(false)
        .warnings(false);
    b
}

/// The text of a symbols file for (driver, runtime) symbol lists.
pub fn symbols_text(driver: &[String], runtime: &[String]) -> String {
    let mut out = String::from(
        "# @generated by cuda-mem-sys's generator: the symbols the bindings beside this file link.\n",
    );
    for (kind, list) in [("driver", driver), ("runtime", runtime)] {
        for s in list {
            out.push_str(kind);
            out.push(' ');
            out.push_str(s);
            out.push('\n');
        }
    }
    out
}

/// The text of an inputs file for `headers` (absolute paths, each below one
/// of `include_dirs`).
pub fn inputs_text(include_dirs: &[PathBuf], headers: &[PathBuf]) -> Result<String, String> {
    let mut lines = vec![];
    for h in headers {
        let rel = include_dirs
            .iter()
            .find_map(|d| h.strip_prefix(d).ok())
            .ok_or_else(|| format!("{} is below no include folder", h.display()))?;
        let bytes = std::fs::read(h).map_err(|e| format!("reading {}: {e}", h.display()))?;
        let rel = rel.to_string_lossy().replace('\\', "/");
        lines.push(format!("{:016x} {rel}", fnv1a64(&bytes)));
    }
    lines.sort();
    lines.dedup();
    let mut out = String::from(
        "# @generated by cuda-mem-sys's generator: the headers the bindings beside this file were \
         generated from (FNV-1a 64, path).\n",
    );
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
    Ok(out)
}

/// A line of [`Timings`](super::timings::Timings) (`cargo:warning=` already taken off): the step, its
/// CPU seconds (`None`: not measured) and wall seconds.
pub fn parse_line(line: &str) -> Option<(String, Option<f64>, f64)> {
    let (step, rest) = line.strip_prefix(PREFIX)?.rsplit_once(": ")?;
    let (cpu, wall) = rest.strip_suffix(" s wall")?.split_once(" s CPU, ")?;
    Some((step.to_string(), cpu.parse().ok(), wall.parse().ok()?))
}

/// The `(name, new name)` of every `use name as new_name` in a use tree.
pub fn use_renames(tree: &syn::UseTree, out: &mut Vec<(String, String)>) {
    match tree {
        syn::UseTree::Path(p) => use_renames(&p.tree, out),
        syn::UseTree::Rename(r) => out.push((r.ident.to_string(), r.rename.to_string())),
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| use_renames(t, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_back_the_timing_lines() {
        assert_eq!(
            super::parse_line("timing bindgen: 1.25 s CPU, 2.00 s wall"),
            Some(("bindgen".to_string(), Some(1.25), 2.0))
        );
        assert_eq!(
            super::parse_line("timing link: ? s CPU, 0.10 s wall"),
            Some(("link".to_string(), None, 0.1))
        );
        // Not a timing line: another warning.
        assert_eq!(super::parse_line("no libcuda.so in ...: linked"), None);
    }

    #[test]
    fn every_variant_but_the_pinned_ones_has_a_parent_chain_ending_at_one() {
        let all = super::variants();
        // 15 releases on four families, 13.4 and 13.5 on Windows on Arm; both modes.
        assert_eq!(all.len(), (15 * 4 + 2) * 2);
        for v in &all {
            let mut at = *v;
            let mut steps = 0;
            while let Some(p) = at.parent() {
                assert!(all.contains(&p), "{v:?}: parent {p:?} is not committed");
                assert_eq!(p.ptds, v.ptds);
                at = p;
                steps += 1;
                assert!(steps < 20, "{v:?}: a parent cycle");
            }
            assert!(at.is_whole(), "{v:?} ends at {at:?}");
        }
        assert_eq!(all.iter().filter(|v| v.is_whole()).count(), 2);
    }

    /// Every committed variant expands: each delta applies to its parent's
    /// text and gives the fingerprint it records (`cargo xtask regen --check`
    /// proves them the generator's output; this needs no headers).
    #[test]
    fn every_committed_variant_expands_from_the_committed_files() {
        use crate::committed::{apply, Part};
        let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut versions = std::collections::BTreeSet::new();
        // Parents first (each chain's whole text at its root): each text once.
        let mut all = super::variants();
        let depth = |v: &super::Variant| std::iter::successors(Some(*v), |x| x.parent()).count();
        all.sort_by_key(depth);
        for part in [Part::Rust, Part::Symbols] {
            let mut texts = std::collections::HashMap::<super::Variant, String>::new();
            for v in &all {
                let file = std::fs::read_to_string(v.path(&crate_dir, part)).unwrap();
                let text = match v.parent() {
                    None => file,
                    Some(p) => apply(&texts[&p], &file)
                        .unwrap_or_else(|e| panic!("{}: {e}", super::describe(*v))),
                };
                if part == Part::Rust {
                    let want = format!(
                        "pub const CUDA_VERSION: u32 = {};",
                        crate::release::cuda_version(v.release).unwrap()
                    );
                    assert!(text.contains(&want), "{}: no `{want}`", super::describe(*v));
                    versions.insert(v.release);
                }
                texts.insert(*v, text);
            }
        }
        for v in &all {
            assert!(
                v.inputs_path(&crate_dir).is_file(),
                "{}: no inputs",
                super::describe(*v)
            );
        }
        assert_eq!(versions.len(), crate::release::KNOWN_RELEASES.len());
    }

    #[test]
    fn every_family_is_known_by_its_triple() {
        for f in super::FAMILIES {
            assert_eq!(super::family_of_triple(super::triple(f)), Some(f));
        }
        assert_eq!(super::family_of_triple("x86_64-apple-darwin"), None);
    }

    #[test]
    fn a_delta_applied_gives_the_new_text_back() {
        use crate::committed::apply;
        let cases = [
            ("a\nb\nc\n", "a\nb\nc\n"),
            ("a\nb\nc\n", "x\na\nc\ny\n"),
            ("", "a\n"),
            ("a\n", ""),
            ("a\nb\nc\nd\ne\n", "a\nB\nc\nD\nE\ne\n"),
        ];
        for (base, new) in cases {
            let d = super::delta("t", base, new);
            assert_eq!(apply(base, &d).unwrap(), new, "{base:?} -> {new:?}:\n{d}");
        }
        // The wrong twin: the delta of another pair does not give this one.
        let d = super::delta("t", "a\nb\n", "a\nc\n");
        assert!(apply("a\nb\n", &d.replace("+c", "+d")).is_err());
    }
}
