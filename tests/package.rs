//! The crate as a crates.io user meets it: the README's links work from
//! crates.io and docs.rs (absolute, into files that exist, or to a heading of
//! the README itself), the quick start comes first, and the package carries
//! its licence texts and the fields that point at the repository.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The value of `key = "..."` in the `[package]` table of Cargo.toml.
fn manifest_field(manifest: &str, key: &str) -> Option<String> {
    manifest
        .lines()
        .skip_while(|l| l.trim() != "[package]")
        .take_while(|l| !l.starts_with("[[") && (l.trim() == "[package]" || !l.starts_with('[')))
        .find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.trim().trim_matches('"').to_string())
        })
}

/// The anchor GitHub and rustdoc give a heading: lower case, letters, digits,
/// `-` and `_` kept, spaces to `-`, everything else dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Every link target of a Markdown text: inline `](target)` and reference
/// definitions `[name]: target`, code blocks excepted.
fn link_targets(text: &str) -> Vec<String> {
    let mut out = vec![];
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let t = line.trim_start();
        if t.starts_with('[') {
            if let Some((label, target)) = t.split_once("]: ") {
                if !label.contains('(') {
                    out.push(target.trim().to_string());
                    continue;
                }
            }
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let end = after.find(')').unwrap_or(after.len());
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

/// Every link of the README that would not work on crates.io or docs.rs,
/// with the reason: relative links (the package has no `docs/`), links into
/// the repository naming a path the repository does not have, anchors naming
/// no heading.
fn broken_links(readme: &str, repository: &str, root: &Path) -> Vec<String> {
    let headings: BTreeSet<String> = readme
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|h| slug(h.trim_start_matches('#')))
        .collect();
    let mut broken = vec![];
    for target in link_targets(readme) {
        if let Some(anchor) = target.strip_prefix('#') {
            if !headings.contains(anchor) {
                broken.push(format!("{target}: no such heading in the README"));
            }
        } else if let Some(path) = target.strip_prefix(repository) {
            let path = path
                .strip_prefix("/blob/main/")
                .or_else(|| path.strip_prefix("/tree/main/"));
            match path {
                Some(p) if root.join(p.split('#').next().unwrap_or(p)).exists() => {}
                Some(p) => broken.push(format!("{target}: the repository has no {p}")),
                None => broken.push(format!("{target}: not a /blob/main/ or /tree/main/ link")),
            }
        } else if !target.starts_with("https://") {
            broken.push(format!(
                "{target}: relative (crates.io and docs.rs show the README without the repository)"
            ));
        }
    }
    broken
}

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(path))
        .unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

#[test]
fn readme_links_work_from_crates_io() {
    let manifest = read("Cargo.toml");
    let repository = manifest_field(&manifest, "repository").expect("Cargo.toml has repository");
    let broken = broken_links(&read("README.md"), &repository, Path::new(ROOT));
    assert!(
        broken.is_empty(),
        "README links that break on crates.io:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_link_check_catches_relative_missing_and_dangling_links() {
    let repo = "https://example.org/r";
    let root = Path::new(ROOT);
    let good = "# Top\n## Finding CUDA\n[a](#finding-cuda) [b](https://example.org/r/blob/main/README.md)\n\
                [c]: https://docs.rs/x\n```\n[not](a/link)\n```\n";
    assert_eq!(broken_links(good, repo, root), Vec::<String>::new());
    for (bad, why) in [
        ("[a](docs/proofs.md)\n", "relative"),
        ("[a]: docs/proofs.md\n", "relative"),
        (
            "[a](https://example.org/r/blob/main/docs/no-such-file.md)\n",
            "has no",
        ),
        (
            "[a](https://example.org/r/docs/proofs.md)\n",
            "not a /blob/main/",
        ),
        ("# Top\n[a](#no-such-heading)\n", "no such heading"),
    ] {
        let found = broken_links(bad, repo, root);
        assert!(
            found.len() == 1 && found[0].contains(why),
            "{bad:?} should be caught as {why:?}: {found:?}"
        );
    }
}

#[test]
fn readme_starts_with_the_dependency_and_stays_a_guide() {
    let readme = read("README.md");
    let lines: Vec<&str> = readme.lines().collect();
    let first = lines.iter().position(|l| l.trim() == "[dependencies]");
    assert!(
        matches!(first, Some(n) if n < 20),
        "the quick start's [dependencies] should come first (line {first:?})"
    );
    assert!(
        lines.len() <= 345,
        "the README is a user's guide of about 300 lines; it has {} (the record goes in docs/)",
        lines.len()
    );
    for section in ["Features", "Finding CUDA", "Linking", "For library authors"] {
        assert!(
            lines.iter().any(|l| l.strip_prefix("## ") == Some(section)),
            "the README has no \"## {section}\""
        );
    }
    // Someone who clones the repository finds, right after the quick start,
    // the command that shows the crate working and the one that runs its tests.
    let heading = |h: &str| lines.iter().position(|l| l.strip_prefix("## ") == Some(h));
    let clone = heading("From a clone").expect("the README has no \"## From a clone\"");
    assert_eq!(
        heading("Quick start").map(|q| q < clone),
        Some(true),
        "\"From a clone\" comes after the quick start"
    );
    assert!(
        heading("Features").is_some_and(|f| clone < f),
        "\"From a clone\" comes before the reference sections (Features, ...)"
    );
    let section = lines[clone..]
        .iter()
        .skip(1)
        .take_while(|l| !l.starts_with("## "));
    let text: Vec<&&str> = section.collect();
    for command in ["cargo xtask demo", "cargo xtask ci", "no GPU:"] {
        assert!(
            text.iter().any(|l| l.contains(command)),
            "\"From a clone\" does not show `{command}`"
        );
    }
}

#[test]
fn manifest_points_at_the_repository_and_documentation() {
    let manifest = read("Cargo.toml");
    for key in [
        "repository",
        "documentation",
        "license",
        "description",
        "readme",
    ] {
        assert!(
            manifest_field(&manifest, key).is_some_and(|v| !v.is_empty()),
            "Cargo.toml [package] has no {key}"
        );
    }
    assert_eq!(
        manifest_field(
            "[package]\nname = \"x\"\n[dependencies]\nrepository = \"y\"\n",
            "repository"
        ),
        None
    );
}

#[test]
fn package_carries_both_licence_texts() {
    let out = Command::new(env!("CARGO"))
        .args(["package", "--list", "--allow-dirty", "-p", "cuda-mem-sys"])
        .current_dir(ROOT)
        .output()
        .expect("running cargo package --list");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    for licence in ["LICENSE-MIT", "LICENSE-APACHE"] {
        assert!(
            files.contains(licence),
            "the package lacks {licence}: {files:?}"
        );
        let text = read(licence);
        assert!(text.len() > 1000, "{licence} is not a licence text");
    }
    assert!(
        read("LICENSE-APACHE").contains("Apache License")
            && read("LICENSE-MIT").contains("MIT License"),
        "the licence files hold the wrong texts"
    );
}
