//! What the bindings are, shown: the release they were generated from, how
//! the CUDA libraries are reached, the five memory-management groups with the
//! number of entry points each module re-exports, a few exact layouts, and,
//! where a GPU is present, one documented effect per group.
//!
//! `cargo run --example demo` (or `cargo xtask demo` on a machine without
//! CUDA). Exit codes: 0 (also without a GPU: the last line then starts with
//! `no GPU:`), 1 an effect was not what the documentation says (the last line
//! says which).

// Structs are filled field by field: `CUmemLocation::id` moves into an anonymous
// union in CUDA 13.2, and `loc.id = 0` compiles on every release where a struct
// literal does not.
#![allow(clippy::field_reassign_with_default)]

use core::mem::{align_of, size_of};
use cuda_mem_sys::*;
use std::ffi::c_void;
use std::process::exit;
use std::ptr::null_mut;

/// The five groups: NVIDIA's name, the module path, its entry points.
const GROUPS: [(&str, &str, &[&str]); 5] = [
    (
        "Virtual Memory Management",
        "driver::virtual_memory_management",
        driver::virtual_memory_management::ENTRY_POINTS,
    ),
    (
        "Unified Addressing",
        "driver::unified_addressing",
        driver::unified_addressing::ENTRY_POINTS,
    ),
    (
        "Stream Ordered Memory Allocator",
        "runtime::stream_ordered_memory_allocator",
        runtime::stream_ordered_memory_allocator::ENTRY_POINTS,
    ),
    (
        "Tensor Map Object Management",
        "driver::tensor_map_object_management",
        driver::tensor_map_object_management::ENTRY_POINTS,
    ),
    (
        "External Resource Interoperability",
        "driver::external_resource_interoperability",
        driver::external_resource_interoperability::ENTRY_POINTS,
    ),
];

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

/// How the program reaches libcuda and libcudart.
fn mode() -> String {
    #[cfg(feature = "dynamic-loading")]
    {
        use cuda_mem_sys::loader;
        let driver = match loader::driver() {
            Ok(l) => format!("driver {} loaded", l.file),
            Err(e) => format!("no driver: {} ({})", e.message, e.tried),
        };
        let runtime = match loader::runtime() {
            Ok(l) if l.file == "libcudart_static.a" => "runtime linked statically".to_string(),
            Ok(l) => format!("runtime {} loaded", l.file),
            Err(e) => format!("no runtime: {} ({})", e.message, e.tried),
        };
        format!("loaded at run time (dynamic-loading): {driver}; {runtime}")
    }
    #[cfg(not(feature = "dynamic-loading"))]
    if cfg!(cuda_mem_sys_fallback) {
        "fallback: no CUDA at build time, the committed CUDA 13.0 bindings; libcuda linked dynamically (a stub at build time)".into()
    } else if cfg!(feature = "dynamic-cudart") || shared_runtime_mapped() {
        // Also where the build found no libcudart_static.a (a 12.x wheel has none).
        "linked: libcuda and libcudart.so dynamically".into()
    } else {
        "linked: libcuda dynamically, libcudart statically (libcudart_static.a)".into()
    }
}

/// Whether a shared `libcudart` is mapped into this process (Linux): the
/// build linked it because it found no static runtime.
#[cfg(not(feature = "dynamic-loading"))]
fn shared_runtime_mapped() -> bool {
    std::fs::read_to_string("/proc/self/maps").is_ok_and(|m| m.contains("/libcudart.so"))
}

fn main() {
    // What this build is, first: cargo hides a registry dependency's build warnings.
    println!("{BUILD}");
    println!(
        "cuda-mem-sys bindings for CUDA {}.{} (CUDA_VERSION {CUDA_VERSION})",
        CUDA_VERSION / 1000,
        CUDA_VERSION % 1000 / 10,
    );
    println!("mode: {}", mode());
    let mut total = 0;
    for (name, module, entry_points) in GROUPS {
        println!("  {name}: {} entry points in {module}", entry_points.len());
        total += entry_points.len();
    }
    println!("  {total} entry points in the five groups");
    println!("layouts: CUmemAllocationProp {} B, CUmemLocation {} B, CUtensorMap {} B aligned to {}, CUDA_EXTERNAL_MEMORY_HANDLE_DESC {} B",
        size_of::<CUmemAllocationProp>(), size_of::<CUmemLocation>(), size_of::<CUtensorMap>(),
        align_of::<CUtensorMap>(), size_of::<CUDA_EXTERNAL_MEMORY_HANDLE_DESC>());
    println!(
        "one vocabulary: cudaStream_t and CUstream are the same type: {}",
        core::any::type_name::<cudaStream_t>() == core::any::type_name::<CUstream>()
    );

    let r = unsafe { cuInit(0) };
    if r != CUDA_SUCCESS {
        println!(
            "no GPU: cuInit returned {}; the bindings build and link, the effects need a GPU",
            r.0
        );
        return;
    }
    let mut name = [0 as core::ffi::c_char; 128];
    let mut driver = 0;
    cu!(cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, 0));
    cu!(cuDriverGetVersion(&mut driver));
    let name = unsafe { core::ffi::CStr::from_ptr(name.as_ptr()) }.to_string_lossy();
    println!("device 0: {name}, driver API {driver}");
    let mut ctx = null_mut();
    cu!(cuDevicePrimaryCtxRetain(&mut ctx, 0));
    cu!(cuCtxSetCurrent(ctx));
    rt_round_trip();
    let (va, handle, size) = vmm_effect();
    external_effect(handle, size);
    unified_effect();
    tensor_map_effect(va);
    cu!(cuMemUnmap(va, size));
    cu!(cuMemAddressFree(va, size));
    cu!(cuMemRelease(handle));
    cu!(cuDevicePrimaryCtxRelease(0));
    println!("OK: one effect per group, as documented");
}

/// Stream Ordered Memory Allocator: allocate, copy in and out, free, in stream order.
fn rt_round_trip() {
    let data = [0x5au8; 4096];
    let mut back = [0u8; 4096];
    let mut p: *mut c_void = null_mut();
    let s = cudaStreamPerThread;
    unsafe {
        check(
            cudaMallocAsync(&mut p, data.len(), s) == cudaSuccess,
            "cudaMallocAsync",
        );
        cudaMemcpyAsync(
            p,
            data.as_ptr().cast(),
            data.len(),
            cudaMemcpyHostToDevice,
            s,
        );
        cudaMemcpyAsync(
            back.as_mut_ptr().cast(),
            p,
            data.len(),
            cudaMemcpyDeviceToHost,
            s,
        );
        cudaFreeAsync(p, s);
        check(
            cudaStreamSynchronize(s) == cudaSuccess,
            "cudaStreamSynchronize",
        );
    }
    check(back == data, "cudaMallocAsync round trip: bytes changed");
    println!("  stream-ordered allocator: cudaMallocAsync/cudaFreeAsync round trip, bytes intact");
}

/// Virtual Memory Management: physical memory mapped at a reserved address.
/// Returns the mapping, kept for the next two groups.
fn vmm_effect() -> (CUdeviceptr, CUmemGenericAllocationHandle, usize) {
    let mut prop = CUmemAllocationProp::default();
    prop.type_ = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location.type_ = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    let mut size = 0;
    cu!(cuMemGetAllocationGranularity(
        &mut size,
        &prop,
        CU_MEM_ALLOC_GRANULARITY_MINIMUM
    ));
    let (mut handle, mut va) = (0, 0);
    cu!(cuMemCreate(&mut handle, size, &prop, 0));
    cu!(cuMemAddressReserve(&mut va, size, 0, 0, 0));
    cu!(cuMemMap(va, size, 0, handle, 0));
    let mut access = CUmemAccessDesc::default();
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    cu!(cuMemSetAccess(va, size, &access, 1));
    cu!(cuMemsetD32(va, 0xC0FFEE, size / 4));
    let mut word = 0u32;
    cu!(cuMemcpyDtoH(
        (&mut word as *mut u32).cast(),
        va + size as u64 - 4,
        4
    ));
    check(word == 0xC0FFEE, &format!("VMM: last word {word:#x}"));
    println!("  VMM: {size} bytes created, mapped at {va:#x}, set and read back ({word:#x})");
    (va, handle, size)
}

/// External Resource Interoperability: the VMM allocation, exported as a
/// POSIX descriptor and imported as external memory, shows the same bytes.
fn external_effect(handle: CUmemGenericAllocationHandle, size: usize) {
    let mut fd = -1i32;
    let posix = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    cu!(cuMemExportToShareableHandle(
        (&mut fd as *mut i32).cast(),
        handle,
        posix,
        0
    ));
    let mut desc = CUDA_EXTERNAL_MEMORY_HANDLE_DESC::default();
    desc.type_ = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
    desc.handle.fd = fd; // CUDA owns it once imported
    desc.size = size as u64;
    let mut ext = null_mut();
    cu!(cuImportExternalMemory(&mut ext, &desc));
    let mut buf = CUDA_EXTERNAL_MEMORY_BUFFER_DESC::default();
    buf.size = size as u64;
    let mut p = 0;
    cu!(cuExternalMemoryGetMappedBuffer(&mut p, ext, &buf));
    let mut word = 0u32;
    cu!(cuMemcpyDtoH((&mut word as *mut u32).cast(), p, 4));
    check(
        word == 0xC0FFEE,
        &format!("external memory: first word {word:#x}"),
    );
    cu!(cuMemFree(p));
    cu!(cuDestroyExternalMemory(ext));
    println!(
        "  external resources: the VMM allocation imported as OPAQUE_FD memory reads {word:#x} too"
    );
}

/// Unified Addressing: a managed range prefetched to device 0 says so.
/// `cuMemPrefetchAsync` in the release's form: a `CUmemLocation` and flags
/// from CUDA 13.0, a `CUdevice` before.
fn unified_effect() {
    let len = 1 << 20;
    let mut p = 0;
    cu!(cuMemAllocManaged(&mut p, len, CU_MEM_ATTACH_GLOBAL.0));
    let mut concurrent = 0;
    let attr = CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS;
    cu!(cuDeviceGetAttribute(&mut concurrent, attr, 0));
    if concurrent == 0 {
        println!("  unified addressing: device 0 cannot prefetch managed memory (no concurrent managed access)");
    } else {
        #[cfg(cuda_13000)]
        {
            let mut dev0 = CUmemLocation::default();
            dev0.type_ = CU_MEM_LOCATION_TYPE_DEVICE;
            dev0.id = 0;
            cu!(cuMemPrefetchAsync(p, len, dev0, 0, null_mut()));
        }
        #[cfg(not(cuda_13000))]
        cu!(cuMemPrefetchAsync(p, len, 0, null_mut()));
        cu!(cuCtxSynchronize());
        let mut at = -7i32;
        let last = CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION;
        cu!(cuMemRangeGetAttribute(
            (&mut at as *mut i32).cast(),
            4,
            last,
            p,
            len
        ));
        check(
            at == 0,
            &format!("unified addressing: last prefetch location {at}"),
        );
        println!("  unified addressing: managed memory prefetched to device 0, LAST_PREFETCH_LOCATION reads {at}");
    }
    cu!(cuMemFree(p));
}

/// Tensor maps: a tiled map of the VMM range encodes; a misaligned address
/// is refused with the documented error.
fn tensor_map_effect(va: CUdeviceptr) {
    let encode = |addr: CUdeviceptr, map: &mut CUtensorMap| unsafe {
        cuTensorMapEncodeTiled(
            map,
            CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            2,
            addr as *mut c_void,
            [64u64, 64].as_ptr(),
            [256u64].as_ptr(),
            [32u32, 8].as_ptr(),
            [1u32, 1].as_ptr(),
            CU_TENSOR_MAP_INTERLEAVE_NONE,
            CU_TENSOR_MAP_SWIZZLE_NONE,
            CU_TENSOR_MAP_L2_PROMOTION_NONE,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    let mut major = 0;
    cu!(cuDeviceGetAttribute(
        &mut major,
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
        0
    ));
    if major < 9 {
        println!("  tensor maps: device 0 is compute capability {major}.x, tensor maps need 9.0");
        return;
    }
    let mut map = CUtensorMap::default();
    let r = encode(va, &mut map);
    check(
        r == CUDA_SUCCESS,
        &format!("cuTensorMapEncodeTiled returned {}", r.0),
    );
    let mut bad = CUtensorMap::default();
    let r = encode(va + 8, &mut bad);
    check(
        r == CUDA_ERROR_INVALID_VALUE,
        &format!("a misaligned address gave {}", r.0),
    );
    println!("  tensor maps: a 64x64 f32 map encoded; an address off by 8 bytes refused with CUDA_ERROR_INVALID_VALUE");
}
