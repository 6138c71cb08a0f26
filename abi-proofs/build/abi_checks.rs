//! Inputs of the ABI tests, generated from the Rust side of the bindings:
//! a table of every bound function with its address (`tests/abi_symbols.rs`)
//! and, for the C compiler, one `_Static_assert` per function holding the Rust
//! declaration's types to the C prototype of its documented name
//! (`tests/abi_signatures.rs`).

use std::collections::BTreeSet;
use std::fmt::Write;

/// `vec![("cuMemAdvise", cuda_mem_sys::cuMemAdvise as usize), ...]`, one
/// entry per function the crate declares.
pub fn function_table(file: &syn::File) -> String {
    let mut out = String::from("vec![\n");
    for f in crate::codegen::foreign_functions(file) {
        writeln!(
            out,
            "    (\"{0}\", cuda_mem_sys::{0} as *const () as usize),",
            f.name
        )
        .unwrap();
    }
    out.push_str("]\n");
    out
}

/// C source asserting, for every function declared in `file`, that the C
/// type of `&name` (after the headers' macros) is the function-pointer type
/// spelled from the Rust parameter and return types. `tags` holds the
/// `struct X`/`union X`/`enum X` tags the headers declare, so that a Rust
/// struct is named as C names it. Returns (source, functions checked,
/// functions whose types could not be spelled in C, with why). `vocabulary`
/// is the whole generated file (which names are typedefs).
pub fn signature_asserts(
    file: &syn::File,
    vocabulary: &syn::File,
    tags: &BTreeSet<String>,
) -> (String, usize, Vec<String>) {
    // Names Rust declares as aliases are C typedef names, never tags.
    let typedefs: BTreeSet<String> = vocabulary
        .items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Type(t) => Some(t.ident.to_string()),
            syn::Item::Use(syn::ItemUse {
                tree: syn::UseTree::Path(p),
                ..
            }) => match &*p.tree {
                syn::UseTree::Rename(r) => Some(r.rename.to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let tags: BTreeSet<String> = tags
        .iter()
        .filter(|t| !typedefs.contains(t.split(' ').nth(1).unwrap_or_default()))
        .cloned()
        .collect();
    let tags = &tags;
    // The headers the bindings read (`wrapper.h`, the one list of them).
    let mut out = format!("{}\n", include_str!("../../wrapper.h"));
    let (mut checked, mut skipped) = (0, vec![]);
    for item in &file.items {
        let syn::Item::ForeignMod(m) = item else {
            continue;
        };
        for fi in &m.items {
            let syn::ForeignItem::Fn(f) = fi else {
                continue;
            };
            let name = f.sig.ident.to_string();
            match fn_pointer_type(&f.sig, tags) {
                Ok(ty) => {
                    writeln!(
                        out,
                        "_Static_assert(__builtin_types_compatible_p(__typeof__(&{name}), {ty}), \"signature of {name}\");"
                    )
                    .unwrap();
                    checked += 1;
                }
                Err(why) => skipped.push(format!("{name}: {why}")),
            }
        }
    }
    (out, checked, skipped)
}

fn fn_pointer_type(sig: &syn::Signature, tags: &BTreeSet<String>) -> Result<String, String> {
    let params = sig
        .inputs
        .iter()
        .map(|a| match a {
            syn::FnArg::Typed(t) => c_decl(&t.ty, "", false, tags),
            syn::FnArg::Receiver(_) => Err("has self".into()),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let params = if params.is_empty() {
        "void".to_string()
    } else {
        params.join(", ")
    };
    match &sig.output {
        syn::ReturnType::Default => Ok(format!("void (*)({params})")),
        syn::ReturnType::Type(_, t) => c_decl(t, &format!("(*)({params})"), false, tags),
    }
}

/// The C declaration of `ty` around the declarator `inner` (empty for a type
/// name); `konst` qualifies the outermost type (a `*const` pointee).
fn c_decl(
    ty: &syn::Type,
    inner: &str,
    konst: bool,
    tags: &BTreeSet<String>,
) -> Result<String, String> {
    let q = if konst { "const " } else { "" };
    match ty {
        syn::Type::Ptr(p) => {
            let inner = if konst {
                format!("(* const {inner})")
            } else {
                format!("(*{inner})")
            };
            c_decl(
                &p.elem,
                &inner,
                matches!(p.mutability, syn::PointerMutability::Const(_)),
                tags,
            )
        }
        syn::Type::Path(p) => {
            let last = p.path.segments.last().ok_or("empty path")?;
            if last.ident == "Option" {
                // Option<unsafe extern "C" fn(..) -> R>: a nullable function pointer.
                let syn::PathArguments::AngleBracketed(a) = &last.arguments else {
                    return Err("Option without argument".into());
                };
                let Some(syn::GenericArgument::Type(syn::Type::FnPtr(f))) = a.args.first() else {
                    return Err("Option of a non-function".into());
                };
                let params = f
                    .inputs
                    .iter()
                    .map(|a| c_decl(&a.ty, "", false, tags))
                    .collect::<Result<Vec<_>, _>>()?;
                let ptr = crate::layout_check::field_types::function_pointer(inner, konst, &params);
                return match &f.output {
                    syn::ReturnType::Default => Ok(format!("void {ptr}")),
                    syn::ReturnType::Type(_, t) => c_decl(t, &ptr, false, tags),
                };
            }
            let name = last.ident.to_string();
            let base = c_name(&name, tags);
            Ok(format!("{q}{base} {inner}").trim_end().to_string())
        }
        syn::Type::Tuple(t) if t.elems.is_empty() => {
            Ok(format!("{q}void {inner}").trim_end().to_string())
        }
        other => Err(format!("no C spelling for {}", quote::quote!(#other))),
    }
}

/// The C spelling of a Rust type name.
fn c_name(name: &str, tags: &BTreeSet<String>) -> String {
    if let Some(primitive) = crate::layout_check::field_types::primitive(name) {
        return primitive.to_string();
    }
    for kind in ["struct", "union", "enum"] {
        let tag = format!("{kind} {name}");
        if tags.contains(&tag) {
            return tag;
        }
    }
    name.to_string()
}

/// `struct X`, `union X`, `enum X` tags declared in preprocessed C text.
pub fn c_tags(preprocessed: &str) -> BTreeSet<String> {
    let mut tags = BTreeSet::new();
    let mut words = preprocessed
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .peekable();
    while let Some(w) = words.next() {
        if matches!(w, "struct" | "union" | "enum") {
            if let Some(name) = words.peek() {
                tags.insert(format!("{w} {name}"));
            }
        }
    }
    tags
}
