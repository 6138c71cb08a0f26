//! `CUDA_MEM_SYS_LIBCUDA` and `CUDA_MEM_SYS_LIBCUDART`, read once (at
//! program start on Linux).

use super::once::{Once, Stuck};
use super::text::{Text, PATH_BUFFER};
use super::{sys, Api, Variable};
use core::cell::UnsafeCell;

/// One environment variable, as read.
pub(super) struct Setting {
    pub(super) bytes: [u8; PATH_BUFFER],
    pub(super) state: SettingState,
    /// What a load tries: the value (lossy where it is not UTF-8, whole), the
    /// variable's name where the value is too long, or the usual names.
    pub(super) tried: Text,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum SettingState {
    Unset,
    /// Its value is `bytes[..len]`, NUL-terminated.
    Path(usize),
    /// Set, with a value of this many bytes: more than `PATH_BUFFER - 1`.
    TooLong(usize),
    /// Set, in a secure process: not read.
    Ignored,
}

impl Setting {
    pub(super) const fn new() -> Setting {
        Setting {
            bytes: [0; PATH_BUFFER],
            state: SettingState::Unset,
            tried: Text::new(),
        }
    }

    pub(super) fn variable(&self) -> Variable {
        match self.state {
            SettingState::Unset => Variable::Unset,
            SettingState::Ignored => Variable::IgnoredInSecureProcess,
            SettingState::Path(_) | SettingState::TooLong(_) => Variable::Used,
        }
    }

    /// Reads `name` (NUL-terminated); `names`: the usual file names.
    pub(super) fn read(&mut self, name: &[u8], secure: bool, names: &[&str]) {
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
pub(super) struct EnvironmentState {
    secure: bool,
    pub(super) driver: Setting,
    pub(super) runtime: Setting,
}

impl EnvironmentState {
    pub(super) fn setting(&self, api: Api) -> &Setting {
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
///
/// Read before any library's load is claimed ([`super::library::Library`]),
/// so that a `getenv` calling back into the crate (an `LD_PRELOAD` shim)
/// is told [`Stuck::EnvironmentReentrant`] and leaves no load behind: the
/// call back gets 303, and a later call loads normally.
pub(super) fn environment() -> Result<&'static EnvironmentState, Stuck> {
    ENVIRONMENT
        .once
        .call(|| {
            // SAFETY: inside `once`: this thread alone writes.
            let e = unsafe { &mut *ENVIRONMENT.inner.get() };
            e.secure = sys::secure();
            e.driver
                .read(b"CUDA_MEM_SYS_LIBCUDA\0", e.secure, sys::DRIVER_NAMES);
            e.runtime
                .read(b"CUDA_MEM_SYS_LIBCUDART\0", e.secure, sys::runtime_names());
        })
        .map_err(|why| match why {
            Stuck::Reentrant => Stuck::EnvironmentReentrant,
            other => other,
        })?;
    // SAFETY: completed: written once, never again.
    Ok(unsafe { &*ENVIRONMENT.inner.get() })
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
        super::once::watch_forks();
        if let Ok(e) = environment() {
            if !cfg!(cuda_mem_sys_load_runtime) && matches!(e.driver.state, SettingState::Path(_)) {
                let _ = super::driver();
            }
        }
    }
    at_start
};
