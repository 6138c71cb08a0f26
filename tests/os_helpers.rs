//! The device tests' OS helpers (`tests/common/os.rs`: the calling thread's
//! CPU and node, the page size, pinning), run without a GPU: on Linux, and
//! for `x86_64-pc-windows-msvc` under Wine (`cargo xtask msvc`), where they
//! are the only run the Windows side gets here.
mod common;

use common::os::{getcpu, page_size, PinnedThread};

#[test]
fn the_page_size_is_a_power_of_two_of_at_least_4_kib() {
    let page = page_size();
    assert!(page >= 4096 && page.is_power_of_two(), "page size {page}");
}

#[test]
fn the_calling_threads_cpu_is_one_this_machine_has() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (cpu, node) = getcpu();
    // A process may be limited to some CPUs, but their numbers stay below
    // what the machine has; a machine of this size has a few NUMA nodes at most.
    assert!(cpu < 1024, "CPU {cpu} (this process may use {cpus})");
    assert!(node < 64, "NUMA node {node}");
}

#[test]
fn a_pinned_thread_stays_on_its_cpu() {
    let pinned = PinnedThread::here().expect("pinning the calling thread");
    for _ in 0..200 {
        std::thread::yield_now();
        assert_eq!(getcpu().0, pinned.cpu, "the pinned thread moved");
    }
    assert_eq!(getcpu().1 as i32, pinned.node);
}

/// The wrong twin: the check that a pinned thread runs where it was pinned
/// fails for a CPU the thread is not on.
#[test]
fn a_thread_on_another_cpu_than_its_pin_is_refused() {
    let pinned = PinnedThread::here().expect("pinning the calling thread");
    let other = pinned.cpu + 1;
    let wrong = PinnedThread::here().map(|mut p| {
        p.cpu = other;
        p
    });
    let err = PinnedThread::checked(wrong.unwrap()).err();
    assert!(
        err.as_deref()
            .is_some_and(|e| e.contains(&format!("pinned to CPU {other} but running on"))),
        "{err:?}"
    );
    drop(pinned);
}
