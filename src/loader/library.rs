//! One library (the driver, the runtime), loaded once: which file, its
//! `cuGetProcAddress`, its version, and why it did not load.

use super::environment::{environment, Setting, SettingState};
use super::once::{Once, Stuck};
use super::slot_state::{BELOW_INTRODUCTION, LAST_STATE, LOWEST_ADDRESS, NOT_FOUND, TOO_OLD};
use super::text::{Text, PATH_BUFFER};
use super::{
    sys, AlreadyLoaded, Api, Attempt, Attempts, Entry, LoadError, Loaded, Soname, Variable,
    LIBCUDART_VAR, LIBCUDA_VAR, MAX_ATTEMPTS, RUNTIME_MAJOR,
};
use crate::generated::{
    CUresult, CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_STUB_LIBRARY, CUDA_SUCCESS, CUDA_VERSION,
};
use core::cell::UnsafeCell;
use core::ffi::{c_char, c_int, c_void};

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

/// One library, loaded once.
pub(super) struct Library {
    once: Once,
    api: Api,
    inner: UnsafeCell<LibraryState>,
}

pub(super) struct LibraryState {
    pub(super) handle: usize,
    /// `cuGetProcAddress(_v2)`, as `dlsym` gave it (null: none).
    pub(super) get_proc: *const c_void,
    pub(super) get_proc_v2: bool,
    /// `cuDriverGetVersion` / `cudaRuntimeGetVersion`; 0: not answered.
    pub(super) version: u32,
    pub(super) file: &'static str,
    pub(super) variable: Variable,
    /// The file(s) tried ([`Setting::tried`]); empty where none was.
    pub(super) tried: &'static str,
    pub(super) message: Text,
    /// The driver found is NVIDIA's stub library (`handle` is then 0).
    pub(super) stub: bool,
    /// Each file tried that did not load, with its own reason.
    tries: [Try; MAX_ATTEMPTS],
    tries_count: usize,
}

/// One file tried: its name, and why it did not load.
struct Try {
    file: &'static str,
    reason: Text,
    /// No file by that name was found (the least telling reason).
    missing: bool,
    /// It was opened, then refused (its reason is the loader's own).
    opened: bool,
}

impl Try {
    const fn new() -> Try {
        Try {
            file: "",
            reason: Text::new(),
            missing: false,
            opened: false,
        }
    }
}

// SAFETY: `inner` is written only inside `once` (by one thread), read only
// after it completed (release/acquire).
unsafe impl Sync for Library {}

pub(super) static DRIVER_LIB: Library = Library::new(Api::Driver);
pub(super) static RUNTIME_LIB: Library = Library::new(Api::Runtime);

impl Library {
    pub(super) const fn new(api: Api) -> Library {
        Library {
            once: Once::new(),
            api,
            inner: UnsafeCell::new(LibraryState {
                handle: 0,
                get_proc: core::ptr::null(),
                get_proc_v2: false,
                version: 0,
                file: "",
                variable: Variable::Unset,
                tried: "",
                message: Text::new(),
                stub: false,
                tries: [const { Try::new() }; MAX_ATTEMPTS],
                tries_count: 0,
            }),
        }
    }

    pub(super) fn state(&'static self) -> Result<&'static LibraryState, Stuck> {
        let first = || {
            // One driver per process, and one order for the two loads: a
            // named driver is loaded before the runtime (whose own
            // dlopen("libcuda.so.1") must find it), and before this thread
            // claims the runtime's load, never while holding it. Otherwise a
            // thread loading the runtime would wait for the driver while the
            // driver's own code, loading on another thread, waits for the
            // runtime. Where that driver cannot be waited for (its load is
            // on this very thread, or was cut by a fork), neither can the
            // runtime: the call returns at once, nothing stored.
            // The environment first, for both: a getenv that calls back
            // into the crate while it is read (an LD_PRELOAD shim) must
            // find no load claimed, or that load would finish without the
            // variables, failed for good.
            let env = environment()?;
            if self.api == Api::Runtime && env.driver.state != SettingState::Unset {
                DRIVER_LIB.state().map_err(Stuck::of_driver)?;
            }
            Ok(())
        };
        self.once.call_after(first, || {
            // SAFETY: inside `once`: this thread alone writes.
            unsafe { self.open(&mut *self.inner.get()) }
        })?;
        // SAFETY: completed: written once, never again.
        Ok(unsafe { &*self.inner.get() })
    }

    pub(super) fn get(&'static self) -> Result<Loaded, LoadError> {
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
                attempts: Attempts::default(),
            }
        })?;
        if s.handle == 0 {
            let mut attempts = Attempts::default();
            for (slot, t) in attempts.list.iter_mut().zip(&s.tries[..s.tries_count]) {
                *slot = Some(Attempt {
                    file: t.file,
                    reason: t.reason.as_str(),
                    missing: t.missing,
                });
            }
            return Err(LoadError {
                tried: s.tried,
                message: s.message.as_str(),
                variable: s.variable,
                attempts,
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
    pub(super) fn open(&'static self, s: &mut LibraryState) {
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
        if let SettingState::Path(len) = setting.state {
            // Nothing the loader opens blocks: a FIFO with no writer (or a
            // device) named by the variable would hold dlopen in open(2).
            if let Some(kind) = sys::not_a_regular_file(&setting.bytes[..=len]) {
                let t = &mut s.tries[s.record(setting.tried.as_str())];
                t.reason.push(setting.tried.as_str().as_bytes());
                t.reason.push(b" is ");
                t.reason.push(kind.as_bytes());
                t.reason.push(
                    b", not a regular file (or a link to one): not opened, as opening \
                      it could block",
                );
                s.explain(var, setting.state);
                return;
            }
        }
        if let (Api::Driver, SettingState::Path(len)) = (self.api, setting.state) {
            // One driver per process: a libcuda.so.1 already in it (an
            // LD_PRELOAD, a library that links libcuda, an earlier dlopen)
            // is what the runtime's own dlopen("libcuda.so.1") gets. Where
            // it is another file than the one named, the named one is not
            // loaded beside it: refused, both named.
            let before = s.message.len;
            s.message.push(LIBCUDA_VAR.as_bytes());
            s.message.push(b" names ");
            s.message.push(setting.tried.as_str().as_bytes());
            s.message
                .push(b", but another libcuda.so.1 is already in the process: ");
            match sys::another_already_loaded(
                b"libcuda.so.1\0",
                &setting.bytes[..=len],
                &mut s.message,
            ) {
                AlreadyLoaded::No => {}
                AlreadyLoaded::InThisNamespace => {
                    s.message.push(
                        b" (preloaded, linked by a library of the program, or opened earlier); \
                          the runtime's own dlopen(\"libcuda.so.1\") gets that one, so the named \
                          file is not loaded beside it: unset CUDA_MEM_SYS_LIBCUDA to use the \
                          one loaded, or take it out of the process",
                    );
                    return;
                }
                AlreadyLoaded::InAnotherNamespace => {
                    s.message.push(
                        b" (in another link namespace: dlmopen), so the named file would be a \
                          second driver in the process: take that one out of the process, or \
                          name no driver",
                    );
                    return;
                }
            }
            s.message.len = before;
        }
        match setting.state {
            SettingState::Path(len) => match sys::open(&setting.bytes[..=len]) {
                Ok(h) => {
                    s.handle = h;
                    s.file = setting.tried.as_str();
                }
                Err(()) => {
                    let t = &mut s.tries[s.record(setting.tried.as_str())];
                    t.missing = sys::last_error(&setting.bytes[..len], &mut t.reason);
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
                for name in names.iter().take(MAX_ATTEMPTS) {
                    let mut z = [0u8; 64];
                    z[..name.len()].copy_from_slice(name.as_bytes());
                    match sys::open(&z[..=name.len()]) {
                        Ok(h) => {
                            s.handle = h;
                            s.file = name;
                            break;
                        }
                        Err(()) => {
                            let t = &mut s.tries[s.record(name)];
                            t.missing = sys::last_error(name.as_bytes(), &mut t.reason);
                        }
                    }
                }
            }
        }
        if s.handle != 0 {
            // Opened: the checks below may refuse it, with a reason of its own.
            let before = s.message.len;
            let by_soname = s.file == "libcuda.so.1";
            match self.api {
                Api::Driver => Self::open_driver(s, by_soname),
                Api::Runtime => Self::open_runtime(s),
            }
            if s.handle != 0 {
                return;
            }
            let t = &mut s.tries[s.record(s.file)];
            t.opened = true;
            t.reason.push(&s.message.bytes[before..s.message.len]);
            s.message.len = before;
        }
        if s.tries_count > 0 {
            s.explain(var, setting.state);
        }
    }

    /// `by_soname`: opened as `libcuda.so.1` itself.
    pub(super) fn open_driver(s: &mut LibraryState, by_soname: bool) {
        if !by_soname {
            // One driver per process: the runtime's own
            // dlopen("libcuda.so.1") finds this one only by its SONAME.
            let message = &mut s.message;
            let refused = sys::with_soname(s.handle, |name| {
                match name {
                    Soname::Name(b"libcuda.so.1") | Soname::Unknown => return false,
                    Soname::Name(other) => {
                        message.push(b"the library's SONAME is ");
                        message.push_lossy(other);
                    }
                    Soname::None => message.push(b"the library has no SONAME"),
                    Soname::Malformed(why) => {
                        message.push(b"the library's dynamic section cannot be read (");
                        message.push(why.as_bytes());
                        message.push(b"), so its SONAME is not known to be libcuda.so.1");
                        return true;
                    }
                }
                message.push(b", not libcuda.so.1");
                true
            });
            if refused {
                s.message.push(
                    b": the runtime's own dlopen(\"libcuda.so.1\") would load a second driver, \
                      so it is not used (name NVIDIA's libcuda.so.<version>, whose SONAME is \
                      libcuda.so.1)",
                );
                // Left open (its code has run), but unused.
                s.handle = 0;
                return;
            }
        }
        if let Some(p) = sys::symbol(s.handle, b"cuGetProcAddress_v2\0") {
            s.get_proc = p;
            s.get_proc_v2 = true;
        } else if let Some(p) = sys::symbol(s.handle, b"cuGetProcAddress\0") {
            s.get_proc = p;
        } else {
            // Not a CUDA driver: report it as a library that did not load.
            // Left open, as every refused library: its code has run (a
            // constructor may have installed a signal handler, started a
            // thread, registered an atexit handler), and unloading it
            // would leave those pointing at unmapped code.
            s.message
                .push(b"the library exports neither cuGetProcAddress_v2 nor cuGetProcAddress");
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
            // The pointer cuGetProcAddress gave (`ask`), as it gave it.
            let f = f.cast_const();
            // SAFETY: PFN_cuDriverGetVersion_v2020, asked as such.
            let r = unsafe { core::mem::transmute::<*const c_void, GetVersion>(f)(&mut v) };
            stub |= r == CUDA_ERROR_STUB_LIBRARY.0 as c_int;
            if r == CUDA_SUCCESS.0 as c_int && v > 0 {
                s.version = v as u32;
            }
        } else if !stub {
            // Not found by cuGetProcAddress: the exported symbol tells a
            // stub whose cuGetProcAddress answers otherwise.
            if let Some(g) = sys::symbol(s.handle, b"cuDriverGetVersion\0") {
                // SAFETY: cuDriverGetVersion(int *), as cuda.h declares it.
                let r = unsafe { core::mem::transmute::<*const c_void, GetVersion>(g)(&mut v) };
                stub = r == CUDA_ERROR_STUB_LIBRARY.0 as c_int;
                // Its answer is the driver's version as well (the exported
                // symbol is the v2020 ABI cuGetProcAddress would give).
                if r == CUDA_SUCCESS.0 as c_int && v > 0 {
                    s.version = v as u32;
                }
            }
        }
        if stub {
            // NVIDIA's stub libcuda (the toolkit's stubs/ folder) answers
            // every call CUDA_ERROR_STUB_LIBRARY: reported as a linked
            // build reports it, every driver call 34.
            s.message.push(b"the library is NVIDIA's stub libcuda, ");
            let before = s.message.len;
            sys::path(s.handle, &mut s.message);
            if s.message.len == before {
                s.message.push(s.file.as_bytes());
            }
            s.message.push(
                b" (the toolkit's stubs/ folder, for linking only): every driver call returns \
                  CUDA_ERROR_STUB_LIBRARY (34); install the NVIDIA driver, or take that \
                  stubs folder off the library path",
            );
            s.stub = true;
            // Left open (its code has run), but unused.
            s.handle = 0;
        }
    }

    pub(super) fn open_runtime(s: &mut LibraryState) {
        let mut v: c_int = 0;
        let r = match sys::symbol(s.handle, b"cudaRuntimeGetVersion\0") {
            // SAFETY: cudaRuntimeGetVersion(int *); it initialises nothing.
            Some(f) => unsafe { core::mem::transmute::<*const c_void, GetVersion>(f)(&mut v) },
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
    /// Records a file tried; its index in `tries` (where its reason is
    /// then written).
    fn record(&mut self, file: &'static str) -> usize {
        let i = self.tries_count.min(MAX_ATTEMPTS - 1);
        self.tries_count = i + 1;
        self.tries[i].file = file;
        i
    }

    /// The message of a load that tried files and loaded none (after what
    /// `message` says already): the most telling reason first (a file that
    /// exists and failed, before "no such file"), then the others, each
    /// with its file.
    fn explain(&mut self, var: &str, state: SettingState) {
        let tries = &self.tries[..self.tries_count];
        let lead = tries.iter().position(|t| !t.missing).unwrap_or(0);
        let m = &mut self.message;
        let order = core::iter::once(lead).chain((0..tries.len()).filter(|&i| i != lead));
        for (n, i) in order.enumerate() {
            let t = &tries[i];
            if n > 0 {
                m.push(b"; ");
            }
            let reason = t.reason.as_str();
            if matches!(state, SettingState::Path(_)) {
                // `tried` is the path: the variable is named instead.
                if !t.opened {
                    m.push(var.as_bytes());
                    m.push(b" names no loadable library: ");
                }
            } else if !reason
                .strip_prefix(t.file)
                .is_some_and(|r| r.starts_with(':'))
            {
                m.push(t.file.as_bytes());
                m.push(b": ");
            }
            m.push(reason.as_bytes());
        }
    }

    /// The slot value for `entry`: its address, or why there is none.
    pub(super) fn lookup(&self, entry: &Entry) -> *mut c_void {
        self.ask(entry).1
    }

    /// The slot value for `entry`, and `cuGetProcAddress`'s result
    /// (`CUDA_SUCCESS` where it was not asked).
    pub(super) fn ask(&self, entry: &Entry) -> (CUresult, *mut c_void) {
        if entry.version == 0 || self.get_proc.is_null() {
            let v = sys::symbol(self.handle, entry.symbol).map_or(NOT_FOUND, |p| p.cast_mut());
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
                core::mem::transmute::<*const c_void, GetProcAddressV2>(self.get_proc)(
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
                core::mem::transmute::<*const c_void, GetProcAddressV1>(self.get_proc)(
                    name, &mut p, version, PROC_FLAGS,
                )
            }
        };
        // The address compared, the pointer itself kept (never an integer).
        let v = if r == CUDA_SUCCESS && p as usize >= LOWEST_ADDRESS {
            p
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
