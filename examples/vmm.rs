//! Virtual Memory Management (driver API 6.14), in the manner of NVIDIA's
//! `vectorAddMMAP` sample: reserve a virtual address range, back it with
//! physical allocations striped over every GPU device 0 can reach (one GPU is
//! enough), map it for device 0, let a kernel write it, read it back; then grow
//! the range in place, keeping the bytes already there.
//!
//! `cargo run --example vmm`. Exit codes: 0 all checks passed, 1 a call or a
//! check failed (the last line says which), 77 no GPU here (last line starts
//! with `no GPU:`).

// Structs are filled field by field: `CUmemLocation::id` moves into an anonymous
// union in CUDA 13.2, and `loc.id = 0` compiles on every release where a struct
// literal does not.
#![allow(clippy::field_reassign_with_default)]

use cuda_mem_sys::*;
use std::ffi::{c_void, CStr};
use std::process::exit;

/// The examples' kernel (`fill(out, n, salt)`: `out[i] = i ^ salt`), NUL-terminated.
const PTX: &str = concat!(include_str!("kernels/fill.ptx"), "\0");

/// Calls a driver function; on an error prints its name and code and exits 1.
macro_rules! cu {
    ($f:ident($($arg:expr),* $(,)?)) => {{
        let r = unsafe { $f($($arg),*) };
        if r != CUDA_SUCCESS {
            fail(&format!("{} returned {}", stringify!($f), error_name(r)));
        }
    }};
}

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

fn fail(what: &str) -> ! {
    println!("FAILED: {what}");
    exit(1)
}

fn check(ok: bool, what: &str) {
    if !ok {
        fail(what);
    }
}

/// Where there is no driver (the build's stub library) or no device, `cuInit` fails.
fn init_or_skip() {
    let r = unsafe { cuInit(0) };
    if r != CUDA_SUCCESS {
        println!("no GPU: cuInit returned {}; nothing to run", r.0);
        exit(77);
    }
}

/// Pinned device memory on `dev`, the kind `cuMemCreate` makes.
fn device_prop(dev: CUdevice) -> CUmemAllocationProp {
    let mut prop = CUmemAllocationProp::default();
    prop.type_ = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type_ = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    prop
}

/// Maps `chunk` bytes of `handle` at `va` and lets device 0 read and write
/// them. Access is a property of the mapping, so a remapped handle needs it again.
fn map_for_device0(va: CUdeviceptr, chunk: usize, handle: CUmemGenericAllocationHandle) {
    cu!(cuMemMap(va, chunk, 0, handle, 0));
    let mut access = CUmemAccessDesc::default();
    access.location.type_ = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = 0;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    cu!(cuMemSetAccess(va, chunk, &access, 1));
}

/// Runs `fill` over `bytes` bytes at `va` and waits for it.
fn fill(f: CUfunction, va: CUdeviceptr, bytes: usize, salt: u32) {
    let (mut out, mut n, mut salt) = (va, (bytes / 4) as u32, salt);
    let mut params = [
        (&mut out as *mut CUdeviceptr).cast::<c_void>(),
        (&mut n as *mut u32).cast(),
        (&mut salt as *mut u32).cast(),
    ];
    let blocks = n.div_ceil(256).min(1024);
    let (stream, extra) = (std::ptr::null_mut(), std::ptr::null_mut());
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
        extra
    ));
    cu!(cuCtxSynchronize());
}

/// Copies `bytes` at `va` (mapped in `chunk`-byte pieces) to the host and checks every word against `fill`'s formula.
fn expect_filled(va: CUdeviceptr, bytes: usize, chunk: usize, salt: u32, what: &str) {
    // One copy per mapping: after growing in place the range spans two reservations.
    let mut host = vec![0u32; bytes / 4];
    for (i, piece) in host.chunks_mut(chunk / 4).enumerate() {
        let at = va + (i * chunk) as u64;
        cu!(cuMemcpyDtoH(piece.as_mut_ptr().cast(), at, piece.len() * 4));
    }
    if let Some(i) = (0..host.len()).find(|&i| host[i] != i as u32 ^ salt) {
        fail(&format!(
            "{what}: word {i} is {:#x}, expected {:#x}",
            host[i],
            i as u32 ^ salt
        ));
    }
    println!(
        "{what}: all {} words read back as i ^ {salt:#x}",
        host.len()
    );
}

/// The device that physically holds the allocation mapped at `va`.
fn backing_device(va: CUdeviceptr) -> i32 {
    let mut handle = 0;
    // A new reference to the handle mapped there: released below.
    cu!(cuMemRetainAllocationHandle(&mut handle, va as *mut c_void));
    let mut prop = CUmemAllocationProp::default();
    cu!(cuMemGetAllocationPropertiesFromHandle(&mut prop, handle));
    cu!(cuMemRelease(handle));
    // From CUDA 13.2 `id` lives in an anonymous union (reached through
    // `Deref`), whose fields only `unsafe` reads; a plain field before.
    #[allow(unused_unsafe)]
    // SAFETY: the driver filled the location of a device allocation: `id` is the
    // member it wrote.
    unsafe {
        prop.location.id
    }
}

fn main() {
    init_or_skip();
    let mut dev0: CUdevice = 0;
    cu!(cuDeviceGet(&mut dev0, 0));
    let mut ctx = std::ptr::null_mut();
    cu!(cuDevicePrimaryCtxRetain(&mut ctx, dev0));
    cu!(cuCtxSetCurrent(ctx));

    // Every device whose memory device 0 can map: itself and its peers, if
    // they support VMM. (vectorAddMMAP does the same with cuDeviceCanAccessPeer.)
    let mut count = 0;
    cu!(cuDeviceGetCount(&mut count));
    let mut devices = vec![];
    for ordinal in 0..count {
        let mut dev = 0;
        cu!(cuDeviceGet(&mut dev, ordinal));
        let mut vmm = 0;
        let attr = CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED;
        cu!(cuDeviceGetAttribute(&mut vmm, attr, dev));
        let mut peer = 1;
        if dev != dev0 {
            cu!(cuDeviceCanAccessPeer(&mut peer, dev0, dev));
        }
        if vmm != 0 && peer != 0 {
            devices.push(dev);
        }
    }
    check(
        devices.first() == Some(&dev0),
        "device 0 does not support virtual memory management",
    );

    // Sizes and addresses must be multiples of every device's granularity.
    let mut chunk = 0;
    for &dev in &devices {
        let mut g = 0;
        cu!(cuMemGetAllocationGranularity(
            &mut g,
            &device_prop(dev),
            CU_MEM_ALLOC_GRANULARITY_MINIMUM
        ));
        chunk = chunk.max(g);
    }
    let size = chunk * devices.len();

    // 1. One virtual range, striped: stripe i lives on devices[i].
    let mut va: CUdeviceptr = 0;
    cu!(cuMemAddressReserve(&mut va, size, 0, 0, 0));
    let mut handles = vec![];
    for (i, &dev) in devices.iter().enumerate() {
        let mut h = 0;
        cu!(cuMemCreate(&mut h, chunk, &device_prop(dev), 0));
        map_for_device0(va + (i * chunk) as u64, chunk, h);
        handles.push(h);
    }
    println!(
        "reserved {size} bytes at {va:#x}, backed by {} allocations of {chunk} bytes on devices {devices:?}",
        devices.len()
    );
    for (i, &dev) in devices.iter().enumerate() {
        let on = backing_device(va + (i * chunk) as u64);
        check(
            on == dev,
            &format!("stripe {i} is on device {on}, expected {dev}"),
        );
    }
    println!("each stripe reports the device it was created on");

    let mut module = std::ptr::null_mut();
    cu!(cuModuleLoadData(&mut module, PTX.as_ptr().cast()));
    let mut f = std::ptr::null_mut();
    cu!(cuModuleGetFunction(&mut f, module, c"fill".as_ptr()));
    fill(f, va, size, 0x1234_5678);
    expect_filled(
        va,
        size,
        chunk,
        0x1234_5678,
        "kernel wrote the striped range",
    );

    // 2. Grow by another stripe per device. Ask for the addresses right after
    // the range (the address argument is a hint); if the driver gives them,
    // the range grows in place. If not, reserve a larger range elsewhere and
    // map the same physical allocations there: the bytes come along.
    let extra = chunk * devices.len();
    let mut next: CUdeviceptr = 0;
    let hinted = unsafe { cuMemAddressReserve(&mut next, extra, 0, va + size as u64, 0) };
    let mut reservations = vec![];
    if hinted == CUDA_SUCCESS && next == va + size as u64 {
        println!("grew in place: {extra} more bytes reserved at {next:#x}, right after the range");
        reservations.push((va, size));
        reservations.push((next, extra));
    } else {
        if hinted == CUDA_SUCCESS {
            cu!(cuMemAddressFree(next, extra));
        }
        let mut moved: CUdeviceptr = 0;
        cu!(cuMemAddressReserve(&mut moved, size + extra, 0, 0, 0));
        for (i, &h) in handles.iter().enumerate() {
            map_for_device0(moved + (i * chunk) as u64, chunk, h);
            cu!(cuMemUnmap(va + (i * chunk) as u64, chunk));
        }
        cu!(cuMemAddressFree(va, size));
        println!("the addresses after the range were taken: moved to {moved:#x} ({} bytes), same physical memory", size + extra);
        va = moved;
        reservations.push((va, size + extra));
    }
    for (i, &dev) in devices.iter().enumerate() {
        let mut h = 0;
        cu!(cuMemCreate(&mut h, chunk, &device_prop(dev), 0));
        map_for_device0(va + (size + i * chunk) as u64, chunk, h);
        handles.push(h);
    }
    expect_filled(
        va,
        size,
        chunk,
        0x1234_5678,
        "after growing, the first part still holds the kernel's words",
    );
    fill(f, va, size + extra, 0x0BAD_F00D);
    expect_filled(
        va,
        size + extra,
        chunk,
        0x0BAD_F00D,
        "kernel wrote the grown range",
    );

    // 3. Unmap each mapping, release the physical memory, free the addresses.
    for i in 0..handles.len() {
        cu!(cuMemUnmap(va + (i * chunk) as u64, chunk));
    }
    for h in handles {
        cu!(cuMemRelease(h));
    }
    for (at, len) in reservations {
        cu!(cuMemAddressFree(at, len));
    }
    cu!(cuModuleUnload(module));
    cu!(cuDevicePrimaryCtxRelease(dev0));
    println!(
        "OK: vmm, {} bytes striped over {} device(s), grown to {}",
        size,
        devices.len(),
        size + extra
    );
}
