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

use crate::abi;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

const ENTRY_POINTS: &str = include_str!("../entry-points.tsv");

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

/// Types every function returns: their new codes are not group changes.
const RESULT_TYPES: [&str; 4] = ["CUresult", "cudaError_enum", "cudaError_t", "cudaError"];

#[derive(Default)]
struct Release {
    /// Function name → rendered signature.
    fns: BTreeMap<String, Sig>,
    aliases: BTreeMap<String, syn::Type>,
    /// Record name → field types (for reachability).
    records: BTreeMap<String, Vec<syn::Type>>,
    newtypes: BTreeSet<String>,
    /// Constant name → its type's name.
    const_types: BTreeMap<String, String>,
    /// From abi.txt: `type` and `field` values, `const` values.
    types: BTreeMap<String, (u64, u64)>,
    fields: BTreeMap<String, BTreeMap<String, (String, String)>>,
    consts: BTreeMap<String, String>,
}

#[derive(Clone, PartialEq, Eq)]
struct Sig {
    params: Vec<(String, String)>,
    ret: String,
}

impl Sig {
    fn render(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|(n, t)| format!("{n}: {t}"))
            .collect();
        format!("({}) -> {}", params.join(", "), self.ret)
    }
}

fn fmt_type(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Ptr(p) => format!(
            "*{} {}",
            if matches!(p.mutability, syn::PointerMutability::Mut(_)) {
                "mut"
            } else {
                "const"
            },
            fmt_type(&p.elem)
        ),
        syn::Type::Path(p) => {
            let seg = p.path.segments.last().unwrap();
            match &seg.arguments {
                syn::PathArguments::AngleBracketed(a) => {
                    let args: Vec<String> = a
                        .args
                        .iter()
                        .map(|g| match g {
                            syn::GenericArgument::Type(t) => fmt_type(t),
                            _ => "?".into(),
                        })
                        .collect();
                    format!("{}<{}>", seg.ident, args.join(", "))
                }
                _ => seg.ident.to_string(),
            }
        }
        syn::Type::Array(a) => {
            let len = match &a.len {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(n),
                    ..
                }) => n.base10_digits().to_string(),
                _ => "?".into(),
            };
            format!("[{}; {len}]", fmt_type(&a.elem))
        }
        syn::Type::FnPtr(f) => {
            let args: Vec<String> = f.inputs.iter().map(|a| fmt_type(&a.ty)).collect();
            let ret = match &f.output {
                syn::ReturnType::Default => String::new(),
                syn::ReturnType::Type(_, t) => format!(" -> {}", fmt_type(t)),
            };
            format!("fn({}){ret}", args.join(", "))
        }
        syn::Type::Group(g) => fmt_type(&g.elem),
        syn::Type::Paren(p) => fmt_type(&p.elem),
        syn::Type::Tuple(t) if t.elems.is_empty() => "()".into(),
        _ => "?".into(),
    }
}

/// Every type name a type mentions.
fn idents(ty: &syn::Type, out: &mut BTreeSet<String>) {
    match ty {
        syn::Type::Ptr(p) => idents(&p.elem, out),
        syn::Type::Array(a) => idents(&a.elem, out),
        syn::Type::Group(g) => idents(&g.elem, out),
        syn::Type::Paren(p) => idents(&p.elem, out),
        syn::Type::Path(p) => {
            let seg = p.path.segments.last().unwrap();
            out.insert(seg.ident.to_string());
            if let syn::PathArguments::AngleBracketed(a) = &seg.arguments {
                for g in &a.args {
                    if let syn::GenericArgument::Type(t) = g {
                        idents(t, out);
                    }
                }
            }
        }
        syn::Type::FnPtr(f) => {
            for a in &f.inputs {
                idents(&a.ty, out);
            }
            if let syn::ReturnType::Type(_, t) = &f.output {
                idents(t, out);
            }
        }
        _ => {}
    }
}

/// `x.__bindgen_anon_1.y` and `x.anon_y.y` both become `x.<anon>.y`.
fn normalize_key(key: &str) -> String {
    key.split('.')
        .map(|seg| {
            if seg.starts_with("__bindgen_anon_") || seg.starts_with("anon_") {
                "<anon>"
            } else {
                seg
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

fn load(workspace: &Path, release: &str) -> Result<Release, String> {
    let dir = abi::target_dir(workspace, release);
    let missing = |f: &str| {
        format!(
            "{} is missing: run `cargo xtask abi {release}` (or `abi --all`) first",
            dir.join(f).display()
        )
    };
    let text = std::fs::read_to_string(dir.join("cuda_mem_sys.rs"))
        .map_err(|_| missing("cuda_mem_sys.rs"))?;
    let dump = std::fs::read_to_string(dir.join("abi.txt")).map_err(|_| missing("abi.txt"))?;
    let file =
        syn::parse_file(&text).map_err(|e| format!("parsing the {release} bindings: {e}"))?;
    let mut r = Release::default();
    let mut items: Vec<&syn::Item> = file.items.iter().collect();
    while let Some(item) = items.pop() {
        match item {
            syn::Item::ForeignMod(m) => {
                for f in &m.items {
                    let syn::ForeignItem::Fn(f) = f else { continue };
                    let params = f
                        .sig
                        .inputs
                        .iter()
                        .filter_map(|a| match a {
                            syn::FnArg::Typed(t) => {
                                let name = match &*t.pat {
                                    syn::Pat::Ident(i) => i.ident.to_string(),
                                    _ => "_".into(),
                                };
                                Some((name, fmt_type(&t.ty)))
                            }
                            _ => None,
                        })
                        .collect();
                    let ret = match &f.sig.output {
                        syn::ReturnType::Default => "()".into(),
                        syn::ReturnType::Type(_, t) => fmt_type(t),
                    };
                    r.fns.insert(f.sig.ident.to_string(), Sig { params, ret });
                }
            }
            syn::Item::Type(t) => {
                r.aliases.insert(t.ident.to_string(), (*t.ty).clone());
            }
            // bindgen writes a typedef of an enum as `pub use self::X_enum as X;`.
            syn::Item::Use(u) => {
                let mut renames = vec![];
                generator::codegen::use_renames(&u.tree, &mut renames);
                for (from, to) in renames {
                    if let Ok(ty) = syn::parse_str::<syn::Type>(&from) {
                        r.aliases.insert(to, ty);
                    }
                }
            }
            syn::Item::Struct(s) => {
                let name = s.ident.to_string();
                if matches!(s.fields, syn::Fields::Unnamed(_)) {
                    r.newtypes.insert(name);
                } else {
                    r.records
                        .insert(name, s.fields.iter().map(|f| f.ty.clone()).collect());
                }
            }
            syn::Item::Union(u) => {
                r.records.insert(
                    u.ident.to_string(),
                    u.fields.named.iter().map(|f| f.ty.clone()).collect(),
                );
            }
            syn::Item::Const(c) => {
                let mut ids = BTreeSet::new();
                idents(&c.ty, &mut ids);
                if let Some(t) = ids.into_iter().next() {
                    r.const_types.insert(c.ident.to_string(), t);
                }
            }
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    items.extend(inner.iter());
                }
            }
            _ => {}
        }
    }
    for line in dump.lines() {
        let mut w = line.split_whitespace();
        let (Some(kind), Some(key)) = (w.next(), w.next()) else {
            continue;
        };
        let v: Vec<&str> = w.collect();
        match kind {
            "type" if v.len() == 2 => {
                r.types.insert(
                    key.to_string(),
                    (v[0].parse().unwrap_or(0), v[1].parse().unwrap_or(0)),
                );
            }
            "field" if v.len() == 3 => {
                let (top, _) = key.split_once('.').unwrap_or((key, ""));
                r.fields
                    .entry(top.to_string())
                    .or_default()
                    .insert(normalize_key(key), (v[0].to_string(), v[1].to_string()));
            }
            "const" if v.len() == 1 => {
                r.consts.insert(key.to_string(), v[0].to_string());
            }
            _ => {}
        }
    }
    Ok(r)
}

impl Release {
    /// Resolves an alias chain to the record or newtype it names.
    fn resolve(&self, name: &str) -> String {
        let mut n = name.to_string();
        for _ in 0..16 {
            match self.aliases.get(&n) {
                Some(syn::Type::Path(p)) => n = p.path.segments.last().unwrap().ident.to_string(),
                _ => break,
            }
        }
        n
    }

    /// The records and enums a set of functions reaches.
    fn reached(&self, fns: &[&str]) -> BTreeSet<String> {
        let mut todo: Vec<String> = vec![];
        for f in fns {
            if let Some(sig) = self.fns.get(*f) {
                for (_, t) in &sig.params {
                    todo.extend(
                        t.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                            .map(str::to_string),
                    );
                }
            }
        }
        let mut seen = BTreeSet::new();
        let mut out = BTreeSet::new();
        while let Some(name) = todo.pop() {
            if name.is_empty() || !seen.insert(name.clone()) {
                continue;
            }
            if let Some(t) = self.aliases.get(&name) {
                let mut ids = BTreeSet::new();
                idents(t, &mut ids);
                todo.extend(ids);
                continue;
            }
            let name = self.resolve(&name);
            if RESULT_TYPES.contains(&name.as_str()) {
                continue;
            }
            if self.newtypes.contains(&name) {
                out.insert(name);
            } else if let Some(fields) = self.records.get(&name) {
                if self.types.contains_key(&name) {
                    out.insert(name.clone());
                }
                for t in fields {
                    let mut ids = BTreeSet::new();
                    idents(t, &mut ids);
                    todo.extend(ids);
                }
            }
        }
        out
    }

    fn enum_values(&self, ty: &str) -> BTreeMap<String, String> {
        self.const_types
            .iter()
            .filter(|(_, t)| self.resolve(t) == ty)
            .filter_map(|(c, _)| Some((c.clone(), self.consts.get(c)?.clone())))
            .collect()
    }
}

/// The changes of one type from `a` to `b`.
fn type_changes(name: &str, a: &Release, b: &Release) -> Vec<String> {
    let mut out = vec![];
    if b.newtypes.contains(name) {
        if !a.newtypes.contains(name) {
            let values = b.enum_values(name);
            out.push(format!("new enum `{name}` ({} values)", values.len()));
            return out;
        }
        let (va, vb) = (a.enum_values(name), b.enum_values(name));
        let mut new_values: Vec<(i128, &String)> = vb
            .iter()
            .filter(|(k, _)| !va.contains_key(*k))
            .map(|(k, v)| (v.parse().unwrap_or(0), k))
            .collect();
        new_values.sort();
        let added: Vec<String> = new_values
            .iter()
            .map(|(v, k)| format!("`{k}` = {v}"))
            .collect();
        let removed: Vec<String> = va
            .keys()
            .filter(|k| !vb.contains_key(*k))
            .map(|k| format!("`{k}`"))
            .collect();
        let changed: Vec<String> = vb
            .iter()
            .filter_map(|(k, v)| {
                let old = va.get(k)?;
                (old != v).then(|| format!("`{k}` {old} → {v}"))
            })
            .collect();
        say(&mut out, name, "new values", &added, ", ");
        say(&mut out, name, "values removed", &removed, ", ");
        say(&mut out, name, "values renumbered", &changed, ", ");
        return out;
    }
    let Some(&(size, align)) = b.types.get(name) else {
        return out;
    };
    let Some(&(old_size, old_align)) = a.types.get(name) else {
        out.push(format!("new type `{name}` (size {size}, align {align})"));
        return out;
    };
    if old_size != size {
        out.push(format!("`{name}`: size {old_size} → {size}"));
    }
    if old_align != align {
        out.push(format!("`{name}`: alignment {old_align} → {align}"));
    }
    let empty = BTreeMap::new();
    let fa = a.fields.get(name).unwrap_or(&empty);
    let fb = b.fields.get(name).unwrap_or(&empty);
    let short = |k: &str| {
        k.split_once('.')
            .map_or(k.to_string(), |(_, rest)| rest.to_string())
    };
    // A field that moved into an anonymous member keeps its name in C.
    let strip_anon = |k: &str| {
        k.split('.')
            .filter(|s| *s != "<anon>")
            .collect::<Vec<_>>()
            .join(".")
    };
    let mut into_anon = vec![];
    let mut moved_keys = BTreeSet::new();
    for (k, (o, s)) in fa.iter().filter(|(k, _)| !fb.contains_key(*k)) {
        let to = fb
            .iter()
            .find(|(k2, _)| !fa.contains_key(*k2) && *k2 != k && strip_anon(k2) == *k);
        if let Some((k2, (o2, s2))) = to {
            moved_keys.insert(k.clone());
            moved_keys.insert(k2.clone());
            let layout = if (o, s) == (o2, s2) {
                format!("offset {o} and size {s} unchanged")
            } else {
                format!("offset {o} → {o2}, size {s} → {s2}")
            };
            into_anon.push(format!(
                "`{}` now in an anonymous member (`{}`; {layout})",
                short(k),
                short(k2)
            ));
        }
    }
    let added: Vec<String> = fb
        .iter()
        .filter(|(k, _)| !fa.contains_key(*k) && !moved_keys.contains(*k))
        .map(|(k, (off, sz))| format!("`{}` (offset {off}, size {sz})", short(k)))
        .collect();
    let removed: Vec<String> = fa
        .keys()
        .filter(|k| !fb.contains_key(*k) && !moved_keys.contains(*k))
        .map(|k| format!("`{}`", short(k)))
        .collect();
    let moved: Vec<String> = fb
        .iter()
        .filter_map(|(k, (off, sz))| {
            let (o, s) = fa.get(k)?;
            let mut what = vec![];
            if o != off {
                what.push(format!("offset {o} → {off}"));
            }
            if s != sz {
                what.push(format!("size {s} → {sz}"));
            }
            (!what.is_empty()).then(|| format!("`{}` {}", short(k), what.join(", ")))
        })
        .collect();
    say(&mut out, name, "", &into_anon, "; ");
    say(&mut out, name, "new fields", &added, ", ");
    say(&mut out, name, "fields removed", &removed, ", ");
    say(&mut out, name, "fields moved or resized", &moved, "; ");
    out
}

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
