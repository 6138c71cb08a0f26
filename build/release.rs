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

/// Earlier patches of a release whose headers give other bindings than the
/// committed ones (which are the newest patch's): measured by `cargo xtask
/// patches`, `docs/patch-versions.md`. A build that takes a release's
/// committed bindings for other headers of it (no generator) asks each
/// entry of its release whether the headers found are of those patches
/// (`header` does not name `marker`) and then names the difference, in its
/// warning, in `cuda_mem_sys::BUILD.not_in_headers` and in
/// `DEP_CUDA_MEM_SYS_NOT_IN_HEADERS` ([`PatchDifference::of`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PatchDifference {
    pub release: &'static str,
    /// The patches whose headers differ (runtime wheel versions).
    pub patches: &'static [&'static str],
    /// The patch the committed bindings were generated from.
    pub committed: &'static str,
    /// The header (below the include folder) that tells them apart, and the
    /// word the committed patch's has and theirs does not.
    pub header: &'static str,
    pub marker: &'static str,
    /// What the committed bindings declare that those headers do not.
    pub items: &'static [&'static str],
}

/// The one list of patch differences (`docs/patch-versions.md` agrees with
/// it: `tests/docs_agree.rs`).
pub const PATCH_DIFFERENCES: [PatchDifference; 1] = [PatchDifference {
    release: "13.0",
    patches: &["13.0.48", "13.0.88"],
    committed: "13.0.96",
    header: "library_types.h",
    marker: "cudaEmulationMantissaControl_t",
    items: &[
        "cudaEmulationMantissaControl_t",
        "cudaEmulationSpecialValuesSupport_t",
        "CUDA_EMULATION_MANTISSA_CONTROL_DYNAMIC",
        "CUDA_EMULATION_MANTISSA_CONTROL_FIXED",
        "CUDA_EMULATION_SPECIAL_VALUES_SUPPORT_DEFAULT",
        "CUDA_EMULATION_SPECIAL_VALUES_SUPPORT_NONE",
        "CUDA_EMULATION_SPECIAL_VALUES_SUPPORT_INFINITY",
        "CUDA_EMULATION_SPECIAL_VALUES_SUPPORT_NAN",
    ],
}];

impl PatchDifference {
    /// The difference of `release`'s committed bindings from the headers in
    /// `include_dirs` (the first folder holding `header`, as the
    /// preprocessor searches), if they are of an earlier patch that has one.
    /// A header that cannot be read is not told apart (`None`).
    pub fn of(release: &str, include_dirs: &[PathBuf]) -> Option<&'static PatchDifference> {
        PATCH_DIFFERENCES.iter().find(|d| {
            d.release == release
                && include_dirs
                    .iter()
                    .map(|dir| dir.join(d.header))
                    .find(|p| p.is_file())
                    .and_then(|p| std::fs::read(p).ok())
                    .is_some_and(|text| {
                        !text
                            .windows(d.marker.len())
                            .any(|w| w == d.marker.as_bytes())
                    })
        })
    }
}

#[cfg(test)]
mod patch_tests {
    use super::*;

    /// Where `docs/patch-versions.md`'s table (`| release | runtime wheel |
    /// ... | bindings | ... |`) and `list` disagree: a patch whose
    /// declarations differ that no entry names with exactly those items, or
    /// an entry's patch the table does not show differing.
    fn patch_table_problems(doc: &str, list: &[PatchDifference]) -> Vec<String> {
        let mut problems = vec![];
        let mut differing = vec![];
        for row in doc.lines().filter(|l| l.starts_with("| 1")) {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let (release, patch, bindings) = (cells[1], cells[2], cells[5]);
            if bindings == "same" || bindings.ends_with("no declaration among them") {
                continue;
            }
            differing.push(patch.to_string());
            let mut items: Vec<&str> = bindings
                .split_once(": ")
                .map_or("", |(_, items)| items)
                .split(", ")
                .collect();
            items.sort_unstable();
            let entry = list
                .iter()
                .find(|d| d.release == release && d.patches.contains(&patch));
            match entry {
                None => problems.push(format!("{patch} differs, and no entry names it")),
                Some(d) => {
                    let mut named = d.items.to_vec();
                    named.sort_unstable();
                    if named != items {
                        problems.push(format!(
                            "{patch}: the table says {items:?}, the entry {named:?}"
                        ));
                    }
                }
            }
        }
        for d in list {
            for p in d.patches {
                if !differing.iter().any(|q| q == p) {
                    problems.push(format!(
                        "the entry names {p}, which the table does not show differing"
                    ));
                }
            }
        }
        problems
    }

    /// The list is the table's; a list missing a patch, or naming one item
    /// too few, is named.
    #[test]
    fn the_patch_differences_are_the_patch_tables() {
        let doc = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/patch-versions.md"),
        )
        .unwrap();
        assert_eq!(
            patch_table_problems(&doc, &PATCH_DIFFERENCES),
            Vec::<String>::new()
        );
        let mut wrong = PATCH_DIFFERENCES;
        wrong[0].patches = &["13.0.88"];
        let problems = patch_table_problems(&doc, &wrong);
        assert!(
            problems.iter().any(|p| p.contains("13.0.48 differs")),
            "{problems:?}"
        );
        let mut wrong = PATCH_DIFFERENCES;
        wrong[0].items = &PATCH_DIFFERENCES[0].items[1..];
        assert_eq!(patch_table_problems(&doc, &wrong).len(), 2);
    }

    /// Headers whose `library_types.h` lacks the marker are told as the
    /// earlier 13.0 patches; the committed patch's, another release's, and
    /// headers without that file are not.
    #[test]
    fn an_earlier_patch_is_told_by_its_header_and_only_in_its_release() {
        let dir = std::env::temp_dir().join(format!("cuda-mem-sys-patch-{}", std::process::id()));
        let (old, new, none) = (dir.join("old"), dir.join("new"), dir.join("none"));
        for d in [&old, &new, &none] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(
            old.join("library_types.h"),
            "typedef enum cudaDataType_t {} x;",
        )
        .unwrap();
        std::fs::write(
            new.join("library_types.h"),
            "typedef enum cudaEmulationMantissaControl_t {} y;",
        )
        .unwrap();
        let found = PatchDifference::of("13.0", std::slice::from_ref(&old));
        assert_eq!(found.map(|d| d.patches), Some(&["13.0.48", "13.0.88"][..]));
        assert_eq!(
            PatchDifference::of("13.0", std::slice::from_ref(&new)),
            None
        );
        assert_eq!(
            PatchDifference::of("12.9", std::slice::from_ref(&old)),
            None
        );
        assert_eq!(
            PatchDifference::of("13.0", std::slice::from_ref(&none)),
            None
        );
        // The first folder holding the header decides.
        assert_eq!(PatchDifference::of("13.0", &[none.clone(), new, old]), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
