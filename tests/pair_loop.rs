//! The multi-GPU tests' pair loop and byte checks (`tests/common/gpus.rs`),
//! proven without a GPU: every ordered pair once and no device with itself,
//! a failure in one pair reported without stopping the others, bytes read
//! as their writer wrote them accepted and another writer's refused (the
//! wrong twin every multi-GPU test runs beside its checks), and the
//! importers' slices covering the shared bytes exactly once.
mod common;

use common::gpus::{for_each_pair, pairs, read_as_written, refuses_unwritten, slice, sliced};
use common::{message, pattern};
use std::collections::BTreeSet;

#[test]
fn every_ordered_pair_once_and_none_with_itself() {
    for n in 1..=8 {
        let p = pairs(n);
        let set: BTreeSet<_> = p.iter().copied().collect();
        assert_eq!(p.len(), n * (n - 1), "{n} devices");
        assert_eq!(set.len(), p.len(), "a pair twice among {n} devices");
        assert!(p.iter().all(|(a, b)| a != b && *a < n && *b < n), "{p:?}");
    }
    assert_eq!(pairs(2), [(0, 1), (1, 0)]);
}

#[test]
fn a_failing_pair_is_named_and_the_others_still_run() {
    let mut ran = vec![];
    let r = for_each_pair(3, |a, b| {
        ran.push((a, b));
        if (a, b) == (2, 0) {
            return Err("device 2 cannot see device 0".into());
        }
        Ok(())
    });
    assert_eq!(ran, pairs(3));
    let why = message(r.expect_err("a failing pair passed"));
    assert!(why.contains("devices 2 -> 0"), "{why}");
}

#[test]
fn the_writers_bytes_pass_and_another_writers_are_refused() {
    let n = 4096;
    for writer in 0..4 {
        let got = common::gpus::written_by(writer, n, 7);
        read_as_written(&got, writer, 3, 7).expect("the writer's own bytes");
        // The wrong twin: the same check, given bytes this writer never
        // wrote (the next device's, the same test's; or another test's).
        let other = common::gpus::written_by(writer + 1, n, 7);
        assert!(read_as_written(&other, writer, 3, 7).is_err());
        refuses_unwritten(&other, writer, 3, 7).expect("refused");
        let salted = common::gpus::written_by(writer, n, 8);
        refuses_unwritten(&salted, writer, 3, 7).expect("refused");
        // And the twin itself fails where the bytes are the writer's.
        assert!(refuses_unwritten(&got, writer, 3, 7).is_err());
    }
}

#[test]
fn the_importers_slices_cover_the_bytes_once() {
    for (size, n) in [(4 << 20, 1), (4 << 20, 3), (4 << 20, 4), (4099, 8)] {
        let mut next = 0;
        for k in 0..n {
            let r = slice(size, n, k);
            assert_eq!(r.start, next, "slice {k} of {n}");
            assert!(!r.is_empty());
            next = r.end;
        }
        assert_eq!(next, size);
        let base = pattern(size, 20);
        let all = sliced(&base, n, 21);
        for k in 0..n {
            let r = slice(size, n, k);
            assert_eq!(all[r.clone()], pattern(r.len(), 21 + k as u32)[..]);
            assert_ne!(all[r.clone()], base[r]);
        }
    }
}
