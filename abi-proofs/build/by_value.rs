//! The by-value check's two halves (`tests/abi_by_value.rs`), generated from
//! the bindings' Rust text: every struct or union that a declared function
//! takes or returns by value (found from the signatures: `CUmemLocation` for
//! `cuMemAdvise` and `cuMemPrefetchAsync`, `cudaMemLocation`, `cudaExtent`,
//! the IPC handles...) goes from Rust to C and back, and from C to a Rust
//! `extern "C" fn` and back.
//!
//! Each type is described twice by one list of leaves (every scalar or array
//! field, nested members included, in declaration order): in C by `offsetof`
//! and `sizeof` of the C path, in Rust by raw-pointer projection of the Rust
//! path (a `macro_rules!` per type, so a deliberately wrong Rust mirror with
//! the same field names goes through the same harness). Both sides fill each
//! leaf with bytes of their own (seed, leaf, byte) pattern and check each
//! leaf of what they receive. In a union only the member with the most bytes
//! is filled and checked (chosen on each side from its own layout).
//!
//! The C half (`by_value.c`, compiled by the build script with the target's C
//! compiler against the bindings' headers and linked into the test):
//! `T cms_bv_echo_<T>(T a, u64 k0..k4, T b)` checks `a`, the five integers
//! after it and `b`, and returns a filled `T`; `cms_bv_call_<T>(f)` calls a
//! Rust `extern "C" fn` of the same shape with filled values and checks what
//! it returns. The second `T` after five integers lands where registers run
//! out on each ABI, and the integers show a struct that took other registers.
//!
//! The wrong twins (`by_value.rs`'s `twins` module), made mechanically for
//! each type: its fields in reverse order, the same type over-aligned
//! (`repr(C, align(128))`), an extra member in its first union, and
//! `repr(C, packed)` (a control where it moves no field).

use crate::layout_check::c_field_name;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The generated halves, or why there are none.
pub struct Artefacts {
    pub c: String,
    pub rust: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Struct,
    Union,
    Newtype,
    Opaque,
}

struct Record {
    kind: Kind,
    fields: Vec<(String, syn::Type)>,
}

#[derive(Default)]
struct Model {
    records: BTreeMap<String, Record>,
    aliases: BTreeMap<String, syn::Type>,
}

fn type_ident(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => Some(p.path.segments.last()?.ident.to_string()),
        syn::Type::Group(g) => type_ident(&g.elem),
        syn::Type::Paren(p) => type_ident(&p.elem),
        _ => None,
    }
}

fn tokens(ty: &syn::Type) -> String {
    quote::quote!(#ty).to_string()
}

impl Model {
    fn collect(&mut self, items: &[syn::Item]) {
        for item in items {
            match item {
                syn::Item::Struct(s) if s.generics.params.is_empty() => {
                    let (kind, fields) = match &s.fields {
                        syn::Fields::Unnamed(_) => (Kind::Newtype, vec![]),
                        syn::Fields::Named(n) => {
                            let f: Vec<(String, syn::Type)> = n
                                .named
                                .iter()
                                .map(|f| (f.ident.as_ref().unwrap().to_string(), f.ty.clone()))
                                .collect();
                            if f.len() == 1 && f[0].0 == "_unused" {
                                (Kind::Opaque, vec![])
                            } else {
                                (Kind::Struct, f)
                            }
                        }
                        syn::Fields::Unit => (Kind::Opaque, vec![]),
                    };
                    self.records
                        .entry(s.ident.to_string())
                        .or_insert(Record { kind, fields });
                }
                syn::Item::Union(u) if u.generics.params.is_empty() => {
                    let fields = u
                        .fields
                        .named
                        .iter()
                        .map(|f| (f.ident.as_ref().unwrap().to_string(), f.ty.clone()))
                        .collect();
                    self.records.entry(u.ident.to_string()).or_insert(Record {
                        kind: Kind::Union,
                        fields,
                    });
                }
                syn::Item::Type(t) if t.generics.params.is_empty() => {
                    self.aliases.insert(t.ident.to_string(), (*t.ty).clone());
                }
                syn::Item::Use(u) => {
                    let mut renames = vec![];
                    generator::tools::use_renames(&u.tree, &mut renames);
                    for (from, to) in renames {
                        if let Ok(ty) = syn::parse_str::<syn::Type>(&from) {
                            self.aliases.insert(to, ty);
                        }
                    }
                }
                syn::Item::Mod(m) if m.attrs.iter().any(|a| a.path().is_ident("cfg")) => {}
                syn::Item::Mod(m) => {
                    if let Some((_, items)) = &m.content {
                        self.collect(items);
                    }
                }
                _ => {}
            }
        }
    }

    /// The struct or union a type names, through aliases (not through pointers).
    fn record_of(&self, ty: &syn::Type) -> Option<(&str, &Record)> {
        let mut name = type_ident(ty)?;
        for _ in 0..16 {
            if let Some((n, r)) = self.records.get_key_value(&name) {
                return matches!(r.kind, Kind::Struct | Kind::Union).then_some((n.as_str(), r));
            }
            name = type_ident(self.aliases.get(&name)?)?;
        }
        None
    }
}

/// The foreign functions of the bindings, every module but `#[cfg]` ones.
fn functions<'a>(items: &'a [syn::Item], out: &mut Vec<&'a syn::ForeignItemFn>) {
    for item in items {
        match item {
            syn::Item::ForeignMod(m) => out.extend(m.items.iter().filter_map(|i| match i {
                syn::ForeignItem::Fn(f) => Some(f),
                _ => None,
            })),
            syn::Item::Mod(m) if !m.attrs.iter().any(|a| a.path().is_ident("cfg")) => {
                if let Some((_, items)) = &m.content {
                    functions(items, out);
                }
            }
            _ => {}
        }
    }
}

/// One scalar or array field: its Rust path, C path, and the unions (index,
/// member) it sits in.
struct Leaf {
    rust: String,
    c: String,
    guards: Vec<(usize, usize)>,
}

/// One type passed by value: the name the signatures use, and its leaves.
struct Case {
    name: String,
    record: String,
    functions: BTreeSet<String>,
    leaves: Vec<Leaf>,
    unions: usize,
    /// Why the harness cannot cover it (bitfields): the test fails naming it.
    uncovered: Vec<String>,
}

/// Every struct or union a declared function takes or returns by value.
fn cases(m: &Model, file: &syn::File) -> Vec<Case> {
    let mut fns = vec![];
    functions(&file.items, &mut fns);
    let mut by_name: BTreeMap<String, Case> = BTreeMap::new();
    for f in fns {
        let mut types: Vec<&syn::Type> = f
            .sig
            .inputs
            .iter()
            .filter_map(|a| match a {
                syn::FnArg::Typed(t) => Some(&*t.ty),
                _ => None,
            })
            .collect();
        if let syn::ReturnType::Type(_, t) = &f.sig.output {
            types.push(t);
        }
        for ty in types {
            let Some((record, _)) = m.record_of(ty) else {
                continue;
            };
            let name = type_ident(ty).unwrap();
            // One case per record, named as the first signature names it.
            if let Some(c) = by_name.values_mut().find(|c| c.record == record) {
                c.functions.insert(f.sig.ident.to_string());
                continue;
            }
            let mut case = Case {
                name: name.clone(),
                record: record.to_string(),
                functions: BTreeSet::from([f.sig.ident.to_string()]),
                leaves: vec![],
                unions: 0,
                uncovered: vec![],
            };
            walk(m, record, "", "", &[], &mut case, 0);
            by_name.insert(name, case);
        }
    }
    by_name.into_values().collect()
}

/// Every (function, "parameter N" or "return", record) where a declared
/// function passes a struct or union by value: derived from the signatures
/// apart from [`cases`] (the test compares the two and names any pair no
/// case runs; a `cases` that missed the return types drops
/// `cudaCreateChannelDesc`'s `cudaChannelFormatDesc`).
fn passed_by_value(m: &Model, file: &syn::File) -> Vec<(String, String, String)> {
    let mut fns = vec![];
    functions(&file.items, &mut fns);
    let mut out = vec![];
    for f in fns {
        let name = f.sig.ident.to_string();
        for (i, a) in f.sig.inputs.iter().enumerate() {
            if let syn::FnArg::Typed(t) = a {
                if let Some((record, _)) = m.record_of(&t.ty) {
                    out.push((
                        name.clone(),
                        format!("parameter {}", i + 1),
                        record.to_string(),
                    ));
                }
            }
        }
        if let syn::ReturnType::Type(_, t) = &f.sig.output {
            if let Some((record, _)) = m.record_of(t) {
                out.push((name.clone(), "return".to_string(), record.to_string()));
            }
        }
    }
    out
}

/// Appends the leaves of `record` reached through the paths given.
fn walk(
    m: &Model,
    record: &str,
    rust: &str,
    c: &str,
    guards: &[(usize, usize)],
    case: &mut Case,
    depth: u32,
) {
    let r = &m.records[record];
    let union = (r.kind == Kind::Union).then(|| {
        case.unions += 1;
        case.unions - 1
    });
    for (i, (name, ty)) in r.fields.iter().enumerate() {
        let join = |base: &str, part: &str| {
            if base.is_empty() {
                part.to_string()
            } else if part.is_empty() {
                base.to_string()
            } else {
                format!("{base}.{part}")
            }
        };
        let mut g = guards.to_vec();
        if let Some(u) = union {
            g.push((u, i));
        }
        if name.starts_with("_bitfield_") {
            case.uncovered.push(format!(
                "{}: bitfields ({}) have no C address",
                case.name,
                join(rust, name)
            ));
            continue;
        }
        if name.starts_with("__bindgen_padding_") || name == "_address" {
            continue;
        }
        let anonymous = name.starts_with("__bindgen_anon_")
            || (name.starts_with("anon_")
                && type_ident(ty).is_some_and(|t| t.starts_with(&format!("{record}_"))));
        let rust_here = join(rust, name);
        let c_here = if anonymous {
            c.to_string()
        } else {
            join(c, &c_field_name(name))
        };
        match m.record_of(ty) {
            Some((inner, _)) if !matches!(ty, syn::Type::Array(_)) && depth < 8 => {
                walk(m, inner, &rust_here, &c_here, &g, case, depth + 1)
            }
            _ => case.leaves.push(Leaf {
                rust: rust_here,
                c: c_here,
                guards: g,
            }),
        }
    }
}

fn c_str(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The halves for the bindings `file`, whose headers declare the C tags
/// `tags` (`struct X`: a Rust struct that is no alias is spelled so in C).
pub fn generate(file: &syn::File, tags: &BTreeSet<String>, krate: &str) -> Artefacts {
    let mut m = Model::default();
    m.collect(&file.items);
    let cases = cases(&m, file);
    let mut c = String::from(C_PRELUDE);
    let mut rust = String::from(
        "// @generated by abi-proofs/build/by_value.rs from the bindings' Rust text.\n",
    );
    let mut list = String::new();
    let mut twins = String::new();
    for case in &cases {
        let n = &case.name;
        let cty = if m.aliases.contains_key(n) {
            n.clone()
        } else if tags.contains(&format!("struct {n}")) {
            format!("struct {n}")
        } else if tags.contains(&format!("union {n}")) {
            format!("union {n}")
        } else {
            n.clone()
        };
        // C: the leaf table, the echo and the call.
        let _ = writeln!(
            c,
            "\n/* {n}: {} */",
            case.functions
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(c, "static const struct cms_leaf cms_leaves_{n}[] = {{");
        for l in &case.leaves {
            let mut g: Vec<String> = l
                .guards
                .iter()
                .map(|(u, i)| format!("{{{u}, {i}}}"))
                .collect();
            let ng = g.len();
            if g.is_empty() {
                g.push("{0, 0}".into());
            }
            let _ = writeln!(
                c,
                "  {{offsetof({cty}, {p}), sizeof(((({cty} *)0)->{p})), {ng}, {{{}}}}},",
                g.join(", "),
                p = l.c
            );
        }
        if case.leaves.is_empty() {
            c.push_str("  {0, 0, 0, {{0, 0}}},\n");
        }
        let nl = case.leaves.len();
        let _ = writeln!(
            c,
            "}};\n\
             {cty} cms_bv_echo_{n}({cty} a, CMS_U64 k0, CMS_U64 k1, CMS_U64 k2, CMS_U64 k3, CMS_U64 k4, {cty} b) {{\n  \
             {cty} r;\n  cms_begin();\n  \
             cms_check(&a, sizeof a, cms_leaves_{n}, {nl}, {u}, 1, 0);\n  \
             cms_markers(k0, k1, k2, k3, k4);\n  \
             cms_check(&b, sizeof b, cms_leaves_{n}, {nl}, {u}, 2, 1);\n  \
             cms_fill(&r, sizeof r, cms_leaves_{n}, {nl}, {u}, 3);\n  return r;\n}}\n\
             void cms_bv_call_{n}({cty} (*f)({cty}, CMS_U64, CMS_U64, CMS_U64, CMS_U64, CMS_U64, {cty})) {{\n  \
             {cty} a, b, r;\n  cms_begin();\n  \
             cms_fill(&a, sizeof a, cms_leaves_{n}, {nl}, {u}, 1);\n  \
             cms_fill(&b, sizeof b, cms_leaves_{n}, {nl}, {u}, 2);\n  \
             r = f(a, CMS_K(0), CMS_K(1), CMS_K(2), CMS_K(3), CMS_K(4), b);\n  \
             cms_check(&r, sizeof r, cms_leaves_{n}, {nl}, {u}, 3, 0);\n}}",
            u = case.unions
        );
        // Rust: the leaves of any type with these paths, the case's impl.
        let _ = writeln!(
            rust,
            "#[allow(unused_macros)]\nmacro_rules! leaves_{n} {{ ($T:ty) => {{{{\n    \
             let u = ::core::mem::MaybeUninit::<$T>::uninit();\n    let p = u.as_ptr();\n    \
             #[allow(unused_unsafe)]\n    unsafe {{ vec![",
        );
        for l in &case.leaves {
            let g: Vec<String> = l
                .guards
                .iter()
                .map(|(u, i)| format!("({u}, {i})"))
                .collect();
            let _ = writeln!(
                rust,
                "        Leaf::new({}, span(p, ::core::ptr::addr_of!((*p).{})), &[{}]),",
                c_str(&l.rust),
                l.rust,
                g.join(", ")
            );
        }
        let _ = writeln!(rust, "    ] }}\n}}}} }}");
        let rty = format!("{krate}::{n}");
        let sig = format!("{rty}, u64, u64, u64, u64, u64, {rty}");
        let functions = case
            .functions
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        let uncovered: Vec<String> = case.uncovered.iter().map(|u| c_str(u)).collect();
        let _ = writeln!(
            rust,
            "impl Case for {rty} {{\n    const NAME: &'static str = {};\n    \
             const FUNCTIONS: &'static str = {};\n    const UNIONS: usize = {};\n    \
             const UNCOVERED: &'static [&'static str] = &[{}];\n    \
             fn leaves() -> Vec<Leaf> {{ leaves_{n}!(Self) }}\n}}\n\
             extern \"C\" {{\n    fn cms_bv_echo_{n}(a: {rty}, k0: u64, k1: u64, k2: u64, k3: u64, k4: u64, b: {rty}) -> {rty};\n    \
             fn cms_bv_call_{n}(f: extern \"C\" fn({sig}) -> {rty});\n}}",
            c_str(n),
            c_str(&functions),
            case.unions,
            uncovered.join(", ")
        );
        let _ = writeln!(
            list,
            "        Cases::of::<{rty}>({}, cms_bv_echo_{n}, cms_bv_call_{n}, vec![{}]),",
            c_str(&case.record),
            twin_items(&m, case, krate, &mut twins)
        );
    }
    let passed: String = passed_by_value(&m, file)
        .iter()
        .map(|(f, at, r)| format!("    ({}, {}, {}),\n", c_str(f), c_str(at), c_str(r)))
        .collect();
    let _ = writeln!(
        rust,
        "/// Every (function, parameter or return, record) passing a struct or union\n\
         /// by value, from the signatures apart from the cases.\n\
         pub const PASSED_BY_VALUE: &[(&str, &str, &str)] = &[\n{passed}];"
    );
    let _ = writeln!(
        rust,
        "pub const UNAVAILABLE: Option<&str> = None;\n\
         /// The target the C half was compiled for.\npub const TARGET: &str = {};\n\
         #[link(name = \"cms_by_value\", kind = \"static\")]\n\
         extern \"C\" {{\n    /// The C half's report of its last call (3 × 64 bytes).\n    \
         pub fn cms_bv_report() -> *const u8;\n}}",
        c_str(&std::env::var("TARGET").unwrap_or_default())
    );
    let _ = writeln!(
        rust,
        "/// Every case, with its wrong twins.\npub fn cases() -> Vec<Cases> {{\n    vec![\n{list}    ]\n}}\n\
         /// Deliberately wrong Rust mirrors of the cases (same field names).\n\
         #[allow(non_camel_case_types, non_snake_case, dead_code, clippy::all)]\npub mod twins {{\n    \
         use super::{{Case, Leaf, span}};\n    use {krate}::*;\n{twins}}}"
    );
    Artefacts { c, rust }
}

/// The Rust half where there is no C half, saying why.
pub fn unavailable(reason: &str) -> String {
    format!(
        "// @generated by abi-proofs/build/by_value.rs: no C half in this build.\n\
         pub const UNAVAILABLE: Option<&str> = Some({});\npub const TARGET: &str = \"\";\n\
         pub const PASSED_BY_VALUE: &[(&str, &str, &str)] = &[];\n\
         pub fn cases() -> Vec<Cases> {{ vec![] }}\n\
         static NO_REPORT: [u8; 192] = [0; 192];\n\
         pub unsafe fn cms_bv_report() -> *const u8 {{ NO_REPORT.as_ptr() }}\n",
        c_str(reason)
    )
}

/// The wrong twins of `case`, defined in `out`; returns the `Twin` values
/// listing them.
fn twin_items(m: &Model, case: &Case, krate: &str, out: &mut String) -> String {
    let n = &case.name;
    let r = &m.records[&case.record];
    let rty = format!("{krate}::{n}");
    let mut items = vec![];
    let fields = |fs: &[(String, syn::Type)], swap: Option<(&str, &str)>| -> String {
        fs.iter()
            .map(|(f, t)| {
                let t = tokens(t);
                let t = match swap {
                    Some((from, to)) if t.split("::").last().map(str::trim) == Some(from) => {
                        to.to_string()
                    }
                    _ => t,
                };
                format!("pub {f}: {t}, ")
            })
            .collect()
    };
    let keyword = if r.kind == Kind::Union {
        "union"
    } else {
        "struct"
    };
    let mut twin = |what: &str, expect: &str, body: String| {
        let ty = format!("{n}__{what}");
        let _ = writeln!(
            out,
            "    {body}\n    impl Case for {ty} {{\n        const NAME: &'static str = {name};\n        \
             const FUNCTIONS: &'static str = \"\";\n        \
             const UNIONS: usize = <{rty} as Case>::UNIONS;\n        \
             const UNCOVERED: &'static [&'static str] = &[];\n        \
             fn leaves() -> Vec<Leaf> {{ leaves_{n}!(Self) }}\n    }}",
            name = c_str(n)
        );
        items.push(format!(
            "Twin::of::<{rty}, twins::{ty}>({}, {expect}, cms_bv_echo_{n})",
            c_str(what)
        ));
    };
    let derive = "#[derive(Clone, Copy)]";
    if r.fields.len() >= 2 {
        let mut rev = r.fields.clone();
        rev.reverse();
        twin(
            "reversed",
            "Expect::Fails",
            format!(
                "#[repr(C)] {derive} pub {keyword} {n}__reversed {{ {} }}",
                fields(&rev, None)
            ),
        );
    }
    twin(
        "aligned",
        "Expect::FailsUnlessIndirect",
        format!(
            "#[repr(C, align(128))] {derive} pub {keyword} {n}__aligned {{ {} }}",
            fields(&r.fields, None)
        ),
    );
    twin(
        "packed",
        "Expect::FailsIfMoved",
        format!(
            "#[repr(C, packed)] {derive} pub {keyword} {n}__packed {{ {} }}",
            fields(&r.fields, None)
        ),
    );
    // The first union among the fields (directly): a member more.
    if let Some((_, uty)) = r
        .fields
        .iter()
        .find(|(_, t)| m.record_of(t).is_some_and(|(_, u)| u.kind == Kind::Union))
    {
        let (uname, u) = m.record_of(uty).unwrap();
        let twin_union = format!("{n}__extra_member_union");
        twin(
            "extra_member",
            "Expect::Fails",
            format!(
                "#[repr(C)] {derive} pub union {twin_union} {{ {} pub extra: [u64; 2], }}\n    \
                 #[repr(C)] {derive} pub {keyword} {n}__extra_member {{ {} }}",
                fields(&u.fields, None),
                fields(&r.fields, Some((uname, &twin_union)))
            ),
        );
    }
    items.join(", ")
}

/// The C half's support: the pattern, fill and check over a leaf table,
/// the record of what differed (read by Rust through `cms_bv_report`).
const C_PRELUDE: &str = r#"/* @generated by abi-proofs/build/by_value.rs from the bindings' Rust text. */
#include <stddef.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

typedef unsigned long long CMS_U64;
#define CMS_K(n) ((CMS_U64)0x1111111111111111ULL * (CMS_U64)((n) + 1) + (CMS_U64)0x0102030405060708ULL)
#define CMS_MAX_LEAVES 64
#define CMS_MAX_UNIONS 16

struct cms_leaf {
  size_t offset, size;
  unsigned char guards;
  unsigned char guard[4][2];
};

/* [0]: a (or what came back), [1]: b, [2]: the five integers. */
static unsigned char cms_report[3][CMS_MAX_LEAVES];

const unsigned char *cms_bv_report(void) { return &cms_report[0][0]; }

static void cms_begin(void) {
  size_t i, j;
  for (i = 0; i < 3; i++)
    for (j = 0; j < CMS_MAX_LEAVES; j++) cms_report[i][j] = 0;
}

static unsigned char cms_pattern(unsigned seed, size_t leaf, size_t byte) {
  return (unsigned char)(seed * 59u + leaf * 17u + byte * 7u + 33u);
}

/* In each union, the member whose leaves span the most bytes (the first of them). */
static void cms_choose(const struct cms_leaf *l, size_t n, size_t unions, size_t *chosen) {
  size_t u, k, g;
  for (u = 0; u < unions && u < CMS_MAX_UNIONS; u++) {
    size_t best = 0, best_span = 0, member;
    for (member = 0; member < 64; member++) {
      size_t lo = (size_t)-1, hi = 0;
      for (k = 0; k < n; k++)
        for (g = 0; g < l[k].guards; g++)
          if (l[k].guard[g][0] == u && l[k].guard[g][1] == member) {
            if (l[k].offset < lo) lo = l[k].offset;
            if (l[k].offset + l[k].size > hi) hi = l[k].offset + l[k].size;
          }
      if (hi > lo && hi - lo > best_span) { best_span = hi - lo; best = member; }
    }
    chosen[u] = best;
  }
}

static int cms_active(const struct cms_leaf *l, const size_t *chosen) {
  size_t g;
  for (g = 0; g < l->guards; g++)
    if (chosen[l->guard[g][0]] != l->guard[g][1]) return 0;
  return 1;
}

static void cms_fill(void *p, size_t total, const struct cms_leaf *l, size_t n, size_t unions, unsigned seed) {
  unsigned char *b = (unsigned char *)p;
  size_t chosen[CMS_MAX_UNIONS], k, j;
  for (j = 0; j < total; j++) b[j] = 0;
  cms_choose(l, n, unions, chosen);
  for (k = 0; k < n; k++)
    if (cms_active(&l[k], chosen))
      for (j = 0; j < l[k].size; j++) b[l[k].offset + j] = cms_pattern(seed, k, j);
}

static void cms_check(const void *p, size_t total, const struct cms_leaf *l, size_t n, size_t unions, unsigned seed, int slot) {
  const unsigned char *b = (const unsigned char *)p;
  size_t chosen[CMS_MAX_UNIONS], k, j;
  (void)total;
  cms_choose(l, n, unions, chosen);
  for (k = 0; k < n && k < CMS_MAX_LEAVES; k++)
    if (cms_active(&l[k], chosen))
      for (j = 0; j < l[k].size; j++)
        if (b[l[k].offset + j] != cms_pattern(seed, k, j)) cms_report[slot][k] = 1;
}

static void cms_markers(CMS_U64 k0, CMS_U64 k1, CMS_U64 k2, CMS_U64 k3, CMS_U64 k4) {
  cms_report[2][0] = k0 != CMS_K(0);
  cms_report[2][1] = k1 != CMS_K(1);
  cms_report[2][2] = k2 != CMS_K(2);
  cms_report[2][3] = k3 != CMS_K(3);
  cms_report[2][4] = k4 != CMS_K(4);
}
"#;

/// Writes both halves into `dir` and compiles the C half for the target
/// (with the headers `include`), linked into this package's tests.
pub fn write(
    dir: &std::path::Path,
    file: &syn::File,
    preprocessed: &str,
    include: &[std::path::PathBuf],
    ptds: bool,
) -> Result<(), String> {
    let out = generate(
        file,
        &crate::abi_checks::c_tags(preprocessed),
        "::cuda_mem_sys",
    );
    let c = dir.join("by_value.c");
    crate::write_if_changed(&c, &out.c)?;
    crate::write_if_changed(&dir.join("by_value.rs"), &out.rust)?;
    let mut cc = cc::Build::new();
    cc.file(&c)
        .includes(include)
        .cargo_metadata(false)
        .warnings(false)
        .cargo_warnings(false);
    if ptds {
        cc.define("CUDA_API_PER_THREAD_DEFAULT_STREAM", None);
    }
    cc.try_compile("cms_by_value").map_err(|e| {
        format!(
            "compiling {} (the by-value check's C half): {e}",
            c.display()
        )
    })?;
    // The tests link it by name (`#[link]` in the Rust half).
    println!(
        "cargo:rustc-link-search=native={}",
        std::env::var("OUT_DIR").map_err(|e| e.to_string())?
    );
    Ok(())
}

/// The Rust half with no C half: the test reports ignored with `reason`.
pub fn write_unavailable(dir: &std::path::Path, reason: &str) -> Result<(), String> {
    crate::write_if_changed(&dir.join("by_value.rs"), &unavailable(reason))
}
