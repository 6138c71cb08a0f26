//! Where CUDA is: the one place that knows how to find the headers and libraries.
//!
//! Shared by the build script and, through `shared.rs` (the `generator`
//! package), by xtask and abi-proofs.

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
/// then one holding `crt/host_defines.h` if it is elsewhere, then the
/// profiler package's if it is elsewhere) and candidate library directories.
#[derive(Debug, Clone)]
pub struct Cuda {
    pub include_dirs: Vec<PathBuf>,
    pub lib_dirs: Vec<PathBuf>,
    /// How it was found, for the build log: `CUDA_PATH=/usr/local/cuda`.
    pub found_by: String,
    /// The sibling wheel package's `crt` folder, where `include_dirs[1]`
    /// stands for it (exposing nothing else of that package).
    pub crt: Option<PathBuf>,
    /// The step of [`find`] that found it.
    pub via: Via,
}

/// The steps of [`find`], in order: what a search reached decides which
/// variables it read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Via {
    /// One of [`ROOT_VARS`] (or a root given by the caller).
    Var,
    PkgConfig,
    /// The folder of `nvcc` on `PATH`.
    Path,
    /// `/usr/local/cuda`, `/opt/cuda`.
    Default,
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

/// The environment variables `find` always reads (for
/// `rerun-if-env-changed`); [`rerun_lines`] adds those of the steps it reached.
pub fn env_vars_read() -> Vec<&'static str> {
    let mut v = ROOT_VARS.to_vec();
    v.push(LIB_DIR_VAR);
    v
}

/// What reruns a build script besides [`env_vars_read`], as `cargo:` lines,
/// for the steps `search` reached: pkg-config's variables where it ran,
/// `PATH` where nvcc was looked for on it (not where a variable found CUDA:
/// an IDE and a terminal with different `PATH`s then share one build), and
/// the crt package taken from beside a wheel. `target`, `host`: cargo's.
/// A search that failed (`Invalid`) needs none: cargo runs a failed build
/// script again anyway.
pub fn rerun_lines(search: &Search, target: &str, host: &str) -> Vec<String> {
    let reached = match search {
        Search::Found(cuda) => cuda.via,
        Search::NotFound { .. } => Via::Default,
        Search::Invalid(_) => return vec![],
    };
    let mut vars = vec![];
    if reached >= Via::PkgConfig {
        vars.extend(pkg_config_vars(target, host));
    }
    if reached >= Via::Path {
        vars.push("PATH".to_string());
    }
    let mut lines: Vec<String> = vars
        .into_iter()
        .map(|v| format!("cargo:rerun-if-env-changed={v}"))
        .collect();
    if let Search::Found(Cuda { crt: Some(crt), .. }) = search {
        lines.push(format!("cargo:rerun-if-changed={}", crt.display()));
    }
    lines
}

/// The names [`from_pkg_config`] asks pkg-config for, newest release first.
fn pkg_config_names() -> Vec<String> {
    let mut names = vec![];
    for major in [13u32, 12] {
        for minor in (0..=9u32).rev() {
            names.push(format!("cudart-{major}.{minor}"));
            names.push(format!("cuda-{major}.{minor}"));
        }
    }
    names
}

/// The variables the pkg-config crate reads for [`from_pkg_config`]'s
/// probes (what its `env_metadata` would print, once each): the tool and its
/// search path in their target-specific forms, and each name's opt-out.
fn pkg_config_vars(target: &str, host: &str) -> Vec<String> {
    let kind = if target == host { "HOST" } else { "TARGET" };
    let target_u = target.replace('-', "_");
    let mut vars = vec![];
    for base in [
        "PKG_CONFIG",
        "PKG_CONFIG_PATH",
        "PKG_CONFIG_LIBDIR",
        "PKG_CONFIG_SYSROOT_DIR",
        "PKG_CONFIG_ALLOW_CROSS",
    ] {
        vars.push(format!("{base}_{target}"));
        vars.push(format!("{base}_{target_u}"));
        vars.push(format!("{kind}_{base}"));
        vars.push(base.to_string());
    }
    vars.extend(["PKG_CONFIG_ALL_STATIC", "PKG_CONFIG_ALL_DYNAMIC", "SYSROOT"].map(String::from));
    for name in pkg_config_names() {
        let envified = name.to_uppercase().replace(['-', '.'], "_");
        for suffix in ["NO_PKG_CONFIG", "STATIC", "DYNAMIC"] {
            vars.push(format!("{envified}_{suffix}"));
        }
    }
    vars
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

/// `cuda_runtime_api.h` includes `crt/host_defines.h`, which NVIDIA's 12.x
/// wheels ship in a sibling package (`nvidia/cuda_nvcc/include/crt`, from
/// `nvidia-cuda-nvcc-cu12`). Searched only where `include` is itself a
/// wheel's (`…/nvidia/<package>/include`), among the other packages of that
/// `nvidia` folder: an include folder of another layout never takes headers
/// from whatever lies two levels above it. A sibling that holds a CUDA tree
/// of its own (`cuda.h` or `cuda_runtime_api.h`: another release's wheel, a
/// toolkit) is never taken. `Ok(None)` where `include` has its own `crt/`.
/// The error names what was seen and refused.
fn crt_dir(include: &Path) -> Result<Option<PathBuf>, String> {
    if include.join(CRT_HEADER).is_file() {
        return Ok(None);
    }
    let Some(nvidia) = wheel_packages(include) else {
        // Not a wheel's layout: say so where a tree two levels up would have
        // been taken before (a stray CUDA tree is not mixed in).
        let stray = include
            .parent()
            .and_then(Path::parent)
            .map(|up| siblings_with_crt(up, include))
            .unwrap_or_default();
        if let Some(s) = stray.first() {
            return Err(format!(
                "no crt/host_defines.h in {}; {} holds one, but {} is not in the layout of \
                 NVIDIA's wheels (…/nvidia/<package>/include), so crt/ is not taken from beside \
                 it: that folder is not part of these headers' installation (a stray CUDA \
                 tree). {GET_HEADERS}",
                include.display(),
                s.display(),
                include.display()
            ));
        }
        return Ok(None);
    };
    let (trees, packages): (Vec<PathBuf>, Vec<PathBuf>) = siblings_with_crt(&nvidia, include)
        .into_iter()
        .partition(|inc| {
            ["cuda.h", "cuda_runtime_api.h"]
                .iter()
                .any(|h| inc.join(h).is_file())
        });
    match (packages.first(), trees.first()) {
        (Some(p), _) => Ok(Some(p.join("crt"))),
        (None, Some(t)) => Err(format!(
            "no crt/host_defines.h in {}; {} holds one, but it is a CUDA tree of its own (it \
             holds {}): its crt/ belongs to those headers, perhaps of another release, and is \
             not mixed into these. Install the crt package of this release beside them \
             (nvidia-cuda-nvcc-cu12 for 12.x, nvidia-cuda-crt for 13.x). {GET_HEADERS}",
            include.display(),
            t.display(),
            if t.join("cuda.h").is_file() {
                "cuda.h"
            } else {
                "cuda_runtime_api.h"
            }
        )),
        (None, None) => Ok(None),
    }
}

/// The profiler API's headers (`cudaProfiler.h`, `cuda_profiler_api.h`,
/// which `wrapper.h` reads where they exist) come in a package of their own
/// in NVIDIA's 12.x wheels (`nvidia-cuda-profiler-api-cu12`:
/// `nvidia/cuda_profiler_api/include`); the 13.x wheel puts them beside
/// `cuda.h`, as the toolkit does. Taken only where `include` lacks them, is a
/// wheel's include folder, and the sibling holds those two headers and no
/// CUDA tree of its own.
fn profiler_dir(include: &Path) -> Option<PathBuf> {
    if include.join(PROFILER_HEADER).is_file() {
        return None;
    }
    let dir = wheel_packages(include)?.join("cuda_profiler_api/include");
    let tree = ["cuda.h", "cuda_runtime_api.h"]
        .iter()
        .any(|h| dir.join(h).is_file());
    (dir.join(PROFILER_HEADER).is_file() && !tree).then_some(dir)
}

/// The driver API's profiler header, the first `wrapper.h` reads of the
/// profiler package.
const PROFILER_HEADER: &str = "cudaProfiler.h";

/// `crt/host_defines.h`, which `cuda_runtime_api.h` includes.
const CRT_HEADER: &str = "crt/host_defines.h";

/// How a user gets a complete header set: said in every message that asks for one.
pub const GET_HEADERS: &str = "Install the CUDA toolkit, or NVIDIA's PyPI wheels (`pip install \
     nvidia-cuda-runtime==13.0.* nvidia-cuda-crt==13.0.*`, then point CUDA_MEM_SYS_INCLUDE_DIR \
     at …/site-packages/nvidia/cu13/include; for 12.x: `pip install \
     nvidia-cuda-runtime-cu12==12.9.* nvidia-cuda-nvcc-cu12==12.9.*` and \
     …/site-packages/nvidia/cuda_runtime/include)";

/// The `nvidia` folder of a wheel's include folder (`…/nvidia/<package>/include`).
fn wheel_packages(include: &Path) -> Option<PathBuf> {
    let package = include.parent()?;
    let nvidia = package.parent()?;
    (include.file_name()? == "include" && nvidia.file_name()? == "nvidia")
        .then(|| nvidia.to_path_buf())
}

/// The `<dir>/*/include` folders holding `crt/host_defines.h`, `include`
/// itself left out, sorted.
fn siblings_with_crt(dir: &Path, include: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return vec![];
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path().join("include")))
        .filter(|inc| inc != include && inc.join(CRT_HEADER).is_file())
        .collect();
    found.sort();
    found
}

/// Makes `home/crt` stand for the sibling package's `crt` folder (a symbolic
/// link; where the host has none, a copy), so that the include path gains
/// `crt/` and nothing else of that package. Returns `home`.
fn expose_crt(crt: &Path, home: &Path) -> Result<PathBuf, String> {
    let link = home.join("crt");
    let fail = |what: &str, e: std::io::Error| {
        format!(
            "{what} {} (to expose {} alone): {e}",
            link.display(),
            crt.display()
        )
    };
    std::fs::create_dir_all(home).map_err(|e| fail("creating the folder of", e))?;
    #[cfg(unix)]
    {
        if std::fs::read_link(&link).ok().as_deref() != Some(crt) {
            let _ = std::fs::remove_file(&link);
            let _ = std::fs::remove_dir_all(&link);
            std::os::unix::fs::symlink(crt, &link).map_err(|e| fail("linking", e))?;
        }
    }
    #[cfg(not(unix))]
    copy_if_changed(crt, &link).map_err(|e| fail("copying into", e))?;
    Ok(home.to_path_buf())
}

/// Copies the files of `from` into `to` (folders too), each unless it holds
/// the same bytes already: unchanged copies keep their times, so the
/// `rerun-if-changed` of the headers read does not fire for nothing.
#[cfg(not(unix))]
fn copy_if_changed(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_if_changed(&entry.path(), &target)?;
        } else {
            let bytes = std::fs::read(entry.path())?;
            if std::fs::read(&target).ok() != Some(bytes.clone()) {
                std::fs::write(&target, bytes)?;
            }
        }
    }
    Ok(())
}

/// The folder below `lib` of a Windows toolkit's import libraries for `arch`.
pub fn windows_lib_dir(arch: &str) -> &'static str {
    if arch == "aarch64" {
        "arm64"
    } else {
        "x64"
    }
}

fn lib_candidates(root: &Path, include: &Path, arch: &str) -> Vec<PathBuf> {
    let mut c = vec![];
    for base in [
        root.to_path_buf(),
        include.parent().unwrap_or(root).to_path_buf(),
    ] {
        c.push(base.join("lib64"));
        c.push(base.join("lib"));
        // Windows: the toolkit's and the wheels' import libraries
        // (`lib\arm64` on Windows on Arm, from CUDA 13.4).
        c.push(base.join("lib").join(windows_lib_dir(arch)));
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

/// Looks for CUDA under one root; `None` if it holds no `cuda.h`. A crt/
/// package beside a wheel's headers is exposed in the build script's
/// `OUT_DIR` (`cuda-crt/crt`); elsewhere (xtask) its include folder is taken
/// as it is.
pub fn at_root(root: &Path, arch: &str, found_by: String) -> Option<Result<Cuda, String>> {
    let home = env::var_os("OUT_DIR").map(|d| PathBuf::from(d).join("cuda-crt"));
    at_root_exposing(root, arch, found_by, home.as_deref())
}

/// [`at_root`], a sibling's `crt/` exposed alone in `crt_home` (`None`: its
/// include folder added as it is).
pub fn at_root_exposing(
    root: &Path,
    arch: &str,
    found_by: String,
    crt_home: Option<&Path>,
) -> Option<Result<Cuda, String>> {
    let include = include_candidates(root, arch)
        .into_iter()
        .find(|d| has_cuda_h(d))?;
    let mut include_dirs = vec![include.clone()];
    let crt = match crt_dir(&include) {
        Ok(crt) => crt,
        Err(why) => return Some(Err(format!("{found_by}: {why}"))),
    };
    if let Some(crt) = &crt {
        include_dirs.push(match crt_home {
            Some(home) => match expose_crt(crt, home) {
                Ok(home) => home,
                Err(e) => return Some(Err(e)),
            },
            None => crt.parent().unwrap_or(crt).to_path_buf(),
        });
    }
    include_dirs.extend(profiler_dir(&include));
    // `find` has refused a non-UTF-8 value already.
    let mut lib_dirs = match non_empty_env(LIB_DIR_VAR) {
        Ok(Some(dirs)) => env::split_paths(&dirs).collect(),
        _ => vec![],
    };
    lib_dirs.extend(lib_candidates(root, &include, arch));
    Some(Ok(Cuda {
        include_dirs,
        lib_dirs,
        found_by,
        crt,
        via: Via::Var,
    }))
}

/// [`at_root`]'s answer as a search's: `Found` once [`complete`].
fn checked(found: Result<Cuda, String>) -> Search {
    match found {
        Ok(cuda) => complete(cuda),
        Err(message) => Search::Invalid(message),
    }
}

/// `Invalid` naming the missing file and the fix where `cuda` lacks a header
/// the bindings read (`cuda_runtime_api.h`, or the `crt/host_defines.h` it
/// includes), else `Found`.
fn complete(cuda: Cuda) -> Search {
    let has = |file: &str| cuda.include_dirs.iter().any(|d| d.join(file).is_file());
    let dir = cuda.include_dirs[0].display().to_string();
    let fix = format!("Point it at a complete CUDA include folder. {GET_HEADERS}");
    // The runtime's header is cuda.h's neighbour: never taken from elsewhere.
    if !cuda.include_dirs[0].join("cuda_runtime_api.h").is_file() {
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
            Some(found) => checked(found),
            None => Search::Invalid(format!(
                "{var}={value} holds no cuda.h. Looked in: {}. Point it at a CUDA toolkit root \
                 or an include directory holding cuda.h. {GET_HEADERS}.",
                include_candidates(&root, arch)
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        };
    }
    if let Some(found) = from_pkg_config(arch) {
        return checked(found);
    }
    searched.push("pkg-config cuda-X.Y / cudart-X.Y (none)".into());
    // PATH as the system holds it: a folder on it need not be UTF-8.
    if let Some(nvcc_bin) = env::var_os("PATH")
        .and_then(|path| env::split_paths(&path).find(|d| d.join("nvcc").is_file()))
    {
        if let Some(root) = nvcc_bin.parent() {
            if let Some(found) = at_root(
                root,
                arch,
                format!("nvcc on PATH in {}", nvcc_bin.display()),
            ) {
                return checked(found.map(|cuda| Cuda {
                    via: Via::Path,
                    ..cuda
                }));
            }
        }
    }
    searched.push("the folder of nvcc on PATH (none)".into());
    for root in ["/usr/local/cuda", "/opt/cuda"] {
        if let Some(found) = at_root(Path::new(root), arch, root.to_string()) {
            return checked(found.map(|cuda| Cuda {
                via: Via::Default,
                ..cuda
            }));
        }
        searched.push(root.to_string());
    }
    Search::NotFound { searched }
}

fn from_pkg_config(arch: &str) -> Option<Result<Cuda, String>> {
    // pkg-config names carry the release: try newest first.
    for name in pkg_config_names() {
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
                let found = at_root(root, arch, format!("pkg-config {name}"))?;
                return Some(found.map(|mut cuda| {
                    cuda.lib_dirs.splice(0..0, lib.link_paths.clone());
                    cuda.via = Via::PkgConfig;
                    cuda
                }));
            }
        }
    }
    None
}
