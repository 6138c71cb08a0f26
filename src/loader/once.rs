//! A one-time initialisation that never hangs (on re-entrancy, in a forked
//! child, or after its owner ended), why it cannot be waited for, and the
//! publication of a resolved slot.
//!
//! Everything here reaches the system through `super::sys` only: its
//! atomics, the current thread's id and token, whether a thread still
//! exists, spinning, yielding and sleeping, and (Unix) the `atfork`
//! registration. The fork generation is this file's own ([`ForkWatch`],
//! [`fork_generation`]), so `sys` never calls back into it. The crate's
//! `sys` is the platform's (`unix/`, `windows.rs`); `loader-model/`
//! compiles this same file against a fake one (`--cfg
//! cuda_mem_sys_model`, whose `sys` also gives each modelled thread its
//! generation) and checks it with loom.

#[cfg(unix)]
use super::sys::AtomicU32;
use super::sys::{self, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use core::ffi::c_void;

/// Why a one-time initialisation cannot be waited for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stuck {
    /// Called again from inside the initialisation, on its own thread.
    Reentrant,
    /// In a child forked while another thread of the parent ran it.
    Forked,
    /// The thread that ran it no longer exists: it ended inside the
    /// initialisation, or this process was made without fork handlers
    /// (`clone(2)`, `_Fork()`) while it ran.
    OwnerGone,
    /// The initialisation unwound (a panic) on the thread that ran it, and
    /// that thread lives on. An unwind that ends its thread (a forced
    /// unwind: `pthread_exit`, cancellation) is [`OwnerGone`](Self::OwnerGone)
    /// once the thread is gone.
    Poisoned,
    /// The environment (read before any library is claimed) is being read
    /// by this very thread: a `getenv` that called back into the crate.
    #[allow(dead_code)] // made by environment.rs, which loader-model does not compile
    EnvironmentReentrant,
    /// The runtime, while the named driver (loaded first) is being loaded
    /// by this very thread.
    DriverReentrant,
    /// The runtime, in a child forked while another thread of the parent
    /// loaded the named driver.
    DriverForked,
    /// The runtime, where the thread loading the named driver is gone.
    DriverOwnerGone,
    /// The runtime, where the named driver's load unwound.
    DriverPoisoned,
}

impl Stuck {
    pub(super) fn message(self) -> &'static str {
        match self {
            Stuck::Reentrant => {
                "the library is being loaded by this very thread: its own code called back \
                 into cuda-mem-sys while it loaded"
            }
            Stuck::Forked => {
                "the process was forked while another thread was loading the library; \
                 that load cannot finish in this process"
            }
            Stuck::OwnerGone => {
                "the thread that was loading the library no longer exists (it ended inside \
                 the load, or this process was made by clone(2) or _Fork(), which run no \
                 fork handlers, while it loaded); that load cannot finish in this process"
            }
            Stuck::Poisoned => {
                "the load of the library was unwound by a panic on the thread that ran it, \
                 which lives on; it is not tried again in this process"
            }
            Stuck::EnvironmentReentrant => {
                "the environment (CUDA_MEM_SYS_LIBCUDA, CUDA_MEM_SYS_LIBCUDART) is being read \
                 by this very thread (its getenv called back into cuda-mem-sys): nothing is \
                 loaded yet, and the variables are not read yet, so `variable` says Unset; \
                 a later call loads normally"
            }
            Stuck::DriverReentrant => {
                "not loaded: the driver CUDA_MEM_SYS_LIBCUDA names, loaded before the runtime, \
                 is being loaded by this very thread (its own code called the runtime)"
            }
            Stuck::DriverForked => {
                "not loaded: the process was forked while another thread was loading the \
                 driver CUDA_MEM_SYS_LIBCUDA names, which the runtime needs first; that load \
                 cannot finish in this process"
            }
            Stuck::DriverOwnerGone => {
                "not loaded: the thread that was loading the driver CUDA_MEM_SYS_LIBCUDA \
                 names, which the runtime needs first, no longer exists; that load cannot \
                 finish in this process"
            }
            Stuck::DriverPoisoned => {
                "not loaded: the load of the driver CUDA_MEM_SYS_LIBCUDA names, which the \
                 runtime needs first, panicked"
            }
        }
    }

    /// The same, said of the driver the runtime waits for.
    pub(super) fn of_driver(self) -> Stuck {
        match self {
            Stuck::Reentrant | Stuck::DriverReentrant => Stuck::DriverReentrant,
            Stuck::EnvironmentReentrant => Stuck::EnvironmentReentrant,
            Stuck::Forked | Stuck::DriverForked => Stuck::DriverForked,
            Stuck::OwnerGone | Stuck::DriverOwnerGone => Stuck::DriverOwnerGone,
            Stuck::Poisoned | Stuck::DriverPoisoned => Stuck::DriverPoisoned,
        }
    }
}

/// A one-time initialisation that never hangs. The word is `NEW`, `DONE`,
/// the running thread's claim: `CLAIMED`, its fork generation (30 bits)
/// and its thread id (32 bits), or, where the initialisation unwound, the
/// same without `CLAIMED` and with `UNWOUND`. One compare-and-swap claims it
/// with both, so no fork can leave it claimed by an owner the child cannot
/// tell from a thread of its own; the fork generation
/// ([`fork_generation`]) changes in every forked child, even where
/// the child has its parent's process id (PID 1 forking into a new PID
/// namespace). A claim is never `NEW` (the `CLAIMED` bit), whatever the
/// thread id, nor `DONE` (the `UNWOUND` bit is clear).
///
/// Who the owner is, for re-entrancy, is told by its thread token
/// ([`sys::thread_token`]: per thread, never reused in the process), not
/// by its thread id, which a later thread can reuse once the owner ended.
///
/// An unwind out of the initialisation is told by whether its thread lives
/// on: a panic that was caught leaves it running (`Poisoned`); a forced
/// unwind (`pthread_exit` or a cancellation in the library's constructor)
/// ends it (`OwnerGone`, as any owner that ended inside the load). No
/// destructor can tell the two apart (this crate is `no_std`: no
/// `std::thread::panicking`), the thread's end can: it is asked when a
/// waiter judges, so a waiter that judges while the unwinding thread is
/// still ending is told `Poisoned`, and every later one `OwnerGone`.
pub(super) struct Once {
    word: AtomicU64,
    /// The owner's thread token (0: none known), written by the owner
    /// right after its claim, before it runs the initialisation, and read
    /// only to ask "is it me?" (which the owner's own writes always
    /// answer; a signal handler on the owner's thread that calls in
    /// between the claim and this store finds 0 and its own thread id in
    /// the claim, and is told `Reentrant` as well).
    owner: AtomicUsize,
}

const NEW: u64 = 0;
const DONE: u64 = u64::MAX;
const CLAIMED: u64 = 1 << 63;
/// The initialisation unwound; with the owner's generation and thread id.
const UNWOUND: u64 = 1 << 62;
const GENERATION_BITS: u64 = 0x3FFF_FFFF;

fn owned_by(generation: u32, thread: u32) -> u64 {
    ((u64::from(generation) & GENERATION_BITS) << 32) | u64::from(thread)
}

fn claim(generation: u32, thread: u32) -> u64 {
    CLAIMED | owned_by(generation, thread)
}

/// What a waiter does about a claimed word.
enum Verdict {
    Wait,
    Stuck(Stuck),
}

/// Marks the word unwound (with its owner) if the initialisation unwinds.
struct Running<'a> {
    once: &'a Once,
    generation: u32,
    thread: u32,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.once.word.store(
            UNWOUND | owned_by(self.generation, self.thread),
            Ordering::Release,
        );
    }
}

impl Once {
    #[cfg(not(loom))]
    pub(super) const fn new() -> Once {
        Once {
            word: AtomicU64::new(NEW),
            owner: AtomicUsize::new(0),
        }
    }

    /// (Under loom atomics cannot be made in a constant.)
    #[cfg(loom)]
    pub(super) fn new() -> Once {
        Once {
            word: AtomicU64::new(NEW),
            owner: AtomicUsize::new(0),
        }
    }

    pub(super) fn done(&self) -> bool {
        self.word.load(Ordering::Acquire) == DONE
    }

    /// Runs `init` unless it has run; waits (spinning, yielding, then
    /// sleeping) while another thread of this process runs it, as long as
    /// that thread exists.
    pub(super) fn call(&self, init: impl FnOnce()) -> Result<(), Stuck> {
        if self.done() {
            return Ok(());
        }
        let generation = fork_generation();
        let thread = sys::thread_id();
        let me = claim(generation, thread);
        let mut spins = 0u32;
        loop {
            match self
                .word
                .compare_exchange(NEW, me, Ordering::Acquire, Ordering::Acquire)
            {
                Ok(_) => {
                    self.owner.store(sys::thread_token(), Ordering::Relaxed);
                    let running = Running {
                        once: self,
                        generation,
                        thread,
                    };
                    init();
                    core::mem::forget(running);
                    self.word.store(DONE, Ordering::Release);
                    return Ok(());
                }
                Err(DONE) => return Ok(()),
                Err(unwound) if unwound & (CLAIMED | UNWOUND) == UNWOUND => {
                    return Err(self.judge_unwound(unwound, generation, thread))
                }
                Err(owner) => match self.judge(owner, generation, thread) {
                    Verdict::Stuck(why) => return Err(why),
                    // Spin briefly, then yield, then sleep: a load can take
                    // long (a driver's initialisation), and waiters should
                    // not burn the cores it needs.
                    Verdict::Wait if spins < 100 => {
                        spins += 1;
                        sys::spin();
                    }
                    Verdict::Wait if spins < 200 => {
                        spins += 1;
                        sys::yield_now();
                    }
                    Verdict::Wait => sys::sleep_briefly(),
                },
            }
        }
    }

    /// Whether a thread may wait for the claim `owner`.
    fn judge(&self, owner: u64, generation: u32, thread: u32) -> Verdict {
        let owner_thread = owner as u32;
        let token = sys::thread_token();
        let stored = self.owner.load(Ordering::Relaxed);
        if token != 0 && stored == token {
            // This very thread runs it (or this is a child forked from
            // that thread, which runs it as well).
            return Verdict::Stuck(Stuck::Reentrant);
        }
        if (owner >> 32) & GENERATION_BITS != u64::from(generation) & GENERATION_BITS {
            return Verdict::Stuck(Stuck::Forked);
        }
        if owner_thread == thread {
            // Without a thread token (none could be kept), the id decides;
            // and where the owner's token is not stored yet, the claim is
            // this thread's own, made a moment ago: a signal handler that
            // runs between the claim and the store calls back.
            if token == 0 || stored == 0 {
                return Verdict::Stuck(Stuck::Reentrant);
            }
            // A thread with this very id ran it and is not this one: it
            // ended, and its id is this thread's now.
            return Verdict::Stuck(Stuck::OwnerGone);
        }
        if !sys::thread_exists(owner_thread) {
            return Verdict::Stuck(Stuck::OwnerGone);
        }
        Verdict::Wait
    }

    /// Why an initialisation that unwound (the word `unwound`) cannot be
    /// waited for: its thread ended (a forced unwind: `OwnerGone`) or
    /// lives on (a panic: `Poisoned`).
    fn judge_unwound(&self, unwound: u64, generation: u32, thread: u32) -> Stuck {
        let owner_thread = unwound as u32;
        let token = sys::thread_token();
        if token != 0 && self.owner.load(Ordering::Relaxed) == token {
            // The very thread that unwound calls again: it lives on.
            return Stuck::Poisoned;
        }
        if (unwound >> 32) & GENERATION_BITS != u64::from(generation) & GENERATION_BITS {
            // Unwound in the parent: whether that thread lives on there
            // cannot be asked from this child.
            return Stuck::Poisoned;
        }
        if owner_thread == thread {
            // Without a token the id decides (this thread); with one, a
            // thread of this id unwound and is not this one: it ended.
            return if token == 0 {
                Stuck::Poisoned
            } else {
                Stuck::OwnerGone
            };
        }
        if sys::thread_exists(owner_thread) {
            Stuck::Poisoned
        } else {
            Stuck::OwnerGone
        }
    }

    /// [`call`](Self::call), after `first` (the wait for another `Once`
    /// that must complete before this one is claimed: the named driver's
    /// load before the runtime's), never while holding this one. Where
    /// `first` cannot be waited for, neither can this: its reason, at once.
    pub(super) fn call_after(
        &self,
        first: impl FnOnce() -> Result<(), Stuck>,
        init: impl FnOnce(),
    ) -> Result<(), Stuck> {
        if !self.done() {
            first()?;
        }
        self.call(init)
    }
}

/// Publishes `found` in `slot` if it is still `unresolved`; the slot's
/// value either way. A slot changes once: a second lookup that answers
/// otherwise (a driver that says "not found" the second time) cannot
/// replace what the first published, so every caller, and
/// [`function`](super::function), sees the same value. A slot holds a
/// pointer: the library's function, its provenance kept, or a state (an
/// address without provenance), compared by address.
pub(super) fn publish(
    slot: &AtomicPtr<c_void>,
    unresolved: *mut c_void,
    found: *mut c_void,
) -> *mut c_void {
    match slot.compare_exchange(unresolved, found, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => found,
        Err(published) => published,
    }
}

/// The process's fork generation, bumped in the child of every `fork`
/// (`sys::at_fork`'s handler).
#[cfg(all(unix, not(cuda_mem_sys_model)))]
static FORKS: ForkWatch = ForkWatch::new();

#[cfg(all(unix, not(cuda_mem_sys_model)))]
extern "C" fn forked() {
    FORKS.forked();
}

/// Registers the fork handler (at program start on Linux, from the
/// crate's `.init_array` entry: before any other thread can call the
/// crate; elsewhere at the first use). Never waits for another thread's
/// registration.
#[cfg(all(unix, not(cuda_mem_sys_model)))]
pub(super) fn watch_forks() {
    FORKS.watch(|| sys::at_fork(forked));
}

/// What tells this process from a child it forks: the fork generation,
/// which is new in every child, even one with its parent's process id
/// (PID 1 forking into a new PID namespace). A child made without fork
/// handlers (`clone(2)`, `_Fork()`), or forked before the handler was
/// registered, keeps its parent's: `sys::thread_exists` tells it instead.
#[cfg(all(unix, not(cuda_mem_sys_model)))]
pub(super) fn fork_generation() -> u32 {
    watch_forks();
    FORKS.generation()
}

/// No `fork` on Windows: one generation.
#[cfg(all(windows, not(cuda_mem_sys_model)))]
pub(super) fn fork_generation() -> u32 {
    0
}

/// The model's threads each have the generation the model gives them.
#[cfg(cuda_mem_sys_model)]
use sys::fork_generation;

/// The fork generation: bumped in the child of every `fork` by a
/// `pthread_atfork` handler, registered once. Every thread of a process
/// reads the same counter, whether or not the registration has finished
/// (it never waits for it, and never reads anything else): siblings always
/// agree, and a child forked before the handler was registered keeps its
/// parent's generation, where [`sys::thread_exists`] tells it that the
/// owner is not among its threads. Unix only (Windows has no `fork`).
#[cfg(unix)]
pub(super) struct ForkWatch {
    generation: AtomicU32,
    /// 0 not registered, 1 being registered, 2 registered, 3 refused.
    state: AtomicU32,
}

#[cfg(unix)]
impl ForkWatch {
    #[cfg(not(loom))]
    pub(super) const fn new() -> ForkWatch {
        ForkWatch {
            generation: AtomicU32::new(0),
            state: AtomicU32::new(0),
        }
    }

    #[cfg(loom)]
    pub(super) fn new() -> ForkWatch {
        ForkWatch {
            generation: AtomicU32::new(0),
            state: AtomicU32::new(0),
        }
    }

    /// Registers the handler with `register` (true: registered) unless
    /// another thread did or does.
    pub(super) fn watch(&self, register: impl FnOnce() -> bool) {
        if self
            .state
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            let ok = register();
            self.state.store(if ok { 2 } else { 3 }, Ordering::Release);
        }
    }

    /// The handler's work, in the child.
    pub(super) fn forked(&self) {
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// This process's generation.
    pub(super) fn generation(&self) -> u32 {
        self.generation.load(Ordering::Acquire)
    }
}
