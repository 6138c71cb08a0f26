//! `cargo xtask changes`: what changed between consecutive CUDA releases in the
//! crate's five API groups (their entry points: `xtask/entry-points.tsv`),
//! derived from the bindings generated for each release and the layout the
//! ABI check measured (`target/abi/<release>/{cuda_mem_sys.rs,abi.txt}`, left
//! by `cargo xtask abi --all`). Writes `docs/release-changes.md`.
//!
//! Per release: functions added or removed, signatures changed (parameter and
//! return types, under the documented name: `cuMemAdvise` resolves to
//! `cuMemAdvise_v2` from 13.0), and for every type those functions reach
//! (through parameters, aliases and fields, transitively; not the result codes
//! `CUresult`/`cudaError_t`): size and alignment changes, fields added,
//! removed, moved or retyped, enum values added, removed or renumbered.

mod bindings;

use bindings::{load, type_changes, Release};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

const ENTRY_POINTS: &str = include_str!("../../entry-points.tsv");

/// (group id, title) in the order of the report.
const GROUPS: [(&str, &str); 5] = [
    (
        "virtual-memory-management",
        "Virtual Memory Management (driver)",
    ),
    ("unified-addressing", "Unified Addressing (driver)"),
    (
        "external-resource-interop",
        "External Resource Interoperability (driver)",
    ),
    ("tensor-map", "Tensor Map Object Management (driver)"),
    (
        "stream-ordered-memory-allocator",
        "Stream Ordered Memory Allocator (runtime)",
    ),
];

pub fn run(workspace: &Path) -> Result<(), String> {
    let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for line in ENTRY_POINTS
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let mut cols = line.split('\t');
        if let (Some(g), Some(f)) = (cols.next(), cols.next()) {
            groups.entry(g).or_default().push(f);
        }
    }
    let releases: Vec<(&str, Release)> = crate::releases::ALL
        .iter()
        .map(|r| load(workspace, r).map(|rel| (*r, rel)))
        .collect::<Result<_, _>>()?;
    let mut md = String::new();
    md.push_str(
        "# What changed between CUDA releases, group by group\n\n\
         Written by `cargo xtask changes` from the bindings generated for each release's headers and \
         the layout measured by the ABI check (`cargo xtask abi --all`, docs/abi-report.md), for the \
         entry points of the five groups the crate tests (xtask/entry-points.tsv). For each release, \
         against the one before (there was no 12.7): functions added or removed; signatures changed \
         (under the documented name, which the headers may map to a new `_v2` symbol); and for every \
         type those functions reach through their parameters (transitively, through fields and \
         aliases; the result codes `CUresult`/`cudaError_t` aside): size or alignment changes, fields \
         added, removed, moved or resized (`<anon>`: an anonymous member), enum values added, removed \
         or renumbered.\n\n",
    );
    let (first_name, first) = &releases[0];
    let _ = writeln!(md, "## Baseline: {first_name}\n\n| Group | Entry points present | Absent (added later) |\n|---|---|---|");
    for (g, title) in GROUPS {
        let fns = groups.get(g).cloned().unwrap_or_default();
        let absent: Vec<String> = fns
            .iter()
            .filter(|f| !first.fns.contains_key(**f))
            .map(|f| format!("`{f}`"))
            .collect();
        let _ = writeln!(
            md,
            "| {title} | {} of {} | {} |",
            fns.len() - absent.len(),
            fns.len(),
            absent.join(", ")
        );
    }
    let mut summary = String::from("\n## Summary (number of changes)\n\n| Release |");
    for (_, title) in GROUPS {
        let _ = write!(summary, " {} |", title.split(" (").next().unwrap());
    }
    summary.push_str("\n|---|---|---|---|---|---|\n");
    let mut details = String::new();
    for pair in releases.windows(2) {
        let ((an, a), (bn, b)) = (&pair[0], &pair[1]);
        let _ = write!(summary, "| {bn} |");
        let _ = writeln!(details, "\n## {bn} (from {an})\n");
        let mut any = false;
        for (g, title) in GROUPS {
            let fns = groups.get(g).cloned().unwrap_or_default();
            let mut lines = vec![];
            for f in &fns {
                match (a.fns.get(*f), b.fns.get(*f)) {
                    (None, Some(s)) => lines.push(format!("new function `{f}{}`", s.render())),
                    (Some(_), None) => lines.push(format!("function removed: `{f}`")),
                    (Some(sa), Some(sb)) if sa != sb => {
                        let types_same = sa.ret == sb.ret
                            && sa.params.len() == sb.params.len()
                            && sa.params.iter().zip(&sb.params).all(|(x, y)| x.1 == y.1);
                        lines.push(format!(
                            "signature of `{f}`{}: `{}` → `{}`",
                            if types_same {
                                " (parameter names only)"
                            } else {
                                ""
                            },
                            sa.render(),
                            sb.render()
                        ));
                    }
                    _ => {}
                }
            }
            let mut types: BTreeSet<String> = b.reached(&fns);
            types.extend(a.reached(&fns));
            for t in &types {
                if a.types.contains_key(t) && !b.types.contains_key(t) && !b.newtypes.contains(t) {
                    lines.push(format!("type removed: `{t}`"));
                    continue;
                }
                lines.extend(type_changes(t, a, b));
            }
            let _ = write!(
                summary,
                " {} |",
                if lines.is_empty() {
                    "—".to_string()
                } else {
                    lines.len().to_string()
                }
            );
            if lines.is_empty() {
                continue;
            }
            any = true;
            let _ = writeln!(details, "### {title}\n");
            for l in lines {
                let _ = writeln!(details, "- {l}");
            }
            details.push('\n');
        }
        if !any {
            details.push_str("No change in these groups.\n");
        }
        summary.push('\n');
    }
    md.push_str(&summary);
    md.push_str(&details);
    let path = workspace.join("docs/release-changes.md");
    std::fs::create_dir_all(workspace.join("docs")).map_err(|e| e.to_string())?;
    // Sections about other targets (marked) are measured by hand or by
    // `abi --target`, not here: keep them.
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    let md = keep_by_hand(&md, &old);
    let md = crate::abi::keep_target_sections(&md, &old);
    std::fs::write(&path, md).map_err(|e| format!("writing {}: {e}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}

/// `` `name`: what a, b `` in `out`, where `items` has any.
fn say(out: &mut Vec<String>, name: &str, what: &str, items: &[String], sep: &str) {
    if !items.is_empty() {
        let what = if what.is_empty() {
            String::new()
        } else {
            format!("{what} ")
        };
        out.push(format!("`{name}`: {what}{}", items.join(sep)));
    }
}

/// Where the old document's sections written by hand begin and end: changes
/// of entry points outside the five groups, read from the headers by hand.
const BY_HAND: (&str, &str) = ("<!-- by hand -->", "<!-- end of by hand -->");

/// `new` (generated) with the old document's section written by hand, between
/// [`BY_HAND`]'s markers, appended.
fn keep_by_hand(new: &str, old: &str) -> String {
    let (begin, end) = BY_HAND;
    let kept = old.find(begin).and_then(|b| {
        let e = old[b..].find(end)? + b + end.len();
        Some(&old[b..e])
    });
    match kept {
        Some(section) => format!("{}\n\n{section}\n", new.trim_end()),
        None => new.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_written_by_hand_survives_regeneration() {
        let old = "# Old\n\n## 12.1\n\nstale\n\n<!-- by hand -->\n## Graph memory\n\nkept\n<!-- end of by hand -->\n";
        let doc = keep_by_hand("# New\n\n## 12.1\n\nfresh\n", old);
        assert!(doc.contains("fresh") && !doc.contains("stale"), "{doc}");
        assert!(
            doc.contains("## Graph memory\n\nkept\n<!-- end of by hand -->"),
            "{doc}"
        );
        // The wrong twin: text outside the markers is not kept.
        let unmarked = keep_by_hand("# New\n", "# Old\n\n## Graph memory\n\nlost\n");
        assert_eq!(unmarked, "# New\n");
    }
}
