//! `cargo xtask regen`: the committed fallback bindings, generated from the
//! pinned release's headers by the same code `build/main.rs` runs, their
//! documentation links to NVIDIA's online reference in place of the headers'
//! comments ([`codegen::Docs::Links`]).

use crate::headers;
use generator::{codegen, locate, tools};
use std::path::Path;

pub fn run(workspace: &Path) -> Result<(), String> {
    let include = headers::fetch(workspace, codegen::PINNED_RELEASE)?;
    let cuda = locate::at_root(&include, std::env::consts::ARCH, "pinned headers".into())
        .ok_or("the pinned headers hold no cuda.h")??;
    let work_dir = workspace.join("target/xtask-regen");
    std::fs::create_dir_all(&work_dir).map_err(|e| e.to_string())?;
    for ptds in [false, true] {
        for (path, text) in tools::committed_files(&cuda.include_dirs, workspace, &work_dir, ptds)?
        {
            std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
            println!("wrote {}", path.display());
        }
    }
    Ok(())
}
