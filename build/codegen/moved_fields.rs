//! Moved fields: a field that moved into an anonymous member of its struct
//! between releases ([`MOVED`]) gets a getter and a setter on every release
//! that has it, direct or not (`ports.rs` adds them).

use super::syn_items::{enum_newtypes, last_ident};
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

/// Where a moved field is: direct, or in the anonymous member `anon` (a
/// union, or a struct), of type `ty`.
pub(super) enum Place {
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
pub(super) fn add_moved_field_accessors(file: &mut syn::File) {
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
pub(super) fn find(file: &syn::File, m: &Moved) -> Option<Place> {
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

pub(super) fn fields_of<'a>(
    fields: impl Iterator<Item = &'a syn::Field>,
) -> Vec<(String, syn::Type)> {
    fields
        .filter_map(|f| Some((f.ident.as_ref()?.to_string(), f.ty.clone())))
        .collect()
}

/// The named fields of the struct `name` (a moved field's parent is a
/// struct: [`MOVED`]).
pub(super) fn named_fields(file: &syn::File, name: &str) -> Option<Vec<(String, syn::Type)>> {
    file.items.iter().find_map(|i| match i {
        syn::Item::Struct(s) if s.ident == name => Some(fields_of(s.fields.iter())),
        _ => None,
    })
}

/// The type name of `parent`'s anonymous member `anon`.
pub(super) fn anon_type(file: &syn::File, parent: &str, anon: &syn::Ident) -> Option<String> {
    let fields = named_fields(file, parent)?;
    let (_, ty) = fields.iter().find(|f| *anon == f.0)?;
    last_ident(ty)
}

/// What each type name of the bindings is, for [`Kinds::plain`].
pub(super) struct Kinds<'a> {
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
