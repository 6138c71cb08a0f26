//! The inputs of cuda-mem-sys's ABI proofs (this package's tests), in
//! `OUT_DIR`: the function table (`abi_symbols`, `dynamic_loading`), the two
//! halves of the layout check (`abi_layout`), the signature asserts
//! (`abi_signatures`), and the bindings the generator writes with the symbols
//! they link (`fallback`). cuda-mem-sys's own build script, which runs in
//! every dependent's build, runs none of these generators.
//!
//! The bindings are those cuda-mem-sys compiles: its choice (`choose` in
//! `build/bindings.rs`) is made here again from the same inputs and checked
//! against what its build reported (`DEP_CUDA_MEM_SYS_*`). Where bindgen can
//! run, the generator runs here afresh: for headers of the committed bindings
//! (which cuda-mem-sys then takes as they are) `tests/fallback.rs` compares
//! the two, and the signature asserts need the headers' C tags.

#[path = "../build/bindings.rs"]
#[allow(dead_code)] // `make` serves cuda-mem-sys's build
mod bindings;
#[cfg(feature = "bindgen")]
#[path = "../build/codegen/mod.rs"]
#[allow(dead_code)]
mod codegen;
#[path = "../build/config.rs"]
#[allow(dead_code)] // `dynamic_cudart` serves cuda-mem-sys's link step
mod config;
#[path = "../build/locate.rs"]
mod locate;
#[path = "../build/preprocess.rs"]
#[allow(dead_code)]
mod preprocess;
#[path = "../build/release.rs"]
#[allow(dead_code)]
mod release;
#[path = "../build/timings.rs"]
#[allow(dead_code)] // config.rs reads its variable's name; the steps are cuda-mem-sys's
mod timings;

#[cfg(feature = "bindgen")]
#[path = "generators/abi_checks.rs"]
mod abi_checks;
#[cfg(feature = "bindgen")]
#[path = "generators/layout_check.rs"]
#[allow(dead_code)] // `generate` (from text) serves tests/abi_bad_input.rs
mod layout_check;

use bindings::Source;
use config::{write_if_changed, Config};
use std::path::Path;

fn main() {
    if let Err(message) = run() {
        eprintln!("\nabi-proofs: {message}\n");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let mut config = Config::from_env()?;
    // wrapper.h and the committed bindings are cuda-mem-sys's, one folder up.
    config.crate_dir = config
        .crate_dir
        .parent()
        .ok_or("CARGO_MANIFEST_DIR has no parent folder")?
        .to_path_buf();
    // cuda-mem-sys's build gives the same warnings for the same choice.
    config.warnings = false;
    config.declare("../wrapper.h", &locate::env_vars_read());

    let search = locate::find(&config.target_arch);
    for line in locate::rerun_lines(&search, &config.target, &config.host) {
        println!("{line}");
    }
    let source = bindings::choose(&config, &search)?;
    let found = matches!(search, locate::Search::Found(_));
    agree_with_cuda_mem_sys(&config, source, found)?;
    let cuda = match search {
        locate::Search::Found(cuda) => Some(cuda),
        _ => None,
    };
    bindings::tell_tests_the_headers(cuda.as_ref())?;
    config.tell_tests_the_compiler();

    let dir = config.out_dir.join("abi");
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    #[cfg(feature = "bindgen")]
    if let Some(cuda) = cuda
        .as_ref()
        .filter(|_| bindings::libclang(&config).is_ok())
    {
        // The committed bindings' documentation (links, none of NVIDIA's text),
        // so that tests/fallback.rs compares like with like; the proofs read
        // only declarations, which the documentation mode does not change.
        let out = bindings::run_generator(&config, cuda, codegen::Docs::Links, &|_| {})?;
        signature_inputs(&dir, &out.file, &abi_checks::c_tags(&out.preprocessed))?;
        // `cargo xtask abi fallback` (CUDA_MEM_SYS_ABI_FALLBACK) proves the
        // committed bindings whatever the headers.
        if matches!(source, Source::Generate | Source::SameHeaders) && !config.abi_fallback {
            write_if_changed(&config.out_dir.join("cuda_mem_sys.rs"), &out.tokens())?;
            let (driver, runtime) = codegen::linked_symbols(&out.file);
            write_if_changed(
                &dir.join("symbols.txt"),
                &release::symbols_text(&driver, &runtime),
            )?;
            return layout_and_functions(&dir, &out.file);
        }
    }

    // The committed bindings: what cuda-mem-sys compiles in their place.
    println!("cargo:rustc-cfg=cuda_mem_sys_fallback");
    let rust = release::fallback_path(&config.crate_dir, config.ptds);
    let symbols = release::symbols_path(&config.crate_dir, config.ptds);
    println!("cargo:rerun-if-changed={}", rust.display());
    println!("cargo:rerun-if-changed={}", symbols.display());
    let read =
        |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("reading {}: {e}", p.display()));
    let text = read(&rust)?;
    write_if_changed(&config.out_dir.join("cuda_mem_sys.rs"), &text)?;
    write_if_changed(&dir.join("symbols.txt"), &read(&symbols)?)?;
    #[cfg(feature = "bindgen")]
    layout_and_functions(
        &dir,
        &syn::parse_file(&text).map_err(|e| format!("parsing {}: {e}", rust.display()))?,
    )?;
    Ok(())
}

/// The proofs hold for the bindings cuda-mem-sys compiled only where both
/// builds chose alike: the same features (a workspace build may unify more
/// onto cuda-mem-sys than this package forwards) and the same inputs.
fn agree_with_cuda_mem_sys(config: &Config, source: Source, found: bool) -> Result<(), String> {
    let dep = |key: &str| std::env::var(format!("DEP_CUDA_MEM_SYS_{key}")).ok();
    let theirs = (
        dep("MODE").is_some_and(|m| m != "linked"),
        dep("BINDINGS").as_deref() == Some("committed-same-headers"),
        dep("FOUND_BY").as_deref() == Some("none"),
    );
    let ours = (
        config.dynamic_loading,
        source == Source::SameHeaders,
        !found,
    );
    if theirs == ours {
        return Ok(());
    }
    let say = |(loaded, same, none): (bool, bool, bool)| {
        format!(
            "{}, {}, {}",
            if loaded { "loaded" } else { "linked" },
            if same {
                "the committed bindings for their very headers"
            } else {
                "not those"
            },
            if none {
                "no headers found"
            } else {
                "headers found"
            }
        )
    };
    Err(format!(
        "cuda-mem-sys was built otherwise than these proofs assume: cuda-mem-sys {}; here {}. \
         Build abi-proofs with the features cuda-mem-sys has (abi-proofs forwards each: \
         `--features dynamic-loading`, not `cuda-mem-sys/dynamic-loading`) and the same \
         environment.",
        say(theirs),
        say(ours)
    ))
}

/// The function table (`tests/abi_symbols.rs`) and the two halves of the
/// layout check (`tests/abi_layout.rs`), from the bindings cuda-mem-sys compiles.
#[cfg(feature = "bindgen")]
fn layout_and_functions(dir: &Path, file: &syn::File) -> Result<(), String> {
    write_if_changed(&dir.join("functions.rs"), &abi_checks::function_table(file))?;
    let layout = layout_check::generate_from(file, "::cuda_mem_sys");
    write_if_changed(&dir.join("layout_rust.rs"), &layout.rust)?;
    write_if_changed(&dir.join("layout_check.c"), &layout.c)
}

/// The C signature checks the ABI tests compile (also for a deliberately
/// wrong declaration, which must fail).
#[cfg(feature = "bindgen")]
fn signature_inputs(
    dir: &Path,
    file: &syn::File,
    tags: &std::collections::BTreeSet<String>,
) -> Result<(), String> {
    use abi_checks::signature_asserts;
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
