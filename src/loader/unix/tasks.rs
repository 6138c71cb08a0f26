//! Whether a thread of this process still exists: `tgkill`, then its state
//! in `/proc` (the zombie leader `tgkill` still answers), its id mapped
//! through `NSpid` where `/proc` is another PID namespace's.

use super::*;

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
pub(super) fn task_state(id: u32) -> Option<u8> {
    let mut buf = [0u8; 512];
    let own = read_proc(&[b"/proc/self/stat"], &mut buf)?;
    // SAFETY: no preconditions.
    let pid = unsafe { libc::getpid() };
    if leading_number(own) != u32::try_from(pid).ok() {
        return foreign_task_state(id);
    }
    let mut digits = [0u8; 20];
    let digits = super::super::text::decimal(u64::from(id), &mut digits);
    let stat = read_proc(&[b"/proc/self/task/", digits, b"/stat"], &mut buf)?;
    stat_state(stat)
}

/// The last thread [`foreign_task_state`] found: its id in this namespace
/// (high half) and in `/proc`'s (low half); 0: none.
#[cfg(target_os = "linux")]
pub(super) static FOREIGN_TASK: AtomicU64 = AtomicU64::new(0);

/// The state of this process's thread `id` (this namespace's id) where
/// `/proc` numbers threads in another PID namespace: the task of
/// `/proc/self/task` whose `NSpid` ends with `id`, its state read from the
/// same `status` file. The task found is kept, and checked again by its
/// `NSpid` at each later ask (a waiter asks every millisecond): the folder
/// is listed again only where it no longer matches. Listed with
/// `getdents64` into a buffer of its own (no `opendir`, which allocates).
#[cfg(target_os = "linux")]
pub(super) fn foreign_task_state(id: u32) -> Option<u8> {
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
pub(super) fn dirent_names(entries: &[u8]) -> impl Iterator<Item = &[u8]> {
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
pub(super) fn task_status_state(task: u32, id: u32) -> Option<u8> {
    let mut digits = [0u8; 20];
    let digits = super::super::text::decimal(u64::from(task), &mut digits);
    let mut buf = [0u8; 4096];
    let status = read_proc(&[b"/proc/self/task/", digits, b"/status"], &mut buf)?;
    (ns_tid(status) == Some(id)).then(|| status_state(status))?
}

/// The state letter of a `status` file's `State:` line (`State:\tZ (zombie)`).
#[cfg(target_os = "linux")]
pub(super) fn status_state(status: &[u8]) -> Option<u8> {
    let line = status
        .split(|&b| b == b'\n')
        .find_map(|l| l.strip_prefix(b"State:"))?;
    line.iter().copied().find(|b| !b.is_ascii_whitespace())
}

/// The file at the path made of `parts` (at most 63 bytes), read into
/// `buf` (one `read`: `/proc`'s small files come whole); `None` where it
/// cannot be opened or read.
#[cfg(target_os = "linux")]
pub(super) fn read_proc<'b>(parts: &[&[u8]], buf: &'b mut [u8]) -> Option<&'b [u8]> {
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
pub(super) fn leading_number(text: &[u8]) -> Option<u32> {
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
pub(super) fn ns_tid(status: &[u8]) -> Option<u32> {
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
pub(super) fn stat_state(stat: &[u8]) -> Option<u8> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    match stat.get(close + 1..close + 3)? {
        [b' ', state] => Some(*state),
        _ => None,
    }
}

#[cfg(target_os = "linux")]
pub(super) fn errno() -> libc::c_int {
    // SAFETY: the calling thread's errno.
    unsafe { *libc::__errno_location() }
}
