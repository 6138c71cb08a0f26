//! The slots (one word per function: a state, or its address once
//! resolved), how a call reads them, and the macros the generated code
//! expands to (`build/codegen/loader.rs`): the trampolines and the inlined
//! loaded calls.

use super::library::{DRIVER_LIB, RUNTIME_LIB};
use super::once::publish;
use super::slot_state::{BELOW_INTRODUCTION, LAST_STATE, NO_LIBRARY, TOO_OLD, UNRESOLVED};
use super::sys::{self, AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use super::table::{DRIVER, N_DRIVER, N_RUNTIME, RUNTIME};
use super::{Api, Unavailable};
use core::ffi::c_void;

static DRIVER_SLOTS: [AtomicPtr<c_void>; N_DRIVER] =
    [const { AtomicPtr::new(UNRESOLVED) }; N_DRIVER];
static RUNTIME_SLOTS: [AtomicPtr<c_void>; N_RUNTIME] =
    [const { AtomicPtr::new(UNRESOLVED) }; N_RUNTIME];

/// What a slot's value says; `stub`: the library is NVIDIA's stub (a
/// `NO_LIBRARY` then says so).
fn decode(v: *mut c_void, stub: bool) -> Result<*const c_void, Unavailable> {
    // Compared by address (a state is never a pattern: a pointer).
    if v > LAST_STATE {
        Ok(v.cast_const())
    } else if v == NO_LIBRARY && stub {
        Err(Unavailable::StubLibrary)
    } else if v == NO_LIBRARY {
        Err(Unavailable::LibraryNotLoaded)
    } else if v == TOO_OLD {
        Err(Unavailable::DriverTooOld)
    } else if v == BELOW_INTRODUCTION {
        Err(Unavailable::VersionBelowIntroduction)
    } else {
        // NOT_FOUND (UNRESOLVED is never decoded: it is resolved first).
        Err(Unavailable::NotFound)
    }
}

/// The driver function in `slot`, resolving it if needed: what
/// [`function`](super::function) and [`load_all`](super::load_all) ask (the
/// generated code calls [`driver_ready`] and [`driver_resolve`] instead).
#[inline(always)]
pub(super) fn driver_fn(slot: usize) -> Result<*const c_void, Unavailable> {
    let v = DRIVER_SLOTS[slot].load(Ordering::Acquire);
    if v > LAST_STATE {
        return Ok(v.cast_const());
    }
    resolve(Api::Driver, slot)
}

/// The runtime function in `slot`, resolving it if needed (as [`driver_fn`]).
#[inline(always)]
pub(super) fn runtime_fn(slot: usize) -> Result<*const c_void, Unavailable> {
    let v = RUNTIME_SLOTS[slot].load(Ordering::Acquire);
    if v > LAST_STATE {
        return Ok(v.cast_const());
    }
    resolve(Api::Runtime, slot)
}

/// The body of every generated trampoline:
/// `trampoline!(driver 27 cuCtxGetCurrent(pctx: *mut CUcontext) -> CUresult)`.
///
/// Its symbol: with the feature `export-c-names`, the C name it stands for
/// (`#[no_mangle]`), for C code in the program that calls that name without
/// linking the library. Without it (the default), a Rust name, exported by
/// nothing: a cdylib built on the crate must not hand other libraries of the
/// process its trampolines in place of `libcuda`'s functions
/// (`tests/exported_c_names.rs`). The few the crate's own C calls (the
/// headers' `static inline` copies: `cuGetProcAddress_v2` under
/// `per-thread-default-stream`) get a private C name instead
/// (`trampoline!(driver 110 "cuda_mem_sys_cuGetProcAddress_v2" cuGetProcAddress_v2(...))`),
/// to which the build renames their calls.
///
/// Each trampoline keeps the resolved address in a static of its own (a
/// private item: addressed relative to the instruction pointer, no GOT load),
/// so the hot path is one load, a test and a tail jump to the library's
/// function. The first call (and a missing function) goes to a cold inner
/// function of the same signature, also by tail jump, so the trampoline needs
/// no stack frame. The loader's slot array stays the one authority (what
/// [`function`](super::function) and [`load_all`](super::load_all) read); the static
/// only caches a success.
macro_rules! trampoline {
    (driver $($rest:tt)*) => {
        $crate::loader::trampoline!(@ driver_resolve $($rest)*);
    };
    (runtime $($rest:tt)*) => {
        $crate::loader::trampoline!(@ runtime_resolve $($rest)*);
    };
    (@ $resolve:ident $slot:literal $($c_name:literal)?
        $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?) => {
        #[cfg_attr(feature = "export-c-names", no_mangle)]
        $(#[cfg_attr(not(feature = "export-c-names"), export_name = $c_name)])?
        #[allow(dead_code)] // without `export-c-names`, only Rust's first calls use it
        pub unsafe extern "C" fn $name($($arg: $ty),*) $(-> $ret)? {
            type Function = unsafe extern "C" fn($($ty),*) $(-> $ret)?;
            static RESOLVED: $crate::loader::AtomicPtr<::core::ffi::c_void> =
                $crate::loader::AtomicPtr::new(::core::ptr::null_mut());
            #[cold]
            #[inline(never)]
            unsafe extern "C" fn first_call($($arg: $ty),*) $(-> $ret)? {
                match $crate::loader::$resolve($slot) {
                    Ok(f) => {
                        RESOLVED.store(f.cast_mut(), ::core::sync::atomic::Ordering::Release);
                        // SAFETY: `f` is the library's function for this
                        // slot (at least LOWEST_ADDRESS), found by the
                        // symbol, or the cuGetProcAddress base name and ABI
                        // version, whose C type is this signature (the
                        // generator derives both from one declaration); the
                        // caller keeps that function's contract.
                        unsafe {
                            ::core::mem::transmute::<*const ::core::ffi::c_void, Function>(f)(
                                $($arg),*
                            )
                        }
                    }
                    Err(missing) => $crate::loader::Missing::value(missing),
                }
            }
            let f = RESOLVED.load(::core::sync::atomic::Ordering::Acquire);
            if f.is_null() {
                // SAFETY: the same signature; the caller keeps its contract.
                unsafe { first_call($($arg),*) }
            } else {
                // SAFETY: stored by `first_call` only: this slot's function,
                // of this signature (never null: at least LOWEST_ADDRESS),
                // a pointer (its provenance kept), never an integer.
                unsafe { ::core::mem::transmute::<*mut ::core::ffi::c_void, Function>(f)($($arg),*) }
            }
        }
    };
}
pub(crate) use trampoline;

/// A documented name as Rust code calls it in a loaded build:
/// `call!(driver 27 "summary" cuCtxGetCurrent(pctx: *mut CUcontext) -> CUresult => cuCtxGetCurrent)`
/// (the declaration of the linked build is compiled out in its favour).
///
/// Inlined into the caller: a load of the loader's slot, a compare and an
/// indirect call to the library's function, as a linked call is an indirect
/// call through the GOT. Until the slot is resolved (the first call, or a
/// missing function) it calls the symbol's trampoline, which resolves it or
/// returns the documented code.
macro_rules! call {
    (driver $($rest:tt)*) => {
        $crate::loader::call!(@ driver_ready loaded_driver $($rest)*);
    };
    (runtime $($rest:tt)*) => {
        $crate::loader::call!(@ runtime_ready loaded_runtime $($rest)*);
    };
    (@ $ready:ident $module:ident $slot:literal $doc:literal
        $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? => $symbol:ident) => {
        #[doc = $doc]
        #[doc = ""]
        #[doc = concat!(
            "Loaded at run time (`dynamic-loading`): calls `", stringify!($symbol),
            "` through the loader. The full documentation is the linked build's \
             (without `dynamic-loading`; docs.rs)."
        )]
        #[inline(always)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) $(-> $ret)? {
            match $crate::loader::$ready($slot) {
                // SAFETY: a resolved slot holds the library's function for
                // this symbol, whose C type is this signature (see
                // `trampoline!`); the caller keeps its contract.
                Some(f) => unsafe {
                    ::core::mem::transmute::<
                        *const ::core::ffi::c_void,
                        unsafe extern "C" fn($($ty),*) $(-> $ret)?,
                    >(f)($($arg),*)
                },
                // SAFETY: the symbol's trampoline, of the same signature.
                None => unsafe { $crate::generated::$module::$symbol($($arg),*) },
            }
        }
    };
}
pub(crate) use call;

/// The driver function in `slot` if it is already resolved: the whole hot
/// path of a Rust call in a loaded build (see [`call`]).
#[doc(hidden)]
#[inline(always)]
pub fn driver_ready(slot: usize) -> Option<*const c_void> {
    let v = DRIVER_SLOTS[slot].load(Ordering::Acquire);
    (v > LAST_STATE).then_some(v.cast_const())
}

/// The runtime function in `slot` if it is already resolved.
#[doc(hidden)]
#[inline(always)]
pub fn runtime_ready(slot: usize) -> Option<*const c_void> {
    let v = RUNTIME_SLOTS[slot].load(Ordering::Acquire);
    (v > LAST_STATE).then_some(v.cast_const())
}

/// Resolves the driver function in `slot` (the trampolines' cold path: first
/// call, or a function that is missing).
#[doc(hidden)]
#[cold]
#[inline(never)]
pub fn driver_resolve(slot: usize) -> Result<*const c_void, Unavailable> {
    resolve(Api::Driver, slot)
}

/// Resolves the runtime function in `slot` (the trampolines' cold path).
#[doc(hidden)]
#[cold]
#[inline(never)]
pub fn runtime_resolve(slot: usize) -> Result<*const c_void, Unavailable> {
    resolve(Api::Runtime, slot)
}

/// The most lookups one thread may be inside at once: a driver's
/// `cuGetProcAddress` that calls back into the crate nests one more at each
/// call (a real driver's never does; an interposer's might, once or twice).
/// The 8th nested call back (a lookup asked while 8 are running on the
/// thread) is refused. Per thread: a driver that calls back through new
/// threads nests without bound, each thread on its own stack.
pub(super) const MAX_LOOKUP_DEPTH: usize = 8;

/// How many threads at once can be inside lookups with their depth in
/// [`DepthTable`] (only where the system keeps no thread-specific value).
pub(super) const DEPTH_TABLE_SIZE: usize = 64;

/// Each thread's lookup depth where the system has no thread-specific key
/// left (an `LD_PRELOAD` can take all 1024 `pthread` keys before `main`;
/// Windows' TLS indexes run out too): a fixed table keyed by thread id
/// ([`sys::thread_id`], unique among the threads alive). An entry is held
/// only while its thread is inside a lookup (depth above 0) and given back
/// when the outermost lookup returns; only its own thread writes it after
/// claiming it. Where every entry is held, no depth can be kept for the
/// thread: its lookup is refused (303, not remembered) rather than left
/// unbounded. A thread that ends inside a lookup (a raw exit) leaves its
/// entry held: a later thread given its id starts at that depth (refused
/// sooner; at 8, each of its lookups gets 303), never unbounded.
pub(super) struct DepthTable {
    threads: [AtomicU32; DEPTH_TABLE_SIZE],
    depths: [AtomicUsize; DEPTH_TABLE_SIZE],
}

impl DepthTable {
    pub(super) const fn new() -> DepthTable {
        DepthTable {
            threads: [const { AtomicU32::new(0) }; DEPTH_TABLE_SIZE],
            depths: [const { AtomicUsize::new(0) }; DEPTH_TABLE_SIZE],
        }
    }

    /// The depth of thread `id` (not 0): 0 where it holds no entry and one
    /// is free; `None` where it holds none and none is free.
    pub(super) fn depth(&self, id: u32) -> Option<usize> {
        if let Some(i) = self
            .threads
            .iter()
            .position(|t| t.load(Ordering::Acquire) == id)
        {
            return Some(self.depths[i].load(Ordering::Relaxed));
        }
        self.threads
            .iter()
            .any(|t| t.load(Ordering::Relaxed) == 0)
            .then_some(0)
    }

    /// Sets the depth of thread `id` (not 0), claiming an entry for a depth
    /// above 0 and giving it back at 0; `false` where no entry is free.
    pub(super) fn set(&self, id: u32, depth: usize) -> bool {
        if let Some(i) = self
            .threads
            .iter()
            .position(|t| t.load(Ordering::Acquire) == id)
        {
            self.depths[i].store(depth, Ordering::Relaxed);
            if depth == 0 {
                self.threads[i].store(0, Ordering::Release);
            }
            return true;
        }
        if depth == 0 {
            return true;
        }
        for (i, t) in self.threads.iter().enumerate() {
            if t.compare_exchange(0, id, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                self.depths[i].store(depth, Ordering::Relaxed);
                return true;
            }
        }
        false
    }
}

static DEPTHS: DepthTable = DepthTable::new();

/// This thread's lookup depth: the system's thread-specific value, else
/// [`DEPTHS`]; `None` where neither can keep one.
fn lookup_depth() -> Option<usize> {
    sys::lookup_depth().or_else(|| DEPTHS.depth(sys::thread_id()))
}

/// Sets this thread's lookup depth; `false` where it cannot be kept.
fn set_lookup_depth(depth: usize) -> bool {
    sys::set_lookup_depth(depth) || DEPTHS.set(sys::thread_id(), depth)
}

/// This thread's lookup depth, set back when the lookup returns (or
/// unwinds).
struct Nested(usize);

impl Drop for Nested {
    fn drop(&mut self) {
        set_lookup_depth(self.0);
    }
}

#[cold]
#[inline(never)]
fn resolve(api: Api, slot: usize) -> Result<*const c_void, Unavailable> {
    let (slots, entry, lib) = match api {
        Api::Driver => (&DRIVER_SLOTS[..], &DRIVER[slot], &DRIVER_LIB),
        Api::Runtime => (&RUNTIME_SLOTS[..], &RUNTIME[slot], &RUNTIME_LIB),
    };
    let v = slots[slot].load(Ordering::Acquire);
    let s = match lib.state() {
        // Being loaded by this thread, or by one a fork left behind: not
        // stored, a later call resolves normally.
        Err(_) if v == UNRESOLVED => return Err(Unavailable::LibraryNotLoaded),
        Err(_) => return decode(v, false),
        Ok(s) => s,
    };
    if v != UNRESOLVED {
        return decode(v, s.stub);
    }
    let v = if s.handle == 0 {
        NO_LIBRARY
    } else {
        // A driver whose lookup calls back into the crate nests lookups on
        // this thread: bounded, the deepest call is told 303 (not stored:
        // a later call resolves normally) instead of overflowing the stack.
        // Per thread: each thread has its own stack, which the bound
        // protects. Where no depth can be kept for this thread (no
        // thread-specific key, the table full), the lookup is refused
        // rather than left unbounded.
        let Some(depth) = lookup_depth() else {
            return Err(Unavailable::LibraryNotLoaded);
        };
        if depth >= MAX_LOOKUP_DEPTH || !set_lookup_depth(depth + 1) {
            return Err(Unavailable::LibraryNotLoaded);
        }
        let nested = Nested(depth);
        let v = s.lookup(entry);
        drop(nested);
        v
    };
    // From the unresolved state only: a lookup that answers otherwise the
    // second time (two threads' first calls) cannot replace the first.
    let v = publish(&slots[slot], UNRESOLVED, v);
    decode(v, s.stub)
}

#[cfg(test)]
mod depth_tests {
    //! The depth kept without a thread-specific key.

    use super::*;

    /// Each thread's depth is its own; a full table keeps none for another
    /// thread, which is then refused (`None`), where the loader of before
    /// answered 0 and kept nothing (unbounded: the wrong twin); an entry
    /// given back at depth 0 serves the next thread.
    #[test]
    fn a_full_table_keeps_no_depth_and_an_entry_is_given_back() {
        let t = DepthTable::new();
        let ids = 1..=DEPTH_TABLE_SIZE as u32;
        for id in ids.clone() {
            assert_eq!(t.depth(id), Some(0));
            assert!(t.set(id, 1));
        }
        assert!(t.set(2, 7));
        assert_eq!(t.depth(1), Some(1));
        assert_eq!(t.depth(2), Some(7));
        let late = DEPTH_TABLE_SIZE as u32 + 1;
        assert_eq!(t.depth(late), None);
        assert!(!t.set(late, 1));
        // Setting 0 where no entry is held needs none.
        assert!(t.set(late, 0));
        // The outermost lookup of thread 1 returns: its entry is free.
        assert!(t.set(1, 0));
        assert_eq!(t.depth(1), Some(0));
        assert_eq!(t.depth(late), Some(0));
        assert!(t.set(late, 1));
        for d in 2..=MAX_LOOKUP_DEPTH {
            assert!(t.set(late, d));
            assert_eq!(t.depth(late), Some(d));
        }
        assert_eq!(t.depth(1), None, "the table is full again");
    }
}
