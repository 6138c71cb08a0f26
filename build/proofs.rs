//! The inputs of the crate's own ABI tests, in `OUT_DIR/abi/` (feature
//! `abi-test-inputs`, which the crate's dev-dependency on itself turns on:
//! a dependent's build compiles none of this).

use crate::bindings::Made;
use crate::config::{write_if_changed, Config};
use crate::locate::Cuda;
use crate::release;

/// Writes them for the bindings `made`.
pub fn write(config: &Config, made: &Made, cuda: Option<&Cuda>) -> Result<(), String> {
    let dir = config.out_dir.join("abi");
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    // tests/fallback.rs: the committed list must equal the generated one.
    #[cfg(feature = "bindgen")]
    if let Some(out) = &made.generated {
        signature_inputs(&dir, &out.file, &out.c_tags)?;
        layout_and_functions(&dir, &out.file)?;
        let (driver, runtime) = &made.symbols;
        return write_if_changed(
            &dir.join("symbols.txt"),
            &release::symbols_text(driver, runtime),
        );
    }
    let _ = made;
    #[cfg(feature = "bindgen")]
    {
        let committed = release::fallback_path(&config.crate_dir, config.ptds);
        // `cargo xtask abi fallback`: the signatures of the headers found.
        if let (true, Some(cuda), Ok(())) = (config.abi_fallback, cuda, crate::bindings::libclang())
        {
            let out = crate::bindings::run_generator(config, cuda)?;
            signature_inputs(&dir, &out.file, &out.c_tags)?;
        }
        let rust = std::fs::read_to_string(&committed)
            .map_err(|e| format!("reading {}: {e}", committed.display()))?;
        let file =
            syn::parse_file(&rust).map_err(|e| format!("parsing {}: {e}", committed.display()))?;
        layout_and_functions(&dir, &file)?;
    }
    let _ = cuda;
    let symbols = release::symbols_path(&config.crate_dir, config.ptds);
    let text = std::fs::read_to_string(&symbols)
        .map_err(|e| format!("reading {}: {e}", symbols.display()))?;
    write_if_changed(&dir.join("symbols.txt"), &text)
}

/// The function table (`tests/abi_symbols.rs`) and the two halves of the
/// layout check (`tests/abi_layout.rs`), from the final bindings.
#[cfg(feature = "bindgen")]
fn layout_and_functions(dir: &std::path::Path, file: &syn::File) -> Result<(), String> {
    write_if_changed(
        &dir.join("functions.rs"),
        &crate::codegen::abi_checks::function_table(file),
    )?;
    let layout = crate::layout_check::generate_from(file, "::cuda_mem_sys");
    write_if_changed(&dir.join("layout_rust.rs"), &layout.rust)?;
    write_if_changed(&dir.join("layout_check.c"), &layout.c)
}

/// The C signature checks the ABI tests compile (also for a deliberately
/// wrong declaration, which must fail).
#[cfg(feature = "bindgen")]
fn signature_inputs(
    dir: &std::path::Path,
    file: &syn::File,
    tags: &std::collections::BTreeSet<String>,
) -> Result<(), String> {
    use crate::codegen::abi_checks::signature_asserts;
    let (c, checked, skipped) = signature_asserts(file, file, tags);
    write_if_changed(&dir.join("signatures.c"), &c)?;
    write_if_changed(
        &dir.join("signatures.txt"),
        &format!("checked {checked}\n{}", skipped.join("\n")),
    )?;
    // cuMemAdvise as CUDA 12 declared it: a CUdevice where 13.0 takes a CUmemLocation.
    let wrong: syn::File = syn::parse_quote! {
        extern "C" {
            pub fn cuMemAdvise(devPtr: CUdeviceptr, count: usize, advice: CUmem_advise, device: CUdevice) -> CUresult;
        }
    };
    let (c, _, _) = signature_asserts(&wrong, file, tags);
    write_if_changed(&dir.join("signatures_wrong.c"), &c)
}
