//! `cargo xtask headers <version> [--target <triple>]`: the real CUDA headers
//! and libcudart of a release, from the Python package index wheels, cached
//! under `target/cuda-headers/` (`target/cuda-headers/<triple>/<release>/` for
//! a target other than x86_64 Linux).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::releases;

/// The wheels holding a release's headers: runtime + libcudart, `crt/`, and
/// the profiler API (`cudaProfiler.h`, `cuda_profiler_api.h`, which
/// `wrapper.h` reads; in 12.x a package of its own beside the runtime's,
/// `nvidia/cuda_profiler_api/include`, in 13.x the same `nvidia/cu13/include`).
fn wheels(release: &str) -> Result<[String; 3], String> {
    let major: u32 = release
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .ok_or_else(|| format!("not a release: {release}"))?;
    if !releases::ALL.contains(&release) {
        return Err(format!(
            "no wheels for CUDA {release}; known releases: {}",
            releases::ALL.join(" ")
        ));
    }
    Ok(match major {
        // The names `package_names` gives.
        12 => [
            format!("nvidia-cuda-runtime-cu12=={release}.*"),
            format!("nvidia-cuda-nvcc-cu12=={release}.*"),
            format!("nvidia-cuda-profiler-api-cu12=={release}.*"),
        ],
        _ => [
            format!("nvidia-cuda-runtime=={release}.*"),
            format!("nvidia-cuda-crt=={release}.*"),
            format!("nvidia-cuda-profiler-api=={release}.*"),
        ],
    })
}

/// The names of [`wheels`]' packages: runtime, crt (12.x: nvcc), profiler.
pub fn package_names(release: &str) -> Result<[&'static str; 3], String> {
    wheels(release)?;
    Ok(if release.starts_with("12.") {
        [
            "nvidia-cuda-runtime-cu12",
            "nvidia-cuda-nvcc-cu12",
            "nvidia-cuda-profiler-api-cu12",
        ]
    } else {
        [
            "nvidia-cuda-runtime",
            "nvidia-cuda-crt",
            "nvidia-cuda-profiler-api",
        ]
    })
}

/// The target whose wheels `cargo xtask headers` fetches without `--target`.
pub const HOST_TARGET: &str = "x86_64-unknown-linux-gnu";

/// The wheel platform tags of a Rust target triple.
pub fn platforms(target: &str) -> Result<&'static [&'static str], String> {
    match target {
        "x86_64-unknown-linux-gnu" => Ok(&["manylinux2014_x86_64", "manylinux_2_17_x86_64"]),
        "aarch64-unknown-linux-gnu" => Ok(&["manylinux2014_aarch64", "manylinux_2_17_aarch64"]),
        "x86_64-pc-windows-gnu" | "x86_64-pc-windows-msvc" => Ok(&["win_amd64"]),
        // Windows on Arm, from CUDA 13.4 (`lib/arm64`, `bin/arm64`).
        "aarch64-pc-windows-msvc" => Ok(&["win_arm64"]),
        _ => Err(format!(
            "no CUDA wheels for {target}; known: x86_64-unknown-linux-gnu, \
             aarch64-unknown-linux-gnu, x86_64-pc-windows-gnu, x86_64-pc-windows-msvc, \
             aarch64-pc-windows-msvc"
        )),
    }
}

/// Releases NVIDIA published no wheel for on `target`, and the target whose
/// wheel's headers are used instead: the aarch64 wheels start at 12.3, and
/// the headers of the Linux wheels are the same text for both architectures
/// (`diff -r` of the 12.9 x86_64 and aarch64 wheels' `include/`: identical).
/// No libcudart comes with them: the build links a stub for the target.
pub fn headers_only_from(target: &str, release: &str) -> Option<&'static str> {
    let early = ["12.0", "12.1", "12.2"].contains(&release);
    (target == "aarch64-unknown-linux-gnu" && early).then_some(HOST_TARGET)
}

pub fn cache_root_for(workspace: &Path, release: &str, target: &str) -> PathBuf {
    per_target(&workspace.join("target/cuda-headers"), release, target)
}

/// `base/<release>` for x86_64 Linux, `base/<triple>/<release>` for another
/// target: how the headers' cache and the ABI checks' folders are laid out.
pub fn per_target(base: &Path, release: &str, target: &str) -> PathBuf {
    if target == HOST_TARGET {
        base.join(release)
    } else {
        base.join(target).join(release)
    }
}

/// The include directory holding `cuda.h` for a fetched release.
pub fn include_dir(root: &Path) -> Option<PathBuf> {
    ["nvidia/cu13/include", "nvidia/cuda_runtime/include"]
        .iter()
        .map(|p| root.join(p))
        .find(|p| p.join("cuda.h").is_file())
}

/// Fetches (once) and returns the include directory of `release`.
pub fn fetch(workspace: &Path, release: &str) -> Result<PathBuf, String> {
    fetch_for(workspace, release, HOST_TARGET)
}

/// Whether `release` and `target` name wheels that exist: checked before
/// any folder is made for them.
pub fn check(release: &str, target: &str) -> Result<(), String> {
    wheels(release)?;
    platforms(target)?;
    if target == "aarch64-pc-windows-msvc"
        && generator::committed::Family::Aarch64WindowsMsvc
            .releases()
            .all(|r| r != release)
    {
        return Err(format!(
            "no CUDA {release} wheels for {target}: Windows on Arm starts at {}",
            generator::committed::WINDOWS_ARM64_FIRST
        ));
    }
    Ok(())
}

/// Fetches (once) and returns the include directory of `release` for `target`.
pub fn fetch_for(workspace: &Path, release: &str, target: &str) -> Result<PathBuf, String> {
    check(release, target)?;
    let root = cache_root_for(workspace, release, target);
    // A cache made before the profiler wheel joined the set is fetched again.
    let complete = std::fs::read_to_string(root.join("wheels.txt"))
        .is_ok_and(|names| names.contains("profiler_api"));
    if let Some(dir) = include_dir(&root).filter(|_| complete) {
        return Ok(dir);
    }
    let wheel_target = headers_only_from(target, release).unwrap_or(target);
    let headers_only = wheel_target != target;
    if headers_only {
        eprintln!("no {target} wheels for CUDA {release}: using the {wheel_target} wheels' headers (no libcudart)");
    }
    let specs = wheels(release)?;
    unpack(&root, &specs, platforms(wheel_target)?, !headers_only)?;
    include_dir(&root).ok_or_else(|| format!("the wheels for {release} held no cuda.h"))
}

/// Downloads the wheels `specs` for `platforms` and unpacks their headers
/// (and, with `libs`, the runtime's libraries) into `root`, with the wheels'
/// names in `root/wheels.txt`.
pub fn unpack(root: &Path, specs: &[String], platforms: &[&str], libs: bool) -> Result<(), String> {
    let wheel_dir = root.join("wheels");
    std::fs::create_dir_all(&wheel_dir).map_err(|e| e.to_string())?;
    eprintln!("fetching {} into {}", specs.join(" "), root.display());
    let status = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
        ])
        .args(platforms.iter().flat_map(|p| ["--platform", p]))
        .arg("-d")
        .arg(&wheel_dir)
        .args(specs)
        .status()
        .map_err(|e| format!("running python3 -m pip: {e} (python3 with pip is needed)"))?;
    if !status.success() {
        return Err(format!("pip could not download {}", specs.join(" ")));
    }
    // Only headers and the runtime's libraries are kept (the nvcc wheel is
    // mostly compiler): libcudart on Linux; on Windows the import libraries
    // (`lib/x64/cuda.lib`, `cudart.lib`, `cudart_static.lib`) and `cudart64_<major>.dll`.
    let script = r#"
import sys, zipfile, pathlib
root = pathlib.Path(sys.argv[1]); libs = sys.argv[3] == '1'; names = []
for whl in sorted(pathlib.Path(sys.argv[2]).glob('*.whl')):
    names.append(whl.name)
    with zipfile.ZipFile(whl) as z:
        for m in z.namelist():
            p = m.split('/')
            lib = ('lib' in p and (p[-1].startswith('libcudart') or
                                   p[-1] in ('cuda.lib', 'cudart.lib', 'cudart_static.lib'))) or \
                  ('bin' in p and p[-1].startswith('cudart64_'))
            keep = ('include' in p and ('crt' in p or 'cuda_nvcc' not in p)) or (libs and lib)
            if keep and not m.endswith('/'):
                z.extract(m, root)
(root / 'wheels.txt').write_text('\n'.join(names) + '\n')
"#;
    let status = Command::new("python3")
        .args(["-c", script])
        .arg(root)
        .arg(&wheel_dir)
        .arg(if libs { "1" } else { "0" })
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err("unpacking the wheels failed".into());
    }
    let _ = std::fs::remove_dir_all(&wheel_dir);
    Ok(())
}

/// The wheel file names a fetched release came from.
pub fn wheel_names(workspace: &Path, release: &str) -> String {
    wheel_names_for(workspace, release, HOST_TARGET)
}

/// The wheel file names a release fetched for `target` came from.
pub fn wheel_names_for(workspace: &Path, release: &str, target: &str) -> String {
    std::fs::read_to_string(cache_root_for(workspace, release, target).join("wheels.txt"))
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(", ")
}
