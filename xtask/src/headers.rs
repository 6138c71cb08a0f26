//! `cargo xtask headers <version>`: the real CUDA headers and libcudart of a
//! release, from the Python package index wheels, cached under `target/`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Every release with wheels, 12.0 to 13.5 (there was no 12.7).
pub const RELEASES: [&str; 15] = [
    "12.0", "12.1", "12.2", "12.3", "12.4", "12.5", "12.6", "12.8", "12.9", "13.0", "13.1", "13.2",
    "13.3", "13.4", "13.5",
];

/// The wheels holding a release's headers: (runtime + libcudart, `crt/`).
fn wheels(release: &str) -> Result<[String; 2], String> {
    let major: u32 = release
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .ok_or_else(|| format!("not a release: {release}"))?;
    if !RELEASES.contains(&release) {
        return Err(format!(
            "no wheels for CUDA {release}; known releases: {}",
            RELEASES.join(" ")
        ));
    }
    Ok(match major {
        12 => [
            format!("nvidia-cuda-runtime-cu12=={release}.*"),
            format!("nvidia-cuda-nvcc-cu12=={release}.*"),
        ],
        _ => [
            format!("nvidia-cuda-runtime=={release}.*"),
            format!("nvidia-cuda-crt=={release}.*"),
        ],
    })
}

pub fn cache_root(workspace: &Path, release: &str) -> PathBuf {
    workspace.join("target/cuda-headers").join(release)
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
    let root = cache_root(workspace, release);
    if let Some(dir) = include_dir(&root).filter(|_| root.join("wheels.txt").is_file()) {
        return Ok(dir);
    }
    let wheel_dir = root.join("wheels");
    std::fs::create_dir_all(&wheel_dir).map_err(|e| e.to_string())?;
    let specs = wheels(release)?;
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
        .args([
            "--platform",
            "manylinux2014_x86_64",
            "--platform",
            "manylinux_2_17_x86_64",
        ])
        .arg("-d")
        .arg(&wheel_dir)
        .args(&specs)
        .status()
        .map_err(|e| format!("running python3 -m pip: {e} (python3 with pip is needed)"))?;
    if !status.success() {
        return Err(format!("pip could not download {}", specs.join(" ")));
    }
    // Only headers and libcudart are kept: the nvcc wheel is mostly compiler.
    let script = r#"
import sys, zipfile, pathlib
root = pathlib.Path(sys.argv[1]); names = []
for whl in sorted(pathlib.Path(sys.argv[2]).glob('*.whl')):
    names.append(whl.name)
    with zipfile.ZipFile(whl) as z:
        for m in z.namelist():
            p = m.split('/')
            keep = ('include' in p and ('crt' in p or 'cuda_nvcc' not in p)) or \
                   ('lib' in p and p[-1].startswith('libcudart'))
            if keep and not m.endswith('/'):
                z.extract(m, root)
(root / 'wheels.txt').write_text('\n'.join(names) + '\n')
"#;
    let status = Command::new("python3")
        .args(["-c", script])
        .arg(&root)
        .arg(&wheel_dir)
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err("unpacking the wheels failed".into());
    }
    let _ = std::fs::remove_dir_all(&wheel_dir);
    include_dir(&root).ok_or_else(|| format!("the wheels for {release} held no cuda.h"))
}

/// The wheel file names a fetched release came from.
pub fn wheel_names(workspace: &Path, release: &str) -> String {
    std::fs::read_to_string(cache_root(workspace, release).join("wheels.txt"))
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(", ")
}
