//! Run-time loading of the CUDA driver and runtime (feature `dynamic-loading`).
//!
//! Every function keeps its documented name, signature and docs. A Rust call
//! is inlined: a load of the function's slot, filled on its first call
//! (thread-safely: concurrent first calls may each ask the driver, but the
//! slot is published once, by compare-and-exchange from the unresolved
//! state, so every caller gets the first answer), and an indirect call. The crate also defines a trampoline
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
//!   the runtime would load a second driver beside it. And where the
//!   variable names a driver while another `libcuda.so.1` is already in the
//!   process (an `LD_PRELOAD`, a library linking `libcuda`, an earlier
//!   `dlopen`; asked with `RTLD_NOLOAD`, the same file told by its inode),
//!   the named one is refused (303; [`driver`] names both files): the
//!   runtime's own `dlopen("libcuda.so.1")` gets the one already there.
//!   Linux only: on Windows the runtime loads `nvcuda.dll` by name.
//! - **Refused libraries stay loaded**: a library opened and then refused
//!   (another `SONAME`, no `cuGetProcAddress`, NVIDIA's stub, a runtime of
//!   another major) is never unloaded, since its code has run (a
//!   constructor may have installed a signal handler).
//! - **NVIDIA's stub library** (the toolkit's `stubs/libcuda.so`, for linking
//!   only), found for instance by the `libcuda.so` fall-back where only the
//!   toolkit is on the library path, is told by its answer
//!   `CUDA_ERROR_STUB_LIBRARY` and reported as a linked build reports it:
//!   every driver call returns `CUDA_ERROR_STUB_LIBRARY` (34), and [`driver`]
//!   says so, naming the stub's file.
//! - **Every reason kept**: a load that tries several files (`libcuda.so.1`,
//!   then `libcuda.so`) keeps each one's own reason ([`LoadError::attempts`]),
//!   and its message leads with the most telling: a file that exists and
//!   failed to load (a missing `NEEDED` library, an invalid ELF header)
//!   before "no such file".
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
//!   A waiter also asks whether the loading thread still exists (Linux:
//!   `tgkill(getpid(), owner, 0)`, then `/proc/self/task/<id>/stat`, whose
//!   state `Z` tells the zombie main thread `tgkill` still answers, the id
//!   mapped through `NSpid` where `/proc` is another PID namespace's): a
//!   thread that ended inside the load (a raw exit; `pthread_exit`, a
//!   forced unwind), or a child made without fork handlers (`clone(2)`,
//!   `_Fork()`), gets 303 at once; a load that panicked on a thread that
//!   lives on is poisoned (303, [`driver`] says why). The environment is
//!   read before any library's load is claimed, so a `getenv` that calls
//!   back into the crate (an `LD_PRELOAD` shim) gets 303 and leaves no
//!   load behind. A driver whose `cuGetProcAddress` calls back into the
//!   crate nests lookups on a thread: a thread is inside at most 8 lookups
//!   at once, the 8th nested call back gets 303 (not remembered), where the
//!   stack overflowed. The bound is per thread, which is what it protects
//!   (the thread's stack): a driver calling back through new threads nests
//!   without bound, each thread on its own stack. Where no thread-specific
//!   key is left (all 1024 `pthread` keys taken by an `LD_PRELOAD`), the
//!   depth is kept in a table of 64 threads keyed by thread id; a lookup
//!   for which no depth can be kept gets 303.
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
//! with the static runtime, which loads it at program start. The same holds,
//! with a loaded runtime and the driver not named, for a driver constructor
//! that calls the runtime while another thread loads the runtime (whose
//! `dlopen` waits for the lock): name the driver, or load early.
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
//! | the library could not be loaded (a variable naming a FIFO, a device or a directory included: refused before it is opened; a driver loaded by another name than `libcuda.so.1` without `SONAME libcuda.so.1` included, and a named driver beside another `libcuda.so.1` already in the process), or is being loaded by this very thread (or the environment read by it; or this is the 8th nested call back of its lookups on this thread, or no lookup depth can be kept for the thread), or was being loaded by another thread when the process forked or by a thread that ended (the runtime also while the named driver is) | `CUDA_ERROR_SHARED_OBJECT_INIT_FAILED` (303) | `cudaErrorSharedObjectInitFailed` (303) |
//! | the driver is older than the function's ABI version | `CUDA_ERROR_NOT_SUPPORTED` (801) | (not a case: runtime functions are found by `dlsym`) |
//! | the library has no such function, or answers with an address below 4096 | `CUDA_ERROR_NOT_FOUND` (500) | `cudaErrorSymbolNotFound` (500) |
//! | the driver found is NVIDIA's stub library | `CUDA_ERROR_STUB_LIBRARY` (34) | (not a case: the runtime loads the driver itself) |
//! | the driver says the table asked below the function's introduction: a bug of this crate | `CUDA_ERROR_UNKNOWN` (999) | (not a case) |
//!
//! (`cudaGetErrorName`/`cudaGetErrorString` return a message string instead,
//! `cudaCreateChannelDesc` a zeroed descriptor.) [`driver`], [`runtime`] and
//! [`function`] tell, without calling anything, what loaded and why not.

// Every `unsafe` operation in its own block, each with its SAFETY comment.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

// The dynamic section's reading, pure: a folder with its byte image and
// tests (also compiled by elf-fuzz/).
#[cfg(target_os = "linux")]
mod elf;
mod environment;
mod library;
mod once;
mod slot_state;
mod slots;
mod text;
#[cfg(unix)]
mod unix;
// A thread is told by its Linux thread id (`gettid`, 32 bits and unique
// among live threads) or Windows' (`GetCurrentThreadId`, a `DWORD`); other
// Unix systems have no such id of that width (`pthread_t` is an opaque
// pointer-sized value), and CUDA ships no driver for them.
#[cfg(all(unix, not(target_os = "linux")))]
compile_error!(
    "cuda-mem-sys: the feature `dynamic-loading` supports Linux and Windows only, the \
     systems CUDA ships a driver for (this target is Unix but not Linux); build without \
     `dynamic-loading` to link the CUDA libraries instead"
);
#[cfg(windows)]
mod windows;

#[cfg(unix)]
use unix as sys;
// valgrind's view of the atomics (`--cfg cuda_mem_sys_valgrind`: `cargo
// xtask valgrind`); never compiled in a normal build.
#[cfg(cuda_mem_sys_valgrind)]
mod valgrind;
/// A trampoline's cache (`trampoline!`): `core`'s `AtomicPtr`, or under
/// `--cfg cuda_mem_sys_valgrind` the same told to valgrind.
pub(crate) use sys::AtomicPtr;
#[cfg(windows)]
use windows as sys;

use crate::generated::{
    cudaChannelFormatDesc, cudaErrorCallRequiresNewerDriver, cudaErrorSharedObjectInitFailed,
    cudaErrorStubLibrary, cudaErrorSymbolNotFound, cudaErrorUnknown, cudaError_t, CUresult,
    CUDA_ERROR_NOT_FOUND, CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_SHARED_OBJECT_INIT_FAILED,
    CUDA_ERROR_STUB_LIBRARY, CUDA_ERROR_UNKNOWN,
};
use core::ffi::{c_char, c_void};
use environment::environment;
use library::{DRIVER_LIB, RUNTIME_LIB};
use slots::{driver_fn, runtime_fn};
use table::{NAMES, N_DRIVER, N_RUNTIME};

/// The headers' runtime soname major (`libcudart.so.13` for 13.x).
const RUNTIME_MAJOR: u32 = crate::generated::CUDA_VERSION / 1000;

/// The generated table (`build/codegen/loader.rs`).
#[cfg(cuda_mem_sys_load_driver)]
use crate::generated::loader_table as table;
/// docs.rs's build (`DOCS_RS`: the build script sets no loading cfg, so the
/// linked declarations are documented, NVIDIA's full text, beside this
/// module): no table, and never a program.
#[cfg(not(cuda_mem_sys_load_driver))]
mod table {
    pub const N_DRIVER: usize = 0;
    pub const N_RUNTIME: usize = 0;
    pub static DRIVER: [super::Entry; 0] = [];
    pub static RUNTIME: [super::Entry; 0] = [];
    pub static NAMES: &[(&str, super::Api, usize)] = &[];
}

// The generated trampolines and loaded calls name these as
// `crate::loader::...`: the macros, and what they expand to call.
#[cfg_attr(not(cuda_mem_sys_load_driver), allow(unused_imports))]
pub(crate) use slots::{call, trampoline};
#[doc(hidden)]
pub use slots::{driver_ready, driver_resolve, runtime_ready, runtime_resolve};

#[cfg_attr(docsrs, doc(cfg(feature = "dynamic-loading")))]
/// The environment variable naming the driver library file to load.
pub const LIBCUDA_VAR: &str = "CUDA_MEM_SYS_LIBCUDA";
#[cfg_attr(docsrs, doc(cfg(feature = "dynamic-loading")))]
/// The environment variable naming the runtime library file to load.
pub const LIBCUDART_VAR: &str = "CUDA_MEM_SYS_LIBCUDART";

#[cfg_attr(docsrs, doc(cfg(feature = "dynamic-loading")))]
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

#[cfg_attr(docsrs, doc(cfg(feature = "dynamic-loading")))]
/// Which library a function comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// `libcuda` (`cu*`).
    Driver,
    /// `libcudart` (`cuda*`).
    Runtime,
}

#[cfg_attr(docsrs, doc(cfg(feature = "dynamic-loading")))]
/// Why a function cannot be called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unavailable {
    /// Its library could not be loaded ([`driver`] / [`runtime`] say why), or
    /// is being loaded by this very thread (a call back into the crate from
    /// the library's own code while it loads; or from a `getenv` while the
    /// environment is read), or this thread is already inside 8 lookups of
    /// its functions (the 8th nested call back of a driver whose
    /// `cuGetProcAddress` calls back into the crate), or no lookup depth can
    /// be kept for this thread (no thread-specific key and the loader's
    /// table of 64 threads full).
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
    /// [`driver`]'s error names the stub's file.
    StubLibrary,
}

#[cfg_attr(docsrs, doc(cfg(feature = "dynamic-loading")))]
/// Where a function is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// Loaded at run time, at this address.
    Loaded(*const c_void),
    /// Part of the executable (the static runtime, `libcudart_static.a`;
    /// `cudart_static.lib` for MSVC).
    Linked,
}

#[cfg_attr(docsrs, doc(cfg(feature = "dynamic-loading")))]
/// How a library's environment variable was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variable {
    /// Not set (or empty): the usual file names. Also said where the
    /// variables are not read yet: by a [`LoadError`] made while this very
    /// thread reads them (a `getenv` that called back into the crate; its
    /// message says so).
    Unset,
    /// Set: only the file it names is tried.
    Used,
    /// Set, but ignored: a secure process (`getauxval(AT_SECURE)`: setuid,
    /// setgid, file capabilities), as glibc ignores `LD_LIBRARY_PATH` there.
    IgnoredInSecureProcess,
    /// `CUDA_MEM_SYS_LIBCUDART` set, but not used: the runtime is linked
    /// statically (`libcudart_static.a`), so no runtime file is loaded (the
    /// static runtime opens the driver itself). Only [`runtime`] says it.
    NotUsedByStaticRuntime,
}

/// One file a load tried, and why it did not load.
#[cfg_attr(docsrs, doc(cfg(feature = "dynamic-loading")))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// The name or path asked of the system: one of the usual names
    /// (`libcuda.so.1`), or the variable's path (each byte that is not
    /// UTF-8 shown as U+FFFD).
    pub file: &'static str,
    /// Why it did not load: the system's message for this very file
    /// (`dlerror`: a missing `NEEDED` library, an invalid ELF header;
    /// Windows' error code), or the loader's own where it opened but was
    /// refused (NVIDIA's stub library, its path named; another `SONAME`; no
    /// `cuGetProcAddress`; a runtime of another major).
    pub reason: &'static str,
    /// The system found no file by this name at all (glibc's and musl's "No
    /// such file or directory" said of this very name; Windows' errors 2
    /// and 126): the least telling reason. `false` for a file that exists
    /// and failed. On Windows error 126 (`ERROR_MOD_NOT_FOUND`) is also
    /// what a DLL one of whose own DLLs is missing gets: that file is
    /// reported `missing` too (Windows does not say which file is).
    pub missing: bool,
}

/// Every file a load tried, in the order tried, each with its own reason.
#[cfg_attr(docsrs, doc(cfg(feature = "dynamic-loading")))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Attempts {
    list: [Option<Attempt>; MAX_ATTEMPTS],
}

/// The most files one load tries (`libcuda.so.1`, then `libcuda.so`).
const MAX_ATTEMPTS: usize = 2;

impl Attempts {
    /// The attempts, in the order tried.
    pub fn iter(&self) -> impl Iterator<Item = Attempt> {
        self.list.into_iter().flatten()
    }
    /// How many files were tried.
    pub fn len(&self) -> usize {
        self.iter().count()
    }
    /// No file was tried (the load was not made: see [`LoadError::message`]).
    pub fn is_empty(&self) -> bool {
        self.list[0].is_none()
    }
    /// The attempt that tells most: the first file that exists and failed
    /// (a missing `NEEDED` library, an invalid ELF header, NVIDIA's stub),
    /// else the first tried. [`LoadError::message`] leads with it.
    pub fn most_telling(&self) -> Option<Attempt> {
        self.iter()
            .find(|a| !a.missing)
            .or_else(|| self.iter().next())
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "dynamic-loading")))]
/// Why a library did not load: the file(s) tried, each with its own reason,
/// and the loader's message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadError {
    /// The file(s) tried: the variable's path (each byte that is not UTF-8
    /// shown as U+FFFD), the variable's name where its value is too long,
    /// or the usual names, comma-separated; empty where nothing was tried.
    /// What a load tries, said even where it was not made (being loaded by
    /// this very thread, or cut by a fork); [`attempts`](Self::attempts)
    /// has what each file answered.
    pub tried: &'static str,
    /// Why not, leading with the most telling reason
    /// ([`Attempts::most_telling`]: a file that exists and failed to load
    /// before "no such file"), each file named with its own reason
    /// (`libcuda.so.1: libabsent.so: cannot open shared object file: No such
    /// file or directory; libcuda.so: cannot open shared object file: No
    /// such file or directory`); or the loader's own reason where no file
    /// was tried (a value too long, a load cut by a fork or being made by
    /// this very thread).
    pub message: &'static str,
    /// How the library's environment variable was taken.
    pub variable: Variable,
    /// Each file tried, with its own reason; empty where none was.
    pub attempts: Attempts,
}

/// Whether another `libcuda.so.1` than the named file is in the process.
// Windows: only `No` is made there.
#[cfg_attr(windows, allow(dead_code))]
pub(crate) enum AlreadyLoaded {
    No,
    /// In the caller's link namespace (the runtime's `dlopen` gets it).
    InThisNamespace,
    /// In another link namespace (`dlmopen`): a second driver.
    InAnotherNamespace,
}

/// A library's `SONAME`, as the dynamic section the loader mapped says it.
// Windows has no SONAME: only `Unknown` is made there.
#[cfg_attr(windows, allow(dead_code))]
pub(crate) enum Soname<'a> {
    /// It cannot be asked (not Linux: no ELF). On Linux a link map that
    /// cannot be had, or whose `l_ld` is null, is `Malformed`: refused.
    #[cfg_attr(target_os = "linux", allow(dead_code))]
    Unknown,
    /// The library has none.
    None,
    Name(&'a [u8]),
    /// The dynamic section cannot be read: why.
    Malformed(&'static str),
}

#[cfg_attr(docsrs, doc(cfg(feature = "dynamic-loading")))]
/// A library that loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loaded {
    /// The file name it was opened by: one of the usual names, the path the
    /// variable gave (each byte that is not UTF-8 shown as U+FFFD), or
    /// `libcudart_static.a` (`cudart_static.lib` for MSVC) where linked.
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

#[cfg_attr(docsrs, doc(cfg(feature = "dynamic-loading")))]
/// Loads the driver if not yet loaded (no CUDA call is made but
/// `cuDriverGetVersion`) and says which file it is, or why it could not be
/// loaded.
pub fn driver() -> Result<Loaded, LoadError> {
    DRIVER_LIB.get()
}

#[cfg_attr(docsrs, doc(cfg(feature = "dynamic-loading")))]
/// The same for the runtime: [`Loaded::file`] is `libcudart_static.a`
/// (`cudart_static.lib` for MSVC) where the runtime is linked statically (it
/// then loads the driver itself, and `CUDA_MEM_SYS_LIBCUDART`, where set, is
/// [`Variable::NotUsedByStaticRuntime`]). A loaded runtime is asked
/// `cudaRuntimeGetVersion` only.
pub fn runtime() -> Result<Loaded, LoadError> {
    if cfg!(cuda_mem_sys_load_runtime) {
        RUNTIME_LIB.get()
    } else {
        Ok(Loaded {
            file: if cfg!(target_env = "msvc") {
                "cudart_static.lib"
            } else {
                "libcudart_static.a"
            },
            proc_address_v2: false,
            version: None,
            // No runtime file is tried: a value is not used.
            variable: match environment().map(|e| e.runtime.variable()) {
                Ok(Variable::Used) => Variable::NotUsedByStaticRuntime,
                Ok(v) => v,
                Err(_) => Variable::Unset,
            },
        })
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "dynamic-loading")))]
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

#[cfg_attr(docsrs, doc(cfg(feature = "dynamic-loading")))]
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

#[cfg_attr(docsrs, doc(cfg(feature = "dynamic-loading")))]
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
