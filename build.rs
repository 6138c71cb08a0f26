//! Finds CUDA, generates the bindings (or takes the committed ones), detects
//! the release, links. Each concern lives in its own file under `build/`.
//!
//! It runs unoptimised in every dependent's build, so it does little: the
//! generated text is parsed once and every later step reads that tree; it is
//! written to `OUT_DIR` as compact tokens, not pretty-printed; the ABI tests'
//! inputs are compiled in only when the crate's own tests are built (feature
//! `abi-test-inputs`, which the crate's dev-dependency on itself turns on).
//! Without the `bindgen` feature nothing here needs syn, bindgen or libclang.

#[cfg(feature = "bindgen")]
#[path = "build/codegen/mod.rs"]
// Without `abi-test-inputs` the ABI tests' generators are compiled out, not
// just skipped: this script is compiled unoptimised in every dependent's build.
#[cfg_attr(not(feature = "abi-test-inputs"), allow(dead_code))]
mod codegen;
#[cfg(all(feature = "bindgen", feature = "abi-test-inputs"))]
#[path = "build/codegen/layout_check.rs"]
#[allow(dead_code)] // `generate` (from text) serves tests/abi_bad_input.rs
mod layout_check;
#[path = "build/link.rs"]
mod link;
#[path = "build/locate.rs"]
mod locate;
// Without the generator, its two syn-free parts alone.
#[cfg(not(feature = "bindgen"))]
#[path = "build/codegen/preprocess.rs"]
#[allow(dead_code)] // only `cuda_version` is asked here; the generator asks the rest
mod preprocess;
#[cfg(not(feature = "bindgen"))]
#[path = "build/codegen/release.rs"]
#[allow(dead_code)] // `symbols_text` serves the generator
mod release;
#[cfg(feature = "bindgen")]
use codegen::{preprocess, release};

use std::env;
use std::path::{Path, PathBuf};

/// `CUDA_VERSION` of every release this crate knows, for the `cuda_NNNNN` cfgs.
const RELEASES: [u32; 16] = [
    12000, 12010, 12020, 12030, 12040, 12050, 12060, 12080, 12090, 13000, 13010, 13020, 13030,
    13040, 13050, 13060,
];

/// Set: use the committed bindings even where headers are found (their ABI check).
const ABI_FALLBACK: &str = "CUDA_MEM_SYS_ABI_FALLBACK";

/// The bindings this build compiles.
enum Bindings {
    /// Generated from the headers found (feature `bindgen`).
    #[cfg(feature = "bindgen")]
    Generated(Box<codegen::Output>),
    /// The committed file of [`release::PINNED_RELEASE`]. `fallback`: in place
    /// of generated ones (no headers, no libclang, no `bindgen` feature), the
    /// `cuda_mem_sys_fallback` cfg; else they are what the generator would
    /// write from the headers found (the same headers, see
    /// [`release::same_inputs`]). `other_release`: the headers found are of
    /// another release, which only `dynamic-loading` allows: their libraries
    /// are not linked, and every function is looked up at run time.
    Committed { fallback: bool, other_release: bool },
}

impl Bindings {
    /// The committed bindings, for headers of their own release (or none).
    fn committed(fallback: bool) -> Self {
        Bindings::Committed {
            fallback,
            other_release: false,
        }
    }
}

fn main() {
    if let Err(message) = run() {
        eprintln!("\ncuda-mem-sys: {message}\n");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let crate_dir = PathBuf::from(cargo_var_os("CARGO_MANIFEST_DIR")?);
    let out_dir = PathBuf::from(cargo_var_os("OUT_DIR")?);
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let ptds = env::var_os("CARGO_FEATURE_PER_THREAD_DEFAULT_STREAM").is_some();
    let dynamic_cudart = env::var_os("CARGO_FEATURE_DYNAMIC_CUDART").is_some();
    let test_inputs = cfg!(feature = "abi-test-inputs");
    let dynamic_loading = env::var_os("CARGO_FEATURE_DYNAMIC_LOADING").is_some();
    // The target's C compiler, set up once: its clones share one detection
    // (cc asks the compiler its family and flags once, not at every use).
    let mut cc = cc::Build::new();
    cc.cargo_metadata(false).warnings(false);

    println!("cargo:rerun-if-changed=wrapper.h");
    for var in locate::env_vars_read()
        .into_iter()
        .chain(["DOCS_RS", "LIBCLANG_PATH", ABI_FALLBACK])
    {
        println!("cargo:rerun-if-env-changed={var}");
    }
    for cfg in [
        "cuda_mem_sys_fallback",
        "cuda_mem_sys_same_headers",
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
    let work_dir = out_dir.join("preprocess");
    let (bindings, cuda) = match search {
        locate::Search::Invalid(message) => return Err(message),
        locate::Search::Found(cuda) => {
            std::fs::create_dir_all(&work_dir).map_err(|e| e.to_string())?;
            // The committed bindings stand for generated ones where the headers
            // are those they were generated from, for a target they are proven
            // on; not where the ABI tests' inputs (made from a fresh
            // generation) are wanted, nor with the per-thread default stream
            // (its `static inline` copies are compiled from the generator's C).
            let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
            let reuse = !ptds
                && !test_inputs
                && os == "linux"
                && ["x86_64", "aarch64"].contains(&arch.as_str());
            let b = from_headers(
                &cuda,
                &crate_dir,
                &work_dir,
                &cc,
                ptds,
                reuse,
                dynamic_loading,
            )?;
            let dirs = env::join_paths(&cuda.include_dirs).map_err(|e| e.to_string())?;
            println!(
                "cargo:rustc-env=CUDA_MEM_SYS_INCLUDE_DIRS={}",
                dirs.to_string_lossy()
            );
            (b, Some(cuda))
        }
        locate::Search::NotFound { searched } => {
            if !docs_rs {
                println!(
                    "cargo:warning=no CUDA headers found (searched: {}); using the bindings \
                     committed for CUDA {}. Set CUDA_MEM_SYS_INCLUDE_DIR or CUDA_PATH to generate \
                     them from your headers.",
                    searched.join(", "),
                    release::PINNED_RELEASE
                );
            }
            println!("cargo:fallback=1");
            (Bindings::committed(true), None)
        }
    };
    // `cargo xtask abi fallback`: the committed bindings, checked against the headers found.
    let bindings = match bindings {
        #[cfg(feature = "bindgen")]
        Bindings::Generated(_out) if env::var_os(ABI_FALLBACK).is_some() => {
            #[cfg(feature = "abi-test-inputs")]
            write_signature_inputs(&out_dir, &_out.file, &_out.c_tags)?;
            Bindings::committed(true)
        }
        b => b,
    };

    let committed = release::fallback_path(&crate_dir, ptds);
    let symbols = release::symbols_path(&crate_dir, ptds);
    let (cuda_version, (driver_symbols, runtime_symbols)) = match &bindings {
        #[cfg(feature = "bindgen")]
        Bindings::Generated(out) => {
            write_if_changed(&out_dir.join("cuda_mem_sys.rs"), &out.tokens())?;
            #[cfg(feature = "abi-test-inputs")]
            {
                write_signature_inputs(&out_dir, &out.file, &out.c_tags)?;
                write_test_inputs(&out_dir, &out.file)?;
            }
            let symbols = codegen::linked_symbols(&out.file);
            if test_inputs {
                // tests/fallback.rs: the committed list must equal this one.
                std::fs::create_dir_all(out_dir.join("abi")).map_err(|e| e.to_string())?;
                write_if_changed(
                    &out_dir.join("abi/symbols.txt"),
                    &release::symbols_text(&symbols.0, &symbols.1),
                )?;
            }
            if let (Some(c), Some(cuda)) = (&out.static_wrappers_c, &cuda) {
                // Loaded without `export-c-names`: the copies call the private names.
                let private =
                    dynamic_loading && env::var_os("CARGO_FEATURE_EXPORT_C_NAMES").is_none();
                compile_static_wrappers(
                    &out_dir,
                    &cc,
                    c,
                    &cuda.include_dirs,
                    &crate_dir,
                    ptds,
                    private,
                )?;
            }
            (out.cuda_version, symbols)
        }
        Bindings::Committed { fallback, .. } => {
            println!("cargo:rerun-if-changed={}", committed.display());
            println!("cargo:rerun-if-changed={}", symbols.display());
            if *fallback {
                println!("cargo:rustc-cfg=cuda_mem_sys_fallback");
            }
            let rust = std::fs::read_to_string(&committed)
                .map_err(|e| format!("reading {}: {e}", committed.display()))?;
            write_if_changed(&out_dir.join("cuda_mem_sys.rs"), &rust)?;
            #[cfg(all(feature = "bindgen", feature = "abi-test-inputs"))]
            {
                let file = syn::parse_file(&rust)
                    .map_err(|e| format!("parsing {}: {e}", committed.display()))?;
                write_test_inputs(&out_dir, &file)?;
            }
            let text = std::fs::read_to_string(&symbols)
                .map_err(|e| format!("reading {}: {e}", symbols.display()))?;
            if test_inputs {
                std::fs::create_dir_all(out_dir.join("abi")).map_err(|e| e.to_string())?;
                write_if_changed(&out_dir.join("abi/symbols.txt"), &text)?;
            }
            (
                release::pinned_cuda_version(),
                release::read_symbols(&text)?,
            )
        }
    };
    // The ABI tests compile C for the target with the host's cross compiler.
    for (var, name) in [
        ("TARGET", "CUDA_MEM_SYS_TARGET"),
        ("HOST", "CUDA_MEM_SYS_HOST"),
    ] {
        let value = env::var(var).map_err(|e| format!("{var}: {e} (cargo sets it)"))?;
        println!("cargo:rustc-env={name}={value}");
    }
    // The target's C compiler as found here (a test running under Wine would
    // otherwise look for a Windows `gcc.exe`).
    if let Ok(tool) = cc.try_get_compiler() {
        println!(
            "cargo:rustc-env=CUDA_MEM_SYS_TARGET_CC={}",
            tool.path().display()
        );
    }

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
    let no_dirs = vec![];
    // Another release's libraries are not linked under the committed
    // bindings: no folder to search, and the runtime loaded like a shared one.
    let other_release = matches!(
        bindings,
        Bindings::Committed {
            other_release: true,
            ..
        }
    );
    let linked = link::emit(&link::Plan {
        lib_dirs: match &cuda {
            Some(c) if !other_release => &c.lib_dirs,
            _ => &no_dirs,
        },
        dynamic_cudart: dynamic_cudart || other_release,
        out_dir: &out_dir,
        cc: &cc,
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

/// A variable cargo sets for build scripts, as the system holds it (a path
/// need not be UTF-8); an error naming it where it is missing.
fn cargo_var_os(name: &str) -> Result<std::ffi::OsString, String> {
    env::var_os(name).ok_or_else(|| {
        format!("{name} is not set: this build script is meant to be run by cargo, which sets it")
    })
}

/// Headers were found: generate from them where bindgen can run; otherwise the
/// committed bindings, if (and only if) the headers are of their release.
fn from_headers(
    cuda: &locate::Cuda,
    crate_dir: &Path,
    work_dir: &Path,
    cc: &cc::Build,
    ptds: bool,
    reuse: bool,
    dynamic_loading: bool,
) -> Result<Bindings, String> {
    #[cfg(feature = "bindgen")]
    {
        let inputs = release::inputs_path(crate_dir, false);
        println!("cargo:rerun-if-changed={}", inputs.display());
        let same = std::fs::read_to_string(&inputs)
            .ok()
            .and_then(|text| release::same_inputs(&text, &cuda.include_dirs));
        if let Some(headers) = same {
            // The headers of the committed bindings (tests/build_errors.rs
            // checks the reuse below only with those).
            println!("cargo:rustc-cfg=cuda_mem_sys_same_headers");
            if reuse {
                for h in headers {
                    println!("cargo:rerun-if-changed={}", h.display());
                }
                println!("cargo:bindings=committed-same-headers");
                return Ok(Bindings::committed(false));
            }
        }
        match libclang() {
            Ok(()) => {
                let out = codegen::generate(&codegen::Input {
                    include_dirs: &cuda.include_dirs,
                    crate_dir,
                    work_dir,
                    cc: cc.clone(),
                    per_thread_default_stream: ptds,
                })?;
                for h in &out.headers_read {
                    println!("cargo:rerun-if-changed={}", h.display());
                }
                Ok(Bindings::Generated(Box::new(out)))
            }
            Err(why) => {
                let version = headers_version(cuda, crate_dir, work_dir, cc)?;
                if version != release::pinned_cuda_version() {
                    return other_release(cuda, version, dynamic_loading, why);
                }
                println!(
                    "cargo:warning=libclang was not found, so bindgen cannot read the CUDA headers \
                     in {}; they are release {}, that of the committed bindings, which are used \
                     instead. Install libclang (Debian/Ubuntu: libclang-19-dev) or set \
                     LIBCLANG_PATH to generate them from your headers.",
                    cuda.include_dirs[0].display(),
                    release::PINNED_RELEASE
                );
                Ok(Bindings::committed(true))
            }
        }
    }
    #[cfg(not(feature = "bindgen"))]
    {
        let _ = (ptds, reuse);
        let version = headers_version(cuda, crate_dir, work_dir, cc)?;
        if version != release::pinned_cuda_version() {
            return other_release(
                cuda,
                version,
                dynamic_loading,
                format!(
                    "the CUDA headers in {} are release {}.{} (CUDA_VERSION {version}), and this \
                 build has no `bindgen` feature: its committed bindings declare CUDA {}, and \
                 linking them against another release's libraries is an ABI mismatch. Either \
                 turn on the `bindgen` feature (a default feature; it needs libclang) to generate \
                 the bindings from these headers, or use the `dynamic-loading` feature, which \
                 checks each function at run time, or point CUDA_MEM_SYS_INCLUDE_DIR at CUDA {} \
                 headers.",
                    cuda.include_dirs[0].display(),
                    version / 1000,
                    version % 1000 / 10,
                    release::PINNED_RELEASE,
                    release::PINNED_RELEASE
                ),
            );
        }
        Ok(Bindings::committed(true))
    }
}

/// Headers of a release other than the committed bindings', which cannot be
/// generated from here: with `dynamic-loading` the committed bindings serve,
/// nothing of that release is linked and each function is looked up when first
/// called (a driver or runtime without it returns the loader's documented
/// codes); without it, `refusal`.
fn other_release(
    cuda: &locate::Cuda,
    version: u32,
    dynamic_loading: bool,
    refusal: String,
) -> Result<Bindings, String> {
    if !dynamic_loading {
        return Err(refusal);
    }
    println!(
        "cargo:warning=the CUDA headers in {} are release {}.{}, not that of the committed \
         bindings ({}), which are used: with `dynamic-loading` nothing of that release is linked \
         (the runtime too is loaded at run time, that of CUDA {}), and each function is looked up when \
         first called.",
        cuda.include_dirs[0].display(),
        version / 1000,
        version % 1000 / 10,
        release::PINNED_RELEASE,
        release::pinned_cuda_version() / 1000
    );
    Ok(Bindings::Committed {
        fallback: true,
        other_release: true,
    })
}

/// `CUDA_VERSION` of the headers found, from the C preprocessor (one run over `cuda.h`).
fn headers_version(
    cuda: &locate::Cuda,
    crate_dir: &Path,
    work_dir: &Path,
    cc: &cc::Build,
) -> Result<u32, String> {
    // Headers replaced in place (a toolkit upgrade) must be checked again.
    if let Some(h) = cuda
        .include_dirs
        .iter()
        .map(|d| d.join("cuda.h"))
        .find(|h| h.is_file())
    {
        println!("cargo:rerun-if-changed={}", h.display());
    }
    let mut include_dirs = cuda.include_dirs.clone();
    include_dirs.push(crate_dir.to_path_buf());
    let version = preprocess::Preprocessor {
        cc: cc.clone(),
        include_dirs: &include_dirs,
        defines: vec![],
        work_dir,
    }
    .cuda_version()?;
    release::check_release(&cuda.include_dirs[0], version)?;
    Ok(version)
}

/// bindgen loads libclang at run time; say what to install instead of panicking.
#[cfg(feature = "bindgen")]
fn libclang() -> Result<(), String> {
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
#[cfg(feature = "bindgen")]
fn compile_static_wrappers(
    out_dir: &Path,
    cc: &cc::Build,
    c: &str,
    include_dirs: &[PathBuf],
    crate_dir: &Path,
    ptds: bool,
    private_trampolines: bool,
) -> Result<(), String> {
    let file = out_dir.join("static_wrappers.c");
    write_if_changed(&file, c)?;
    let mut b = cc.clone();
    b.cargo_metadata(true)
        .file(&file)
        .includes(include_dirs)
        .include(crate_dir);
    if ptds {
        b.define(release::PTDS_DEFINE, None);
    }
    if private_trampolines {
        b.define(codegen::loader::PRIVATE_DEFINE, None);
    }
    b.try_compile("cuda_mem_sys_static_wrappers")
        .map_err(|e| format!("compiling the static inline wrappers: {e}"))
}

/// The function table (`tests/abi_symbols.rs`) and the two halves of the
/// layout check (`tests/abi_layout.rs`), from the final bindings.
#[cfg(all(feature = "bindgen", feature = "abi-test-inputs"))]
fn write_test_inputs(out_dir: &Path, file: &syn::File) -> Result<(), String> {
    let dir = out_dir.join("abi");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    write_if_changed(
        &dir.join("functions.rs"),
        &codegen::abi_checks::function_table(file),
    )?;
    let layout = layout_check::generate_from(file, "::cuda_mem_sys");
    write_if_changed(&dir.join("layout_rust.rs"), &layout.rust)?;
    write_if_changed(&dir.join("layout_check.c"), &layout.c)
}

/// The C signature checks the ABI tests compile (also for a deliberately
/// wrong declaration, which must fail).
#[cfg(all(feature = "bindgen", feature = "abi-test-inputs"))]
fn write_signature_inputs(
    out_dir: &Path,
    file: &syn::File,
    tags: &std::collections::BTreeSet<String>,
) -> Result<(), String> {
    let dir = out_dir.join("abi");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let (c, checked, skipped) = codegen::abi_checks::signature_asserts(file, file, tags);
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
    let (c, _, _) = codegen::abi_checks::signature_asserts(&wrong, file, tags);
    write_if_changed(&dir.join("signatures_wrong.c"), &c)
}

fn write_if_changed(path: &Path, text: &str) -> Result<(), String> {
    if std::fs::read(path).ok().as_deref() == Some(text.as_bytes()) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}
