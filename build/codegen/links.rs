//! Documentation without NVIDIA's text ([`super::Docs::Links`]): the
//! committed bindings, which the published package carries, say of each item
//! only where NVIDIA's online reference documents it. NVIDIA's header
//! comments are theirs (the notice at the top of `cuda.h` restricts their
//! disclosure); a build that generates its bindings from the user's own
//! headers shows those headers' comments instead ([`super::Docs::Headers`]).
//!
//! The pages are Doxygen's, named from the group ids of the headers'
//! `\defgroup`s, each `_` doubled: group `CUDA_VA` is
//! `cuda-driver-api/group__CUDA__VA.html`. A type, constant or other
//! declaration links its API's data types page (`CUDA_TYPES`, `CUDART_TYPES`).

use super::groups::Group;
use std::collections::BTreeMap;

/// The root of NVIDIA's online CUDA documentation.
pub const REFERENCE: &str = "https://docs.nvidia.com/cuda/";

/// `(folder, name)` of an API's reference: `driver` or `runtime`.
fn reference(api: &str) -> (&'static str, &'static str) {
    if api == "runtime" {
        ("cuda-runtime-api", "CUDA Runtime API")
    } else {
        ("cuda-driver-api", "CUDA Driver API")
    }
}

/// The page of the Doxygen group `id` (`CUDART_MEMORY_POOLS` →
/// `.../cuda-runtime-api/group__CUDART__MEMORY__POOLS.html`).
pub fn group_page(id: &str) -> String {
    let api = if id.starts_with("CUDART") {
        "runtime"
    } else {
        "driver"
    };
    format!(
        "{REFERENCE}{}/group__{}.html",
        reference(api).0,
        id.replace('_', "__")
    )
}

/// The API that declares `name`, from its spelling: the runtime's names begin
/// with `cuda` or `CUDART` (and the runtime's headers declare the few types
/// without a CUDA prefix, `dim3` and the vector types); all others
/// (`CU`, `cu`, `CUDA_`) are the driver's.
pub fn api_of(name: &str) -> &'static str {
    let driver = !name.starts_with("cuda")
        && !name.starts_with("CUDART")
        && (name.starts_with("CU") || name.starts_with("cu"));
    if driver {
        "driver"
    } else {
        "runtime"
    }
}

/// The doc line of a function in group `group` (or in none: its API's index).
fn function_doc(name: &str, group: Option<&Group>) -> String {
    match group {
        Some(g) => {
            let (_, api) = reference(g.api());
            format!(
                " NVIDIA's reference: [{}]({}) ({api}).",
                escape(&g.title),
                group_page(&g.id)
            )
        }
        None => {
            let (folder, api) = reference(api_of(name));
            format!(" NVIDIA's reference: [{api}]({REFERENCE}{folder}/index.html).")
        }
    }
}

/// The doc line of a type, constant or other declaration named `name`.
fn declaration_doc(name: &str) -> String {
    let api = api_of(name);
    let types = if api == "runtime" {
        "CUDART_TYPES"
    } else {
        "CUDA_TYPES"
    };
    format!(
        " NVIDIA's reference: [data types]({}) ({}).",
        group_page(types),
        reference(api).1
    )
}

/// A group module's doc: its title (`title`, as Markdown) and page.
pub fn group_module_doc(g: &Group, title: &str) -> String {
    format!(
        "{title}\n\n NVIDIA's group `{}`: [its reference page]({}) ({}).",
        g.id,
        group_page(&g.id),
        reference(g.api()).1
    )
}

/// Characters that Markdown link text would misread.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '[' | ']' | '*' | '_' | '`' | '\\' | '<' | '>') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Whether `name` is one of bindgen's own helpers (`__BindgenBitfieldUnit`,
/// `__IncompleteArrayField`), which NVIDIA does not document.
fn is_bindgen_helper(name: &str) -> bool {
    name.starts_with("__Bindgen") || name.starts_with("__Incomplete")
}

/// Appends the link line to every declaration of the file: each function
/// (by its group; a documented name that a macro renames by its symbol's
/// group), type, constant and renamed re-export; and the API modules' index.
pub fn add(file: &mut syn::File, groups: &[Group], aliases: &BTreeMap<String, String>) {
    let mut group_of: BTreeMap<&str, &Group> = BTreeMap::new();
    for g in groups {
        for f in g.functions.iter().chain(&g.also_documented) {
            group_of.entry(f.as_str()).or_insert(g);
        }
    }
    let group = |name: &str| {
        group_of
            .get(name)
            .or_else(|| aliases.get(name).and_then(|s| group_of.get(s.as_str())))
            .copied()
    };
    // First (the summary rustdoc lists, and the paragraph a loaded build's
    // function keeps), a paragraph of its own before the generator's notes.
    let push = |attrs: &mut Vec<syn::Attribute>, doc: String| {
        if attrs.iter().any(|a| a.path().is_ident("doc")) {
            attrs.insert(0, syn::parse_quote!(#[doc = ""]));
        }
        attrs.insert(0, syn::parse_quote!(#[doc = #doc]));
    };
    for item in &mut file.items {
        match item {
            syn::Item::ForeignMod(m) => {
                for i in &mut m.items {
                    if let syn::ForeignItem::Fn(f) = i {
                        let name = f.sig.ident.to_string();
                        push(&mut f.attrs, function_doc(&name, group(&name)));
                    }
                }
            }
            syn::Item::Struct(s) if !is_bindgen_helper(&s.ident.to_string()) => {
                push(&mut s.attrs, declaration_doc(&s.ident.to_string()))
            }
            syn::Item::Union(u) => push(&mut u.attrs, declaration_doc(&u.ident.to_string())),
            syn::Item::Type(t) => push(&mut t.attrs, declaration_doc(&t.ident.to_string())),
            syn::Item::Const(c) => push(&mut c.attrs, declaration_doc(&c.ident.to_string())),
            syn::Item::Use(u) => {
                if let syn::UseTree::Path(syn::UsePath { tree, .. }) = &u.tree {
                    if let syn::UseTree::Rename(r) = &**tree {
                        let doc = declaration_doc(&r.rename.to_string());
                        push(&mut u.attrs, doc);
                    }
                }
            }
            syn::Item::Mod(m) if ["driver", "runtime"].contains(&m.ident.to_string().as_str()) => {
                let (folder, api) = reference(&m.ident.to_string());
                // After the module's own summary.
                let doc = format!(" NVIDIA's reference: [{api}]({REFERENCE}{folder}/index.html).");
                m.attrs.push(syn::parse_quote!(#[doc = ""]));
                m.attrs.push(syn::parse_quote!(#[doc = #doc]));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How many doc attributes each struct or module of `file` has.
    fn doc_counts(file: &syn::File) -> Vec<usize> {
        let docs =
            |attrs: &[syn::Attribute]| attrs.iter().filter(|a| a.path().is_ident("doc")).count();
        file.items
            .iter()
            .map(|i| match i {
                syn::Item::Struct(s) => docs(&s.attrs),
                syn::Item::Mod(m) => docs(&m.attrs),
                _ => usize::MAX,
            })
            .collect()
    }

    #[test]
    fn bindgens_own_helpers_get_no_link() {
        let mut file: syn::File = syn::parse_quote! {
            pub struct __BindgenBitfieldUnit<Storage> { storage: Storage }
            pub struct __IncompleteArrayField<T>(::core::marker::PhantomData<T>);
            pub struct CUmemLocation_st { pub id: i32 }
        };
        add(&mut file, &[], &BTreeMap::new());
        assert_eq!(doc_counts(&file), [0, 0, 1]);
        // Only the API modules get their index's link.
        let mut mods: syn::File = syn::parse_quote! { pub mod driver {} pub mod other {} };
        add(&mut mods, &[], &BTreeMap::new());
        assert_eq!(doc_counts(&mods), [2, 0]);
        assert!(is_bindgen_helper("__BindgenUnionField"));
        assert!(!is_bindgen_helper("CUDA_ARRAY_DESCRIPTOR"));
    }

    #[test]
    fn pages_are_doxygens_names() {
        assert_eq!(
            group_page("CUDA_VA"),
            "https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__VA.html"
        );
        assert_eq!(
            group_page("CUDART_MEMORY_POOLS"),
            "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY__POOLS.html"
        );
        assert_eq!(
            group_page("CUDART__VERSION"),
            "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART____VERSION.html"
        );
        // The wrong twin: an id whose underscores are not doubled is another page.
        assert_ne!(
            group_page("CUDA_VA"),
            "https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA_VA.html"
        );
    }

    #[test]
    fn each_name_links_its_apis_types() {
        for (name, api) in [
            ("CUmemAllocationProp", "driver"),
            ("CUDA_SUCCESS", "driver"),
            ("cuuint64_t", "driver"),
            ("cudaMemPoolProps", "runtime"),
            ("CUDART_VERSION", "runtime"),
            ("dim3", "runtime"),
        ] {
            assert_eq!(api_of(name), api, "{name}");
        }
        assert!(declaration_doc("CUresult").contains("cuda-driver-api/group__CUDA__TYPES.html"));
        assert!(
            declaration_doc("cudaError_t").contains("cuda-runtime-api/group__CUDART__TYPES.html")
        );
    }
}
