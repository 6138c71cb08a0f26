//! The loader's atomics as valgrind's race detectors (helgrind, DRD) must be
//! told them: compiled only under `--cfg cuda_mem_sys_valgrind` (x86_64
//! Linux), where `sys` exports these types in place of `core`'s. A normal
//! build never compiles this file: its atomics are `core`'s, the same code.
//!
//! Neither tool models C11 atomics: an acquire load or a release store is a
//! plain `mov` on x86_64, which the tool takes for an unordered access. So
//! each operation tells the tool, by valgrind's client requests (the magic
//! no-op sequence of `valgrind.h`'s `VALGRIND_DO_CLIENT_REQUEST_EXPR` for
//! amd64), what it is:
//!
//! - the word is atomic, never a data race of its own (`helgrind.h`'s
//!   `ANNOTATE_BENIGN_RACE_SIZED`, `drd.h`'s, each tool ignoring the
//!   other's): what the tool checks is the plain memory the atomics order
//!   (a library's state, the environment's, what the driver wrote);
//! - a release (a store, or a compare-and-exchange or add whose success
//!   ordering releases) is `ANNOTATE_HAPPENS_BEFORE(word)`, told before the
//!   operation, when it must be;
//! - an acquire (a load, or the ordering the exchange's outcome took) is
//!   `ANNOTATE_HAPPENS_AFTER(word)`, told after it.
//!
//! The tool therefore sees an edge wherever C11 gives one, and a little more
//! (a release told before an exchange that then fails; an acquire that read
//! an older value), never less: an error it reports is a race the atomics do
//! not order. Under `--cfg cuda_mem_sys_valgrind_wrong_twin` as well, every
//! store is told as `Relaxed` (no edge): the publication of a load's `DONE`
//! and of a trampoline's cache is then unordered, and the tool must report
//! it (`cargo xtask valgrind`).

// The same methods as `core`'s, whether or not the loader uses each.
#![allow(dead_code)]

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
compile_error!("--cfg cuda_mem_sys_valgrind: x86_64 Linux only (valgrind's client requests)");

use core::arch::asm;
use core::sync::atomic;
pub use core::sync::atomic::Ordering;

/// `helgrind.h`'s `_VG_USERREQ__HG_USERSO_SEND_PRE` (`ANNOTATE_HAPPENS_BEFORE`),
/// the same number as `drd.h`'s `VG_USERREQ__DRD_ANNOTATE_HAPPENS_BEFORE`.
const HAPPENS_BEFORE: usize = 0x4847_0121;
/// `_VG_USERREQ__HG_USERSO_RECV_POST` (`ANNOTATE_HAPPENS_AFTER`), DRD's too.
const HAPPENS_AFTER: usize = 0x4847_0122;
/// helgrind's `_VG_USERREQ__HG_ARANGE_MAKE_UNTRACKED` (its
/// `ANNOTATE_BENIGN_RACE_SIZED`); DRD ignores it.
const HELGRIND_ATOMIC: usize = 0x4847_0127;
/// DRD's `VG_USERREQ__DRD_START_SUPPRESSION` (its
/// `ANNOTATE_BENIGN_RACE_SIZED`); helgrind ignores it.
const DRD_ATOMIC: usize = 0x4452_0002;

/// One client request (no answer wanted); natively a no-op.
fn request(code: usize, a: usize, b: usize) {
    let args: [usize; 6] = [code, a, b, 0, 0, 0];
    // SAFETY: valgrind.h's amd64 sequence: `rdi` rotated by 128 bits in
    // all (unchanged), `xchg rbx, rbx` (a no-op); `rax` points at the
    // request, `rdx` takes the answer (the default 0 natively). Flags are
    // clobbered (not claimed preserved); no stack is touched.
    unsafe {
        asm!(
            "rol rdi, 3",
            "rol rdi, 13",
            "rol rdi, 61",
            "rol rdi, 51",
            "xchg rbx, rbx",
            inout("rdx") 0usize => _,
            in("rax") args.as_ptr(),
            options(nostack),
        );
    }
}

fn atomic_word<T>(word: &T) {
    let (a, n) = (word as *const T as usize, core::mem::size_of::<T>());
    request(HELGRIND_ATOMIC, a, n);
    request(DRD_ATOMIC, a, n);
}

fn releases(o: Ordering) -> bool {
    matches!(o, Ordering::Release | Ordering::AcqRel | Ordering::SeqCst)
}

fn acquires(o: Ordering) -> bool {
    matches!(o, Ordering::Acquire | Ordering::AcqRel | Ordering::SeqCst)
}

/// A store's ordering as the tool is told it (the wrong twin: `Relaxed`).
fn stored(o: Ordering) -> Ordering {
    if cfg!(cuda_mem_sys_valgrind_wrong_twin) {
        Ordering::Relaxed
    } else {
        o
    }
}

fn before<T>(word: &T, o: Ordering) {
    atomic_word(word);
    if releases(o) {
        request(HAPPENS_BEFORE, word as *const T as usize, 0);
    }
}

fn after<T>(word: &T, o: Ordering) {
    if acquires(o) {
        request(HAPPENS_AFTER, word as *const T as usize, 0);
    }
}

macro_rules! told {
    ($(#[$doc:meta])* $name:ident $(<$p:ident>)?, $t:ty) => {
        $(#[$doc])*
        #[repr(transparent)]
        pub struct $name$(<$p>)?(atomic::$name$(<$p>)?);

        impl$(<$p>)? $name$(<$p>)? {
            pub const fn new(v: $t) -> Self {
                $name(atomic::$name::new(v))
            }
            pub fn load(&self, o: Ordering) -> $t {
                atomic_word(self);
                let v = self.0.load(o);
                after(self, o);
                v
            }
            pub fn store(&self, v: $t, o: Ordering) {
                before(self, stored(o));
                self.0.store(v, o);
            }
            pub fn compare_exchange(
                &self,
                current: $t,
                new: $t,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$t, $t> {
                before(self, success);
                let r = self.0.compare_exchange(current, new, success, failure);
                after(self, if r.is_ok() { success } else { failure });
                r
            }
        }
    };
}

told!(
    /// `core`'s, told to the tool.
    AtomicU32,
    u32
);
told!(
    /// `core`'s, told to the tool.
    AtomicU64,
    u64
);
told!(
    /// `core`'s, told to the tool.
    AtomicUsize,
    usize
);
told!(
    /// `core`'s, told to the tool.
    AtomicPtr<T>,
    *mut T
);

macro_rules! add {
    ($name:ident, $t:ty) => {
        impl $name {
            pub fn fetch_add(&self, v: $t, o: Ordering) -> $t {
                before(self, o);
                let r = self.0.fetch_add(v, o);
                after(self, o);
                r
            }
        }
    };
}

add!(AtomicU32, u32);
add!(AtomicU64, u64);
add!(AtomicUsize, usize);
