//! The committed fallback bindings: which release they are, where they lie.
//! Needs nothing but `std`, so the build without the `bindgen` feature uses it
//! too (no syn, no bindgen).

use std::path::{Path, PathBuf};

/// Every release this crate knows, oldest first: 12.0 to 13.5, each with
/// NVIDIA's wheels (there was no 12.7). The one list: the build's
/// `cuda_NNNNN` cfgs (build/config.rs) and every release set of xtask
/// (`xtask/src/releases.rs`, `cargo xtask headers`) are read from it.
pub const KNOWN_RELEASES: [&str; 15] = [
    "12.0", "12.1", "12.2", "12.3", "12.4", "12.5", "12.6", "12.8", "12.9", "13.0", "13.1", "13.2",
    "13.3", "13.4", "13.5",
];

/// The reference release of the committed fallback bindings.
pub const PINNED_RELEASE: &str = "13.0";

/// `CUDA_VERSION` of a release written `major.minor` ("13.0": 13000); `None`
/// for other text.
pub fn cuda_version(release: &str) -> Option<u32> {
    let (major, minor) = release.split_once('.')?;
    let (major, minor) = (major.parse::<u32>().ok()?, minor.parse::<u32>().ok()?);
    (minor < 100).then_some(major * 1000 + minor * 10)
}

/// The release a `CUDA_VERSION` stands for, as NVIDIA writes it (13000: "13.0").
pub fn release_name(cuda_version: u32) -> String {
    format!("{}.{}", cuda_version / 1000, cuda_version % 1000 / 10)
}
/// Defined by the `per-thread-default-stream` feature.
pub const PTDS_DEFINE: &str = "CUDA_API_PER_THREAD_DEFAULT_STREAM";

/// A symbols file (`src/generated/`, [`super::committed`]): one `driver NAME` or
/// `runtime NAME` line each (what [`read_symbols`] reads back without parsing Rust).
/// (driver, runtime) symbols of a symbols file.
pub fn read_symbols(text: &str) -> Result<(Vec<String>, Vec<String>), String> {
    let (mut driver, mut runtime) = (vec![], vec![]);
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        match line.split_once(' ') {
            Some(("driver", s)) => driver.push(s.to_string()),
            Some(("runtime", s)) => runtime.push(s.to_string()),
            _ => return Err(format!("a symbols file holds the line {line:?}")),
        }
    }
    Ok((driver, runtime))
}

/// Headers before 12.0 are refused with the fix named.
pub fn check_release(include_dir: &Path, cuda_version: u32) -> Result<(), String> {
    if cuda_version < 12000 {
        return Err(format!(
            "the CUDA headers in {} are release {} (CUDA_VERSION {cuda_version}); \
             cuda-mem-sys needs 12.0 or newer. Point CUDA_MEM_SYS_INCLUDE_DIR at newer headers. \
             {}.",
            include_dir.display(),
            release_name(cuda_version),
            super::locate::GET_HEADERS
        ));
    }
    Ok(())
}

/// The headers committed bindings were generated from, beside them (each
/// variant's `.inputs`): one `<FNV-1a 64, hex> <path below its include
/// folder>` line per header the preprocessor read. Where the headers found
/// hash the same, the generator would write those committed bindings again,
/// so the build takes them and skips bindgen (see [`same_inputs`]).
/// FNV-1a, 64 bits: a fingerprint of a header (not a defence against a
/// forged one: whoever can write the headers decides the bindings anyway).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Where every header an inputs file lists is found in `include_dirs` (the
/// first folder holding it, as the preprocessor searches) with the same
/// fingerprint: those headers. `None` where any is missing or differs. Each
/// header's fingerprint is taken once into `hashes` (the build asks this of
/// every committed release in turn).
pub fn same_inputs(
    text: &str,
    include_dirs: &[PathBuf],
    hashes: &mut std::collections::HashMap<PathBuf, Option<u64>>,
) -> Option<Vec<PathBuf>> {
    let mut found = vec![];
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (hash, rel) = line.split_once(' ')?;
        let hash = u64::from_str_radix(hash, 16).ok()?;
        let path = include_dirs
            .iter()
            .map(|d| d.join(rel))
            .find(|p| p.is_file())?;
        let have = *hashes
            .entry(path.clone())
            .or_insert_with(|| std::fs::read(&path).ok().map(|b| fnv1a64(&b)));
        if have != Some(hash) {
            return None;
        }
        found.push(path);
    }
    (!found.is_empty()).then_some(found)
}
