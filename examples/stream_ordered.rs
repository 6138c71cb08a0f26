//! The stream-ordered memory allocator (runtime API 6.12), in the manner of
//! NVIDIA's `streamOrderedAllocation` and `streamOrderedAllocationIPC` samples:
//!
//! 1. `cudaMallocAsync`/`cudaFreeAsync` on a stream, with a kernel launched
//!    through the driver API on the same stream (`cudaStream_t` is `CUstream`).
//! 2. A pool of its own with a release threshold: what a synchronize keeps,
//!    and what `cudaMemPoolTrimTo` gives back.
//! 3. Reuse across streams ordered by an event: the pool holds exactly one
//!    block, so the second stream's allocation succeeds only by reusing it.
//! 4. A pool shared with a second process (this program started again with
//!    `POOL_IPC_SOCKET` set): the pool as a POSIX descriptor over a Unix socket,
//!    one allocation as 64 bytes of export data. Unix only: on Windows (where
//!    a pool is shared as a `CU_MEM_HANDLE_TYPE_WIN32` handle, not written
//!    here) step 4 says it is not run, and the last line names what ran.
//!
//! `cargo run --example stream_ordered`. Exit codes: 0 all checks passed, 1 a
//! call or a check failed (the last line says which), 77 no GPU here (last
//! line starts with `no GPU:`).

// Structs are filled field by field: `CUmemLocation::id` moves into an anonymous
// union in CUDA 13.2, and `loc.id = 0` compiles on every release where a struct
// literal does not.
#![allow(clippy::field_reassign_with_default)]

use cuda_mem_sys::*;
use std::ffi::{c_void, CStr};
#[cfg(unix)]
use std::io::{Read, Write};
#[cfg(unix)]
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
#[cfg(unix)]
use std::os::unix::net::UnixStream;
use std::process::exit;
use std::ptr::null_mut;

const PTX: &str = concat!(include_str!("kernels/fill.ptx"), "\0");
#[cfg(unix)]
const SOCKET_VAR: &str = "POOL_IPC_SOCKET";
const MIB: usize = 1 << 20;

/// Calls a runtime function; on an error prints its name and code and exits 1.
macro_rules! rt {
    ($f:ident($($arg:expr),* $(,)?)) => {{
        let r = unsafe { $f($($arg),*) };
        if r != cudaSuccess {
            let name = unsafe { CStr::from_ptr(cudaGetErrorName(r)) };
            fail(&format!("{} returned {} ({})", stringify!($f), name.to_string_lossy(), r.0));
        }
    }};
}

/// Calls a driver function; on an error prints its name and code and exits 1.
macro_rules! cu {
    ($f:ident($($arg:expr),* $(,)?)) => {{
        let r = unsafe { $f($($arg),*) };
        if r != CUDA_SUCCESS {
            fail(&format!("{} returned {}", stringify!($f), r.0));
        }
    }};
}

fn fail(what: &str) -> ! {
    println!("FAILED: {what}");
    exit(1)
}

fn check(ok: bool, what: &str) {
    if !ok {
        fail(what);
    }
}

#[cfg(unix)]
fn io<T>(r: std::io::Result<T>, what: &str) -> T {
    r.unwrap_or_else(|e| fail(&format!("{what}: {e}")))
}

/// Device 0's primary context, current for the driver calls; the runtime uses
/// the same context. Returns the `fill` kernel loaded in it.
fn setup() -> CUfunction {
    let r = unsafe { cuInit(0) };
    if r != CUDA_SUCCESS {
        println!("no GPU: cuInit returned {}; nothing to run", r.0);
        exit(77);
    }
    let mut ctx = null_mut();
    cu!(cuDevicePrimaryCtxRetain(&mut ctx, 0));
    cu!(cuCtxSetCurrent(ctx));
    rt!(cudaSetDevice(0));
    let mut pools = 0;
    rt!(cudaDeviceGetAttribute(
        &mut pools,
        cudaDevAttrMemoryPoolsSupported,
        0
    ));
    check(pools == 1, "device 0 has no memory pools");
    let mut module = null_mut();
    cu!(cuModuleLoadData(&mut module, PTX.as_ptr().cast()));
    let mut f = null_mut();
    cu!(cuModuleGetFunction(&mut f, module, c"fill".as_ptr()));
    f
}

/// Queues `fill` (`out[i] = i ^ salt`) over `bytes` at `p` on `stream`.
fn fill(f: CUfunction, p: *mut c_void, bytes: usize, salt: u32, stream: cudaStream_t) {
    let (mut out, mut n, mut salt) = (p as CUdeviceptr, (bytes / 4) as u32, salt);
    let mut params = [
        (&mut out as *mut CUdeviceptr).cast::<c_void>(),
        (&mut n as *mut u32).cast(),
        (&mut salt as *mut u32).cast(),
    ];
    let blocks = n.div_ceil(256).min(1024);
    cu!(cuLaunchKernel(
        f,
        blocks,
        1,
        1,
        256,
        1,
        1,
        0,
        stream,
        params.as_mut_ptr(),
        null_mut()
    ));
}

/// Copies `bytes` at `p` to the host in stream order, waits, checks every word.
fn expect_filled(p: *mut c_void, bytes: usize, salt: u32, stream: cudaStream_t, what: &str) {
    let mut host = vec![0u32; bytes / 4];
    rt!(cudaMemcpyAsync(
        host.as_mut_ptr().cast(),
        p,
        bytes,
        cudaMemcpyDeviceToHost,
        stream
    ));
    rt!(cudaStreamSynchronize(stream));
    if let Some(i) = (0..host.len()).find(|&i| host[i] != i as u32 ^ salt) {
        fail(&format!(
            "{what}: word {i} is {:#x}, expected {:#x}",
            host[i],
            i as u32 ^ salt
        ));
    }
    println!("{what}: all {} words are i ^ {salt:#x}", host.len());
}

fn get_u64(pool: cudaMemPool_t, attr: cudaMemPoolAttr) -> u64 {
    let mut v = 0u64;
    rt!(cudaMemPoolGetAttribute(
        pool,
        attr,
        (&mut v as *mut u64).cast()
    ));
    v
}

fn set_u64(pool: cudaMemPool_t, attr: cudaMemPoolAttr, mut v: u64) {
    rt!(cudaMemPoolSetAttribute(
        pool,
        attr,
        (&mut v as *mut u64).cast()
    ));
}

fn device0() -> cudaMemLocation {
    let mut l = cudaMemLocation::default();
    l.type_ = cudaMemLocationTypeDevice;
    l.id = 0;
    l
}

/// Pool properties; `max_size` (0: no limit) only from CUDA 12.2, which added
/// `cudaMemPoolProps::maxSize` (before, every pool grows without limit).
fn pool_props(handles: cudaMemAllocationHandleType, max_size: usize) -> cudaMemPoolProps {
    let mut props = cudaMemPoolProps::default();
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = handles;
    props.location = device0();
    #[cfg(cuda_12020)]
    {
        props.maxSize = max_size;
    }
    #[cfg(not(cuda_12020))]
    let _ = max_size;
    props
}

fn main() {
    #[cfg(unix)]
    if std::env::var_os(SOCKET_VAR).is_some() {
        return importer();
    }
    let f = setup();
    let (mut s1, mut s2) = (null_mut(), null_mut());
    rt!(cudaStreamCreateWithFlags(&mut s1, cudaStreamNonBlocking));
    rt!(cudaStreamCreateWithFlags(&mut s2, cudaStreamNonBlocking));

    // 1. Allocate, use and free in stream order: no synchronization between
    // the three, the stream orders them.
    let bytes = 4 * MIB;
    let mut p = null_mut();
    rt!(cudaMallocAsync(&mut p, bytes, s1));
    fill(f, p, bytes, 0xA110_C001, s1);
    expect_filled(
        p,
        bytes,
        0xA110_C001,
        s1,
        "cudaMallocAsync + kernel on the same stream",
    );
    rt!(cudaFreeAsync(p, s1));

    // 2. A pool of exactly one 32 MiB block (maxSize, from CUDA 12.2; before,
    // the pool is unbounded and step 3 shows the reuse the event allows
    // rather than one the size forces). A synchronize gives
    // the OS back what the pool holds beyond its release threshold (default
    // 0: everything free); a threshold of 64 MiB keeps the block.
    let block = 32 * MIB;
    if !cfg!(cuda_12020) {
        println!(
            "skipped: cudaMemPoolProps.maxSize: not in the CUDA {}.{} headers (added in 12.2); the pool is unbounded",
            CUDA_VERSION / 1000,
            CUDA_VERSION % 1000 / 10
        );
    }
    let mut pool = null_mut();
    rt!(cudaMemPoolCreate(
        &mut pool,
        &pool_props(cudaMemHandleTypeNone, block)
    ));
    let threshold = 2 * block as u64;
    set_u64(pool, cudaMemPoolAttrReleaseThreshold, threshold);

    // 3. Allocate and free on s1, record an event after the free; s2 waits
    // for it, so the allocator may hand s2 the same block (the pool's
    // cudaMemPoolReuseFollowEventDependencies, on by default). It must:
    // the pool cannot hold a second block.
    let mut first = null_mut();
    rt!(cudaMallocFromPoolAsync(&mut first, block, pool, s1));
    fill(f, first, block, 0x0000_0051, s1);
    let mut freed = null_mut();
    rt!(cudaEventCreateWithFlags(&mut freed, cudaEventDisableTiming));
    rt!(cudaFreeAsync(first, s1));
    rt!(cudaEventRecord(freed, s1));
    rt!(cudaStreamWaitEvent(s2, freed, 0));
    let mut second = null_mut();
    rt!(cudaMallocFromPoolAsync(&mut second, block, pool, s2));
    check(
        second == first,
        &format!("s2 got {second:?}, not the block s1 freed ({first:?})"),
    );
    println!("s2 reused the block s1 freed ({second:?}), ordered by an event");
    fill(f, second, block, 0x0000_0052, s2);
    expect_filled(
        second,
        block,
        0x0000_0052,
        s2,
        "kernel on s2 wrote the reused block",
    );
    rt!(cudaFreeAsync(second, s2));
    rt!(cudaStreamSynchronize(s2));

    let kept = get_u64(pool, cudaMemPoolAttrReservedMemCurrent);
    let used = get_u64(pool, cudaMemPoolAttrUsedMemCurrent);
    check(
        used == 0 && kept >= block as u64,
        &format!("threshold {threshold}: {kept} reserved, {used} used after the free"),
    );
    println!("release threshold {threshold}: after the last free and a synchronize, {kept} bytes stay reserved");
    rt!(cudaMemPoolTrimTo(pool, 0));
    let trimmed = get_u64(pool, cudaMemPoolAttrReservedMemCurrent);
    check(
        trimmed == 0,
        &format!("cudaMemPoolTrimTo(0) left {trimmed} bytes reserved"),
    );
    println!("cudaMemPoolTrimTo(pool, 0): 0 bytes reserved");
    rt!(cudaMemPoolDestroy(pool));
    rt!(cudaEventDestroy(freed));

    // 4. A pool shared with a second process.
    let ipc = pool_ipc(f, s1);
    rt!(cudaStreamDestroy(s1));
    rt!(cudaStreamDestroy(s2));
    println!("OK: stream_ordered, async allocation, release threshold, event-ordered reuse, {ipc}");
}

/// Step 4, where the device can export its pools as POSIX descriptors: what
/// the last line says of it.
#[cfg(unix)]
fn pool_ipc(f: CUfunction, s: cudaStream_t) -> &'static str {
    let mut types = 0;
    rt!(cudaDeviceGetAttribute(
        &mut types,
        cudaDevAttrMemoryPoolSupportedHandleTypes,
        0
    ));
    if types as u32 & cudaMemHandleTypePosixFileDescriptor.0 == 0 {
        println!("pool IPC skipped: device 0's pools cannot be exported as POSIX descriptors");
        return "pool IPC skipped (no POSIX descriptors)";
    }
    exporter(f, s);
    "pool IPC"
}

/// Step 4 on Windows: not run.
#[cfg(not(unix))]
fn pool_ipc(_: CUfunction, _: cudaStream_t) -> &'static str {
    println!(
        "pool IPC not run: not on Windows (this step passes a POSIX descriptor over a Unix socket)"
    );
    "pool IPC not run (Unix only)"
}

#[cfg(unix)]
const EXPORTER_SALT: u32 = 0xE1E1_0001;
#[cfg(unix)]
const IMPORTER_SALT: u32 = 0x1111_0002;

#[cfg(unix)]
fn exporter(f: CUfunction, s: cudaStream_t) {
    let bytes = 2 * MIB;
    let mut pool = null_mut();
    rt!(cudaMemPoolCreate(
        &mut pool,
        &pool_props(cudaMemHandleTypePosixFileDescriptor, 0)
    ));
    let mut p = null_mut();
    rt!(cudaMallocFromPoolAsync(&mut p, bytes, pool, s));
    fill(f, p, bytes, EXPORTER_SALT, s);
    rt!(cudaStreamSynchronize(s));
    let mut fd: RawFd = -1;
    rt!(cudaMemPoolExportToShareableHandle(
        (&mut fd as *mut RawFd).cast(),
        pool,
        cudaMemHandleTypePosixFileDescriptor,
        0
    ));
    let mut export = cudaMemPoolPtrExportData::default();
    rt!(cudaMemPoolExportPointer(&mut export, p));

    let (mut sock, theirs) = io(UnixStream::pair(), "socketpair");
    unsafe { libc::fcntl(theirs.as_raw_fd(), libc::F_SETFD, 0) };
    let exe = io(std::env::current_exe(), "current_exe");
    let mut child = io(
        std::process::Command::new(exe)
            .env(SOCKET_VAR, theirs.as_raw_fd().to_string())
            .spawn(),
        "starting the importer",
    );
    drop(theirs);
    io(send_fd(&sock, fd), "sending the pool's descriptor");
    unsafe { libc::close(fd) };
    io(sock.write_all(&export.reserved), "sending the export data");
    io(
        sock.write_all(&(bytes as u64).to_le_bytes()),
        "sending the size",
    );
    println!("exporter: sent the pool (descriptor {fd}) and one {bytes}-byte allocation");
    let mut answer = [0u8; 1];
    let answered = sock.read_exact(&mut answer);
    let status = io(child.wait(), "waiting for the importer");
    check(
        answered.is_ok() && answer[0] == b'K' && status.success(),
        &format!("the importer did not finish ({status})"),
    );
    expect_filled(
        p,
        bytes,
        IMPORTER_SALT,
        s,
        "exporter reads the importer's words",
    );
    rt!(cudaFreeAsync(p, s));
    rt!(cudaStreamSynchronize(s));
    rt!(cudaMemPoolDestroy(pool));
}

#[cfg(unix)]
fn importer() {
    let f = setup();
    let fd: RawFd = std::env::var(SOCKET_VAR)
        .unwrap()
        .parse()
        .unwrap_or_else(|_| fail("bad socket number"));
    let mut sock = unsafe { UnixStream::from_raw_fd(fd) };
    let shared = io(recv_fd(&sock), "receiving the pool's descriptor");
    let mut export = cudaMemPoolPtrExportData::default();
    io(
        sock.read_exact(&mut export.reserved),
        "receiving the export data",
    );
    let mut size = [0u8; 8];
    io(sock.read_exact(&mut size), "receiving the size");
    let bytes = u64::from_le_bytes(size) as usize;

    let mut pool = null_mut();
    rt!(cudaMemPoolImportFromShareableHandle(
        &mut pool,
        shared as usize as *mut c_void,
        cudaMemHandleTypePosixFileDescriptor,
        0
    ));
    unsafe { libc::close(shared) };
    // An imported pool's memory is reachable from a device once access is granted.
    let mut flags = cudaMemAccessFlagsProtNone;
    let mut loc = device0();
    rt!(cudaMemPoolGetAccess(&mut flags, pool, &mut loc));
    if flags != cudaMemAccessFlagsProtReadWrite {
        let mut desc = cudaMemAccessDesc::default();
        desc.location = device0();
        desc.flags = cudaMemAccessFlagsProtReadWrite;
        rt!(cudaMemPoolSetAccess(pool, &desc, 1));
    }
    let mut p = null_mut();
    rt!(cudaMemPoolImportPointer(&mut p, pool, &mut export));
    let mut s = null_mut();
    rt!(cudaStreamCreateWithFlags(&mut s, cudaStreamNonBlocking));
    expect_filled(
        p,
        bytes,
        EXPORTER_SALT,
        s,
        "importer reads the exporter's words",
    );
    fill(f, p, bytes, IMPORTER_SALT, s);
    rt!(cudaStreamSynchronize(s));
    // An imported pointer is freed before the exporter frees it.
    rt!(cudaFree(p));
    rt!(cudaMemPoolDestroy(pool));
    rt!(cudaStreamDestroy(s));
    io(sock.write_all(b"K"), "answering");
}

/// Sends `fd` with one byte of data as an `SCM_RIGHTS` control message.
#[cfg(unix)]
fn send_fd(sock: &UnixStream, fd: RawFd) -> std::io::Result<()> {
    unsafe {
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let space = libc::CMSG_SPACE(size_of::<RawFd>() as u32) as usize;
        let mut control = vec![0u8; space];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
        if libc::sendmsg(sock.as_raw_fd(), &msg, 0) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Receives a descriptor sent by `send_fd`: a new descriptor of this process.
#[cfg(unix)]
fn recv_fd(sock: &UnixStream) -> std::io::Result<RawFd> {
    unsafe {
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let space = libc::CMSG_SPACE(size_of::<RawFd>() as u32) as usize;
        let mut control = vec![0u8; space];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        if libc::recvmsg(sock.as_raw_fd(), &mut msg, 0) <= 0 {
            return Err(std::io::Error::last_os_error());
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() || (*cmsg).cmsg_type != libc::SCM_RIGHTS {
            return Err(std::io::Error::other("no descriptor in the message"));
        }
        Ok(std::ptr::read_unaligned(
            libc::CMSG_DATA(cmsg).cast::<RawFd>(),
        ))
    }
}
