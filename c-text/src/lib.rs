//! C text as the ABI proofs read it: a tokenizer ([`tokens`]: identifiers,
//! punctuation and numbers, literals skipped) and the constants the CUDA
//! headers define ([`c_constants`]: every enumerator of every enum, and the
//! object-like macros with a value), from the preprocessor's `-dD` output.
//!
//! One reading for every proof that needs it: `abi-proofs/tests/abi_constants.rs`
//! (the constants bound by name, newtype and associated constant, their values
//! asserted by the C compiler), `abi-proofs/tests/layout_support/` (the
//! bad-input fixture's tags) and `cargo xtask abi --target
//! aarch64-pc-windows-msvc` (`xtask/src/abi/winarm/`). No dependencies.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// A token of C text.
#[derive(PartialEq, Debug)]
pub enum Tok {
    Ident(String),
    Punct(char),
    Number,
}

/// Identifiers, punctuation and numbers of C text (string and character literals skipped).
pub fn tokens(text: &str) -> Vec<Tok> {
    let b = text.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(text[start..i].to_string()));
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                i += 1;
            }
            out.push(Tok::Number);
        } else if c == b'"' || c == b'\'' {
            i += 1;
            while i < b.len() && b[i] != c {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else {
            if !c.is_ascii_whitespace() {
                out.push(Tok::Punct(c as char));
            }
            i += 1;
        }
    }
    out
}

/// A constant the headers define.
#[derive(Debug)]
pub struct CConstant {
    pub name: String,
    /// `enumerator of enum X` or `#define NAME body`.
    pub origin: String,
    /// The enum's tag and typedef names (an enumerator's).
    pub enum_names: Vec<String>,
}

/// The enumerators and constant macros of the CUDA headers in `-dD` output.
pub fn c_constants(text: &str, dirs: &[PathBuf]) -> Vec<CConstant> {
    let mut from_cuda = false;
    let mut code = String::new();
    let mut macros: BTreeMap<String, String> = BTreeMap::new();
    for line in text.lines() {
        if let Some(path) = line.strip_prefix("# ").and_then(|r| r.split('"').nth(1)) {
            from_cuda = dirs.iter().any(|d| path.starts_with(&*d.to_string_lossy()));
        } else if let Some(def) = line.strip_prefix("#define ") {
            let end = def
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(def.len());
            let (name, rest) = def.split_at(end);
            if from_cuda && !rest.starts_with('(') {
                macros.insert(name.to_string(), rest.trim().to_string());
            } else {
                macros.remove(name);
            }
        } else if let Some(name) = line.strip_prefix("#undef ") {
            macros.remove(name.trim());
        } else if from_cuda && !line.starts_with('#') {
            code.push_str(line);
            code.push('\n');
        }
    }
    let mut out = enumerators(&tokens(&code));
    let mut known: BTreeSet<String> = out.iter().map(|c| c.name.clone()).collect();
    // Object-like macros with a value: a number in them, or a constant's
    // name (until no more are found). Reserved names and empty bodies are
    // the headers' own machinery; function renames hold neither.
    let candidates: Vec<(&String, &String)> = macros
        .iter()
        .filter(|(n, b)| !n.starts_with('_') && !b.is_empty())
        .collect();
    let mut constant: BTreeSet<&str> = BTreeSet::new();
    loop {
        let before = constant.len();
        for (name, body) in &candidates {
            let valued = tokens(body).iter().any(|t| match t {
                Tok::Number => true,
                Tok::Ident(i) => known.contains(i) || constant.contains(i.as_str()),
                _ => false,
            });
            if valued {
                constant.insert(name.as_str());
            }
        }
        if constant.len() == before {
            break;
        }
    }
    for (name, body) in candidates {
        if constant.contains(name.as_str()) && known.insert(name.clone()) {
            out.push(CConstant {
                name: name.clone(),
                origin: format!("#define {name} {body}"),
                enum_names: vec![],
            });
        }
    }
    out
}

/// Skips `__attribute__((...))`-like groups from `j`; returns the next index.
fn skip_attributes(t: &[Tok], mut j: usize) -> usize {
    while let Some(Tok::Ident(w)) = t.get(j) {
        if !["__attribute__", "__attribute", "__declspec", "_Alignas"].contains(&w.as_str()) {
            break;
        }
        j += 1;
        let mut depth = 0;
        while let Some(tok) = t.get(j) {
            j += 1;
            match tok {
                Tok::Punct('(') => depth += 1,
                Tok::Punct(')') => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    j
}

/// Every enumerator of every enum definition, with its enum's names.
fn enumerators(t: &[Tok]) -> Vec<CConstant> {
    let mut out = vec![];
    let mut i = 0;
    while i < t.len() {
        if t[i] != Tok::Ident("enum".into()) {
            i += 1;
            continue;
        }
        let typedef = i > 0 && t[i - 1] == Tok::Ident("typedef".into());
        let mut j = skip_attributes(t, i + 1);
        let tag = match t.get(j) {
            Some(Tok::Ident(n)) => {
                j += 1;
                Some(n.clone())
            }
            _ => None,
        };
        if t.get(j) != Some(&Tok::Punct('{')) {
            i = j.max(i + 1);
            continue;
        }
        j += 1;
        let mut names = vec![];
        let mut depth = 0;
        let mut expect_name = true;
        while let Some(tok) = t.get(j) {
            j += 1;
            match tok {
                Tok::Punct('}') if depth == 0 => break,
                Tok::Punct('(') => depth += 1,
                Tok::Punct(')') => depth -= 1,
                Tok::Punct(',') if depth == 0 => expect_name = true,
                Tok::Ident(n) if expect_name => {
                    names.push(n.clone());
                    expect_name = false;
                }
                _ => {}
            }
        }
        let mut enum_names: Vec<String> = tag.iter().cloned().collect();
        if typedef {
            if let Some(Tok::Ident(n)) = t.get(skip_attributes(t, j)) {
                enum_names.push(n.clone());
            }
        }
        let what = enum_names
            .first()
            .cloned()
            .unwrap_or_else(|| "(anonymous)".into());
        for n in names {
            out.push(CConstant {
                name: n,
                origin: format!("enumerator of enum {what}"),
                enum_names: enum_names.clone(),
            });
        }
        i = j;
    }
    out
}
