//! Step 1: the build's environment as cargo sets it (folders, target, host,
//! features, the C compiler), read once: the other steps take it from
//! [`Config`]; only the variables naming where CUDA is are `locate.rs`'s.
//! Cargo sets these variables for every build script; one missing (the
//! script run by hand) or not text is an error that names it, never a panic.

use std::env::{self, VarError};
use std::path::{Path, PathBuf};

/// Set: the build script says what each of its steps cost.
pub const BUILD_TIMINGS: &str = super::timings::VAR;

/// Set (not empty, not `0`): bindgen runs even for the very headers the
/// committed bindings were made from (`cargo xtask abi` sets it, so that the
/// ABI checks prove the generator's output for that release too).
pub const ALWAYS_GENERATE: &str = "CUDA_MEM_SYS_ALWAYS_GENERATE";

/// `CUDA_VERSION` of every release this crate knows
/// (`release::KNOWN_RELEASES`), for the `cuda_NNNNN` cfgs.
pub fn releases() -> impl Iterator<Item = u32> {
    super::release::KNOWN_RELEASES
        .into_iter()
        .map(|r| super::release::cuda_version(r).expect("KNOWN_RELEASES are major.minor"))
}

/// The cfgs this script may set (besides `cuda_NNNNN`).
const CFGS: [&str; 3] = [
    "cuda_mem_sys_fallback",
    "cuda_mem_sys_load_driver",
    "cuda_mem_sys_load_runtime",
];

pub struct Config {
    /// The crate's folder (`wrapper.h`, `src/generated/`).
    pub crate_dir: PathBuf,
    pub out_dir: PathBuf,
    /// The target and host triples (pkg-config's and cc's variables are read
    /// in their `_<target>` forms).
    pub target: String,
    pub host: String,
    pub target_arch: String,
    pub target_os: String,
    /// `CARGO_CFG_TARGET_ENV` (`gnu`, `msvc`, ...).
    pub target_env: String,
    /// Feature `per-thread-default-stream`.
    pub ptds: bool,
    /// Feature `dynamic-cudart`.
    pub dynamic_cudart: bool,
    /// Feature `dynamic-loading`.
    pub dynamic_loading: bool,
    /// Feature `export-c-names` (the trampolines' C names exported; the
    /// generator's static wrappers ask).
    #[cfg(feature = "bindgen")]
    pub export_c_names: bool,
    /// docs.rs: no CUDA is searched for, nothing linked.
    pub docs_rs: bool,
    /// [`BUILD_TIMINGS`] is set (not empty, not `0`).
    pub timings: bool,
    /// [`ALWAYS_GENERATE`] is set (not empty, not `0`): never the committed
    /// bindings for the very headers found.
    pub always_generate: bool,
    /// The target's C compiler, set up once: its clones share one detection
    /// (cc asks the compiler its family and flags once, not at every use).
    pub cc: cc::Build,
}

impl Config {
    pub fn from_env() -> Result<Config, String> {
        let crate_dir = path_var("CARGO_MANIFEST_DIR")?;
        let out_dir = path_var("OUT_DIR")?;
        // The C compiler reads them (the cc crate); checked here, named when missing.
        let target = text_var("TARGET")?;
        let host = text_var("HOST")?;
        let mut cc = cc::Build::new();
        // Its metadata on: where the C compiler runs (the preprocessor, the
        // stubs, the static inline copies), cc prints `rerun-if-env-changed`
        // for each variable it reads (`CC`, `CFLAGS`, their `_<target>` and
        // `TARGET_` forms, the compiler's own such as `CPATH`); it prints link
        // lines only where it compiles a library, which only the static
        // inline copies do (and link).
        cc.cargo_metadata(true).warnings(false);
        Ok(Config {
            crate_dir,
            out_dir,
            target,
            host,
            target_arch: env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default(),
            target_os: env::var("CARGO_CFG_TARGET_OS").unwrap_or_default(),
            target_env: env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default(),
            ptds: feature("PER_THREAD_DEFAULT_STREAM"),
            dynamic_cudart: feature("DYNAMIC_CUDART"),
            dynamic_loading: feature("DYNAMIC_LOADING"),
            #[cfg(feature = "bindgen")]
            export_c_names: feature("EXPORT_C_NAMES"),
            docs_rs: env::var_os("DOCS_RS").is_some(),
            timings: env::var_os(BUILD_TIMINGS).is_some_and(|v| !v.is_empty() && v != "0"),
            always_generate: env::var_os(ALWAYS_GENERATE)
                .is_some_and(|v| !v.is_empty() && v != "0"),
            cc,
        })
    }

    /// What reruns this script (`wrapper`: `wrapper.h` as the package
    /// running it spells it), and the cfgs it may set.
    pub fn declare(&self, wrapper: &str, vars_read: &[&str]) {
        println!("cargo:rerun-if-changed={wrapper}");
        for var in
            vars_read
                .iter()
                .chain(&["DOCS_RS", "LIBCLANG_PATH", BUILD_TIMINGS, ALWAYS_GENERATE])
        {
            println!("cargo:rerun-if-env-changed={var}");
        }
        for cfg in CFGS {
            println!("cargo::rustc-check-cfg=cfg({cfg})");
        }
        for r in releases() {
            println!("cargo::rustc-check-cfg=cfg(cuda_{r})");
        }
    }

    /// A `cargo:warning` line.
    pub fn warn(&self, text: std::fmt::Arguments) {
        println!("cargo:warning={text}");
    }

    /// Scratch space for the C preprocessor's files.
    pub fn work_dir(&self) -> Result<PathBuf, String> {
        let dir = self.out_dir.join("preprocess");
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        Ok(dir)
    }
}

fn feature(name: &str) -> bool {
    env::var_os(format!("CARGO_FEATURE_{name}")).is_some()
}

fn not_set(name: &str) -> String {
    format!(
        "{name} is not set: cargo sets it for every build script. Build the crate with cargo \
         rather than running its build script by hand."
    )
}

/// A folder cargo names (any bytes: a path need not be UTF-8).
fn path_var(name: &str) -> Result<PathBuf, String> {
    env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| not_set(name))
}

/// A name cargo gives as text (a target triple).
fn text_var(name: &str) -> Result<String, String> {
    match env::var(name) {
        Ok(v) if !v.is_empty() => Ok(v),
        Ok(_) | Err(VarError::NotPresent) => Err(not_set(name)),
        Err(VarError::NotUnicode(v)) => Err(format!(
            "{name} is not UTF-8 ({v:?}): cargo sets it to a target triple."
        )),
    }
}

/// Writes `text` to `path` unless it already holds it (its readers are not
/// rebuilt for nothing).
pub fn write_if_changed(path: &Path, text: &str) -> Result<(), String> {
    if std::fs::read(path).ok().as_deref() == Some(text.as_bytes()) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}
