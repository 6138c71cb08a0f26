//! The system calls on Windows: `LoadLibraryExW`, the environment as UTF-16,
//! threads.

use super::slot_state::LOWEST_ADDRESS;
use super::text::Text;
use super::{AlreadyLoaded, Soname};
use core::ffi::{c_char, c_void};
pub use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

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
    fn GetLastError() -> u32;
    fn GetEnvironmentVariableW(name: *const u16, buf: *mut u16, size: u32) -> u32;
    fn GetCurrentThreadId() -> u32;
    fn GetModuleFileNameW(module: *mut c_void, name: *mut u16, size: u32) -> u32;
    fn SwitchToThread() -> i32;
    fn Sleep(milliseconds: u32);
    fn TlsAlloc() -> u32;
    fn TlsGetValue(index: u32) -> *mut c_void;
    fn TlsSetValue(index: u32, value: *mut c_void) -> i32;
}

/// No setuid programs on Windows.
pub fn secure() -> bool {
    false
}

/// The thread's id, whole: Windows' thread ids are 32-bit (`DWORD`), unique
/// among the threads that run, and never 0 for a user thread (0 is the idle
/// process's), so it is never the "not run" state of a `Once`.
pub fn thread_id() -> u32 {
    // SAFETY: no arguments.
    unsafe { GetCurrentThreadId() }
}

/// No thread token is kept on Windows: re-entrancy is told by the thread
/// id (`once.rs`).
pub fn thread_token() -> usize {
    0
}

/// The thread-local index keeping each thread's lookup depth, plus 1; 0:
/// not made yet; `usize::MAX`: refused.
static DEPTH_INDEX: AtomicUsize = AtomicUsize::new(0);

fn depth_index() -> Option<u32> {
    const TLS_OUT_OF_INDEXES: u32 = u32::MAX;
    match DEPTH_INDEX.load(Ordering::Acquire) {
        usize::MAX => None,
        0 => {
            // SAFETY: no arguments. An index made twice by racing threads
            // is a small leak, never a wrong value: the first one is kept.
            let i = unsafe { TlsAlloc() };
            let made = if i == TLS_OUT_OF_INDEXES {
                usize::MAX
            } else {
                i as usize + 1
            };
            let _ = DEPTH_INDEX.compare_exchange(0, made, Ordering::AcqRel, Ordering::Acquire);
            depth_index()
        }
        i => Some((i - 1) as u32),
    }
}

/// How many lookups of a loaded library's functions this thread is inside;
/// `None` where no thread-local index can be had (`slots.rs` keeps it then).
pub fn lookup_depth() -> Option<usize> {
    // SAFETY: a live index; the value is a number, never dereferenced.
    depth_index().map(|i| unsafe { TlsGetValue(i) as usize })
}

/// Sets this thread's [`lookup_depth`]; `false` where it cannot be kept.
pub fn set_lookup_depth(depth: usize) -> bool {
    match depth_index() {
        // SAFETY: a live index; the value is a number, never dereferenced.
        Some(i) => unsafe { TlsSetValue(i, depth as *mut c_void) != 0 },
        None => false,
    }
}

/// Not asked on Windows (no `fork`; a thread is not asked by its id):
/// assumed to exist.
pub fn thread_exists(_id: u32) -> bool {
    true
}

/// A moment of a busy wait.
pub fn spin() {
    core::hint::spin_loop();
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
    let n = unsafe { GetEnvironmentVariableW(name.as_ptr(), wide.as_mut_ptr(), wide.len() as u32) }
        as usize;
    // 0: unset or empty; n >= len: the size it would need, with the NUL.
    if n == 0 {
        return Ok(None);
    }
    if n >= wide.len() {
        return Err(utf8_len_of_long_value(&name));
    }
    match wtf8_encode(&wide[..n], buf) {
        Some(len) if len < buf.len() => {
            buf[len] = 0;
            Ok(Some(len))
        }
        // Too long as UTF-8: its length in bytes, as the limit counts.
        _ => Err(super::text::utf8_len_of_utf16(&wide[..n])),
    }
}

/// The length in UTF-8 bytes (the limit's unit, not UTF-16's) of the
/// variable `name` (NUL-terminated UTF-16), whose value is more than 4,095
/// UTF-16 units long: read whole into room for any value (Windows keeps at
/// most 32,767 units), on this rare path only.
#[inline(never)]
fn utf8_len_of_long_value(name: &[u16]) -> usize {
    let mut wide = [0u16; 32768];
    // SAFETY: a NUL-terminated name and a buffer of the size given.
    let n = unsafe { GetEnvironmentVariableW(name.as_ptr(), wide.as_mut_ptr(), wide.len() as u32) }
        as usize;
    match n {
        // Changed meanwhile, or longer than Windows allows: at least as
        // many bytes as units.
        0 => 4096,
        n if n >= wide.len() => n - 1,
        n => super::text::utf8_len_of_utf16(&wide[..n]),
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

/// Not asked on Windows: a named file is opened as given.
pub fn not_a_regular_file(_path: &[u8]) -> Option<&'static str> {
    None
}

/// Not asked on Windows, where the runtime loads `nvcuda.dll` from
/// `System32` by its name, whatever module of another name is loaded.
pub fn another_already_loaded(_soname: &[u8], _file: &[u8], _out: &mut Text) -> AlreadyLoaded {
    AlreadyLoaded::No
}

/// The symbol `name` (NUL-terminated) of the module `handle`: a pointer as
/// `GetProcAddress` gives it, where it is at least `LOWEST_ADDRESS`.
pub fn symbol(handle: usize, name: &[u8]) -> Option<*const c_void> {
    // SAFETY: a live module and a NUL-terminated name.
    let p = unsafe { GetProcAddress(handle as *mut _, name.as_ptr().cast()) };
    (p as usize >= LOWEST_ADDRESS).then_some(p.cast_const())
}

/// No `SONAME` on Windows.
pub fn with_soname<R>(_: usize, f: impl FnOnce(Soname<'_>) -> R) -> R {
    f(Soname::Unknown)
}

/// The file the module `handle` was loaded from (`GetModuleFileNameW`),
/// pushed to `out`; nothing where it cannot be asked.
pub fn path(handle: usize, out: &mut Text) {
    let mut wide = [0u16; 4096];
    // SAFETY: a live module and a buffer of the size given.
    let n = unsafe { GetModuleFileNameW(handle as *mut _, wide.as_mut_ptr(), wide.len() as u32) }
        as usize;
    let mut bytes = [0u8; 3 * 4096];
    if n > 0 && n < wide.len() {
        if let Some(len) = wtf8_encode(&wide[..n], &mut bytes) {
            out.push_lossy(&bytes[..len]);
        }
    }
}

/// Pushes the failed `LoadLibraryExW`'s error to `out`; whether it says
/// that no file was found (`ERROR_FILE_NOT_FOUND`, 2;
/// `ERROR_MOD_NOT_FOUND`, 126, which Windows also gives for a missing
/// dependency: not told apart here, where one name is tried).
pub fn last_error(_name: &[u8], out: &mut Text) -> bool {
    // SAFETY: no arguments.
    let code = unsafe { GetLastError() };
    out.push(b"LoadLibraryExW failed with Windows error ");
    out.push_number(u64::from(code));
    code == 2 || code == 126
}
