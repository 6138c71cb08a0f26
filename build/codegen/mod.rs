//! The generator: headers in, one self-contained Rust file out.
//!
//! Shared by `build.rs` (bindings for the headers found at build time) and
//! `cargo xtask regen` (the committed fallback), so both produce identical text.

pub mod abi_checks;
mod bindgen_config;
mod docs;
mod groups;
mod postprocess;
pub mod preprocess;

use std::path::{Path, PathBuf};

/// The reference release of the committed fallback bindings.
pub const PINNED_RELEASE: &str = "13.0";
pub const WRAPPER: &str = "#include \"wrapper.h\"\n";
/// Defined by the `per-thread-default-stream` feature.
pub const PTDS_DEFINE: &str = "CUDA_API_PER_THREAD_DEFAULT_STREAM";

pub struct Input<'a> {
    pub include_dirs: &'a [PathBuf],
    /// The folder holding `wrapper.h`.
    pub crate_dir: &'a Path,
    /// Scratch space for the preprocessor's files.
    pub work_dir: &'a Path,
    /// A `cc::Build` set up for the target (the caller knows its context).
    pub cc: cc::Build,
    pub per_thread_default_stream: bool,
}

pub struct Output {
    pub cuda_version: u32,
    /// The generated Rust source.
    pub rust: String,
    /// Every header the preprocessor read (for `rerun-if-changed`).
    pub headers_read: Vec<PathBuf>,
    /// C source of out-of-line copies of the headers' `static inline`
    /// functions (`<name>__extern`), if the bindings declare any.
    pub static_wrappers_c: Option<String>,
    /// `struct X`/`union X`/`enum X` tags of the headers (to spell C types).
    pub c_tags: std::collections::BTreeSet<String>,
}

pub fn generate(input: &Input) -> Result<Output, String> {
    let mut include_dirs = input.include_dirs.to_vec();
    include_dirs.push(input.crate_dir.to_path_buf());
    let defines: Vec<&'static str> = if input.per_thread_default_stream {
        vec![PTDS_DEFINE]
    } else {
        vec![]
    };
    let pp = preprocess::Preprocessor {
        cc: input.cc.clone(),
        include_dirs: &include_dirs,
        defines: defines.clone(),
        work_dir: input.work_dir,
    };
    let cuda_version = pp.cuda_version().map_err(|e| {
        format!(
            "{} does not preprocess: the C preprocessor stopped on `#include <cuda.h>` (its \
             messages are above). The headers are damaged or incomplete: point \
             CUDA_MEM_SYS_INCLUDE_DIR at a complete CUDA include folder (`cargo xtask headers \
             <version>` fetches one). ({e})",
            input.include_dirs[0].join("cuda.h").display()
        )
    })?;
    if cuda_version < 12000 {
        return Err(format!(
            "the CUDA headers in {} are release {}.{} (CUDA_VERSION {cuda_version}); \
             cuda-mem-sys needs 12.0 or newer. Point CUDA_MEM_SYS_INCLUDE_DIR at newer headers \
             (`cargo xtask headers 13.0` fetches them).",
            input.include_dirs[0].display(),
            cuda_version / 1000,
            cuda_version % 1000 / 10
        ));
    }
    let (macros, files, preprocessed) = pp.macros(WRAPPER)?;
    let c_tags = abi_checks::c_tags(&preprocessed);
    let headers_read: Vec<PathBuf> = files
        .into_iter()
        .filter(|f| input.include_dirs.iter().any(|d| f.starts_with(d)))
        .collect();

    let static_wrappers = input.work_dir.join("static_wrappers");
    let _ = std::fs::remove_file(static_wrappers.with_extension("c"));
    let bindings = bindgen_config::builder(
        &input.crate_dir.join("wrapper.h"),
        &include_dirs,
        &defines,
        &static_wrappers,
    )
    .generate()
    .map_err(|e| format!("bindgen could not parse the CUDA headers: {e}"))?
    .to_string();

    let macros: Vec<_> = macros
        .into_iter()
        .filter(|m| include_dirs.iter().any(|d| m.file.starts_with(d)))
        .collect();
    let rust = postprocess::run(
        &postprocess::Context {
            pp: &pp,
            wrapper: WRAPPER,
            macros: &macros,
            cuda_version,
            per_thread_default_stream: input.per_thread_default_stream,
        },
        &bindings,
    )?;
    Ok(Output {
        cuda_version,
        rust,
        headers_read,
        static_wrappers_c: std::fs::read_to_string(static_wrappers.with_extension("c"))
            .ok()
            .filter(|c| c.contains("__extern")),
        c_tags,
    })
}

/// The committed bindings used when no headers are found.
pub fn fallback_path(crate_dir: &Path, per_thread_default_stream: bool) -> PathBuf {
    let suffix = if per_thread_default_stream {
        "-ptds"
    } else {
        ""
    };
    crate_dir.join(format!("src/generated/cuda-{PINNED_RELEASE}{suffix}.rs"))
}

/// `CUDA_VERSION` of [`PINNED_RELEASE`].
pub fn pinned_cuda_version() -> u32 {
    let (major, minor) = PINNED_RELEASE.split_once('.').unwrap();
    major.parse::<u32>().unwrap() * 1000 + minor.parse::<u32>().unwrap() * 10
}

/// The symbols generated code links to, split into driver (`cu*`) and
/// runtime (`cuda*`) ones; read back from the generated text itself.
pub fn linked_symbols(rust: &str) -> Result<(Vec<String>, Vec<String>), String> {
    let mut driver = vec![];
    let mut runtime = vec![];
    for f in postprocess::foreign_functions(rust)? {
        let list = if f.name.starts_with("cuda") {
            &mut runtime
        } else {
            &mut driver
        };
        // A `static inline` function's copy (`__extern`) is compiled into the crate.
        let symbol = Some(f.symbol).filter(|s| !s.ends_with("__extern"));
        for s in symbol.into_iter().chain([f.name]) {
            if !list.contains(&s) {
                list.push(s);
            }
        }
    }
    Ok((driver, runtime))
}
