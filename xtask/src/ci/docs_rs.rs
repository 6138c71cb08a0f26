//! What docs.rs shows: the crate documented as docs.rs builds it (`DOCS_RS`,
//! no CUDA, the features of `[package.metadata.docs.rs]`) has the `loader`
//! module (every loaded function's documentation points at it) and the
//! linked declarations with their documentation (the committed bindings'
//! link to NVIDIA's reference), not the loaded build's copies, and no badge
//! ("Available on ...") naming a cfg the user cannot set: only features.
//! docs.rs builds with nightly and `--cfg docsrs` (the `doc(cfg)` badges):
//! so does this check (rustup installs nightly, minimal profile, if missing);
//! stable's `cargo doc` is ci's step before it.

use crate::cmd::{discard, install_toolchain, run_cmd, toolchain_cargo};
use std::path::Path;

/// The function whose page tells the linked declaration (full text) from the
/// loaded build's copy (first paragraph and a note).
const PROBE: &str = "fn.cuMemAdvise.html";
/// What `cuMemAdvise`'s documentation holds on docs.rs: the committed
/// bindings' link to its group's page of NVIDIA's reference.
const FULL_TEXT: &str = "docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__UNIFIED.html";
/// The loaded build's note (the `call!` macro of the loader).
const LOADED_NOTE: &str = "Loaded at run time";

/// The cfgs of the crate's own: the build script sets them (build/config.rs,
/// `CFGS`, and `cuda_NNNNN` for each release); a user sets features.
const INTERNAL_CFG_PREFIX: &str = "cuda_";
/// How rustdoc opens a badge (its title and its text both name the cfg).
const BADGE: &str = "class=\"stab portability\"";

/// `cargo doc` as docs.rs runs it (nightly, `--cfg docsrs`, `DOCS_RS`, the
/// manifest's features), `-D warnings`, then [`verdict`].
pub fn check(workspace: &Path) -> Result<(), String> {
    let manifest = std::fs::read_to_string(workspace.join("Cargo.toml"))
        .map_err(|e| format!("Cargo.toml: {e}"))?;
    let features = features(&manifest)?;
    let rustdoc_args = rustdoc_args(&manifest)?;
    let dir = workspace.join("target/docs-rs");
    install_toolchain("nightly")?;
    run_cmd(
        toolchain_cargo(workspace, "nightly")
            .args(["doc", "--no-deps", "-p", "cuda-mem-sys", "--features"])
            .arg(features.join(","))
            .env("DOCS_RS", "1")
            .env("RUSTDOCFLAGS", format!("{rustdoc_args} -D warnings"))
            .env("CARGO_TARGET_DIR", &dir),
    )?;
    let said = verdict(&dir.join("doc/cuda_mem_sys"))?;
    println!("docs.rs (features {}): {said}", features.join(","));
    discard(&dir);
    Ok(())
}

/// The value of `key` (a one-line list) in `[package.metadata.docs.rs]`.
fn docs_rs_list<'a>(manifest: &'a str, key: &str) -> Result<Vec<&'a str>, String> {
    let section = manifest
        .split("\n[")
        .find(|s| s.starts_with("package.metadata.docs.rs]"))
        .ok_or("Cargo.toml has no [package.metadata.docs.rs]")?;
    let list = section
        .lines()
        .find_map(|l| l.trim().strip_prefix(key))
        .and_then(|l| l.trim().strip_prefix('='))
        .ok_or(format!("[package.metadata.docs.rs] names no {key}"))?;
    Ok(list
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|f| f.trim().trim_matches('"'))
        .filter(|f| !f.is_empty())
        .collect())
}

/// The `rustdoc-args` of `[package.metadata.docs.rs]`, one string; an error
/// unless they set `docsrs` (the crate's `doc(cfg)` switch).
fn rustdoc_args(manifest: &str) -> Result<String, String> {
    let args = docs_rs_list(manifest, "rustdoc-args")?.join(" ");
    if !args.contains("--cfg docsrs") {
        return Err(format!(
            "[package.metadata.docs.rs] rustdoc-args `{args}` lack `--cfg docsrs`: docs.rs \
             would show no feature badge"
        ));
    }
    Ok(args)
}

/// The `features` of `[package.metadata.docs.rs]`; an error unless they
/// include `dynamic-loading` (without it docs.rs has no `loader` module).
fn features(manifest: &str) -> Result<Vec<String>, String> {
    let features: Vec<String> = docs_rs_list(manifest, "features")?
        .into_iter()
        .map(String::from)
        .collect();
    if !features.iter().any(|f| f == "dynamic-loading") {
        return Err(format!(
            "[package.metadata.docs.rs] features {features:?} lack dynamic-loading: docs.rs \
             would show no `loader` module"
        ));
    }
    Ok(features)
}

/// What the generated documentation in `doc` (`.../doc/cuda_mem_sys`) shows,
/// or what it lacks.
fn verdict(doc: &Path) -> Result<String, String> {
    let loader = doc.join("loader/index.html");
    if !loader.exists() {
        return Err(format!(
            "no `loader` module documented ({} is missing)",
            loader.display()
        ));
    }
    let probe = std::fs::read_to_string(doc.join(PROBE))
        .map_err(|e| format!("{}: {e}", doc.join(PROBE).display()))?;
    if probe.contains(LOADED_NOTE) || !probe.contains(FULL_TEXT) {
        return Err(format!(
            "{PROBE} is the loaded build's copy (first paragraph only), not the linked \
             declaration and its link to NVIDIA's reference: the build script set the loading \
             cfg under DOCS_RS"
        ));
    }
    let badges = internal_badges(doc)?;
    if let Some((page, badge)) = badges.first() {
        return Err(format!(
            "{} pages show a badge naming a cfg of the crate's own (`{INTERNAL_CFG_PREFIX}...`, \
             set by the build script, not the user), e.g. {page}: `{badge}`; hide it in \
             src/lib.rs's `doc(auto_cfg(hide(...)))`",
            badges.len()
        ));
    }
    Ok(
        "the loader module, the linked declarations with their documentation, feature badges \
         only"
            .to_string(),
    )
}

/// Each page under `doc` (its path) with a badge naming a crate-internal cfg,
/// and that badge's text.
fn internal_badges(doc: &Path) -> Result<Vec<(String, String)>, String> {
    let mut found = Vec::new();
    let mut dirs = vec![doc.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for path in entries.flatten().map(|e| e.path()) {
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "html") {
                let html = std::fs::read_to_string(&path).unwrap_or_default();
                for badge in html.split(BADGE).skip(1) {
                    let badge = badge.split("</").next().unwrap_or_default();
                    if badge.contains(INTERNAL_CFG_PREFIX) {
                        let page = path.strip_prefix(doc).unwrap_or(&path);
                        found.push((page.display().to_string(), badge.to_string()));
                        break;
                    }
                }
            }
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::{features, rustdoc_args, verdict, FULL_TEXT, LOADED_NOTE, PROBE};
    use std::path::PathBuf;

    fn docs(name: &str, loader: bool, probe: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-docs-rs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("loader")).unwrap();
        if loader {
            std::fs::write(dir.join("loader/index.html"), "loader").unwrap();
        }
        std::fs::write(dir.join(PROBE), probe).unwrap();
        dir
    }

    #[test]
    fn the_manifests_docs_rs_features_include_dynamic_loading() {
        let manifest = include_str!("../../../Cargo.toml");
        assert!(features(manifest)
            .unwrap()
            .contains(&"dynamic-loading".to_string()));
        // The twin: a section without it is refused, by name.
        let without =
            "[package]\nname = \"x\"\n[package.metadata.docs.rs]\nfeatures = [\"bindgen\"]\n";
        assert!(features(without)
            .unwrap_err()
            .contains("lack dynamic-loading"));
        assert!(features("[package]\n").is_err());
        assert!(rustdoc_args(manifest).unwrap().contains("--cfg docsrs"));
        // The twin: args without `--cfg docsrs` are refused.
        let plain = "[package]\n[package.metadata.docs.rs]\nrustdoc-args = [\"-Zx\"]\n";
        assert!(rustdoc_args(plain)
            .unwrap_err()
            .contains("lack `--cfg docsrs`"));
    }

    /// A feature's badge passes; the wrong twin, the badge rustdoc writes for
    /// `#[cfg(not(cuda_mem_sys_load_driver))]` (as docs.rs showed on every
    /// linked function), is caught and named.
    #[test]
    fn a_feature_badge_passes_and_a_crate_internal_cfg_badge_is_caught() {
        let full = format!("<p>first</p><p>{FULL_TEXT} ...</p>");
        let feature = "<span class=\"stab portability\" title=\"Available on crate feature \
                       `dynamic-loading` only\"><code>dynamic-loading</code></span>";
        let good = docs("feature-badge", true, &format!("{feature}{full}"));
        assert!(verdict(&good).is_ok());
        let internal = "<div class=\"stab portability\">Available on <strong>non-<code>\
                        cuda_mem_sys_load_driver</code></strong> only.</div>";
        let bad = docs(
            "internal-badge",
            true,
            &format!("{feature}{internal}{full}"),
        );
        let err = verdict(&bad).unwrap_err();
        assert!(err.contains("cuda_mem_sys_load_driver"), "{err}");
        assert!(err.contains(PROBE), "{err}");
        for d in [good, bad] {
            let _ = std::fs::remove_dir_all(d);
        }
    }

    #[test]
    fn docs_with_the_loader_and_full_text_pass_and_the_wrong_ones_are_caught() {
        let full = format!("<p>first</p><p>{FULL_TEXT} ...</p>");
        let good = docs("good", true, &full);
        assert!(verdict(&good).is_ok());
        let no_loader = docs("no-loader", false, &full);
        assert!(verdict(&no_loader)
            .unwrap_err()
            .contains("no `loader` module"));
        let loaded = docs(
            "loaded",
            true,
            &format!("<p>first</p><p>{LOADED_NOTE} ...</p>"),
        );
        assert!(verdict(&loaded)
            .unwrap_err()
            .contains("loaded build's copy"));
        for d in [good, no_loader, loaded] {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}
