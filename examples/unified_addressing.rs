//! Unified addressing (driver API 6.17) with managed memory, in the manner of
//! NVIDIA's `UnifiedMemoryPerf` sample: one allocation the host and the device
//! both address; advice (`cuMemAdvise`) and prefetches (`cuMemPrefetchAsync`)
//! to the device and back to the host, each read back with
//! `cuMemRangeGetAttribute`; then one batch prefetch sending two ranges to two
//! places (`cuMemPrefetchBatchAsync`, CUDA 13).
//!
//! Every release 12.0 to 13.5: the form of the headers built against, chosen by
//! the build's `cuda_NNNNN` cfgs. From 13.0 `cuMemAdvise` and
//! `cuMemPrefetchAsync` take a `CUmemLocation` (and the prefetch flags);
//! before, a `CUdevice` (`CU_DEVICE_CPU` for the host). The location-type
//! range attributes (`..._LOCATION_TYPE`) are read from 12.2, where they were
//! added; the batch prefetch, absent before 13.0, prints a `skipped:` line
//! naming the release.
//!
//! `cargo run --example unified_addressing`. Exit codes: 0 all checks passed,
//! 1 a call or a check failed (the last line says which), 77 cannot run here
//! (last line starts with `no GPU:`, or `skipped:` on a device without
//! concurrent managed access).

// Structs are filled field by field: `CUmemLocation::id` moves into an anonymous
// union in CUDA 13.2, and `loc.id = 0` compiles on every release where a struct
// literal does not.
#![allow(clippy::field_reassign_with_default)]

use cuda_mem_sys::*;
use std::ffi::{c_void, CStr};
use std::process::exit;
use std::ptr::null_mut;

const PTX: &str = concat!(include_str!("kernels/fill.ptx"), "\0");
const MIB: usize = 1 << 20;

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

/// Where advice and prefetches point: a `CUmemLocation` from CUDA 13.0, a
/// `CUdevice` before (the documented names' forms of each release).
#[cfg(cuda_13000)]
type Target = CUmemLocation;
#[cfg(not(cuda_13000))]
type Target = CUdevice;

#[cfg(cuda_13000)]
fn device(id: i32) -> Target {
    let mut l = CUmemLocation::default();
    l.type_ = CU_MEM_LOCATION_TYPE_DEVICE;
    l.id = id;
    l
}
#[cfg(not(cuda_13000))]
fn device(id: i32) -> Target {
    id
}

/// The host: a location of type `HOST` (its id ignored), `CU_DEVICE_CPU` before 13.0.
#[cfg(cuda_13000)]
fn host() -> Target {
    let mut l = CUmemLocation::default();
    l.type_ = CU_MEM_LOCATION_TYPE_HOST;
    l
}
#[cfg(not(cuda_13000))]
fn host() -> Target {
    CU_DEVICE_CPU
}

/// `cuMemPrefetchAsync` in the release's form (13.0 added a flags argument, 0 here).
fn prefetch(p: CUdeviceptr, len: usize, to: Target, stream: CUstream) {
    #[cfg(cuda_13000)]
    cu!(cuMemPrefetchAsync(p, len, to, 0, stream));
    #[cfg(not(cuda_13000))]
    cu!(cuMemPrefetchAsync(p, len, to, stream));
}

/// The release as `major.minor`, for the `skipped:` lines.
fn release() -> String {
    format!("{}.{}", CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10)
}

/// One range attribute of 4 bytes (an `int` or a `CUmemLocationType`).
fn range_i32(attr: CUmem_range_attribute, p: CUdeviceptr, len: usize) -> i32 {
    let mut v = 0x7777_7777i32;
    cu!(cuMemRangeGetAttribute(
        (&mut v as *mut i32).cast(),
        4,
        attr,
        p,
        len
    ));
    v
}

/// A location type's number; `None` before 12.2, whose headers have no
/// location types (nor the range attributes that report them).
#[cfg(cuda_12020)]
fn type_of(t: CUmemLocationType) -> Option<u32> {
    Some(t.0)
}

/// Where the range was last prefetched to: (`LAST_PREFETCH_LOCATION`, `_TYPE`
/// from 12.2).
fn last_prefetch(p: CUdeviceptr, len: usize) -> (i32, Option<u32>) {
    let at = range_i32(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, p, len);
    #[cfg(cuda_12020)]
    let ty = Some(range_i32(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, p, len) as u32);
    #[cfg(not(cuda_12020))]
    let ty = None;
    (at, ty)
}

/// `to`: the device id (`CU_DEVICE_CPU` for the host) and the location type
/// (`None` before 12.2).
fn expect_prefetched(p: CUdeviceptr, len: usize, to: (i32, Option<u32>), what: &str) {
    let got = last_prefetch(p, len);
    check(
        got == to,
        &format!("{what}: last prefetch location {got:?}, expected {to:?}"),
    );
    match got.1 {
        Some(ty) => println!(
            "{what}: LAST_PREFETCH_LOCATION {}, LAST_PREFETCH_LOCATION_TYPE {ty}",
            got.0
        ),
        None => println!(
            "{what}: LAST_PREFETCH_LOCATION {} (no _TYPE attribute before CUDA 12.2)",
            got.0
        ),
    }
}

fn main() {
    let r = unsafe { cuInit(0) };
    if r != CUDA_SUCCESS {
        println!("no GPU: cuInit returned {}; nothing to run", r.0);
        exit(77);
    }
    let mut ctx = null_mut();
    cu!(cuDevicePrimaryCtxRetain(&mut ctx, 0));
    cu!(cuCtxSetCurrent(ctx));
    let mut concurrent = 0;
    cu!(cuDeviceGetAttribute(
        &mut concurrent,
        CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
        0
    ));
    if concurrent == 0 {
        println!(
            "skipped: device 0 has no concurrent managed access (advice and prefetches need it)"
        );
        exit(77);
    }
    let mut module = null_mut();
    cu!(cuModuleLoadData(&mut module, PTX.as_ptr().cast()));
    let mut f = null_mut();
    cu!(cuModuleGetFunction(&mut f, module, c"fill".as_ptr()));
    let device0 = device(0);
    let host = host();
    #[cfg(cuda_12020)]
    let (on_device, on_host) = (
        type_of(CU_MEM_LOCATION_TYPE_DEVICE),
        type_of(CU_MEM_LOCATION_TYPE_HOST),
    );
    #[cfg(not(cuda_12020))]
    let (on_device, on_host) = (None, None);
    // A stream of our own: the batch prefetch refuses the legacy NULL stream
    // (CUDA_ERROR_INVALID_VALUE, measured on an H100 with driver 580.159.04).
    let mut stream: CUstream = null_mut();
    cu!(cuStreamCreate(&mut stream, CU_STREAM_NON_BLOCKING.0));

    // One managed allocation: the same address on the host and the device.
    let len = 8 * MIB;
    let mut p: CUdeviceptr = 0;
    cu!(cuMemAllocManaged(&mut p, len, CU_MEM_ATTACH_GLOBAL.0));
    let mut managed = 0u32;
    cu!(cuPointerGetAttribute(
        (&mut managed as *mut u32).cast(),
        CU_POINTER_ATTRIBUTE_IS_MANAGED,
        p
    ));
    check(managed == 1, "CU_POINTER_ATTRIBUTE_IS_MANAGED is not 1");
    let words = unsafe { std::slice::from_raw_parts_mut(p as *mut u32, len / 4) };
    for (i, w) in words.iter_mut().enumerate() {
        *w = i as u32 ^ 0x4057_0000;
    }
    println!("{len} bytes of managed memory at {p:#x}, written by the host");

    // Advice is a hint about the range, readable back as range attributes.
    cu!(cuMemAdvise(
        p,
        len,
        CU_MEM_ADVISE_SET_PREFERRED_LOCATION,
        device0
    ));
    cu!(cuMemAdvise(p, len, CU_MEM_ADVISE_SET_ACCESSED_BY, device0));
    let preferred = range_i32(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, p, len);
    #[cfg(cuda_12020)]
    let preferred_type =
        Some(range_i32(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, p, len) as u32);
    #[cfg(not(cuda_12020))]
    let preferred_type = None;
    let mut accessed_by = [0x7777_7777i32; 4];
    cu!(cuMemRangeGetAttribute(
        accessed_by.as_mut_ptr().cast(),
        16,
        CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY,
        p,
        len
    ));
    check(
        preferred == 0 && preferred_type == on_device,
        &format!("preferred location {preferred} (type {preferred_type:?}), expected device 0"),
    );
    // The array lists the devices, then CU_DEVICE_INVALID in the unused entries.
    check(
        accessed_by[0] == 0 && accessed_by[1..].iter().all(|&d| d == CU_DEVICE_INVALID),
        &format!("ACCESSED_BY {accessed_by:?}, expected [0, -2, -2, -2]"),
    );
    println!(
        "advice read back: preferred location device {preferred}, accessed by {accessed_by:?}"
    );

    // Prefetch to device 0, where a kernel overwrites every word.
    prefetch(p, len, device0, stream);
    cu!(cuStreamSynchronize(stream));
    expect_prefetched(p, len, (0, on_device), "prefetched to device 0");
    let (mut out, mut n, mut salt) = (p, (len / 4) as u32, 0xDE71_0000u32);
    let mut params = [
        (&mut out as *mut CUdeviceptr).cast::<c_void>(),
        (&mut n as *mut u32).cast(),
        (&mut salt as *mut u32).cast(),
    ];
    cu!(cuLaunchKernel(
        f,
        1024,
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

    // Prefetch back to the host, in stream order after the kernel.
    prefetch(p, len, host, stream);
    cu!(cuStreamSynchronize(stream));
    expect_prefetched(p, len, (CU_DEVICE_CPU, on_host), "prefetched to the host");
    let words = unsafe { std::slice::from_raw_parts(p as *const u32, len / 4) };
    if let Some(i) = (0..words.len()).find(|&i| words[i] != i as u32 ^ 0xDE71_0000) {
        fail(&format!(
            "word {i} is {:#x} on the host, expected the kernel's {:#x}",
            words[i],
            i as u32 ^ 0xDE71_0000
        ));
    }
    println!("the host reads the kernel's {} words", words.len());

    batch_prefetch(device0, host, stream);

    cu!(cuMemFree(p));
    cu!(cuStreamDestroy_v2(stream));
    cu!(cuModuleUnload(module));
    cu!(cuDevicePrimaryCtxRelease(0));
    println!(
        "OK: unified_addressing (CUDA {}), advice, prefetches to the device and the host{}",
        release(),
        if cfg!(cuda_13000) {
            ", a batch prefetch"
        } else {
            ""
        }
    );
}

/// One batch, two ranges, two destinations (`cuMemPrefetchBatchAsync`, CUDA 13.0).
#[cfg(cuda_13000)]
fn batch_prefetch(device0: Target, host: Target, stream: CUstream) {
    let (on_device, on_host) = (
        type_of(CU_MEM_LOCATION_TYPE_DEVICE),
        type_of(CU_MEM_LOCATION_TYPE_HOST),
    );
    // One batch, two ranges, two destinations: ranges [0, 1) go to locations[0]
    // (device 0), ranges from index 1 on to locations[1] (the host).
    let (mut a, mut b) = (0, 0);
    cu!(cuMemAllocManaged(&mut a, 2 * MIB, CU_MEM_ATTACH_GLOBAL.0));
    cu!(cuMemAllocManaged(&mut b, 2 * MIB, CU_MEM_ATTACH_GLOBAL.0));
    let mut ranges = [a, b];
    let mut sizes = [2 * MIB, 2 * MIB];
    let mut locations = [device0, host];
    let mut first_range_of = [0usize, 1];
    cu!(cuMemPrefetchBatchAsync(
        ranges.as_mut_ptr(),
        sizes.as_mut_ptr(),
        2,
        locations.as_mut_ptr(),
        first_range_of.as_mut_ptr(),
        2,
        0,
        stream
    ));
    cu!(cuStreamSynchronize(stream));
    expect_prefetched(a, 2 * MIB, (0, on_device), "batch: range A to device 0");
    expect_prefetched(
        b,
        2 * MIB,
        (CU_DEVICE_CPU, on_host),
        "batch: range B to the host",
    );

    for m in [a, b] {
        cu!(cuMemFree(m));
    }
}

#[cfg(not(cuda_13000))]
fn batch_prefetch(_: Target, _: Target, _: CUstream) {
    println!(
        "skipped: cuMemPrefetchBatchAsync: not in the CUDA {} headers (added in 13.0)",
        release()
    );
}
