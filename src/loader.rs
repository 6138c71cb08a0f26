//! Run-time loading of the CUDA driver and runtime (feature `dynamic-loading`).
//!
//! Every function keeps its documented name, signature and docs. A Rust call
//! is inlined: a load of the function's slot, filled on its first call
//! (thread-safely: concurrent first calls may both resolve, and store the
//! same pointer), and an indirect call. The crate also defines a trampoline
//! for every symbol the declarations link (`cuMemAdvise_v2`), exported under
//! that C name only with the feature `export-c-names` (see the README, "The C
//! names").
//!
//! - **Driver**: `libcuda.so.1` (then `libcuda.so`; `nvcuda.dll` on Windows),
//!   or the file named by `CUDA_MEM_SYS_LIBCUDA`. Each function is asked of the
//!   driver's `cuGetProcAddress` (`cuGetProcAddress_v2` where exported) with
//!   the base name and ABI version the headers select, and
//!   `CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM` under
//!   `per-thread-default-stream`; a function whose ABI version is above the
//!   driver's `cuDriverGetVersion` is not asked for: the driver is too old for
//!   it. The table is generated from the headers (`build/codegen/loader.rs`).
//! - **Runtime**: linked statically where the build found
//!   `libcudart_static.a` (it loads `libcuda.so.1` itself when first used);
//!   otherwise, and under `dynamic-cudart`, `libcudart.so.<major>`
//!   (`cudart64_<major>.dll`) or the file named by `CUDA_MEM_SYS_LIBCUDART`,
//!   each function by `dlsym` of the symbol C calls. A runtime whose
//!   `cudaRuntimeGetVersion` is of another major than the headers' is refused
//!   (its structures differ).
//! - **One driver per process**: where `CUDA_MEM_SYS_LIBCUDA` names a driver,
//!   it is loaded before the runtime (at program start with the static
//!   runtime), so the runtime's own `dlopen("libcuda.so.1")` finds it by its
//!   `SONAME`. A driver loaded by any other name than `libcuda.so.1` (the
//!   variable's file, the `libcuda.so` fall-back) whose `SONAME` is not
//!   `libcuda.so.1` is refused (303; [`driver`] names the `SONAME` it has):
//!   the runtime would load a second driver beside it.
//! - **NVIDIA's stub library** (the toolkit's `stubs/libcuda.so`, for linking
//!   only), found for instance by the `libcuda.so` fall-back where only the
//!   toolkit is on the library path, is told by its answer
//!   `CUDA_ERROR_STUB_LIBRARY` and reported as a linked build reports it:
//!   every driver call returns `CUDA_ERROR_STUB_LIBRARY` (34), and [`driver`]
//!   says so.
//! - **The environment** is read once, for both variables together: at program
//!   start on Linux (before `main`, from the crate's `.init_array` entry, or
//!   when a library containing the crate is opened); elsewhere at the first
//!   use of either library. Later changes (`std::env::set_var`) have no
//!   effect. In a secure process (`getauxval(AT_SECURE)`: setuid, setgid,
//!   file capabilities) both variables are ignored, as glibc ignores
//!   `LD_LIBRARY_PATH` there; [`Loaded::variable`] / [`LoadError::variable`]
//!   say so.
//! - **No hang**: a thread that finds a library being loaded by another
//!   waits, spinning briefly, then yielding, then sleeping a millisecond at
//!   a time, until it is loaded; a call back into the crate from the library's
//!   own code while it is being loaded (on the loading thread), or a call in
//!   a child forked while another thread was loading, returns the
//!   library-not-loaded code at once. A fork is told by a generation that
//!   every child gets anew (a `pthread_atfork` handler), not by the process
//!   id, which a child can share (PID 1 forking into a new PID namespace).
//!   The two loads have one order: a runtime call waits for a named driver's
//!   load before it claims the runtime's, so the driver's own code may call
//!   the runtime while another thread waits for both (it gets 303 at once:
//!   the driver it needs is being loaded by that very thread); in a child
//!   forked during the driver's load, runtime calls return 303 as driver
//!   calls do. [`driver`] and [`runtime`] still say what the load tries and
//!   how the variable was taken.
//!
//! **A lazy load inside a library constructor** can deadlock, as any lazy
//! `dlopen` can: a constructor (of a library being opened, holding the
//! dynamic loader's lock) that makes the process's first CUDA call waits for
//! a thread already loading the driver, and that thread's `dlopen` waits for
//! the lock. Load before any such library is opened: call [`load_all`] (or
//! [`driver`]) early in `main`, or name the driver in `CUDA_MEM_SYS_LIBCUDA`
//! with the static runtime, which loads it at program start.
//!
//! On Windows a bare name is never looked for in the working directory or on
//! `PATH`, where another program could plant a DLL: `nvcuda.dll` is loaded
//! from `System32` only (`LoadLibraryExW` with `LOAD_LIBRARY_SEARCH_SYSTEM32`),
//! `cudart64_<major>.dll` from the default folders (the application's,
//! `System32`, those added by `AddDllDirectory`:
//! `LOAD_LIBRARY_SEARCH_DEFAULT_DIRS`). The variables are read as the wide
//! strings Windows keeps (`GetEnvironmentVariableW`), so a path outside the
//! ANSI code page loads; a path in them is loaded as given.
//!
//! Nothing panics or aborts. A call that cannot be made returns:
//!
//! | situation | driver function | runtime function |
//! |---|---|---|
//! | the library could not be loaded (a driver loaded by another name than `libcuda.so.1` without `SONAME libcuda.so.1` included), or is being loaded by this very thread, or was being loaded by another thread when the process forked (the runtime also while the named driver is) | `CUDA_ERROR_SHARED_OBJECT_INIT_FAILED` (303) | `cudaErrorSharedObjectInitFailed` (303) |
//! | the driver is older than the function's ABI version | `CUDA_ERROR_NOT_SUPPORTED` (801) | (not a case: runtime functions are found by `dlsym`) |
//! | the library has no such function, or answers with an address below 4096 | `CUDA_ERROR_NOT_FOUND` (500) | `cudaErrorSymbolNotFound` (500) |
//! | the driver found is NVIDIA's stub library | `CUDA_ERROR_STUB_LIBRARY` (34) | (not a case: the runtime loads the driver itself) |
//! | the driver says the table asked below the function's introduction: a bug of this crate | `CUDA_ERROR_UNKNOWN` (999) | (not a case) |
//!
//! (`cudaGetErrorName`/`cudaGetErrorString` return a message string instead,
//! `cudaCreateChannelDesc` a zeroed descriptor.) [`driver`], [`runtime`] and
//! [`function`] tell, without calling anything, what loaded and why not.

use crate::generated::loader_table::{DRIVER, NAMES, N_DRIVER, N_RUNTIME, RUNTIME};
use crate::generated::{
    cudaChannelFormatDesc, cudaErrorCallRequiresNewerDriver, cudaErrorSharedObjectInitFailed,
    cudaErrorStubLibrary, cudaErrorSymbolNotFound, cudaErrorUnknown, cudaError_t, CUresult,
    CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_FOUND, CUDA_ERROR_NOT_SUPPORTED,
    CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, CUDA_ERROR_STUB_LIBRARY, CUDA_ERROR_UNKNOWN,
    CUDA_SUCCESS, CUDA_VERSION,
};
use core::cell::UnsafeCell;
use core::ffi::{c_char, c_int, c_void};
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The environment variable naming the driver library file to load.
pub const LIBCUDA_VAR: &str = "CUDA_MEM_SYS_LIBCUDA";
/// The environment variable naming the runtime library file to load.
pub const LIBCUDART_VAR: &str = "CUDA_MEM_SYS_LIBCUDART";

/// How the loader finds one symbol (generated: `loader_table`).
#[doc(hidden)]
pub struct Entry {
    /// The symbol C calls, NUL-terminated.
    pub symbol: &'static [u8],
    /// `cuGetProcAddress`'s base name, NUL-terminated; empty: `dlsym(symbol)`.
    pub base: &'static [u8],
    /// `cuGetProcAddress`'s ABI version (0 with `dlsym`).
    pub version: u32,
}

/// Which library a function comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// `libcuda` (`cu*`).
    Driver,
    /// `libcudart` (`cuda*`).
    Runtime,
}

/// Why a function cannot be called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unavailable {
    /// Its library could not be loaded ([`driver`] / [`runtime`] say why), or
    /// is being loaded by this very thread (a call back into the crate from
    /// the library's own code while it loads).
    LibraryNotLoaded,
    /// The driver is older than the function's ABI version: the version is
    /// above the driver's `cuDriverGetVersion` (or, where that did not
    /// answer, `cuGetProcAddress` said `CUDA_ERROR_INVALID_VALUE`, its answer
    /// for a version above the driver's).
    DriverTooOld,
    /// The library has no such function (for the driver: at an ABI version
    /// not above its own), or answered with an address below 4096, where no
    /// function can be (the first page is never mapped).
    NotFound,
    /// The driver has the function but says the ABI version asked is below
    /// the one it was introduced in (`CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT`):
    /// a bug in this crate's generated table; please report it.
    VersionBelowIntroduction,
    /// Not a function of these bindings.
    UnknownName,
    /// The driver found is NVIDIA's stub library (the toolkit's
    /// `stubs/libcuda.so`, for linking only): its functions answer
    /// `CUDA_ERROR_STUB_LIBRARY` (34), as they do in a linked build.
    StubLibrary,
}

/// Where a function is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// Loaded at run time, at this address.
    Loaded(*const c_void),
    /// Part of the executable (the static runtime, `libcudart_static.a`).
    Linked,
}

/// How a library's environment variable was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variable {
    /// Not set (or empty): the usual file names.
    Unset,
    /// Set: only the file it names is tried.
    Used,
    /// Set, but ignored: a secure process (`getauxval(AT_SECURE)`: setuid,
    /// setgid, file capabilities), as glibc ignores `LD_LIBRARY_PATH` there.
    IgnoredInSecureProcess,
}

/// Why a library did not load: the file(s) tried and the loader's message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadError {
    pub tried: &'static str,
    pub message: &'static str,
    /// How the library's environment variable was taken.
    pub variable: Variable,
}

/// A library that loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loaded {
    /// The file name it was opened by: one of the usual names, the path the
    /// variable gave (each byte that is not UTF-8 shown as U+FFFD), or
    /// `libcudart_static.a` where linked.
    pub file: &'static str,
    /// The driver exports `cuGetProcAddress_v2`, whose status tells a missing
    /// function from [`Unavailable::VersionBelowIntroduction`].
    pub proc_address_v2: bool,
    /// `cuDriverGetVersion` / `cudaRuntimeGetVersion` (`13000` for 13.0);
    /// `None` where not asked (the static runtime) or not answered.
    pub version: Option<u32>,
    /// How the library's environment variable was taken.
    pub variable: Variable,
}

/// Loads the driver if not yet loaded (no CUDA call is made but
/// `cuDriverGetVersion`) and says which file it is, or why it could not be
/// loaded.
pub fn driver() -> Result<Loaded, LoadError> {
    DRIVER_LIB.get()
}

/// The same for the runtime: [`Loaded::file`] is `libcudart_static.a` where
/// the runtime is linked statically (it then loads the driver itself). A
/// loaded runtime is asked `cudaRuntimeGetVersion` only.
pub fn runtime() -> Result<Loaded, LoadError> {
    if cfg!(cuda_mem_sys_load_runtime) {
        RUNTIME_LIB.get()
    } else {
        Ok(Loaded {
            file: "libcudart_static.a",
            proc_address_v2: false,
            version: None,
            variable: match environment() {
                Ok(e) => e.runtime.variable(),
                Err(_) => Variable::Unset,
            },
        })
    }
}

/// Whether `name` (a documented name such as `"cuMemAdvise"`, or the symbol
/// it links, `"cuMemAdvise_v2"`) can be called here, resolving it if needed
/// (loads its library; calls no CUDA function but the driver's lookup).
pub fn function(name: &str) -> Result<Resolved, Unavailable> {
    let i = NAMES
        .binary_search_by(|(n, _, _)| (*n).cmp(name))
        .map_err(|_| Unavailable::UnknownName)?;
    let (_, api, slot) = NAMES[i];
    match api {
        Api::Runtime if !cfg!(cuda_mem_sys_load_runtime) => Ok(Resolved::Linked),
        Api::Runtime => runtime_fn(slot).map(Resolved::Loaded),
        Api::Driver => driver_fn(slot).map(Resolved::Loaded),
    }
}

/// Resolves every function now (instead of on first call); returns how many
/// driver and runtime functions are available.
pub fn load_all() -> (usize, usize) {
    let d = (0..N_DRIVER).filter(|&i| driver_fn(i).is_ok()).count();
    let r = if cfg!(cuda_mem_sys_load_runtime) {
        (0..N_RUNTIME).filter(|&i| runtime_fn(i).is_ok()).count()
    } else {
        N_RUNTIME
    };
    (d, r)
}

/// The value a function returns when it cannot be called.
#[doc(hidden)]
pub trait Missing {
    fn value(why: Unavailable) -> Self;
}

impl Missing for CUresult {
    fn value(why: Unavailable) -> Self {
        match why {
            Unavailable::LibraryNotLoaded => CUDA_ERROR_SHARED_OBJECT_INIT_FAILED,
            Unavailable::DriverTooOld => CUDA_ERROR_NOT_SUPPORTED,
            Unavailable::VersionBelowIntroduction => CUDA_ERROR_UNKNOWN,
            Unavailable::NotFound | Unavailable::UnknownName => CUDA_ERROR_NOT_FOUND,
            Unavailable::StubLibrary => CUDA_ERROR_STUB_LIBRARY,
        }
    }
}

impl Missing for cudaError_t {
    fn value(why: Unavailable) -> Self {
        match why {
            Unavailable::LibraryNotLoaded => cudaErrorSharedObjectInitFailed,
            Unavailable::DriverTooOld => cudaErrorCallRequiresNewerDriver,
            Unavailable::VersionBelowIntroduction => cudaErrorUnknown,
            Unavailable::NotFound | Unavailable::UnknownName => cudaErrorSymbolNotFound,
            Unavailable::StubLibrary => cudaErrorStubLibrary,
        }
    }
}

impl Missing for *const c_char {
    fn value(why: Unavailable) -> Self {
        match why {
            Unavailable::LibraryNotLoaded => {
                c"cuda-mem-sys: the CUDA runtime library could not be loaded".as_ptr()
            }
            Unavailable::DriverTooOld => {
                c"cuda-mem-sys: the CUDA driver is older than this function".as_ptr()
            }
            Unavailable::VersionBelowIntroduction => {
                c"cuda-mem-sys: the loader asked for a version below this function's (a bug)"
                    .as_ptr()
            }
            Unavailable::NotFound | Unavailable::UnknownName => {
                c"cuda-mem-sys: the CUDA runtime library lacks this function".as_ptr()
            }
            Unavailable::StubLibrary => {
                c"cuda-mem-sys: the CUDA driver found is the toolkit's stub library".as_ptr()
            }
        }
    }
}

impl Missing for cudaChannelFormatDesc {
    fn value(_: Unavailable) -> Self {
        // SAFETY: a plain C struct of integers and an enum newtype.
        unsafe { core::mem::zeroed() }
    }
}

impl Missing for () {
    fn value(_: Unavailable) {}
}

// Slot states up to LAST_STATE; anything above is the function's address.
// An address is stored only where it is at least LOWEST_ADDRESS, so no
// library's answer can be read as a state.
const UNRESOLVED: usize = 0;
const NO_LIBRARY: usize = 1;
const TOO_OLD: usize = 2;
const NOT_FOUND: usize = 3;
const BELOW_INTRODUCTION: usize = 4;
const LAST_STATE: usize = BELOW_INTRODUCTION;

static DRIVER_SLOTS: [AtomicUsize; N_DRIVER] = [const { AtomicUsize::new(UNRESOLVED) }; N_DRIVER];
static RUNTIME_SLOTS: [AtomicUsize; N_RUNTIME] =
    [const { AtomicUsize::new(UNRESOLVED) }; N_RUNTIME];

/// The lowest address taken for a function: none is in the first page, which
/// is never mapped (Linux's `vm.mmap_min_addr`, Windows' and macOS' null
/// page); a library answering success with a lower "address" (a state's
/// value, or garbage) gets [`Unavailable::NotFound`], never a call.
const LOWEST_ADDRESS: usize = 4096;

/// What a slot's value says; `stub`: the library is NVIDIA's stub (a
/// `NO_LIBRARY` then says so).
fn decode(v: usize, stub: bool) -> Result<*const c_void, Unavailable> {
    match v {
        NO_LIBRARY if stub => Err(Unavailable::StubLibrary),
        NO_LIBRARY => Err(Unavailable::LibraryNotLoaded),
        TOO_OLD => Err(Unavailable::DriverTooOld),
        NOT_FOUND => Err(Unavailable::NotFound),
        BELOW_INTRODUCTION => Err(Unavailable::VersionBelowIntroduction),
        p => Ok(p as *const c_void),
    }
}

/// The driver function in `slot` (called by the generated trampolines).
#[doc(hidden)]
#[inline(always)]
pub fn driver_fn(slot: usize) -> Result<*const c_void, Unavailable> {
    let v = DRIVER_SLOTS[slot].load(Ordering::Acquire);
    if v > LAST_STATE {
        return Ok(v as *const c_void);
    }
    resolve(Api::Driver, slot)
}

/// The runtime function in `slot` (called by the generated trampolines).
#[doc(hidden)]
#[inline(always)]
pub fn runtime_fn(slot: usize) -> Result<*const c_void, Unavailable> {
    let v = RUNTIME_SLOTS[slot].load(Ordering::Acquire);
    if v > LAST_STATE {
        return Ok(v as *const c_void);
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
/// [`function`] and [`load_all`] read); the static only caches a success.
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
            static RESOLVED: ::core::sync::atomic::AtomicUsize =
                ::core::sync::atomic::AtomicUsize::new(0);
            #[cold]
            #[inline(never)]
            unsafe extern "C" fn first_call($($arg: $ty),*) $(-> $ret)? {
                match $crate::loader::$resolve($slot) {
                    Ok(f) => {
                        RESOLVED.store(f as usize, ::core::sync::atomic::Ordering::Release);
                        ::core::mem::transmute::<*const ::core::ffi::c_void, Function>(f)(
                            $($arg),*
                        )
                    }
                    Err(missing) => $crate::loader::Missing::value(missing),
                }
            }
            match RESOLVED.load(::core::sync::atomic::Ordering::Acquire) {
                0 => first_call($($arg),*),
                f => ::core::mem::transmute::<usize, Function>(f)($($arg),*),
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
                Some(f) => ::core::mem::transmute::<
                    *const ::core::ffi::c_void,
                    unsafe extern "C" fn($($ty),*) $(-> $ret)?,
                >(f)($($arg),*),
                None => $crate::generated::$module::$symbol($($arg),*),
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
    (v > LAST_STATE).then_some(v as *const c_void)
}

/// The runtime function in `slot` if it is already resolved.
#[doc(hidden)]
#[inline(always)]
pub fn runtime_ready(slot: usize) -> Option<*const c_void> {
    let v = RUNTIME_SLOTS[slot].load(Ordering::Acquire);
    (v > LAST_STATE).then_some(v as *const c_void)
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
        s.lookup(entry)
    };
    slots[slot].store(v, Ordering::Release);
    decode(v, s.stub)
}

/// `CU_GET_PROC_ADDRESS_DEFAULT` or `..._PER_THREAD_DEFAULT_STREAM`.
const PROC_FLAGS: u64 = if cfg!(feature = "per-thread-default-stream") {
    2
} else {
    0
};

/// `CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT`.
const VERSION_NOT_SUFFICIENT: c_int = 2;

type GetProcAddressV2 =
    unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64, *mut c_int) -> CUresult;
type GetProcAddressV1 =
    unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64) -> CUresult;
/// `cuDriverGetVersion` (`PFN_cuDriverGetVersion_v2020`) and `cudaRuntimeGetVersion`.
type GetVersion = unsafe extern "C" fn(*mut c_int) -> c_int;

/// Why a one-time initialisation cannot be waited for.
#[derive(Clone, Copy, Debug)]
enum Stuck {
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
    fn message(self) -> &'static str {
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
    fn of_driver(self) -> Stuck {
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
struct Once(AtomicU64);

const ONCE_NEW: u64 = 0;
const ONCE_DONE: u64 = u64::MAX;

impl Once {
    const fn new() -> Once {
        Once(AtomicU64::new(ONCE_NEW))
    }

    fn done(&self) -> bool {
        self.0.load(Ordering::Acquire) == ONCE_DONE
    }

    /// Runs `init` unless it has run; waits (yielding) while another thread
    /// of this process runs it.
    fn call(&self, init: impl FnOnce()) -> Result<(), Stuck> {
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

/// The loader's longest file name, with its NUL (`PATH_MAX` on Linux).
const PATH_BUFFER: usize = 4096;

/// One environment variable, as read.
struct Setting {
    bytes: [u8; PATH_BUFFER],
    state: SettingState,
    /// What a load tries: the value (lossy where it is not UTF-8, whole), the
    /// variable's name where the value is too long, or the usual names.
    tried: Text,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum SettingState {
    Unset,
    /// Its value is `bytes[..len]`, NUL-terminated.
    Path(usize),
    /// Set, with a value of this many bytes: more than `PATH_BUFFER - 1`.
    TooLong(usize),
    /// Set, in a secure process: not read.
    Ignored,
}

impl Setting {
    const fn new() -> Setting {
        Setting {
            bytes: [0; PATH_BUFFER],
            state: SettingState::Unset,
            tried: Text::new(),
        }
    }

    fn variable(&self) -> Variable {
        match self.state {
            SettingState::Unset => Variable::Unset,
            SettingState::Ignored => Variable::IgnoredInSecureProcess,
            SettingState::Path(_) | SettingState::TooLong(_) => Variable::Used,
        }
    }

    /// Reads `name` (NUL-terminated); `names`: the usual file names.
    fn read(&mut self, name: &[u8], secure: bool, names: &[&str]) {
        self.state = match sys::getenv(name, &mut self.bytes) {
            Ok(None) => SettingState::Unset,
            _ if secure => {
                self.bytes = [0; PATH_BUFFER];
                SettingState::Ignored
            }
            Ok(Some(len)) => SettingState::Path(len),
            Err(len) => SettingState::TooLong(len),
        };
        match self.state {
            SettingState::Path(len) => self.tried.push_lossy(&self.bytes[..len]),
            SettingState::TooLong(_) => self.tried.push(&name[..name.len() - 1]),
            SettingState::Unset | SettingState::Ignored => {
                for (i, n) in names.iter().enumerate() {
                    if i > 0 {
                        self.tried.push(b", ");
                    }
                    self.tried.push(n.as_bytes());
                }
            }
        }
    }
}

/// `CUDA_MEM_SYS_LIBCUDA` and `CUDA_MEM_SYS_LIBCUDART`, read once.
struct EnvironmentState {
    secure: bool,
    driver: Setting,
    runtime: Setting,
}

impl EnvironmentState {
    fn setting(&self, api: Api) -> &Setting {
        match api {
            Api::Driver => &self.driver,
            Api::Runtime => &self.runtime,
        }
    }
}

struct Environment {
    once: Once,
    inner: UnsafeCell<EnvironmentState>,
}

// SAFETY: `inner` is written only inside `once` (by one thread), read only
// after it completed (release/acquire).
unsafe impl Sync for Environment {}

static ENVIRONMENT: Environment = Environment {
    once: Once::new(),
    inner: UnsafeCell::new(EnvironmentState {
        secure: false,
        driver: Setting::new(),
        runtime: Setting::new(),
    }),
};

/// The variables, read on the first call (at program start on Linux).
fn environment() -> Result<&'static EnvironmentState, Stuck> {
    ENVIRONMENT.once.call(|| {
        // SAFETY: inside `once`: this thread alone writes.
        let e = unsafe { &mut *ENVIRONMENT.inner.get() };
        e.secure = sys::secure();
        e.driver
            .read(b"CUDA_MEM_SYS_LIBCUDA\0", e.secure, sys::DRIVER_NAMES);
        e.runtime
            .read(b"CUDA_MEM_SYS_LIBCUDART\0", e.secure, sys::runtime_names());
    })?;
    // SAFETY: completed: written once, never again.
    Ok(unsafe { &*ENVIRONMENT.inner.get() })
}

/// One library, loaded once.
struct Library {
    once: Once,
    api: Api,
    inner: UnsafeCell<LibraryState>,
}

struct LibraryState {
    handle: usize,
    get_proc: usize,
    get_proc_v2: bool,
    /// `cuDriverGetVersion` / `cudaRuntimeGetVersion`; 0: not answered.
    version: u32,
    file: &'static str,
    variable: Variable,
    /// The file(s) tried ([`Setting::tried`]); empty where none was.
    tried: &'static str,
    message: Text,
    /// The driver found is NVIDIA's stub library (`handle` is then 0).
    stub: bool,
}

/// A fixed buffer for a message (the crate is `no_std`, without allocation):
/// room for a path of `PATH_BUFFER` bytes written lossily (an invalid byte
/// becomes the three of U+FFFD) and the system's text around it.
struct Text {
    bytes: [u8; TEXT_BUFFER],
    len: usize,
}

const TEXT_BUFFER: usize = 3 * PATH_BUFFER + 512;

impl Text {
    const fn new() -> Text {
        Text {
            bytes: [0; TEXT_BUFFER],
            len: 0,
        }
    }
    fn push(&mut self, s: &[u8]) {
        for &b in s {
            if self.len < self.bytes.len() {
                self.bytes[self.len] = b;
                self.len += 1;
            }
        }
    }
    /// `s`, each byte that is not part of valid UTF-8 written as U+FFFD (as
    /// `String::from_utf8_lossy` does): a path or a system message that is
    /// not UTF-8 is kept whole.
    fn push_lossy(&mut self, mut s: &[u8]) {
        loop {
            match core::str::from_utf8(s) {
                Ok(v) => return self.push(v.as_bytes()),
                Err(e) => {
                    let (valid, rest) = s.split_at(e.valid_up_to());
                    self.push(valid);
                    self.push("\u{FFFD}".as_bytes());
                    match e.error_len() {
                        Some(n) => s = &rest[n..],
                        None => return,
                    }
                }
            }
        }
    }
    fn push_number(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }
    /// `13.0` for `13000`.
    fn push_release(&mut self, version: u32) {
        self.push_number(u64::from(version / 1000));
        self.push(b".");
        self.push_number(u64::from(version % 1000 / 10));
    }
    fn as_str(&self) -> &str {
        // Valid UTF-8 (everything is pushed lossily or is ASCII), unless
        // the buffer cut a sequence: then the valid prefix.
        let bytes = &self.bytes[..self.len];
        match core::str::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => core::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or(""),
        }
    }
}

// SAFETY: `inner` is written only inside `once` (by one thread), read only
// after it completed (release/acquire).
unsafe impl Sync for Library {}

static DRIVER_LIB: Library = Library::new(Api::Driver);
static RUNTIME_LIB: Library = Library::new(Api::Runtime);

impl Library {
    const fn new(api: Api) -> Library {
        Library {
            once: Once::new(),
            api,
            inner: UnsafeCell::new(LibraryState {
                handle: 0,
                get_proc: 0,
                get_proc_v2: false,
                version: 0,
                file: "",
                variable: Variable::Unset,
                tried: "",
                message: Text::new(),
                stub: false,
            }),
        }
    }

    fn state(&'static self) -> Result<&'static LibraryState, Stuck> {
        if self.api == Api::Runtime && !self.once.done() {
            // One driver per process, and one order for the two loads: a
            // named driver is loaded before the runtime (whose own
            // dlopen("libcuda.so.1") must find it), and before this thread
            // claims the runtime's load, never while holding it. Otherwise a
            // thread loading the runtime would wait for the driver while the
            // driver's own code, loading on another thread, waits for the
            // runtime. Where that driver cannot be waited for (its load is
            // on this very thread, or was cut by a fork), neither can the
            // runtime: the call returns at once, nothing stored.
            if environment()?.driver.state != SettingState::Unset {
                DRIVER_LIB.state().map_err(Stuck::of_driver)?;
            }
        }
        // SAFETY: inside `once`: this thread alone writes.
        self.once
            .call(|| unsafe { self.open(&mut *self.inner.get()) })?;
        // SAFETY: completed: written once, never again.
        Ok(unsafe { &*self.inner.get() })
    }

    fn get(&'static self) -> Result<Loaded, LoadError> {
        let s = self.state().map_err(|why| {
            // The environment was read (it is read first, and never waits
            // on a library): what the load tries and how the variable was
            // taken are known even where the load cannot be waited for.
            let (tried, variable) = match environment() {
                Ok(e) => (
                    e.setting(self.api).tried.as_str(),
                    e.setting(self.api).variable(),
                ),
                Err(_) => ("", Variable::Unset),
            };
            LoadError {
                tried,
                message: why.message(),
                variable,
            }
        })?;
        if s.handle == 0 {
            return Err(LoadError {
                tried: s.tried,
                message: s.message.as_str(),
                variable: s.variable,
            });
        }
        Ok(Loaded {
            file: s.file,
            proc_address_v2: s.get_proc_v2,
            version: (s.version != 0).then_some(s.version),
            variable: s.variable,
        })
    }

    /// Opens the library: the variable's file, else the usual names; then
    /// asks its version.
    fn open(&'static self, s: &mut LibraryState) {
        let env = match environment() {
            Ok(e) => e,
            Err(why) => {
                s.message.push(why.message().as_bytes());
                return;
            }
        };
        let (var, setting, names): (&str, &'static Setting, &[&'static str]) = match self.api {
            Api::Driver => (LIBCUDA_VAR, &env.driver, sys::DRIVER_NAMES),
            Api::Runtime => (LIBCUDART_VAR, &env.runtime, sys::runtime_names()),
        };
        s.variable = setting.variable();
        if self.api == Api::Runtime
            && env.driver.state != SettingState::Unset
            && env.driver.state != SettingState::Ignored
        {
            // Loaded before this load was claimed (`state`): done.
            if !matches!(DRIVER_LIB.state(), Ok(d) if d.handle != 0) {
                s.message.push(
                    b"not loaded: CUDA_MEM_SYS_LIBCUDA names a driver that did not load \
                      (see loader::driver()), and the runtime would open another one",
                );
                return;
            }
        }
        s.tried = setting.tried.as_str();
        match setting.state {
            SettingState::Path(len) => match sys::open(&setting.bytes[..=len]) {
                Ok(h) => {
                    s.handle = h;
                    s.file = setting.tried.as_str();
                }
                Err(()) => {
                    s.message.push(var.as_bytes());
                    s.message.push(b" names no loadable library: ");
                    sys::last_error(&mut s.message);
                }
            },
            SettingState::TooLong(len) => {
                s.message.push(var.as_bytes());
                s.message.push(b" is ");
                s.message.push_number(len as u64);
                s.message.push(b" bytes long, more than the loader's ");
                s.message.push_number(PATH_BUFFER as u64 - 1);
                s.message
                    .push(b": nothing is loaded (the usual names are not tried instead)");
            }
            SettingState::Unset | SettingState::Ignored => {
                if setting.state == SettingState::Ignored {
                    s.message.push(var.as_bytes());
                    s.message.push(b" is ignored in a secure process; ");
                }
                let prefix = s.message.len;
                for name in names {
                    let mut z = [0u8; 64];
                    z[..name.len()].copy_from_slice(name.as_bytes());
                    match sys::open(&z[..=name.len()]) {
                        Ok(h) => {
                            s.handle = h;
                            s.file = name;
                            break;
                        }
                        Err(()) => {
                            s.message.len = prefix;
                            sys::last_error(&mut s.message);
                        }
                    }
                }
            }
        }
        if s.handle == 0 {
            return;
        }
        let by_soname = s.file == "libcuda.so.1";
        match self.api {
            Api::Driver => Self::open_driver(s, by_soname),
            Api::Runtime => Self::open_runtime(s),
        }
    }

    /// `by_soname`: opened as `libcuda.so.1` itself.
    fn open_driver(s: &mut LibraryState, by_soname: bool) {
        if !by_soname {
            // One driver per process: the runtime's own
            // dlopen("libcuda.so.1") finds this one only by its SONAME.
            match sys::soname(s.handle) {
                Some(Some(b"libcuda.so.1")) | None => {}
                Some(other) => {
                    s.message.len = 0;
                    match other {
                        Some(name) => {
                            s.message.push(b"the library's SONAME is ");
                            s.message.push_lossy(name);
                        }
                        None => s.message.push(b"the library has no SONAME"),
                    }
                    s.message.push(
                        b", not libcuda.so.1: the runtime's own dlopen(\"libcuda.so.1\") would \
                          load a second driver, so it is not used (name NVIDIA's \
                          libcuda.so.<version>, whose SONAME is libcuda.so.1)",
                    );
                    // Left open (its code has run), but unused.
                    s.handle = 0;
                    return;
                }
            }
        }
        if let Some(p) = sys::symbol(s.handle, b"cuGetProcAddress_v2\0") {
            s.get_proc = p;
            s.get_proc_v2 = true;
        } else if let Some(p) = sys::symbol(s.handle, b"cuGetProcAddress\0") {
            s.get_proc = p;
        } else {
            // Not a CUDA driver: report it as a library that did not load.
            s.message.len = 0;
            s.message
                .push(b"the library exports neither cuGetProcAddress_v2 nor cuGetProcAddress");
            sys::close(s.handle);
            s.handle = 0;
            return;
        }
        // The driver's version, asked as every function is (no cuInit needed).
        let entry = Entry {
            symbol: b"cuDriverGetVersion\0",
            base: b"cuDriverGetVersion\0",
            version: 2020,
        };
        let (asked, f) = s.ask(&entry);
        let mut stub = asked == CUDA_ERROR_STUB_LIBRARY;
        let mut v: c_int = 0;
        if f > LAST_STATE {
            // SAFETY: PFN_cuDriverGetVersion_v2020, asked as such.
            let r = unsafe { core::mem::transmute::<usize, GetVersion>(f)(&mut v) };
            stub |= r == CUDA_ERROR_STUB_LIBRARY.0 as c_int;
            if r == CUDA_SUCCESS.0 as c_int && v > 0 {
                s.version = v as u32;
            }
        } else if !stub {
            // Not found by cuGetProcAddress: the exported symbol tells a
            // stub whose cuGetProcAddress answers otherwise.
            if let Some(g) = sys::symbol(s.handle, b"cuDriverGetVersion\0") {
                // SAFETY: cuDriverGetVersion(int *), as cuda.h declares it.
                let r = unsafe { core::mem::transmute::<usize, GetVersion>(g)(&mut v) };
                stub = r == CUDA_ERROR_STUB_LIBRARY.0 as c_int;
            }
        }
        if stub {
            // NVIDIA's stub libcuda (the toolkit's stubs/ folder) answers
            // every call CUDA_ERROR_STUB_LIBRARY: reported as a linked
            // build reports it, every driver call 34.
            s.message.len = 0;
            s.message.push(
                b"the library is NVIDIA's stub libcuda (the toolkit's stubs/ folder, for \
                  linking only): every driver call returns CUDA_ERROR_STUB_LIBRARY (34); \
                  install the NVIDIA driver, or take the stubs folder off the library path",
            );
            s.stub = true;
            // Left open (its code has run), but unused.
            s.handle = 0;
        }
    }

    fn open_runtime(s: &mut LibraryState) {
        let mut v: c_int = 0;
        let r = match sys::symbol(s.handle, b"cudaRuntimeGetVersion\0") {
            // SAFETY: cudaRuntimeGetVersion(int *); it initialises nothing.
            Some(f) => unsafe { core::mem::transmute::<usize, GetVersion>(f)(&mut v) },
            None => -1,
        };
        let refuse = if r != 0 || v <= 0 {
            s.message
                .push(b"cudaRuntimeGetVersion is missing or failed: not a CUDA runtime");
            true
        } else if v as u32 / 1000 != RUNTIME_MAJOR {
            s.message.push(b"the library is CUDA ");
            s.message.push_release(v as u32);
            s.message.push(b"'s runtime (cudaRuntimeGetVersion ");
            s.message.push_number(v as u64);
            s.message.push(b"), these bindings CUDA ");
            s.message.push_release(CUDA_VERSION);
            s.message.push(b"'s (CUDA_VERSION ");
            s.message.push_number(u64::from(CUDA_VERSION));
            s.message
                .push(b"): its structures differ, so it is not used");
            true
        } else {
            false
        };
        if r == 0 && v > 0 {
            s.version = v as u32;
        }
        if refuse {
            // Left open (its code has run), but unused.
            s.handle = 0;
        }
    }
}

impl LibraryState {
    /// The slot value for `entry`: its address, or why there is none.
    fn lookup(&self, entry: &Entry) -> usize {
        self.ask(entry).1
    }

    /// The slot value for `entry`, and `cuGetProcAddress`'s result
    /// (`CUDA_SUCCESS` where it was not asked).
    fn ask(&self, entry: &Entry) -> (CUresult, usize) {
        if entry.version == 0 || self.get_proc == 0 {
            let v = sys::symbol(self.handle, entry.symbol).unwrap_or(NOT_FOUND);
            return (CUDA_SUCCESS, v);
        }
        // cuda.h (Driver Entry Point Access): a version above the driver's
        // is answered CUDA_ERROR_INVALID_VALUE; not asked.
        if self.version != 0 && entry.version > self.version {
            return (CUDA_SUCCESS, TOO_OLD);
        }
        let mut p: *mut c_void = core::ptr::null_mut();
        let name = entry.base.as_ptr().cast::<c_char>();
        let version = entry.version as c_int;
        // Written by the driver only with CUDA_SUCCESS.
        let mut status: c_int = -1;
        let r = if self.get_proc_v2 {
            // SAFETY: cuGetProcAddress_v2's prototype (cudaTypedefs.h, PFN_cuGetProcAddress_v12000).
            unsafe {
                core::mem::transmute::<usize, GetProcAddressV2>(self.get_proc)(
                    name,
                    &mut p,
                    version,
                    PROC_FLAGS,
                    &mut status,
                )
            }
        } else {
            // SAFETY: cuGetProcAddress's prototype (PFN_cuGetProcAddress_v11030).
            unsafe {
                core::mem::transmute::<usize, GetProcAddressV1>(self.get_proc)(
                    name, &mut p, version, PROC_FLAGS,
                )
            }
        };
        let v = if r == CUDA_SUCCESS && p as usize >= LOWEST_ADDRESS {
            p as usize
        } else if r == CUDA_SUCCESS && p.is_null() && status == VERSION_NOT_SUFFICIENT {
            BELOW_INTRODUCTION
        } else if r == CUDA_ERROR_INVALID_VALUE && self.version == 0 {
            // The driver's version is unknown: this is its answer for a
            // version above its own.
            TOO_OLD
        } else {
            NOT_FOUND
        };
        (r, v)
    }
}

/// The headers' runtime soname major (`libcudart.so.13` for 13.x).
const RUNTIME_MAJOR: u32 = CUDA_VERSION / 1000;

#[cfg(unix)]
mod sys {
    use super::Text;
    use core::ffi::CStr;
    use core::sync::atomic::{AtomicU32, Ordering};

    pub const DRIVER_NAMES: &[&str] = &["libcuda.so.1", "libcuda.so"];

    pub fn runtime_names() -> &'static [&'static str] {
        match super::RUNTIME_MAJOR {
            12 => &["libcudart.so.12"],
            13 => &["libcudart.so.13"],
            14 => &["libcudart.so.14"],
            _ => &["libcudart.so"],
        }
    }

    /// Copies the variable's value into `buf` (NUL-terminated): `Ok(None)`
    /// unset or empty, `Ok(Some(length))`, `Err(length)` where it does not fit.
    pub fn getenv(var: &[u8], buf: &mut [u8]) -> Result<Option<usize>, usize> {
        // SAFETY: a NUL-terminated name; the value is copied at once.
        let v = unsafe { libc::getenv(var.as_ptr().cast()) };
        if v.is_null() {
            return Ok(None);
        }
        // SAFETY: getenv's value is NUL-terminated.
        let v = unsafe { CStr::from_ptr(v) }.to_bytes();
        if v.is_empty() {
            return Ok(None);
        }
        if v.len() >= buf.len() {
            return Err(v.len());
        }
        buf[..v.len()].copy_from_slice(v);
        buf[v.len()] = 0;
        Ok(Some(v.len()))
    }

    /// A secure process (setuid, setgid, file capabilities): the dynamic
    /// loader's own test.
    pub fn secure() -> bool {
        #[cfg(target_os = "linux")]
        // SAFETY: no preconditions.
        unsafe {
            libc::getauxval(libc::AT_SECURE) != 0
        }
        #[cfg(not(target_os = "linux"))]
        // SAFETY: no preconditions.
        unsafe {
            libc::getuid() != libc::geteuid() || libc::getgid() != libc::getegid()
        }
    }

    pub fn process_id() -> u32 {
        // SAFETY: no preconditions.
        unsafe { libc::getpid() as u32 }
    }

    /// Bumped in the child of every `fork` (a `pthread_atfork` handler).
    static GENERATION: AtomicU32 = AtomicU32::new(0);
    /// The handler: 0 not registered, 1 being registered, 2 registered, 3
    /// refused (`pthread_atfork` failed: out of memory).
    static ATFORK: AtomicU32 = AtomicU32::new(0);

    extern "C" fn forked() {
        GENERATION.fetch_add(1, Ordering::Relaxed);
    }

    /// Registers the fork handler (at program start on Linux, from the
    /// crate's `.init_array` entry: before any other thread can call the
    /// crate; elsewhere at the first use).
    pub fn watch_forks() {
        if ATFORK
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            // SAFETY: `forked` is an `extern "C" fn()` that lives as long as
            // the process (the crate is never unloaded while its code runs;
            // a dlclose'd library's handlers are removed by glibc).
            let r = unsafe { libc::pthread_atfork(None, None, Some(forked)) };
            ATFORK.store(if r == 0 { 2 } else { 3 }, Ordering::Release);
        }
    }

    /// What tells this process from a child it forks: the fork generation,
    /// which is new in every child, even one with its parent's process id
    /// (PID 1 forking into a new PID namespace). Where the handler could not
    /// be registered, the process id.
    pub fn fork_generation() -> u32 {
        watch_forks();
        // A second thread while the first registers: a moment (bounded: a
        // child forked in that moment never sees it end).
        for _ in 0..1000 {
            match ATFORK.load(Ordering::Acquire) {
                1 => sleep_briefly(),
                2 => return GENERATION.load(Ordering::Acquire),
                _ => break,
            }
        }
        process_id()
    }

    pub fn thread_id() -> u32 {
        #[cfg(target_os = "linux")]
        // SAFETY: gettid has no arguments (a system call: no glibc 2.30 needed).
        unsafe {
            libc::syscall(libc::SYS_gettid) as u32
        }
        #[cfg(not(target_os = "linux"))]
        // SAFETY: no preconditions.
        unsafe {
            libc::pthread_self() as usize as u32
        }
    }

    pub fn yield_now() {
        // SAFETY: no preconditions.
        unsafe { libc::sched_yield() };
    }

    /// A millisecond.
    pub fn sleep_briefly() {
        let t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 1_000_000,
        };
        // SAFETY: a valid timespec; the remainder is not wanted.
        unsafe { libc::nanosleep(&t, core::ptr::null_mut()) };
    }

    pub fn open(name: &[u8]) -> Result<usize, ()> {
        // SAFETY: `name` is NUL-terminated.
        let h = unsafe { libc::dlopen(name.as_ptr().cast(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if h.is_null() {
            Err(())
        } else {
            Ok(h as usize)
        }
    }

    pub fn close(handle: usize) {
        // SAFETY: a handle from dlopen, used by nothing else yet.
        unsafe { libc::dlclose(handle as *mut _) };
    }

    pub fn symbol(handle: usize, name: &[u8]) -> Option<usize> {
        // SAFETY: a live handle and a NUL-terminated name.
        let p = unsafe { libc::dlsym(handle as *mut _, name.as_ptr().cast()) };
        (p as usize >= super::LOWEST_ADDRESS).then_some(p as usize)
    }

    /// The `SONAME` of the library `handle` (`Some(None)`: it has none);
    /// `None` where that cannot be asked. Read from the dynamic section the
    /// dynamic loader mapped (`dlinfo(RTLD_DI_LINKMAP)`), not from the file,
    /// which may have changed since it was opened.
    #[cfg(target_os = "linux")]
    pub fn soname(handle: usize) -> Option<Option<&'static [u8]>> {
        use core::ffi::{c_char, c_int, c_void};
        /// The head of glibc's and musl's `struct link_map` (`<link.h>`).
        #[repr(C)]
        struct LinkMap {
            l_addr: usize,
            l_name: *const c_char,
            l_ld: *const Dyn,
        }
        /// `ElfW(Dyn)`.
        #[repr(C)]
        struct Dyn {
            d_tag: isize,
            d_val: usize,
        }
        const RTLD_DI_LINKMAP: c_int = 2;
        const DT_NULL: isize = 0;
        const DT_STRTAB: isize = 5;
        const DT_SONAME: isize = 14;
        extern "C" {
            fn dlinfo(handle: *mut c_void, request: c_int, info: *mut c_void) -> c_int;
        }
        let mut map: *const LinkMap = core::ptr::null();
        // SAFETY: a live handle; RTLD_DI_LINKMAP writes one pointer.
        let r = unsafe {
            dlinfo(
                handle as *mut c_void,
                RTLD_DI_LINKMAP,
                (&mut map as *mut *const LinkMap).cast(),
            )
        };
        if r != 0 || map.is_null() {
            return None;
        }
        // SAFETY: the loader's link map of a library that stays loaded.
        let (base, mut d) = unsafe { ((*map).l_addr, (*map).l_ld) };
        if d.is_null() {
            return None;
        }
        let (mut strtab, mut soname) = (None, None);
        loop {
            // SAFETY: the dynamic section, an array that DT_NULL ends.
            let e = unsafe { &*d };
            match e.d_tag {
                DT_NULL => break,
                DT_STRTAB => strtab = Some(e.d_val),
                DT_SONAME => soname = Some(e.d_val),
                _ => {}
            }
            // SAFETY: not past DT_NULL.
            d = unsafe { d.add(1) };
        }
        let (Some(strtab), Some(offset)) = (strtab, soname) else {
            return Some(None);
        };
        // glibc relocates the section's addresses in place where it is
        // writable; musl and read-only sections keep them relative.
        let strtab = if strtab < base { strtab + base } else { strtab };
        // SAFETY: DT_SONAME is an offset into the mapped string table, of a
        // NUL-terminated string; the library is never unloaded.
        Some(Some(
            unsafe { CStr::from_ptr((strtab + offset) as *const c_char) }.to_bytes(),
        ))
    }

    #[cfg(not(target_os = "linux"))]
    pub fn soname(_: usize) -> Option<Option<&'static [u8]>> {
        None
    }

    pub fn last_error(out: &mut Text) {
        // SAFETY: dlerror's text is copied before any other dl* call.
        let e = unsafe { libc::dlerror() };
        if e.is_null() {
            out.push(b"unknown dlopen error");
        } else {
            // SAFETY: dlerror's text is NUL-terminated.
            out.push_lossy(unsafe { CStr::from_ptr(e) }.to_bytes());
        }
    }
}

#[cfg(windows)]
mod sys {
    use super::Text;
    use core::ffi::{c_char, c_void};

    pub const DRIVER_NAMES: &[&str] = &["nvcuda.dll"];

    pub fn runtime_names() -> &'static [&'static str] {
        match super::RUNTIME_MAJOR {
            12 => &["cudart64_12.dll"],
            13 => &["cudart64_13.dll"],
            14 => &["cudart64_14.dll"],
            _ => &["cudart64.dll"],
        }
    }

    /// `LoadLibraryExW` flags: only `System32` (the driver's home).
    const LOAD_LIBRARY_SEARCH_SYSTEM32: u32 = 0x0000_0800;
    /// The application's folder, `System32` and folders added with
    /// `AddDllDirectory`: not the working directory, not `PATH`.
    const LOAD_LIBRARY_SEARCH_DEFAULT_DIRS: u32 = 0x0000_1000;

    #[link(name = "kernel32")]
    extern "system" {
        fn LoadLibraryExW(name: *const u16, file: *mut c_void, flags: u32) -> *mut c_void;
        fn GetProcAddress(module: *mut c_void, name: *const c_char) -> *mut c_void;
        fn FreeLibrary(module: *mut c_void) -> i32;
        fn GetLastError() -> u32;
        fn GetEnvironmentVariableW(name: *const u16, buf: *mut u16, size: u32) -> u32;
        fn GetCurrentThreadId() -> u32;
        fn SwitchToThread() -> i32;
        fn Sleep(milliseconds: u32);
    }

    /// No setuid programs on Windows.
    pub fn secure() -> bool {
        false
    }

    /// No `fork` on Windows: one generation.
    pub fn fork_generation() -> u32 {
        0
    }

    pub fn thread_id() -> u32 {
        // SAFETY: no arguments.
        unsafe { GetCurrentThreadId() }
    }

    pub fn yield_now() {
        // SAFETY: no arguments.
        unsafe { SwitchToThread() };
    }

    /// A millisecond.
    pub fn sleep_briefly() {
        // SAFETY: no preconditions.
        unsafe { Sleep(1) };
    }

    /// Copies the variable's value into `buf` as UTF-8 (NUL-terminated; an
    /// unpaired surrogate as its generalized UTF-8, which [`open`] turns back
    /// into the same UTF-16); its length. Read as the wide string Windows
    /// keeps, not through the ANSI code page, where a path outside it is lost.
    /// As on Unix: `Ok(None)` unset or empty, `Ok(Some(length))`, `Err(length)`
    /// where it does not fit.
    pub fn getenv(var: &[u8], buf: &mut [u8]) -> Result<Option<usize>, usize> {
        let mut name = [0u16; 64];
        if var.len() > name.len() {
            return Ok(None);
        }
        for (w, &b) in name.iter_mut().zip(var) {
            *w = b as u16; // the names are ASCII
        }
        let mut wide = [0u16; 4096];
        // SAFETY: a NUL-terminated name and a buffer of the size given.
        let n =
            unsafe { GetEnvironmentVariableW(name.as_ptr(), wide.as_mut_ptr(), wide.len() as u32) }
                as usize;
        // 0: unset or empty; n >= len: the size it would need, with the NUL.
        if n == 0 {
            return Ok(None);
        }
        if n >= wide.len() {
            return Err(n - 1);
        }
        match wtf8_encode(&wide[..n], buf) {
            Some(len) if len < buf.len() => {
                buf[len] = 0;
                Ok(Some(len))
            }
            _ => Err(n),
        }
    }

    /// UTF-16 (unpaired surrogates included) as generalized UTF-8 into `out`;
    /// `None` where it does not fit.
    fn wtf8_encode(wide: &[u16], out: &mut [u8]) -> Option<usize> {
        let mut len = 0;
        let mut i = 0;
        while i < wide.len() {
            let w = wide[i] as u32;
            let c = match (w, wide.get(i + 1)) {
                (0xD800..=0xDBFF, Some(&low @ 0xDC00..=0xDFFF)) => {
                    i += 1;
                    0x10000 + ((w - 0xD800) << 10) + (low as u32 - 0xDC00)
                }
                _ => w,
            };
            i += 1;
            let mut bytes = [0u8; 4];
            let n = match c {
                0..=0x7F => {
                    bytes[0] = c as u8;
                    1
                }
                0x80..=0x7FF => {
                    bytes[0] = 0xC0 | (c >> 6) as u8;
                    bytes[1] = 0x80 | (c & 0x3F) as u8;
                    2
                }
                0x800..=0xFFFF => {
                    bytes[0] = 0xE0 | (c >> 12) as u8;
                    bytes[1] = 0x80 | ((c >> 6) & 0x3F) as u8;
                    bytes[2] = 0x80 | (c & 0x3F) as u8;
                    3
                }
                _ => {
                    bytes[0] = 0xF0 | (c >> 18) as u8;
                    bytes[1] = 0x80 | ((c >> 12) & 0x3F) as u8;
                    bytes[2] = 0x80 | ((c >> 6) & 0x3F) as u8;
                    bytes[3] = 0x80 | (c & 0x3F) as u8;
                    4
                }
            };
            out.get_mut(len..len + n)?.copy_from_slice(&bytes[..n]);
            len += n;
        }
        Some(len)
    }

    /// Generalized UTF-8 (NUL-terminated) as UTF-16 into `out`
    /// (NUL-terminated); `None` where it does not fit. A byte that starts
    /// no sequence becomes U+FFFD.
    fn wtf8_decode(bytes: &[u8], out: &mut [u16]) -> Option<()> {
        let mut n = 0;
        let mut push = |w: u16| -> Option<()> {
            *out.get_mut(n)? = w;
            n += 1;
            Some(())
        };
        let mut i = 0;
        while i < bytes.len() && bytes[i] != 0 {
            let b = bytes[i] as u32;
            let (len, init) = match b {
                0..=0x7F => (1, b),
                0xC0..=0xDF => (2, b & 0x1F),
                0xE0..=0xEF => (3, b & 0x0F),
                0xF0..=0xF7 => (4, b & 0x07),
                _ => (0, 0xFFFD),
            };
            let tail = bytes.get(i + 1..i + len.max(1)).unwrap_or(&[]);
            let c = if len == 0 || tail.len() + 1 != len || tail.iter().any(|t| t & 0xC0 != 0x80) {
                i += 1;
                0xFFFD
            } else {
                i += len;
                tail.iter().fold(init, |c, t| (c << 6) | (*t as u32 & 0x3F))
            };
            if c >= 0x10000 {
                let c = c - 0x10000;
                push(0xD800 + (c >> 10) as u16)?;
                push(0xDC00 + (c & 0x3FF) as u16)?;
            } else {
                push(c as u16)?;
            }
        }
        push(0)
    }

    /// Loads `name` (UTF-8, NUL-terminated). A bare file name is never looked
    /// for in the working directory or on `PATH`, where another program could
    /// have planted a DLL: `nvcuda.dll` only in `System32`, where the driver
    /// installs it; any other bare name (the runtime, `cudart64_<major>.dll`)
    /// in the default folders (the application's, `System32`, those added by
    /// `AddDllDirectory`). A path (the variable's) is loaded as given.
    pub fn open(name: &[u8]) -> Result<usize, ()> {
        let mut wide = [0u16; 4096];
        wtf8_decode(name, &mut wide).ok_or(())?;
        let file = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
        let flags = if file.iter().any(|&b| b == b'\\' || b == b'/' || b == b':') {
            0
        } else if file.eq_ignore_ascii_case(b"nvcuda.dll") {
            LOAD_LIBRARY_SEARCH_SYSTEM32
        } else {
            LOAD_LIBRARY_SEARCH_DEFAULT_DIRS
        };
        // SAFETY: NUL-terminated (wtf8_decode wrote the NUL).
        let h = unsafe { LoadLibraryExW(wide.as_ptr(), core::ptr::null_mut(), flags) };
        if h.is_null() {
            Err(())
        } else {
            Ok(h as usize)
        }
    }

    pub fn close(handle: usize) {
        // SAFETY: a handle from LoadLibraryExW.
        unsafe { FreeLibrary(handle as *mut _) };
    }

    pub fn symbol(handle: usize, name: &[u8]) -> Option<usize> {
        // SAFETY: a live module and a NUL-terminated name.
        let p = unsafe { GetProcAddress(handle as *mut _, name.as_ptr().cast()) };
        (p as usize >= super::LOWEST_ADDRESS).then_some(p as usize)
    }

    /// No `SONAME` on Windows.
    pub fn soname(_: usize) -> Option<Option<&'static [u8]>> {
        None
    }

    pub fn last_error(out: &mut Text) {
        // SAFETY: no arguments.
        let mut code = unsafe { GetLastError() };
        out.push(b"LoadLibraryExW failed with Windows error ");
        let mut digits = [0u8; 10];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (code % 10) as u8;
            code /= 10;
            if code == 0 {
                break;
            }
        }
        out.push(&digits[i..]);
    }
}

/// Linux: the environment is read at program start (before `main`, on the
/// one thread there is yet; or when a library containing the crate is
/// opened). Where the runtime is linked statically it loads `libcuda.so.1`
/// itself; if `CUDA_MEM_SYS_LIBCUDA` names another file, that one is loaded
/// now, so that the runtime's request finds it (by its `SONAME`) and both
/// halves use one driver.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static READ_ENVIRONMENT_AT_START: extern "C" fn() = {
    extern "C" fn at_start() {
        sys::watch_forks();
        if let Ok(e) = environment() {
            if !cfg!(cuda_mem_sys_load_runtime) && matches!(e.driver.state, SettingState::Path(_)) {
                let _ = driver();
            }
        }
    }
    at_start
};
