//! The committed fallback bindings (`src/generated/`) are exactly what the
//! generator makes from the pinned release's headers, and a build without
//! CUDA uses them. Both sides are documented alike: by links to NVIDIA's
//! reference, none of the headers' comments (`Docs::Links`: `cargo xtask
//! regen` writes the committed copies so, and abi-proofs/build/main.rs generates so).
//!
//! The build script writes its bindings as tokens, one item a line; `cargo xtask regen`
//! pretty-prints the same tree. So the two are compared as tokens: both are
//! parsed, string literals (doc comments included) taken by value, and printed
//! by one pretty-printer, which also settles what only layout decides (the
//! trailing comma of a call broken over lines).

use libtest_mimic::{Completion, Failed};

const GENERATED: &str = include_str!(concat!(env!("OUT_DIR"), "/cuda_mem_sys.rs"));
const GENERATED_SYMBOLS: &str = include_str!(concat!(env!("OUT_DIR"), "/abi/symbols.txt"));

fn committed_symbols() -> &'static str {
    if cfg!(feature = "per-thread-default-stream") {
        include_str!("../../src/generated/cuda-13.0-ptds.symbols")
    } else {
        include_str!("../../src/generated/cuda-13.0.symbols")
    }
}

/// The file's tokens in one canonical spelling: each string literal (a doc
/// comment is one) re-spelt from its value, pretty-printed; the header
/// comment (`// @generated ...`) kept apart, as it names the release.
fn canonical(text: &str) -> Result<(String, String), String> {
    use syn::visit_mut::VisitMut;
    struct Lits;
    impl VisitMut for Lits {
        fn visit_lit_str_mut(&mut self, l: &mut syn::LitStr) {
            *l = syn::LitStr::new(&l.value(), l.span());
        }
    }
    let header: String = text
        .lines()
        .take_while(|l| l.starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut file = syn::parse_file(text).map_err(|e| e.to_string())?;
    Lits.visit_file_mut(&mut file);
    Ok((header, prettyplease::unparse(&file)))
}

/// Where two canonical texts first differ: the line and both versions of it.
fn first_difference(a: &str, b: &str) -> Option<String> {
    let (mut la, mut lb) = (a.lines(), b.lines());
    for n in 1.. {
        match (la.next(), lb.next()) {
            (None, None) => return None,
            (x, y) if x == y => continue,
            (x, y) => {
                return Some(format!(
                    "line {n}:\n generated: {}\n committed: {}",
                    x.unwrap_or("(end)"),
                    y.unwrap_or("(end)")
                ))
            }
        }
    }
    None
}

fn committed() -> &'static str {
    if cfg!(feature = "per-thread-default-stream") {
        include_str!("../../src/generated/cuda-13.0-ptds.rs")
    } else {
        include_str!("../../src/generated/cuda-13.0.rs")
    }
}

/// Built against `cargo xtask headers 13.0` (the pinned release): the output
/// must equal the committed file, byte for byte.
fn committed_bindings_match_the_pinned_headers() -> Result<Completion, Failed> {
    if cfg!(cuda_mem_sys_fallback) {
        return Ok(Completion::ignored_with(
            "this build used the committed bindings themselves",
        ));
    }
    let dirs = test_support::INCLUDE_DIRS.unwrap_or_default();
    // The 13.0 wheels of each target (`cargo xtask headers 13.0 [--target ...]`):
    // the committed file must hold for Linux and Windows alike.
    let pinned = [
        "cuda-headers/13.0/",
        "cuda-headers/aarch64-unknown-linux-gnu/13.0/",
        "cuda-headers/x86_64-pc-windows-gnu/13.0/",
        "cuda-headers/x86_64-pc-windows-msvc/13.0/",
    ];
    if !pinned.iter().any(|p| dirs.contains(p)) {
        return Ok(Completion::ignored_with(format!(
            "built against {dirs}, not the pinned headers of `cargo xtask headers 13.0`"
        )));
    }
    let generated =
        canonical(GENERATED).map_err(|e| format!("parsing the generated bindings: {e}"))?;
    let pinned = canonical(committed()).map_err(|e| format!("parsing src/generated: {e}"))?;
    if generated.0 != pinned.0 {
        return Err(format!(
            "the header comments differ:\n{}\n{}\nrun `cargo xtask regen`",
            generated.0, pinned.0
        )
        .into());
    }
    if let Some(diff) = first_difference(&generated.1, &pinned.1) {
        return Err(format!(
            "src/generated differs from what the pinned headers produce, as tokens:\n {diff}\n\
             run `cargo xtask regen`"
        )
        .into());
    }
    if GENERATED_SYMBOLS != committed_symbols() {
        return Err(
            "the committed symbols list (src/generated/*.symbols, which builds without \
                    the `bindgen` feature link) differs from the generated bindings' symbols: \
                    run `cargo xtask regen`"
                .into(),
        );
    }
    Ok(Completion::Completed)
}

/// Without headers the build uses the committed file and says so with a cfg.
fn a_build_without_cuda_uses_the_fallback() -> Result<Completion, Failed> {
    if !cfg!(cuda_mem_sys_fallback) {
        return Ok(Completion::ignored_with("this build found CUDA headers"));
    }
    if GENERATED != committed() || cuda_mem_sys::CUDA_VERSION != 13000 {
        return Err("the fallback build did not use the committed CUDA 13.0 bindings".into());
    }
    Ok(Completion::Completed)
}

/// The comparison catches a change of one token, and only of tokens: a
/// pretty-printed file equals its compact form, and one changed literal, type
/// or attribute is found, as is one changed doc of the committed file.
fn the_token_comparison_catches_a_changed_token() -> Result<Completion, Failed> {
    let pretty = "// @generated x\n\n/// A doc\n/// comment.\n#[repr(C)]\npub struct S {\n    pub a: u32,\n}\n";
    let compact =
        "// @generated x\n# [doc = \" A doc\"] # [doc = \" comment.\"] # [repr (C)] pub struct S { pub a : u32 , }";
    let (p, c) = (canonical(pretty)?, canonical(compact)?);
    if p != c {
        return Err(format!("equal tokens compared unequal:\n{p:?}\n{c:?}").into());
    }
    for wrong in [
        compact.replace("u32", "u64"),
        compact.replace(" comment.", " comment!"),
        compact.replace("repr (C)", "repr (packed)"),
        compact.replace("pub a", "a"),
    ] {
        let w = canonical(&wrong)?;
        if first_difference(&w.1, &p.1).is_none() {
            return Err(format!("a changed token went unnoticed: {wrong}").into());
        }
    }
    // The committed file itself, one item's doc given a sentence of NVIDIA's
    // (its documentation is links alone, as abi-proofs generates it).
    let link = "/// NVIDIA's reference: [data types]";
    let planted = committed().replacen(
        link,
        "/// This handle can be used safely from only one CPU thread at a time. [data types]",
        1,
    );
    if planted == committed() {
        return Err(format!("the committed file has no `{link}`").into());
    }
    let (c, w) = (canonical(committed())?, canonical(&planted)?);
    if first_difference(&c.1, &w.1).is_none() {
        return Err("a doc changed in the committed file went unnoticed".into());
    }
    Ok(Completion::Completed)
}

/// The enum newtypes of `text` whose inner type is not the one the Itanium C
/// ABI gives their C enum (`c_uint`, or `c_int` where a constant is negative).
fn enums_of_another_type(text: &str) -> Result<Vec<String>, String> {
    let file = syn::parse_file(text).map_err(|e| e.to_string())?;
    let mut negative = std::collections::BTreeSet::new();
    for item in &file.items {
        if let syn::Item::Const(c) = item {
            if let (syn::Type::Path(t), syn::Expr::Call(call)) = (&*c.ty, &*c.expr) {
                if matches!(call.args.first(), Some(syn::Expr::Unary(u)) if matches!(u.op, syn::UnOp::Neg(_)))
                {
                    negative.insert(t.path.segments.last().unwrap().ident.to_string());
                }
            }
        }
    }
    let mut wrong = vec![];
    let mut enums = 0;
    for item in &file.items {
        let syn::Item::Struct(s) = item else { continue };
        let transparent = s.attrs.iter().any(|a| {
            a.path().is_ident("repr")
                && a.meta
                    .require_list()
                    .is_ok_and(|l| l.tokens.to_string() == "transparent")
        });
        let (true, syn::Fields::Unnamed(fields)) = (transparent, &s.fields) else {
            continue;
        };
        let Some(syn::Type::Path(t)) = fields.unnamed.first().map(|f| &f.ty) else {
            continue;
        };
        enums += 1;
        let inner = t.path.segments.last().unwrap().ident.to_string();
        let name = s.ident.to_string();
        let itanium = if negative.contains(&name) {
            "c_int"
        } else {
            "c_uint"
        };
        if inner != itanium {
            wrong.push(format!("{name}({inner}), not {itanium}"));
        }
    }
    if enums < 100 {
        return Err(format!("only {enums} enum newtypes found"));
    }
    Ok(wrong)
}

/// One API on every target: each C enum's newtype has the type the Itanium
/// C ABI gives the enum, on msvc too (where C makes every enum `int`), as in
/// the committed fallback. Its size and alignment are abi_layout's to check.
fn every_enum_newtype_has_one_type_on_every_target() -> Result<Completion, Failed> {
    let wrong = enums_of_another_type(GENERATED)?;
    if !wrong.is_empty() {
        return Err(format!(
            "{} enum newtypes ({}) have a type of their own on {}: {}",
            wrong.len(),
            test_support::TARGET,
            if cfg!(cuda_mem_sys_fallback) {
                "the committed fallback"
            } else {
                "the generated bindings"
            },
            wrong.join(", ")
        )
        .into());
    }
    Ok(Completion::Completed)
}

/// The check catches `CUresult` left `c_int` (what bindgen writes for msvc)
/// and a newtype with a negative constant made `c_uint`.
fn an_enum_newtype_of_msvc_type_is_caught() -> Result<Completion, Failed> {
    let committed = committed();
    for (right, wrong, name) in [
        (
            "pub struct cudaError_enum(pub ::core::ffi::c_uint);",
            "pub struct cudaError_enum(pub ::core::ffi::c_int);",
            "cudaError_enum(c_int), not c_uint",
        ),
        (
            "pub struct CUshared_carveout_enum(pub ::core::ffi::c_int);",
            "pub struct CUshared_carveout_enum(pub ::core::ffi::c_uint);",
            "CUshared_carveout_enum(c_uint), not c_int",
        ),
    ] {
        if !committed.contains(right) {
            return Err(format!("src/generated has no `{right}`").into());
        }
        let found = enums_of_another_type(&committed.replace(right, wrong))?;
        if found != [name] {
            return Err(format!("`{wrong}` was not caught alone: {found:?}").into());
        }
    }
    Ok(Completion::Completed)
}

/// What each enum newtype derives (`Debug` is written by name, not derived).
const NEWTYPE: &[&str] = &[
    "Copy",
    "Clone",
    "Hash",
    "PartialEq",
    "Eq",
    "PartialOrd",
    "Ord",
];
/// What each opaque handle struct (`struct CUctx_st;` in C) derives at least.
const OPAQUE: &[&str] = &["Copy", "Clone"];
/// What a struct whose fields all allow comparing derives at least: `Eq`,
/// and with it the order (field by field, as cudarc's plain structs).
const COMPARABLE: &[&str] = &["PartialEq", "Eq", "Hash", "PartialOrd", "Ord"];

/// The names a `#[derive(...)]` list gives.
fn derived(attrs: &[syn::Attribute]) -> Vec<String> {
    use syn::punctuated::Punctuated;
    attrs
        .iter()
        .filter(|a| a.path().is_ident("derive"))
        .filter_map(|a| {
            a.parse_args_with(Punctuated::<syn::Path, syn::Token![,]>::parse_terminated)
                .ok()
        })
        .flatten()
        .filter_map(|p| p.get_ident().map(|i| i.to_string()))
        .collect()
}

/// The items of `text` whose derives break the rules, each named with what
/// it lacks or should not have: enum newtypes derive [`NEWTYPE`] exactly;
/// opaque structs [`OPAQUE`]; a struct derives [`COMPARABLE`] exactly where
/// every field is an integer, a raw pointer, an enum newtype, an array of
/// those or a struct that derives them (found here on its own, not by asking
/// bindgen): a union or a function pointer inside forbids all three, a float
/// `Eq` and `Hash` (`PartialEq` stays, as bindgen derives it). Returns the
/// misses and the counts (newtypes, opaque, comparable structs).
fn derive_misses(text: &str) -> Result<(Vec<String>, [usize; 3]), String> {
    use std::collections::{BTreeMap, BTreeSet};
    let file = syn::parse_file(text).map_err(|e| e.to_string())?;
    let mut structs: BTreeMap<String, &syn::ItemStruct> = BTreeMap::new();
    let mut aliases: BTreeMap<String, syn::Type> = BTreeMap::new();
    for item in &file.items {
        match item {
            syn::Item::Struct(s) => {
                structs.insert(s.ident.to_string(), s);
            }
            syn::Item::Type(t) => {
                aliases.insert(t.ident.to_string(), (*t.ty).clone());
            }
            // `pub use self::CUoutput_mode_enum as CUoutput_mode;`
            syn::Item::Use(syn::ItemUse {
                tree: syn::UseTree::Path(p),
                ..
            }) => {
                if let syn::UseTree::Rename(r) = &*p.tree {
                    let from = syn::parse_str(&r.ident.to_string()).map_err(|e| e.to_string())?;
                    aliases.insert(r.rename.to_string(), from);
                }
            }
            _ => {}
        }
    }
    let is_newtype =
        |s: &syn::ItemStruct| matches!(&s.fields, syn::Fields::Unnamed(f) if f.unnamed.len() == 1);
    let is_opaque = |s: &syn::ItemStruct| {
        s.fields.len() == 1
            && s.fields
                .iter()
                .next()
                .and_then(|f| f.ident.as_ref())
                .is_some_and(|i| i == "_unused")
    };
    /// Whether a field of type `ty` allows comparing (`floats`: with `PartialEq` only).
    fn allows(
        ty: &syn::Type,
        ok: &BTreeSet<String>,
        aliases: &BTreeMap<String, syn::Type>,
        floats: bool,
        depth: usize,
    ) -> bool {
        let integer = |n: &str| {
            (n.starts_with("c_") && n != "c_void")
                || [
                    "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128",
                    "isize",
                ]
                .contains(&n)
        };
        match ty {
            syn::Type::Ptr(_) => true,
            syn::Type::Array(a) => allows(&a.elem, ok, aliases, floats, depth),
            syn::Type::Path(p) if depth < 16 => {
                let Some(last) = p.path.segments.last() else {
                    return false;
                };
                let name = last.ident.to_string();
                if integer(&name) || (floats && (name == "f32" || name == "f64")) {
                    return true;
                }
                if name == "__BindgenBitfieldUnit" {
                    return matches!(&last.arguments, syn::PathArguments::AngleBracketed(a)
                        if a.args.iter().all(|g| matches!(g, syn::GenericArgument::Type(t)
                            if allows(t, ok, aliases, floats, depth + 1))));
                }
                ok.contains(&name)
                    || aliases
                        .get(&name)
                        .is_some_and(|t| allows(t, ok, aliases, floats, depth + 1))
            }
            _ => false,
        }
    }
    // The structs that allow comparing, without floats (`Eq`) and with (`PartialEq`).
    let fixpoint = |floats: bool| {
        let mut ok: BTreeSet<String> = structs
            .iter()
            .filter(|(_, s)| is_newtype(s))
            .map(|(n, _)| n.clone())
            .collect();
        loop {
            let before = ok.len();
            for (name, s) in &structs {
                if !ok.contains(name)
                    && !is_opaque(s)
                    && s.fields
                        .iter()
                        .all(|f| allows(&f.ty, &ok, &aliases, floats, 0))
                {
                    ok.insert(name.clone());
                }
            }
            if ok.len() == before {
                return ok;
            }
        }
    };
    let (eq, partial_eq) = (fixpoint(false), fixpoint(true));
    let mut misses = vec![];
    let mut counts = [0; 3];
    for (name, s) in &structs {
        let has = derived(&s.attrs);
        let lacks = |want: &[&'static str]| -> Vec<&'static str> {
            want.iter()
                .copied()
                .filter(|w| !has.iter().any(|h| h == w))
                .collect()
        };
        let also = |allowed: &[&str]| -> Vec<String> {
            has.iter()
                .filter(|h| COMPARABLE.contains(&h.as_str()) || NEWTYPE[5..].contains(&h.as_str()))
                .filter(|h| !allowed.contains(&h.as_str()))
                .cloned()
                .collect()
        };
        let (want, allowed): (&[&'static str], &[&str]) = if is_newtype(s) {
            counts[0] += 1;
            (NEWTYPE, NEWTYPE)
        } else if is_opaque(s) {
            counts[1] += 1;
            (OPAQUE, &[])
        } else if eq.contains(name) {
            counts[2] += 1;
            (COMPARABLE, COMPARABLE)
        } else if partial_eq.contains(name) {
            (&["PartialEq"], &["PartialEq"])
        } else {
            (&[], &[])
        };
        let (lacking, extra) = (lacks(want), also(allowed));
        if !lacking.is_empty() || !extra.is_empty() {
            misses.push(format!(
                "{name}: lacks {lacking:?}, derives {extra:?} its fields forbid"
            ));
        }
    }
    Ok((misses, counts))
}

/// The derives cudarc's `sys` has and code ported from it relies on: each
/// enum newtype `Copy`, `Clone`, `Hash`, `PartialEq`, `Eq`, `PartialOrd`,
/// `Ord`; each opaque handle `Copy`, `Clone`; each struct whose fields allow
/// it `PartialEq`, `Eq`, `Hash` (none through a union, float or function
/// pointer), in the bindings this build uses (generated, or committed).
fn every_item_derives_what_its_fields_allow() -> Result<Completion, Failed> {
    let (misses, counts) = derive_misses(GENERATED)?;
    if counts[0] < 100 || counts[1] < 20 || counts[2] < 100 {
        return Err(
            format!("too few items found (newtypes, opaque, comparable): {counts:?}").into(),
        );
    }
    if !misses.is_empty() {
        return Err(format!(
            "{} items derive the wrong traits: {}",
            misses.len(),
            misses.join("; ")
        )
        .into());
    }
    // Compile-time: the traits hold where code ported from cudarc uses them.
    fn ordered<T: Copy + Eq + Ord + core::hash::Hash>() {}
    fn comparable<T: Copy + Eq + core::hash::Hash>() {}
    ordered::<cuda_mem_sys::CUresult>();
    ordered::<cuda_mem_sys::cudaError_t>();
    ordered::<cuda_mem_sys::CUmemAllocationHandleType>();
    // Comparable on every release (a struct whose field moved into an
    // anonymous union, `CUmemAllocationProp` from 13.2, is not there).
    comparable::<cuda_mem_sys::CUuuid>();
    comparable::<cuda_mem_sys::CUDA_ARRAY_DESCRIPTOR>();
    fn copied<T: Copy>() {}
    copied::<cuda_mem_sys::CUctx_st>();
    copied::<cuda_mem_sys::CUstream_st>();
    let _: core::ffi::c_uint = cuda_mem_sys::CUDA_ERROR_OUT_OF_MEMORY.into();
    let e = cuda_mem_sys::CUresult::from(2);
    if e != cuda_mem_sys::CUDA_ERROR_OUT_OF_MEMORY || u32::from(e) != 2 {
        return Err("From does not convert an enum newtype to its value and back".into());
    }
    Ok(Completion::Completed)
}

/// The derive check names the item where one derive goes missing, one is
/// added through a function pointer, or an opaque handle loses `Copy`.
fn a_missing_derive_is_caught() -> Result<Completion, Failed> {
    let committed = committed();
    for (right, wrong, name) in [
        (
            "#[derive(Copy, Clone, Hash, PartialEq, Eq, PartialOrd, Ord)]\npub struct cudaError_enum(",
            "#[derive(Copy, Clone, Hash, PartialEq, Eq, PartialOrd)]\npub struct cudaError_enum(",
            "cudaError_enum",
        ),
        (
            "#[derive(Debug, Default, Copy, Clone, Hash, PartialEq, Eq, PartialOrd, Ord)]\npub struct CUuuid_st {",
            "#[derive(Debug, Default, Copy, Clone, Hash, PartialEq, PartialOrd, Ord)]\npub struct CUuuid_st {",
            "CUuuid_st",
        ),
        (
            "#[derive(Debug, Default, Copy, Clone, Hash, PartialEq, Eq, PartialOrd, Ord)]\npub struct CUuuid_st {",
            "#[derive(Debug, Default, Copy, Clone, Hash, PartialEq, Eq)]\npub struct CUuuid_st {",
            "CUuuid_st",
        ),
        (
            "#[derive(Debug, Copy, Clone)]\npub struct CUDA_HOST_NODE_PARAMS_st {",
            "#[derive(Debug, Copy, Clone, Hash, PartialEq, Eq)]\npub struct CUDA_HOST_NODE_PARAMS_st {",
            "CUDA_HOST_NODE_PARAMS_st",
        ),
        (
            "#[derive(Debug, Copy, Clone)]\npub struct CUctx_st {",
            "#[derive(Debug)]\npub struct CUctx_st {",
            "CUctx_st",
        ),
    ] {
        if !committed.contains(right) {
            return Err(format!("src/generated has no `{right}`").into());
        }
        let (found, _) = derive_misses(&committed.replacen(right, wrong, 1))?;
        if found.len() != 1 || !found[0].starts_with(&format!("{name}:")) {
            return Err(format!("`{wrong}` was not caught alone: {found:?}").into());
        }
    }
    Ok(Completion::Completed)
}

fn main() {
    test_support::main(test_support::checks![
        every_item_derives_what_its_fields_allow,
        a_missing_derive_is_caught,
        every_enum_newtype_has_one_type_on_every_target,
        an_enum_newtype_of_msvc_type_is_caught,
        the_token_comparison_catches_a_changed_token,
        committed_bindings_match_the_pinned_headers,
        a_build_without_cuda_uses_the_fallback,
    ]);
}
