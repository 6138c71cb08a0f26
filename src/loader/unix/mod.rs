//! The system calls on Unix: `dlopen`, the environment, threads, forks.

#[cfg(target_os = "linux")]
use super::elf;
use super::slot_state::LOWEST_ADDRESS;
use super::text::Text;
use super::{AlreadyLoaded, Soname};
#[cfg(target_os = "linux")]
use core::ffi::c_char;
use core::ffi::{c_int, c_void, CStr};
// Under `--cfg cuda_mem_sys_valgrind` (never in a normal build) the same
// atomics, each operation told to valgrind's race detectors.
#[cfg(cuda_mem_sys_valgrind)]
pub use super::valgrind::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(cuda_mem_sys_valgrind))]
pub use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

mod link_map;
mod tasks;
pub use link_map::{another_already_loaded, path, with_soname};
pub use tasks::thread_exists;

pub const DRIVER_NAMES: &[&str] = &["libcuda.so.1", "libcuda.so"];

/// The runtime's file names for the headers' major release.
pub fn runtime_names() -> &'static [&'static str] {
    runtime_names_of(super::RUNTIME_MAJOR)
}

/// The runtime's file names for a major release: its soname, or the
/// development link where no soname is known.
fn runtime_names_of(major: u32) -> &'static [&'static str] {
    match major {
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

/// Registers `child` to run in the child of every `fork`
/// (`pthread_atfork`); `false` where it is refused. The fork generation it
/// bumps is `once.rs`'s.
pub fn at_fork(child: extern "C" fn()) -> bool {
    // SAFETY: `child` is an `extern "C" fn()` that lives as long as the
    // process (the crate is never unloaded while its code runs; a
    // dlclose'd library's handlers are removed by glibc).
    unsafe { libc::pthread_atfork(None, None, Some(child)) == 0 }
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

/// The `pthread_key_t` keeping each thread's token, plus 1; 0: not made
/// yet; `usize::MAX`: refused.
static TOKEN_KEY: AtomicUsize = AtomicUsize::new(0);
/// The same for each thread's lookup depth ([`lookup_depth`]).
static DEPTH_KEY: AtomicUsize = AtomicUsize::new(0);
/// The next thread token.
static NEXT_TOKEN: AtomicUsize = AtomicUsize::new(1);

fn token_key() -> Option<libc::pthread_key_t> {
    key_in(&TOKEN_KEY)
}

/// The thread-specific key kept in `slot` (made on first use), where one
/// could be made.
fn key_in(slot: &AtomicUsize) -> Option<libc::pthread_key_t> {
    match slot.load(Ordering::Acquire) {
        usize::MAX => return None,
        0 => {}
        k => return Some((k - 1) as libc::pthread_key_t),
    }
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: a key without destructor (its values are numbers, not memory).
    if unsafe { libc::pthread_key_create(&mut key, None) } != 0 {
        let _ = slot.compare_exchange(0, usize::MAX, Ordering::AcqRel, Ordering::Acquire);
        return key_in(slot);
    }
    match slot.compare_exchange(0, key as usize + 1, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Some(key),
        Err(_) => {
            // Another thread made one first: this one is not needed.
            // SAFETY: a key this thread made, used by nothing.
            unsafe { libc::pthread_key_delete(key) };
            key_in(slot)
        }
    }
}

/// How many lookups of a loaded library's functions this thread is inside
/// (a driver whose `cuGetProcAddress` calls back into the crate nests
/// them); `None` where no key can be had (`slots.rs` keeps it then).
pub fn lookup_depth() -> Option<usize> {
    // SAFETY: a live key; the value is a number, never dereferenced.
    key_in(&DEPTH_KEY).map(|key| unsafe { libc::pthread_getspecific(key) as usize })
}

/// Sets this thread's [`lookup_depth`]; `false` where it cannot be kept.
pub fn set_lookup_depth(depth: usize) -> bool {
    match key_in(&DEPTH_KEY) {
        // SAFETY: a live key; the value is a number, never dereferenced.
        Some(key) => unsafe { libc::pthread_setspecific(key, depth as *const libc::c_void) == 0 },
        None => false,
    }
}

/// This thread's token: a number no other thread of the process has had
/// (unlike its id, which the kernel gives again once a thread ended); 0
/// where none can be kept (no thread-specific key left).
pub fn thread_token() -> usize {
    let Some(key) = token_key() else {
        return 0;
    };
    // SAFETY: a live key; the value is a number, never dereferenced.
    let t = unsafe { libc::pthread_getspecific(key) } as usize;
    if t != 0 {
        return t;
    }
    let t = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
    // SAFETY: as above.
    if unsafe { libc::pthread_setspecific(key, t as *const libc::c_void) } != 0 {
        return 0;
    }
    t
}

/// A moment of a busy wait.
pub fn spin() {
    core::hint::spin_loop();
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

/// What `path` (NUL-terminated) is where it is not a regular file (or a
/// link to one): a FIFO, a device, a directory, a socket. `open(2)` on a
/// FIFO with no writer, or on some devices, blocks: such a path is refused
/// before `dlopen` opens it. Asked with `stat`, which opens nothing and
/// follows links. `None` for a regular file, for a bare name (no `/`: the
/// dynamic loader searches its library path for it, as for the usual
/// names), and where `stat` fails (a missing file: `dlopen` then says why).
pub fn not_a_regular_file(path: &[u8]) -> Option<&'static str> {
    if !path.contains(&b'/') {
        return None;
    }
    // SAFETY: all zeros is a valid `stat`; `path` is NUL-terminated.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: as above; `st` is this call's own.
    if unsafe { libc::stat(path.as_ptr().cast(), &mut st) } != 0 {
        return None;
    }
    file_kind(st.st_mode)
}

/// A file's type, named, where it is not a regular file.
fn file_kind(mode: libc::mode_t) -> Option<&'static str> {
    match mode & libc::S_IFMT {
        libc::S_IFREG => None,
        libc::S_IFIFO => Some("a FIFO (named pipe)"),
        libc::S_IFCHR => Some("a character device"),
        libc::S_IFBLK => Some("a block device"),
        libc::S_IFDIR => Some("a directory"),
        libc::S_IFSOCK => Some("a socket"),
        _ => Some("not a regular file"),
    }
}

/// The symbol `name` (NUL-terminated) of the library `handle`: a pointer as
/// `dlsym` gives it (a function pointer is made from it, never from an
/// integer), where it is at least `LOWEST_ADDRESS`.
pub fn symbol(handle: usize, name: &[u8]) -> Option<*const c_void> {
    // SAFETY: a live handle and a NUL-terminated name.
    let p = unsafe { libc::dlsym(handle as *mut c_void, name.as_ptr().cast()) };
    (p as usize >= LOWEST_ADDRESS).then_some(p.cast_const())
}

/// Pushes `dlerror`'s text for the failed `dlopen(name)` to `out`; whether
/// it says only that no file by that name was found (glibc's
/// `"<name>: cannot open shared object file: No such file or directory"`,
/// musl's `"Error loading shared library <name>: No such file or
/// directory"`), the least telling reason: a file that exists and failed
/// (a missing `NEEDED` library, an invalid ELF header, a truncated file)
/// says more.
pub fn last_error(name: &[u8], out: &mut Text) -> bool {
    // SAFETY: dlerror's text is copied before any other dl* call.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        out.push(b"unknown dlopen error");
        return false;
    }
    // SAFETY: dlerror's text is NUL-terminated.
    let text = unsafe { CStr::from_ptr(e) }.to_bytes();
    out.push_lossy(text);
    not_found(name, text)
}

/// Whether `text` is the system's "no file by this name" for `name`.
fn not_found(name: &[u8], text: &[u8]) -> bool {
    const ENOENT: &[u8] = b"No such file or directory";
    let glibc = text
        .strip_prefix(name)
        .and_then(|t| t.strip_prefix(b": cannot open shared object file: "));
    let musl = text
        .strip_prefix(b"Error loading shared library ".as_slice())
        .and_then(|t| t.strip_prefix(name))
        .and_then(|t| t.strip_prefix(b": "));
    glibc == Some(ENOENT) || musl == Some(ENOENT)
}

#[cfg(test)]
mod tests {
    //! What `dlerror`'s texts say (the dynamic section's reading is tested
    //! in `elf/tests.rs`, over byte images).

    use super::*;

    #[test]
    fn each_major_release_loads_its_own_runtime_soname() {
        assert_eq!(runtime_names_of(12), ["libcudart.so.12"]);
        assert_eq!(runtime_names_of(13), ["libcudart.so.13"]);
        assert_eq!(runtime_names_of(14), ["libcudart.so.14"]);
        // A release the loader does not know: the development link.
        assert_eq!(runtime_names_of(15), ["libcudart.so"]);
        // The headers' own: the soname of their major release.
        let major = runtime_names()[0].strip_prefix("libcudart.so.");
        assert_eq!(
            major.and_then(|m| m.parse::<u32>().ok()),
            Some(crate::loader::RUNTIME_MAJOR)
        );
    }

    #[test]
    fn only_the_names_own_absence_is_not_found() {
        let name = b"libcuda.so.1";
        assert!(not_found(
            name,
            b"libcuda.so.1: cannot open shared object file: No such file or directory"
        ));
        assert!(not_found(
            name,
            b"Error loading shared library libcuda.so.1: No such file or directory"
        ));
        // A NEEDED library missing, said of another name: telling.
        assert!(!not_found(
            name,
            b"libabsent.so: cannot open shared object file: No such file or directory"
        ));
        assert!(!not_found(
            name,
            b"Error loading shared library libabsent.so: No such file or directory \
              (needed by /x/libcuda.so.1)"
        ));
        assert!(!not_found(name, b"/x/libcuda.so.1: invalid ELF header"));
    }
}

#[cfg(all(test, target_os = "linux"))]
mod thread_tests;
