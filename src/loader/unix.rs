//! The system calls on Unix: `dlopen`, the environment, threads, forks.

use super::once::ForkWatch;
use super::text::Text;
use core::ffi::CStr;
pub use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

pub const DRIVER_NAMES: &[&str] = &["libcuda.so.1", "libcuda.so"];

pub fn runtime_names() -> &'static [&'static str] {
    match super::library::RUNTIME_MAJOR {
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

/// Bumped in the child of every `fork` (a `pthread_atfork` handler).
static FORKS: ForkWatch = ForkWatch::new();

extern "C" fn forked() {
    FORKS.forked();
}

/// Registers the fork handler (at program start on Linux, from the
/// crate's `.init_array` entry: before any other thread can call the
/// crate; elsewhere at the first use). Never waits for another thread's
/// registration.
pub fn watch_forks() {
    FORKS.watch(|| {
        // SAFETY: `forked` is an `extern "C" fn()` that lives as long as
        // the process (the crate is never unloaded while its code runs;
        // a dlclose'd library's handlers are removed by glibc).
        unsafe { libc::pthread_atfork(None, None, Some(forked)) == 0 }
    });
}

/// What tells this process from a child it forks: the fork generation,
/// which is new in every child, even one with its parent's process id
/// (PID 1 forking into a new PID namespace). A child made without fork
/// handlers (`clone(2)`, `_Fork()`), or forked before the handler was
/// registered, keeps its parent's: [`thread_exists`] tells it instead.
pub fn fork_generation() -> u32 {
    watch_forks();
    FORKS.generation()
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

/// Whether the thread `id` ([`thread_id`]) is one of this process's.
/// Linux: `tgkill(getpid(), id, 0)`, which sends nothing and fails with
/// `ESRCH` where the process has no such thread (it ended, or this process
/// is a child that has only the thread that made it). Elsewhere no thread
/// can be asked by its id: assumed to exist.
pub fn thread_exists(id: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: signal 0 is only checked, never sent.
        let r = unsafe {
            libc::syscall(
                libc::SYS_tgkill,
                libc::getpid(),
                id as libc::pid_t,
                0 as libc::c_int,
            )
        };
        r == 0 || errno() != libc::ESRCH
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = id;
        true
    }
}

#[cfg(target_os = "linux")]
fn errno() -> libc::c_int {
    // SAFETY: the calling thread's errno.
    unsafe { *libc::__errno_location() }
}

/// The `pthread_key_t` keeping each thread's token, plus 1; 0: not made
/// yet; `usize::MAX`: refused.
static TOKEN_KEY: AtomicUsize = AtomicUsize::new(0);
/// The next thread token.
static NEXT_TOKEN: AtomicUsize = AtomicUsize::new(1);

fn token_key() -> Option<libc::pthread_key_t> {
    match TOKEN_KEY.load(Ordering::Acquire) {
        usize::MAX => return None,
        0 => {}
        k => return Some((k - 1) as libc::pthread_key_t),
    }
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: a key without destructor (a token is a number, not memory).
    if unsafe { libc::pthread_key_create(&mut key, None) } != 0 {
        let _ = TOKEN_KEY.compare_exchange(0, usize::MAX, Ordering::AcqRel, Ordering::Acquire);
        return token_key();
    }
    match TOKEN_KEY.compare_exchange(0, key as usize + 1, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Some(key),
        Err(_) => {
            // Another thread made one first: this one is not needed.
            // SAFETY: a key this thread made, used by nothing.
            unsafe { libc::pthread_key_delete(key) };
            token_key()
        }
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

pub fn close(handle: usize) {
    // SAFETY: a handle from dlopen, used by nothing else yet.
    unsafe { libc::dlclose(handle as *mut _) };
}

pub fn symbol(handle: usize, name: &[u8]) -> Option<usize> {
    // SAFETY: a live handle and a NUL-terminated name.
    let p = unsafe { libc::dlsym(handle as *mut _, name.as_ptr().cast()) };
    (p as usize >= super::slots::LOWEST_ADDRESS).then_some(p as usize)
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
