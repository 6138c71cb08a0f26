//! VMM across processes, in the manner of NVIDIA's `memMapIPCDrv` sample: a
//! physical allocation exported as a POSIX file descriptor
//! (`cuMemExportToShareableHandle`), passed to a second process over a Unix
//! socket (`SCM_RIGHTS`), imported there (`cuMemImportFromShareableHandle`),
//! mapped and read; the second process writes its own words, which the first
//! then reads through its own mapping. The second process is this program,
//! started again with `VMM_IPC_SOCKET` set.
//!
//! `cargo run --example vmm_ipc`. Exit codes: 0 all checks passed, 1 a call or
//! a check failed (the last line says which), 77 no GPU here (last line starts
//! with `no GPU:`; on Windows, `skipped: not on Windows`).
//!
//! Unix only: Windows shares an allocation as a `CU_MEM_HANDLE_TYPE_WIN32`
//! handle duplicated into the other process, which this example does not
//! do. On Windows it compiles, says so and exits 77.

// Structs are filled field by field: `CUmemLocation::id` moves into an anonymous
// union in CUDA 13.2, and `loc.id = 0` compiles on every release where a struct
// literal does not.
#![allow(clippy::field_reassign_with_default)]

#[cfg(unix)]
use cuda_mem_sys::*;
#[cfg(unix)]
use std::ffi::{c_void, CStr};
#[cfg(unix)]
use std::io::{Read, Write};
#[cfg(unix)]
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
#[cfg(unix)]
use std::os::unix::net::UnixStream;
use std::process::exit;

#[cfg(unix)]
const PTX: &str = concat!(include_str!("kernels/fill.ptx"), "\0");
#[cfg(unix)]
const SOCKET_VAR: &str = "VMM_IPC_SOCKET";
#[cfg(unix)]
const PARENT_SALT: u32 = 0x5EED_0001;
#[cfg(unix)]
const CHILD_SALT: u32 = 0xC41D_0002;

#[cfg(unix)]
macro_rules! cu {
    ($f:ident($($arg:expr),* $(,)?)) => {{
        let r = unsafe { $f($($arg),*) };
        if r != CUDA_SUCCESS {
            fail(&format!("{} returned {}", stringify!($f), error_name(r)));
        }
    }};
}

#[cfg(unix)]
fn error_name(r: CUresult) -> String {
    let mut s = std::ptr::null();
    match unsafe { cuGetErrorName(r, &mut s) } {
        CUDA_SUCCESS => format!(
            "{} ({})",
            unsafe { CStr::from_ptr(s) }.to_string_lossy(),
            r.0
        ),
        _ => r.0.to_string(),
    }
}

#[cfg(unix)]
fn role() -> &'static str {
    if std::env::var_os(SOCKET_VAR).is_some() {
        "importer"
    } else {
        "exporter"
    }
}

#[cfg(unix)]
fn fail(what: &str) -> ! {
    println!("FAILED ({}): {what}", role());
    exit(1)
}

#[cfg(unix)]
fn init_or_skip() {
    let r = unsafe { cuInit(0) };
    if r != CUDA_SUCCESS {
        println!("no GPU: cuInit returned {}; nothing to run", r.0);
        exit(77);
    }
}

#[cfg(unix)]
fn io<T>(r: std::io::Result<T>, what: &str) -> T {
    r.unwrap_or_else(|e| fail(&format!("{what}: {e}")))
}

#[cfg(unix)]
/// Device-0 memory that can be exported as a POSIX file descriptor.
fn shareable_prop() -> CUmemAllocationProp {
    let mut prop = CUmemAllocationProp::default();
    prop.type_ = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location.type_ = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    prop
}

#[cfg(unix)]
/// Reserves a range for `handle`, maps it and lets device 0 read and write it.
fn map(handle: CUmemGenericAllocationHandle, size: usize) -> CUdeviceptr {
    let mut va = 0;
    cu!(cuMemAddressReserve(&mut va, size, 0, 0, 0));
    cu!(cuMemMap(va, size, 0, handle, 0));
    let mut access = CUmemAccessDesc::default();
    access.location.type_ = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = 0;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    cu!(cuMemSetAccess(va, size, &access, 1));
    va
}

#[cfg(unix)]
fn unmap(va: CUdeviceptr, size: usize) {
    cu!(cuMemUnmap(va, size));
    cu!(cuMemAddressFree(va, size));
}

#[cfg(unix)]
/// A context on device 0 and the `fill` kernel in it.
fn setup() -> CUfunction {
    init_or_skip();
    let mut ctx = std::ptr::null_mut();
    cu!(cuDevicePrimaryCtxRetain(&mut ctx, 0));
    cu!(cuCtxSetCurrent(ctx));
    let mut module = std::ptr::null_mut();
    cu!(cuModuleLoadData(&mut module, PTX.as_ptr().cast()));
    let mut f = std::ptr::null_mut();
    cu!(cuModuleGetFunction(&mut f, module, c"fill".as_ptr()));
    f
}

#[cfg(unix)]
fn fill(f: CUfunction, va: CUdeviceptr, bytes: usize, salt: u32) {
    let (mut out, mut n, mut salt) = (va, (bytes / 4) as u32, salt);
    let mut params = [
        (&mut out as *mut CUdeviceptr).cast::<c_void>(),
        (&mut n as *mut u32).cast(),
        (&mut salt as *mut u32).cast(),
    ];
    let (stream, extra) = (std::ptr::null_mut(), std::ptr::null_mut());
    cu!(cuLaunchKernel(
        f,
        n.div_ceil(256).min(1024),
        1,
        1,
        256,
        1,
        1,
        0,
        stream,
        params.as_mut_ptr(),
        extra
    ));
    cu!(cuCtxSynchronize());
}

#[cfg(unix)]
fn expect_filled(va: CUdeviceptr, bytes: usize, salt: u32, what: &str) {
    let mut host = vec![0u32; bytes / 4];
    cu!(cuMemcpyDtoH(host.as_mut_ptr().cast(), va, bytes));
    if let Some(i) = (0..host.len()).find(|&i| host[i] != i as u32 ^ salt) {
        fail(&format!(
            "{what}: word {i} is {:#x}, expected {:#x}",
            host[i],
            i as u32 ^ salt
        ));
    }
    println!(
        "{} ({}): {what}: all {} words are i ^ {salt:#x}",
        role(),
        std::process::id(),
        host.len()
    );
}

#[cfg(unix)]
fn main() {
    if std::env::var_os(SOCKET_VAR).is_some() {
        importer()
    } else {
        exporter()
    }
}

#[cfg(not(unix))]
fn main() {
    println!(
        "skipped: not on Windows: this example passes a POSIX file descriptor over a Unix \
         socket (Windows shares CU_MEM_HANDLE_TYPE_WIN32 handles instead); nothing to run"
    );
    exit(77);
}

#[cfg(unix)]
fn exporter() {
    let f = setup();
    let mut posix = 0;
    let attr = CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED;
    cu!(cuDeviceGetAttribute(&mut posix, attr, 0));
    if posix == 0 {
        println!("no GPU: device 0 cannot export POSIX file descriptors; nothing to run");
        exit(77);
    }
    let prop = shareable_prop();
    let mut size = 0;
    cu!(cuMemGetAllocationGranularity(
        &mut size,
        &prop,
        CU_MEM_ALLOC_GRANULARITY_MINIMUM
    ));
    let mut handle = 0;
    cu!(cuMemCreate(&mut handle, size, &prop, 0));
    let va = map(handle, size);
    fill(f, va, size, PARENT_SALT);
    expect_filled(va, size, PARENT_SALT, "kernel wrote the allocation");

    // The descriptor is a new file descriptor of this process; the socket
    // duplicates it into the importer, so ours is closed after sending.
    let mut fd: RawFd = -1;
    cu!(cuMemExportToShareableHandle(
        (&mut fd as *mut RawFd).cast(),
        handle,
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
        0
    ));
    let (mut sock, theirs) = io(UnixStream::pair(), "socketpair");
    // The importer inherits its end of the socket across exec.
    unsafe { libc::fcntl(theirs.as_raw_fd(), libc::F_SETFD, 0) };
    let exe = io(std::env::current_exe(), "current_exe");
    let mut child = io(
        std::process::Command::new(exe)
            .env(SOCKET_VAR, theirs.as_raw_fd().to_string())
            .spawn(),
        "starting the importer",
    );
    drop(theirs);
    io(send_fd(&sock, fd), "sending the descriptor");
    unsafe { libc::close(fd) };
    io(
        sock.write_all(&(size as u64).to_le_bytes()),
        "sending the size",
    );
    println!(
        "exporter ({}): sent descriptor {fd} of a {size}-byte allocation",
        std::process::id()
    );
    let mut answer = [0u8; 1];
    let answered = sock.read_exact(&mut answer);
    let status = io(child.wait(), "waiting for the importer");
    if answered.is_err() || answer[0] != b'K' || !status.success() {
        fail(&format!("the importer did not finish ({status})"));
    }
    // The importer's kernel wrote the same physical memory.
    expect_filled(
        va,
        size,
        CHILD_SALT,
        "the importer's words, read through the exporter's mapping",
    );
    unmap(va, size);
    cu!(cuMemRelease(handle));
    println!("OK: vmm_ipc, {size} bytes shared with a second process through a POSIX descriptor");
}

#[cfg(unix)]
fn importer() {
    let f = setup();
    let fd: RawFd = std::env::var(SOCKET_VAR)
        .unwrap()
        .parse()
        .unwrap_or_else(|_| fail("bad socket number"));
    let mut sock = unsafe { UnixStream::from_raw_fd(fd) };
    let shared = io(recv_fd(&sock), "receiving the descriptor");
    let mut size = [0u8; 8];
    io(sock.read_exact(&mut size), "receiving the size");
    let size = u64::from_le_bytes(size) as usize;
    let mut handle = 0;
    // For a POSIX descriptor the "OS handle" is the descriptor's number itself.
    cu!(cuMemImportFromShareableHandle(
        &mut handle,
        shared as usize as *mut c_void,
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    ));
    unsafe { libc::close(shared) };
    let va = map(handle, size);
    expect_filled(
        va,
        size,
        PARENT_SALT,
        "the exporter's words, read through the imported allocation",
    );
    fill(f, va, size, CHILD_SALT);
    unmap(va, size);
    cu!(cuMemRelease(handle));
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
