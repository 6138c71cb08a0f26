//! Where CUDA is: the one place that knows how to find the headers and libraries.
//!
//! Shared by the build script and, through `shared.rs` (one `#[path]` mount
//! each), by xtask and abi-proofs.

use std::env;
use std::path::{Path, PathBuf};

/// The variable naming the CUDA include directory (searched first).
pub const INCLUDE_DIR_VAR: &str = "CUDA_MEM_SYS_INCLUDE_DIR";
/// Environment variables read, in search order, each naming a CUDA root
/// (or, for the first, an include directory).
pub const ROOT_VARS: [&str; 5] = [
    INCLUDE_DIR_VAR,
    "CUDA_PATH",
    "CUDA_HOME",
    "CUDA_ROOT",
    "CUDA_TOOLKIT_ROOT_DIR",
];
/// Overrides the directories searched for `libcudart` and `libcuda`.
pub const LIB_DIR_VAR: &str = "CUDA_MEM_SYS_LIB_DIR";

/// A CUDA installation: header directories (the one holding `cuda.h` first,
/// then one holding `crt/host_defines.h` if it is elsewhere) and candidate
/// library directories.
#[derive(Debug, Clone)]
pub struct Cuda {
    pub include_dirs: Vec<PathBuf>,
    pub lib_dirs: Vec<PathBuf>,
    /// How it was found, for the build log: `CUDA_PATH=/usr/local/cuda`.
    pub found_by: String,
}

#[derive(Debug)]
pub enum Search {
    Found(Cuda),
    /// Nothing set and nothing in the default places: the caller may fall back.
    NotFound {
        searched: Vec<String>,
    },
    /// Something was set but is wrong: always an error, never a fallback.
    Invalid(String),
}

/// Every environment variable `find` may read (for `rerun-if-env-changed`).
pub fn env_vars_read() -> Vec<&'static str> {
    let mut v = ROOT_VARS.to_vec();
    v.extend([LIB_DIR_VAR, "PATH"]);
    v
}

/// A variable's value: `Ok(None)` where it is unset or blank, an error
/// naming it where it is not valid UTF-8 (its path could not be passed on to
/// the C compiler, bindgen and cargo as text; never taken as unset, which
/// would silently build against something else).
fn non_empty_env(name: &str) -> Result<Option<String>, String> {
    match env::var(name) {
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => Ok(Some(v)),
        Err(env::VarError::NotPresent) => Ok(None),
        Err(env::VarError::NotUnicode(raw)) => Err(format!(
            "{name} is set but is not valid UTF-8 ({}): the build passes the folders it names to \
             the C compiler, bindgen and cargo as text. Move CUDA (or link it) to a folder whose \
             path is UTF-8 and point {name} there, or unset it.",
            raw.to_string_lossy()
        )),
    }
}

/// The `targets/<triple>` folder name of the toolkit for a Rust target arch.
fn toolkit_target_dirs(arch: &str) -> &'static [&'static str] {
    match arch {
        "aarch64" => &["sbsa-linux", "aarch64-linux"],
        "powerpc64" => &["ppc64le-linux"],
        _ => &["x86_64-linux"],
    }
}

/// Include directories that may hold `cuda.h` under `root`: the toolkit's
/// two layouts and the Python wheels' (`nvidia/cu13`, `nvidia/cuda_runtime`).
fn include_candidates(root: &Path, arch: &str) -> Vec<PathBuf> {
    let mut c = vec![root.to_path_buf(), root.join("include")];
    for t in toolkit_target_dirs(arch) {
        c.push(root.join("targets").join(t).join("include"));
    }
    for wheel in ["nvidia/cu13/include", "nvidia/cuda_runtime/include"] {
        c.push(root.join(wheel));
    }
    c
}

fn has_cuda_h(dir: &Path) -> bool {
    dir.join("cuda.h").is_file()
}

/// `cuda_runtime_api.h` includes `crt/host_defines.h`, which a wheel may ship
/// in a sibling package (`nvidia/cuda_nvcc/include/crt` for 12.x).
fn crt_dir(include: &Path) -> Option<PathBuf> {
    if include.join("crt/host_defines.h").is_file() {
        return None;
    }
    let packages = include.parent()?.parent()?;
    let mut siblings: Vec<PathBuf> = std::fs::read_dir(packages)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("include")))
        .filter(|inc| inc.join("crt/host_defines.h").is_file())
        .collect();
    siblings.sort();
    siblings.into_iter().next()
}

fn lib_candidates(root: &Path, include: &Path, arch: &str) -> Vec<PathBuf> {
    let mut c = vec![];
    for base in [
        root.to_path_buf(),
        include.parent().unwrap_or(root).to_path_buf(),
    ] {
        c.push(base.join("lib64"));
        c.push(base.join("lib"));
        // Windows: the toolkit's and the wheels' import libraries.
        c.push(base.join("lib").join("x64"));
        for t in toolkit_target_dirs(arch) {
            c.push(base.join("targets").join(t).join("lib"));
        }
    }
    let stubs: Vec<PathBuf> = c.iter().map(|d| d.join("stubs")).collect();
    c.extend(stubs);
    c.retain(|d| d.is_dir());
    c.dedup();
    c
}

/// Looks for CUDA under one root; `None` if it holds no `cuda.h`.
pub fn at_root(root: &Path, arch: &str, found_by: String) -> Option<Cuda> {
    let include = include_candidates(root, arch)
        .into_iter()
        .find(|d| has_cuda_h(d))?;
    let mut include_dirs = vec![include.clone()];
    include_dirs.extend(crt_dir(&include));
    // `find` has refused a non-UTF-8 value already.
    let mut lib_dirs = match non_empty_env(LIB_DIR_VAR) {
        Ok(Some(dirs)) => env::split_paths(&dirs).collect(),
        _ => vec![],
    };
    lib_dirs.extend(lib_candidates(root, &include, arch));
    Some(Cuda {
        include_dirs,
        lib_dirs,
        found_by,
    })
}

/// `Invalid` naming the missing file and the fix where `cuda` lacks a header
/// the bindings read (`cuda_runtime_api.h`, or the `crt/host_defines.h` it
/// includes), else `Found`.
fn complete(cuda: Cuda) -> Search {
    let has = |file: &str| cuda.include_dirs.iter().any(|d| d.join(file).is_file());
    let dir = cuda.include_dirs[0].display().to_string();
    let fix = "Point it at a complete CUDA include folder (a toolkit's include/, or the output of \
               `cargo xtask headers <version>`, which fetches the runtime and crt packages together)";
    if !has("cuda_runtime_api.h") {
        return Search::Invalid(format!(
            "{}: {dir} holds cuda.h but not cuda_runtime_api.h, which the bindings read too: \
             the header set is incomplete. {fix}.",
            cuda.found_by
        ));
    }
    if !has("crt/host_defines.h") {
        return Search::Invalid(format!(
            "{}: no crt/host_defines.h in {dir} or a sibling package's include folder; \
             cuda_runtime_api.h includes it: the header set is incomplete (the Python wheels ship \
             crt/ apart: nvidia-cuda-crt for 13.x, nvidia-cuda-nvcc-cu12 for 12.x). {fix}.",
            cuda.found_by
        ));
    }
    Search::Found(cuda)
}

/// Searches, in order: the variables of [`ROOT_VARS`], pkg-config
/// (`cuda-X.Y`, `cudart-X.Y`), the folder of `nvcc` on `PATH`,
/// `/usr/local/cuda`, `/opt/cuda`.
pub fn find(arch: &str) -> Search {
    let mut searched = vec![];
    if let Err(message) = non_empty_env(LIB_DIR_VAR) {
        return Search::Invalid(message);
    }
    for var in ROOT_VARS {
        let value = match non_empty_env(var) {
            Ok(Some(value)) => value,
            Ok(None) => {
                searched.push(format!("{var} (not set)"));
                continue;
            }
            Err(message) => return Search::Invalid(message),
        };
        let root = PathBuf::from(&value);
        if !root.exists() {
            return Search::Invalid(format!(
                "{var}={value} points nowhere (no such directory). Point it at a CUDA toolkit \
                 root or an include directory holding cuda.h, or unset it."
            ));
        }
        return match at_root(&root, arch, format!("{var}={value}")) {
            Some(cuda) => complete(cuda),
            None => Search::Invalid(format!(
                "{var}={value} holds no cuda.h. Looked in: {}. Point it at a CUDA toolkit root, \
                 an include directory holding cuda.h, or the output of `cargo xtask headers <version>`.",
                include_candidates(&root, arch)
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        };
    }
    if let Some(cuda) = from_pkg_config(arch) {
        return complete(cuda);
    }
    searched.push("pkg-config cuda-X.Y / cudart-X.Y (none)".into());
    // PATH as the system holds it: a folder on it need not be UTF-8.
    if let Some(nvcc_bin) = env::var_os("PATH")
        .and_then(|path| env::split_paths(&path).find(|d| d.join("nvcc").is_file()))
    {
        if let Some(root) = nvcc_bin.parent() {
            if let Some(cuda) = at_root(
                root,
                arch,
                format!("nvcc on PATH in {}", nvcc_bin.display()),
            ) {
                return complete(cuda);
            }
        }
    }
    searched.push("the folder of nvcc on PATH (none)".into());
    for root in ["/usr/local/cuda", "/opt/cuda"] {
        if let Some(cuda) = at_root(Path::new(root), arch, root.to_string()) {
            return complete(cuda);
        }
        searched.push(root.to_string());
    }
    Search::NotFound { searched }
}

fn from_pkg_config(arch: &str) -> Option<Cuda> {
    // pkg-config names carry the release: try newest first.
    for major in [13u32, 12] {
        for minor in (0..=9u32).rev() {
            for name in [
                format!("cudart-{major}.{minor}"),
                format!("cuda-{major}.{minor}"),
            ] {
                let Ok(lib) = pkg_config::Config::new()
                    .cargo_metadata(false)
                    .env_metadata(false)
                    .probe(&name)
                else {
                    continue;
                };
                for inc in &lib.include_paths {
                    if has_cuda_h(inc) {
                        let root = inc.parent().unwrap_or(inc);
                        let mut cuda = at_root(root, arch, format!("pkg-config {name}"))?;
                        cuda.lib_dirs.splice(0..0, lib.link_paths.clone());
                        return Some(cuda);
                    }
                }
            }
        }
    }
    None
}
