//! The system calls on Unix: `dlopen`, the environment, threads, forks.

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
    let mut digits = [0u8; 10];
    let (mut i, mut n) = (digits.len(), id);
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let end = prefix.len() + digits.len() - i;
    path[prefix.len()..end].copy_from_slice(&digits[i..]);
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
/// section the dynamic loader mapped (`dlinfo(RTLD_DI_LINKMAP)`, the
/// object's segments from `dl_iterate_phdr`), not from the file, which may
/// have changed since it was opened.
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
    let Some(object) = object_at(bias, ld as usize) else {
        return f(Soname::Malformed(
            "no loaded object has this dynamic section (dl_iterate_phdr)",
        ));
    };
    // SAFETY: the PT_DYNAMIC segment the loader mapped, `entries` long.
    let dynamic = unsafe { core::slice::from_raw_parts(ld, object.entries) };
    match soname_place(dynamic, bias, &object.segments[..object.count]) {
        Err(why) => f(Soname::Malformed(why)),
        Ok(None) => f(Soname::None),
        Ok(Some(place)) => {
            // SAFETY: `place` lies in one readable PT_LOAD segment of the
            // library, mapped while its handle is held (checked by
            // `soname_place`); its address comes from the loader's own
            // records (exposed provenance).
            let table = unsafe {
                core::slice::from_raw_parts(place.start as *const u8, place.end - place.start)
            };
            match name_in(table) {
                Ok(name) => f(Soname::Name(name)),
                Err(why) => f(Soname::Malformed(why)),
            }
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
    l_ld: *const Dyn,
}

/// `ElfW(Dyn)`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Dyn {
    d_tag: isize,
    d_val: usize,
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

/// An address range `[start, end)`: a mapped segment, or a string table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Range {
    start: usize,
    end: usize,
}

impl Range {
    fn holds(&self, start: usize, len: usize) -> bool {
        start >= self.start && start.checked_add(len).is_some_and(|end| end <= self.end)
    }
}

/// The most `PT_LOAD` segments an object may have here (linkers make 2 to 5).
const MAX_SEGMENTS: usize = 16;

/// One loaded object as `dl_iterate_phdr` describes it.
#[derive(Clone, Copy)]
struct Object {
    /// Its readable `PT_LOAD` segments, as mapped (bias added).
    segments: [Range; MAX_SEGMENTS],
    count: usize,
    /// How many `Dyn` entries its `PT_DYNAMIC` segment holds.
    entries: usize,
}

/// The object whose load bias is `bias` and whose `PT_DYNAMIC` segment is
/// mapped at `ld`: its readable segments and the dynamic section's length.
#[cfg(target_os = "linux")]
fn object_at(bias: usize, ld: usize) -> Option<Object> {
    struct Search {
        bias: usize,
        ld: usize,
        found: Option<Object>,
    }
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _: usize, data: *mut c_void) -> c_int {
        // SAFETY: `data` is the `Search` below; `info` is the loader's
        // description of one object, valid during this call.
        let (search, info) = unsafe { (&mut *data.cast::<Search>(), &*info) };
        if info.dlpi_addr as usize != search.bias || info.dlpi_phdr.is_null() {
            return 0;
        }
        // SAFETY: `dlpi_phnum` program headers at `dlpi_phdr`.
        let headers =
            unsafe { core::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
        let mut object = Object {
            segments: [Range::default(); MAX_SEGMENTS],
            count: 0,
            entries: 0,
        };
        let mut dynamic = false;
        for h in headers {
            let start = search.bias.checked_add(h.p_vaddr as usize);
            let end = start.and_then(|s| s.checked_add(h.p_memsz as usize));
            let (Some(start), Some(end)) = (start, end) else {
                return 0;
            };
            if h.p_type == libc::PT_DYNAMIC && start == search.ld {
                dynamic = true;
                object.entries = (end - start) / core::mem::size_of::<Dyn>();
            } else if h.p_type == libc::PT_LOAD && h.p_flags & libc::PF_R != 0 {
                if object.count == MAX_SEGMENTS {
                    return 0;
                }
                object.segments[object.count] = Range { start, end };
                object.count += 1;
            }
        }
        if dynamic {
            search.found = Some(object);
            1
        } else {
            0
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
    search.found
}

const DT_NULL: isize = 0;
const DT_STRTAB: isize = 5;
const DT_STRSZ: isize = 10;
const DT_SONAME: isize = 14;

/// Where the `SONAME` is: its first byte to the string table's end
/// (`Ok(None)`: the object has no `DT_SONAME`), checked to lie in one of
/// `segments`; or why the section cannot be read. Every sum is checked: a
/// malformed entry is an error, never a panic or a read out of bounds.
///
/// Whether `DT_STRTAB` holds an address or an offset from the load bias is
/// not guessed from its size. glibc adds the bias to the `d_ptr` entries of
/// a dynamic section at load (`elf/get-dynamic-info.h`), but only where the
/// bias is not 0 and the section is writable: not where `PT_DYNAMIC` is
/// read-only (`l_ld_readonly`, glibc 2.35 on), nor on MIPS and RISC-V
/// (`DL_RO_DYN_SECTION`); musl never does. So the rule asks the mapping
/// instead, which is the same for every loader: the table is where one of
/// the two readings (the value as it is, the value plus the bias) lies
/// whole within a segment the object maps. The two readings are `bias`
/// apart; both lie in its segments only for an object mapped below its own
/// size, where the section cannot be told, and neither for a malformed one:
/// both are errors.
fn soname_place(
    dynamic: &[Dyn],
    bias: usize,
    segments: &[Range],
) -> Result<Option<Range>, &'static str> {
    let (mut strtab, mut strsz, mut soname) = (None, None, None);
    for e in dynamic {
        match e.d_tag {
            DT_NULL => break,
            DT_STRTAB => strtab = Some(e.d_val),
            DT_STRSZ => strsz = Some(e.d_val),
            DT_SONAME => soname = Some(e.d_val),
            _ => {}
        }
    }
    let Some(offset) = soname else {
        return Ok(None);
    };
    let (Some(strtab), Some(strsz)) = (strtab, strsz) else {
        return Err("DT_SONAME without DT_STRTAB and DT_STRSZ");
    };
    if offset >= strsz {
        return Err("DT_SONAME lies past the string table (DT_STRSZ)");
    }
    let mapped = |start: usize| segments.iter().any(|s| s.holds(start, strsz));
    let as_is = mapped(strtab);
    let plus_bias = bias != 0 && strtab.checked_add(bias).is_some_and(mapped);
    let table = match (as_is, plus_bias) {
        (true, false) => strtab,
        // Checked just above: the sum does not overflow.
        (false, true) => strtab.wrapping_add(bias),
        (true, true) => {
            return Err("DT_STRTAB reads as a mapped address both relocated and not");
        }
        (false, false) => return Err("DT_STRTAB lies outside the library's mapped segments"),
    };
    // In bounds: offset < strsz and the table lies whole in a segment.
    Ok(Some(Range {
        start: table + offset,
        end: table + strsz,
    }))
}

/// The NUL-terminated name at the start of `table` (its NUL not included).
fn name_in(table: &[u8]) -> Result<&[u8], &'static str> {
    match table.iter().position(|&b| b == 0) {
        Some(n) => Ok(&table[..n]),
        None => Err("DT_SONAME's string is not terminated within the string table"),
    }
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
    //! The dynamic-section walk over synthetic sections: each malformed
    //! case is an error (never a panic, even with `overflow-checks`), and
    //! each has a well-formed twin that is read.

    use super::*;

    const TEXT: Range = Range {
        start: 0x7000_0000,
        end: 0x7000_2000,
    };
    const BIAS: usize = 0x7000_0000;

    fn section(strtab: usize, strsz: usize, soname: usize) -> [Dyn; 4] {
        [
            Dyn {
                d_tag: DT_STRTAB,
                d_val: strtab,
            },
            Dyn {
                d_tag: DT_STRSZ,
                d_val: strsz,
            },
            Dyn {
                d_tag: DT_SONAME,
                d_val: soname,
            },
            Dyn {
                d_tag: DT_NULL,
                d_val: 0,
            },
        ]
    }

    fn place(start: usize, end: usize) -> Result<Option<Range>, &'static str> {
        Ok(Some(Range { start, end }))
    }

    #[test]
    fn a_relocated_strtab_is_read_as_it_is() {
        // glibc with a writable section: the address, bias included.
        let d = section(BIAS + 0x400, 0x100, 0x10);
        assert_eq!(
            soname_place(&d, BIAS, &[TEXT]),
            place(BIAS + 0x410, BIAS + 0x500)
        );
    }

    #[test]
    fn an_unrelocated_strtab_gets_the_bias() {
        // musl, or a read-only section: the value the linker wrote. The
        // wrong twin of the old rule (`strtab < base`) as well: an
        // unrelocated value is found by the mapping, not by its size.
        let d = section(0x400, 0x100, 0x10);
        assert_eq!(
            soname_place(&d, BIAS, &[TEXT]),
            place(BIAS + 0x410, BIAS + 0x500)
        );
    }

    #[test]
    fn a_strtab_near_the_top_of_memory_is_an_error_not_an_overflow() {
        // strtab + bias overflows: no panic, an error. Twin: in range.
        let d = section(usize::MAX - 8, 0x100, 0x10);
        assert!(soname_place(&d, BIAS, &[TEXT]).is_err());
        let d = section(usize::MAX - 8, 4, 1);
        assert!(soname_place(&d, BIAS, &[TEXT]).is_err());
        let top = Range {
            start: usize::MAX - 0x1000,
            end: usize::MAX,
        };
        let d = section(usize::MAX - 0x100, 0x80, 0x10);
        assert_eq!(
            soname_place(&d, 0, &[top]),
            place(usize::MAX - 0xf0, usize::MAX - 0x80)
        );
    }

    #[test]
    fn a_huge_strsz_is_an_error_not_an_overflow() {
        let d = section(BIAS + 0x400, usize::MAX, 0x10);
        assert!(soname_place(&d, BIAS, &[TEXT]).is_err());
        let d = section(BIAS + 0x400, 0x1c00, 0x10);
        assert!(soname_place(&d, BIAS, &[TEXT]).is_ok());
    }

    #[test]
    fn a_soname_past_the_table_is_an_error() {
        let d = section(BIAS + 0x400, 0x100, 0x100);
        assert!(soname_place(&d, BIAS, &[TEXT]).is_err());
        let d = section(BIAS + 0x400, 0x100, 0xff);
        assert_eq!(
            soname_place(&d, BIAS, &[TEXT]),
            place(BIAS + 0x4ff, BIAS + 0x500)
        );
    }

    #[test]
    fn a_table_outside_the_mapped_segments_is_an_error() {
        // Neither reading lies in a segment (the table runs past its end).
        let d = section(0x1f80, 0x100, 0x10);
        assert!(soname_place(&d, BIAS, &[TEXT]).is_err());
        let d = section(0x1f00, 0x100, 0x10);
        assert!(soname_place(&d, BIAS, &[TEXT]).is_ok());
    }

    #[test]
    fn a_table_both_readings_map_is_an_error() {
        // An object mapped below its own size: the two readings cannot be
        // told. Twin: the same object at a bias above its size.
        let low = Range {
            start: 0x1000,
            end: 0x9000,
        };
        let d = section(0x2000, 0x100, 0x10);
        assert!(soname_place(&d, 0x1000, &[low]).is_err());
        let high = Range {
            start: 0x10_0000,
            end: 0x10_8000,
        };
        assert_eq!(
            soname_place(&d, 0x10_0000, &[high]),
            place(0x10_2010, 0x10_2100)
        );
    }

    #[test]
    fn no_soname_is_none_and_a_soname_without_its_table_is_an_error() {
        let none = [Dyn {
            d_tag: DT_NULL,
            d_val: 0,
        }];
        assert_eq!(soname_place(&none, BIAS, &[TEXT]), Ok(None));
        let alone = [
            Dyn {
                d_tag: DT_SONAME,
                d_val: 1,
            },
            Dyn {
                d_tag: DT_NULL,
                d_val: 0,
            },
        ];
        assert!(soname_place(&alone, BIAS, &[TEXT]).is_err());
        // Entries after DT_NULL are not read.
        let mut after = section(0x400, 0x100, 0x10);
        after.rotate_right(1);
        assert_eq!(soname_place(&after, BIAS, &[TEXT]), Ok(None));
    }

    #[test]
    fn an_unterminated_name_is_an_error() {
        assert!(name_in(b"libcuda.so.1").is_err());
        assert_eq!(name_in(b"libcuda.so.1\0rest"), Ok(&b"libcuda.so.1"[..]));
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

    #[test]
    fn this_thread_exists_and_runs() {
        let me = thread_id();
        assert!(matches!(task_state(me), Some(b'R' | b'S')));
        assert!(thread_exists(me));
    }
}
