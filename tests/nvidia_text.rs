//! The published package carries none of NVIDIA's text: the committed
//! bindings (`src/generated/*.rs`, which docs.rs shows) document each item by
//! a line of ours linking NVIDIA's online reference, and no file of the
//! package (`cargo package --list`) holds a phrase of NVIDIA's header comments.
//!
//! NVIDIA's text is taken as every comment of the pinned release's `cuda.h`,
//! `cuda_runtime_api.h` and `driver_types.h` (the licence notice included),
//! cut into sentences; a phrase is any 8 consecutive words of one, compared
//! as lowercase words (so Doxygen's `::name` found as rustdoc's
//! ``[`name`](crate::name)`` still matches), where most of the 8 are
//! lowercase words (prose, not a list of identifiers that declarations share).
use test_support as abi_support;

use libtest_mimic::{Completion, Failed};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const PINNED_VERSION: &str = "#define CUDA_VERSION 13000";
const HEADERS: [&str; 3] = ["cuda.h", "cuda_runtime_api.h", "driver_types.h"];
const PHRASE: usize = 8;
const REFERENCE: &str = "https://docs.nvidia.com/cuda/";

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The pinned release's include folder: the headers this build used, where
/// they are 13.0, else `cargo xtask headers 13.0`'s cache; or why none.
fn pinned_headers() -> Result<PathBuf, String> {
    let mut candidates: Vec<PathBuf> = abi_support::include_dirs().unwrap_or_default();
    candidates.push(crate_dir().join("target/cuda-headers/13.0/nvidia/cu13/include"));
    candidates
        .into_iter()
        .find(|d| {
            std::fs::read_to_string(d.join("cuda.h")).is_ok_and(|t| t.contains(PINNED_VERSION))
                && HEADERS.iter().all(|h| d.join(h).is_file())
        })
        .ok_or_else(|| {
            "no CUDA 13.0 headers to take NVIDIA's text from: run `cargo xtask headers 13.0` \
             (or build with CUDA_MEM_SYS_INCLUDE_DIR at 13.0 headers)"
                .to_string()
        })
}

/// The comments of a C source, in order (string literals skipped).
fn c_comments(c: &str) -> Vec<String> {
    let b = c.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        if c[i..].starts_with("/*") {
            let end = c[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e);
            out.push(c[i + 2..end].to_string());
            i = end + 2;
        } else if c[i..].starts_with("//") {
            let end = c[i..].find('\n').map_or(b.len(), |e| i + e);
            out.push(c[i + 2..end].to_string());
            i = end;
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else {
            i += 1;
        }
    }
    out
}

/// A comment's sentences: its lines joined (each without its leading `*`),
/// cut at sentence ends, blank lines and Doxygen commands (`\param` ...).
fn sentences(comment: &str) -> Vec<String> {
    let mut out = vec![];
    let mut current = String::new();
    let mut flush = |current: &mut String| {
        if !current.trim().is_empty() {
            out.push(std::mem::take(current));
        }
        current.clear();
    };
    for line in comment.lines() {
        let line = line
            .trim()
            .trim_start_matches('*')
            .trim_start_matches('<')
            .trim();
        if line.is_empty() || line.starts_with('\\') || line.starts_with('@') {
            flush(&mut current);
        }
        let mut rest = line;
        while let Some(i) = rest.find(['.', ';', ':', '!', '?']) {
            let end = rest[i + 1..].chars().next();
            // `::name` and `1.5` are not sentence ends.
            if end.map_or(true, char::is_whitespace) && !rest[..i].ends_with(':') {
                current.push_str(&rest[..i]);
                flush(&mut current);
                rest = &rest[i + 1..];
            } else {
                current.push_str(&rest[..i + 1]);
                rest = &rest[i + 1..];
            }
        }
        current.push_str(rest);
        current.push(' ');
    }
    flush(&mut current);
    out
}

/// The words of a text (runs of letters, digits and `_`), lowercased, each
/// with whether it was a lowercase word (prose) as written.
fn words(text: &str) -> Vec<(String, bool)> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(|w| {
            let prose = w.chars().all(|c| c.is_ascii_lowercase());
            (w.to_lowercase(), prose)
        })
        .collect()
}

fn key(window: &[(String, bool)]) -> String {
    window
        .iter()
        .map(|(w, _)| w.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// NVIDIA's phrases: 8-word windows of the headers' sentences, mostly prose,
/// each with the sentence it comes from.
struct Corpus {
    phrases: HashMap<String, String>,
    sentences: Vec<String>,
}

enum Missing {
    /// No pinned headers here (the tests report themselves ignored).
    Headers(String),
    /// Headers without the comments expected.
    Text(String),
}

/// The corpus of the pinned headers, read once for all the tests.
fn nvidia_text() -> Result<&'static Corpus, Missing> {
    static CORPUS: OnceLock<Result<Corpus, Missing>> = OnceLock::new();
    let read = || {
        let dir = pinned_headers().map_err(Missing::Headers)?;
        corpus(&dir).map_err(Missing::Text)
    };
    match CORPUS.get_or_init(read) {
        Ok(c) => Ok(c),
        Err(Missing::Headers(w)) => Err(Missing::Headers(w.clone())),
        Err(Missing::Text(w)) => Err(Missing::Text(w.clone())),
    }
}

fn corpus(include: &Path) -> Result<Corpus, String> {
    let mut phrases = HashMap::new();
    let mut all = vec![];
    for h in HEADERS {
        let path = include.join(h);
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        for comment in c_comments(&text) {
            for s in sentences(&comment) {
                let w = words(&s);
                if w.len() < PHRASE {
                    continue;
                }
                for window in w.windows(PHRASE) {
                    if window.iter().filter(|(_, prose)| *prose).count() > PHRASE / 2 {
                        phrases
                            .entry(key(window))
                            .or_insert_with(|| s.trim().to_string());
                    }
                }
                all.push(s.trim().to_string());
            }
        }
    }
    if phrases.len() < 10_000 {
        return Err(format!(
            "only {} phrases read from {}: the headers' comments were not found",
            phrases.len(),
            include.display()
        ));
    }
    Ok(Corpus {
        phrases,
        sentences: all,
    })
}

/// NVIDIA's sentences found in `text` (named `what`), at most a few.
fn found_in(corpus: &Corpus, what: &str, text: &str) -> Vec<String> {
    let mut found = vec![];
    let mut seen = HashSet::new();
    for window in words(text).windows(PHRASE) {
        if let Some(s) = corpus.phrases.get(&key(window)) {
            if seen.insert(s.clone()) && found.len() < 3 {
                found.push(format!("{what}: {s:?}"));
            }
        }
    }
    found
}

/// Every string literal of a Rust file, doc comments and the loader's
/// `call!` docs (inside macro invocations) included, joined by lines.
fn rust_strings(rust: &str) -> Result<String, String> {
    use syn::visit_mut::VisitMut;
    struct Strings(String);
    impl VisitMut for Strings {
        fn visit_lit_str_mut(&mut self, l: &mut syn::LitStr) {
            self.0.push_str(&l.value());
            self.0.push('\n');
        }
        fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
            // The tokens' literals, wherever they sit.
            let text = m.tokens.to_string();
            let mut rest = text.as_str();
            while let Some(i) = rest.find('"') {
                let tail = &rest[i..];
                let end = (1..tail.len())
                    .find(|&j| tail.as_bytes()[j] == b'"' && tail.as_bytes()[j - 1] != b'\\')
                    .map_or(tail.len(), |j| j + 1);
                if let Ok(mut l) = syn::parse_str::<syn::LitStr>(&tail[..end]) {
                    self.visit_lit_str_mut(&mut l);
                }
                rest = &tail[end..];
            }
        }
    }
    let mut file = syn::parse_file(rust).map_err(|e| e.to_string())?;
    let mut s = Strings(String::new());
    s.visit_file_mut(&mut file);
    Ok(s.0)
}

/// The committed bindings, by file name.
fn committed() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "src/generated/cuda-13.0.rs",
            include_str!("../src/generated/cuda-13.0.rs"),
        ),
        (
            "src/generated/cuda-13.0-ptds.rs",
            include_str!("../src/generated/cuda-13.0-ptds.rs"),
        ),
    ]
}

fn docs_of(attrs: &[syn::Attribute]) -> String {
    let mut text = String::new();
    for a in attrs {
        if let syn::Meta::NameValue(nv) = &a.meta {
            if let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
            {
                if nv.path.is_ident("doc") {
                    text.push_str(&s.value());
                    text.push('\n');
                }
            }
        }
    }
    text
}

/// The NVIDIA page a doc links, if exactly the form the generator writes.
fn page(doc: &str) -> Option<&str> {
    let at = doc.find(REFERENCE)?;
    let rest = &doc[at..];
    let url = &rest[..rest.find(')')?];
    let name = url
        .strip_prefix(REFERENCE)?
        .strip_prefix("cuda-driver-api/")
        .or_else(|| {
            url.strip_prefix(REFERENCE)?
                .strip_prefix("cuda-runtime-api/")
        })?;
    let ok = name == "index.html"
        || name
            .strip_prefix("group__")
            .and_then(|n| n.strip_suffix(".html"))
            .is_some_and(|n| {
                !n.is_empty()
                    && n.chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            });
    ok.then_some(url)
}

/// Each public item of a committed file links NVIDIA's reference, and each
/// function re-exported by a group module links that module's page. Returns
/// the problems (at most a few) and the number of items checked.
fn links_of(rust: &str) -> Result<(Vec<String>, usize), String> {
    let file = syn::parse_file(rust).map_err(|e| e.to_string())?;
    let mut problems = vec![];
    let mut fn_pages: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut checked = 0;
    let mut check = |name: String, doc: String, problems: &mut Vec<String>| {
        checked += 1;
        let p = page(&doc).map(str::to_string);
        if p.is_none() {
            problems.push(format!(
                "{name} links no page of NVIDIA's reference: {doc:?}"
            ));
        }
        p
    };
    let mut modules = vec![];
    for item in &file.items {
        match item {
            syn::Item::ForeignMod(m) => {
                for i in &m.items {
                    if let syn::ForeignItem::Fn(f) = i {
                        let name = f.sig.ident.to_string();
                        let p = check(name.clone(), docs_of(&f.attrs), &mut problems);
                        fn_pages.insert(name, p);
                    }
                }
            }
            syn::Item::Struct(s) if !s.ident.to_string().starts_with("__") => {
                check(s.ident.to_string(), docs_of(&s.attrs), &mut problems);
            }
            syn::Item::Union(u) => {
                check(u.ident.to_string(), docs_of(&u.attrs), &mut problems);
            }
            syn::Item::Type(t) => {
                check(t.ident.to_string(), docs_of(&t.attrs), &mut problems);
            }
            syn::Item::Const(c) => {
                check(c.ident.to_string(), docs_of(&c.attrs), &mut problems);
            }
            syn::Item::Use(u) if matches!(u.vis, syn::Visibility::Public(_)) => {
                check(use_name(&u.tree), docs_of(&u.attrs), &mut problems);
            }
            // The API modules (`loader_table`, the loader's, is the crate's own).
            syn::Item::Mod(m) if m.ident == "driver" || m.ident == "runtime" => {
                check(m.ident.to_string(), docs_of(&m.attrs), &mut problems);
                for g in m.content.iter().flat_map(|(_, items)| items) {
                    if let syn::Item::Mod(g) = g {
                        modules.push(g.clone());
                    }
                }
            }
            _ => {}
        }
    }
    for g in &modules {
        let name = format!("module {}", g.ident);
        let Some(module_page) = check(name.clone(), docs_of(&g.attrs), &mut problems) else {
            continue;
        };
        for item in g.content.iter().flat_map(|(_, items)| items) {
            let syn::Item::Use(u) = item else { continue };
            let syn::UseTree::Path(p) = &u.tree else {
                continue;
            };
            let syn::UseTree::Group(names) = &*p.tree else {
                continue;
            };
            for n in &names.items {
                let syn::UseTree::Name(n) = n else { continue };
                let f = n.ident.to_string();
                match fn_pages.get(&f) {
                    Some(Some(p)) if p == &module_page => {}
                    other => problems.push(format!(
                        "{f}, re-exported by {name} ({module_page}), links {other:?}"
                    )),
                }
            }
        }
    }
    problems.truncate(5);
    Ok((problems, checked))
}

/// A `use` tree's last name (`pub use self::X_enum as X` → `X`).
fn use_name(tree: &syn::UseTree) -> String {
    match tree {
        syn::UseTree::Path(p) => use_name(&p.tree),
        syn::UseTree::Rename(r) => r.rename.to_string(),
        syn::UseTree::Name(n) => n.ident.to_string(),
        _ => "a re-export".into(),
    }
}

fn committed_bindings_carry_no_nvidia_text() -> Result<Completion, Failed> {
    let corpus = match nvidia_text() {
        Ok(c) => c,
        Err(Missing::Headers(why)) => return Ok(Completion::ignored_with(why)),
        Err(Missing::Text(e)) => return Err(e.into()),
    };
    let mut found = vec![];
    for (name, rust) in committed() {
        found.extend(found_in(corpus, name, &rust_strings(rust)?));
    }
    none_found(
        "the committed bindings carry NVIDIA's text (run `cargo xtask regen`)",
        &found,
    )
}

/// Completed where nothing was found; else `what`, then each place found on a
/// line of its own.
fn none_found(what: &str, found: &[String]) -> Result<Completion, Failed> {
    if found.is_empty() {
        return Ok(Completion::Completed);
    }
    Err(format!("{what}:\n {}", found.join("\n ")).into())
}

/// Needs no headers: every item links, each function its group module's page;
/// the wrong twins (a link removed, a function sent to another group's page)
/// are caught.
fn each_committed_item_links_nvidias_reference() -> Result<Completion, Failed> {
    for (name, rust) in committed() {
        let (problems, checked) = links_of(rust)?;
        if !problems.is_empty() {
            return Err(format!("{name}:\n {}", problems.join("\n ")).into());
        }
        if checked < 3000 {
            return Err(format!("{name}: only {checked} items found").into());
        }
    }
    // The wrong twins: one link removed, one pointing at another group.
    let (_, rust) = committed()[0];
    let at = rust
        .find("/// NVIDIA's reference: [data types]")
        .ok_or("the committed file has no data types link")?;
    let line_end = at + rust[at..].find('\n').unwrap();
    let unlinked = format!("{}{}", &rust[..at], &rust[line_end + 1..]);
    if links_of(&unlinked)?.0.is_empty() {
        return Err("an item without its link went unnoticed".into());
    }
    let va = "/// NVIDIA's reference: [Virtual Memory Management](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__VA.html)";
    let moved = rust.replacen(
        va,
        "/// NVIDIA's reference: [Virtual Memory Management](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html)",
        1,
    );
    if moved == rust {
        return Err("the committed file has no Virtual Memory Management link".into());
    }
    if links_of(&moved)?.0.is_empty() {
        return Err("a function linking another group's page went unnoticed".into());
    }
    Ok(Completion::Completed)
}

/// The files `cargo package --list` names, with their text (cargo's own
/// `Cargo.toml`, `Cargo.lock` and `.cargo_vcs_info.json` are read as the
/// sources they are made from, or skipped).
fn packaged_files() -> Result<Vec<(String, String)>, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "package",
            "--list",
            "--allow-dirty",
            "--offline",
            "-p",
            "cuda-mem-sys",
        ])
        .current_dir(crate_dir())
        .output()
        .map_err(|e| format!("running cargo package --list: {e}"))?;
    let out = abi_support::succeeded(out, "cargo package --list")?;
    let mut files = vec![];
    for name in String::from_utf8_lossy(&out.stdout).lines() {
        let source = match name {
            ".cargo_vcs_info.json" | "Cargo.toml" => continue,
            "Cargo.toml.orig" => "Cargo.toml",
            n => n,
        };
        let path = crate_dir().join(source);
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        files.push((
            name.to_string(),
            String::from_utf8_lossy(&bytes).into_owned(),
        ));
    }
    if !files.iter().any(|(n, _)| n == "src/lib.rs") {
        return Err(format!("the package list names no src/lib.rs: {files:?}"));
    }
    Ok(files)
}

/// NVIDIA's sentences found in the package's files: the committed bindings'
/// strings, every other file's whole text.
fn found_in_package(corpus: &Corpus, files: &[(String, String)]) -> Result<Vec<String>, String> {
    let mut found = vec![];
    for (name, text) in files {
        let text = if name.starts_with("src/generated/") && name.ends_with(".rs") {
            rust_strings(text)?
        } else {
            text.clone()
        };
        found.extend(found_in(corpus, name, &text));
    }
    Ok(found)
}

fn no_packaged_file_carries_nvidia_text() -> Result<Completion, Failed> {
    let corpus = match nvidia_text() {
        Ok(c) => c,
        Err(Missing::Headers(why)) => return Ok(Completion::ignored_with(why)),
        Err(Missing::Text(e)) => return Err(e.into()),
    };
    let files = packaged_files()?;
    let found = found_in_package(corpus, &files)?;
    none_found(
        "the package (cargo package --list) carries NVIDIA's text",
        &found,
    )
}

/// The wrong twins: one of NVIDIA's sentences planted in a committed file, as
/// written or as the Doxygen-to-Markdown conversion wrote it, is found; so is
/// one planted in another packaged file.
fn the_checks_catch_planted_text() -> Result<Completion, Failed> {
    let corpus = match nvidia_text() {
        Ok(c) => c,
        Err(Missing::Headers(why)) => return Ok(Completion::ignored_with(why)),
        Err(Missing::Text(e)) => return Err(e.into()),
    };
    let (name, rust) = committed()[0];
    let item = "/// NVIDIA's reference: [data types]";
    let at = rust
        .find(item)
        .ok_or("the committed file has no data types link")?;
    // The licence notice, and a sentence naming a function (`::cuMemMap`),
    // converted as the Headers mode does.
    let notice = corpus
        .sentences
        .iter()
        .find(|s| s.contains("third party"))
        .ok_or("no notice sentence in the corpus")?;
    let naming = corpus
        .sentences
        .iter()
        .find(|s| s.contains("::cuMemMap") && words(s).len() > 12)
        .ok_or("no sentence naming ::cuMemMap")?;
    let converted = naming.replace("::cuMemMap", "[`cuMemMap`](crate::cuMemMap)");
    for planted in [notice.clone(), converted] {
        let wrong = format!("{}/// {planted}\n{}", &rust[..at], &rust[at..]);
        if found_in(corpus, name, &rust_strings(&wrong)?).is_empty() {
            return Err(format!("a planted sentence went unnoticed: {planted:?}").into());
        }
    }
    let planted = vec![(
        "README.md".to_string(),
        format!("# cuda-mem-sys\n\nAs NVIDIA says: {notice}\n"),
    )];
    if found_in_package(corpus, &planted)?.is_empty() {
        return Err("a sentence planted in the README went unnoticed".into());
    }
    Ok(Completion::Completed)
}

fn main() {
    abi_support::main(vec![
        (
            "committed_bindings_carry_no_nvidia_text",
            committed_bindings_carry_no_nvidia_text,
        ),
        (
            "each_committed_item_links_nvidias_reference",
            each_committed_item_links_nvidias_reference,
        ),
        (
            "no_packaged_file_carries_nvidia_text",
            no_packaged_file_carries_nvidia_text,
        ),
        (
            "the_checks_catch_planted_text",
            the_checks_catch_planted_text,
        ),
    ]);
}
