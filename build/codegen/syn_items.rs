//! The syn helpers several steps of the post-processing read bindgen's items
//! with (`postprocess.rs`, the loader's tables in `loader.rs`, `ports.rs`,
//! `moved_fields.rs`): the foreign functions and their link names, a string
//! literal's text, the enum newtypes, a path type's last name. Below them
//! all, so none imports another for them.

use std::collections::BTreeSet;

/// The functions of the file's `extern "C"` blocks.
pub(super) fn foreign_fns(file: &syn::File) -> impl Iterator<Item = &syn::ForeignItemFn> {
    file.items
        .iter()
        .filter_map(|i| match i {
            syn::Item::ForeignMod(m) => Some(m.items.iter()),
            _ => None,
        })
        .flatten()
        .filter_map(|i| match i {
            syn::ForeignItem::Fn(f) => Some(f),
            _ => None,
        })
}

/// A function declared in an `extern "C"` block: its Rust name and the symbol it links.
pub struct ForeignFn {
    pub name: String,
    pub symbol: String,
}

pub fn foreign_functions(file: &syn::File) -> Vec<ForeignFn> {
    foreign_fns(file)
        .map(|f| {
            let name = f.sig.ident.to_string();
            let symbol = link_name(&f.attrs).unwrap_or_else(|| name.clone());
            ForeignFn { name, symbol }
        })
        .collect()
}

/// The C enums' newtypes: `#[repr(transparent)] struct T(pub c_uint);`.
pub(super) fn enum_newtypes(file: &syn::File) -> BTreeSet<String> {
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

/// The last segment of a path type (`crate::x::CUmemLocation` →
/// `CUmemLocation`); `None` for any other type.
pub(super) fn last_ident(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => Some(p.path.segments.last()?.ident.to_string()),
        _ => None,
    }
}

/// The `#[link_name = "..."]` of an item, if any.
pub fn link_name(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("link_name") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// `s.value()`: the text of a string literal, its escapes read with the
/// standard library's (optimised) searches where they are the simple ones
/// bindgen and `LitStr::new` write; syn's own reading (per character, and
/// unoptimised in the build script) otherwise. Every doc comment is read so.
pub(super) fn lit_value(s: &syn::LitStr) -> String {
    simple_unescape(&s.token().to_string()).unwrap_or_else(|| s.value())
}

/// The text of `repr`, a `"..."` literal whose escapes are all `\n`, `\t`,
/// `\r`, `\\`, `\"`, `\'` or `\0`; `None` for any other literal.
fn simple_unescape(repr: &str) -> Option<String> {
    let mut rest = repr.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::with_capacity(rest.len());
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        out.push(match rest.as_bytes().get(i + 1)? {
            b'n' => '\n',
            b't' => '\t',
            b'r' => '\r',
            b'\\' => '\\',
            b'"' => '"',
            b'\'' => '\'',
            b'0' => '\0',
            _ => return None,
        });
        rest = &rest[i + 2..];
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::lit_value;

    #[test]
    fn reads_literals_as_syn_does() {
        for text in [
            "",
            " plain",
            " two\nlines\n \n `code` \\param[in] \"quoted\" it's\ttab\r",
            "\\",
            "\\n is not a newline",
            "nul \0 and unicode: \u{e9}t\u{e9} \u{7f} \u{1F600}",
        ] {
            let lit = syn::LitStr::new(text, proc_macro2::Span::call_site());
            assert_eq!(lit_value(&lit), lit.value(), "{text:?}");
            assert_eq!(lit_value(&lit), text);
        }
        // Escapes it does not read itself go to syn: a raw string, `\x`, `\u{}`.
        for repr in [r###"r#"raw \n"#"###, r#""\x41\u{42}""#, "\"a\\\n   b\""] {
            let lit: syn::LitStr = syn::parse_str(repr).unwrap();
            assert_eq!(lit_value(&lit), lit.value(), "{repr}");
        }
        // The wrong case: a reading that took `\\n` for a newline would differ.
        let lit = syn::LitStr::new("a\\nb", proc_macro2::Span::call_site());
        assert_ne!(lit_value(&lit), "a\nb");
    }
}
