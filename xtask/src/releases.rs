//! Which releases each job runs over, in one place: every release the crate
//! knows (`KNOWN_RELEASES` in build/release.rs, the one list), and each
//! subset a job uses, derived from it by a named rule or named here as a
//! policy with its reason. No other file spells a list of releases.

use generator::release::{cuda_version, KNOWN_RELEASES, PINNED_RELEASE};

/// Every known release, oldest first (`cargo xtask headers` fetches these).
pub const ALL: [&str; KNOWN_RELEASES.len()] = KNOWN_RELEASES;

/// The oldest known release (12.0).
pub fn oldest() -> &'static str {
    ALL[0]
}

/// The newest known release (13.5).
pub fn newest() -> &'static str {
    ALL[ALL.len() - 1]
}

/// Each major's last release (12.9, 13.5).
pub fn each_majors_last() -> Vec<&'static str> {
    ALL.iter()
        .enumerate()
        .filter(|(i, r)| ALL.get(i + 1).is_none_or(|next| major(next) != major(r)))
        .map(|(_, r)| *r)
        .collect()
}

/// The range's ends: the oldest release and each major's last (12.0, 12.9,
/// 13.5). CI's ABI checks beside the pinned release, and the
/// per-thread-default-stream builds of the GPU matrix.
pub fn ends() -> Vec<&'static str> {
    ordered([vec![oldest()], each_majors_last()].concat())
}

/// [`ends`] and the pinned release (12.0, 12.9, 13.0, 13.5): CI's aarch64
/// part, and the wrapper crate's releases (with the unseen fixture).
pub fn ends_and_pinned() -> Vec<&'static str> {
    ordered([ends(), vec![PINNED_RELEASE]].concat())
}

/// Policy: the releases where the five groups' signatures or layouts change
/// (docs/release-changes.md: 12.2 location types and `maxSize`, 12.8 the
/// wide im2col tensor map, 13.0 the `CUmemLocation` forms, 13.2 the
/// anonymous union).
pub const SIGNATURE_CHANGES: [&str; 4] = ["12.2", "12.8", "13.0", "13.2"];

/// The oldest, the newest and [`SIGNATURE_CHANGES`] (12.0, 12.2, 12.8, 13.0,
/// 13.2, 13.5): what CI compiles the device suite and the examples against,
/// besides the unseen fixture.
pub fn device_compiled() -> Vec<&'static str> {
    ordered([vec![oldest(), newest()], SIGNATURE_CHANGES.to_vec()].concat())
}

/// Policy: the releases a crates.io user's build without libclang is tried
/// on, from the packaged `.crate` (the range's ends, the pinned release, and
/// 12.4, a release in the middle of 12.x).
pub fn without_libclang() -> Vec<&'static str> {
    ordered([ends_and_pinned(), vec!["12.4"]].concat())
}

/// `CUDA_VERSION` of the unseen-release fixture (the 13.5 headers claiming
/// another release): two minors past the newest known release (13.7), so
/// newer than every release the crate lists and than the next wheel.
pub fn unseen_version() -> u32 {
    cuda_version(newest()).expect("known releases are major.minor") + 20
}

fn major(release: &str) -> &str {
    release.split('.').next().unwrap_or(release)
}

/// `releases` in [`ALL`]'s order, each once.
fn ordered(releases: Vec<&'static str>) -> Vec<&'static str> {
    ALL.iter()
        .copied()
        .filter(|r| releases.contains(r))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each rule gives the set the jobs ran before it was a rule; a list
    /// with a third major is cut by major, not by a count (the wrong twin:
    /// the last two releases would be 13.4 and 13.5).
    #[test]
    fn the_rules_give_each_jobs_releases() {
        assert_eq!(ends(), ["12.0", "12.9", "13.5"]);
        assert_eq!(ends_and_pinned(), ["12.0", "12.9", "13.0", "13.5"]);
        assert_eq!(
            device_compiled(),
            ["12.0", "12.2", "12.8", "13.0", "13.2", "13.5"]
        );
        assert_eq!(unseen_version(), 13070);
        assert_eq!(without_libclang(), ["12.0", "12.4", "12.9", "13.0", "13.5"]);
        assert!(SIGNATURE_CHANGES.iter().all(|r| ALL.contains(r)));
        assert_ne!(each_majors_last(), ALL[ALL.len() - 2..].to_vec());
    }

    #[test]
    fn the_list_is_oldest_first_and_every_entry_a_release() {
        let versions: Vec<u32> = ALL.iter().map(|r| cuda_version(r).unwrap()).collect();
        assert!(versions.windows(2).all(|w| w[0] < w[1]), "{versions:?}");
        assert!(ALL.contains(&PINNED_RELEASE));
        assert!(unseen_version() > *versions.last().unwrap());
        // The wrong twins: text that is no release.
        assert_eq!(cuda_version("13"), None);
        assert_eq!(cuda_version("13.x"), None);
        assert_eq!(cuda_version("13.0"), Some(13000));
    }
}
