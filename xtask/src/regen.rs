//! `cargo xtask regen`: the committed fallback bindings, generated from the
//! pinned release's headers by the same code `build/main.rs` runs, their
//! documentation links to NVIDIA's online reference in place of the headers'
//! comments ([`codegen::Docs::Links`]).

use crate::headers;
use generator::{codegen, locate};
use std::path::Path;

pub fn run(workspace: &Path) -> Result<(), String> {
    let include = headers::fetch(workspace, codegen::PINNED_RELEASE)?;
    let cuda = locate::at_root(&include, std::env::consts::ARCH, "pinned headers".into())
        .ok_or("the pinned headers hold no cuda.h")??;
    let work_dir = workspace.join("target/xtask-regen");
    std::fs::create_dir_all(&work_dir).map_err(|e| e.to_string())?;
    for ptds in [false, true] {
        let out = codegen::generate(&codegen::Input {
            include_dirs: &cuda.include_dirs,
            crate_dir: workspace,
            work_dir: &work_dir,
            cc: host_cc(),
            per_thread_default_stream: ptds,
            // The published package carries none of NVIDIA's text (build/codegen/links.rs).
            docs: codegen::Docs::Links,
            lap: &|_| {},
        })?;
        let path = codegen::fallback_path(workspace, ptds);
        std::fs::write(&path, pretty(&out))
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
        println!("wrote {}", path.display());
        let path = codegen::inputs_path(workspace, ptds);
        std::fs::write(
            &path,
            generator::tools::inputs_text(&cuda.include_dirs, &out.headers_read)?,
        )
        .map_err(|e| format!("writing {}: {e}", path.display()))?;
        println!("wrote {}", path.display());
        let (driver, runtime) = codegen::linked_symbols(&out.file);
        let path = codegen::symbols_path(workspace, ptds);
        std::fs::write(&path, generator::tools::symbols_text(&driver, &runtime))
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// The committed form of the bindings: the build script's tree, pretty-printed
/// (`build/main.rs` writes the same tree as tokens, one item a line).
pub fn pretty(out: &codegen::Output) -> String {
    out.header.clone() + &prettyplease::unparse(&out.file)
}

/// The C compiler for this machine, configured outside a build script.
pub fn host_cc() -> cc::Build {
    let triple = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    let mut b = cc::Build::new();
    b.target(&triple)
        .host(&triple)
        .opt_level(0)
        .cargo_metadata(false)
        .warnings(false);
    b
}
