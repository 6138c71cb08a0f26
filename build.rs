//! Finds CUDA, generates the bindings, detects the release, links.
//! Each concern lives in its own file under `build/`.

#[path = "build/codegen/mod.rs"]
mod codegen;
#[path = "build/codegen/layout_check.rs"]
mod layout_check;
#[path = "build/link.rs"]
mod link;
#[path = "build/locate.rs"]
mod locate;

use std::env;
use std::path::{Path, PathBuf};

/// `CUDA_VERSION` of every release this crate knows, for the `cuda_NNNNN` cfgs.
const RELEASES: [u32; 16] = [
    12000, 12010, 12020, 12030, 12040, 12050, 12060, 12080, 12090, 13000, 13010, 13020, 13030,
    13040, 13050, 13060,
];

/// Set: use the committed bindings even where headers are found (their ABI check).
const ABI_FALLBACK: &str = "CUDA_MEM_SYS_ABI_FALLBACK";

fn main() {
    if let Err(message) = run() {
        eprintln!("\ncuda-mem-sys: {message}\n");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let ptds = env::var_os("CARGO_FEATURE_PER_THREAD_DEFAULT_STREAM").is_some();
    let dynamic_cudart = env::var_os("CARGO_FEATURE_DYNAMIC_CUDART").is_some();
    let dynamic_loading = env::var_os("CARGO_FEATURE_DYNAMIC_LOADING").is_some();

    println!("cargo:rerun-if-changed=wrapper.h");
    for var in locate::env_vars_read()
        .into_iter()
        .chain(["DOCS_RS", "LIBCLANG_PATH", ABI_FALLBACK])
    {
        println!("cargo:rerun-if-env-changed={var}");
    }
    for cfg in [
        "cuda_mem_sys_fallback",
        "cuda_mem_sys_load_driver",
        "cuda_mem_sys_load_runtime",
    ] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    for r in RELEASES {
        println!("cargo::rustc-check-cfg=cfg(cuda_{r})");
    }

    let docs_rs = env::var_os("DOCS_RS").is_some();
    let search = if docs_rs {
        locate::Search::NotFound {
            searched: vec!["nothing (DOCS_RS is set)".into()],
        }
    } else {
        locate::find(&arch)
    };
    let (rust, cuda_version, cuda) = match search {
        locate::Search::Invalid(message) => return Err(message),
        locate::Search::Found(cuda) => {
            require_libclang()?;
            let work_dir = out_dir.join("preprocess");
            std::fs::create_dir_all(&work_dir).map_err(|e| e.to_string())?;
            let mut cc = cc::Build::new();
            cc.cargo_metadata(false).warnings(false);
            let out = codegen::generate(&codegen::Input {
                include_dirs: &cuda.include_dirs,
                crate_dir: &crate_dir,
                work_dir: &work_dir,
                cc,
                per_thread_default_stream: ptds,
            })?;
            for h in &out.headers_read {
                println!("cargo:rerun-if-changed={}", h.display());
            }
            write_abi_check_inputs(&out_dir, &out.rust, &out.c_tags)?;
            if let Some(c) = &out.static_wrappers_c {
                compile_static_wrappers(&out_dir, c, &cuda.include_dirs, &crate_dir, ptds)?;
            }
            let dirs = env::join_paths(&cuda.include_dirs).map_err(|e| e.to_string())?;
            println!(
                "cargo:rustc-env=CUDA_MEM_SYS_INCLUDE_DIRS={}",
                dirs.to_string_lossy()
            );
            (out.rust, out.cuda_version, Some(cuda))
        }
        locate::Search::NotFound { searched } => {
            let file = codegen::fallback_path(&crate_dir, ptds);
            println!("cargo:rerun-if-changed={}", file.display());
            if !docs_rs {
                println!(
                    "cargo:warning=no CUDA headers found (searched: {}); using the bindings \
                     committed for CUDA {}. Set CUDA_MEM_SYS_INCLUDE_DIR or CUDA_PATH to generate \
                     them from your headers.",
                    searched.join(", "),
                    codegen::PINNED_RELEASE
                );
            }
            println!("cargo:rustc-cfg=cuda_mem_sys_fallback");
            println!("cargo:fallback=1");
            let rust = std::fs::read_to_string(&file)
                .map_err(|e| format!("reading {}: {e}", file.display()))?;
            let version = codegen::pinned_cuda_version();
            (rust, version, None)
        }
    };
    // `cargo xtask abi fallback`: the committed bindings, checked against the headers found.
    let (rust, cuda_version) = match &cuda {
        Some(_) if env::var_os(ABI_FALLBACK).is_some() => {
            let file = codegen::fallback_path(&crate_dir, ptds);
            println!("cargo:rerun-if-changed={}", file.display());
            println!("cargo:rustc-cfg=cuda_mem_sys_fallback");
            let rust = std::fs::read_to_string(&file)
                .map_err(|e| format!("{ABI_FALLBACK}: reading {}: {e}", file.display()))?;
            (rust, codegen::pinned_cuda_version())
        }
        _ => (rust, cuda_version),
    };
    write_if_changed(&out_dir.join("cuda_mem_sys.rs"), &rust)?;
    std::fs::create_dir_all(out_dir.join("abi")).map_err(|e| e.to_string())?;
    write_if_changed(
        &out_dir.join("abi/functions.rs"),
        &codegen::abi_checks::function_table(&rust)?,
    )?;
    // The ABI tests compile C for the target with the host's cross compiler.
    for (var, name) in [
        ("TARGET", "CUDA_MEM_SYS_TARGET"),
        ("HOST", "CUDA_MEM_SYS_HOST"),
    ] {
        println!("cargo:rustc-env={name}={}", env::var(var).unwrap());
    }
    // The target's C compiler as found here (a test running under Wine would
    // otherwise look for a Windows `gcc.exe`).
    if let Ok(cc) = cc::Build::new().cargo_metadata(false).try_get_compiler() {
        println!(
            "cargo:rustc-env=CUDA_MEM_SYS_TARGET_CC={}",
            cc.path().display()
        );
    }
    // The two halves of the layout check (tests/abi_layout.rs), from the final text.
    let layout = layout_check::generate(&rust, "::cuda_mem_sys")?;
    write_if_changed(&out_dir.join("abi/layout_rust.rs"), &layout.rust)?;
    write_if_changed(&out_dir.join("abi/layout_check.c"), &layout.c)?;

    for r in RELEASES.iter().filter(|&&r| r <= cuda_version) {
        println!("cargo:rustc-cfg=cuda_{r}");
    }
    println!("cargo:version_number={cuda_version}");
    if let Some(cuda) = &cuda {
        let dirs = env::join_paths(&cuda.include_dirs).map_err(|e| e.to_string())?;
        println!("cargo:include={}", dirs.to_string_lossy());
        println!("cargo:found_by={}", cuda.found_by);
    }

    if dynamic_loading {
        println!("cargo:rustc-cfg=cuda_mem_sys_load_driver");
    }
    if docs_rs {
        return Ok(());
    }
    let (driver_symbols, runtime_symbols) = codegen::linked_symbols(&rust)?;
    let no_dirs = vec![];
    let linked = link::emit(&link::Plan {
        lib_dirs: cuda.as_ref().map_or(&no_dirs, |c| &c.lib_dirs),
        dynamic_cudart,
        out_dir: &out_dir,
        driver_symbols: &driver_symbols,
        runtime_symbols: &runtime_symbols,
        runtime_soname_major: cuda_version / 1000,
        dynamic_loading,
    })?;
    if linked.runtime_loaded {
        println!("cargo:rustc-cfg=cuda_mem_sys_load_runtime");
    }
    println!(
        "cargo:mode={}",
        match (dynamic_loading, linked.runtime_loaded) {
            (false, _) => "linked",
            (true, false) => "loaded-driver,static-runtime",
            (true, true) => "loaded",
        }
    );
    Ok(())
}

/// bindgen loads libclang at run time; say what to install instead of panicking.
fn require_libclang() -> Result<(), String> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let version = std::panic::catch_unwind(bindgen::clang_version);
    std::panic::set_hook(hook);
    let version = version.map_err(|_| {
        "libclang was not found (bindgen needs it to read the CUDA headers). Install it \
         (Debian/Ubuntu: `apt-get install libclang-19-dev`) or set LIBCLANG_PATH to the folder \
         holding libclang.so."
            .to_string()
    })?;
    if let Some((major, _)) = version.parsed {
        if major < 19 {
            println!(
                "cargo:warning=libclang {major} drops the doc comments of most macro-renamed \
                 functions; install libclang 19 or newer (Debian 12: libclang-19-dev) for full docs."
            );
        }
    }
    Ok(())
}

/// Out-of-line copies of the `static inline` functions the bindings declare,
/// compiled by the C compiler against the same headers.
fn compile_static_wrappers(
    out_dir: &Path,
    c: &str,
    include_dirs: &[PathBuf],
    crate_dir: &Path,
    ptds: bool,
) -> Result<(), String> {
    let file = out_dir.join("static_wrappers.c");
    write_if_changed(&file, c)?;
    let mut b = cc::Build::new();
    b.file(&file)
        .includes(include_dirs)
        .include(crate_dir)
        .warnings(false);
    if ptds {
        b.define(codegen::PTDS_DEFINE, None);
    }
    b.try_compile("cuda_mem_sys_static_wrappers")
        .map_err(|e| format!("compiling the static inline wrappers: {e}"))
}

/// The C signature checks the ABI tests compile (also for a deliberately
/// wrong declaration, which must fail).
fn write_abi_check_inputs(
    out_dir: &Path,
    rust: &str,
    tags: &std::collections::BTreeSet<String>,
) -> Result<(), String> {
    let dir = out_dir.join("abi");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let (c, checked, skipped) = codegen::abi_checks::signature_asserts(rust, rust, tags)?;
    write_if_changed(&dir.join("signatures.c"), &c)?;
    write_if_changed(
        &dir.join("signatures.txt"),
        &format!("checked {checked}\n{}", skipped.join("\n")),
    )?;
    // cuMemAdvise as CUDA 12 declared it: a CUdevice where 13.0 takes a CUmemLocation.
    let wrong = "extern \"C\" { pub fn cuMemAdvise(devPtr: CUdeviceptr, count: usize, \
                 advice: CUmem_advise, device: CUdevice) -> CUresult; }";
    let (c, _, _) = codegen::abi_checks::signature_asserts(wrong, rust, tags)?;
    write_if_changed(&dir.join("signatures_wrong.c"), &c)
}

fn write_if_changed(path: &Path, text: &str) -> Result<(), String> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}
