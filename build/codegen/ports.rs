//! What code written against another `-sys` crate's bindings (cudarc's
//! `sys`, whose C enums are Rust enums) needs to port by renaming alone:
//!
//! - **Enumerators as associated constants.** Every enum newtype also has its
//!   enumerators as associated constants, `CUresult::CUDA_SUCCESS` beside the
//!   crate-level `CUDA_SUCCESS`, the same value. They sit on the newtype
//!   bindgen names after the C tag (`cudaError_enum`); its typedef names
//!   (`CUresult`, a `use ... as`) are the same type and share them.
//! - **`Debug` by name.** Every enum newtype prints the enumerator's name and
//!   value, `CUDA_ERROR_OUT_OF_MEMORY (2)`, or the bare value (`123456`) for
//!   one the headers do not list: one `match` per newtype, `no_std`, no
//!   allocation. Where several enumerators share a value the first declared
//!   in the headers names it (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK`
//!   and its alias `CU_DEVICE_ATTRIBUTE_SHARED_MEMORY_PER_BLOCK` are 8: the
//!   first prints).
//! - **Derives and conversions.** Every struct deriving `Eq` also derives
//!   `PartialOrd` and `Ord` (field by field). Every enum newtype derives `PartialOrd`
//!   and `Ord` besides `Hash`, `PartialEq`, `Eq`, and converts to and from
//!   its C integer type with `From`; opaque handle structs derive `Copy` and
//!   `Clone`; no struct compares through a function pointer.
//! - **Moved fields.** A field that moved into an anonymous union between
//!   releases (`moved_fields.rs`'s `MOVED`) gets a getter and a setter (`loc.id()`,
//!   `loc.set_id(3)`) on every release that has it, direct or not: the same
//!   source compiles everywhere, with no `unsafe` at the call site and no
//!   `unused_unsafe` warning where the field is direct.

use super::moved_fields::add_moved_field_accessors;
use super::syn_items::{enum_newtypes, last_ident};
use std::collections::{BTreeMap, BTreeSet};

/// Adds the associated constants and `Debug` of every enum newtype (and takes
/// `Debug` out of its derive), and the moved fields' accessors.
pub fn add(file: &mut syn::File) {
    let newtypes = enum_newtypes(file);
    let mut enumerators: BTreeMap<String, Vec<(syn::Ident, syn::Expr)>> = BTreeMap::new();
    for item in &file.items {
        let syn::Item::Const(c) = item else { continue };
        let Some(ty) = last_ident(&c.ty).filter(|t| newtypes.contains(t)) else {
            continue;
        };
        // `pub const NAME: T = T(value);`: an enumerator (a macro naming one
        // is `= OTHER`, not a call, and is no enumerator of the C enum).
        let syn::Expr::Call(call) = &*c.expr else {
            continue;
        };
        let syn::Expr::Path(f) = &*call.func else {
            continue;
        };
        if call.args.len() != 1
            || f.path.segments.last().map(|s| s.ident.to_string()) != Some(ty.clone())
        {
            continue;
        }
        enumerators
            .entry(ty)
            .or_default()
            .push((c.ident.clone(), call.args[0].clone()));
    }
    let mut inner_types = BTreeMap::new();
    for item in &mut file.items {
        let syn::Item::Struct(s) = item else { continue };
        if newtypes.contains(&s.ident.to_string()) {
            set_derives(&mut s.attrs, NEWTYPE_DERIVES);
            if let syn::Fields::Unnamed(f) = &s.fields {
                inner_types.insert(s.ident.to_string(), f.unnamed[0].ty.clone());
            }
        } else if is_opaque(s) {
            set_derives(&mut s.attrs, OPAQUE_DERIVES);
        }
    }
    for ty in &newtypes {
        let list = enumerators.get(ty).map(Vec::as_slice).unwrap_or_default();
        let t = syn::Ident::new(ty, proc_macro2::Span::call_site());
        if !list.is_empty() {
            file.items.push(associated_constants(&t, list));
        }
        file.items.push(debug_impl(&t, list));
        if let Some(inner) = inner_types.get(ty) {
            file.items.extend(conversions(&t, inner));
        }
    }
    no_comparisons_through_function_pointers(file);
    ordered_where_equal(file);
    add_moved_field_accessors(file);
}

/// `PartialOrd` and `Ord` on every struct that derives `Eq` (after
/// [`no_comparisons_through_function_pointers`]): the same rule as `Eq`,
/// field by field in declaration order, as cudarc's `sys` derives them.
/// Never where `Eq` is not derived (a float, a union, a function pointer
/// inside), so the order is total wherever it is given.
fn ordered_where_equal(file: &mut syn::File) {
    for item in &mut file.items {
        let syn::Item::Struct(s) = item else { continue };
        let mut list = derives(&s.attrs);
        if !list.iter().any(|d| d == "Eq") || list.iter().any(|d| d == "Ord") {
            continue;
        }
        list.extend(["PartialOrd".to_string(), "Ord".to_string()]);
        set_derives(
            &mut s.attrs,
            &list.iter().map(String::as_str).collect::<Vec<_>>(),
        );
    }
}

/// Takes `PartialEq`, `Eq` and `Hash` from every struct that holds a
/// function pointer, directly, in an array, or through a struct or alias that
/// does (`CUDA_HOST_NODE_PARAMS` holds a `CUhostFn`). bindgen derives them
/// there, but two pointers to one function may compare unequal (and two to
/// different functions equal) once code is duplicated or merged: rustc's
/// `unpredictable_function_pointer_comparisons`. A raw pointer to such a
/// struct is an address and compares as one.
fn no_comparisons_through_function_pointers(file: &mut syn::File) {
    fn holds(ty: &syn::Type, tainted: &BTreeSet<String>) -> bool {
        match ty {
            syn::Type::FnPtr(_) => true,
            syn::Type::Array(a) => holds(&a.elem, tainted),
            syn::Type::Paren(p) => holds(&p.elem, tainted),
            syn::Type::Path(p) => p.path.segments.iter().any(|seg| {
                tainted.contains(&seg.ident.to_string())
                    || matches!(&seg.arguments, syn::PathArguments::AngleBracketed(a)
                        if a.args.iter().any(|g| matches!(g, syn::GenericArgument::Type(t) if holds(t, tainted))))
            }),
            _ => false,
        }
    }
    let mut tainted = BTreeSet::new();
    loop {
        let before = tainted.len();
        for item in &file.items {
            let name = match item {
                syn::Item::Type(t) if holds(&t.ty, &tainted) => t.ident.to_string(),
                syn::Item::Struct(s) if s.fields.iter().any(|f| holds(&f.ty, &tainted)) => {
                    s.ident.to_string()
                }
                // bindgen's `pub use self::X as Y;` (a typedef of an enum or struct).
                syn::Item::Use(syn::ItemUse {
                    tree: syn::UseTree::Path(p),
                    ..
                }) => {
                    if let syn::UseTree::Rename(r) = &*p.tree {
                        if tainted.contains(&r.ident.to_string()) {
                            tainted.insert(r.rename.to_string());
                        }
                    }
                    continue;
                }
                _ => continue,
            };
            tainted.insert(name);
        }
        if tainted.len() == before {
            break;
        }
    }
    for item in &mut file.items {
        let syn::Item::Struct(s) = item else { continue };
        if !tainted.contains(&s.ident.to_string()) {
            continue;
        }
        let kept: Vec<String> = derives(&s.attrs)
            .into_iter()
            .filter(|d| !["PartialEq", "Eq", "Hash"].contains(&d.as_str()))
            .collect();
        set_derives(
            &mut s.attrs,
            &kept.iter().map(String::as_str).collect::<Vec<_>>(),
        );
    }
}

/// The names an item's `#[derive(...)]` attributes list, in order.
fn derives(attrs: &[syn::Attribute]) -> Vec<String> {
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

/// What an enum newtype derives: everything an integer has but `Debug`
/// (written by name, [`debug_impl`]) and `Default` (0 need not be an
/// enumerator). `PartialOrd`/`Ord` compare the values, as C's `<` does.
const NEWTYPE_DERIVES: &[&str] = &[
    "Copy",
    "Clone",
    "Hash",
    "PartialEq",
    "Eq",
    "PartialOrd",
    "Ord",
];

/// What an opaque handle struct (`struct CUctx_st;` in C, `_unused: [u8; 0]`
/// here) derives: C never has one as a value, so copying one (zero bytes) is
/// as sound as copying `()`; cudarc's `sys` derives the same.
const OPAQUE_DERIVES: &[&str] = &["Debug", "Copy", "Clone"];

/// A struct bindgen made for a C struct declared but never defined.
fn is_opaque(s: &syn::ItemStruct) -> bool {
    let syn::Fields::Named(f) = &s.fields else {
        return false;
    };
    f.named.len() == 1
        && f.named[0].ident.as_ref().is_some_and(|i| i == "_unused")
        && matches!(&f.named[0].ty, syn::Type::Array(a)
            if matches!(&a.len, syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }) if n.base10_digits() == "0"))
}

/// `From` both ways between an enum newtype and its C integer type (the
/// newtype's own field type: `c_uint`, or `c_int` where an enumerator is
/// negative), so that `e as u32` on another crate's Rust enum becomes
/// `u32::from(e)` (or `e.0`) here, and a raw value becomes `T::from(v)`.
fn conversions(t: &syn::Ident, inner: &syn::Type) -> [syn::Item; 2] {
    let to = format!(" The C integer value of a `{t}` (the same as `.0`).");
    let from = format!(
        " A `{t}` holding any value of its C integer type: a value the headers \
         do not list is a value still (the same as `{t}(v)`)."
    );
    [
        syn::parse_quote! {
            impl ::core::convert::From<#t> for #inner {
                #[doc = #to]
                #[inline]
                fn from(v: #t) -> Self { v.0 }
            }
        },
        syn::parse_quote! {
            impl ::core::convert::From<#inner> for #t {
                #[doc = #from]
                #[inline]
                fn from(v: #inner) -> Self { Self(v) }
            }
        },
    ]
}

/// Replaces every `#[derive(...)]` of an item with one deriving `derives`.
fn set_derives(attrs: &mut Vec<syn::Attribute>, derives: &[&str]) {
    let at = attrs
        .iter()
        .position(|a| a.path().is_ident("derive"))
        .unwrap_or(attrs.len());
    attrs.retain(|a| !a.path().is_ident("derive"));
    if derives.is_empty() {
        return;
    }
    let paths = derives
        .iter()
        .map(|d| syn::Ident::new(d, proc_macro2::Span::call_site()));
    attrs.insert(
        at.min(attrs.len()),
        syn::parse_quote!(#[derive(#(#paths),*)]),
    );
}

fn associated_constants(t: &syn::Ident, list: &[(syn::Ident, syn::Expr)]) -> syn::Item {
    let names = list.iter().map(|(n, _)| n);
    let values = list.iter().map(|(_, v)| v);
    let doc = format!(
        " The enumerators of `{t}` as associated constants (`{t}::{}`), each the crate-level \
         constant of the same name.",
        list[0].0
    );
    syn::parse_quote! {
        #[doc = #doc]
        impl #t {
            #(pub const #names: Self = Self(#values);)*
        }
    }
}

/// One `match` on the value; the first declared enumerator of a value names it.
fn debug_impl(t: &syn::Ident, list: &[(syn::Ident, syn::Expr)]) -> syn::Item {
    let mut seen = BTreeSet::new();
    let arms: Vec<proc_macro2::TokenStream> = list
        .iter()
        .filter(|(_, v)| {
            is_literal(v) && seen.insert(quote::ToTokens::to_token_stream(v).to_string())
        })
        .map(|(n, v)| {
            let name = n.to_string();
            quote::quote!(#v => #name,)
        })
        .collect();
    let doc = format!(
        " The enumerator's name and value, `{}`; the bare value for one the headers do not \
         list. Where enumerators share a value, the first declared names it.",
        match list.first() {
            Some((n, v)) => format!("{n} ({})", quote::ToTokens::to_token_stream(v)),
            None => "7".into(),
        }
    );
    if arms.is_empty() {
        return syn::parse_quote! {
            #[doc = #doc]
            impl ::core::fmt::Debug for #t {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    ::core::fmt::Display::fmt(&self.0, f)
                }
            }
        };
    }
    syn::parse_quote! {
        #[doc = #doc]
        impl ::core::fmt::Debug for #t {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let name = match self.0 {
                    #(#arms)*
                    _ => return ::core::fmt::Display::fmt(&self.0, f),
                };
                ::core::write!(f, "{} ({})", name, self.0)
            }
        }
    }
}

/// An integer literal, or a negated one: usable as a pattern.
fn is_literal(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(_),
            ..
        }) => true,
        syn::Expr::Unary(u) => matches!(u.op, syn::UnOp::Neg(_)) && is_literal(&u.expr),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The derive attribute before `pub struct <name>` in `out`.
    fn derives_of(out: &str, name: &str) -> String {
        let at = out.find(&format!("pub struct {name}")).unwrap();
        let start = out[..at].rfind("# [derive").unwrap();
        out[start..at].to_string()
    }

    fn generated(src: &str) -> String {
        let mut file: syn::File = syn::parse_str(src).unwrap();
        add(&mut file);
        quote::ToTokens::to_token_stream(&file).to_string()
    }

    #[test]
    fn enumerators_become_associated_constants_and_name_their_values() {
        let out = generated(
            "#[repr(transparent)] #[derive(Debug, Copy, Clone, Hash, PartialEq, Eq)] \
             pub struct e_enum(pub ::core::ffi::c_int);
             pub const E_A: e_enum = e_enum(0);
             pub const E_B: e_enum = e_enum(-1);
             pub const E_ALIAS: e_enum = e_enum(0);
             pub const E_MACRO: e_enum = E_A;
             #[repr(transparent)] #[derive(Debug, Copy, Clone)] pub struct none_enum(pub u32);",
        );
        assert!(out.contains("pub const E_A : Self = Self (0) ;"), "{out}");
        assert!(out.contains("pub const E_B : Self = Self (- 1) ;"), "{out}");
        // The first declared of a value names it; the alias is a constant still.
        assert!(out.contains("0 => \"E_A\" ,"), "{out}");
        assert!(!out.contains("0 => \"E_ALIAS\""), "{out}");
        assert!(out.contains("pub const E_ALIAS : Self"), "{out}");
        assert!(out.contains("- 1 => \"E_B\" ,"), "{out}");
        // A macro naming an enumerator is no enumerator.
        assert!(!out.contains("pub const E_MACRO : Self"), "{out}");
        // `Debug` is no longer derived, on either newtype; the one without
        // enumerators prints its value.
        assert!(!out.contains("derive (Debug"), "{out}");
        assert!(
            out.contains("impl :: core :: fmt :: Debug for none_enum"),
            "{out}"
        );
        assert!(!out.contains("impl none_enum"), "{out}");
    }

    #[test]
    fn only_a_newtypes_own_literal_values_are_enumerators_and_name_values() {
        let out = generated(
            "#[repr(transparent)] #[derive(Debug, Copy, Clone)] pub struct e_enum(pub ::core::ffi::c_int);
             pub const E_A: e_enum = e_enum(1);
             pub const E_OTHER_CALL: e_enum = other(2);
             pub const E_SHIFT: e_enum = e_enum(1 << 3);
             pub const E_NEG_NAME: e_enum = e_enum(-E_A);
             #[repr(C)] #[derive(Debug, Copy, Clone)] pub struct tuple_c(pub u32);
             #[derive(Debug, Copy, Clone)] pub struct tuple_plain(pub u32);",
        );
        // A call of another function is no enumerator.
        assert!(!out.contains("E_OTHER_CALL : Self"), "{out}");
        // Enumerators whose value is no literal are constants, not `match` arms.
        assert!(
            out.contains("pub const E_SHIFT : Self = Self (1 << 3) ;"),
            "{out}"
        );
        assert!(out.contains("pub const E_NEG_NAME : Self"), "{out}");
        assert!(out.contains("1 => \"E_A\" ,"), "{out}");
        assert!(!out.contains("=> \"E_SHIFT\""), "{out}");
        assert!(!out.contains("=> \"E_NEG_NAME\""), "{out}");
        // A tuple struct that is not `repr(transparent)` is no enum newtype.
        for t in ["tuple_c", "tuple_plain"] {
            assert!(!out.contains(&format!("Debug for {t}")), "{t}: {out}");
            assert!(!out.contains(&format!("From < {t} >")), "{t}: {out}");
        }
        assert!(is_literal(&syn::parse_quote!(-5)));
        assert!(!is_literal(&syn::parse_quote!(-X)));
        assert!(!is_literal(&syn::parse_quote!(!5)));
        assert!(!is_literal(&syn::parse_quote!(X)));
    }

    #[test]
    fn structs_deriving_eq_derive_ord_and_no_other_struct_does() {
        let out = generated(
            "#[repr(C)] #[derive(Debug, Copy, Clone, PartialEq, Eq, Hash)] pub struct ints { pub a: u32 }
             #[repr(C)] #[derive(Debug, Copy, Clone, PartialEq)] pub struct floats { pub f: f32 }
             #[repr(C)] #[derive(Debug, Copy, Clone, PartialEq, Eq, Hash)] pub struct calls { pub f: unsafe extern \"C\" fn() }",
        );
        assert!(
            derives_of(&out, "ints").contains("Eq , Hash , PartialOrd , Ord"),
            "{out}"
        );
        // The wrong twins: no `Eq`, no order; `Eq` taken for a function pointer, none either.
        assert!(!derives_of(&out, "floats").contains("Ord"), "{out}");
        assert!(!derives_of(&out, "calls").contains("Ord"), "{out}");
    }

    #[test]
    fn only_a_declared_but_undefined_struct_is_opaque() {
        let out = generated(
            "#[repr(C)] #[derive(Debug)] pub struct opaque_st { _unused: [u8; 0] }
             #[repr(C)] #[derive(Debug)] pub struct one_field_st { pub a: u32 }
             #[repr(C)] #[derive(Debug)] pub struct unused_one_st { _unused: [u8; 1] }
             #[repr(C)] #[derive(Debug)] pub struct two_st { _unused: [u8; 0], pub b: u32 }",
        );
        let derive = |name: &str| derives_of(&out, name);
        assert!(
            derive("opaque_st").contains("Debug , Copy , Clone"),
            "{out}"
        );
        for name in ["one_field_st", "unused_one_st", "two_st"] {
            assert!(!derive(name).contains("Copy"), "{name}: {out}");
        }
    }

    #[test]
    fn a_function_pointer_in_parentheses_still_takes_the_comparisons() {
        let out = generated(
            "pub type CUhostFn = ::core::option::Option<unsafe extern \"C\" fn()>;
             #[derive(Debug, Copy, Clone, Hash, PartialEq, Eq)] pub struct paren_st { pub f: (CUhostFn) }",
        );
        assert!(!out.contains("Hash , PartialEq"), "{out}");
    }

    #[test]
    fn a_unions_members_are_followed_through_aliases_up_to_16_deep() {
        // 16 aliases to an integer: plain, the getter is made.
        let chain = |n: usize| -> String {
            let mut s = String::new();
            for i in 0..n {
                s.push_str(&format!("pub type a{i} = a{};\n", i + 1));
            }
            s.push_str(&format!("pub type a{n} = u32;\n"));
            s + "pub struct CUmemLocation_st { pub type_: u32, pub anon_id: U }
                 pub union U { pub id: ::core::ffi::c_int, pub t: a0 }"
        };
        assert!(generated(&chain(15)).contains("pub fn id (& self)"));
        // One more: not followed, the setter alone.
        let deep = generated(&chain(16));
        assert!(!deep.contains("pub fn id (& self)"), "{deep}");
        assert!(deep.contains("pub fn set_id"), "{deep}");
        // Aliases that never end are not followed forever.
        let cycle = generated(
            "pub type a = b; pub type b = a;
             pub struct CUmemLocation_st { pub type_: u32, pub anon_id: U }
             pub union U { pub id: ::core::ffi::c_int, pub t: a }",
        );
        assert!(!cycle.contains("pub fn id (& self)"), "{cycle}");
    }

    #[test]
    fn pointers_arrays_and_structs_of_plain_data_are_plain_up_to_16_deep() {
        let getter = |member: &str, extra: &str| -> bool {
            generated(&format!(
                "{extra}
                 pub struct CUmemLocation_st {{ pub type_: u32, pub anon_id: U }}
                 pub union U {{ pub id: ::core::ffi::c_int, pub m: {member} }}"
            ))
            .contains("pub fn id (& self)")
        };
        assert!(getter("*mut bool", ""), "a raw pointer is an address");
        assert!(getter("[u32; 2]", ""));
        assert!(!getter("[bool; 2]", ""));
        assert!(getter(
            "S0",
            "pub struct S0 { pub a: u32, pub b: *const u8 }"
        ));
        assert!(!getter("S0", "pub struct S0 { pub a: u32, pub b: bool }"));
        // Nested 16 deep: followed; 17: not.
        let arrays = |n: usize| "[".repeat(n) + "u32" + &"; 1]".repeat(n);
        assert!(getter(&arrays(16), ""));
        assert!(!getter(&arrays(17), ""));
        let structs = |n: usize| {
            let mut s = String::new();
            for i in 0..n {
                s.push_str(&format!("pub struct S{i} {{ pub a: S{} }}\n", i + 1));
            }
            s + &format!("pub struct S{n} {{ pub a: u32 }}\n")
        };
        assert!(getter("S0", &structs(15)));
        assert!(!getter("S0", &structs(16)));
    }

    #[test]
    fn a_moved_field_is_found_in_its_own_anonymous_member() {
        // Another union first, which is not the member's type; the member's
        // field of the same name's type is read, not its sibling's.
        let in_union = generated(
            "pub union other_union { pub id: u64, pub x: u64 }
             pub struct CUmemLocation_st { pub type_: u32, pub anon_id: CUmemLocation_st__anon_id }
             pub union CUmemLocation_st__anon_id { pub localized: u16, pub id: ::core::ffi::c_int }",
        );
        assert!(
            in_union.contains(
                "pub fn id (& self) -> :: core :: ffi :: c_int { unsafe { self . anon_id . id } }"
            ),
            "{in_union}"
        );
        // A struct as the anonymous member: no `unsafe`.
        let in_struct = generated(
            "pub struct CUmemLocation_st { pub type_: u32, pub anon_id: S }
             pub struct S { pub id: ::core::ffi::c_int }",
        );
        assert!(
            in_struct
                .contains("pub fn id (& self) -> :: core :: ffi :: c_int { self . anon_id . id }"),
            "{in_struct}"
        );
    }

    #[test]
    fn moved_fields_get_accessors_in_both_places_and_a_getter_only_where_sound() {
        let direct =
            generated("pub struct CUmemLocation_st { pub type_: u32, pub id: ::core::ffi::c_int }");
        assert!(
            direct.contains("pub fn id (& self) -> :: core :: ffi :: c_int { self . id }"),
            "{direct}"
        );
        assert!(direct.contains("pub fn set_id (& mut self , value : :: core :: ffi :: c_int) { self . id = value ; }"), "{direct}");
        let in_union = generated(
            "pub struct CUmemLocation_st { pub type_: u32, pub anon_id: CUmemLocation_st__anon_id }
             pub union CUmemLocation_st__anon_id { pub id: ::core::ffi::c_int, pub localized: L }
             pub struct L { pub deviceId: ::core::ffi::c_uchar, pub localityDomainId: ::core::ffi::c_uchar }",
        );
        assert!(
            in_union.contains("unsafe { self . anon_id . id }"),
            "{in_union}"
        );
        assert!(
            in_union.contains("self . anon_id . id = value ;"),
            "{in_union}"
        );
        // The wrong twin: a union with a member that is not plain data (a
        // `bool`) gets the setter only.
        let unsound = generated(
            "pub struct CUmemLocation_st { pub type_: u32, pub anon_id: U }
             pub union U { pub id: ::core::ffi::c_int, pub flag: bool }",
        );
        assert!(unsound.contains("pub fn set_id"), "{unsound}");
        assert!(!unsound.contains("pub fn id"), "{unsound}");
        // Not declared by these headers: nothing.
        assert!(!generated("pub struct other { pub id: i32 }").contains("fn id"));
    }

    #[test]
    fn newtypes_order_and_convert_opaque_handles_copy_function_pointers_do_not_compare() {
        let out = generated(
            "#[repr(transparent)] #[derive(Debug, Copy, Clone, Hash, PartialEq, Eq)] \
             pub struct e_enum(pub ::core::ffi::c_uint);
             #[repr(C)] #[derive(Debug)] pub struct CUctx_st { _unused: [u8; 0] }
             pub type CUhostFn = ::core::option::Option<unsafe extern \"C\" fn(u: *mut ::core::ffi::c_void)>;
             #[derive(Debug, Copy, Clone, Hash, PartialEq, Eq)] pub struct host_st { pub fn_: CUhostFn, pub data: u32 }
             #[derive(Debug, Copy, Clone, Hash, PartialEq, Eq)] pub struct outer_st { pub inner: [host_st; 2] }
             pub use self::host_st as host;
             #[derive(Debug, Copy, Clone, Hash, PartialEq, Eq)] pub struct by_alias_st { pub h: host }
             #[derive(Debug, Copy, Clone, Hash, PartialEq, Eq)] pub struct plain_st { pub a: u32, pub p: *mut host_st }",
        );
        let derive = |name: &str| derives_of(&out, name);
        assert!(
            derive("e_enum").contains("Copy , Clone , Hash , PartialEq , Eq , PartialOrd , Ord"),
            "{out}"
        );
        assert!(derive("CUctx_st").contains("Debug , Copy , Clone"), "{out}");
        // Through the alias, an array, a `use` rename: no comparison.
        for name in ["host_st", "outer_st", "by_alias_st"] {
            assert!(!derive(name).contains("PartialEq"), "{name}: {out}");
            assert!(derive(name).contains("Copy , Clone"), "{name}: {out}");
        }
        // The wrong twin: a raw pointer to such a struct is an address, compared as one.
        assert!(
            derive("plain_st").contains("Hash , PartialEq , Eq"),
            "{out}"
        );
        // `From` both ways, with the newtype's own inner type.
        assert!(
            out.contains("impl :: core :: convert :: From < e_enum > for :: core :: ffi :: c_uint"),
            "{out}"
        );
        assert!(
            out.contains("impl :: core :: convert :: From < :: core :: ffi :: c_uint > for e_enum"),
            "{out}"
        );
        let signed = generated(
            "#[repr(transparent)] #[derive(Copy, Clone)] pub struct s_enum(pub ::core::ffi::c_int);",
        );
        assert!(
            signed.contains("From < s_enum > for :: core :: ffi :: c_int"),
            "{signed}"
        );
        assert!(!signed.contains("c_uint"), "{signed}");
    }
}
