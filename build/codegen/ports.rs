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
//!   releases ([`MOVED`]) gets a getter and a setter (`loc.id()`,
//!   `loc.set_id(3)`) on every release that has it, direct or not: the same
//!   source compiles everywhere, with no `unsafe` at the call site and no
//!   `unused_unsafe` warning where the field is direct.

use std::collections::{BTreeMap, BTreeSet};

/// A field that moved into an anonymous member of its struct.
pub struct Moved {
    /// The struct as bindgen names it (the C tag).
    pub parent: &'static str,
    pub field: &'static str,
    /// The release whose headers first put it in an anonymous member.
    pub since: &'static str,
}

/// The fields that moved, found by comparing each field's place (direct, or
/// in an anonymous member) in the structs of 12.0, 12.9 and 13.0 to 13.5:
/// these three, and no field moved back.
pub const MOVED: [Moved; 3] = [
    Moved {
        parent: "CUmemLocation_st",
        field: "id",
        since: "13.2",
    },
    Moved {
        parent: "cudaMemLocation",
        field: "id",
        since: "13.3",
    },
    Moved {
        parent: "cudaKernelNodeParamsV2",
        field: "func",
        since: "13.2",
    },
];

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

/// The C enums' newtypes: `#[repr(transparent)] struct T(pub c_uint);`.
fn enum_newtypes(file: &syn::File) -> BTreeSet<String> {
    file.items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Struct(s)
                if matches!(&s.fields, syn::Fields::Unnamed(f) if f.unnamed.len() == 1)
                    && s.attrs.iter().any(|a| {
                        a.path().is_ident("repr")
                            && a.meta
                                .require_list()
                                .is_ok_and(|l| l.tokens.to_string() == "transparent")
                    }) =>
            {
                Some(s.ident.to_string())
            }
            _ => None,
        })
        .collect()
}

fn last_ident(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => Some(p.path.segments.last()?.ident.to_string()),
        _ => None,
    }
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

/// Where a moved field is: direct, or in the anonymous member `anon` (a
/// union, or a struct), of type `ty`.
enum Place {
    Direct(syn::Type),
    In {
        anon: syn::Ident,
        union: bool,
        ty: syn::Type,
    },
}

/// A getter and a setter for each field of [`MOVED`] the bindings have.
///
/// Reading a union member is `unsafe` in Rust because the bytes may not be a
/// valid value of its type. The getter reads a member of a union only if
/// every member of that union is plain data (integers, raw pointers, enum
/// newtypes, and structs and arrays of them: [`plain`]), so that whatever was
/// written through one member reads as a valid value of another. Where a
/// release's union holds anything else, no getter is generated and code
/// calling it does not compile, rather than reading what may be invalid.
fn add_moved_field_accessors(file: &mut syn::File) {
    let kinds = Kinds::of(file);
    let mut impls = vec![];
    for m in &MOVED {
        let Some(place) = find(file, m) else { continue };
        let field = syn::Ident::new(m.field, proc_macro2::Span::call_site());
        let setter = syn::Ident::new(&format!("set_{}", m.field), field.span());
        let parent = syn::Ident::new(m.parent, field.span());
        let where_ = match &place {
            Place::Direct(_) => format!(
                "a direct field in these headers; in an anonymous member from CUDA {}",
                m.since
            ),
            Place::In { anon, .. } => {
                format!(
                    "in the anonymous member `{anon}` from CUDA {} (these headers)",
                    m.since
                )
            }
        };
        let mut get_doc = format!(
            " `{}` ({where_}): the same call on every release, without `unsafe`.",
            m.field
        );
        let set_doc = format!(" Writes `{}` ({where_}).", m.field);
        let (ty, get, set): (&syn::Type, syn::Expr, syn::Expr) = match &place {
            Place::Direct(ty) => (
                ty,
                syn::parse_quote!(self.#field),
                syn::parse_quote!(self.#field = value),
            ),
            Place::In {
                anon,
                union: false,
                ty,
            } => (
                ty,
                syn::parse_quote!(self.#anon.#field),
                syn::parse_quote!(self.#anon.#field = value),
            ),
            Place::In {
                anon,
                union: true,
                ty,
            } => {
                let set = syn::parse_quote!(self.#anon.#field = value);
                let union_ty = anon_type(file, m.parent, anon);
                if !union_ty.as_deref().is_some_and(|u| kinds.all_plain(u)) {
                    // Not provably sound: the setter alone.
                    impls.push(syn::parse_quote! {
                        impl #parent {
                            #[doc = #set_doc]
                            #[inline]
                            pub fn #setter(&mut self, value: #ty) { #set; }
                        }
                    });
                    continue;
                }
                // The reason it is sound, where rustdoc shows it (a comment
                // would not reach the generated text).
                let note = format!(
                    "\n\n Reading the union is sound: every member of `{anon}` is plain data \
                     (integers, raw pointers, enum newtypes, structs and arrays of them), so \
                     whatever bytes one member wrote are a valid value of another. (A union \
                     literal naming a smaller member leaves the other bytes uninitialised; \
                     `Default`, `zeroed` and the setter write them all.)"
                );
                get_doc.push_str(&note);
                (ty, syn::parse_quote!(unsafe { self.#anon.#field }), set)
            }
        };
        impls.push(syn::parse_quote! {
            impl #parent {
                #[doc = #get_doc]
                #[inline]
                pub fn #field(&self) -> #ty { #get }
                #[doc = #set_doc]
                #[inline]
                pub fn #setter(&mut self, value: #ty) { #set; }
            }
        });
    }
    file.items.extend(impls);
}

/// Where `m.field` is in `m.parent`, if the bindings declare both.
fn find(file: &syn::File, m: &Moved) -> Option<Place> {
    let fields = named_fields(file, m.parent)?;
    if let Some(f) = fields.iter().find(|f| f.0 == m.field) {
        return Some(Place::Direct(f.1.clone()));
    }
    for (name, ty) in fields.iter().filter(|f| f.0.starts_with("anon_")) {
        let ty_name = last_ident(ty)?;
        let (union, inner) = file.items.iter().find_map(|i| match i {
            syn::Item::Union(u) if u.ident == ty_name => {
                Some((true, fields_of(u.fields.named.iter())))
            }
            syn::Item::Struct(s) if s.ident == ty_name => Some((false, fields_of(s.fields.iter()))),
            _ => None,
        })?;
        if let Some(f) = inner.iter().find(|f| f.0 == m.field) {
            return Some(Place::In {
                anon: syn::Ident::new(name, proc_macro2::Span::call_site()),
                union,
                ty: f.1.clone(),
            });
        }
    }
    None
}

fn fields_of<'a>(fields: impl Iterator<Item = &'a syn::Field>) -> Vec<(String, syn::Type)> {
    fields
        .filter_map(|f| Some((f.ident.as_ref()?.to_string(), f.ty.clone())))
        .collect()
}

/// The named fields of the struct `name` (a moved field's parent is a
/// struct: [`MOVED`]).
fn named_fields(file: &syn::File, name: &str) -> Option<Vec<(String, syn::Type)>> {
    file.items.iter().find_map(|i| match i {
        syn::Item::Struct(s) if s.ident == name => Some(fields_of(s.fields.iter())),
        _ => None,
    })
}

/// The type name of `parent`'s anonymous member `anon`.
fn anon_type(file: &syn::File, parent: &str, anon: &syn::Ident) -> Option<String> {
    let fields = named_fields(file, parent)?;
    let (_, ty) = fields.iter().find(|f| *anon == f.0)?;
    last_ident(ty)
}

/// What each type name of the bindings is, for [`Kinds::plain`].
struct Kinds<'a> {
    aliases: BTreeMap<String, &'a syn::Type>,
    records: BTreeMap<String, (bool, Vec<&'a syn::Type>)>,
    newtypes: BTreeSet<String>,
}

impl<'a> Kinds<'a> {
    fn of(file: &'a syn::File) -> Self {
        let mut k = Kinds {
            aliases: BTreeMap::new(),
            records: BTreeMap::new(),
            newtypes: enum_newtypes(file),
        };
        for item in &file.items {
            match item {
                syn::Item::Type(t) => {
                    k.aliases.insert(t.ident.to_string(), &t.ty);
                }
                syn::Item::Struct(s) => {
                    let tys = s.fields.iter().map(|f| &f.ty).collect();
                    k.records.insert(s.ident.to_string(), (false, tys));
                }
                syn::Item::Union(u) => {
                    let tys = u.fields.named.iter().map(|f| &f.ty).collect();
                    k.records.insert(u.ident.to_string(), (true, tys));
                }
                _ => {}
            }
        }
        k
    }

    /// Whether every member of the union `name` is [`plain`](Self::plain).
    fn all_plain(&self, name: &str) -> bool {
        self.records
            .get(name)
            .is_some_and(|(_, tys)| tys.iter().all(|t| self.plain(t, 0)))
    }

    /// Every bit pattern of its size is a valid value: integers, raw
    /// pointers, enum newtypes, and arrays and structs of them (not unions,
    /// references, floats' cousins `bool`/`char`, or function pointers).
    fn plain(&self, ty: &syn::Type, depth: u32) -> bool {
        if depth > 16 {
            return false;
        }
        match ty {
            syn::Type::Ptr(_) => true,
            syn::Type::Array(a) => self.plain(&a.elem, depth + 1),
            syn::Type::Path(p) => {
                let Some(name) = p.path.segments.last().map(|s| s.ident.to_string()) else {
                    return false;
                };
                if super::INTEGERS.contains(&name.as_str()) || self.newtypes.contains(&name) {
                    return true;
                }
                if let Some(t) = self.aliases.get(&name) {
                    return self.plain(t, depth + 1);
                }
                match self.records.get(&name) {
                    Some((false, tys)) => tys.iter().all(|t| self.plain(t, depth + 1)),
                    _ => false,
                }
            }
            _ => false,
        }
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
