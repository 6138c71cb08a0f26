//! Stream Ordered Memory Allocator: runtime 6.12 (`cudaMallocAsync`, memory
//! pools, their attributes, current pools, peer access, IPC between two
//! processes) and the driver twins (`cuMemAllocAsync`, `cuMemPool*`,
//! `cuMemGetMemPool`, `cuDeviceGetDefaultMemPool`...).
//!
//! Every check reads back an effect: bytes through the memory, pool
//! attributes (used and reserved figures), the pool a pointer came from
//! (`CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE`), addresses reused or not, streams
//! held or not. Bad input asserts the documented error and the process is
//! shown to keep working afterwards.
//!
//! Not tested, on purpose: a double `cudaFreeAsync`/`cuMemFreeAsync` of one
//! pointer. The reference says that after the free "accessing the memory ...
//! or querying its pointer attributes results in undefined behavior" and
//! documents no error for a second free: its behaviour is undefined.
mod common;

use common::fd_passing::{child_socket, inheritable, recv_fd, send_fd, socket_pair};
use common::process_death as pd;
use common::{
    cu_loc, pattern, rt_loc, same, BadInput, Checks, CuEvent, CuStream, Gpu, PageLocked, RtEvent,
    RtStream, TestResult,
};
use core::ffi::c_void;
use core::ptr::null_mut;
use cuda_mem_sys::*;
use libtest_mimic::Failed;
use std::io::{Read, Write};
use std::marker::PhantomData;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::{Duration, Instant};

const MIB: usize = 1 << 20;

/// The environment variable naming the child's end of the socket.
const SOCK_VAR: &str = "CUDA_MEM_SYS_SOMA_SOCKET";
/// Bytes shared between the two processes.
const IPC_BYTES: usize = 4 * MIB;
/// Seeds of the exporter's and the importer's patterns.
const EXPORTER_SEED: u32 = 0xA1;
const IMPORTER_SEED: u32 = 0xB2;

// ---------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------

/// The pool an allocation came from, as the driver reports it.
fn pool_of(ptr: u64) -> Result<CUmemoryPool, Failed> {
    let mut pool: CUmemoryPool = null_mut();
    cu!(cuPointerGetAttribute(
        (&mut pool as *mut CUmemoryPool).cast(),
        CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
        ptr
    ))?;
    Ok(pool)
}

/// The four figures of a pool, in bytes.
#[derive(Clone, Copy, Debug)]
struct Figures {
    reserved: u64,
    reserved_high: u64,
    used: u64,
    used_high: u64,
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "reserved {} B (high {} B), used {} B (high {} B)",
            self.reserved, self.reserved_high, self.used, self.used_high
        )
    }
}

/// A stream gate: `gate_wait` launched as a host function holds its stream
/// until `open_gate` (or, so that nothing can hang, for at most `GATE_LIMIT`).
static GATE: AtomicBool = AtomicBool::new(true);
static GATE_TIMED_OUT: AtomicBool = AtomicBool::new(false);
const GATE_LIMIT: Duration = Duration::from_secs(10);

fn close_gate() {
    GATE.store(false, SeqCst);
    GATE_TIMED_OUT.store(false, SeqCst);
}

fn open_gate() {
    GATE.store(true, SeqCst);
}

unsafe extern "C" fn gate_wait(_: *mut c_void) {
    let start = Instant::now();
    while !GATE.load(SeqCst) {
        if start.elapsed() > GATE_LIMIT {
            GATE_TIMED_OUT.store(true, SeqCst);
            return;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
}

#[cfg(cuda_12020)] // the one-block pool (maxSize) needs 12.2
/// A host function that raises the flag `user` points to (an `AtomicBool`).
unsafe extern "C" fn raise_flag(user: *mut c_void) {
    (*(user as *const AtomicBool)).store(true, SeqCst);
}

#[cfg(cuda_12020)] // the one-block pool (maxSize) needs 12.2
/// Waits (at most 10 s) for a flag raised by `raise_flag`.
fn wait_flag(flag: &AtomicBool) -> TestResult {
    let start = Instant::now();
    while !flag.load(SeqCst) {
        ensure!(
            start.elapsed() < Duration::from_secs(10),
            "the host function never ran"
        );
        std::thread::sleep(Duration::from_micros(100));
    }
    Ok(())
}

/// A kernel copying `n` 32-bit words from `src` to `dst` (PTX, JIT-compiled by
/// the driver), so that a device itself reads and writes pool memory.
const COPY_PTX: &str = "
.version 7.0
.target sm_80
.address_size 64

.visible .entry copy_u32(
    .param .u64 dst,
    .param .u64 src,
    .param .u32 n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;

    ld.param.u64 %rd1, [dst];
    ld.param.u64 %rd2, [src];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.u32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mul.wide.u32 %rd5, %r5, 4;
    add.s64 %rd6, %rd4, %rd5;
    ld.global.u32 %r6, [%rd6];
    add.s64 %rd7, %rd3, %rd5;
    st.global.u32 [%rd7], %r6;
DONE:
    ret;
}
\0";

/// The copy kernel loaded into the current context.
struct CopyKernel {
    module: CUmodule,
    func: CUfunction,
}

impl CopyKernel {
    fn load() -> Result<CopyKernel, Failed> {
        let mut module: CUmodule = null_mut();
        cu!(cuModuleLoadData(&mut module, COPY_PTX.as_ptr().cast()))?;
        let mut func: CUfunction = null_mut();
        let got = cu!(cuModuleGetFunction(&mut func, module, c"copy_u32".as_ptr()));
        if got.is_err() {
            unsafe { cuModuleUnload(module) };
        }
        got?;
        Ok(CopyKernel { module, func })
    }

    /// Copies `bytes` (a multiple of 4) from `src` to `dst` on `stream`.
    fn copy(&self, dst: u64, src: u64, bytes: usize, stream: CUstream) -> TestResult {
        let (mut d, mut s, mut n) = (dst, src, (bytes / 4) as u32);
        let mut params = [
            (&mut d as *mut u64).cast::<c_void>(),
            (&mut s as *mut u64).cast::<c_void>(),
            (&mut n as *mut u32).cast::<c_void>(),
        ];
        cu!(cuLaunchKernel(
            self.func,
            n.div_ceil(256),
            1,
            1,
            256,
            1,
            1,
            0,
            stream,
            params.as_mut_ptr(),
            null_mut()
        ))
    }
}

impl Drop for CopyKernel {
    fn drop(&mut self) {
        unsafe { cuModuleUnload(self.module) };
    }
}

// ---------------------------------------------------------------------------
// Runtime helpers
// ---------------------------------------------------------------------------

/// A runtime pool ([`TwinPool`]).
type RtPool = TwinPool<Rt>;

fn rt_props(
    alloc: cudaMemAllocationType,
    location: cudaMemLocation,
    handles: cudaMemAllocationHandleType,
    max_size: usize,
) -> cudaMemPoolProps {
    #[cfg(not(cuda_12020))]
    let _ = max_size; // no `maxSize` before 12.2: unbounded
    cudaMemPoolProps {
        allocType: alloc,
        handleTypes: handles,
        location,
        // `maxSize` is in the headers from 12.2 (unbounded before).
        #[cfg(cuda_12020)]
        maxSize: max_size,
        ..Default::default()
    }
}

fn rt_device_props(max_size: usize) -> cudaMemPoolProps {
    rt_props(
        cudaMemAllocationTypePinned,
        rt_loc(cudaMemLocationTypeDevice, 0),
        cudaMemHandleTypeNone,
        max_size,
    )
}

fn rt_attr_name(attr: cudaMemPoolAttr) -> String {
    const NAMES: [(cudaMemPoolAttr, &str); 8] = [
        (
            cudaMemPoolReuseFollowEventDependencies,
            "cudaMemPoolReuseFollowEventDependencies",
        ),
        (
            cudaMemPoolReuseAllowOpportunistic,
            "cudaMemPoolReuseAllowOpportunistic",
        ),
        (
            cudaMemPoolReuseAllowInternalDependencies,
            "cudaMemPoolReuseAllowInternalDependencies",
        ),
        (
            cudaMemPoolAttrReleaseThreshold,
            "cudaMemPoolAttrReleaseThreshold",
        ),
        (
            cudaMemPoolAttrReservedMemCurrent,
            "cudaMemPoolAttrReservedMemCurrent",
        ),
        (
            cudaMemPoolAttrReservedMemHigh,
            "cudaMemPoolAttrReservedMemHigh",
        ),
        (
            cudaMemPoolAttrUsedMemCurrent,
            "cudaMemPoolAttrUsedMemCurrent",
        ),
        (cudaMemPoolAttrUsedMemHigh, "cudaMemPoolAttrUsedMemHigh"),
    ];
    match NAMES.iter().find(|(a, _)| *a == attr) {
        Some((_, name)) => (*name).into(),
        None => format!("cudaMemPoolAttr({})", attr.0),
    }
}

fn rt_get_u64(pool: cudaMemPool_t, attr: cudaMemPoolAttr) -> Result<u64, Failed> {
    let mut v = u64::MAX - 1;
    let r = unsafe { cudaMemPoolGetAttribute(pool, attr, (&mut v as *mut u64).cast()) };
    common::check_rt(
        r,
        &format!("cudaMemPoolGetAttribute({})", rt_attr_name(attr)),
    )?;
    Ok(v)
}

fn rt_set_u64(pool: cudaMemPool_t, attr: cudaMemPoolAttr, mut v: u64) -> TestResult {
    let r = unsafe { cudaMemPoolSetAttribute(pool, attr, (&mut v as *mut u64).cast()) };
    common::check_rt(
        r,
        &format!("cudaMemPoolSetAttribute({}, {v})", rt_attr_name(attr)),
    )
}

fn rt_get_i32(pool: cudaMemPool_t, attr: cudaMemPoolAttr) -> Result<i32, Failed> {
    let mut v: i32 = -7;
    let r = unsafe { cudaMemPoolGetAttribute(pool, attr, (&mut v as *mut i32).cast()) };
    common::check_rt(
        r,
        &format!("cudaMemPoolGetAttribute({})", rt_attr_name(attr)),
    )?;
    Ok(v)
}

fn rt_set_i32(pool: cudaMemPool_t, attr: cudaMemPoolAttr, mut v: i32) -> TestResult {
    let r = unsafe { cudaMemPoolSetAttribute(pool, attr, (&mut v as *mut i32).cast()) };
    common::check_rt(
        r,
        &format!("cudaMemPoolSetAttribute({}, {v})", rt_attr_name(attr)),
    )
}

fn rt_figures(pool: cudaMemPool_t) -> Result<Figures, Failed> {
    Ok(Figures {
        reserved: rt_get_u64(pool, cudaMemPoolAttrReservedMemCurrent)?,
        reserved_high: rt_get_u64(pool, cudaMemPoolAttrReservedMemHigh)?,
        used: rt_get_u64(pool, cudaMemPoolAttrUsedMemCurrent)?,
        used_high: rt_get_u64(pool, cudaMemPoolAttrUsedMemHigh)?,
    })
}

/// Sets the three reuse policies (follow events, opportunistic, internal dependencies).
fn rt_policies(pool: cudaMemPool_t, follow: i32, opportunistic: i32, internal: i32) -> TestResult {
    rt_set_i32(pool, cudaMemPoolReuseFollowEventDependencies, follow)?;
    rt_set_i32(pool, cudaMemPoolReuseAllowOpportunistic, opportunistic)?;
    rt_set_i32(pool, cudaMemPoolReuseAllowInternalDependencies, internal)?;
    let got = (
        rt_get_i32(pool, cudaMemPoolReuseFollowEventDependencies)?,
        rt_get_i32(pool, cudaMemPoolReuseAllowOpportunistic)?,
        rt_get_i32(pool, cudaMemPoolReuseAllowInternalDependencies)?,
    );
    ensure!(
        got == (follow, opportunistic, internal),
        "reuse policies read back {got:?}, set ({follow}, {opportunistic}, {internal})"
    );
    Ok(())
}

fn rt_get_access(
    pool: cudaMemPool_t,
    mut loc: cudaMemLocation,
) -> Result<cudaMemAccessFlags, Failed> {
    let mut flags = cudaMemAccessFlags(0xdead);
    rt!(cudaMemPoolGetAccess(&mut flags, pool, &mut loc))?;
    Ok(flags)
}

fn rt_set_access(
    pool: cudaMemPool_t,
    location: cudaMemLocation,
    flags: cudaMemAccessFlags,
) -> TestResult {
    let desc = cudaMemAccessDesc { location, flags };
    rt!(cudaMemPoolSetAccess(pool, &desc, 1))
}

/// Writes `data` into device-accessible `p`, reads it back through the device.
fn rt_round_trip(p: *mut c_void, data: &[u8], s: &RtStream) -> TestResult {
    let mut back = vec![0u8; data.len()];
    rt!(cudaMemcpyAsync(
        p,
        data.as_ptr().cast(),
        data.len(),
        cudaMemcpyDefault,
        s.0
    ))?;
    rt!(cudaMemcpyAsync(
        back.as_mut_ptr().cast(),
        p,
        data.len(),
        cudaMemcpyDefault,
        s.0
    ))?;
    s.sync()?;
    same(&back, data, "bytes changed through pool memory")?;
    Ok(())
}

/// After a bad call: the runtime still allocates, copies and frees in stream order.
fn rt_alive(s: &RtStream) -> TestResult {
    unsafe { cudaGetLastError() };
    let data = pattern(4096, 99);
    let mut p: *mut c_void = null_mut();
    rt!(cudaMallocAsync(&mut p, data.len(), s.0))?;
    let checked = rt_round_trip(p, &data, s);
    rt!(cudaFreeAsync(p, s.0))?;
    s.sync()?;
    checked
}

fn rt_init() -> Result<Gpu, Failed> {
    let gpu = Gpu::new(0)?;
    rt!(cudaSetDevice(0))?;
    let mut pools = 0;
    rt!(cudaDeviceGetAttribute(
        &mut pools,
        cudaDevAttrMemoryPoolsSupported,
        0
    ))?;
    ensure!(
        pools == 1,
        "device 0 reports cudaDevAttrMemoryPoolsSupported = {pools}"
    );
    Ok(gpu)
}

// ---------------------------------------------------------------------------
// Runtime tests
// ---------------------------------------------------------------------------

/// cudaMemPoolDestroy / cuMemPoolDestroy with an allocation outstanding
/// "return immediately"; the resources are released once nothing is
/// outstanding, so the allocation keeps its bytes until freed. Run in child
/// processes (steps printed to stderr) so that a crash there is reported as
/// this test's failure instead of ending the whole test binary.
fn pool_destroy_with_outstanding_allocation() -> TestResult {
    let mut c = Checks::default();
    for role in ["rt_destroy_outstanding", "drv_destroy_outstanding"] {
        let child = common::spawn_child(role, &[]);
        c.ok(common::wait_child(child, role));
    }
    c.finish()
}

/// Every attribute: documented defaults, set/get round trips, figures that
/// follow allocations, high watermarks reset, illegal sets refused.
fn rt_pool_attributes_every_attribute() -> TestResult {
    let _gpu = rt_init()?;
    let s = RtStream::new()?;
    let pool = RtPool::create(&rt_device_props(0))?;
    let pl = pool.0;

    // Documented defaults of a new pool.
    ensure!(
        rt_get_u64(pl, cudaMemPoolAttrReleaseThreshold)? == 0,
        "default release threshold not 0"
    );
    for attr in [
        cudaMemPoolReuseFollowEventDependencies,
        cudaMemPoolReuseAllowOpportunistic,
        cudaMemPoolReuseAllowInternalDependencies,
    ] {
        let v = rt_get_i32(pl, attr)?;
        ensure!(
            v == 1,
            "{} defaults to {v}, documented enabled",
            rt_attr_name(attr)
        );
    }
    let fresh = rt_figures(pl)?;
    println!("new pool: {fresh}");
    ensure!(
        fresh.reserved == 0 && fresh.reserved_high == 0 && fresh.used == 0 && fresh.used_high == 0,
        "a new pool's figures are not zero: {fresh}"
    );

    // Settable attributes read back what was set.
    for v in [48 * MIB as u64, u64::MAX, 1, 0] {
        rt_set_u64(pl, cudaMemPoolAttrReleaseThreshold, v)?;
        let got = rt_get_u64(pl, cudaMemPoolAttrReleaseThreshold)?;
        ensure!(got == v, "release threshold set {v}, read {got}");
    }
    for attr in [
        cudaMemPoolReuseFollowEventDependencies,
        cudaMemPoolReuseAllowOpportunistic,
        cudaMemPoolReuseAllowInternalDependencies,
    ] {
        for v in [0, 1] {
            rt_set_i32(pl, attr, v)?;
            let got = rt_get_i32(pl, attr)?;
            ensure!(got == v, "{} set {v}, read {got}", rt_attr_name(attr));
        }
    }

    // Figures follow allocations (the threshold keeps the memory reserved).
    rt_set_u64(pl, cudaMemPoolAttrReleaseThreshold, u64::MAX)?;
    let (mut small, mut big): (*mut c_void, *mut c_void) = (null_mut(), null_mut());
    rt!(cudaMallocFromPoolAsync(&mut small, 8 * MIB, pl, s.0))?;
    rt!(cudaMallocFromPoolAsync(&mut big, 16 * MIB, pl, s.0))?;
    s.sync()?;
    let both = rt_figures(pl)?;
    rt!(cudaFreeAsync(big, s.0))?;
    s.sync()?;
    let one = rt_figures(pl)?;
    rt_set_u64(pl, cudaMemPoolAttrUsedMemHigh, 0)?;
    let used_reset = rt_figures(pl)?;
    rt!(cudaFreeAsync(small, s.0))?;
    s.sync()?;
    rt!(cudaMemPoolTrimTo(pl, 0))?;
    let trimmed = rt_figures(pl)?;
    rt_set_u64(pl, cudaMemPoolAttrReservedMemHigh, 0)?;
    rt_set_u64(pl, cudaMemPoolAttrUsedMemHigh, 0)?;
    let all_reset = rt_figures(pl)?;
    println!(
        "8 + 16 MiB: {both}\n16 MiB freed: {one}\nused high reset: {used_reset}\nall freed, trimmed: {trimmed}\nhighs reset: {all_reset}"
    );
    ensure!(
        both.used == 24 * MIB as u64,
        "used {} with 24 MiB allocated",
        both.used
    );
    ensure!(
        both.reserved >= both.used,
        "reserved {} below used {}",
        both.reserved,
        both.used
    );
    ensure!(
        both.used_high >= both.used && both.reserved_high >= both.reserved,
        "high watermarks below current: {both}"
    );
    ensure!(
        one.used == 8 * MIB as u64,
        "used {} with 8 MiB allocated",
        one.used
    );
    ensure!(
        one.used_high == both.used_high,
        "used high moved from {} to {} on a free",
        both.used_high,
        one.used_high
    );
    ensure!(
        used_reset.used_high < one.used_high,
        "resetting the used high watermark read back {} (was {})",
        used_reset.used_high,
        one.used_high
    );
    ensure!(
        trimmed.used == 0 && trimmed.reserved == 0,
        "after freeing and trimming: {trimmed}"
    );
    ensure!(
        trimmed.reserved_high >= both.reserved,
        "reserved high {} below an earlier reserved {}",
        trimmed.reserved_high,
        both.reserved
    );
    ensure!(
        all_reset.reserved_high < trimmed.reserved_high
            && all_reset.used_high <= used_reset.used_high,
        "resetting the high watermarks read back {all_reset}"
    );

    // Illegal sets: non-zero high watermarks, the read-only current figures.
    for attr in [cudaMemPoolAttrUsedMemHigh, cudaMemPoolAttrReservedMemHigh] {
        let mut v: u64 = 4096;
        rt_err!(
            cudaErrorInvalidValue,
            cudaMemPoolSetAttribute(pl, attr, (&mut v as *mut u64).cast())
        )?;
        rt_alive(&s)?;
    }
    for attr in [
        cudaMemPoolAttrUsedMemCurrent,
        cudaMemPoolAttrReservedMemCurrent,
    ] {
        let mut v: u64 = 0;
        rt_err!(
            cudaErrorInvalidValue,
            cudaMemPoolSetAttribute(pl, attr, (&mut v as *mut u64).cast())
        )?;
        rt_alive(&s)?;
    }
    rt_set_u64(pl, cudaMemPoolAttrReleaseThreshold, 0)?;
    pool.destroy()
}

/// cudaMemPoolTrimTo shrinks the reserved figure (never below outstanding
/// allocations); the release threshold decides what a synchronize releases.
fn rt_trim_to_and_release_threshold() -> TestResult {
    let _gpu = rt_init()?;
    let s = RtStream::new()?;
    let pool = RtPool::create(&rt_device_props(0))?;
    let pl = pool.0;
    const M: usize = 32 * MIB;

    rt_set_u64(pl, cudaMemPoolAttrReleaseThreshold, u64::MAX)?;
    let mut ptrs = [null_mut::<c_void>(); 4];
    for p in ptrs.iter_mut() {
        rt!(cudaMallocFromPoolAsync(p, M, pl, s.0))?;
    }
    s.sync()?;
    for p in ptrs {
        rt!(cudaFreeAsync(p, s.0))?;
    }
    s.sync()?;
    let kept = rt_figures(pl)?;
    rt!(cudaMemPoolTrimTo(pl, 2 * M))?;
    let half = rt_figures(pl)?;
    rt!(cudaMemPoolTrimTo(pl, 0))?;
    let none = rt_figures(pl)?;
    println!(
        "4 x 32 MiB freed, threshold max: {kept}\ntrimmed to 64 MiB: {half}\ntrimmed to 0: {none}"
    );
    ensure!(
        kept.used == 0 && kept.reserved >= 4 * M as u64,
        "threshold max did not keep the memory: {kept}"
    );
    ensure!(
        half.reserved >= 2 * M as u64 && half.reserved <= kept.reserved,
        "trim to 64 MiB left {} reserved (was {})",
        half.reserved,
        kept.reserved
    );
    ensure!(
        none.reserved == 0,
        "trim to 0 left {} reserved",
        none.reserved
    );

    // Outstanding allocations are not released, and keep their bytes.
    let data = pattern(M, 21);
    let mut p: *mut c_void = null_mut();
    rt!(cudaMallocFromPoolAsync(&mut p, M, pl, s.0))?;
    rt!(cudaMemcpyAsync(
        p,
        data.as_ptr().cast(),
        M,
        cudaMemcpyDefault,
        s.0
    ))?;
    s.sync()?;
    rt!(cudaMemPoolTrimTo(pl, 0))?;
    let outstanding = rt_figures(pl)?;
    let mut back = vec![0u8; M];
    rt!(cudaMemcpyAsync(
        back.as_mut_ptr().cast(),
        p,
        M,
        cudaMemcpyDefault,
        s.0
    ))?;
    rt!(cudaFreeAsync(p, s.0))?;
    s.sync()?;
    rt!(cudaMemPoolTrimTo(pl, 0))?;
    let freed = rt_figures(pl)?;
    println!("one 32 MiB outstanding, trimmed to 0: {outstanding}\nfreed, trimmed: {freed}");
    ensure!(
        outstanding.reserved >= M as u64,
        "trim released an outstanding allocation: {outstanding}"
    );
    same(&back, &data, "bytes of the outstanding allocation")?;
    ensure!(
        freed.reserved == 0,
        "{} reserved after the last free and a trim",
        freed.reserved
    );

    // Threshold 0 (the default): the synchronize after the free releases it.
    rt_set_u64(pl, cudaMemPoolAttrReleaseThreshold, 0)?;
    rt!(cudaMallocFromPoolAsync(&mut p, M, pl, s.0))?;
    s.sync()?;
    let held = rt_figures(pl)?;
    rt!(cudaFreeAsync(p, s.0))?;
    s.sync()?;
    let released = rt_figures(pl)?;
    // Threshold 64 MiB: 32 MiB stays reserved after the synchronize.
    rt_set_u64(pl, cudaMemPoolAttrReleaseThreshold, 2 * M as u64)?;
    rt!(cudaMallocFromPoolAsync(&mut p, M, pl, s.0))?;
    s.sync()?;
    rt!(cudaFreeAsync(p, s.0))?;
    s.sync()?;
    let below = rt_figures(pl)?;
    rt!(cudaMemPoolTrimTo(pl, 0))?;
    println!("threshold 0, held: {held}\n  freed + sync: {released}\nthreshold 64 MiB, freed + sync: {below}");
    ensure!(
        held.reserved >= M as u64,
        "32 MiB allocated but {} reserved",
        held.reserved
    );
    ensure!(
        released.reserved == 0,
        "threshold 0: {} still reserved after the synchronize",
        released.reserved
    );
    ensure!(
        below.reserved >= M as u64,
        "threshold 64 MiB: only {} reserved after the synchronize",
        below.reserved
    );
    pool.destroy()
}

/// Runs this binary as a child in `role`, connected by a socket; `exchange` is
/// the parent's side of the conversation. The socket is closed (so that a
/// child still reading sees the end) and the child waited for on every path;
/// the child's failure is reported first.
fn with_child(role: &str, exchange: impl FnOnce(&mut UnixStream) -> TestResult) -> TestResult {
    let (mut parent, child_end) = socket_pair()?;
    parent.set_read_timeout(Some(Duration::from_secs(120)))?;
    let child_fd = inheritable(&child_end);
    let child = common::spawn_child(role, &[(SOCK_VAR, child_fd.to_string())]);
    drop(child_end);
    let exchanged = exchange(&mut parent);
    drop(parent);
    common::wait_child(child, role)?;
    exchanged
}

/// Bad input: each documented error, then proof the process still works.
fn rt_bad_input() -> TestResult {
    let _gpu = rt_init()?;
    let s = RtStream::new()?;
    let mut c = BadInput::new(|_| rt_alive(&s));
    let pool = RtPool::create(&rt_device_props(64 * MIB))?;
    let mut dflt: cudaMemPool_t = null_mut();
    rt!(cudaDeviceGetDefaultMemPool(&mut dflt, 0))?;
    let mut p: *mut c_void = null_mut();

    // cudaMemPoolGetAccess for a device that does not exist. The reference
    // lists no return codes for it; measured on an H100 (driver 580.159.04):
    // cudaErrorInvalidValue, the runtime's code for a bad argument.
    let mut flags = cudaMemAccessFlags(0xdead);
    let mut nowhere = rt_loc(cudaMemLocationTypeDevice, 9999);
    bad!(
        c,
        cudaErrorInvalidValue,
        cudaMemPoolGetAccess(&mut flags, pool.0, &mut nowhere)
    );

    // Null result pointer.
    bad!(
        c,
        cudaErrorInvalidValue,
        cudaMallocAsync(null_mut(), 4096, s.0)
    );
    // Zero size: the reference does not say what happens, so only the
    // documented return set is asserted (and a returned pointer is freed).
    for from_pool in [false, true] {
        let mut z: *mut c_void = 0x1234 as *mut c_void;
        let r = unsafe {
            if from_pool {
                cudaMallocFromPoolAsync(&mut z, 0, pool.0, s.0)
            } else {
                cudaMallocAsync(&mut z, 0, s.0)
            }
        };
        println!(
            "{}(size 0) returned {}, pointer {z:?}",
            if from_pool {
                "cudaMallocFromPoolAsync"
            } else {
                "cudaMallocAsync"
            },
            common::rt_error_name(r)
        );
        if r == cudaSuccess && !z.is_null() {
            c.ok(rt!(cudaFreeAsync(z, s.0)));
        }
        if r != cudaSuccess && r != cudaErrorInvalidValue {
            c.ok(common::expect_rt_error(r, cudaErrorInvalidValue, "size 0"));
        }
        c.still_works();
    }

    // Over the pool's maxSize: out of memory (the reference's
    // "cudaErrorOutOfMemory" is cudaErrorMemoryAllocation in the headers).
    // `maxSize` is in the headers from 12.2: before, the pool is unbounded.
    #[cfg(cuda_12020)]
    bad!(
        c,
        cudaErrorMemoryAllocation,
        cudaMallocFromPoolAsync(&mut p, 128 * MIB, pool.0, s.0)
    );
    #[cfg(not(cuda_12020))]
    println!("  skipped: an allocation over the pool's maxSize: cudaMemPoolProps::maxSize not in these headers (added in 12.2)");

    // Invalid (null) pool.
    let mut v: u64 = 0;
    bad!(
        c,
        cudaErrorInvalidValue,
        cudaMallocFromPoolAsync(&mut p, 4096, null_mut(), s.0)
    );
    bad!(
        c,
        cudaErrorInvalidValue,
        cudaMemPoolGetAttribute(
            null_mut(),
            cudaMemPoolAttrReleaseThreshold,
            (&mut v as *mut u64).cast()
        )
    );
    bad!(
        c,
        cudaErrorInvalidValue,
        cudaMemPoolSetAttribute(
            null_mut(),
            cudaMemPoolAttrReleaseThreshold,
            (&mut v as *mut u64).cast()
        )
    );
    bad!(c, cudaErrorInvalidValue, cudaMemPoolTrimTo(null_mut(), 0));
    bad!(c, cudaErrorInvalidValue, cudaMemPoolDestroy(null_mut()));
    let mut none_pool: cudaMemPool_t = null_mut();
    bad!(
        c,
        cudaErrorInvalidValue,
        cudaMemPoolCreate(&mut none_pool, core::ptr::null())
    );

    // Unknown attributes.
    for attr in [cudaMemPoolAttr(0), cudaMemPoolAttr(0x7fff)] {
        bad!(
            c,
            cudaErrorInvalidValue,
            cudaMemPoolGetAttribute(pool.0, attr, (&mut v as *mut u64).cast())
        );
        bad!(
            c,
            cudaErrorInvalidValue,
            cudaMemPoolSetAttribute(pool.0, attr, (&mut v as *mut u64).cast())
        );
    }

    // The default pool cannot be destroyed: it still allocates afterwards.
    bad!(c, cudaErrorInvalidValue, cudaMemPoolDestroy(dflt));
    rt!(cudaMallocFromPoolAsync(&mut p, 4096, dflt, s.0))?;
    rt!(cudaFreeAsync(p, s.0))?;
    s.sync()?;

    // Export of a pool created without handle types; export flags must be 0.
    let mut fd: i32 = -1;
    bad!(
        c,
        cudaErrorInvalidValue,
        cudaMemPoolExportToShareableHandle(
            (&mut fd as *mut i32).cast(),
            pool.0,
            cudaMemHandleTypePosixFileDescriptor,
            0
        )
    );
    let ipc = RtPool::create(&rt_props(
        cudaMemAllocationTypePinned,
        rt_loc(cudaMemLocationTypeDevice, 0),
        cudaMemHandleTypePosixFileDescriptor,
        0,
    ))?;
    bad!(
        c,
        cudaErrorInvalidValue,
        cudaMemPoolExportToShareableHandle(
            (&mut fd as *mut i32).cast(),
            ipc.0,
            cudaMemHandleTypePosixFileDescriptor,
            1
        )
    );
    // Export of a pointer from a pool that cannot be shared.
    let mut data = cudaMemPoolPtrExportData::default();
    rt!(cudaMallocFromPoolAsync(&mut p, 4096, pool.0, s.0))?;
    s.sync()?;
    let r = unsafe { cudaMemPoolExportPointer(&mut data, p) };
    rt!(cudaFreeAsync(p, s.0))?;
    s.sync()?;
    c.ok(common::expect_rt_error(
        r,
        cudaErrorInvalidValue,
        "cudaMemPoolExportPointer(non-IPC pool)",
    ));
    c.still_works();
    // Import of a descriptor that is not open: cudaErrorUnknown as measured
    // (the reference lists cudaErrorInvalidValue, cudaErrorOutOfMemory).
    let mut imported: cudaMemPool_t = null_mut();
    bad!(
        c,
        cudaErrorUnknown,
        cudaMemPoolImportFromShareableHandle(
            &mut imported,
            -1isize as usize as *mut c_void,
            cudaMemHandleTypePosixFileDescriptor,
            0
        )
    );
    // Free of memory the allocator does not know (a host stack address).
    let mut local = [0u8; 64];
    bad!(
        c,
        cudaErrorInvalidValue,
        cudaFreeAsync(local.as_mut_ptr().cast(), s.0)
    );
    // Access for a device that does not exist: cudaErrorInvalidDevice as
    // measured (the reference lists only cudaErrorInvalidValue).
    let r = unsafe {
        cudaMemPoolSetAccess(
            pool.0,
            &cudaMemAccessDesc {
                location: rt_loc(cudaMemLocationTypeDevice, 999),
                flags: cudaMemAccessFlagsProtReadWrite,
            },
            1,
        )
    };
    c.ok(common::expect_rt_error(
        r,
        cudaErrorInvalidDevice,
        "cudaMemPoolSetAccess(device 999)",
    ));
    c.still_works();
    // After all that, the pools still report sane figures.
    let f = rt_figures(pool.0)?;
    ensure!(f.used == 0, "the bad calls left {} bytes used", f.used);
    ipc.destroy()?;
    pool.destroy()?;
    c.finish()
}

// ---------------------------------------------------------------------------
// Driver helpers
// ---------------------------------------------------------------------------

/// A driver pool ([`TwinPool`]).
type CuPool = TwinPool<Drv>;

fn cu_props(
    alloc: CUmemAllocationType,
    location: CUmemLocation,
    handles: CUmemAllocationHandleType,
    max_size: usize,
) -> CUmemPoolProps {
    #[cfg(not(cuda_12020))]
    let _ = max_size; // no `maxSize` before 12.2: unbounded
    CUmemPoolProps {
        allocType: alloc,
        handleTypes: handles,
        location,
        // `maxSize` is in the headers from 12.2 (unbounded before).
        #[cfg(cuda_12020)]
        maxSize: max_size,
        ..Default::default()
    }
}

fn cu_device_props(max_size: usize) -> CUmemPoolProps {
    cu_props(
        CU_MEM_ALLOCATION_TYPE_PINNED,
        cu_loc(CU_MEM_LOCATION_TYPE_DEVICE, 0),
        CU_MEM_HANDLE_TYPE_NONE,
        max_size,
    )
}

fn cu_get_u64(pool: CUmemoryPool, attr: CUmemPool_attribute) -> Result<u64, Failed> {
    let mut v = u64::MAX - 1;
    let r = unsafe { cuMemPoolGetAttribute(pool, attr, (&mut v as *mut u64).cast()) };
    common::check(r, &format!("cuMemPoolGetAttribute({})", attr.0))?;
    Ok(v)
}

fn cu_set_u64(pool: CUmemoryPool, attr: CUmemPool_attribute, mut v: u64) -> TestResult {
    let r = unsafe { cuMemPoolSetAttribute(pool, attr, (&mut v as *mut u64).cast()) };
    common::check(r, &format!("cuMemPoolSetAttribute({}, {v})", attr.0))
}

fn cu_get_i32(pool: CUmemoryPool, attr: CUmemPool_attribute) -> Result<i32, Failed> {
    let mut v: i32 = -7;
    let r = unsafe { cuMemPoolGetAttribute(pool, attr, (&mut v as *mut i32).cast()) };
    common::check(r, &format!("cuMemPoolGetAttribute({})", attr.0))?;
    Ok(v)
}

fn cu_set_i32(pool: CUmemoryPool, attr: CUmemPool_attribute, mut v: i32) -> TestResult {
    let r = unsafe { cuMemPoolSetAttribute(pool, attr, (&mut v as *mut i32).cast()) };
    common::check(r, &format!("cuMemPoolSetAttribute({}, {v})", attr.0))
}

fn cu_figures(pool: CUmemoryPool) -> Result<Figures, Failed> {
    Ok(Figures {
        reserved: cu_get_u64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)?,
        reserved_high: cu_get_u64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)?,
        used: cu_get_u64(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT)?,
        used_high: cu_get_u64(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH)?,
    })
}

fn cu_get_access(pool: CUmemoryPool, mut loc: CUmemLocation) -> Result<CUmemAccess_flags, Failed> {
    let mut flags = CUmemAccess_flags(0xdead);
    cu!(cuMemPoolGetAccess(&mut flags, pool, &mut loc))?;
    Ok(flags)
}

fn cu_set_access(
    pool: CUmemoryPool,
    location: CUmemLocation,
    flags: CUmemAccess_flags,
) -> TestResult {
    let desc = CUmemAccessDesc { location, flags };
    cu!(cuMemPoolSetAccess(pool, &desc, 1))
}

fn cu_round_trip(p: CUdeviceptr, data: &[u8], s: &CuStream) -> TestResult {
    let mut back = vec![0u8; data.len()];
    cu!(cuMemcpyHtoDAsync(p, data.as_ptr().cast(), data.len(), s.0))?;
    cu!(cuMemcpyDtoHAsync(
        back.as_mut_ptr().cast(),
        p,
        data.len(),
        s.0
    ))?;
    s.sync()?;
    same(&back, data, "bytes changed through pool memory")?;
    Ok(())
}

fn cu_alive(s: &CuStream) -> TestResult {
    let data = pattern(4096, 98);
    let mut p: CUdeviceptr = 0;
    cu!(cuMemAllocAsync(&mut p, data.len(), s.0))?;
    let checked = cu_round_trip(p, &data, s);
    cu!(cuMemFreeAsync(p, s.0))?;
    s.sync()?;
    checked
}

// ---------------------------------------------------------------------------
// Driver tests
// ---------------------------------------------------------------------------

/// Every attribute through the driver; cuMemPoolTrimTo.
fn drv_attributes_and_trim() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let s = CuStream::new()?;
    let pool = CuPool::create(&cu_device_props(0))?;
    let pl = pool.0;
    ensure!(
        cu_get_u64(pl, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)? == 0,
        "default release threshold not 0"
    );
    for attr in [
        CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES,
        CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC,
        CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES,
    ] {
        ensure!(
            cu_get_i32(pl, attr)? == 1,
            "attribute {} not enabled by default",
            attr.0
        );
        for v in [0, 1] {
            cu_set_i32(pl, attr, v)?;
            let got = cu_get_i32(pl, attr)?;
            ensure!(got == v, "attribute {} set {v}, read {got}", attr.0);
        }
    }
    let fresh = cu_figures(pl)?;
    ensure!(
        fresh.reserved == 0 && fresh.reserved_high == 0 && fresh.used == 0 && fresh.used_high == 0,
        "new pool: {fresh}"
    );
    for v in [3 * MIB as u64, u64::MAX] {
        cu_set_u64(pl, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, v)?;
        let got = cu_get_u64(pl, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)?;
        ensure!(got == v, "release threshold set {v}, read {got}");
    }
    const M: usize = 32 * MIB;
    let mut ptrs = [0 as CUdeviceptr; 3];
    for p in ptrs.iter_mut() {
        cu!(cuMemAllocFromPoolAsync(p, M, pl, s.0))?;
    }
    s.sync()?;
    let all = cu_figures(pl)?;
    for p in ptrs {
        cu!(cuMemFreeAsync(p, s.0))?;
    }
    s.sync()?;
    let freed = cu_figures(pl)?;
    cu_set_u64(pl, CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0)?;
    cu!(cuMemPoolTrimTo(pl, M))?;
    let partly = cu_figures(pl)?;
    cu!(cuMemPoolTrimTo(pl, 0))?;
    let trimmed = cu_figures(pl)?;
    cu_set_u64(pl, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 0)?;
    let reset = cu_figures(pl)?;
    println!(
        "driver: 3 x 32 MiB: {all}\n  freed: {freed}\n  used high reset, trimmed to 32 MiB: {partly}\n  trimmed to 0: {trimmed}\n  reserved high reset: {reset}"
    );
    ensure!(
        all.used == 3 * M as u64 && all.reserved >= all.used,
        "3 x 32 MiB: {all}"
    );
    ensure!(
        freed.used == 0 && freed.reserved >= 3 * M as u64 && freed.used_high >= 3 * M as u64,
        "freed: {freed}"
    );
    ensure!(
        partly.used_high < freed.used_high,
        "used high after reset {} (was {})",
        partly.used_high,
        freed.used_high
    );
    ensure!(
        partly.reserved >= M as u64 && partly.reserved <= freed.reserved,
        "trim to 32 MiB: {partly}"
    );
    ensure!(trimmed.reserved == 0, "trim to 0: {trimmed}");
    ensure!(
        reset.reserved_high < trimmed.reserved_high,
        "reserved high after reset {}",
        reset.reserved_high
    );
    for attr in [
        CU_MEMPOOL_ATTR_USED_MEM_HIGH,
        CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
    ] {
        let mut v: u64 = 1;
        cu_err!(
            CUDA_ERROR_INVALID_VALUE,
            cuMemPoolSetAttribute(pl, attr, (&mut v as *mut u64).cast())
        )?;
        cu_alive(&s)?;
    }
    for attr in [
        CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
        CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
    ] {
        let mut v: u64 = 0;
        cu_err!(
            CUDA_ERROR_INVALID_VALUE,
            cuMemPoolSetAttribute(pl, attr, (&mut v as *mut u64).cast())
        )?;
        cu_alive(&s)?;
    }
    pool.destroy()
}

// ---------------------------------------------------------------------------
// Process death: pool descriptors and exported pointers when one side is
// SIGKILLed (scenarios and wire format in tests/common/process_death.rs)
// ---------------------------------------------------------------------------

/// What a pool exporter keeps: the pool, one allocation holding
/// `pd::pattern(IPC_BYTES, pd::SEED)`, and the stream it was made on. The
/// runtime and driver twins differ only in the calls.
struct PoolKept {
    rt: bool,
    pool: CUmemoryPool,
    p: CUdeviceptr,
    s: CUstream,
    _gpu: Gpu,
}

impl PoolKept {
    /// Frees the allocation and destroys the pool, in stream order.
    fn release(&mut self) -> String {
        if self.pool.is_null() {
            return "nothing".into();
        }
        let (f, y, d) = unsafe {
            if self.rt {
                (
                    pd::rt_code(cudaFreeAsync(self.p as *mut c_void, self.s)),
                    pd::rt_code(cudaStreamSynchronize(self.s)),
                    pd::rt_code(cudaMemPoolDestroy(self.pool)),
                )
            } else {
                (
                    pd::code(cuMemFreeAsync(self.p, self.s)),
                    pd::code(cuStreamSynchronize(self.s)),
                    pd::code(cuMemPoolDestroy(self.pool)),
                )
            }
        };
        unsafe { cuStreamDestroy(self.s) };
        self.pool = null_mut();
        format!("free:{f},sync:{y},destroy:{d}")
    }
}

impl Drop for PoolKept {
    fn drop(&mut self) {
        self.release();
    }
}

/// An IPC pool (POSIX descriptors) with one allocation of `IPC_BYTES`, its
/// descriptor, and the pointer's export data as a field.
fn pool_export(rt: bool) -> Result<(i32, pd::Fields, PoolKept), Failed> {
    let gpu = if rt { rt_init()? } else { Gpu::new(0)? };
    let fd_type = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    let mut kept = PoolKept {
        rt,
        pool: null_mut(),
        p: 0,
        s: null_mut(),
        _gpu: gpu,
    };
    let data = pd::pattern(IPC_BYTES, pd::SEED);
    let mut fd: i32 = -1;
    let mut export = CUmemPoolPtrExportData::default();
    if rt {
        let props = rt_props(
            cudaMemAllocationTypePinned,
            rt_loc(cudaMemLocationTypeDevice, 0),
            cudaMemHandleTypePosixFileDescriptor,
            0,
        );
        rt!(cudaMemPoolCreate(&mut kept.pool, &props))?;
        rt!(cudaStreamCreateWithFlags(
            &mut kept.s,
            cudaStreamNonBlocking
        ))?;
        let mut p: *mut c_void = null_mut();
        rt!(cudaMallocFromPoolAsync(
            &mut p, IPC_BYTES, kept.pool, kept.s
        ))?;
        kept.p = p as CUdeviceptr;
        rt!(cudaMemcpyAsync(
            p,
            data.as_ptr().cast(),
            IPC_BYTES,
            cudaMemcpyDefault,
            kept.s
        ))?;
        rt!(cudaStreamSynchronize(kept.s))?;
        rt!(cudaMemPoolExportToShareableHandle(
            (&mut fd as *mut i32).cast(),
            kept.pool,
            cudaMemHandleTypePosixFileDescriptor,
            0
        ))?;
        // Same 64 reserved bytes as the driver's struct (tests/abi_layout.rs).
        rt!(cudaMemPoolExportPointer(
            (&mut export as *mut CUmemPoolPtrExportData).cast(),
            p
        ))?;
    } else {
        let props = cu_props(
            CU_MEM_ALLOCATION_TYPE_PINNED,
            cu_loc(CU_MEM_LOCATION_TYPE_DEVICE, 0),
            fd_type,
            0,
        );
        cu!(cuMemPoolCreate(&mut kept.pool, &props))?;
        cu!(cuStreamCreate(&mut kept.s, CU_STREAM_NON_BLOCKING.0))?;
        cu!(cuMemAllocFromPoolAsync(
            &mut kept.p,
            IPC_BYTES,
            kept.pool,
            kept.s
        ))?;
        cu!(cuMemcpyHtoDAsync(
            kept.p,
            data.as_ptr().cast(),
            IPC_BYTES,
            kept.s
        ))?;
        cu!(cuStreamSynchronize(kept.s))?;
        cu!(cuMemPoolExportToShareableHandle(
            (&mut fd as *mut i32).cast(),
            kept.pool,
            fd_type,
            0
        ))?;
        cu!(cuMemPoolExportPointer(&mut export, kept.p))?;
    }
    let mut f = pd::Fields::default();
    f.push("bytes", IPC_BYTES);
    f.push("seed", pd::SEED);
    f.push("pointer", pd::hex(&export.reserved));
    Ok((fd, f, kept))
}

fn rt_pool_exporter() -> TestResult {
    pd::exporter_main(|| {
        let (fd, f, kept) = pool_export(true)?;
        Ok((fd, f, Box::new(kept)))
    })
}

fn drv_pool_exporter() -> TestResult {
    pd::exporter_main(|| {
        let (fd, f, kept) = pool_export(false)?;
        Ok((fd, f, Box::new(kept)))
    })
}

/// What a pool importer holds: the imported pool and pointer (a `PoolKept`
/// whose release frees the imported pointer and destroys the imported pool,
/// the documented order for an importer).
struct PoolHeld(PoolKept);

impl pd::Held for PoolHeld {
    fn read(&mut self, n: usize) -> Result<Vec<u8>, String> {
        let k = &self.0;
        let mut v = vec![0u8; n];
        unsafe {
            if k.rt {
                let r = cudaMemcpyAsync(
                    v.as_mut_ptr().cast(),
                    k.p as *const c_void,
                    n,
                    cudaMemcpyDefault,
                    k.s,
                );
                let r = if r == cudaSuccess {
                    cudaStreamSynchronize(k.s)
                } else {
                    r
                };
                if r != cudaSuccess {
                    cudaGetLastError();
                    return Err(pd::rt_code(r));
                }
            } else {
                let r = cuMemcpyDtoHAsync(v.as_mut_ptr().cast(), k.p, n, k.s);
                let r = if r == CUDA_SUCCESS {
                    cuStreamSynchronize(k.s)
                } else {
                    r
                };
                if r != CUDA_SUCCESS {
                    return Err(pd::code(r));
                }
            }
        }
        Ok(v)
    }
    fn release(mut self: Box<Self>) -> String {
        self.0.release()
    }
}

/// Imports the pool from the descriptor (which it closes) and the pointer
/// from the `pointer` field, read-write for device 0.
fn pool_import(rt: bool, fd: i32, f: &pd::Fields) -> Result<Box<dyn pd::Held>, String> {
    let gpu = if rt { rt_init() } else { Gpu::new(0) }.map_err(pd::message)?;
    let mut k = PoolKept {
        rt,
        pool: null_mut(),
        p: 0,
        s: null_mut(),
        _gpu: gpu,
    };
    let mut export = CUmemPoolPtrExportData::default();
    let bytes = pd::unhex(f.get("pointer").map_err(pd::message)?)?;
    export.reserved.copy_from_slice(&bytes);
    let handle = fd as usize as *mut c_void;
    let fd_type = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    let dev = cu_loc(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    let access = CUmemAccessDesc {
        location: dev,
        flags: CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    unsafe {
        if rt {
            let r = cudaStreamCreateWithFlags(&mut k.s, cudaStreamNonBlocking);
            let r = if r == cudaSuccess {
                cudaMemPoolImportFromShareableHandle(
                    &mut k.pool,
                    handle,
                    cudaMemHandleTypePosixFileDescriptor,
                    0,
                )
            } else {
                r
            };
            libc::close(fd);
            if r != cudaSuccess {
                k.pool = null_mut();
                return Err(format!("import_pool:{}", pd::rt_code(r)));
            }
            // As rt_ipc_importer: read-write for device 0, set only if not
            // already granted.
            let mut loc = rt_loc(cudaMemLocationTypeDevice, 0);
            let mut flags = cudaMemAccessFlags(0xdead);
            let r = cudaMemPoolGetAccess(&mut flags, k.pool, &mut loc);
            let r = if r == cudaSuccess && flags != cudaMemAccessFlagsProtReadWrite {
                let desc = cudaMemAccessDesc {
                    location: loc,
                    flags: cudaMemAccessFlagsProtReadWrite,
                };
                cudaMemPoolSetAccess(k.pool, &desc, 1)
            } else {
                r
            };
            if r != cudaSuccess {
                return Err(format!("access:{}", pd::rt_code(r)));
            }
            let mut p: *mut c_void = null_mut();
            let r = cudaMemPoolImportPointer(
                &mut p,
                k.pool,
                (&mut export as *mut CUmemPoolPtrExportData).cast(),
            );
            if r != cudaSuccess {
                cudaMemPoolDestroy(k.pool);
                k.pool = null_mut();
                return Err(format!("import_pointer:{}", pd::rt_code(r)));
            }
            k.p = p as CUdeviceptr;
        } else {
            let r = cuStreamCreate(&mut k.s, CU_STREAM_NON_BLOCKING.0);
            let r = if r == CUDA_SUCCESS {
                cuMemPoolImportFromShareableHandle(&mut k.pool, handle, fd_type, 0)
            } else {
                r
            };
            libc::close(fd);
            if r != CUDA_SUCCESS {
                k.pool = null_mut();
                return Err(format!("import_pool:{}", pd::code(r)));
            }
            // As drv_ipc_importer: set only if not already read-write.
            let mut loc = dev;
            let mut flags = CUmemAccess_flags(0xdead);
            let r = cuMemPoolGetAccess(&mut flags, k.pool, &mut loc);
            let r = if r == CUDA_SUCCESS && flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE {
                cuMemPoolSetAccess(k.pool, &access, 1)
            } else {
                r
            };
            if r != CUDA_SUCCESS {
                return Err(format!("access:{}", pd::code(r)));
            }
            let r = cuMemPoolImportPointer(&mut k.p, k.pool, &mut export);
            if r != CUDA_SUCCESS {
                cuMemPoolDestroy(k.pool);
                k.pool = null_mut();
                return Err(format!("import_pointer:{}", pd::code(r)));
            }
        }
    }
    Ok(Box::new(PoolHeld(k)))
}

fn rt_pool_importer() -> TestResult {
    pd::importer_main(|fd, f| pool_import(true, fd, f))
}

fn drv_pool_importer() -> TestResult {
    pd::importer_main(|fd, f| pool_import(false, fd, f))
}

/// `ReservedMemCurrent` of a pool, runtime or driver query.
fn pool_reserved(rt: bool, pool: CUmemoryPool) -> Result<u64, Failed> {
    if rt {
        rt_get_u64(pool, cudaMemPoolAttrReservedMemCurrent)
    } else {
        cu_get_u64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
    }
}

/// The importer child holding an imported pointer is SIGKILLed: the
/// exporter's bytes are intact, its pool keeps allocating and freeing, and
/// after it frees its allocation and trims the pool, `ReservedMemCurrent` is
/// 0 and `cuMemGetInfo` shows the memory back.
fn pool_importer_killed(rt: bool) -> TestResult {
    let _gpu = if rt { rt_init()? } else { Gpu::new(0)? };
    let (test, importer) = if rt {
        ("rt_pool_importer_killed_while_mapped", "rt_pool_importer")
    } else {
        ("drv_pool_importer_killed_while_mapped", "drv_pool_importer")
    };
    pd::importer_killed(
        test,
        importer,
        || pool_export(rt),
        pd::free_memory,
        "after the pool was destroyed",
    )
}

impl pd::Exporting for PoolKept {
    fn read(&mut self, n: usize) -> Result<Vec<u8>, String> {
        let mut v = vec![0u8; n];
        let r = unsafe { cuMemcpyDtoHAsync(v.as_mut_ptr().cast(), self.p, n, self.s) };
        let r = if r == CUDA_SUCCESS {
            unsafe { cuStreamSynchronize(self.s) }
        } else {
            r
        };
        if r != CUDA_SUCCESS {
            return Err(pd::code(r));
        }
        Ok(v)
    }
    fn while_mapped(&self) -> Result<(&'static str, String), Failed> {
        Ok((
            "reserved_mapped",
            pool_reserved(self.rt, self.pool)?.to_string(),
        ))
    }
    /// The pool goes on allocating and freeing after the importer's death.
    fn go_on(&mut self, round: u32) -> TestResult {
        let s = CuStream::new()?;
        let data = pattern(IPC_BYTES, round);
        let mut p: CUdeviceptr = 0;
        cu!(cuMemAllocFromPoolAsync(&mut p, IPC_BYTES, self.pool, s.0))?;
        let checked = cu_round_trip(p, &data, &s);
        cu!(cuMemFreeAsync(p, s.0))?;
        s.sync()?;
        checked
    }
    /// Frees the exported allocation, then trims: nothing may stay reserved
    /// for the dead importer (polled: the driver may notice the death late).
    fn release(mut self) -> (Vec<(&'static str, String)>, TestResult) {
        let mut figures = vec![];
        let verdict = pool_release_after_death(&mut self, &mut figures);
        drop(self);
        (figures, verdict)
    }
}

/// [`pd::Exporting::release`] of a pool: each step's figure, then the verdict.
fn pool_release_after_death(
    kept: &mut PoolKept,
    figures: &mut Vec<(&'static str, String)>,
) -> TestResult {
    let freed = if kept.rt {
        pd::rt_code(unsafe { cudaFreeAsync(kept.p as *mut c_void, kept.s) })
    } else {
        pd::code(unsafe { cuMemFreeAsync(kept.p, kept.s) })
    };
    figures.push(("exporter_free", freed.clone()));
    cu!(cuStreamSynchronize(kept.s))?;
    let start = Instant::now();
    let reserved_trimmed = loop {
        cu!(cuMemPoolTrimTo(kept.pool, 0))?;
        let r = pool_reserved(kept.rt, kept.pool)?;
        if r == 0 || start.elapsed() > pd::FREE_TIMEOUT {
            break r;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    figures.push(("reserved_after_trim", reserved_trimmed.to_string()));
    figures.push(("trimmed_in_ms", start.elapsed().as_millis().to_string()));
    let destroyed = pd::code(unsafe { cuMemPoolDestroy(kept.pool) });
    kept.pool = null_mut();
    unsafe { cuStreamDestroy(kept.s) };
    kept.s = null_mut();
    figures.push(("pool_destroy", destroyed.clone()));
    ensure!(
        freed.starts_with("cudaSuccess") || freed == "CUDA_SUCCESS",
        "freeing the exported allocation after the importer died: {freed}"
    );
    ensure!(
        reserved_trimmed == 0,
        "{reserved_trimmed} B still reserved after the free and a trim to 0"
    );
    ensure!(destroyed == "CUDA_SUCCESS", "cuMemPoolDestroy: {destroyed}");
    Ok(())
}

fn rt_process_death_importer_killed_while_mapped() -> TestResult {
    pool_importer_killed(true)
}

fn drv_process_death_importer_killed_while_mapped() -> TestResult {
    pool_importer_killed(false)
}

/// The exporter child is SIGKILLed while the importer child holds an
/// imported pointer. NVIDIA documents nothing about this for pools: what the
/// importer reads after the death is recorded; it must exit 0 and the memory
/// must come back.
fn rt_process_death_exporter_killed() -> TestResult {
    let _gpu = rt_init()?;
    pd::exporter_killed(
        "rt_pool_exporter_killed",
        "rt_pool_exporter",
        "rt_pool_importer",
        &[],
        false,
        pd::free_memory,
    )
}

fn drv_process_death_exporter_killed() -> TestResult {
    let _gpu = Gpu::new(0)?;
    pd::exporter_killed(
        "drv_pool_exporter_killed",
        "drv_pool_exporter",
        "drv_pool_importer",
        &[],
        false,
        pd::free_memory,
    )
}

/// A pool descriptor (and pointer export data) received after the exporter
/// was SIGKILLed: the import's outcome is recorded (the exporter's bytes, or
/// an error code); the importer exits 0 and the memory comes back.
fn rt_process_death_descriptor_after_sender_died() -> TestResult {
    let _gpu = rt_init()?;
    pd::descriptor_after_sender_died(
        "rt_pool_descriptor_after_sender_died",
        "rt_pool_exporter",
        "rt_pool_importer",
        &[],
        false,
        pd::free_memory,
    )
}

fn drv_process_death_descriptor_after_sender_died() -> TestResult {
    let _gpu = Gpu::new(0)?;
    pd::descriptor_after_sender_died(
        "drv_pool_descriptor_after_sender_died",
        "drv_pool_exporter",
        "drv_pool_importer",
        &[],
        false,
        pd::free_memory,
    )
}

/// Driver bad input: documented errors, then proof the process still works.
fn drv_bad_input() -> TestResult {
    let gpu = Gpu::new(0)?;
    let s = CuStream::new()?;
    let mut c = BadInput::new(|_| cu_alive(&s));
    let pool = CuPool::create(&cu_device_props(64 * MIB))?;
    let mut dflt: CUmemoryPool = null_mut();
    cu!(cuDeviceGetDefaultMemPool(&mut dflt, gpu.dev))?;
    let mut p: CUdeviceptr = 0;
    let mut v: u64 = 0;

    // cuMemPoolGetAccess for a device that does not exist: recorded against
    // CUDA_ERROR_INVALID_VALUE (the reference lists no codes; not yet
    // measured), asserted only to fail and leave the process working.
    let mut flags = CUmemAccess_flags(0xdead);
    let mut nowhere = cu_loc(CU_MEM_LOCATION_TYPE_DEVICE, 9999);
    let r = unsafe { cuMemPoolGetAccess(&mut flags, pool.0, &mut nowhere) };
    common::report_bad_input(
        None,
        "cuMemPoolGetAccess(pool, device 9999) [recorded: unmeasured, asserted to be an error]",
        &common::error_name(CUDA_ERROR_INVALID_VALUE),
        &common::error_name(r),
    );
    c.ok(if r == CUDA_SUCCESS {
        Err(format!(
            "cuMemPoolGetAccess(device 9999) succeeded with flags {}",
            flags.0
        )
        .into())
    } else {
        Ok(())
    });
    c.still_works();

    bad!(
        c,
        CUDA_ERROR_INVALID_VALUE,
        cuMemAllocAsync(null_mut(), 4096, s.0)
    );
    // Zero size: not documented; only the documented return set is asserted.
    let mut z: CUdeviceptr = 0x1234;
    let r = unsafe { cuMemAllocAsync(&mut z, 0, s.0) };
    println!(
        "cuMemAllocAsync(size 0) returned {}, pointer {z:#x}",
        common::error_name(r)
    );
    if r == CUDA_SUCCESS && z != 0 {
        c.ok(cu!(cuMemFreeAsync(z, s.0)));
    }
    if r != CUDA_SUCCESS && r != CUDA_ERROR_INVALID_VALUE {
        c.ok(common::expect_error(r, CUDA_ERROR_INVALID_VALUE, "size 0"));
    }
    c.still_works();
    // Over the pool's maxSize (in the headers from 12.2: unbounded before).
    #[cfg(cuda_12020)]
    bad!(
        c,
        CUDA_ERROR_OUT_OF_MEMORY,
        cuMemAllocFromPoolAsync(&mut p, 128 * MIB, pool.0, s.0)
    );
    #[cfg(not(cuda_12020))]
    println!("  skipped: an allocation over the pool's maxSize: CUmemPoolProps::maxSize not in these headers (added in 12.2)");
    bad!(
        c,
        CUDA_ERROR_INVALID_VALUE,
        cuMemAllocFromPoolAsync(&mut p, 4096, null_mut(), s.0)
    );
    bad!(
        c,
        CUDA_ERROR_INVALID_VALUE,
        cuMemPoolGetAttribute(
            null_mut(),
            CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut v as *mut u64).cast()
        )
    );
    bad!(c, CUDA_ERROR_INVALID_VALUE, cuMemPoolTrimTo(null_mut(), 0));
    bad!(c, CUDA_ERROR_INVALID_VALUE, cuMemPoolDestroy(null_mut()));
    for attr in [CUmemPool_attribute(0), CUmemPool_attribute(0x7fff)] {
        bad!(
            c,
            CUDA_ERROR_INVALID_VALUE,
            cuMemPoolGetAttribute(pool.0, attr, (&mut v as *mut u64).cast())
        );
        bad!(
            c,
            CUDA_ERROR_INVALID_VALUE,
            cuMemPoolSetAttribute(pool.0, attr, (&mut v as *mut u64).cast())
        );
    }
    bad!(c, CUDA_ERROR_INVALID_VALUE, cuMemPoolDestroy(dflt));
    let mut fd: i32 = -1;
    bad!(
        c,
        CUDA_ERROR_INVALID_VALUE,
        cuMemPoolExportToShareableHandle(
            (&mut fd as *mut i32).cast(),
            pool.0,
            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            0
        )
    );
    // A descriptor that is not open: CUDA_ERROR_UNKNOWN as measured (the
    // reference lists CUDA_ERROR_INVALID_VALUE, _NOT_INITIALIZED, _OUT_OF_MEMORY).
    let mut imported: CUmemoryPool = null_mut();
    bad!(
        c,
        CUDA_ERROR_UNKNOWN,
        cuMemPoolImportFromShareableHandle(
            &mut imported,
            -1isize as usize as *mut c_void,
            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            0
        )
    );
    let mut bogus = CUmemPoolPtrExportData::default();
    let ipc = CuPool::create(&cu_props(
        CU_MEM_ALLOCATION_TYPE_PINNED,
        cu_loc(CU_MEM_LOCATION_TYPE_DEVICE, 0),
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
        0,
    ))?;
    bad!(
        c,
        CUDA_ERROR_INVALID_VALUE,
        cuMemPoolExportToShareableHandle(
            (&mut fd as *mut i32).cast(),
            ipc.0,
            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            1
        )
    );
    cu!(cuMemAllocFromPoolAsync(&mut p, 4096, pool.0, s.0))?;
    s.sync()?;
    let r = unsafe { cuMemPoolExportPointer(&mut bogus, p) };
    cu!(cuMemFreeAsync(p, s.0))?;
    s.sync()?;
    c.ok(common::expect_error(
        r,
        CUDA_ERROR_INVALID_VALUE,
        "cuMemPoolExportPointer(non-IPC pool)",
    ));
    c.still_works();
    let mut local = [0u8; 64];
    bad!(
        c,
        CUDA_ERROR_INVALID_VALUE,
        cuMemFreeAsync(local.as_mut_ptr() as usize as CUdeviceptr, s.0)
    );
    let f = cu_figures(pool.0)?;
    ensure!(f.used == 0, "the bad calls left {} bytes used", f.used);
    ipc.destroy()?;
    pool.destroy()?;
    c.finish()
}

// ---------------------------------------------------------------------------
// Twin scenarios: written once, run through the runtime and through the driver
// ---------------------------------------------------------------------------

/// The runtime ([`Rt`]) or the driver ([`Drv`]), as a twin scenario calls it.
/// Pointers are `CUdeviceptr`, pools `CUmemoryPool`, streams `CUstream` for
/// both (the runtime's `cudaMemPool_t` and `cudaStream_t` are the same types).
/// The twins' deliberate differences are the methods' two bodies.
// Before 12.2 (host pools) and 13.0 (location pools) some methods serve no test.
#[cfg_attr(not(cuda_13000), allow(dead_code))]
trait Api: Sized {
    /// "runtime" or "driver", for messages.
    const NAME: &'static str;
    type Stream: TwinStream;
    /// Device 0 current (for the runtime, `cudaSetDevice` too), memory pools supported.
    fn init() -> Result<Gpu, Failed>;
    fn stream() -> Result<Self::Stream, Failed>;
    /// Every way the API names device 0's default (and, at start, current) pool.
    fn default_pools(gpu: &Gpu) -> Result<Vec<(&'static str, CUmemoryPool)>, Failed>;
    /// A pinned pool on device 0, no handle types, no maximum size.
    fn device_pool() -> Result<TwinPool<Self>, Failed>;
    /// A pool's properties (`cudaMemPoolProps`, `CUmemPoolProps`).
    type Props;
    fn pool_create(props: &Self::Props) -> Result<CUmemoryPool, Failed>;
    /// The API's pool properties for the driver's values of the three kinds
    /// (the runtime's enumerators have the same numbers: checked below).
    fn props(
        alloc: CUmemAllocationType,
        loc: CUmemLocation,
        handles: CUmemAllocationHandleType,
    ) -> Self::Props;
    /// A pinned device-0 pool of at most `max` bytes.
    fn props_max(max: usize) -> Self::Props;
    /// Creating a pool with `props` fails with "invalid value" (a pool made
    /// anyway is destroyed).
    fn create_refused(props: &Self::Props, what: &str) -> TestResult;
    /// The pointer is managed memory, as the API reports it.
    fn is_managed(p: CUdeviceptr) -> Result<bool, Failed>;
    /// "device", "host", "managed" (or the API's number): the pointer's memory
    /// type as the API reports it.
    fn memory_kind(p: CUdeviceptr) -> Result<String, Failed>;
    /// The pool of a location and kind: its default (`Default`), its current
    /// one (`Current`), or `pool` made current (`Set`); the code, the pool and
    /// the entry point's name.
    #[cfg(cuda_13000)]
    fn loc_pool(
        op: LocPool,
        loc: CUmemLocation,
        kind: CUmemAllocationType,
        pool: CUmemoryPool,
    ) -> (Self::Code, CUmemoryPool, &'static str);
    /// The device's current pool, after making `set` current where given.
    fn device_current(gpu: &Gpu, set: Option<CUmemoryPool>) -> Result<CUmemoryPool, Failed>;
    /// `got` must be `want` (`common::expect_error` or `expect_rt_error`).
    fn expect(got: Self::Code, want: Self::Code, what: &str) -> TestResult;

    // Two streams ordered by events, and the pools' reuse policies.
    type Event: TwinEvent;
    /// "Out of memory" (the runtime's `cudaErrorMemoryAllocation`) and "not ready".
    const OUT_OF_MEMORY: Self::Code;
    const NOT_READY: Self::Code;
    fn event() -> Result<Self::Event, Failed>;
    fn record(e: CUevent, s: CUstream) -> TestResult;
    fn wait_event(s: CUstream, e: CUevent) -> TestResult;
    /// Queues `f(user)` on `s`.
    fn launch_host(
        s: CUstream,
        f: unsafe extern "C" fn(*mut c_void),
        user: *mut c_void,
    ) -> TestResult;
    /// The stream's state: success (idle) or "not ready".
    fn query(s: CUstream) -> Self::Code;
    fn set_release_threshold(pool: CUmemoryPool, bytes: u64) -> TestResult;
    /// Sets the three reuse policies (follow events, opportunistic, internal
    /// dependencies) and reads them back.
    fn policies(pool: CUmemoryPool, follow: i32, opportunistic: i32, internal: i32) -> TestResult;
    fn pool_destroy(pool: CUmemoryPool) -> TestResult;
    fn alloc(n: usize, s: CUstream) -> Result<CUdeviceptr, Failed>;
    fn alloc_from(pool: CUmemoryPool, n: usize, s: CUstream) -> Result<CUdeviceptr, Failed>;
    fn free(p: CUdeviceptr, s: CUstream) -> TestResult;
    fn write(p: CUdeviceptr, data: &[u8], s: CUstream) -> TestResult;
    fn read(back: &mut [u8], p: CUdeviceptr, s: CUstream) -> TestResult;
    fn figures(pool: CUmemoryPool) -> Result<Figures, Failed>;
    /// Resets the pool's used-memory high-water mark (set to 0).
    fn reset_used_high(pool: CUmemoryPool) -> TestResult;
    fn memset(p: CUdeviceptr, byte: u8, n: usize, s: CUstream) -> TestResult;
    /// The pointer's memory type is device memory (of device 0).
    fn is_device_memory(p: CUdeviceptr) -> TestResult;
    /// Access to `pool` from device `dev`, as the driver's flags.
    fn access(pool: CUmemoryPool, dev: i32) -> Result<CUmemAccess_flags, Failed>;
    fn set_access(pool: CUmemoryPool, dev: i32, flags: CUmemAccess_flags) -> TestResult;
    /// Read-only peer access to a pool: refused with "not supported" (measured
    /// on two H200s, driver 580.159; the reference's lists do not name it).
    fn read_only_refused(pool: CUmemoryPool, dev: i32) -> TestResult;
    fn can_access_peer(dev: i32, peer: i32) -> Result<i32, Failed>;
    /// Makes device `ordinal` the API's current device (the driver: `gpu`'s context).
    fn make_current(gpu: &Gpu, ordinal: i32) -> TestResult;
    /// After a bad call: the API still allocates, copies and frees in stream order.
    fn alive(s: &Self::Stream) -> TestResult;

    // IPC through a POSIX-descriptor pool.
    /// The child role importing in `ipc_two_processes`.
    const IMPORTER: &'static str;
    /// The API's result code; `INVALID_VALUE`, `UNKNOWN`: its two codes the IPC
    /// importer expects.
    type Code: Copy + PartialEq;
    const INVALID_VALUE: Self::Code;
    const UNKNOWN: Self::Code;
    /// `Ok` if `code` is success, else a failure naming `what`.
    fn ok(code: Self::Code, what: &str) -> TestResult;
    /// The code's name (`common::error_name`, `rt_error_name`).
    fn name(code: Self::Code) -> String;
    /// A bad call's `got` against `want`, then the probe ([`BadInput`]).
    fn bad(c: &mut BadInput, want: Self::Code, got: Self::Code, what: &str);
    /// Device 0's pools can be exported as POSIX file descriptors.
    fn fd_pools_supported(gpu: &Gpu) -> TestResult;
    /// A pinned pool on device 0 exportable as a POSIX file descriptor.
    fn fd_pool() -> Result<TwinPool<Self>, Failed>;
    fn export_pool(pool: CUmemoryPool) -> Result<i32, Failed>;
    /// Imports the pool `fd` names: the code and the entry point's name.
    fn import_pool(pool: &mut CUmemoryPool, fd: i32) -> (Self::Code, &'static str);
    /// The 64 bytes that name allocation `p` to an importer.
    fn export_pointer(p: CUdeviceptr) -> (Self::Code, [u8; 64]);
    fn import_pointer(
        p: &mut CUdeviceptr,
        pool: CUmemoryPool,
        data: [u8; 64],
    ) -> (Self::Code, &'static str);
    fn alloc_from_raw(
        p: &mut CUdeviceptr,
        pool: CUmemoryPool,
        n: usize,
        s: CUstream,
    ) -> (Self::Code, &'static str);
}

/// The kit's events, as twin scenarios use them.
trait TwinEvent {
    fn raw(&self) -> CUevent;
}

impl TwinEvent for RtEvent {
    fn raw(&self) -> CUevent {
        self.0
    }
}

impl TwinEvent for CuEvent {
    fn raw(&self) -> CUevent {
        self.0
    }
}

/// Which pool of a location `Api::loc_pool` reads or sets (13.0 on).
#[cfg(cuda_13000)]
#[derive(Clone, Copy)]
enum LocPool {
    Default,
    Current,
    Set,
}

/// The kit's streams, as twin scenarios use them.
trait TwinStream {
    fn raw(&self) -> CUstream;
    fn sync(&self) -> TestResult;
}

impl TwinStream for RtStream {
    fn raw(&self) -> CUstream {
        self.0
    }
    fn sync(&self) -> TestResult {
        RtStream::sync(self)
    }
}

impl TwinStream for CuStream {
    fn raw(&self) -> CUstream {
        self.0
    }
    fn sync(&self) -> TestResult {
        CuStream::sync(self)
    }
}

/// A created pool of either API, destroyed on drop unless `destroy` was called.
struct TwinPool<A: Api>(CUmemoryPool, PhantomData<A>);

impl<A: Api> TwinPool<A> {
    fn create(props: &A::Props) -> Result<TwinPool<A>, Failed> {
        let pool = A::pool_create(props)?;
        ensure!(
            !pool.is_null(),
            "{} pool create returned a null pool",
            A::NAME
        );
        Ok(TwinPool(pool, PhantomData))
    }
    fn destroy(mut self) -> TestResult {
        A::pool_destroy(std::mem::replace(&mut self.0, null_mut()))
    }
}

impl<A: Api> Drop for TwinPool<A> {
    fn drop(&mut self) {
        if !self.0.is_null() {
            let _ = A::pool_destroy(self.0);
        }
    }
}

struct Rt;
struct Drv;

fn vp(p: CUdeviceptr) -> *mut c_void {
    p as *mut c_void
}

impl Api for Rt {
    const NAME: &'static str = "runtime";
    type Stream = RtStream;
    fn init() -> Result<Gpu, Failed> {
        rt_init()
    }
    fn stream() -> Result<RtStream, Failed> {
        RtStream::new()
    }
    fn default_pools(gpu: &Gpu) -> Result<Vec<(&'static str, CUmemoryPool)>, Failed> {
        let (mut dev_pool, mut drv_pool) = (null_mut(), null_mut());
        rt!(cudaDeviceGetDefaultMemPool(&mut dev_pool, 0))?;
        cu!(cuDeviceGetDefaultMemPool(&mut drv_pool, gpu.dev))?;
        #[allow(unused_mut)] // nothing is added before 13.0
        let mut pools = vec![
            ("cudaDeviceGetDefaultMemPool", dev_pool),
            ("cuDeviceGetDefaultMemPool", drv_pool),
        ];
        #[cfg(cuda_13000)]
        {
            let mut mem_pool = null_mut();
            let mut loc = rt_loc(cudaMemLocationTypeDevice, 0);
            rt!(cudaMemGetDefaultMemPool(
                &mut mem_pool,
                &mut loc,
                cudaMemAllocationTypePinned
            ))?;
            pools.insert(1, ("cudaMemGetDefaultMemPool", mem_pool));
        }
        #[cfg(not(cuda_13000))]
        println!("  skipped: cudaMemGetDefaultMemPool: not in these headers (added in 13.0)");
        Ok(pools)
    }
    fn device_pool() -> Result<TwinPool<Rt>, Failed> {
        RtPool::create(&rt_device_props(0))
    }
    type Props = cudaMemPoolProps;
    fn pool_create(props: &cudaMemPoolProps) -> Result<CUmemoryPool, Failed> {
        let mut pool: cudaMemPool_t = null_mut();
        rt!(cudaMemPoolCreate(&mut pool, props))?;
        Ok(pool)
    }
    fn props(
        alloc: CUmemAllocationType,
        loc: CUmemLocation,
        handles: CUmemAllocationHandleType,
    ) -> cudaMemPoolProps {
        rt_props(
            cudaMemAllocationType(alloc.0),
            rt_loc(cudaMemLocationType(loc.type_.0), common::cu_loc_id(&loc)),
            cudaMemAllocationHandleType(handles.0),
            0,
        )
    }
    fn props_max(max: usize) -> cudaMemPoolProps {
        rt_device_props(max)
    }
    fn create_refused(props: &cudaMemPoolProps, what: &str) -> TestResult {
        let mut pool: cudaMemPool_t = null_mut();
        let r = unsafe { cudaMemPoolCreate(&mut pool, props) };
        if r == cudaSuccess {
            rt!(cudaMemPoolDestroy(pool))?;
        }
        common::expect_rt_error(
            r,
            cudaErrorInvalidValue,
            &format!("cudaMemPoolCreate({what})"),
        )
    }
    fn is_managed(p: CUdeviceptr) -> Result<bool, Failed> {
        let mut attrs = cudaPointerAttributes::default();
        rt!(cudaPointerGetAttributes(&mut attrs, vp(p)))?;
        Ok(attrs.type_ == cudaMemoryTypeManaged)
    }
    fn memory_kind(p: CUdeviceptr) -> Result<String, Failed> {
        let mut attrs = cudaPointerAttributes::default();
        rt!(cudaPointerGetAttributes(&mut attrs, vp(p)))?;
        let t = attrs.type_;
        Ok(if t == cudaMemoryTypeDevice {
            "device".into()
        } else if t == cudaMemoryTypeHost {
            "host".into()
        } else if t == cudaMemoryTypeManaged {
            "managed".into()
        } else {
            format!("cudaMemoryType {}", t.0)
        })
    }
    #[cfg(cuda_13000)]
    fn loc_pool(
        op: LocPool,
        loc: CUmemLocation,
        kind: CUmemAllocationType,
        pool: CUmemoryPool,
    ) -> (cudaError_t, CUmemoryPool, &'static str) {
        let mut l = rt_loc(cudaMemLocationType(loc.type_.0), common::cu_loc_id(&loc));
        let kind = cudaMemAllocationType(kind.0);
        let mut out: cudaMemPool_t = null_mut();
        let (r, name) = unsafe {
            match op {
                LocPool::Default => (
                    cudaMemGetDefaultMemPool(&mut out, &mut l, kind),
                    "cudaMemGetDefaultMemPool",
                ),
                LocPool::Current => (
                    cudaMemGetMemPool(&mut out, &mut l, kind),
                    "cudaMemGetMemPool",
                ),
                LocPool::Set => (cudaMemSetMemPool(&mut l, kind, pool), "cudaMemSetMemPool"),
            }
        };
        (r, out, name)
    }
    fn device_current(_gpu: &Gpu, set: Option<CUmemoryPool>) -> Result<CUmemoryPool, Failed> {
        if let Some(pool) = set {
            rt!(cudaDeviceSetMemPool(0, pool))?;
        }
        let mut pool: cudaMemPool_t = null_mut();
        rt!(cudaDeviceGetMemPool(&mut pool, 0))?;
        Ok(pool)
    }
    fn expect(got: cudaError_t, want: cudaError_t, what: &str) -> TestResult {
        common::expect_rt_error(got, want, what)
    }
    type Event = RtEvent;
    const OUT_OF_MEMORY: cudaError_t = cudaErrorMemoryAllocation;
    const NOT_READY: cudaError_t = cudaErrorNotReady;
    fn event() -> Result<RtEvent, Failed> {
        RtEvent::new()
    }
    fn record(e: CUevent, s: CUstream) -> TestResult {
        rt!(cudaEventRecord(e, s))
    }
    fn wait_event(s: CUstream, e: CUevent) -> TestResult {
        rt!(cudaStreamWaitEvent(s, e, 0))
    }
    fn launch_host(
        s: CUstream,
        f: unsafe extern "C" fn(*mut c_void),
        user: *mut c_void,
    ) -> TestResult {
        rt!(cudaLaunchHostFunc(s, Some(f), user))
    }
    fn query(s: CUstream) -> cudaError_t {
        unsafe { cudaStreamQuery(s) }
    }
    fn set_release_threshold(pool: CUmemoryPool, bytes: u64) -> TestResult {
        rt_set_u64(pool, cudaMemPoolAttrReleaseThreshold, bytes)
    }
    fn policies(pool: CUmemoryPool, follow: i32, opportunistic: i32, internal: i32) -> TestResult {
        rt_policies(pool, follow, opportunistic, internal)
    }
    fn pool_destroy(pool: CUmemoryPool) -> TestResult {
        rt!(cudaMemPoolDestroy(pool))
    }
    fn alloc(n: usize, s: CUstream) -> Result<CUdeviceptr, Failed> {
        let mut p: *mut c_void = null_mut();
        rt!(cudaMallocAsync(&mut p, n, s))?;
        ensure!(!p.is_null(), "cudaMallocAsync returned a null pointer");
        Ok(p as CUdeviceptr)
    }
    fn alloc_from(pool: CUmemoryPool, n: usize, s: CUstream) -> Result<CUdeviceptr, Failed> {
        let mut p: *mut c_void = null_mut();
        rt!(cudaMallocFromPoolAsync(&mut p, n, pool, s))?;
        Ok(p as CUdeviceptr)
    }
    fn free(p: CUdeviceptr, s: CUstream) -> TestResult {
        rt!(cudaFreeAsync(vp(p), s))
    }
    fn write(p: CUdeviceptr, data: &[u8], s: CUstream) -> TestResult {
        rt!(cudaMemcpyAsync(
            vp(p),
            data.as_ptr().cast(),
            data.len(),
            cudaMemcpyDefault,
            s
        ))
    }
    fn read(back: &mut [u8], p: CUdeviceptr, s: CUstream) -> TestResult {
        rt!(cudaMemcpyAsync(
            back.as_mut_ptr().cast(),
            vp(p),
            back.len(),
            cudaMemcpyDefault,
            s
        ))
    }
    fn figures(pool: CUmemoryPool) -> Result<Figures, Failed> {
        rt_figures(pool)
    }
    fn reset_used_high(pool: CUmemoryPool) -> TestResult {
        rt_set_u64(pool, cudaMemPoolAttrUsedMemHigh, 0)
    }
    fn memset(p: CUdeviceptr, byte: u8, n: usize, s: CUstream) -> TestResult {
        rt!(cudaMemsetAsync(vp(p), byte as i32, n, s))
    }
    fn is_device_memory(p: CUdeviceptr) -> TestResult {
        let mut attrs = cudaPointerAttributes::default();
        rt!(cudaPointerGetAttributes(&mut attrs, vp(p)))?;
        ensure!(
            attrs.type_ == cudaMemoryTypeDevice && attrs.device == 0,
            "pointer attributes: type {}, device {}",
            attrs.type_.0,
            attrs.device
        );
        Ok(())
    }
    fn access(pool: CUmemoryPool, dev: i32) -> Result<CUmemAccess_flags, Failed> {
        let flags = rt_get_access(pool, rt_loc(cudaMemLocationTypeDevice, dev))?;
        Ok(CUmemAccess_flags(flags.0))
    }
    fn set_access(pool: CUmemoryPool, dev: i32, flags: CUmemAccess_flags) -> TestResult {
        let loc = rt_loc(cudaMemLocationTypeDevice, dev);
        rt_set_access(pool, loc, cudaMemAccessFlags(flags.0))
    }
    fn read_only_refused(pool: CUmemoryPool, dev: i32) -> TestResult {
        let read_only = cudaMemAccessDesc {
            location: rt_loc(cudaMemLocationTypeDevice, dev),
            flags: cudaMemAccessFlagsProtRead,
        };
        rt_err!(
            cudaErrorNotSupported,
            cudaMemPoolSetAccess(pool, &read_only, 1)
        )
    }
    fn can_access_peer(dev: i32, peer: i32) -> Result<i32, Failed> {
        let mut can = 0;
        rt!(cudaDeviceCanAccessPeer(&mut can, dev, peer))?;
        Ok(can)
    }
    fn make_current(gpu: &Gpu, ordinal: i32) -> TestResult {
        cu!(cuCtxSetCurrent(gpu.ctx))?;
        rt!(cudaSetDevice(ordinal))
    }
    fn alive(s: &RtStream) -> TestResult {
        rt_alive(s)
    }

    const IMPORTER: &'static str = "rt_ipc_importer";
    type Code = cudaError_t;
    const INVALID_VALUE: cudaError_t = cudaErrorInvalidValue;
    const UNKNOWN: cudaError_t = cudaErrorUnknown;
    fn ok(code: cudaError_t, what: &str) -> TestResult {
        common::check_rt(code, what)
    }
    fn name(code: cudaError_t) -> String {
        common::rt_error_name(code)
    }
    fn bad(c: &mut BadInput, want: cudaError_t, got: cudaError_t, what: &str) {
        c.rt(want, got, what);
    }
    fn fd_pools_supported(_gpu: &Gpu) -> TestResult {
        let mut types = 0;
        rt!(cudaDeviceGetAttribute(
            &mut types,
            cudaDevAttrMemoryPoolSupportedHandleTypes,
            0
        ))?;
        ensure!(
            types as u32 & cudaMemHandleTypePosixFileDescriptor.0 != 0,
            "pools on device 0 do not support POSIX fds (handle types {types:#x})"
        );
        Ok(())
    }
    fn fd_pool() -> Result<TwinPool<Rt>, Failed> {
        RtPool::create(&rt_props(
            cudaMemAllocationTypePinned,
            rt_loc(cudaMemLocationTypeDevice, 0),
            cudaMemHandleTypePosixFileDescriptor,
            0,
        ))
    }
    fn export_pool(pool: CUmemoryPool) -> Result<i32, Failed> {
        let mut fd: i32 = -1;
        rt!(cudaMemPoolExportToShareableHandle(
            (&mut fd as *mut i32).cast(),
            pool,
            cudaMemHandleTypePosixFileDescriptor,
            0
        ))?;
        Ok(fd)
    }
    fn import_pool(pool: &mut CUmemoryPool, fd: i32) -> (cudaError_t, &'static str) {
        let fd_type = cudaMemHandleTypePosixFileDescriptor;
        let handle = fd as usize as *mut c_void;
        let r = unsafe { cudaMemPoolImportFromShareableHandle(pool, handle, fd_type, 0) };
        (r, "cudaMemPoolImportFromShareableHandle")
    }
    fn export_pointer(p: CUdeviceptr) -> (cudaError_t, [u8; 64]) {
        let mut export = cudaMemPoolPtrExportData::default();
        let r = unsafe { cudaMemPoolExportPointer(&mut export, vp(p)) };
        (r, export.reserved)
    }
    fn import_pointer(
        p: &mut CUdeviceptr,
        pool: CUmemoryPool,
        data: [u8; 64],
    ) -> (cudaError_t, &'static str) {
        let mut export = cudaMemPoolPtrExportData { reserved: data };
        let mut ptr: *mut c_void = null_mut();
        let r = unsafe { cudaMemPoolImportPointer(&mut ptr, pool, &mut export) };
        *p = ptr as CUdeviceptr;
        (r, "cudaMemPoolImportPointer")
    }
    fn alloc_from_raw(
        p: &mut CUdeviceptr,
        pool: CUmemoryPool,
        n: usize,
        s: CUstream,
    ) -> (cudaError_t, &'static str) {
        let mut ptr: *mut c_void = null_mut();
        let r = unsafe { cudaMallocFromPoolAsync(&mut ptr, n, pool, s) };
        *p = ptr as CUdeviceptr;
        (r, "cudaMallocFromPoolAsync")
    }
}

impl Api for Drv {
    const NAME: &'static str = "driver";
    type Stream = CuStream;
    fn init() -> Result<Gpu, Failed> {
        let gpu = Gpu::new(0)?;
        ensure!(
            gpu.attribute(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)? == 1,
            "no memory pools on device 0"
        );
        Ok(gpu)
    }
    fn stream() -> Result<CuStream, Failed> {
        CuStream::new()
    }
    fn default_pools(gpu: &Gpu) -> Result<Vec<(&'static str, CUmemoryPool)>, Failed> {
        let (mut dflt, mut cur) = (null_mut(), null_mut());
        cu!(cuDeviceGetDefaultMemPool(&mut dflt, gpu.dev))?;
        cu!(cuDeviceGetMemPool(&mut cur, gpu.dev))?;
        #[allow(unused_mut)] // nothing is added before 13.0
        let mut pools = vec![
            ("cuDeviceGetDefaultMemPool", dflt),
            ("cuDeviceGetMemPool", cur),
        ];
        #[cfg(cuda_13000)]
        {
            let (mut via_loc, mut cur_loc) = (null_mut(), null_mut());
            let mut loc = cu_loc(CU_MEM_LOCATION_TYPE_DEVICE, 0);
            cu!(cuMemGetDefaultMemPool(
                &mut via_loc,
                &mut loc,
                CU_MEM_ALLOCATION_TYPE_PINNED
            ))?;
            cu!(cuMemGetMemPool(
                &mut cur_loc,
                &mut loc,
                CU_MEM_ALLOCATION_TYPE_PINNED
            ))?;
            pools.insert(1, ("cuMemGetDefaultMemPool", via_loc));
            pools.push(("cuMemGetMemPool", cur_loc));
        }
        #[cfg(not(cuda_13000))]
        println!("  skipped: cuMemGetDefaultMemPool, cuMemGetMemPool: not in these headers (added in 13.0)");
        Ok(pools)
    }
    fn device_pool() -> Result<TwinPool<Drv>, Failed> {
        CuPool::create(&cu_device_props(0))
    }
    type Props = CUmemPoolProps;
    fn pool_create(props: &CUmemPoolProps) -> Result<CUmemoryPool, Failed> {
        let mut pool: CUmemoryPool = null_mut();
        cu!(cuMemPoolCreate(&mut pool, props))?;
        Ok(pool)
    }
    fn props(
        alloc: CUmemAllocationType,
        loc: CUmemLocation,
        handles: CUmemAllocationHandleType,
    ) -> CUmemPoolProps {
        cu_props(alloc, loc, handles, 0)
    }
    fn props_max(max: usize) -> CUmemPoolProps {
        cu_device_props(max)
    }
    fn create_refused(props: &CUmemPoolProps, what: &str) -> TestResult {
        let mut pool: CUmemoryPool = null_mut();
        let r = unsafe { cuMemPoolCreate(&mut pool, props) };
        if r == CUDA_SUCCESS {
            cu!(cuMemPoolDestroy(pool))?;
        }
        common::expect_error(
            r,
            CUDA_ERROR_INVALID_VALUE,
            &format!("cuMemPoolCreate({what})"),
        )
    }
    fn is_managed(p: CUdeviceptr) -> Result<bool, Failed> {
        let mut managed: u32 = 0;
        cu!(cuPointerGetAttribute(
            (&mut managed as *mut u32).cast(),
            CU_POINTER_ATTRIBUTE_IS_MANAGED,
            p
        ))?;
        Ok(managed == 1)
    }
    fn memory_kind(p: CUdeviceptr) -> Result<String, Failed> {
        if Drv::is_managed(p)? {
            return Ok("managed".into());
        }
        let mut mem_type = CUmemorytype(0);
        cu!(cuPointerGetAttribute(
            (&mut mem_type as *mut CUmemorytype).cast(),
            CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            p
        ))?;
        Ok(match mem_type {
            CU_MEMORYTYPE_DEVICE => "device".into(),
            CU_MEMORYTYPE_HOST => "host".into(),
            t => format!("CUmemorytype {}", t.0),
        })
    }
    #[cfg(cuda_13000)]
    fn loc_pool(
        op: LocPool,
        mut loc: CUmemLocation,
        kind: CUmemAllocationType,
        pool: CUmemoryPool,
    ) -> (CUresult, CUmemoryPool, &'static str) {
        let mut out: CUmemoryPool = null_mut();
        let (r, name) = unsafe {
            match op {
                LocPool::Default => (
                    cuMemGetDefaultMemPool(&mut out, &mut loc, kind),
                    "cuMemGetDefaultMemPool",
                ),
                LocPool::Current => (cuMemGetMemPool(&mut out, &mut loc, kind), "cuMemGetMemPool"),
                LocPool::Set => (cuMemSetMemPool(&mut loc, kind, pool), "cuMemSetMemPool"),
            }
        };
        (r, out, name)
    }
    fn device_current(gpu: &Gpu, set: Option<CUmemoryPool>) -> Result<CUmemoryPool, Failed> {
        if let Some(pool) = set {
            cu!(cuDeviceSetMemPool(gpu.dev, pool))?;
        }
        let mut pool: CUmemoryPool = null_mut();
        cu!(cuDeviceGetMemPool(&mut pool, gpu.dev))?;
        Ok(pool)
    }
    fn expect(got: CUresult, want: CUresult, what: &str) -> TestResult {
        common::expect_error(got, want, what)
    }
    type Event = CuEvent;
    const OUT_OF_MEMORY: CUresult = CUDA_ERROR_OUT_OF_MEMORY;
    const NOT_READY: CUresult = CUDA_ERROR_NOT_READY;
    fn event() -> Result<CuEvent, Failed> {
        CuEvent::new()
    }
    fn record(e: CUevent, s: CUstream) -> TestResult {
        cu!(cuEventRecord(e, s))
    }
    fn wait_event(s: CUstream, e: CUevent) -> TestResult {
        cu!(cuStreamWaitEvent(s, e, 0))
    }
    fn launch_host(
        s: CUstream,
        f: unsafe extern "C" fn(*mut c_void),
        user: *mut c_void,
    ) -> TestResult {
        cu!(cuLaunchHostFunc(s, Some(f), user))
    }
    fn query(s: CUstream) -> CUresult {
        unsafe { cuStreamQuery(s) }
    }
    fn set_release_threshold(pool: CUmemoryPool, bytes: u64) -> TestResult {
        cu_set_u64(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, bytes)
    }
    fn policies(pool: CUmemoryPool, follow: i32, opportunistic: i32, internal: i32) -> TestResult {
        cu_set_i32(
            pool,
            CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES,
            follow,
        )?;
        cu_set_i32(
            pool,
            CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC,
            opportunistic,
        )?;
        cu_set_i32(
            pool,
            CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES,
            internal,
        )?;
        let got = (
            cu_get_i32(pool, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES)?,
            cu_get_i32(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC)?,
            cu_get_i32(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES)?,
        );
        ensure!(
            got == (follow, opportunistic, internal),
            "reuse policies read back {got:?}, set ({follow}, {opportunistic}, {internal})"
        );
        Ok(())
    }
    fn pool_destroy(pool: CUmemoryPool) -> TestResult {
        cu!(cuMemPoolDestroy(pool))
    }
    fn alloc(n: usize, s: CUstream) -> Result<CUdeviceptr, Failed> {
        let mut p: CUdeviceptr = 0;
        cu!(cuMemAllocAsync(&mut p, n, s))?;
        ensure!(p != 0, "cuMemAllocAsync returned a null pointer");
        Ok(p)
    }
    fn alloc_from(pool: CUmemoryPool, n: usize, s: CUstream) -> Result<CUdeviceptr, Failed> {
        let mut p: CUdeviceptr = 0;
        cu!(cuMemAllocFromPoolAsync(&mut p, n, pool, s))?;
        Ok(p)
    }
    fn free(p: CUdeviceptr, s: CUstream) -> TestResult {
        cu!(cuMemFreeAsync(p, s))
    }
    fn write(p: CUdeviceptr, data: &[u8], s: CUstream) -> TestResult {
        cu!(cuMemcpyHtoDAsync(p, data.as_ptr().cast(), data.len(), s))
    }
    fn read(back: &mut [u8], p: CUdeviceptr, s: CUstream) -> TestResult {
        cu!(cuMemcpyDtoHAsync(
            back.as_mut_ptr().cast(),
            p,
            back.len(),
            s
        ))
    }
    fn figures(pool: CUmemoryPool) -> Result<Figures, Failed> {
        cu_figures(pool)
    }
    fn reset_used_high(pool: CUmemoryPool) -> TestResult {
        cu_set_u64(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0)
    }
    fn memset(p: CUdeviceptr, byte: u8, n: usize, s: CUstream) -> TestResult {
        cu!(cuMemsetD8Async(p, byte, n, s))
    }
    fn is_device_memory(p: CUdeviceptr) -> TestResult {
        let mut mem_type = CUmemorytype(0);
        cu!(cuPointerGetAttribute(
            (&mut mem_type as *mut CUmemorytype).cast(),
            CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            p
        ))?;
        ensure!(
            mem_type == CU_MEMORYTYPE_DEVICE,
            "memory type {}",
            mem_type.0
        );
        Ok(())
    }
    fn access(pool: CUmemoryPool, dev: i32) -> Result<CUmemAccess_flags, Failed> {
        cu_get_access(pool, cu_loc(CU_MEM_LOCATION_TYPE_DEVICE, dev))
    }
    fn set_access(pool: CUmemoryPool, dev: i32, flags: CUmemAccess_flags) -> TestResult {
        cu_set_access(pool, cu_loc(CU_MEM_LOCATION_TYPE_DEVICE, dev), flags)
    }
    fn read_only_refused(pool: CUmemoryPool, dev: i32) -> TestResult {
        let read_only = CUmemAccessDesc {
            location: cu_loc(CU_MEM_LOCATION_TYPE_DEVICE, dev),
            flags: CU_MEM_ACCESS_FLAGS_PROT_READ,
        };
        cu_err!(
            CUDA_ERROR_NOT_SUPPORTED,
            cuMemPoolSetAccess(pool, &read_only, 1)
        )
    }
    fn can_access_peer(dev: i32, peer: i32) -> Result<i32, Failed> {
        let mut can = 0;
        cu!(cuDeviceCanAccessPeer(&mut can, dev, peer))?;
        Ok(can)
    }
    fn make_current(gpu: &Gpu, _ordinal: i32) -> TestResult {
        cu!(cuCtxSetCurrent(gpu.ctx))
    }
    fn alive(s: &CuStream) -> TestResult {
        cu_alive(s)
    }

    const IMPORTER: &'static str = "drv_ipc_importer";
    type Code = CUresult;
    const INVALID_VALUE: CUresult = CUDA_ERROR_INVALID_VALUE;
    const UNKNOWN: CUresult = CUDA_ERROR_UNKNOWN;
    fn ok(code: CUresult, what: &str) -> TestResult {
        common::check(code, what)
    }
    fn name(code: CUresult) -> String {
        common::error_name(code)
    }
    fn bad(c: &mut BadInput, want: CUresult, got: CUresult, what: &str) {
        c.cu(want, got, what);
    }
    fn fd_pools_supported(gpu: &Gpu) -> TestResult {
        let types = gpu.attribute(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES)?;
        ensure!(
            types as u32 & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR.0 != 0,
            "pools on device 0 do not support POSIX fds (handle types {types:#x})"
        );
        Ok(())
    }
    fn fd_pool() -> Result<TwinPool<Drv>, Failed> {
        CuPool::create(&cu_props(
            CU_MEM_ALLOCATION_TYPE_PINNED,
            cu_loc(CU_MEM_LOCATION_TYPE_DEVICE, 0),
            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            0,
        ))
    }
    fn export_pool(pool: CUmemoryPool) -> Result<i32, Failed> {
        let mut fd: i32 = -1;
        cu!(cuMemPoolExportToShareableHandle(
            (&mut fd as *mut i32).cast(),
            pool,
            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            0
        ))?;
        Ok(fd)
    }
    fn import_pool(pool: &mut CUmemoryPool, fd: i32) -> (CUresult, &'static str) {
        let fd_type = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        let handle = fd as usize as *mut c_void;
        let r = unsafe { cuMemPoolImportFromShareableHandle(pool, handle, fd_type, 0) };
        (r, "cuMemPoolImportFromShareableHandle")
    }
    fn export_pointer(p: CUdeviceptr) -> (CUresult, [u8; 64]) {
        let mut export = CUmemPoolPtrExportData::default();
        let r = unsafe { cuMemPoolExportPointer(&mut export, p) };
        (r, export.reserved)
    }
    fn import_pointer(
        p: &mut CUdeviceptr,
        pool: CUmemoryPool,
        data: [u8; 64],
    ) -> (CUresult, &'static str) {
        let mut export = CUmemPoolPtrExportData { reserved: data };
        let r = unsafe { cuMemPoolImportPointer(p, pool, &mut export) };
        (r, "cuMemPoolImportPointer")
    }
    fn alloc_from_raw(
        p: &mut CUdeviceptr,
        pool: CUmemoryPool,
        n: usize,
        s: CUstream,
    ) -> (CUresult, &'static str) {
        let r = unsafe { cuMemAllocFromPoolAsync(p, n, pool, s) };
        (r, "cuMemAllocFromPoolAsync")
    }
}

/// `twins!(scenario => rt_test, drv_test; ..)`: the runtime's and the
/// driver's test of one twin scenario, under their registered names.
macro_rules! twins {
    ($($scenario:ident => $rt:ident, $drv:ident;)*) => {$(
        fn $rt() -> TestResult {
            $scenario::<Rt>()
        }
        fn $drv() -> TestResult {
            $scenario::<Drv>()
        }
    )*};
}

twins! {
    default_pool_round_trip => rt_default_pool_round_trip, drv_default_pool_round_trip;
    peer_pool_access => rt_peer_pool_access, drv_peer_pool_access;
    leak_10000_cycles => rt_leak_10000_cycles, drv_leak_10000_cycles;
    ipc_two_processes => rt_ipc_two_processes, drv_ipc_two_processes;
    created_pools_each_location => rt_created_pools_each_location, drv_created_pools_each_location;
    two_streams_event_ordered_reuse => rt_two_streams_event_ordered_reuse, drv_two_streams_event_ordered_reuse;
}

// `cu/cudaMem{Get,Set}MemPool` and `..GetDefaultMemPool` are in the headers from 13.0.
#[cfg(cuda_13000)]
twins! {
    current_pool_get_set => rt_current_pool_get_set, drv_current_pool_get_set;
}

// The runtime's enumerators that `Rt::props` converts by number.
const _: () = {
    assert!(cudaMemAllocationTypePinned.0 == CU_MEM_ALLOCATION_TYPE_PINNED.0);
    #[cfg(cuda_13000)]
    assert!(cudaMemAllocationTypeManaged.0 == CU_MEM_ALLOCATION_TYPE_MANAGED.0);
    #[cfg(cuda_13000)]
    assert!(cudaMemLocationTypeNone.0 == CU_MEM_LOCATION_TYPE_NONE.0);
    assert!(cudaMemLocationTypeDevice.0 == CU_MEM_LOCATION_TYPE_DEVICE.0);
    #[cfg(cuda_12020)]
    assert!(cudaMemLocationTypeHost.0 == CU_MEM_LOCATION_TYPE_HOST.0);
    #[cfg(cuda_12020)]
    assert!(cudaMemLocationTypeHostNuma.0 == CU_MEM_LOCATION_TYPE_HOST_NUMA.0);
    #[cfg(cuda_12020)]
    assert!(cudaMemLocationTypeHostNumaCurrent.0 == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT.0);
    assert!(cudaMemHandleTypeNone.0 == CU_MEM_HANDLE_TYPE_NONE.0);
    assert!(cudaMemHandleTypePosixFileDescriptor.0 == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR.0);
};

/// The default pool: every way the API names it agrees (and, at start, is the
/// current pool); allocating takes memory from it (used figure, pointer's
/// pool, device memory) and freeing gives it back.
fn default_pool_round_trip<A: Api>() -> TestResult {
    let gpu = A::init()?;
    let pools = A::default_pools(&gpu)?;
    let dflt = pools[0].1;
    ensure!(
        !dflt.is_null() && pools.iter().all(|&(_, p)| p == dflt),
        "default pools differ: {pools:?}"
    );
    ensure!(
        A::access(dflt, 0)? == CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        "the default pool is not read-write from its own device"
    );
    let s = A::stream()?;
    let before = A::figures(dflt)?;
    const N: usize = 3 * MIB + 123;
    let data = pattern(N, 1);
    let p = A::alloc(N, s.raw())?;
    let mut back = vec![0u8; N];
    A::write(p, &data, s.raw())?;
    A::read(&mut back, p, s.raw())?;
    s.sync()?;
    same(&back, &data, "bytes changed through pool memory")?;
    let during = A::figures(dflt)?;
    let from = pool_of(p)?;
    let device_memory = A::is_device_memory(p);
    A::free(p, s.raw())?;
    s.sync()?;
    let after = A::figures(dflt)?;
    println!(
        "{} default pool before: {before}\n  during: {during}\n  after: {after}",
        A::NAME
    );
    ensure!(
        from == dflt,
        "the allocation's pool is {from:?}, not the default {dflt:?}"
    );
    device_memory?;
    ensure!(
        during.used >= before.used + N as u64,
        "used memory grew from {} to {} for a {N}-byte allocation",
        before.used,
        during.used
    );
    ensure!(
        during.reserved >= during.used,
        "reserved {} below used {}",
        during.reserved,
        during.used
    );
    ensure!(
        after.used == before.used,
        "used memory {} after the free, {} before",
        after.used,
        before.used
    );
    Ok(())
}

/// Peer access to a created pool: device 1 gets none until granted, then its
/// kernel reads the pool's bytes and writes its own, which device 0 reads; a
/// read-only grant is refused and leaves the access read-write; revoking works.
fn peer_pool_access<A: Api>() -> TestResult {
    let gpu0 = A::init()?;
    let can = A::can_access_peer(1, 0)?;
    ensure!(
        can == 1,
        "device 1 cannot access device 0 ({} can-access-peer = {can})",
        A::NAME
    );
    let pool = A::device_pool()?;
    let own = A::access(pool.0, 0)?;
    let peer_before = A::access(pool.0, 1)?;
    ensure!(
        own == CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        "access from device 0: {}",
        own.0
    );
    ensure!(
        peer_before == CU_MEM_ACCESS_FLAGS_PROT_NONE,
        "access from device 1 before granting: {}",
        peer_before.0
    );
    A::set_access(pool.0, 1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE)?;
    let peer_rw = A::access(pool.0, 1)?;
    ensure!(
        peer_rw == CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        "access from device 1 after granting: {}",
        peer_rw.0
    );

    const N: usize = 4 * MIB;
    let (data, data2) = (pattern(N, 31), pattern(N, 32));
    let s0 = A::stream()?;
    let p = A::alloc_from(pool.0, N, s0.raw())?;
    A::write(p, &data, s0.raw())?;
    s0.sync()?;

    // Device 1's kernel copies p into device 1 memory, then writes p.
    let gpu1 = Gpu::new(1)?;
    A::make_current(&gpu1, 1)?;
    let s1 = A::stream()?;
    let kernel1 = CopyKernel::load()?;
    let d1 = A::alloc(N, s1.raw())?;
    kernel1.copy(d1, p, N, s1.raw())?;
    let mut back = vec![0u8; N];
    A::read(&mut back, d1, s1.raw())?;
    s1.sync()?;
    A::write(d1, &data2, s1.raw())?;
    kernel1.copy(p, d1, N, s1.raw())?;
    A::free(d1, s1.raw())?;
    s1.sync()?;
    drop(kernel1);
    drop(s1);
    drop(gpu1);

    A::make_current(&gpu0, 0)?;
    let mut back2 = vec![0u8; N];
    A::read(&mut back2, p, s0.raw())?;
    s0.sync()?;
    A::read_only_refused(pool.0, 1)?;
    let peer_r = A::access(pool.0, 1)?;
    A::free(p, s0.raw())?;
    s0.sync()?;
    A::set_access(pool.0, 1, CU_MEM_ACCESS_FLAGS_PROT_NONE)?;
    let peer_none = A::access(pool.0, 1)?;
    same(&back, &data, "device 1 read")?;
    same(&back2, &data2, "device 0 sees device 1's writes")?;
    ensure!(
        peer_r == CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        "access from device 1 after the refused read-only: {}",
        peer_r.0
    );
    ensure!(
        peer_none == CU_MEM_ACCESS_FLAGS_PROT_NONE,
        "access from device 1 after revoking: {}",
        peer_none.0
    );
    pool.destroy()
}

/// Pools created for each location the references allow: device, host, host
/// NUMA, managed (preferred location device 0, and none), each with bytes
/// through it, its figures and access; then the documented creation errors.
fn created_pools_each_location<A: Api>() -> TestResult {
    let gpu = A::init()?;
    let s = A::stream()?;
    let kernel = CopyKernel::load()?;
    const N: usize = 2 * MIB;
    let (pinned, no_handles) = (CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_HANDLE_TYPE_NONE);
    #[cfg(not(cuda_12020))]
    let _ = (&gpu, pinned, no_handles); // the host pools need 12.2

    // Device pool: accessible from its device, data round trip, figures.
    {
        let pool = A::device_pool()?;
        let flags = A::access(pool.0, 0)?;
        ensure!(
            flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
            "device pool access from device 0: {}",
            flags.0
        );
        let p = A::alloc_from(pool.0, N, s.raw())?;
        let (data, mut back) = (pattern(N, 2), vec![0u8; N]);
        A::write(p, &data, s.raw())?;
        A::read(&mut back, p, s.raw())?;
        s.sync()?;
        same(&back, &data, "bytes changed through pool memory")?;
        let during = A::figures(pool.0)?;
        let from = pool_of(p)?;
        A::free(p, s.raw())?;
        s.sync()?;
        let after = A::figures(pool.0)?;
        println!("{} device pool during: {during}; after: {after}", A::NAME);
        ensure!(
            from == pool.0,
            "allocation's pool {from:?} is not the created pool {:?}",
            pool.0
        );
        ensure!(
            during.used == N as u64,
            "used {} with one {N}-byte allocation",
            during.used
        );
        ensure!(after.used == 0, "used {} after the free", after.used);
        pool.destroy()?;
    }

    #[cfg(cuda_12020)]
    {
        // Host and host-NUMA pools: accessible from the host CPU by default, from the
        // device once access is granted.
        let numa = gpu.host_numa_node()?;
        for (name, loc) in [
            ("host", cu_loc(CU_MEM_LOCATION_TYPE_HOST, 0)),
            ("host NUMA", cu_loc(CU_MEM_LOCATION_TYPE_HOST_NUMA, numa)),
        ] {
            let pool = TwinPool::<A>::create(&A::props(pinned, loc, no_handles))?;
            let before = A::access(pool.0, 0)?;
            let p = A::alloc_from(pool.0, N, s.raw())?;
            s.sync()?;
            let from = pool_of(p)?;
            // The CPU writes the memory directly.
            let data = pattern(N, 3);
            unsafe { std::slice::from_raw_parts_mut(p as usize as *mut u8, N) }
                .copy_from_slice(&data);
            // Device access granted: the device reads it with a kernel.
            A::set_access(pool.0, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE)?;
            let granted = A::access(pool.0, 0)?;
            let d = A::alloc(N, s.raw())?;
            kernel.copy(d, p, N, s.raw())?;
            let mut back = vec![0u8; N];
            A::read(&mut back, d, s.raw())?;
            // And the device writes it; the CPU reads the result directly.
            let data2 = pattern(N, 4);
            A::write(d, &data2, s.raw())?;
            kernel.copy(p, d, N, s.raw())?;
            s.sync()?;
            let seen = unsafe { std::slice::from_raw_parts(p as usize as *const u8, N) }.to_vec();
            let used = A::figures(pool.0)?.used;
            A::free(d, s.raw())?;
            A::free(p, s.raw())?;
            s.sync()?;
            println!(
                "{} {name} pool (id {}): access from device 0 before {} after {}, used {used} B",
                A::NAME,
                common::cu_loc_id(&loc),
                before.0,
                granted.0
            );
            ensure!(
                from == pool.0,
                "{name}: allocation's pool {from:?} is not {:?}",
                pool.0
            );
            ensure!(
                before == CU_MEM_ACCESS_FLAGS_PROT_NONE,
                "{name}: device access before granting: {}",
                before.0
            );
            ensure!(
                granted == CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
                "{name}: device access after granting: {}",
                granted.0
            );
            same(
                &back,
                &data,
                &format!("{name}: the device read wrong bytes"),
            )?;
            same(&seen, &data2, &format!("{name}: the CPU read wrong bytes"))?;
            ensure!(
                used >= N as u64,
                "{name}: used {used} with a {N}-byte allocation"
            );
            pool.destroy()?;
        }
    }

    #[cfg(cuda_13000)]
    {
        let managed = CU_MEM_ALLOCATION_TYPE_MANAGED;
        // Managed pools: memory both the CPU and the device use directly.
        for (name, loc) in [
            (
                "managed, preferred device 0",
                cu_loc(CU_MEM_LOCATION_TYPE_DEVICE, 0),
            ),
            (
                "managed, no preferred location",
                cu_loc(CU_MEM_LOCATION_TYPE_NONE, 0),
            ),
        ] {
            let pool = TwinPool::<A>::create(&A::props(managed, loc, no_handles))?;
            let p = A::alloc_from(pool.0, N, s.raw())?;
            A::memset(p, 0x5A, N, s.raw())?;
            s.sync()?;
            let all_5a = unsafe { std::slice::from_raw_parts(p as usize as *const u8, N) }
                .iter()
                .all(|&b| b == 0x5A);
            let data = pattern(N, 5);
            unsafe { std::slice::from_raw_parts_mut(p as usize as *mut u8, N) }
                .copy_from_slice(&data);
            let d = A::alloc(N, s.raw())?;
            kernel.copy(d, p, N, s.raw())?;
            let mut back = vec![0u8; N];
            A::read(&mut back, d, s.raw())?;
            s.sync()?;
            let is_managed = A::is_managed(p)?;
            let from = pool_of(p)?;
            A::free(d, s.raw())?;
            A::free(p, s.raw())?;
            s.sync()?;
            ensure!(all_5a, "{name}: the CPU does not see the device's memset");
            same(
                &back,
                &data,
                &format!("{name}: the device read wrong bytes"),
            )?;
            ensure!(
                is_managed,
                "{name}: not managed memory, as the {} says",
                A::NAME
            );
            ensure!(
                from == pool.0,
                "{name}: allocation's pool {from:?} is not {:?}",
                pool.0
            );
            pool.destroy()?;
        }
    }
    #[cfg(not(cuda_13000))]
    println!("  skipped: managed pools: CU_MEM_ALLOCATION_TYPE_MANAGED for pools not in these headers (added in 13.0)");

    #[cfg(cuda_12020)]
    {
        // Documented creation errors: host memory with IPC handles, and
        // HOST_NUMA_CURRENT.
        eprintln!("{} created_pools_each_location: creation errors", A::NAME);
        let host = cu_loc(CU_MEM_LOCATION_TYPE_HOST, 0);
        let fd = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        A::create_refused(&A::props(pinned, host, fd), "host pool with POSIX fds")?;
        A::alive(&s)?;
        let current = cu_loc(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0);
        A::create_refused(&A::props(pinned, current, no_handles), "HOST_NUMA_CURRENT")?;
        A::alive(&s)?;
    }
    #[cfg(not(cuda_12020))]
    println!("  skipped: host pools and the creation errors: CU_MEM_LOCATION_TYPE_HOST* not in these headers (added in 12.2)");
    drop(kernel);
    Ok(())
}

/// The pool of a location and kind that must succeed.
#[cfg(cuda_13000)]
fn loc_pool<A: Api>(
    op: LocPool,
    loc: CUmemLocation,
    kind: CUmemAllocationType,
    pool: CUmemoryPool,
) -> Result<CUmemoryPool, Failed> {
    let (r, got, name) = A::loc_pool(op, loc, kind, pool);
    A::ok(r, name)?;
    Ok(got)
}

/// The current pool: the default at start; a created pool made current takes
/// the API's plain allocations; the device-level setting is the same one;
/// destroying the current pool makes the default current again; host, host
/// NUMA and managed locations have defaults of their own, set and restored;
/// a pool of another location or kind is refused.
#[cfg(cuda_13000)]
fn current_pool_get_set<A: Api>() -> TestResult {
    use LocPool::{Current, Default, Set};
    let gpu = A::init()?;
    let s = A::stream()?;
    let numa = gpu.host_numa_node()?;
    let (pinned, managed) = (
        CU_MEM_ALLOCATION_TYPE_PINNED,
        CU_MEM_ALLOCATION_TYPE_MANAGED,
    );
    let dev = cu_loc(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    let none = null_mut();

    let dflt = loc_pool::<A>(Default, dev, pinned, none)?;
    let cur = loc_pool::<A>(Current, dev, pinned, none)?;
    ensure!(
        cur == dflt,
        "device 0's current pool {cur:?} is not its default {dflt:?} at start"
    );

    // A created pool made current: plain allocations come from it.
    let pool = A::device_pool()?;
    loc_pool::<A>(Set, dev, pinned, pool.0)?;
    let got = loc_pool::<A>(Current, dev, pinned, none)?;
    let via_device = A::device_current(&gpu, None)?;
    let p = A::alloc(4 * MIB, s.raw())?;
    s.sync()?;
    let from = pool_of(p)?;
    let used = A::figures(pool.0)?.used;
    A::free(p, s.raw())?;
    s.sync()?;
    // Restore the default: plain allocations go back to it.
    loc_pool::<A>(Set, dev, pinned, dflt)?;
    let restored = loc_pool::<A>(Current, dev, pinned, none)?;
    let q = A::alloc(4 * MIB, s.raw())?;
    s.sync()?;
    let from_q = pool_of(q)?;
    A::free(q, s.raw())?;
    s.sync()?;
    ensure!(
        got == pool.0 && via_device == pool.0,
        "after setting it: current by location {got:?}, by device {via_device:?}, set {:?}",
        pool.0
    );
    ensure!(
        from == pool.0,
        "the plain allocation took memory from {from:?}, not the current pool {:?}",
        pool.0
    );
    ensure!(
        used >= 4 * MIB as u64,
        "the current pool's used memory is {used} with 4 MiB allocated"
    );
    ensure!(
        restored == dflt && from_q == dflt,
        "after restoring: current {restored:?}, allocation from {from_q:?}, default {dflt:?}"
    );

    // The device-level setting is the same one; destroying the current pool
    // makes the default current again.
    A::device_current(&gpu, Some(pool.0))?;
    let got = loc_pool::<A>(Current, dev, pinned, none)?;
    ensure!(
        got == pool.0,
        "the device-level setting not seen by location: {got:?}"
    );
    pool.destroy()?;
    let got = loc_pool::<A>(Current, dev, pinned, none)?;
    ensure!(
        got == dflt,
        "after destroying the current pool the current one is {got:?}, not the default {dflt:?}"
    );

    // Host, host NUMA and managed locations: default, set, get, restore.
    for (name, loc, kind) in [
        ("host", cu_loc(CU_MEM_LOCATION_TYPE_HOST, 0), pinned),
        (
            "host NUMA",
            cu_loc(CU_MEM_LOCATION_TYPE_HOST_NUMA, numa),
            pinned,
        ),
        (
            "managed, no location",
            cu_loc(CU_MEM_LOCATION_TYPE_NONE, 0),
            managed,
        ),
        ("managed, device 0", dev, managed),
    ] {
        let ldflt = loc_pool::<A>(Default, loc, kind, none)?;
        let lcur = loc_pool::<A>(Current, loc, kind, none)?;
        let created = TwinPool::<A>::create(&A::props(kind, loc, CU_MEM_HANDLE_TYPE_NONE))?;
        loc_pool::<A>(Set, loc, kind, created.0)?;
        let lset = loc_pool::<A>(Current, loc, kind, none)?;
        // The default pool of the location gives memory of that kind.
        let p = A::alloc_from(ldflt, MIB, s.raw())?;
        s.sync()?;
        let mem = A::memory_kind(p)?;
        let from = pool_of(p)?;
        A::free(p, s.raw())?;
        s.sync()?;
        loc_pool::<A>(Set, loc, kind, ldflt)?;
        let lback = loc_pool::<A>(Current, loc, kind, none)?;
        println!("{name}: default pool {ldflt:?}, memory type {mem}");
        ensure!(
            !ldflt.is_null() && ldflt != dflt,
            "{name}: default pool {ldflt:?} (device 0's is {dflt:?})"
        );
        ensure!(
            lcur == ldflt,
            "{name}: current {lcur:?} is not the default {ldflt:?}"
        );
        ensure!(
            lset == created.0,
            "{name}: current after set {lset:?}, set {:?}",
            created.0
        );
        ensure!(lback == ldflt, "{name}: current after restoring {lback:?}");
        ensure!(from == ldflt, "{name}: allocation's pool {from:?}");
        let expected = if kind == managed { "managed" } else { "host" };
        ensure!(mem == expected, "{name}: memory type {mem}");
        created.destroy()?;
    }

    // Documented mismatches: the pool's location and kind must match; a
    // location of no type has no pools.
    let host = cu_loc(CU_MEM_LOCATION_TYPE_HOST, 0);
    let host_pool = TwinPool::<A>::create(&A::props(pinned, host, CU_MEM_HANDLE_TYPE_NONE))?;
    let dev_pool = A::device_pool()?;
    let nowhere = cu_loc(CU_MEM_LOCATION_TYPE_NONE, 0);
    for (op, loc, kind, pool, case) in [
        (Set, dev, pinned, host_pool.0, "(device 0, a host pool)"),
        (Set, host, pinned, dev_pool.0, "(host, a device pool)"),
        (
            Set,
            dev,
            managed,
            dev_pool.0,
            "(device 0, managed, a pinned pool)",
        ),
        (Default, nowhere, pinned, none, "(location type NONE)"),
        (Current, nowhere, pinned, none, "(location type NONE)"),
    ] {
        let (r, _, name) = A::loc_pool(op, loc, kind, pool);
        A::expect(r, A::INVALID_VALUE, &format!("{name}{case}"))?;
        A::alive(&s)?;
    }
    let got = loc_pool::<A>(Current, dev, pinned, none)?;
    ensure!(
        got == dflt,
        "the refused calls changed device 0's current pool to {got:?}"
    );
    host_pool.destroy()?;
    dev_pool.destroy()
}

#[cfg(cuda_12020)] // the one-block pool (maxSize) needs 12.2
/// Allocates `n` bytes from `pool` on `a` and frees them on `b`, behind the
/// gate (closed here), ordered by an event; `a_waits`: `a` waits for an
/// event recorded after the free.
fn free_pending_on_b<A: Api>(
    pool: CUmemoryPool,
    a: &A::Stream,
    b: &A::Stream,
    n: usize,
    a_waits: bool,
) -> Result<CUdeviceptr, Failed> {
    let (allocated, freed) = (A::event()?, A::event()?);
    close_gate();
    let p = A::alloc_from(pool, n, a.raw())?;
    A::record(allocated.raw(), a.raw())?;
    A::wait_event(b.raw(), allocated.raw())?;
    A::launch_host(b.raw(), gate_wait, null_mut())?;
    A::free(p, b.raw())?;
    A::record(freed.raw(), b.raw())?;
    if a_waits {
        A::wait_event(a.raw(), freed.raw())?;
    }
    Ok(p)
}

#[cfg(cuda_12020)] // the one-block pool (maxSize) needs 12.2
/// Tries to allocate `n` bytes on `a`: (result, pointer, time the call took).
fn try_alloc<A: Api>(
    pool: CUmemoryPool,
    n: usize,
    a: &A::Stream,
) -> (A::Code, CUdeviceptr, Duration) {
    let mut q: CUdeviceptr = 0;
    let start = Instant::now();
    let (r, _) = A::alloc_from_raw(&mut q, pool, n, a.raw());
    (r, q, start.elapsed())
}

#[cfg(cuda_12020)] // the one-block pool (maxSize) needs 12.2
/// Frees `q` on `a` (and waits) where the allocation `r` succeeded.
fn free_if_made<A: Api>(r: A::Code, q: CUdeviceptr, a: &A::Stream) -> TestResult {
    if A::ok(r, "").is_ok() {
        A::free(q, a.raw())?;
        a.sync()?;
    }
    Ok(())
}

/// Data across two streams ordered by events, and the reuse policies' effects
/// on a pool that holds exactly one block (maxSize).
fn two_streams_event_ordered_reuse<A: Api>() -> TestResult {
    let _gpu = A::init()?;
    let (a, b) = (A::stream()?, A::stream()?);

    // Alloc + write on A, event, read on B, free on B, event, realloc on A.
    // B is held by the gate until everything is queued.
    const N: usize = 2 * MIB;
    let (first, second) = (pattern(N, 11), pattern(N, 12));
    let (src1, src2) = (PageLocked::with(&first)?, PageLocked::with(&second)?);
    let (mut seen_b, mut seen_a) = (PageLocked::new(N)?, PageLocked::new(N)?);
    let (written, freed) = (A::event()?, A::event()?);
    close_gate();
    let p = A::alloc(N, a.raw())?;
    A::write(p, src1.as_slice(), a.raw())?;
    A::record(written.raw(), a.raw())?;
    A::wait_event(b.raw(), written.raw())?;
    A::launch_host(b.raw(), gate_wait, null_mut())?;
    A::read(seen_b.as_mut_slice(), p, b.raw())?;
    A::free(p, b.raw())?;
    A::record(freed.raw(), b.raw())?;
    A::wait_event(a.raw(), freed.raw())?;
    let q = A::alloc(N, a.raw())?;
    A::write(q, src2.as_slice(), a.raw())?;
    A::read(seen_a.as_mut_slice(), q, a.raw())?;
    let a_held = A::query(a.raw());
    open_gate();
    a.sync()?;
    b.sync()?;
    A::free(q, a.raw())?;
    a.sync()?;
    println!(
        "{} default pool: realloc on A after the event {} the block freed on B",
        A::NAME,
        if q == p { "reused" } else { "did not reuse" }
    );
    ensure!(!GATE_TIMED_OUT.load(SeqCst), "the gate timed out");
    ensure!(
        a_held == A::NOT_READY,
        "stream A was not held by the event on B's free: stream query = {}",
        A::name(a_held)
    );
    same(seen_b.as_slice(), &first, "B read")?;
    same(seen_a.as_slice(), &second, "A read")?;
    one_block_pool_reuse::<A>(&a, &b)
}

/// Before 12.2 a pool cannot be bounded (no `maxSize` in the headers): the
/// reuse policies' checks are skipped, and named.
#[cfg(not(cuda_12020))]
fn one_block_pool_reuse<A: Api>(_: &A::Stream, _: &A::Stream) -> TestResult {
    println!("  skipped: the reuse policies on a one-block pool: cudaMemPoolProps/CUmemPoolProps::maxSize not in these headers (added in 12.2)");
    Ok(())
}

/// The reuse policies' effects on a pool that holds exactly one block
/// (`maxSize`, in the headers from 12.2), on streams `a` and `b`.
#[cfg(cuda_12020)]
fn one_block_pool_reuse<A: Api>(a: &A::Stream, b: &A::Stream) -> TestResult {
    // A pool of exactly one M-byte block: a second allocation can only reuse it.
    const M: usize = 32 * MIB;
    let pool = TwinPool::<A>::create(&A::props_max(M))?;
    A::set_release_threshold(pool.0, u64::MAX)?;
    let x = A::alloc_from(pool.0, M, a.raw())?;
    let (r, y, _) = try_alloc::<A>(pool.0, M, a);
    free_if_made::<A>(r, y, a)?;
    A::free(x, a.raw())?;
    a.sync()?;
    ensure!(
        r == A::OUT_OF_MEMORY,
        "a second {M}-byte allocation from a pool of maxSize {M} returned {}",
        A::name(r)
    );

    // Follow event dependencies (alone): A waits on an event after B's pending free → reuse.
    A::policies(pool.0, 1, 0, 0)?;
    let p = free_pending_on_b::<A>(pool.0, a, b, M, true)?;
    let (r, q, took) = try_alloc::<A>(pool.0, M, a);
    open_gate();
    a.sync()?;
    b.sync()?;
    free_if_made::<A>(r, q, a)?;
    A::ok(r, &format!("follow-event-dependencies (after {took:?})"))?;
    ensure!(q == p, "follow-event-dependencies: {q:#x}, freed {p:#x}");

    // No policy: a free still pending is not reused → out of memory at maxSize.
    A::policies(pool.0, 0, 0, 0)?;
    let p = free_pending_on_b::<A>(pool.0, a, b, M, true)?;
    let (r, q, took) = try_alloc::<A>(pool.0, M, a);
    open_gate();
    a.sync()?;
    b.sync()?;
    free_if_made::<A>(r, q, a)?;
    ensure!(
        r == A::OUT_OF_MEMORY,
        "no reuse policy: {} {q:#x} (freed {p:#x}) after {took:?}, gate timed out: {}",
        A::name(r),
        GATE_TIMED_OUT.load(SeqCst)
    );
    // Once the host has synchronized with the free, the block is free again.
    let (r, q, _) = try_alloc::<A>(pool.0, M, a);
    free_if_made::<A>(r, q, a)?;
    A::ok(r, "after synchronizing, no policy")?;
    ensure!(
        q == p,
        "after synchronizing, no policy: {q:#x}, freed {p:#x}"
    );

    // Internal dependencies (alone): A does not wait; the allocator makes it wait.
    A::policies(pool.0, 0, 0, 1)?;
    let p = free_pending_on_b::<A>(pool.0, a, b, M, false)?;
    let (r, q, took) = try_alloc::<A>(pool.0, M, a);
    let a_held = A::query(a.raw());
    open_gate();
    a.sync()?;
    b.sync()?;
    free_if_made::<A>(r, q, a)?;
    A::ok(r, &format!("internal dependencies (after {took:?})"))?;
    ensure!(q == p, "internal dependencies: {q:#x}, freed {p:#x}");
    ensure!(
        a_held == A::NOT_READY,
        "internal dependencies: A was not made to wait for B's free (stream query = {})",
        A::name(a_held)
    );

    // Opportunistic (alone): a free already done on the GPU, with no dependency
    // and not yet observed by a synchronize, is reused.
    A::policies(pool.0, 0, 1, 0)?;
    {
        let done = Box::new(AtomicBool::new(false));
        let allocated = A::event()?;
        let p = A::alloc_from(pool.0, M, a.raw())?;
        A::record(allocated.raw(), a.raw())?;
        A::wait_event(b.raw(), allocated.raw())?;
        A::free(p, b.raw())?;
        let flag = (&*done as *const AtomicBool).cast_mut().cast::<c_void>();
        A::launch_host(b.raw(), raise_flag, flag)?;
        wait_flag(&done)?;
        let (r, q, took) = try_alloc::<A>(pool.0, M, a);
        a.sync()?;
        b.sync()?;
        free_if_made::<A>(r, q, a)?;
        A::ok(r, &format!("opportunistic (after {took:?})"))?;
        ensure!(q == p, "opportunistic: {q:#x}, freed {p:#x}");
    }
    A::policies(pool.0, 1, 1, 1)?;
    pool.destroy()
}

/// 10,000 allocate/memset/free cycles in stream order, in the default pool
/// and in a created one: the used figure comes back, its high-water mark stays
/// low.
fn leak_10000_cycles<A: Api>() -> TestResult {
    let gpu = A::init()?;
    let s = A::stream()?;
    let dflt = A::default_pools(&gpu)?[0].1;
    let created = A::device_pool()?;
    for (name, pool) in [("default pool", dflt), ("created pool", created.0)] {
        s.sync()?;
        A::reset_used_high(pool)?;
        let before = A::figures(pool)?;
        let start = Instant::now();
        for i in 0..10_000usize {
            let size = 256 * (1 + i % 1024);
            let p = if pool == dflt {
                A::alloc(size, s.raw())?
            } else {
                A::alloc_from(pool, size, s.raw())?
            };
            A::memset(p, (i & 0xff) as u8, size, s.raw())?;
            A::free(p, s.raw())?;
        }
        s.sync()?;
        let took = start.elapsed();
        let after = A::figures(pool)?;
        println!(
            "{} {name}, 10000 cycles in {took:?}\n  before: {before}\n  after:  {after}",
            A::NAME
        );
        ensure!(
            after.used == before.used,
            "{name}: used {} after, {} before",
            after.used,
            before.used
        );
        ensure!(
            after.used_high <= 64 * MIB as u64,
            "{name}: used high {} for allocations of at most 256 KiB freed in order",
            after.used_high
        );
    }
    let f = A::figures(created.0)?;
    ensure!(
        f.used == 0,
        "created pool: {} bytes used after the cycles",
        f.used
    );
    created.destroy()
}

/// IPC: a POSIX-fd pool exported to a child process (fd over SCM_RIGHTS), one
/// allocation exported (64 bytes over the socket); the child
/// ([`ipc_importer`]) reads the exporter's bytes and writes its own, which the
/// exporter then reads.
fn ipc_two_processes<A: Api>() -> TestResult {
    let gpu = A::init()?;
    A::fd_pools_supported(&gpu)?;
    let pool = A::fd_pool()?;
    let fd = A::export_pool(pool.0)?;
    ensure!(
        fd >= 0 && unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1,
        "exported fd {fd} is not open"
    );

    let s = A::stream()?;
    let p = A::alloc_from(pool.0, IPC_BYTES, s.raw())?;
    let data = pattern(IPC_BYTES, EXPORTER_SEED);
    A::write(p, &data, s.raw())?;
    s.sync()?;
    let (exported, export) = A::export_pointer(p);
    let nonzero = export.iter().any(|&b| b != 0);
    let exchanged = A::ok(exported, "exporting the pointer").and_then(|()| {
        with_child(A::IMPORTER, |sock| {
            send_fd(sock, fd)?;
            sock.write_all(&export)?;
            let mut answer = [0u8; 1];
            sock.read_exact(&mut answer)
                .map_err(|e| format!("no answer from the importer: {e}"))?;
            ensure!(answer[0] == b'K', "the importer answered {:?}", answer[0]);
            Ok(())
        })
    });
    unsafe { libc::close(fd) };

    let mut back = vec![0u8; IPC_BYTES];
    A::read(&mut back, p, s.raw())?;
    A::free(p, s.raw())?;
    s.sync()?;
    exchanged?;
    ensure!(nonzero, "the export data is all zeros");
    same(
        &back,
        &pattern(IPC_BYTES, IMPORTER_SEED),
        "the importer's bytes",
    )?;
    pool.destroy()
}

/// Child of [`ipc_two_processes`]: imports the pool and the pointer, reads,
/// writes its own bytes, frees in stream order and answers `K`. Bad input on
/// the way: the closed descriptor again, an allocation from the imported pool,
/// export data of nothing.
fn ipc_importer<A: Api>() -> TestResult {
    let mut sock = child_socket(SOCK_VAR)?;
    sock.set_read_timeout(Some(Duration::from_secs(60)))?;
    cu!(cuInit(0))?;
    let _gpu = A::init()?;
    let s = A::stream()?;
    let mut c = BadInput::new(|_| A::alive(&s));
    let fd = recv_fd(&sock)?;
    let mut pool: CUmemoryPool = null_mut();
    let (r, name) = A::import_pool(&mut pool, fd);
    A::ok(r, name)?;
    unsafe { libc::close(fd) };
    // The closed descriptor cannot be imported again. The references list
    // invalid value and out of memory (the driver's also not initialized);
    // driver 580.159 returns "unknown" (measured on the H200), asserted here
    // as measured.
    let mut again: CUmemoryPool = null_mut();
    let (r, name) = A::import_pool(&mut again, fd);
    A::bad(
        &mut c,
        A::UNKNOWN,
        r,
        &format!("{name}(closed descriptor {fd})"),
    );

    let access = A::access(pool, 0)?;
    if access != CU_MEM_ACCESS_FLAGS_PROT_READWRITE {
        A::set_access(pool, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE)?;
    }
    let granted = A::access(pool, 0)?;
    println!(
        "importer: imported pool's access from device 0: {} then {}",
        access.0, granted.0
    );
    ensure!(
        granted == CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        "imported pool access {}",
        granted.0
    );

    // Imported pools do not allocate.
    let mut np: CUdeviceptr = 0;
    let (r, name) = A::alloc_from_raw(&mut np, pool, 4096, s.raw());
    if A::ok(r, name).is_ok() {
        A::free(np, s.raw())?;
    }
    A::bad(
        &mut c,
        A::INVALID_VALUE,
        r,
        &format!("{name}(imported pool)"),
    );

    let mut export = [0u8; 64];
    sock.read_exact(&mut export)?;
    // Export data of nothing is refused.
    let mut bp: CUdeviceptr = 0;
    let (r, name) = A::import_pointer(&mut bp, pool, [0; 64]);
    A::bad(
        &mut c,
        A::INVALID_VALUE,
        r,
        &format!("{name}(export data of zeros)"),
    );

    let mut p: CUdeviceptr = 0;
    let (r, name) = A::import_pointer(&mut p, pool, export);
    A::ok(r, name)?;
    match pool_of(p) {
        Ok(from) => {
            println!("importer: pointer {p:#x} from pool {from:?} (imported pool {pool:?})")
        }
        Err(e) => println!(
            "importer: pool of the imported pointer: {}",
            e.message().unwrap_or("?")
        ),
    }
    let mut back = vec![0u8; IPC_BYTES];
    A::read(&mut back, p, s.raw())?;
    s.sync()?;
    same(&back, &pattern(IPC_BYTES, EXPORTER_SEED), "importer read")?;
    A::write(p, &pattern(IPC_BYTES, IMPORTER_SEED), s.raw())?;
    // Freed in stream order and completed before the exporter is told.
    // compute-sanitizer reported the 4 MiB as leaked (allocated by the pointer
    // import) when the runtime twin used a plain cudaFree.
    // CUDA_MEM_SYS_SELFTEST_LEAK_IMPORT skips the free: the deliberate leak
    // that `run.sh --sanitize` must catch (its self-test, on rt_ipc_two_processes).
    if std::env::var_os(common::SELFTEST_LEAK_VAR).is_none() {
        A::free(p, s.raw())?;
        s.sync()?;
        A::pool_destroy(pool)?;
    } else {
        println!("importer: self-test: the imported {IPC_BYTES} B are deliberately not freed");
    }
    sock.write_all(b"K")?;
    c.finish()
}

/// A child process: a pool destroyed with one allocation outstanding; the
/// allocation stays readable and is freed afterwards.
fn destroy_outstanding<A: Api>() -> TestResult {
    let step = |m: &str| eprintln!("{} destroy_outstanding: {m}", A::NAME);
    cu!(cuInit(0))?;
    let _gpu = A::init()?;
    let s = A::stream()?;
    const N: usize = 2 * MIB;
    let pool = A::device_pool()?;
    let p = A::alloc_from(pool.0, N, s.raw())?;
    let data = pattern(N, 6);
    A::write(p, &data, s.raw())?;
    s.sync()?;
    step("destroying the pool with one allocation outstanding");
    pool.destroy()?;
    step("reading the allocation back");
    let mut back = vec![0u8; N];
    A::read(&mut back, p, s.raw())?;
    s.sync()?;
    step("freeing the allocation");
    A::free(p, s.raw())?;
    step("synchronizing");
    s.sync()?;
    step("done");
    same(&back, &data, "allocation of a destroyed pool")?;
    A::alive(&s)
}

fn main() {
    common::main(
        device_tests![
            rt_default_pool_round_trip,
            rt_created_pools_each_location,
            pool_destroy_with_outstanding_allocation,
            rt_two_streams_event_ordered_reuse,
            rt_pool_attributes_every_attribute,
            rt_trim_to_and_release_threshold,
            rt_current_pool_get_set if cfg(cuda_13000) else "cudaMemGetMemPool, cudaMemSetMemPool, cudaMemGetDefaultMemPool: not in these headers (added in 13.0)",
            rt_peer_pool_access @ 2,
            rt_ipc_two_processes,
            rt_process_death_importer_killed_while_mapped,
            rt_process_death_exporter_killed,
            rt_process_death_descriptor_after_sender_died,
            rt_bad_input,
            rt_leak_10000_cycles,
            drv_default_pool_round_trip,
            drv_created_pools_each_location,
            drv_two_streams_event_ordered_reuse,
            drv_attributes_and_trim,
            drv_current_pool_get_set if cfg(cuda_13000) else "cuMemGetMemPool, cuMemSetMemPool, cuMemGetDefaultMemPool: not in these headers (added in 13.0)",
            drv_peer_pool_access @ 2,
            drv_ipc_two_processes,
            drv_process_death_importer_killed_while_mapped,
            drv_process_death_exporter_killed,
            drv_process_death_descriptor_after_sender_died,
            drv_bad_input,
            drv_leak_10000_cycles,
        ],
        &[
            ("rt_ipc_importer", ipc_importer::<Rt>),
            ("drv_ipc_importer", ipc_importer::<Drv>),
            ("rt_pool_exporter", rt_pool_exporter),
            ("drv_pool_exporter", drv_pool_exporter),
            ("rt_pool_importer", rt_pool_importer),
            ("drv_pool_importer", drv_pool_importer),
            ("rt_destroy_outstanding", destroy_outstanding::<Rt>),
            ("drv_destroy_outstanding", destroy_outstanding::<Drv>),
        ],
    );
}
