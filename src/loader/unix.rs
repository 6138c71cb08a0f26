//! The system calls on Unix: `dlopen`, the environment, threads, forks.

#[cfg(target_os = "linux")]
use super::elf;
use super::once::ForkWatch;
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
/// (state `Z`) until the process ends; `/proc`'s ids are mapped to this
/// PID namespace's where they differ ([`task_state`]). Where `/proc` cannot
/// be read (not mounted), `tgkill`'s answer stands. Elsewhere no thread can be asked by
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

/// The state letter of this process's thread `id` (this PID namespace's
/// id, as `gettid` gives it), from `/proc`; `None` where it cannot be read.
///
/// `/proc` numbers threads in the PID namespace of the process that
/// mounted it, which need not be this process's: under `unshare --pid
/// --fork` without `--mount-proc` (as some sandboxes run) it is the host's,
/// and `/proc/self/task/<gettid()>` is missing, or another thread's. So
/// `/proc/self/stat`'s pid is compared with `getpid()` first: equal, `/proc`
/// is this namespace's and the thread is read by its id; otherwise the
/// thread whose `NSpid` (its ids from `/proc`'s namespace down to this
/// process's, in `/proc/self/task/<id>/status`) ends with `id` is found and
/// read.
#[cfg(target_os = "linux")]
fn task_state(id: u32) -> Option<u8> {
    let mut buf = [0u8; 512];
    let own = read_proc(&[b"/proc/self/stat"], &mut buf)?;
    // SAFETY: no preconditions.
    let pid = unsafe { libc::getpid() };
    if leading_number(own) != u32::try_from(pid).ok() {
        return foreign_task_state(id);
    }
    let mut digits = [0u8; 20];
    let digits = super::text::decimal(u64::from(id), &mut digits);
    let stat = read_proc(&[b"/proc/self/task/", digits, b"/stat"], &mut buf)?;
    stat_state(stat)
}

/// The last thread [`foreign_task_state`] found: its id in this namespace
/// (high half) and in `/proc`'s (low half); 0: none.
#[cfg(target_os = "linux")]
static FOREIGN_TASK: AtomicU64 = AtomicU64::new(0);

/// The state of this process's thread `id` (this namespace's id) where
/// `/proc` numbers threads in another PID namespace: the task of
/// `/proc/self/task` whose `NSpid` ends with `id`, its state read from the
/// same `status` file. The task found is kept, and checked again by its
/// `NSpid` at each later ask (a waiter asks every millisecond): the folder
/// is listed again only where it no longer matches. Listed with
/// `getdents64` into a buffer of its own (no `opendir`, which allocates).
#[cfg(target_os = "linux")]
fn foreign_task_state(id: u32) -> Option<u8> {
    let kept = FOREIGN_TASK.load(Ordering::Relaxed);
    if kept >> 32 == u64::from(id) && kept as u32 != 0 {
        if let Some(state) = task_status_state(kept as u32, id) {
            return Some(state);
        }
    }
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe {
        libc::open(
            c"/proc/self/task".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    let mut found = None;
    let mut buf = [0u8; 2048];
    'list: loop {
        // SAFETY: a directory descriptor and a buffer of the size given.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) };
        let Some(entries) = usize::try_from(n)
            .ok()
            .filter(|&n| n > 0)
            .and_then(|n| buf.get(..n))
        else {
            break;
        };
        for name in dirent_names(entries) {
            let Some(task) = leading_number(name).filter(|_| name.iter().all(u8::is_ascii_digit))
            else {
                continue;
            };
            if let Some(state) = task_status_state(task, id) {
                FOREIGN_TASK.store(u64::from(id) << 32 | u64::from(task), Ordering::Relaxed);
                found = Some(state);
                break 'list;
            }
        }
    }
    // SAFETY: the descriptor opened above, used by nothing else.
    unsafe { libc::close(fd) };
    found
}

/// The names in a `getdents64` buffer (`struct linux_dirent64`: `d_ino`
/// 8 bytes, `d_off` 8, `d_reclen` 2, `d_type` 1, then the NUL-terminated
/// name), each record's length checked against the buffer.
#[cfg(target_os = "linux")]
fn dirent_names(entries: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut at = 0usize;
    core::iter::from_fn(move || {
        let head = entries.get(at..at.checked_add(19)?)?;
        let len = usize::from(u16::from_ne_bytes([head[16], head[17]]));
        let record = entries
            .get(at..at.checked_add(len)?)
            .filter(|_| len >= 19)?;
        at += len;
        let name = &record[19..];
        Some(&name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())])
    })
}

/// The state of `/proc`'s task `task` where its `NSpid` ends with `id`.
#[cfg(target_os = "linux")]
fn task_status_state(task: u32, id: u32) -> Option<u8> {
    let mut digits = [0u8; 20];
    let digits = super::text::decimal(u64::from(task), &mut digits);
    let mut buf = [0u8; 4096];
    let status = read_proc(&[b"/proc/self/task/", digits, b"/status"], &mut buf)?;
    (ns_tid(status) == Some(id)).then(|| status_state(status))?
}

/// The state letter of a `status` file's `State:` line (`State:\tZ (zombie)`).
#[cfg(target_os = "linux")]
fn status_state(status: &[u8]) -> Option<u8> {
    let line = status
        .split(|&b| b == b'\n')
        .find_map(|l| l.strip_prefix(b"State:"))?;
    line.iter().copied().find(|b| !b.is_ascii_whitespace())
}

/// The file at the path made of `parts` (at most 63 bytes), read into
/// `buf` (one `read`: `/proc`'s small files come whole); `None` where it
/// cannot be opened or read.
#[cfg(target_os = "linux")]
fn read_proc<'b>(parts: &[&[u8]], buf: &'b mut [u8]) -> Option<&'b [u8]> {
    let mut path = [0u8; 64];
    let mut len = 0;
    for part in parts {
        path.get_mut(len..len + part.len())?.copy_from_slice(part);
        len += part.len();
    }
    if len >= path.len() {
        return None;
    }
    // SAFETY: a NUL-terminated path (the array's rest is 0); the
    // descriptor is closed below.
    let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    // SAFETY: a buffer of the size given.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    // SAFETY: the descriptor opened above, used by nothing else.
    unsafe { libc::close(fd) };
    buf.get(..usize::try_from(n).ok()?)
}

/// The decimal number `text` starts with (a `stat` line's pid, a task's
/// folder name); `None` where it starts with no digit or it overflows.
#[cfg(target_os = "linux")]
fn leading_number(text: &[u8]) -> Option<u32> {
    let digits = text.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    text[..digits].iter().try_fold(0u32, |n, &d| {
        n.checked_mul(10)?.checked_add(u32::from(d - b'0'))
    })
}

/// The thread's id in this process's PID namespace, from its `status`: the
/// last number of the `NSpid:` line (its ids from `/proc`'s namespace down
/// to the innermost).
#[cfg(target_os = "linux")]
fn ns_tid(status: &[u8]) -> Option<u32> {
    let line = status
        .split(|&b| b == b'\n')
        .find_map(|l| l.strip_prefix(b"NSpid:"))?;
    let last = line
        .split(|b| b.is_ascii_whitespace())
        .rfind(|w| !w.is_empty())?;
    leading_number(last).filter(|_| last.iter().all(u8::is_ascii_digit))
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

/// Whether a library whose `SONAME` is `soname` (NUL-terminated:
/// `libcuda.so.1`) is already in the process and is another file than
/// `file` (NUL-terminated: what a variable names): its path, as the
/// dynamic loader opened it, is then pushed to `out`.
///
/// Nothing is searched for: `dlopen(soname, RTLD_NOLOAD)` searches the
/// library path where nothing by that name is loaded, opening each
/// candidate (a FIFO named `libcuda.so.1` there blocks it). What is loaded
/// is walked instead (`dl_iterate_phdr`), each object's `SONAME` read by
/// `elf/` within its mapped segments. The named file is the same file
/// where `dlopen(file, RTLD_NOLOAD)` gives the object found (the dynamic
/// loader tells a file by its device and inode, whatever the path): asked
/// only of a path (with a `/`: not searched for), which
/// [`not_a_regular_file`] found regular, so its open does not block; a bare
/// name is the object opened by that file name. The handles it gives are
/// kept (nothing the loader opens is closed).
///
/// Other link namespaces (`dlmopen`), which `dl_iterate_phdr` does not
/// list, are walked through glibc's `_r_debug_extended` (`r_next`, glibc
/// 2.35 on: `r_version` 2 or more), see [`in_another_namespace`].
#[cfg(target_os = "linux")]
pub fn another_already_loaded(soname: &[u8], file: &[u8], out: &mut Text) -> AlreadyLoaded {
    let want = &soname[..soname.len() - 1];
    let named = &file[..file.len() - 1];
    let same_bias = if named.contains(&b'/') {
        // SAFETY: NUL-terminated; RTLD_NOLOAD loads nothing (no code runs).
        let h = unsafe { libc::dlopen(file.as_ptr().cast(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        // SAFETY: the loader's link map of a library that stays loaded.
        (!h.is_null())
            .then(|| link_map(h as usize))
            .flatten()
            .map(|m| unsafe { (*m).l_addr })
    } else {
        None
    };
    struct Walk<'a> {
        want: &'a [u8],
        named: &'a [u8],
        same_bias: Option<usize>,
        out: &'a mut Text,
        found: bool,
    }
    impl Walk<'_> {
        /// Whether the object at `bias`, opened as `name`, is another file
        /// than the one named.
        fn not_same(&self, bias: usize, name: &[u8]) -> bool {
            if self.named.contains(&b'/') {
                self.same_bias != Some(bias)
            } else {
                let base = name.rsplit(|&b| b == b'/').next().unwrap_or(name);
                self.named != self.want && base != self.named
            }
        }
    }
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _: usize, data: *mut c_void) -> c_int {
        // SAFETY: `data` is the `Walk` below; `info` is the loader's
        // description of one object, valid during this call.
        let (walk, info) = unsafe { (&mut *data.cast::<Walk<'_>>(), &*info) };
        if info.dlpi_phdr.is_null() {
            return 0;
        }
        let bias = info.dlpi_addr as usize;
        // SAFETY: the loader's own description of an object it loaded,
        // during the call (see `soname_place`).
        let object =
            unsafe { elf::Object::new(&Process, bias, info.dlpi_phdr as usize, info.dlpi_phnum) };
        if !soname_is(&object, walk.want) {
            return 0;
        }
        let name: &[u8] = if info.dlpi_name.is_null() {
            b""
        } else {
            // SAFETY: the loader's NUL-terminated name of the object,
            // valid during the call; copied below.
            unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes()
        };
        if !walk.not_same(bias, name) {
            return 0;
        }
        if name.is_empty() {
            walk.out.push(walk.want);
        } else {
            walk.out.push_lossy(name);
        }
        walk.found = true;
        1
    }
    let mut walk = Walk {
        want,
        named,
        same_bias,
        out,
        found: false,
    };
    // SAFETY: `each` reads the loader's records during the call only;
    // `walk` outlives it.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut walk as *mut Walk<'_>).cast()) };
    if walk.found {
        return AlreadyLoaded::InThisNamespace;
    }
    if in_another_namespace(want, out) {
        return AlreadyLoaded::InAnotherNamespace;
    }
    AlreadyLoaded::No
}

#[cfg(not(target_os = "linux"))]
pub fn another_already_loaded(_soname: &[u8], _file: &[u8], _out: &mut Text) -> AlreadyLoaded {
    AlreadyLoaded::No
}

/// The head of glibc's `struct link_map` with its list's links (`<link.h>`).
#[cfg(target_os = "linux")]
#[repr(C)]
struct LinkMapEntry {
    l_addr: usize,
    l_name: *const c_char,
    l_ld: *const c_void,
    l_next: *const LinkMapEntry,
    l_prev: *const LinkMapEntry,
}

/// glibc's `struct r_debug_extended` (`<link.h>`, 2.35 on): `struct
/// r_debug` (`r_version` .. `r_ldbase`), then `r_next`, the next link
/// namespace's, read only where `r_version` is 2 or more.
#[cfg(target_os = "linux")]
#[repr(C)]
struct RDebugExtended {
    r_version: c_int,
    r_map: *const LinkMapEntry,
    r_brk: usize,
    r_state: c_int,
    r_ldbase: usize,
    r_next: *const RDebugExtended,
}

/// The most dynamic entries read of an object in another namespace.
#[cfg(target_os = "linux")]
const MAX_FOREIGN_ENTRIES: usize = 4096;

/// Whether an object whose `SONAME` is `want` is loaded in a link namespace
/// other than the default one (`dlmopen`); its path (`l_name`) is then
/// pushed to `out`.
///
/// glibc lists each namespace's objects from `_r_debug` (the default
/// namespace's `r_debug_extended`, found by `dlsym`) through `r_next`
/// (glibc 2.35 on, where `r_version` is 2 or more; before, or on musl,
/// there is no list: the rule is the default namespace's). The walk is made
/// inside a `dl_iterate_phdr` callback, which holds the lock glibc takes to
/// add an object to a namespace's list or take one off it, so the lists do
/// not change under it.
///
/// Such an object is known by its link map only (`l_addr`, `l_name`,
/// `l_ld`; its program headers are in glibc's private fields), so its
/// memory is not read directly: every read is a copy the kernel makes
/// ([`KernelCopy`]: an unmapped byte is `EFAULT`, never a fault). Its
/// dynamic section is read from `l_ld` to `DT_NULL` (at most 4096 entries),
/// and it is a `libcuda.so.1` where `DT_STRTAB` + `DT_SONAME`, relocated or
/// not, reads as that name and its NUL.
#[cfg(target_os = "linux")]
fn in_another_namespace(want: &[u8], out: &mut Text) -> bool {
    struct Walk<'a> {
        debug: *const RDebugExtended,
        want: &'a [u8],
        out: &'a mut Text,
        found: bool,
    }
    unsafe extern "C" fn each(_: *mut libc::dl_phdr_info, _: usize, data: *mut c_void) -> c_int {
        // SAFETY: `data` is the `Walk` below.
        let walk = unsafe { &mut *data.cast::<Walk<'_>>() };
        walk.found = foreign_soname(walk.debug, walk.want, walk.out);
        // Once: the lock is what this call was for.
        1
    }
    // Asked before the walk: dlsym takes the loader's other lock, which a
    // thread inside dlopen holds while it waits for the one the walk holds.
    // SAFETY: a NUL-terminated name; the pointer is not dereferenced here.
    let debug = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"_r_debug".as_ptr()) };
    if debug.is_null() {
        return false;
    }
    let mut walk = Walk {
        debug: debug.cast::<RDebugExtended>().cast_const(),
        want,
        out,
        found: false,
    };
    // SAFETY: `each` reads the loader's records during the call only;
    // `walk` outlives it.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut walk as *mut Walk<'_>).cast()) };
    walk.found
}

/// [`in_another_namespace`]'s walk from `debug` (`_r_debug`), under the
/// loader's lock: no `dl*` call is made here.
#[cfg(target_os = "linux")]
fn foreign_soname(debug: *const RDebugExtended, want: &[u8], out: &mut Text) -> bool {
    // SAFETY: the dynamic loader's own `_r_debug`, which lives as long as
    // the process; `r_next` is read only where `r_version` says the
    // structure is `r_debug_extended`.
    if unsafe { (*debug).r_version } < 2 {
        return false;
    }
    let Some(copy) = KernelCopy::new() else {
        return false;
    };
    // SAFETY: as above.
    let mut ns = unsafe { (*debug).r_next };
    // Bounded: a namespace list longer than glibc's DL_NNS (16) is not
    // glibc's.
    let mut namespaces = 0;
    while !ns.is_null() && namespaces < 64 {
        namespaces += 1;
        // SAFETY: a namespace's `r_debug_extended`, glibc's, under its lock.
        let mut map = unsafe { (*ns).r_map };
        let mut objects = 0usize;
        while !map.is_null() && objects < 1 << 20 {
            objects += 1;
            // SAFETY: one of glibc's link maps, under its lock.
            let m = unsafe { &*map };
            if foreign_is(m, want, &copy) {
                if m.l_name.is_null() {
                    out.push(want);
                } else {
                    // SAFETY: glibc's NUL-terminated name of the object.
                    let name = unsafe { CStr::from_ptr(m.l_name) }.to_bytes();
                    if name.is_empty() {
                        out.push(want);
                    } else {
                        out.push_lossy(name);
                    }
                }
                return true;
            }
            map = m.l_next;
        }
        // SAFETY: as above.
        ns = unsafe { (*ns).r_next };
    }
    false
}

/// Whether the object of link map `m` (another namespace's) has the
/// `SONAME` `want`, every byte read by `copy`.
#[cfg(target_os = "linux")]
fn foreign_is(m: &LinkMapEntry, want: &[u8], copy: &KernelCopy) -> bool {
    let ld = m.l_ld as usize;
    if ld == 0 || ld % elf::WORD != 0 {
        return false;
    }
    let (mut strtab, mut soname) = (None, None);
    let mut ended = false;
    for i in 0..MAX_FOREIGN_ENTRIES {
        let Some(at) = ld.checked_add(i * elf::DYN_SIZE) else {
            return false;
        };
        let mut b = [0u8; elf::DYN_SIZE];
        if !copy.copy(at, &mut b) {
            return false;
        }
        let mut tag = [0u8; elf::WORD];
        let mut value = [0u8; elf::WORD];
        tag.copy_from_slice(&b[..elf::WORD]);
        value.copy_from_slice(&b[elf::WORD..]);
        let value = usize::from_ne_bytes(value);
        match usize::from_ne_bytes(tag) {
            elf::DT_NULL => {
                ended = true;
                break;
            }
            elf::DT_STRTAB => strtab = Some(value),
            elf::DT_SONAME => soname = Some(value),
            _ => {}
        }
    }
    let (true, Some(strtab), Some(offset)) = (ended, strtab, soname) else {
        return false;
    };
    let mut name = [0u8; 64];
    let Some(name) = name.get_mut(..want.len() + 1) else {
        return false;
    };
    let relocated = strtab.checked_add(m.l_addr).filter(|_| m.l_addr != 0);
    [Some(strtab), relocated]
        .into_iter()
        .flatten()
        .any(|table| {
            table.checked_add(offset).is_some_and(|at| {
                copy.copy(at, name) && name[..want.len()] == *want && name[want.len()] == 0
            })
        })
}

/// Copies of memory the kernel makes, through a pipe: `write(2)` reads the
/// bytes and fails with `EFAULT` where one is not mapped readable, so
/// memory nothing vouches for is read without a fault.
#[cfg(target_os = "linux")]
struct KernelCopy {
    read: c_int,
    write: c_int,
}

#[cfg(target_os = "linux")]
impl KernelCopy {
    fn new() -> Option<KernelCopy> {
        let mut fds = [0 as c_int; 2];
        // SAFETY: two descriptors written; closed by `drop`.
        let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) };
        (r == 0).then_some(KernelCopy {
            read: fds[0],
            write: fds[1],
        })
    }

    /// Copies the `out.len()` bytes (at most 64) at `address` into `out`:
    /// `false` where any of them cannot be read.
    fn copy(&self, address: usize, out: &mut [u8]) -> bool {
        // SAFETY: the kernel reads the bytes (or fails: EFAULT); the
        // address is never dereferenced here.
        let n = unsafe { libc::write(self.write, address as *const c_void, out.len()) };
        let Ok(n) = usize::try_from(n) else {
            return false;
        };
        // SAFETY: into this call's own buffer, at most what was written
        // (a part written before a fault is taken out too).
        let m = unsafe { libc::read(self.read, out.as_mut_ptr().cast(), n) };
        n == out.len() && usize::try_from(m) == Ok(n)
    }
}

#[cfg(target_os = "linux")]
impl Drop for KernelCopy {
    fn drop(&mut self) {
        // SAFETY: the descriptors `new` made, used by nothing else.
        unsafe {
            libc::close(self.read);
            libc::close(self.write);
        }
    }
}

/// Whether `object`'s `SONAME`, read within its mapped segments, is
/// `want`; `false` where it has none or it cannot be read.
#[cfg(target_os = "linux")]
fn soname_is(object: &elf::Object<'_, Process>, want: &[u8]) -> bool {
    let Ok(Some(ld)) = object.dynamic_address() else {
        return false;
    };
    let Ok(Some(place)) = object.soname(ld) else {
        return false;
    };
    if place.len != want.len() {
        return false;
    }
    let mut name = [0u8; 64];
    let Some(name) = name.get_mut(..want.len()) else {
        return false;
    };
    // SAFETY: the reader checked that the name's bytes lie in one readable
    // segment of the object (`copy`'s contract).
    unsafe { elf::Memory::copy(&Process, place.address, name) };
    name == want
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
/// program headers, and `elf/` reads it within the mapped segments.
#[cfg(target_os = "linux")]
pub fn with_soname<R>(handle: usize, f: impl FnOnce(Soname<'_>) -> R) -> R {
    // Fail closed: a SONAME that cannot be read is not known to be
    // libcuda.so.1 (a driver's constructor can clear its own l_ld).
    let Some(map) = link_map(handle) else {
        return f(Soname::Malformed(
            "dlinfo(RTLD_DI_LINKMAP) gives no link map for it",
        ));
    };
    // SAFETY: the loader's link map of a library that stays loaded.
    let (bias, ld) = unsafe { ((*map).l_addr, (*map).l_ld) };
    if ld.is_null() {
        return f(Soname::Malformed(
            "its link map's l_ld is null: no dynamic section to read",
        ));
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
        assert!(set_lookup_depth(3));
        assert_eq!(lookup_depth(), Some(3));
        let other = std::thread::spawn(|| {
            let first = lookup_depth();
            set_lookup_depth(5);
            (first, lookup_depth())
        })
        .join()
        .unwrap();
        assert_eq!(other, (Some(0), Some(5)));
        assert_eq!(lookup_depth(), Some(3));
        set_lookup_depth(0);
    }

    #[test]
    fn a_threads_id_in_this_namespace_is_the_last_of_nspid() {
        let status = b"Name:\tx\nTgid:\t4242\nNSpid:\t4242\t1\nNSpgid:\t9\n";
        assert_eq!(ns_tid(status), Some(1));
        // One namespace: the one id.
        assert_eq!(ns_tid(b"NSpid:\t77\n"), Some(77));
        // Wrong twin: the first id (/proc's namespace) is not this one's.
        assert_ne!(ns_tid(status), Some(4242));
        assert_eq!(ns_tid(b"Name:\tx\n"), None);
        assert_eq!(ns_tid(b"NSpid:\t12x\n"), None);
        assert_eq!(leading_number(b"4242 (cat) R"), Some(4242));
        assert_eq!(leading_number(b"99999999999 (x)"), None);
        assert_eq!(leading_number(b"(x)"), None);
    }

    #[test]
    fn this_thread_is_found_by_its_nspid() {
        // /proc here is this namespace's: the listing finds the thread by
        // the id it already has, and keeps it for the next ask.
        let me = thread_id();
        assert!(matches!(foreign_task_state(me), Some(b'R' | b'S')));
        assert_eq!(
            FOREIGN_TASK.load(Ordering::Relaxed),
            u64::from(me) << 32 | u64::from(me)
        );
        assert!(matches!(foreign_task_state(me), Some(b'R' | b'S')));
        assert_eq!(foreign_task_state(u32::MAX), None);
        assert_eq!(status_state(b"Name:\tx\nState:\tZ (zombie)\n"), Some(b'Z'));
        assert_eq!(status_state(b"Name:\tx\n"), None);
    }

    #[test]
    fn directory_records_are_read_to_their_length() {
        let record = |name: &[u8], len: u16| {
            let mut r = alloc::vec![0u8; usize::from(len)];
            r[16..18].copy_from_slice(&len.to_ne_bytes());
            r[19..19 + name.len()].copy_from_slice(name);
            r
        };
        extern crate alloc;
        let mut buf = record(b"12", 24);
        buf.extend(record(b"345", 24));
        let names: alloc::vec::Vec<&[u8]> = dirent_names(&buf).collect();
        assert_eq!(names, [&b"12"[..], &b"345"[..]]);
        // A record claiming more than the buffer, or less than its head,
        // ends the listing.
        let mut bad = record(b"7", 24);
        bad[16..18].copy_from_slice(&200u16.to_ne_bytes());
        assert_eq!(dirent_names(&bad).count(), 0);
        bad[16..18].copy_from_slice(&0u16.to_ne_bytes());
        assert_eq!(dirent_names(&bad).count(), 0);
    }

    #[test]
    fn only_a_regular_file_or_a_link_to_one_is_opened() {
        extern crate std;
        use std::os::unix::ffi::OsStrExt;
        let dir = std::env::temp_dir().join(std::format!("cuda-mem-sys-kinds-{}", thread_id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let z = |p: &std::path::Path| {
            let mut v = p.as_os_str().as_bytes().to_vec();
            v.push(0);
            v
        };
        let file = dir.join("regular.so");
        std::fs::write(&file, b"x").unwrap();
        let link = dir.join("link.so");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let fifo = dir.join("fifo.so");
        let f = z(&fifo);
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(f.as_ptr().cast(), 0o600) }, 0);
        assert_eq!(not_a_regular_file(&z(&file)), None);
        assert_eq!(not_a_regular_file(&z(&link)), None);
        assert_eq!(not_a_regular_file(&f), Some("a FIFO (named pipe)"));
        assert_eq!(not_a_regular_file(&z(&dir)), Some("a directory"));
        assert_eq!(
            not_a_regular_file(b"/dev/null\0"),
            Some("a character device")
        );
        // Missing: dlopen says why; a bare name is searched for by the
        // dynamic loader, not stat'ed (".", a folder here, changes nothing).
        assert_eq!(not_a_regular_file(&z(&dir.join("missing.so"))), None);
        assert_eq!(not_a_regular_file(b".\0"), None);
        assert_eq!(not_a_regular_file(b"./\0"), Some("a directory"));
        assert_eq!(file_kind(libc::S_IFBLK), Some("a block device"));
        assert_eq!(file_kind(libc::S_IFSOCK), Some("a socket"));
        assert_eq!(file_kind(libc::S_IFREG | 0o644), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The kernel's copy: the bytes where mapped, `false` (no fault) where
    /// not.
    #[test]
    fn the_kernel_copies_mapped_bytes_and_refuses_unmapped_ones() {
        let copy = KernelCopy::new().unwrap();
        let bytes = *b"libcuda.so.1\0";
        let mut out = [0u8; 13];
        assert!(copy.copy(bytes.as_ptr() as usize, &mut out));
        assert_eq!(out, bytes);
        let mut out = [0u8; 16];
        assert!(!copy.copy(8, &mut out));
        assert!(!copy.copy(usize::MAX - 8, &mut out));
        // The pipe is left empty: the next copy reads its own bytes.
        let mut again = [0u8; 4];
        assert!(copy.copy(bytes.as_ptr() as usize, &mut again));
        assert_eq!(&again, b"libc");
    }

    /// An object of another namespace, known by its link map: its
    /// `SONAME` read through the kernel, relocated or not; the twins: another
    /// name, no `DT_NULL` within the bound, no `l_ld`.
    #[test]
    fn another_namespaces_object_is_told_by_its_soname() {
        extern crate alloc;
        let strings = b"\0libcuda.so.1\0libother.so.1\0";
        let table = strings.as_ptr() as usize;
        let section = |strtab: usize, soname: usize| {
            alloc::vec![
                elf::DT_STRTAB,
                strtab,
                elf::DT_SONAME,
                soname,
                elf::DT_NULL,
                0usize
            ]
        };
        let map = |ld: &[usize], bias: usize| LinkMapEntry {
            l_addr: bias,
            l_name: core::ptr::null(),
            l_ld: ld.as_ptr().cast(),
            l_next: core::ptr::null(),
            l_prev: core::ptr::null(),
        };
        let copy = KernelCopy::new().unwrap();
        let want = b"libcuda.so.1";
        let as_is = section(table, 1);
        assert!(foreign_is(&map(&as_is, 0), want, &copy));
        // Not relocated: DT_STRTAB an offset from the bias.
        let offset = section(0x100, 1);
        assert!(foreign_is(&map(&offset, table - 0x100), want, &copy));
        let other = section(table, 14);
        assert!(!foreign_is(&map(&other, 0), want, &copy));
        let mut endless = alloc::vec![0x7fff_ffffusize; 2 * MAX_FOREIGN_ENTRIES];
        endless[..4].copy_from_slice(&as_is[..4]);
        assert!(!foreign_is(&map(&endless, 0), want, &copy));
        let mut none = map(&as_is, 0);
        none.l_ld = core::ptr::null();
        assert!(!foreign_is(&none, want, &copy));
        // A name past the mapping: false, no fault.
        let far = section(usize::MAX - 64, 1);
        assert!(!foreign_is(&map(&far, 0), want, &copy));
    }

    #[test]
    fn this_thread_exists_and_runs() {
        let me = thread_id();
        assert!(matches!(task_state(me), Some(b'R' | b'S')));
        assert!(thread_exists(me));
    }
}
