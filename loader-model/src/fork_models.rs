//! The fork generation's two halves, each modelled on its own: the claim
//! keeps its owner's generation (siblings of a forked child, generation 1,
//! wait for each other), and the fork handler gives the child a generation
//! of its own (so the child of a fork made while another thread loads is
//! told `Forked` at once). `models.rs` hands the child a new generation by
//! hand and has its threads at generation 0, where a claim that drops its
//! generation bits, or a handler that does nothing, still passes.
//!
//! Each has a wrong twin (run under loom in a child process, which must
//! fail, as in `models.rs`): a claim read as generation 0 (its bits
//! dropped) by siblings of generation 1; a handler that does nothing.

use crate::models::model;
use crate::once::{ForkWatch, Once, Stuck};
use crate::sys::{self, enter, Arc, Thread, World, Wrong};
use std::sync::atomic::Ordering;

#[cfg(loom)]
use loom::{sync::atomic::AtomicBool, thread};
#[cfg(not(loom))]
use std::{sync::atomic::AtomicBool, thread};

fn thread_of(id: u32, generation: u32) -> Thread {
    Thread {
        id,
        generation,
        token: id as usize,
    }
}

// --- siblings of a forked child ---------------------------------------------

/// Two threads of a process that is itself a forked child (generation 1):
/// one loads, the other makes its first call meanwhile and must wait for
/// it (`Ok`), never be told `Forked`. `claim_generation`: the generation
/// the waiter reads in the owner's claim (1: the claim as it is; 0, the
/// wrong twin: a claim whose generation bits were dropped).
fn siblings_in_a_forked_child(claim_generation: u32) {
    model(move || {
        let w = World::new(Wrong::default());
        let once = Arc::new(Once::new());
        let claimed = Arc::new(AtomicBool::new(false));
        let (w2, o2, c2) = (w.clone(), once.clone(), claimed.clone());
        let owner = thread::spawn(move || {
            enter(&w2, thread_of(1, claim_generation));
            o2.call(|| {
                c2.store(true, Ordering::Release);
                sys::yield_now();
            })
        });
        enter(&w, thread_of(2, 1));
        while !claimed.load(Ordering::Acquire) {
            sys::yield_now();
        }
        let mine = once.call(|| {});
        assert_eq!(owner.join().unwrap(), Ok(()));
        assert_eq!(
            mine,
            Ok(()),
            "a sibling in a forked child was not let wait for its own process's load"
        );
    });
}

#[test]
fn siblings_in_a_forked_child_wait_for_each_other() {
    siblings_in_a_forked_child(1);
}

#[cfg(loom)]
#[test]
#[ignore = "a wrong twin: its outer test (`_is_caught`) runs it in a child process, which must fail"]
fn wrong_twin_a_claim_without_its_generation_tells_a_sibling_forked() {
    siblings_in_a_forked_child(0);
}

#[cfg(loom)]
#[test]
fn wrong_twin_a_claim_without_its_generation_tells_a_sibling_forked_is_caught() {
    crate::models::must_fail(
        "fork_models::wrong_twin_a_claim_without_its_generation_tells_a_sibling_forked",
        "not let wait",
    );
}

// --- the fork handler ---------------------------------------------------------

/// What `fork` does to the watch in the child: the handler runs there, if
/// it was registered.
trait Handler {
    fn watch(&self, register: impl FnOnce() -> bool);
    fn forked(&self);
    fn generation(&self) -> u32;
}

impl Handler for ForkWatch {
    fn watch(&self, register: impl FnOnce() -> bool) {
        ForkWatch::watch(self, register)
    }
    fn forked(&self) {
        ForkWatch::forked(self)
    }
    fn generation(&self) -> u32 {
        ForkWatch::generation(self)
    }
}

/// The wrong twin: a handler that does nothing.
#[cfg(loom)]
struct IdleHandler(ForkWatch);

#[cfg(loom)]
impl Handler for IdleHandler {
    fn watch(&self, register: impl FnOnce() -> bool) {
        self.0.watch(register)
    }
    fn forked(&self) {}
    fn generation(&self) -> u32 {
        self.0.generation()
    }
}

/// The parent registers the handler (`watch`, as the platform's
/// `fork_generation` does: its registration runs `pthread_atfork`, here a
/// flag), and one of its threads claims the load at the parent's
/// generation and holds it. Another thread forks: the child runs the
/// handler if it was registered, and its one thread's first call must be
/// told `Forked` at once. The owner is still said to exist (a thread of
/// the child can have its id: a PID 1 child in a new PID namespace), so
/// nothing but the generation tells the child not to wait; it is checked
/// before the call, which would otherwise wait forever.
fn fork_during_a_load<H: Handler + 'static>(make: fn() -> H) {
    model(move || {
        let w = World::new(Wrong::default());
        // Made inside the model: loom's atomics cannot outlive one run.
        let watch = make();
        let registered = Arc::new(AtomicBool::new(false));
        let r2 = registered.clone();
        watch.watch(move || {
            r2.store(true, Ordering::Release);
            true
        });
        let parent = watch.generation();
        let once = Arc::new(Once::new());
        let claimed = Arc::new(AtomicBool::new(false));
        let child_done = Arc::new(AtomicBool::new(false));
        let (w2, o2, c2, d2) = (w.clone(), once.clone(), claimed.clone(), child_done.clone());
        let owner = thread::spawn(move || {
            enter(&w2, thread_of(1, parent));
            let _ = o2.call(|| {
                c2.store(true, Ordering::Release);
                while !d2.load(Ordering::Acquire) {
                    sys::yield_now();
                }
            });
        });
        while !claimed.load(Ordering::Acquire) {
            sys::yield_now();
        }
        // fork(): the child's side of the handler.
        if registered.load(Ordering::Acquire) {
            watch.forked();
        }
        let child = watch.generation();
        if child == parent {
            // Let the owner end before failing, or the model never finishes.
            child_done.store(true, Ordering::Release);
            owner.join().unwrap();
            panic!("the fork handler left the child at its parent's generation {parent}");
        }
        enter(&w, thread_of(9, child));
        assert_eq!(once.call(|| {}), Err(Stuck::Forked));
        child_done.store(true, Ordering::Release);
        owner.join().unwrap();
    });
}

#[test]
fn a_registered_fork_handler_gives_the_child_a_generation_of_its_own() {
    fork_during_a_load(ForkWatch::new);
}

#[cfg(loom)]
#[test]
#[ignore = "a wrong twin: its outer test (`_is_caught`) runs it in a child process, which must fail"]
fn wrong_twin_a_fork_handler_that_does_nothing() {
    fork_during_a_load(|| IdleHandler(ForkWatch::new()));
}

#[cfg(loom)]
#[test]
fn wrong_twin_a_fork_handler_that_does_nothing_is_caught() {
    crate::models::must_fail(
        "fork_models::wrong_twin_a_fork_handler_that_does_nothing",
        "left the child at its parent's generation",
    );
}
