//! The documents say what the tree holds and what the code does, each fact
//! written in one place and checked against the other:
//!
//! - README's table of the codes a loaded function returns when it cannot be
//!   called is the loader's own table (`src/loader/mod.rs`'s module
//!   documentation), row for row; the driver codes are those `impl Missing
//!   for CUresult` returns, the runtime codes among those of `impl Missing
//!   for cudaError_t`, and each number is the committed bindings' value;
//!   and situation by situation: each row's situation is one of the
//!   loader's reasons (`Unavailable::*`), and the codes the row gives are
//!   the ones `impl Missing` returns for that reason (a swap of two rows'
//!   codes, in a document or in the code, is named);
//! - `docs/development.md`'s Layout table names every top-level folder and
//!   every file of `src/loader/`;
//! - a plain `cargo test` at the root runs the generator's unit tests (the
//!   `generator` package is a default member).
//!
//! Each check has its wrong twin: the same check given a document that is
//! off by one fact must name that fact.

use std::collections::BTreeSet;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A code a table names: `` `NAME` (N) ``.
type Code = (String, u32);

/// The codes a cell names, in order.
fn codes(cell: &str) -> Vec<Code> {
    let mut out = vec![];
    let mut rest = cell;
    while let Some(start) = rest.find('`') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('`') else { break };
        let name = &after[..end];
        let tail = after[end + 1..].trim_start();
        if let Some(num) = tail.strip_prefix('(') {
            let digits: String = num.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(n) = digits.parse() {
                out.push((name.to_string(), n));
            }
        }
        rest = &after[end + 1..];
    }
    out
}

/// The rows of the first Markdown table in `text` whose header starts with
/// `| situation |` (lines may carry a `//! ` prefix): each row's driver and
/// runtime codes, rows that name none left out.
fn code_rows(text: &str) -> BTreeSet<(Vec<Code>, Vec<Code>)> {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.trim_start_matches("//!").trim())
        .collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("| situation |"))
        .expect("a table with a `| situation |` header");
    lines[start + 2..]
        .iter()
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').collect();
            (codes(cells[2]), codes(cells[3]))
        })
        .filter(|(d, r)| !d.is_empty() || !r.is_empty())
        .collect()
}

/// The constants `impl Missing for <ty>` returns in the loader's source.
fn returned(source: &str, ty: &str) -> BTreeSet<String> {
    let start = source
        .find(&format!("impl Missing for {ty} {{"))
        .unwrap_or_else(|| panic!("no `impl Missing for {ty}`"));
    let body = &source[start..start + source[start..].find("\n}\n").unwrap()];
    body.lines()
        .filter_map(|l| l.split("=>").nth(1))
        .map(|v| v.trim().trim_end_matches(',').to_string())
        .collect()
}

/// What is wrong with README's table against the loader's: rows missing or
/// extra, codes the loader never returns, numbers that are not the
/// bindings' values.
fn table_problems(readme: &str, loader: &str, bindings: &str) -> Vec<String> {
    let (ours, theirs) = (code_rows(readme), code_rows(loader));
    let mut problems: Vec<String> = theirs
        .difference(&ours)
        .map(|row| format!("README lacks the loader's row {row:?}"))
        .chain(
            ours.difference(&theirs)
                .map(|row| format!("README has a row the loader's table lacks: {row:?}")),
        )
        .collect();
    let driver = returned(loader, "CUresult");
    let runtime = returned(loader, "cudaError_t");
    let named_driver: BTreeSet<String> = theirs
        .iter()
        .flat_map(|(d, _)| d.iter().map(|c| c.0.clone()))
        .collect();
    if named_driver != driver {
        problems.push(format!(
            "the table's driver codes {named_driver:?} are not those the loader returns {driver:?}"
        ));
    }
    for (name, n) in ours
        .iter()
        .chain(&theirs)
        .flat_map(|(d, r)| d.iter().chain(r))
    {
        if name.starts_with("cuda") && !runtime.contains(name) {
            problems.push(format!("{name}: no runtime function returns it"));
        }
        let value = bindings.lines().find_map(|l| {
            let rest = l.strip_prefix(&format!("pub const {name}: "))?;
            let inner = &rest[rest.rfind('(')? + 1..rest.rfind(')')?];
            inner.parse::<u32>().ok()
        });
        if value != Some(*n) {
            problems.push(format!("{name} ({n}): the bindings say {value:?}"));
        }
    }
    problems.sort();
    problems.dedup();
    problems
}

/// The loader's reasons a row's situation names, by the words that say it
/// (the first that a row holds decides).
const SITUATIONS: [(&str, &str); 7] = [
    ("could not be loaded", "LibraryNotLoaded"),
    ("being loaded by this very thread", "LibraryNotLoaded"),
    ("ended inside the load", "LibraryNotLoaded"),
    ("older than the function's ABI version", "DriverTooOld"),
    ("no such function", "NotFound"),
    ("stub library", "StubLibrary"),
    (
        "below the function's introduction",
        "VersionBelowIntroduction",
    ),
];

/// What a cell says a function returns: the codes it names, or else the
/// bare number it gives (`303 (not remembered)`); neither: not a case.
#[derive(Debug, PartialEq)]
enum Says {
    Named(Vec<String>),
    Number(u32),
    NotACase,
}

fn says(cell: &str) -> Says {
    let named = codes(cell);
    if !named.is_empty() {
        return Says::Named(named.into_iter().map(|c| c.0).collect());
    }
    cell.split(|c: char| !c.is_ascii_digit())
        .find_map(|w| w.parse().ok())
        .map_or(Says::NotACase, Says::Number)
}

/// Each row of the `| situation |` table of `text`: its situation, and
/// what its driver and runtime cells say.
fn situation_rows(text: &str) -> Vec<(String, Says, Says)> {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.trim_start_matches("//!").trim())
        .collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("| situation |"))
        .expect("a table with a `| situation |` header");
    lines[start + 2..]
        .iter()
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').collect();
            (cells[1].trim().to_string(), says(cells[2]), says(cells[3]))
        })
        .collect()
}

/// The constant `impl Missing for <ty>` returns for each reason.
fn returned_for(source: &str, ty: &str) -> Vec<(String, String)> {
    let start = source
        .find(&format!("impl Missing for {ty} {{"))
        .unwrap_or_else(|| panic!("no `impl Missing for {ty}`"));
    let body = &source[start..start + source[start..].find("\n}\n").unwrap()];
    let mut out = vec![];
    for line in body.lines() {
        let Some((reasons, value)) = line.split_once("=>") else {
            continue;
        };
        let value = value.trim().trim_end_matches(',').to_string();
        for r in reasons.split('|') {
            if let Some(r) = r.trim().strip_prefix("Unavailable::") {
                out.push((r.to_string(), value.clone()));
            }
        }
    }
    out
}

/// The value of the enum constant `name` in the bindings.
fn value_of(bindings: &str, name: &str) -> Option<u32> {
    bindings.lines().find_map(|l| {
        let rest = l.strip_prefix(&format!("pub const {name}: "))?;
        let inner = &rest[rest.rfind('(')? + 1..rest.rfind(')')?];
        inner.parse::<u32>().ok()
    })
}

/// Situation by situation, what `doc`'s table (`what`: its name) says
/// against what the loader's code returns: each row's situation must be
/// one reason, and its codes (or number) that reason's, driver and runtime.
fn mapping_problems(what: &str, doc: &str, loader: &str, bindings: &str) -> Vec<String> {
    let driver = returned_for(loader, "CUresult");
    let runtime = returned_for(loader, "cudaError_t");
    let mut problems = vec![];
    for (situation, d, r) in situation_rows(doc) {
        let Some(reason) = SITUATIONS
            .iter()
            .find(|(words, _)| situation.contains(words))
            .map(|(_, reason)| *reason)
        else {
            problems.push(format!(
                "{what}: a row names no reason of the loader's: {situation:?}"
            ));
            continue;
        };
        for (side, cell, code) in [("driver", d, &driver), ("runtime", r, &runtime)] {
            let Some((_, constant)) = code.iter().find(|(k, _)| k == reason) else {
                problems.push(format!("{what}: the loader returns nothing for {reason}"));
                continue;
            };
            let right = match &cell {
                Says::Named(names) => names == std::slice::from_ref(constant),
                Says::Number(n) => value_of(bindings, constant) == Some(*n),
                Says::NotACase => true,
            };
            if !right {
                problems.push(format!(
                    "{what}: {reason} ({situation:?}): the table's {side} function returns \
                     {cell:?}, the loader's code {constant}"
                ));
            }
        }
    }
    problems
}

#[test]
fn each_situation_gets_the_code_the_loader_returns_for_it() {
    let (readme, loader, bindings) = (
        read("README.md"),
        read("src/loader/mod.rs"),
        read("src/generated/cuda-13.0.rs"),
    );
    let mut problems = mapping_problems("README.md", &readme, &loader, &bindings);
    problems.extend(mapping_problems(
        "src/loader/mod.rs",
        &loader,
        &loader,
        &bindings,
    ));
    assert!(problems.is_empty(), "{problems:#?}");
    // Every reason a table shows: the seven rows of README, five of the loader's.
    assert_eq!(situation_rows(&readme).len(), 7);
    assert_eq!(situation_rows(&loader).len(), 5);
}

/// The wrong twins: two situations' codes swapped in README (the driver's
/// 801 and 999), in the loader's code (the runtime's 303 and 500, the
/// driver's 801 and 999), and a row whose situation is no reason.
#[test]
fn swapped_situation_codes_are_named() {
    let (readme, loader, bindings) = (
        read("README.md"),
        read("src/loader/mod.rs"),
        read("src/generated/cuda-13.0.rs"),
    );
    let swap = |text: &str, a: &str, b: &str| {
        assert!(text.contains(a) && text.contains(b), "{a} / {b}");
        text.replace(a, "\u{0}").replace(b, a).replace('\u{0}', b)
    };
    let readme_swapped = swap(
        &readme,
        "`CUDA_ERROR_NOT_SUPPORTED` (801)",
        "`CUDA_ERROR_UNKNOWN` (999)",
    );
    let problems = mapping_problems("README.md", &readme_swapped, &loader, &bindings);
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(
        problems[0].starts_with("README.md: DriverTooOld")
            && problems[0].ends_with("returns Named([\"CUDA_ERROR_UNKNOWN\"]), the loader's code CUDA_ERROR_NOT_SUPPORTED"),
        "{problems:#?}"
    );
    assert!(
        problems[1].starts_with("README.md: VersionBelowIntroduction"),
        "{problems:#?}"
    );
    // The same swap is invisible to the row sets (the check this one adds to).
    assert!(!table_problems(
        &readme_swapped,
        &swap(
            &loader,
            "`CUDA_ERROR_NOT_SUPPORTED` (801)",
            "`CUDA_ERROR_UNKNOWN` (999)",
        ),
        &bindings
    )
    .iter()
    .any(|p| p.contains("lacks")),);
    let runtime_swapped = loader
        .replace(
            "Unavailable::LibraryNotLoaded => cudaErrorSharedObjectInitFailed,",
            "Unavailable::LibraryNotLoaded => cudaErrorSymbolNotFound,",
        )
        .replace(
            "Unavailable::NotFound | Unavailable::UnknownName => cudaErrorSymbolNotFound,",
            "Unavailable::NotFound | Unavailable::UnknownName => cudaErrorSharedObjectInitFailed,",
        );
    let mapped = returned_for(&runtime_swapped, "cudaError_t");
    assert!(
        mapped.contains(&("LibraryNotLoaded".into(), "cudaErrorSymbolNotFound".into()))
            && mapped.contains(&("NotFound".into(), "cudaErrorSharedObjectInitFailed".into())),
        "{mapped:?}"
    );
    let problems = mapping_problems("README.md", &readme, &runtime_swapped, &bindings);
    for (reason, code) in [
        ("LibraryNotLoaded", "cudaErrorSymbolNotFound"),
        ("NotFound", "cudaErrorSharedObjectInitFailed"),
    ] {
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with(&format!("README.md: {reason} "))
                    && p.contains("runtime")
                    && p.ends_with(&format!("the loader's code {code}"))),
            "{reason}: {problems:#?}"
        );
    }
    let driver_swapped = loader
        .replace(
            "Unavailable::DriverTooOld => CUDA_ERROR_NOT_SUPPORTED,",
            "Unavailable::DriverTooOld => CUDA_ERROR_UNKNOWN,",
        )
        .replace(
            "Unavailable::VersionBelowIntroduction => CUDA_ERROR_UNKNOWN,",
            "Unavailable::VersionBelowIntroduction => CUDA_ERROR_NOT_SUPPORTED,",
        );
    let problems = mapping_problems("README.md", &readme, &driver_swapped, &bindings);
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("README.md: DriverTooOld")
                && p.ends_with("the loader's code CUDA_ERROR_UNKNOWN")),
        "{problems:#?}"
    );
    let unknown = readme.replace(
        "| the driver found is NVIDIA's stub library",
        "| the driver found is NVIDIA's placeholder",
    );
    let problems = mapping_problems("README.md", &unknown, &loader, &bindings);
    assert!(
        problems.len() == 1 && problems[0].contains("names no reason of the loader's"),
        "{problems:#?}"
    );
}

#[test]
fn readme_error_codes_are_the_loaders() {
    let problems = table_problems(
        &read("README.md"),
        &read("src/loader/mod.rs"),
        &read("src/generated/cuda-13.0.rs"),
    );
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The wrong twins: a number off, a row dropped, a code the loader never
/// returns.
#[test]
fn a_wrong_error_code_table_is_named() {
    let (readme, loader, bindings) = (
        read("README.md"),
        read("src/loader/mod.rs"),
        read("src/generated/cuda-13.0.rs"),
    );
    let off = readme.replace(
        "`CUDA_ERROR_NOT_FOUND` (500)",
        "`CUDA_ERROR_NOT_FOUND` (501)",
    );
    let problems = table_problems(&off, &loader, &bindings);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("CUDA_ERROR_NOT_FOUND (501)")),
        "{problems:#?}"
    );
    let row = readme
        .lines()
        .find(|l| l.contains("`CUDA_ERROR_STUB_LIBRARY` (34)"))
        .unwrap();
    let dropped = readme.replace(&format!("{row}\n"), "");
    let problems = table_problems(&dropped, &loader, &bindings);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("README lacks") && p.contains("CUDA_ERROR_STUB_LIBRARY")),
        "{problems:#?}"
    );
    let never = loader.replace(
        "Unavailable::StubLibrary => CUDA_ERROR_STUB_LIBRARY,",
        "Unavailable::StubLibrary => CUDA_ERROR_NOT_FOUND,",
    );
    let problems = table_problems(&readme, &never, &bindings);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("not those the loader returns")),
        "{problems:#?}"
    );
}

/// The paths the Layout table of `docs/development.md` names: the first
/// column's backticked paths, and every backticked word of the rows.
fn layout(doc: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let start = doc
        .find("## Layout")
        .expect("docs/development.md has a Layout section");
    let table = doc[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'));
    let (mut paths, mut words) = (BTreeSet::new(), BTreeSet::new());
    for row in table {
        let first = row.split('|').nth(1).unwrap_or("");
        paths.extend(first.split('`').skip(1).step_by(2).map(str::to_string));
        words.extend(row.split('`').skip(1).step_by(2).map(str::to_string));
    }
    (paths, words)
}

/// The top-level folders and `src/loader/` files the table does not name.
fn unnamed(doc: &str, folders: &[String], loader_files: &[String]) -> Vec<String> {
    let (paths, words) = layout(doc);
    let mut missing: Vec<String> = folders
        .iter()
        .filter(|f| !paths.iter().any(|p| p.starts_with(&format!("{f}/"))))
        .map(|f| format!("{f}/"))
        .collect();
    missing.extend(
        loader_files
            .iter()
            .filter(|f| !words.contains(*f) && !paths.contains(&format!("src/loader/{f}")))
            .map(|f| format!("src/loader/{f}")),
    );
    missing
}

fn names(dir: &str, keep: impl Fn(&std::fs::DirEntry) -> bool) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(Path::new(ROOT).join(dir))
        .unwrap()
        .flatten()
        .filter(|e| keep(e))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

/// The repository's top-level folders (not hidden, not cargo's `target/`).
fn top_folders() -> Vec<String> {
    names("", |e| {
        let name = e.file_name().to_string_lossy().into_owned();
        e.path().is_dir() && !name.starts_with('.') && name != "target"
    })
}

#[test]
fn the_layout_table_names_every_folder_and_every_loader_file() {
    let loader = names("src/loader", |e| e.path().is_file());
    let folders = top_folders();
    assert!(folders.contains(&"xtask".to_string()) && loader.contains(&"mod.rs".to_string()));
    let missing = unnamed(&read("docs/development.md"), &folders, &loader);
    assert!(
        missing.is_empty(),
        "docs/development.md's Layout table does not name {missing:?}"
    );
}

/// The wrong twin: the table with the rows of a folder and a loader file
/// taken out is caught, naming both.
#[test]
fn a_layout_table_missing_a_folder_or_a_loader_file_is_named() {
    let doc = read("docs/development.md")
        .lines()
        .filter(|l| !l.starts_with("| `records/") && !l.starts_with("| `src/loader/`"))
        .collect::<Vec<_>>()
        .join("\n");
    let missing = unnamed(&doc, &["records".into()], &["once.rs".into()]);
    assert_eq!(missing, ["records/", "src/loader/once.rs"]);
}

/// Whether the workspace manifest's `default-members` holds `package`.
fn default_member(manifest: &str, package: &str) -> bool {
    manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix("default-members = "))
        .is_some_and(|list| list.contains(&format!("\"{package}\"")))
}

#[test]
fn plain_cargo_test_runs_the_generators_unit_tests() {
    let manifest = read("Cargo.toml");
    assert!(
        default_member(&manifest, "generator"),
        "Cargo.toml's default-members leaves `generator` out: a plain `cargo test` skips its unit tests"
    );
    // The wrong twin: the list without it.
    let without = manifest.replace(", \"generator\"", "");
    assert!(!default_member(&without, "generator"));
}
