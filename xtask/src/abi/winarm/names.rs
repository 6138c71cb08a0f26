//! The names header: every type id and tag the preprocessed headers
//! declare, for the C-side proofs to name (`names_header`), read with the
//! one C tokenizer.

use super::*;

/// `#define LC_ID_x 1` for every identifier of the preprocessed headers and
/// `LC_STRUCT_x`/`LC_UNION_x`/`LC_ENUM_x` for every tag: what
/// `abi-proofs/tests/layout_support`'s `names_header` writes for the tests.
pub(super) fn names_header(preprocessed: &str) -> String {
    let mut words = vec![];
    for line in preprocessed
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
    {
        words.extend(c_tokens(line));
    }
    let mut ids = BTreeSet::new();
    let mut tags = BTreeSet::new();
    for (i, w) in words.iter().enumerate() {
        if w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            ids.insert(w.as_str());
        }
        let kind = match w.as_str() {
            "struct" => "STRUCT",
            "union" => "UNION",
            "enum" => "ENUM",
            _ => continue,
        };
        let mut j = i + 1;
        while let Some(a) = words.get(j) {
            let attribute = [
                "__attribute__",
                "__attribute",
                "__declspec",
                "_Alignas",
                "alignas",
            ]
            .contains(&a.as_str());
            if !attribute {
                break;
            }
            j += 1;
            if words.get(j).map(String::as_str) == Some("(") {
                let mut depth = 0;
                while let Some(t) = words.get(j) {
                    j += 1;
                    match t.as_str() {
                        "(" => depth += 1,
                        ")" => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        if let Some(tag) = words
            .get(j)
            .filter(|t| t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
        {
            tags.insert((kind, tag.as_str()));
        }
    }
    let mut h = String::from("/* Written by cargo xtask abi from the preprocessed headers. */\n");
    for id in ids {
        let _ = writeln!(h, "#define LC_ID_{id} 1");
    }
    for (kind, tag) in tags {
        let _ = writeln!(h, "#define LC_{kind}_{tag} 1");
    }
    h
}

/// Identifiers and punctuation of a line of C (numbers and literals
/// skipped): [`constants::tokens`], spelt as text.
pub(super) fn c_tokens(text: &str) -> Vec<String> {
    constants::tokens(text)
        .into_iter()
        .filter_map(|t| match t {
            constants::Tok::Ident(s) => Some(s),
            constants::Tok::Punct(c) => Some(c.to_string()),
            constants::Tok::Number => None,
        })
        .collect()
}
