//! One release's bindings as `changes` compares them: the functions'
//! signatures, the types they reach, and the layout and constants the ABI
//! check measured ([`load`]); what changed in a type between two releases
//! ([`type_changes`]).

use super::say;
use crate::abi;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Types every function returns: their new codes are not group changes.
const RESULT_TYPES: [&str; 4] = ["CUresult", "cudaError_enum", "cudaError_t", "cudaError"];

#[derive(Default)]
pub struct Release {
    /// Function name → rendered signature.
    pub fns: BTreeMap<String, Sig>,
    pub aliases: BTreeMap<String, syn::Type>,
    /// Record name → field types (for reachability).
    pub records: BTreeMap<String, Vec<syn::Type>>,
    pub newtypes: BTreeSet<String>,
    /// Constant name → its type's name.
    pub const_types: BTreeMap<String, String>,
    /// From abi.txt: `type` and `field` values, `const` values.
    pub types: BTreeMap<String, (u64, u64)>,
    pub fields: BTreeMap<String, BTreeMap<String, (String, String)>>,
    pub consts: BTreeMap<String, String>,
}

#[derive(Clone, PartialEq, Eq)]
pub struct Sig {
    pub params: Vec<(String, String)>,
    pub ret: String,
}

impl Sig {
    pub fn render(&self) -> String {
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

pub fn load(workspace: &Path, release: &str) -> Result<Release, String> {
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
                generator::tools::use_renames(&u.tree, &mut renames);
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
    pub fn reached(&self, fns: &[&str]) -> BTreeSet<String> {
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
pub fn type_changes(name: &str, a: &Release, b: &Release) -> Vec<String> {
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
