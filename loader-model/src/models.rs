//! The models. Each has a wrong twin, which must fail: a deliberately wrong
//! variant ([`Wrong`]) that loom catches (a failed assertion, a data race,
//! or a wait that never ends, which loom reports as a model that does not
//! finish). A failing model aborts loom's process (a panic while its
//! threads unwind), so each twin runs in a child process of this test
//! binary, from its `_is_caught` test, which must see it fail. The twins
//! run only under loom.

use crate::once::{publish, ForkWatch, Once, Stuck};
use crate::sys::{self, enter, Arc, Thread, World, Wrong};
use std::ffi::c_void;
use std::sync::atomic::Ordering;

#[cfg(loom)]
use loom::{cell::UnsafeCell, sync::atomic::AtomicBool, thread};
#[cfg(not(loom))]
use std::{sync::atomic::AtomicBool, thread};

/// Runs `f` in every interleaving (loom), or a few hundred times (threads);
/// `fork_models.rs`'s models too.
pub(crate) fn model(f: impl Fn() + Sync + Send + 'static) {
    #[cfg(loom)]
    {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(3);
        // Waiters spin (yielding): room for their loops, where a wait that
        // never ends still exceeds it.
        b.max_branches = 20_000;
        b.check(f);
    }
    #[cfg(not(loom))]
    for _ in 0..200 {
        f();
    }
}

fn me(id: u32) -> Thread {
    Thread {
        id,
        generation: 0,
        token: id as usize,
    }
}

/// Waits (yielding) until `flag` is set.
fn until(flag: &AtomicBool) {
    while !flag.load(Ordering::Acquire) {
        sys::yield_now();
    }
}

/// A value the initialisation writes and every caller reads: loom's cell
/// sees a read that is not ordered after the write.
#[cfg(loom)]
struct Data(UnsafeCell<u32>);
#[cfg(loom)]
impl Data {
    fn new() -> Data {
        Data(UnsafeCell::new(0))
    }
    fn bump(&self) {
        self.0.with_mut(|p| unsafe { *p += 1 });
    }
    fn get(&self) -> u32 {
        self.0.with(|p| unsafe { *p })
    }
}
#[cfg(not(loom))]
struct Data(std::cell::UnsafeCell<u32>);
#[cfg(not(loom))]
impl Data {
    fn new() -> Data {
        Data(std::cell::UnsafeCell::new(0))
    }
    fn bump(&self) {
        unsafe { *self.0.get() += 1 };
    }
    fn get(&self) -> u32 {
        unsafe { *self.0.get() }
    }
}
unsafe impl Sync for Data {}

// --- N threads making the first call --------------------------------------

fn first_calls(wrong: Wrong) {
    model(move || {
        let w = World::new(wrong);
        let shared = Arc::new((Once::new(), Data::new()));
        let call = |w: Arc<World>, s: Arc<(Once, Data)>, id| {
            enter(&w, me(id));
            assert_eq!(s.0.call(|| s.1.bump()), Ok(()));
            // Every caller sees the one initialisation's work.
            assert_eq!(s.1.get(), 1);
        };
        let hs: Vec<_> = (2..3)
            .map(|id| {
                let (w, s) = (w.clone(), shared.clone());
                thread::spawn(move || call(w, s, id))
            })
            .collect();
        call(w, shared, 1);
        for h in hs {
            h.join().unwrap();
        }
    });
}

#[test]
fn two_threads_first_call_initialise_once_and_see_it() {
    first_calls(Wrong::default());
}

/// A claim by thread id 0 at fork generation 0 (every other model's
/// threads have ids of 1 or more, as Linux threads do) must still hold: the
/// claim word is never `NEW` whatever the id, by its `CLAIMED` bit. Two
/// threads of ids 0 and 2 making the first call initialise once. Its wrong
/// twin is the mutant that drops the bit (`1 << 63` → `1 >> 63`, found
/// surviving by cargo-mutants, docs/mutation-testing.md): thread 0's claim
/// is then `NEW`, which thread 2 claims again (two initialisations).
#[test]
fn a_claim_by_thread_id_0_at_generation_0_still_holds() {
    model(move || {
        let w = World::new(Wrong::default());
        // The once, its data, "thread 0 holds the claim", "thread 2 calls now".
        let shared = Arc::new((
            Once::new(),
            Data::new(),
            AtomicBool::new(false),
            AtomicBool::new(false),
        ));
        let thread = |id: u32| Thread {
            id,
            generation: 0,
            token: 100 + id as usize,
        };
        let (w2, s2) = (w.clone(), shared.clone());
        let h = thread::spawn(move || {
            enter(&w2, thread(2));
            // Only once thread 0 holds its claim.
            until(&s2.2);
            s2.3.store(true, Ordering::Release);
            assert_eq!(s2.0.call(|| s2.1.bump()), Ok(()));
            assert_eq!(
                s2.1.get(),
                1,
                "initialised twice: thread 0's claim read as NEW"
            );
        });
        enter(&w, thread(0));
        let s = shared.clone();
        let r = s.0.call(|| {
            s.2.store(true, Ordering::Release);
            until(&s.3);
            // Room for thread 2's compare-and-swap before the claim ends
            // (loom tries that interleaving itself).
            #[cfg(not(loom))]
            std::thread::sleep(std::time::Duration::from_millis(2));
            s.1.bump();
        });
        assert_eq!(r, Ok(()));
        h.join().unwrap();
        assert_eq!(
            shared.1.get(),
            1,
            "initialised twice: thread 0's claim read as NEW"
        );
    });
}

#[cfg(loom)]
#[test]
#[ignore = "a wrong twin: its outer test (`_is_caught`) runs it in a child process, which must fail"]
fn wrong_twin_relaxed_orderings_are_a_data_race() {
    first_calls(Wrong {
        relaxed: true,
        ..Wrong::default()
    });
}

// --- re-entrancy from a constructor ---------------------------------------

fn reentrancy(wrong: Wrong) {
    model(move || {
        let w = World::new(wrong);
        let once = Arc::new(Once::new());
        let (w2, o2) = (w.clone(), once.clone());
        let b = thread::spawn(move || {
            enter(&w2, me(2));
            assert_eq!(o2.call(|| {}), Ok(()));
        });
        enter(&w, me(1));
        let r = once.call(|| {
            // The "constructor" calls back on the loading thread.
            assert_eq!(once.call(|| {}), Err(Stuck::Reentrant));
        });
        assert_eq!(r, Ok(()));
        b.join().unwrap();
    });
}

#[test]
fn a_call_back_from_the_initialisation_is_reentrant_at_once() {
    reentrancy(Wrong::default());
}

#[cfg(loom)]
#[test]
#[ignore = "a wrong twin: its outer test (`_is_caught`) runs it in a child process, which must fail"]
fn wrong_twin_without_a_per_thread_marker_the_call_back_is_not_reentrant() {
    reentrancy(Wrong {
        token_per_call: true,
        ..Wrong::default()
    });
}

// A later thread with the dead owner's id is not the owner.
fn reused_id(wrong: Wrong) {
    model(move || {
        let w = World::new(wrong);
        let once = Arc::new(Once::new());
        let b_done = Arc::new(AtomicBool::new(false));
        let ended = Arc::new(AtomicBool::new(false));
        let (w2, o2, d2, e2) = (w.clone(), once.clone(), b_done.clone(), ended.clone());
        let owner = thread::spawn(move || {
            enter(&w2, me(5));
            let _ = o2.call(|| {
                // Ends inside the load (seen as gone from here on; it never
                // finishes before the later thread is done).
                w2.end(5);
                e2.store(true, Ordering::Release);
                until(&d2);
            });
        });
        // This thread gets the id 5 again, its own token: only once the
        // owner has ended (two live threads never share an id).
        until(&ended);
        enter(
            &w,
            Thread {
                id: 5,
                generation: 0,
                token: 99,
            },
        );
        let r = once.call(|| {});
        assert_eq!(r, Err(Stuck::OwnerGone), "{r:?}");
        b_done.store(true, Ordering::Release);
        owner.join().unwrap();
    });
}

#[test]
fn a_thread_reusing_a_dead_owners_id_is_not_reentrant() {
    reused_id(Wrong::default());
}

#[cfg(loom)]
#[test]
#[ignore = "a wrong twin: its outer test (`_is_caught`) runs it in a child process, which must fail"]
fn wrong_twin_the_id_alone_calls_the_reused_id_reentrant() {
    reused_id(Wrong {
        no_token: true,
        ..Wrong::default()
    });
}

// --- a fork generation that changes mid-load --------------------------------

/// The owner (generation 0) holds the load until the "child" is done; the
/// child (`child_generation`; with handlers it is new) must not wait.
/// `handlers`: false, the child keeps generation 0 (`clone(2)`, `_Fork()`),
/// and the owner is not among its threads.
fn forked(wrong: Wrong, handlers: bool) {
    model(move || {
        let w = World::new(wrong);
        let once = Arc::new(Once::new());
        let child_done = Arc::new(AtomicBool::new(false));
        let (w2, o2, d2) = (w.clone(), once.clone(), child_done.clone());
        let claimed = Arc::new(AtomicBool::new(false));
        let c2 = claimed.clone();
        let owner = thread::spawn(move || {
            enter(&w2, me(1));
            let _ = o2.call(|| {
                c2.store(true, Ordering::Release);
                until(&d2);
            });
        });
        until(&claimed);
        // The fork happens now: the child's one thread.
        if !handlers {
            w.end(1);
        }
        enter(
            &w,
            Thread {
                id: 9,
                generation: u32::from(handlers),
                token: 9,
            },
        );
        let r = once.call(|| {});
        let expect = if handlers {
            Stuck::Forked
        } else {
            Stuck::OwnerGone
        };
        assert_eq!(r, Err(expect));
        child_done.store(true, Ordering::Release);
        owner.join().unwrap();
    });
}

#[test]
fn a_child_forked_mid_load_is_told_at_once() {
    forked(Wrong::default(), true);
}

#[test]
fn a_child_made_without_fork_handlers_is_told_at_once() {
    forked(Wrong::default(), false);
}

#[cfg(loom)]
#[test]
#[ignore = "a wrong twin: its outer test (`_is_caught`) runs it in a child process, which must fail"]
fn wrong_twin_without_the_liveness_check_a_handlerless_child_waits_forever() {
    forked(
        Wrong {
            all_alive: true,
            ..Wrong::default()
        },
        false,
    );
}

/// The old reading, beside the real one for the wrong twin: the fork
/// handler's state, waited for (a bounded while), then the process id.
struct OldForkWatch {
    generation: sys::AtomicU32,
    state: sys::AtomicU32,
}

impl OldForkWatch {
    fn watch(&self, register: impl FnOnce() -> bool) {
        if self
            .state
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            let ok = register();
            self.state.store(if ok { 2 } else { 3 }, Ordering::Release);
        }
    }

    fn generation(&self) -> u32 {
        self.watch(|| true);
        for _ in 0..2 {
            match self.state.load(Ordering::Acquire) {
                1 => sys::yield_now(),
                2 => return self.generation.load(Ordering::Acquire),
                _ => break,
            }
        }
        4242 // the process id
    }
}

/// Siblings agree on the generation while the handler is being registered
/// (slowly) on another thread. `old`: the old reading ([`OldForkWatch`]).
fn generation_during_registration(old: bool) {
    model(move || {
        let w = World::new(Wrong::default());
        let fw = Arc::new(ForkWatch::new());
        let ofw = Arc::new(OldForkWatch {
            generation: sys::AtomicU32::new(0),
            state: sys::AtomicU32::new(0),
        });
        let (w2, f2, o2) = (w.clone(), fw.clone(), ofw.clone());
        let registering = thread::spawn(move || {
            enter(&w2, me(1));
            let slow = || {
                sys::yield_now();
                sys::yield_now();
                true
            };
            if old {
                o2.watch(slow);
                o2.generation()
            } else {
                f2.watch(slow);
                f2.generation()
            }
        });
        enter(&w, me(2));
        let mine = if old {
            ofw.generation()
        } else {
            fw.watch(|| true);
            fw.generation()
        };
        let theirs = registering.join().unwrap();
        assert_eq!(mine, theirs, "siblings disagree on the generation");
    });
}

#[test]
fn siblings_agree_on_the_generation_while_the_handler_registers() {
    generation_during_registration(false);
}

#[cfg(loom)]
#[test]
#[ignore = "a wrong twin: its outer test (`_is_caught`) runs it in a child process, which must fail"]
fn wrong_twin_the_pid_fall_back_makes_siblings_disagree() {
    generation_during_registration(true);
}

// --- owner death and poisoning ---------------------------------------------

fn owner_dies(wrong: Wrong) {
    model(move || {
        let w = World::new(wrong);
        let once = Arc::new(Once::new());
        let done = Arc::new(AtomicBool::new(false));
        let claimed = Arc::new(AtomicBool::new(false));
        let (w2, o2, d2, c2) = (w.clone(), once.clone(), done.clone(), claimed.clone());
        let owner = thread::spawn(move || {
            enter(&w2, me(3));
            let _ = o2.call(|| {
                c2.store(true, Ordering::Release);
                // Ends inside the load: gone from here on, never finishing.
                w2.end(3);
                until(&d2);
            });
        });
        enter(&w, me(4));
        until(&claimed);
        assert_eq!(once.call(|| {}), Err(Stuck::OwnerGone));
        done.store(true, Ordering::Release);
        owner.join().unwrap();
    });
}

#[test]
fn a_waiter_for_a_dead_owner_is_told_owner_gone() {
    owner_dies(Wrong::default());
}

#[cfg(loom)]
#[test]
#[ignore = "a wrong twin: its outer test (`_is_caught`) runs it in a child process, which must fail"]
fn wrong_twin_without_the_liveness_check_the_waiter_never_returns() {
    owner_dies(Wrong {
        all_alive: true,
        ..Wrong::default()
    });
}

#[test]
fn an_initialisation_that_unwinds_poisons_the_load() {
    model(|| {
        let w = World::new(Wrong::default());
        let once = Arc::new(Once::new());
        let (w2, o2) = (w.clone(), once.clone());
        let a = thread::spawn(move || {
            enter(&w2, me(1));
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                o2.call(|| panic!("the initialisation unwinds"))
            }));
            // It panicked (it ran the initialisation) or found B's done.
            match r {
                Err(_) => true,
                Ok(r) => {
                    assert_eq!(r, Ok(()));
                    false
                }
            }
        });
        enter(&w, me(2));
        let mine = once.call(|| {});
        let a_panicked = a.join().unwrap();
        if a_panicked {
            assert_eq!(mine, Err(Stuck::Poisoned));
            assert_eq!(once.call(|| {}), Err(Stuck::Poisoned));
        } else {
            assert_eq!(mine, Ok(()));
        }
    });
}

/// An initialisation by thread id 0 at fork generation 0 that unwinds
/// leaves the load poisoned: the unwound word is never `NEW` whatever the
/// id, by its `UNWOUND` bit. Its wrong twin is the mutant that drops the
/// bit (`1 << 62` → `1 >> 62`, found surviving by cargo-mutants,
/// docs/mutation-testing.md): the word is then `NEW`, and a later call
/// claims it again and succeeds.
#[test]
fn an_unwind_by_thread_id_0_at_generation_0_still_poisons() {
    model(|| {
        let w = World::new(Wrong::default());
        let once = Arc::new(Once::new());
        let thread = |id: u32| Thread {
            id,
            generation: 0,
            token: 100 + id as usize,
        };
        let (w2, o2) = (w.clone(), once.clone());
        let a = thread::spawn(move || {
            enter(&w2, thread(0));
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                o2.call(|| panic!("the initialisation unwinds"))
            }))
            .is_err()
        });
        assert!(
            a.join().unwrap(),
            "thread 0's initialisation did not unwind"
        );
        enter(&w, thread(2));
        assert_eq!(
            once.call(|| {}),
            Err(Stuck::Poisoned),
            "thread 0's unwound claim read as NEW"
        );
    });
}

// An unwind that ends its thread (a forced unwind: pthread_exit in the
// library's constructor) is told as the owner gone, not as a panic, once
// the thread is gone; a caught panic (the thread lives on) stays Poisoned.
fn unwind_ends_thread(wrong: Wrong) {
    model(move || {
        let w = World::new(wrong);
        let once = Arc::new(Once::new());
        let (w2, o2) = (w.clone(), once.clone());
        let a = thread::spawn(move || {
            enter(&w2, me(1));
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                o2.call(|| panic!("a forced unwind"))
            }));
            // The unwind ends the thread: gone from here on.
            w2.end(1);
            r.is_err()
        });
        enter(&w, me(2));
        let mine = once.call(|| {});
        let a_unwound = a.join().unwrap();
        if a_unwound {
            // Judged while A was still ending, or after.
            assert!(
                mine == Err(Stuck::Poisoned) || mine == Err(Stuck::OwnerGone),
                "{mine:?}"
            );
            let later = once.call(|| {});
            assert_eq!(
                later,
                Err(Stuck::OwnerGone),
                "the ended thread told as {later:?}"
            );
        } else {
            assert_eq!(mine, Ok(()));
        }
    });
}

/// The thread whose initialisation unwound (a panic it caught) calls
/// again: it lives on, so the load is `Poisoned`, told by its token before
/// its id (a `!=` turned `==` in that check survived cargo-mutants: the
/// thread was then told `OwnerGone`, as a thread of its id that ended).
#[test]
fn the_thread_whose_initialisation_unwound_is_told_poisoned_when_it_calls_again() {
    model(|| {
        let w = World::new(Wrong::default());
        let once = Once::new();
        enter(&w, me(1));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            once.call(|| panic!("the initialisation unwinds"))
        }));
        assert!(r.is_err(), "the initialisation did not unwind");
        assert_eq!(once.call(|| {}), Err(Stuck::Poisoned));
    });
}

/// In a forked child (fork generation 1), a thread of the child whose
/// initialisation unwound and ended is told `OwnerGone` to a sibling of the
/// same generation: the generations compared are the word's high bits (a
/// `>>` turned `<<` there survived cargo-mutants: the child's own unwind was
/// then taken for the parent's, `Poisoned`).
#[test]
fn an_ended_unwind_in_a_forked_child_is_told_owner_gone_to_its_sibling() {
    model(|| {
        let w = World::new(Wrong::default());
        let once = Arc::new(Once::new());
        let child = |id: u32| Thread {
            id,
            generation: 1,
            token: id as usize,
        };
        let (w2, o2) = (w.clone(), once.clone());
        let a = thread::spawn(move || {
            enter(&w2, child(1));
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                o2.call(|| panic!("a forced unwind"))
            }));
            w2.end(1);
            r.is_err()
        });
        assert!(a.join().unwrap(), "the initialisation did not unwind");
        enter(&w, child(2));
        assert_eq!(once.call(|| {}), Err(Stuck::OwnerGone));
    });
}

/// A thread whose id is that of a thread whose initialisation unwound and
/// ended (the id reused; its token differs) is told `OwnerGone`, not
/// `Poisoned`: with a token, the id alone says "not this thread" (an `==`
/// turned `!=` there survived cargo-mutants).
#[test]
fn a_thread_reusing_the_id_of_an_ended_unwind_is_told_owner_gone() {
    model(|| {
        let w = World::new(Wrong::default());
        let once = Arc::new(Once::new());
        let (w2, o2) = (w.clone(), once.clone());
        let a = thread::spawn(move || {
            enter(&w2, me(5));
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                o2.call(|| panic!("a forced unwind"))
            }));
            w2.end(5);
            r.is_err()
        });
        assert!(a.join().unwrap(), "the initialisation did not unwind");
        enter(
            &w,
            Thread {
                id: 5,
                generation: 0,
                token: 9,
            },
        );
        assert_eq!(once.call(|| {}), Err(Stuck::OwnerGone));
    });
}

#[test]
fn an_unwind_that_ends_its_thread_is_told_owner_gone() {
    unwind_ends_thread(Wrong::default());
}

#[cfg(loom)]
#[test]
#[ignore = "a wrong twin: its outer test (`_is_caught`) runs it in a child process, which must fail"]
fn wrong_twin_without_the_liveness_check_an_ended_unwind_is_a_panic() {
    unwind_ends_thread(Wrong {
        all_alive: true,
        ..Wrong::default()
    });
}

// A signal handler on the loading thread that calls back between the claim
// and the storing of the owner's token is told Reentrant (this very
// thread), not OwnerGone (a dead thread with this one's id), which it was
// told when the stored token alone decided. Its wrong twin is the rule of
// before, checked by hand (it fails with `Err(OwnerGone)`): no variant of
// the system layer can bring it back.
#[test]
fn a_signal_between_the_claim_and_the_token_is_reentrant() {
    model(|| {
        let w = World::new(Wrong::default());
        let once = Arc::new(Once::new());
        enter(&w, me(1));
        let seen = Arc::new(AtomicBool::new(false));
        let (o1, s1) = (once.clone(), seen.clone());
        // This thread alone: its claim is what the handler meets.
        sys::on_next_token(move || {
            assert_eq!(o1.call(|| {}), Err(Stuck::Reentrant));
            s1.store(true, Ordering::Relaxed);
        });
        assert_eq!(once.call(|| {}), Ok(()));
        assert!(seen.load(Ordering::Relaxed), "the handler never ran");
    });
}

// --- slot publication racing function() ------------------------------------

// A slot's values as `src/loader/slot_state.rs` makes them: a state is an
// address without provenance; ADDRESS stands for a library's function (never
// called here). Threads hand back addresses: a pointer is not `Send`.
const UNRESOLVED: usize = 0;
const NOT_FOUND: usize = 3;
const ADDRESS: usize = 0x7000;

fn value(n: usize) -> *mut c_void {
    std::ptr::null_mut::<c_void>().wrapping_byte_add(n)
}

fn publication(wrong: Wrong) {
    model(move || {
        let w = World::new(wrong);
        let slot = Arc::new(sys::AtomicPtr::new(value(UNRESOLVED)));
        // Two first calls whose lookups answer differently.
        let spawn = |found: usize, id| {
            let (w, s) = (w.clone(), slot.clone());
            thread::spawn(move || {
                enter(&w, me(id));
                publish(&s, value(UNRESOLVED), value(found)) as usize
            })
        };
        let a = spawn(ADDRESS, 1);
        let b = spawn(NOT_FOUND, 2);
        // function(): reads the slot meanwhile.
        enter(&w, me(3));
        let seen = slot.load(Ordering::Acquire) as usize;
        let (a, b) = (a.join().unwrap(), b.join().unwrap());
        let last = slot.load(Ordering::Acquire) as usize;
        assert_eq!(a, b, "the two callers disagree");
        assert_eq!(a, last, "function() disagrees with the callers");
        assert!(seen == UNRESOLVED || seen == last, "the slot changed twice");
    });
}

#[test]
fn a_slot_publishes_once_and_everyone_agrees() {
    publication(Wrong::default());
}

#[cfg(loom)]
#[test]
#[ignore = "a wrong twin: its outer test (`_is_caught`) runs it in a child process, which must fail"]
fn wrong_twin_an_unconditional_store_overwrites_the_first_answer() {
    publication(Wrong {
        cas_is_store: true,
        ..Wrong::default()
    });
}

// --- the runtime after the driver ------------------------------------------

/// Thread A's first call loads the driver: its constructor (holding the
/// system loader's lock) calls the runtime. Thread B's first call is the
/// runtime's, whose load needs the system loader's lock. `ordered`: B waits
/// for the driver's load before it claims the runtime's (`call_after`).
fn runtime_after_driver(ordered: bool) {
    model(move || {
        let w = World::new(Wrong::default());
        let driver = Arc::new(Once::new());
        let runtime = Arc::new(Once::new());
        let lock = Arc::new(AtomicBool::new(false));
        let runtime_call = {
            let (driver, runtime, lock) = (driver.clone(), runtime.clone(), lock.clone());
            move |driver_init: &dyn Fn()| -> Result<(), Stuck> {
                let open = || {
                    // dlopen: the system loader's lock.
                    while lock.load(Ordering::Acquire) {
                        sys::yield_now();
                    }
                };
                if ordered {
                    runtime.call_after(|| driver.call(driver_init).map_err(Stuck::of_driver), open)
                } else {
                    runtime.call(open)
                }
            }
        };
        let runtime_call = Arc::new(runtime_call);
        let driver_init = {
            let (lock, rc) = (lock.clone(), runtime_call.clone());
            move || {
                lock.store(true, Ordering::Release);
                // The driver's constructor calls the runtime.
                let r = rc(&|| {});
                assert!(r.is_err() || !ordered, "{r:?}");
                lock.store(false, Ordering::Release);
            }
        };
        let driver_init = Arc::new(driver_init);
        let (w2, d2, di) = (w.clone(), driver.clone(), driver_init.clone());
        let a = thread::spawn(move || {
            enter(&w2, me(1));
            let _ = d2.call(|| di());
        });
        enter(&w, me(2));
        let di = driver_init.clone();
        let _ = runtime_call(&move || di());
        a.join().unwrap();
    });
}

#[test]
fn the_runtime_waits_for_the_driver_before_claiming_its_load() {
    runtime_after_driver(true);
}

#[cfg(loom)]
#[test]
#[ignore = "a wrong twin: its outer test (`_is_caught`) runs it in a child process, which must fail"]
fn wrong_twin_claiming_the_runtime_first_deadlocks() {
    runtime_after_driver(false);
}

/// Runs the ignored twin `name` in a child process of this test binary: it
/// must fail, for the reason `why` (a panic's text, or loom's: "Causality
/// violation" for a data race, "maximum number of branches" for a wait that
/// never ends).
#[cfg(loom)]
pub(crate) fn must_fail(name: &str, why: &str) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "--test-threads=1", name])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success() && text.contains(why),
        "the wrong twin {name} was not caught ({why:?}):\n{text}"
    );
    println!("{name} caught: {why}");
}

#[cfg(loom)]
#[test]
fn wrong_twin_relaxed_orderings_are_a_data_race_is_caught() {
    must_fail(
        "models::wrong_twin_relaxed_orderings_are_a_data_race",
        "Causality violation",
    );
}

#[cfg(loom)]
#[test]
fn wrong_twin_without_a_per_thread_marker_the_call_back_is_not_reentrant_is_caught() {
    must_fail(
        "models::wrong_twin_without_a_per_thread_marker_the_call_back_is_not_reentrant",
        "Reentrant",
    );
}

#[cfg(loom)]
#[test]
fn wrong_twin_the_id_alone_calls_the_reused_id_reentrant_is_caught() {
    must_fail(
        "models::wrong_twin_the_id_alone_calls_the_reused_id_reentrant",
        "Err(Reentrant)",
    );
}

#[cfg(loom)]
#[test]
fn wrong_twin_without_the_liveness_check_a_handlerless_child_waits_forever_is_caught() {
    must_fail(
        "models::wrong_twin_without_the_liveness_check_a_handlerless_child_waits_forever",
        "maximum number of branches",
    );
}

#[cfg(loom)]
#[test]
fn wrong_twin_the_pid_fall_back_makes_siblings_disagree_is_caught() {
    must_fail(
        "models::wrong_twin_the_pid_fall_back_makes_siblings_disagree",
        "siblings disagree",
    );
}

#[cfg(loom)]
#[test]
fn wrong_twin_without_the_liveness_check_the_waiter_never_returns_is_caught() {
    must_fail(
        "models::wrong_twin_without_the_liveness_check_the_waiter_never_returns",
        "maximum number of branches",
    );
}

#[cfg(loom)]
#[test]
fn wrong_twin_an_unconditional_store_overwrites_the_first_answer_is_caught() {
    must_fail(
        "models::wrong_twin_an_unconditional_store_overwrites_the_first_answer",
        "disagree",
    );
}

#[cfg(loom)]
#[test]
fn wrong_twin_without_the_liveness_check_an_ended_unwind_is_a_panic_is_caught() {
    must_fail(
        "models::wrong_twin_without_the_liveness_check_an_ended_unwind_is_a_panic",
        "the ended thread told as Err(Poisoned)",
    );
}

#[cfg(loom)]
#[test]
fn wrong_twin_claiming_the_runtime_first_deadlocks_is_caught() {
    must_fail(
        "models::wrong_twin_claiming_the_runtime_first_deadlocks",
        "maximum number of branches",
    );
}
