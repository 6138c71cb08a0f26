//! What docs.rs shows: the crate documented as docs.rs builds it (`DOCS_RS`,
//! no CUDA, the features of `[package.metadata.docs.rs]`) has the `loader`
//! module (every loaded function's documentation points at it) and the
//! linked declarations with their documentation (the committed bindings'
//! link to NVIDIA's reference), not the loaded build's copies.
//! docs.rs's own `--cfg docsrs` (the `doc(cfg)` badges) needs its nightly and
//! is not passed here: stable must build the same documentation clean.

use crate::cmd::{cargo, discard, run_cmd};
use std::path::Path;

/// The function whose page tells the linked declaration (full text) from the
/// loaded build's copy (first paragraph and a note).
const PROBE: &str = "fn.cuMemAdvise.html";
/// What `cuMemAdvise`'s documentation holds on docs.rs: the committed
/// bindings' link to its group's page of NVIDIA's reference.
const FULL_TEXT: &str = "docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__UNIFIED.html";
/// The loaded build's note (the `call!` macro of the loader).
const LOADED_NOTE: &str = "Loaded at run time";

/// `cargo doc` as docs.rs runs it, `-D warnings`, then [`verdict`].
pub fn check(workspace: &Path) -> Result<(), String> {
    let manifest = std::fs::read_to_string(workspace.join("Cargo.toml"))
        .map_err(|e| format!("Cargo.toml: {e}"))?;
    let features = features(&manifest)?;
    let dir = workspace.join("target/docs-rs");
    run_cmd(
        cargo(workspace)
            .args(["doc", "--no-deps", "-p", "cuda-mem-sys", "--features"])
            .arg(features.join(","))
            .env("DOCS_RS", "1")
            .env("RUSTDOCFLAGS", "-D warnings")
            .env("CARGO_TARGET_DIR", &dir),
    )?;
    let said = verdict(&dir.join("doc/cuda_mem_sys"))?;
    println!("docs.rs (features {}): {said}", features.join(","));
    discard(&dir);
    Ok(())
}

/// The `features` of `[package.metadata.docs.rs]`; an error unless they
/// include `dynamic-loading` (without it docs.rs has no `loader` module).
fn features(manifest: &str) -> Result<Vec<String>, String> {
    let section = manifest
        .split("\n[")
        .find(|s| s.starts_with("package.metadata.docs.rs]"))
        .ok_or("Cargo.toml has no [package.metadata.docs.rs]")?;
    let list = section
        .lines()
        .find_map(|l| l.trim().strip_prefix("features"))
        .and_then(|l| l.trim().strip_prefix('='))
        .ok_or("[package.metadata.docs.rs] names no features")?;
    let features: Vec<String> = list
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|f| f.trim().trim_matches('"').to_string())
        .filter(|f| !f.is_empty())
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
    Ok("the loader module, and the linked declarations with their documentation".to_string())
}

#[cfg(test)]
mod tests {
    use super::{features, verdict, FULL_TEXT, LOADED_NOTE, PROBE};
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
        let manifest = include_str!("../../Cargo.toml");
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
