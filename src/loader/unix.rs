//! The system calls on Unix: `dlopen`, the environment, threads, forks.

// The dynamic section's reading, pure (also compiled by elf-fuzz/).
#[cfg(target_os = "linux")]
#[path = "elf.rs"]
mod elf;

use super::once::ForkWatch;
use super::slot_state::LOWEST_ADDRESS;
use super::text::Text;
use super::Soname;
#[cfg(target_os = "linux")]
use core::ffi::c_char;
use core::ffi::{c_int, c_void, CStr};
// Under `--cfg cuda_mem_sys_valgrind` (never in a normal build) the same
// atomics, each operation told to valgrind's race detectors.
#[cfg(cuda_mem_sys_valgrind)]
pub use super::valgrind::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(cuda_mem_sys_valgrind))]
pub use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

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

/// Whether the thread `id` ([`thread_id`]) is one of this process's and
/// still runs. Linux: `tgkill(getpid(), id, 0)`, which sends nothing and
/// fails with `ESRCH` where the process has no such thread (it ended, or
/// this process is a child that has only the thread that made it); where
/// it succeeds, `/proc/self/task/<id>/stat` is asked for the thread's
/// state, since `tgkill` succeeds on a zombie too: the thread-group leader
/// (the main thread) that ended while other threads run stays a zombie
/// (state `Z`) until the process ends. Where `/proc` cannot be read (not
/// mounted), `tgkill`'s answer stands. Elsewhere no thread can be asked by
/// its id: assumed to exist.
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
        if r != 0 {
            return errno() != libc::ESRCH;
        }
        !matches!(task_state(id), Some(b'Z' | b'X' | b'x'))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = id;
        true
    }
}

/// The state letter of this process's thread `id`
/// (`/proc/self/task/<id>/stat`, the field after the command's closing
/// parenthesis); `None` where it cannot be read.
#[cfg(target_os = "linux")]
fn task_state(id: u32) -> Option<u8> {
    // "/proc/self/task/" + at most 10 digits + "/stat" + NUL.
    let mut path = [0u8; 40];
    let prefix = b"/proc/self/task/";
    path[..prefix.len()].copy_from_slice(prefix);
    let mut digits = [0u8; 20];
    let digits = super::text::decimal(u64::from(id), &mut digits);
    let end = prefix.len() + digits.len();
    path[prefix.len()..end].copy_from_slice(digits);
    path[end..end + 5].copy_from_slice(b"/stat");
    // SAFETY: a NUL-terminated path (the array's rest is 0); the
    // descriptor is closed below.
    let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    let mut buf = [0u8; 512];
    // SAFETY: a buffer of the size given.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    // SAFETY: the descriptor opened above, used by nothing else.
    unsafe { libc::close(fd) };
    let text = buf.get(..usize::try_from(n).ok()?)?;
    stat_state(text)
}

/// The state in a `stat` line: `<id> (<command>) <state> ...`; the command
/// may hold any byte, a `)` included, so the last `)` ends it.
#[cfg(target_os = "linux")]
fn stat_state(stat: &[u8]) -> Option<u8> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    match stat.get(close + 1..close + 3)? {
        [b' ', state] => Some(*state),
        _ => None,
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
/// them); 0 where no key can be kept (then nothing is bounded).
pub fn lookup_depth() -> usize {
    match key_in(&DEPTH_KEY) {
        // SAFETY: a live key; the value is a number, never dereferenced.
        Some(key) => unsafe { libc::pthread_getspecific(key) as usize },
        None => 0,
    }
}

/// Sets this thread's [`lookup_depth`].
pub fn set_lookup_depth(depth: usize) {
    if let Some(key) = key_in(&DEPTH_KEY) {
        // SAFETY: a live key; the value is a number, never dereferenced.
        unsafe { libc::pthread_setspecific(key, depth as *const libc::c_void) };
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

/// Whether a library answering to `soname` (NUL-terminated:
/// `libcuda.so.1`) is already in the process and is another file than
/// `file` (NUL-terminated: the path a variable names): its path, as the
/// dynamic loader opened it, is then pushed to `out`. Asked with
/// `RTLD_NOLOAD`, which loads nothing; the dynamic loader tells the same
/// file by its device and inode, whatever the path. The handles it gives
/// are kept (nothing the loader opens is closed).
pub fn another_already_loaded(soname: &[u8], file: &[u8], out: &mut Text) -> bool {
    // SAFETY: NUL-terminated; RTLD_NOLOAD loads nothing (no code runs).
    let loaded =
        unsafe { libc::dlopen(soname.as_ptr().cast(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    if loaded.is_null() {
        return false;
    }
    // SAFETY: as above.
    let same = unsafe { libc::dlopen(file.as_ptr().cast(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    if same == loaded {
        return false;
    }
    let before = out.len;
    path(loaded as usize, out);
    if out.len == before {
        out.push(&soname[..soname.len() - 1]);
    }
    true
}

/// The symbol `name` (NUL-terminated) of the library `handle`: a pointer as
/// `dlsym` gives it (a function pointer is made from it, never from an
/// integer), where it is at least `LOWEST_ADDRESS`.
pub fn symbol(handle: usize, name: &[u8]) -> Option<*const c_void> {
    // SAFETY: a live handle and a NUL-terminated name.
    let p = unsafe { libc::dlsym(handle as *mut c_void, name.as_ptr().cast()) };
    (p as usize >= LOWEST_ADDRESS).then_some(p.cast_const())
}

/// The `SONAME` of the library `handle`, given to `f` (borrowed for the
/// call only: the library stays loaded while its handle is held, and the
/// bytes are copied by `f` where they are kept). Read from the dynamic
/// section the dynamic loader mapped, not from the file, which may have
/// changed since it was opened: `dlinfo(RTLD_DI_LINKMAP)` gives the section's
/// address (`l_ld`) and the load bias, `dl_iterate_phdr` the object's
/// program headers, and `elf.rs` reads it within the mapped segments.
#[cfg(target_os = "linux")]
pub fn with_soname<R>(handle: usize, f: impl FnOnce(Soname<'_>) -> R) -> R {
    let Some(map) = link_map(handle) else {
        return f(Soname::Unknown);
    };
    // SAFETY: the loader's link map of a library that stays loaded.
    let (bias, ld) = unsafe { ((*map).l_addr, (*map).l_ld) };
    if ld.is_null() {
        return f(Soname::Unknown);
    }
    match soname_place(bias, ld as usize) {
        Err(why) => f(Soname::Malformed(why.text())),
        Ok(None) => f(Soname::None),
        Ok(Some(place)) => {
            // SAFETY: the reader checked that `place`'s bytes lie in one
            // readable PT_LOAD segment of the library (bytes: no alignment),
            // mapped while its handle is held; its address comes from the
            // loader's own records (exposed provenance).
            let name =
                unsafe { core::slice::from_raw_parts(place.address as *const u8, place.len) };
            f(Soname::Name(name))
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub fn with_soname<R>(_: usize, f: impl FnOnce(Soname<'_>) -> R) -> R {
    f(Soname::Unknown)
}

/// The head of glibc's and musl's `struct link_map` (`<link.h>`).
#[cfg(target_os = "linux")]
#[repr(C)]
struct LinkMap {
    l_addr: usize,
    l_name: *const c_char,
    l_ld: *const c_void,
}

/// `dlinfo(RTLD_DI_LINKMAP)`: the loader's record of `handle`.
#[cfg(target_os = "linux")]
fn link_map(handle: usize) -> Option<*const LinkMap> {
    const RTLD_DI_LINKMAP: c_int = 2;
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
    (r == 0 && !map.is_null()).then_some(map)
}

/// The path the dynamic loader opened `handle` from (its `link_map`'s
/// `l_name`), pushed to `out`; nothing where it cannot be asked.
pub fn path(handle: usize, out: &mut Text) {
    #[cfg(target_os = "linux")]
    if let Some(map) = link_map(handle) {
        // SAFETY: the loader's link map of a library that stays loaded.
        let name = unsafe { (*map).l_name };
        if !name.is_null() {
            // SAFETY: l_name is NUL-terminated, kept while it is loaded;
            // copied at once.
            out.push_lossy(unsafe { CStr::from_ptr(name) }.to_bytes());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (handle, out);
}

/// The process's own memory, read by copying (no alignment assumed).
#[cfg(target_os = "linux")]
struct Process;

#[cfg(target_os = "linux")]
impl elf::Memory for Process {
    unsafe fn copy(&self, address: usize, out: &mut [u8]) {
        // SAFETY: the reader asks only for bytes within the object's program
        // header table or one of its readable PT_LOAD segments (`copy`'s
        // contract), which the dynamic loader mapped; bytes have no
        // alignment, and `out` is this call's own buffer.
        unsafe {
            core::ptr::copy_nonoverlapping(address as *const u8, out.as_mut_ptr(), out.len())
        };
    }
}

/// Where the `SONAME` of the object whose load bias is `bias` and whose
/// dynamic section is mapped at `ld` lies (`elf::Object::soname`), or why it
/// cannot be read: the object is the one `dl_iterate_phdr` lists with that
/// bias and a `PT_DYNAMIC` at `ld`.
#[cfg(target_os = "linux")]
fn soname_place(bias: usize, ld: usize) -> Result<Option<elf::Place>, elf::Malformed> {
    struct Search {
        bias: usize,
        ld: usize,
        found: Option<Result<Option<elf::Place>, elf::Malformed>>,
    }
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _: usize, data: *mut c_void) -> c_int {
        // SAFETY: `data` is the `Search` below; `info` is the loader's
        // description of one object, valid during this call.
        let (search, info) = unsafe { (&mut *data.cast::<Search>(), &*info) };
        if info.dlpi_addr as usize != search.bias || info.dlpi_phdr.is_null() {
            return 0;
        }
        // SAFETY: the loader's own description of an object it loaded,
        // during the call: `dlpi_phnum` headers at `dlpi_phdr`, and each
        // readable PT_LOAD segment mapped at `dlpi_addr + p_vaddr`.
        let object = unsafe {
            elf::Object::new(
                &Process,
                search.bias,
                info.dlpi_phdr as usize,
                info.dlpi_phnum,
            )
        };
        match object.dynamic_at(search.ld) {
            Ok(None) => 0,
            Ok(Some(_)) => {
                search.found = Some(object.soname(search.ld));
                1
            }
            Err(why) => {
                search.found = Some(Err(why));
                1
            }
        }
    }
    let mut search = Search {
        bias,
        ld,
        found: None,
    };
    // SAFETY: `each` reads the loader's records during the call only;
    // `search` outlives it.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut search as *mut Search).cast()) };
    search.found.unwrap_or(Err(elf::Malformed::NoObject))
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
    //! in `elf.rs`'s tests, over byte images).

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
mod thread_tests {
    //! A thread's state as `/proc` says it: the zombie leader `tgkill`
    //! cannot tell from a live thread.

    use super::*;

    #[test]
    fn the_state_follows_the_last_parenthesis() {
        assert_eq!(stat_state(b"12 (cat) Z 1 12 12 0"), Some(b'Z'));
        // A command holding ") R": the last parenthesis ends it.
        assert_eq!(stat_state(b"12 (a) R (b) Z 1 12"), Some(b'Z'));
        assert_eq!(stat_state(b"12 (cat) S 1 12"), Some(b'S'));
        assert_eq!(stat_state(b"12 (cat"), None);
        assert_eq!(stat_state(b"12 (cat)"), None);
    }

    /// Each thread's token is its own and stays the same; the wrong twin of
    /// a token that is not kept (0, or a new one each call) fails.
    #[test]
    fn a_threads_token_is_its_own_and_stays() {
        extern crate std;
        let a = thread_token();
        assert_ne!(a, 0, "no token kept");
        assert_eq!(thread_token(), a);
        let (b, again) = std::thread::spawn(|| (thread_token(), thread_token()))
            .join()
            .unwrap();
        assert_ne!(b, 0);
        assert_eq!(again, b, "another thread's token changed between calls");
        assert_ne!(b, a, "two threads share a token");
    }

    /// The lookup depth is kept per thread, from 0.
    #[test]
    fn the_lookup_depth_is_kept_per_thread() {
        extern crate std;
        set_lookup_depth(3);
        assert_eq!(lookup_depth(), 3);
        let other = std::thread::spawn(|| {
            let first = lookup_depth();
            set_lookup_depth(5);
            (first, lookup_depth())
        })
        .join()
        .unwrap();
        assert_eq!(other, (0, 5));
        assert_eq!(lookup_depth(), 3);
        set_lookup_depth(0);
    }

    #[test]
    fn this_thread_exists_and_runs() {
        let me = thread_id();
        assert!(matches!(task_state(me), Some(b'R' | b'S')));
        assert!(thread_exists(me));
    }
}
