//! A device test a release cannot run is reported ignored with a reason
//! that names the headers' release ("`cuMemPrefetchBatchAsync`: not in 12.4
//! (added in 13.0)"), whichever way its author wrote "this release": what
//! the release-matrix table in `docs/device-results.md` shows. No GPU needed.
mod common;

use common::{headers_release, release_named};

/// The reason must name `release` and no longer say "this release" / "these headers".
fn names_release(reason: &str, release: &str) -> bool {
    reason.contains(&format!("not in {release} ("))
        && !reason.contains("this release")
        && !reason.contains("these headers")
}

#[test]
fn the_reason_names_the_headers_release() {
    let release = headers_release();
    let v = cuda_mem_sys::CUDA_VERSION;
    assert_eq!(release, format!("{}.{}", v / 1000, v % 1000 / 10));
    for written in [
        "`cuMemPrefetchBatchAsync`: not in this release (added in 99.0)",
        "cuTensorMapEncodeIm2colWide: not in these headers (added in 99.0)",
    ] {
        let reported = release_named(written);
        assert!(names_release(&reported, &release), "{reported}");
    }
}

#[test]
fn a_reason_left_as_written_is_caught() {
    // The deliberately wrong case: the reason as its author wrote it.
    let written = "`cuMemPrefetchBatchAsync`: not in this release (added in 99.0)";
    assert!(!names_release(written, &headers_release()));
}

#[test]
fn device_tests_reports_the_release_in_the_ignored_reason() {
    // `body` need not exist: cfg(any()) leaves its call out, as a test of
    // another release's API is left out where its function is not compiled.
    let tests = device_tests![body if cfg(any()) else "`x`: not in this release (added in 99.0)"];
    assert_eq!(tests.len(), 1);
    match &tests[0].run {
        common::Run::Ignored(why) => assert!(names_release(why, &headers_release()), "{why}"),
        _ => panic!("{} is not listed as ignored", tests[0].name),
    }
}
