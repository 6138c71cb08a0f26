//! Every file path that the documents (`README.md`, `docs/`) and the code's
//! comments name, in one of the repository's folders (`build/…`,
//! `abi-proofs/…`, …), names a file or folder that exists: from the
//! repository's root, or from the folder of a workspace package (a comment
//! in `abi-proofs/` says `tests/fallback.rs`). The GPU records
//! (`docs/device-results.md`, `records/device-runs/`) are left as they were
//! written: they name the tree of their run.

use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The first folders a quoted path may start with: the repository's own
/// (none hidden, no `target/`).
fn folders(root: &Path) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.') && n != "target")
        .collect();
    found.sort();
    found
}

/// The extensions of the files a path may name.
const EXTENSIONS: [&str; 9] = ["rs", "md", "toml", "h", "c", "sh", "tsv", "txt", "cu"];

/// The path-like words of `text`: runs of `[A-Za-z0-9_./-]` holding a `/`,
/// ending in a known extension, starting with one of `folders`.
fn quoted_paths<'a>(text: &'a str, folders: &[String]) -> Vec<&'a str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || "_./-".contains(c)))
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| {
            w.split_once('/')
                .is_some_and(|(first, _)| folders.iter().any(|f| f == first))
                && w.rsplit_once('.')
                    .is_some_and(|(_, ext)| EXTENSIONS.contains(&ext))
        })
        .collect()
}

/// Whether `path` exists from the root or from one of `bases`.
fn exists(path: &str, root: &Path, bases: &[PathBuf]) -> bool {
    std::iter::once(root.to_path_buf())
        .chain(bases.iter().cloned())
        .any(|b| b.join(path).exists())
}

/// Every quoted path of `text` that exists nowhere.
fn unresolved(text: &str, root: &Path, bases: &[PathBuf]) -> Vec<String> {
    quoted_paths(text, &folders(root))
        .into_iter()
        .filter(|p| !exists(p, root, bases))
        .map(str::to_string)
        .collect()
}

/// The comment lines of a Rust source (`//`, `///`, `//!`), joined.
fn comments(source: &str) -> String {
    source
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every file below `dir` (no `target/`, no hidden folder, no generated
/// bindings, no GPU records).
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.')
            || ["target", "generated", "device-runs", "device-results.md"].contains(&name.as_str())
        {
            continue;
        }
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The folders of the workspace's packages (those with a `Cargo.toml`).
fn package_dirs(root: &Path) -> Vec<PathBuf> {
    folders(root)
        .iter()
        .map(|f| root.join(f))
        .filter(|d| d.join("Cargo.toml").is_file())
        .collect()
}

#[test]
fn every_path_the_documents_and_comments_name_exists() {
    let root = Path::new(ROOT);
    let bases = package_dirs(root);
    assert!(
        bases.iter().any(|b| b.ends_with("abi-proofs")),
        "the check does not see the packages: {bases:?}"
    );
    let folders = folders(root);
    let mut all = vec![root.join("README.md")];
    for f in &folders {
        files(&root.join(f), &mut all);
    }
    let mut broken = vec![];
    let mut seen = 0;
    for file in all {
        let text = match file.extension().and_then(|e| e.to_str()) {
            Some("md") => std::fs::read_to_string(&file).unwrap(),
            Some("rs") => comments(&std::fs::read_to_string(&file).unwrap()),
            _ => continue,
        };
        seen += quoted_paths(&text, &folders).len();
        for p in unresolved(&text, root, &bases) {
            broken.push(format!(
                "{}: {p}",
                file.strip_prefix(root).unwrap().display()
            ));
        }
    }
    assert!(
        seen > 100,
        "only {seen} quoted paths seen: the scan is broken"
    );
    assert!(
        broken.is_empty(),
        "paths named that do not exist (fix the name, or the file moved):\n{}",
        broken.join("\n")
    );
}

/// The wrong twin: a comment naming a file that moved (abi-proofs' build
/// script, once `build.rs` at the package's root) is caught; its new name, a
/// path from a package's folder and words that are no path of the
/// repository pass.
#[test]
fn a_moved_file_is_caught_and_paths_that_exist_pass() {
    let root = Path::new(ROOT);
    let bases = package_dirs(root);
    let text = "//! made by `abi-proofs/build.rs`, now abi-proofs/build/main.rs;\n\
                //! see tests/fallback.rs and build/codegen/mod.rs. Not paths: \
                nvidia/cu13/include/cuda.h, a/b, .gpu-bundle/run.sh, 13.0/x.";
    assert_eq!(
        quoted_paths(&comments(text), &folders(root)),
        [
            "abi-proofs/build.rs",
            "abi-proofs/build/main.rs",
            "tests/fallback.rs",
            "build/codegen/mod.rs"
        ]
    );
    assert_eq!(
        unresolved(&comments(text), root, &bases),
        ["abi-proofs/build.rs"]
    );
}
