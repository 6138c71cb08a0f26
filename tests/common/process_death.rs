//! Process death on the cross-process paths (VMM POSIX descriptors, pool
//! descriptors with exported pointers, external memory from a VMM descriptor).
//!
//! Three scenarios, each deterministic (a line over a Unix socket says the
//! child has mapped and read before anything is killed) and bounded in time
//! (every wait for a child has a timeout that fails the test):
//!
//! - **importer killed**: the test process exports, an importer child maps and
//!   reads, then gets SIGKILL; the test checks its own data, keeps allocating,
//!   releases, and measures that the memory comes back ([`spawn_importer`]).
//! - **exporter killed**: an exporter child exports, an importer child maps and
//!   reads, the exporter gets SIGKILL, the importer reads again and releases
//!   ([`exporter_killed`]).
//! - **descriptor after its sender died**: the exporter child sends its
//!   descriptor and gets SIGKILL before any import; a fresh importer child
//!   imports it ([`descriptor_after_sender_died`]).
//!
//! The importer and the exporter that may die are always children, so a
//! driver that misbehaves after a peer's death cannot spoil the test process
//! for the tests after it. Each test prints one line of figures,
//! `figure: <test> <key>=<value> ...`, for `docs/device-results.md`.
//!
//! Wire format: a descriptor (one byte with `SCM_RIGHTS`), then text lines.
//! Lines are read a byte at a time so that no read ever swallows the byte
//! that carries the next descriptor.
//!
//! The scenarios and their children (`peers.rs`: descriptors over a Unix
//! socket, SIGKILL) are Unix only; the figures, the free-memory probe and
//! the byte patterns here are used by other device tests too, on every target.

#[cfg(unix)]
mod peers;
#[cfg(unix)]
pub use peers::*;

use super::{check, Code, TestResult};
use cuda_mem_sys::*;
use libtest_mimic::Failed;
use std::time::{Duration, Instant};

/// The socket descriptor a test hands to its peer child.
pub const PEER_SOCK_VAR: &str = "CUDA_MEM_SYS_PEER_SOCKET";
/// How long the test waits for any answer of a child (compute-sanitizer
/// slows children down a lot; a healthy answer takes well under a second).
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(90);
/// How long the test waits for a child to exit once told to, or once killed.
pub const EXIT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long freed device memory may take to show up in `cuMemGetInfo`.
pub const FREE_TIMEOUT: Duration = Duration::from_secs(10);

/// `key=value` lines sent after a descriptor, ended by `end`.
#[derive(Clone, Debug, Default)]
pub struct Fields(pub Vec<(String, String)>);

impl Fields {
    pub fn push(&mut self, key: &str, value: impl ToString) {
        self.0.push((key.into(), value.to_string()));
    }
    pub fn get(&self, key: &str) -> Result<&str, Failed> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .ok_or_else(|| format!("no field {key} in {:?}", self.0).into())
    }
    pub fn number(&self, key: &str) -> Result<u64, Failed> {
        let v = self.get(key)?;
        v.parse()
            .map_err(|e| format!("field {key}={v}: {e}").into())
    }
}

/// Prints `figure: <test> key=value ...` (spaces inside values become `_`).
pub fn figure(test: &str, pairs: &[(&str, String)]) {
    let mut line = format!("figure: {test}");
    for (k, v) in pairs {
        line.push_str(&format!(" {k}={}", v.replace(' ', "_")));
    }
    println!("{line}");
}

/// A driver or runtime result as one word: `CUDA_SUCCESS`,
/// `CUDA_ERROR_INVALID_VALUE(1)`, `cudaErrorInvalidValue(1)`.
pub fn code<C: Code>(r: C) -> String {
    if r == C::SUCCESS {
        return C::SUCCESS_NAME.into();
    }
    r.name().replace(" (", "(").replace(' ', "_")
}

/// Free device memory (`cuMemGetInfo`) in the current context.
pub fn free_memory() -> Result<usize, Failed> {
    let (mut free, mut total) = (0usize, 0usize);
    check(unsafe { cuCtxSynchronize() }, "cuCtxSynchronize")?;
    check(
        unsafe { cuMemGetInfo(&mut free, &mut total) },
        "cuMemGetInfo",
    )?;
    Ok(free)
}

/// `n` bytes of device memory at `ptr`, or the code of the failed copy (what
/// a [`Held::read`] returns).
pub fn read_device(ptr: CUdeviceptr, n: usize) -> Result<Vec<u8>, String> {
    let mut v = vec![0u8; n];
    let r = unsafe { cuMemcpyDtoH(v.as_mut_ptr().cast(), ptr, n) };
    (r == CUDA_SUCCESS).then_some(v).ok_or_else(|| code(r))
}

/// Release steps and their codes as `step:code,step:code` (what a
/// [`Held::release`] returns).
pub fn steps(steps: &[(&str, CUresult)]) -> String {
    let words: Vec<_> = steps
        .iter()
        .map(|(s, r)| format!("{s}:{}", code(*r)))
        .collect();
    words.join(",")
}

/// How a scenario measures free memory: [`free_memory`] on a device (the
/// plumbing's own test passes a stand-in).
pub type Probe = fn() -> Result<usize, Failed>;

/// Polls `probe` until at least `baseline - slack` bytes are free again
/// (or [`FREE_TIMEOUT`] passed); returns the last figure and the time it took.
pub fn await_free(probe: Probe, baseline: usize, slack: usize) -> Result<(usize, u128), Failed> {
    let start = Instant::now();
    loop {
        let free = probe()?;
        if free + slack >= baseline || start.elapsed() > FREE_TIMEOUT {
            return Ok((free, start.elapsed().as_millis()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// MiB with one decimal, for figures.
pub fn mib(bytes: usize) -> String {
    format!("{:.1}MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// The kit's byte pattern (`common::pattern`), which both sides of a
/// scenario write and compare.
#[allow(unused_imports)] // used by `peers`, on Unix
pub use super::memory::pattern;

/// `match`, `mismatch@<first byte>`, or the error code of the read.
pub fn compare(got: Result<Vec<u8>, String>, want: &[u8]) -> String {
    match got {
        Err(code) => code,
        Ok(got) if got.len() != want.len() => format!("length{}", got.len()),
        Ok(got) => match got.iter().zip(want).position(|(a, b)| a != b) {
            None => "match".into(),
            Some(i) => format!("mismatch@{i}"),
        },
    }
}

/// Set by `run.sh` for runs under compute-sanitizer, whose tools hold device
/// memory of their own in every process: the free-memory figures are then
/// printed but not asserted (the sanitizer's leak check stands in for them).
pub const UNDER_SANITIZER_VAR: &str = "CUDA_MEM_SYS_UNDER_SANITIZER";

/// Fails unless `free_end` is back to `free0` within `slack` (except under
/// compute-sanitizer, see [`UNDER_SANITIZER_VAR`]).
pub fn ensure_returned(free0: usize, free_end: usize, slack: usize, when: &str) -> TestResult {
    if free_end + slack >= free0 {
        return Ok(());
    }
    let short = mib(free0.saturating_sub(free_end));
    if std::env::var_os(UNDER_SANITIZER_VAR).is_some() {
        println!("  {short} not back {when}: not asserted under compute-sanitizer");
        return Ok(());
    }
    Err(format!("{short} not returned {when}").into())
}

/// Tolerance of the free-memory figures: half the shared size, at least
/// 1 MiB (what a context's own bookkeeping may move), so a leak of the
/// shared allocation itself always shows.
pub fn slack(bytes: usize) -> usize {
    (bytes / 2).max(1 << 20)
}

/// Bytes as lowercase hex, for a field (pool export data).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of [`hex`].
pub fn unhex(s: &str) -> Result<Vec<u8>, String> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|e| format!("{s}: {e}")))
        .collect()
}

#[allow(unused_imports)] // used by `peers`, on Unix
pub use super::message;

/// The seed of the bytes the exporters of these tests write.
pub const SEED: u32 = 0xDEAD;
