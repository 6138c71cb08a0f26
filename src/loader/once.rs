//! A one-time initialisation that never hangs (on re-entrancy, or in a
//! forked child), and why it cannot be waited for.

use super::sys;
use core::sync::atomic::{AtomicU64, Ordering};

/// Why a one-time initialisation cannot be waited for.
#[derive(Clone, Copy, Debug)]
pub(super) enum Stuck {
    /// Called again from inside the initialisation, on its own thread.
    Reentrant,
    /// In a child forked while another thread of the parent ran it.
    Forked,
    /// The runtime, while the named driver (loaded first) is being loaded
    /// by this very thread.
    DriverReentrant,
    /// The runtime, in a child forked while another thread of the parent
    /// loaded the named driver.
    DriverForked,
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
            Stuck::DriverReentrant => {
                "not loaded: the driver CUDA_MEM_SYS_LIBCUDA names, loaded before the runtime, \
                 is being loaded by this very thread (its own code called the runtime)"
            }
            Stuck::DriverForked => {
                "not loaded: the process was forked while another thread was loading the \
                 driver CUDA_MEM_SYS_LIBCUDA names, which the runtime needs first; that load \
                 cannot finish in this process"
            }
        }
    }

    /// The same, said of the driver the runtime waits for.
    pub(super) fn of_driver(self) -> Stuck {
        match self {
            Stuck::Reentrant | Stuck::DriverReentrant => Stuck::DriverReentrant,
            Stuck::Forked | Stuck::DriverForked => Stuck::DriverForked,
        }
    }
}

/// A one-time initialisation that never hangs: the word is 0 (not run), the
/// running thread's `(fork generation << 32) | thread id`, or `DONE`. One
/// compare-and-swap claims it with both, so no fork can leave it claimed by
/// an owner the child cannot tell from a thread of its own. The fork
/// generation ([`sys::fork_generation`]) changes in every forked child, even
/// where the child has its parent's process id (PID 1 forking into a new PID
/// namespace).
pub(super) struct Once(AtomicU64);

const ONCE_NEW: u64 = 0;
const ONCE_DONE: u64 = u64::MAX;

impl Once {
    pub(super) const fn new() -> Once {
        Once(AtomicU64::new(ONCE_NEW))
    }

    pub(super) fn done(&self) -> bool {
        self.0.load(Ordering::Acquire) == ONCE_DONE
    }

    /// Runs `init` unless it has run; waits (yielding) while another thread
    /// of this process runs it.
    pub(super) fn call(&self, init: impl FnOnce()) -> Result<(), Stuck> {
        if self.done() {
            return Ok(());
        }
        let generation = sys::fork_generation();
        let me = (u64::from(generation) << 32) | u64::from(sys::thread_id());
        let mut spins = 0u32;
        loop {
            match self
                .0
                .compare_exchange(ONCE_NEW, me, Ordering::Acquire, Ordering::Acquire)
            {
                Ok(_) => {
                    init();
                    self.0.store(ONCE_DONE, Ordering::Release);
                    return Ok(());
                }
                Err(ONCE_DONE) => return Ok(()),
                Err(owner) if owner == me => return Err(Stuck::Reentrant),
                Err(owner) if (owner >> 32) as u32 != generation => return Err(Stuck::Forked),
                // Spin briefly, then yield, then sleep: a load can take
                // long (a driver's initialisation), and waiters should not
                // burn the cores it needs.
                Err(_) if spins < 100 => {
                    spins += 1;
                    core::hint::spin_loop();
                }
                Err(_) if spins < 200 => {
                    spins += 1;
                    sys::yield_now();
                }
                Err(_) => sys::sleep_briefly(),
            }
        }
    }
}
