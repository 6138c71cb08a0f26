//! Constants bindgen drops or types otherwise: `#define`d integers, casts
//! and other names for constants (`add_macro_constants`), and the negative
//! ones the C compiler finds unsigned (`unsigned_constants`, then
//! `retype_unsigned_macro_constants`).

use super::preprocess::{MacroDef, Preprocessor};
use std::collections::{BTreeMap, BTreeSet};

/// Object-like macros bindgen cannot translate, where they have a value:
/// casts (`#define CU_STREAM_LEGACY ((CUstream)0x1)`, `((CUdevice)-1)`,
/// `((void*)CU_LAUNCH_PARAM_END_AS_INT)`) and other names for constants or
/// types (`#define cudaStreamAttrID cudaLaunchAttributeID`). What stays out
/// (attributes, guards, calling conventions) is listed by `tests/macros.rs`.
pub(super) fn add_macro_constants(file: &mut syn::File, macros: &[MacroDef]) {
    let mut consts: BTreeMap<String, syn::Type> = BTreeMap::new();
    let mut types = BTreeSet::new();
    for item in &file.items {
        match item {
            syn::Item::Const(c) => {
                consts.insert(c.ident.to_string(), (*c.ty).clone());
            }
            syn::Item::Struct(s) => {
                types.insert(s.ident.to_string());
            }
            syn::Item::Union(u) => {
                types.insert(u.ident.to_string());
            }
            syn::Item::Type(t) => {
                types.insert(t.ident.to_string());
            }
            syn::Item::Use(syn::ItemUse {
                tree: syn::UseTree::Path(p),
                ..
            }) => {
                if let syn::UseTree::Rename(r) = &*p.tree {
                    types.insert(r.rename.to_string());
                }
            }
            _ => {}
        }
    }
    // A body or operand found among the constants or types is a name (only
    // names are keys there).
    let mut seen = BTreeSet::new();
    for m in macros.iter().filter(|m| !m.function_like) {
        if consts.contains_key(&m.name) || types.contains(&m.name) || !seen.insert(m.name.clone()) {
            continue;
        }
        let name = syn::Ident::new(&m.name, proc_macro2::Span::call_site());
        let header = m
            .file
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let doc = format!(" `#define {} {}` ({header})", m.name, m.body);
        let body = m.body.trim();
        let item: syn::Item = if consts.contains_key(body) {
            let ty = &consts[body];
            let target = syn::Ident::new(body, proc_macro2::Span::call_site());
            syn::parse_quote!(#[doc = #doc] pub const #name: #ty = #target;)
        } else if types.contains(body) {
            let target = syn::Ident::new(body, proc_macro2::Span::call_site());
            syn::parse_quote!(#[doc = #doc] pub type #name = #target;)
        } else if let Some((c_type, operand)) = parse_cast(body) {
            let ty: syn::Type = match c_type.as_str() {
                "void*" => syn::parse_quote!(*mut ::core::ffi::c_void),
                "int" => syn::parse_quote!(::core::ffi::c_int),
                t if types.contains(t) => syn::parse_str(t).unwrap(),
                _ => continue,
            };
            let value: syn::Expr = match syn::parse_str::<syn::Expr>(&operand) {
                Ok(v) if consts.contains_key(&operand) => v,
                Ok(v) if parse_c_int(&operand).is_some() => {
                    let n = parse_c_int(&operand).unwrap();
                    let lit = syn::LitInt::new(&n.to_string(), proc_macro2::Span::call_site());
                    let _ = v;
                    if n < 0 {
                        let lit =
                            syn::LitInt::new(&(-n).to_string(), proc_macro2::Span::call_site());
                        syn::parse_quote!(-#lit)
                    } else {
                        syn::parse_quote!(#lit)
                    }
                }
                _ => continue,
            };
            syn::parse_quote!(#[doc = #doc] pub const #name: #ty = (#value) as #ty;)
        } else if parse_c_int(body).is_some() && !m.name.starts_with('_') {
            let n = parse_c_int(body).unwrap();
            let lit = syn::LitInt::new(&n.to_string(), proc_macro2::Span::call_site());
            syn::parse_quote!(#[doc = #doc] pub const #name: u32 = #lit;)
        } else {
            continue;
        };
        file.items.push(item);
    }
}

/// bindgen evaluates `#define X (~0u)` as `i32 = -1`; C's type is unsigned.
/// The negative macro constants, whose type [`unsigned_constants`] asks
/// the C compiler.
pub(super) fn negative_macro_constants(macros: &[MacroDef], file: &syn::File) -> Vec<String> {
    let macro_names: BTreeSet<&str> = macros.iter().map(|m| m.name.as_str()).collect();
    file.items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Const(c) if macro_names.contains(c.ident.to_string().as_str()) => {
                matches!(&*c.expr, syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)))
                    .then(|| c.ident.to_string())
            }
            _ => None,
        })
        .collect()
}

/// Which of the `negative` constants are unsigned in C: `"<u32|u64> <name>"`.
pub(super) fn unsigned_constants(
    pp: &Preprocessor,
    wrapper: &str,
    negative: &[String],
) -> Result<Vec<String>, String> {
    if negative.is_empty() {
        return Ok(vec![]);
    }
    let mut src = String::new();
    for (c_type, tag) in [
        ("unsigned int", "u32"),
        ("unsigned long long", "u64"),
        ("unsigned long", "u64"),
    ] {
        for n in negative {
            src.push_str(&format!(
                "_Static_assert(!_Generic(({n}), {c_type}: 1, default: 0), \"{tag} {n}\");\n"
            ));
        }
    }
    // Its own file: the loader's check runs beside it.
    pp.failing_asserts_in("cuda_mem_sys_unsigned.c", wrapper, &src)
}

/// Gives the constants the C compiler found unsigned ([`unsigned_constants`])
/// their C type and value.
pub(super) fn retype_unsigned_macro_constants(
    file: &mut syn::File,
    unsigned: &[String],
) -> Result<(), String> {
    if unsigned.is_empty() {
        return Ok(());
    }
    for item in &mut file.items {
        let syn::Item::Const(c) = item else { continue };
        let name = c.ident.to_string();
        let Some(tag) = unsigned
            .iter()
            .find_map(|m| m.strip_suffix(&format!(" {name}")))
        else {
            continue;
        };
        let syn::Expr::Unary(u) = &*c.expr else {
            continue;
        };
        let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(v),
            ..
        }) = &*u.expr
        else {
            continue;
        };
        let v: u64 = v.base10_parse().map_err(|e| e.to_string())?;
        let (ty, value): (syn::Type, u64) = if tag == "u32" {
            (syn::parse_quote!(u32), (v as u32).wrapping_neg() as u64)
        } else {
            (syn::parse_quote!(u64), v.wrapping_neg())
        };
        let lit = syn::LitInt::new(&value.to_string(), proc_macro2::Span::call_site());
        *c.ty = ty;
        *c.expr = syn::parse_quote!(#lit);
    }
    Ok(())
}

/// `((T)x)` or `(T)x` → (`T`, `x`), spaces removed from `T`.
pub(super) fn parse_cast(body: &str) -> Option<(String, String)> {
    let mut b = body.trim();
    while b.starts_with("((") && b.ends_with(')') {
        b = &b[1..b.len() - 1];
    }
    let rest = b.strip_prefix('(')?;
    let close = rest.find(')')?;
    let ty: String = rest[..close]
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let operand = rest[close + 1..]
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .trim();
    (!operand.is_empty() && !operand.contains(['(', ')', ' '])).then(|| (ty, operand.to_string()))
}

/// A C integer literal (decimal or hex, optional sign and suffixes).
pub(super) fn parse_c_int(s: &str) -> Option<i64> {
    let s = s.trim().trim_end_matches(['u', 'U', 'l', 'L']);
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r.trim()),
        None => (false, s),
    };
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => i64::from_str_radix(h, 16).ok()?,
        None => s.parse().ok()?,
    };
    Some(if neg { -v } else { v })
}
