//! What the bindings are, shown: the release they were generated from, the
//! documented names and the symbols they link, a few exact layouts, and, where
//! a GPU is present, a stream-ordered allocation round trip.
//!
//! `cargo run --example demo` (see the README for a machine without CUDA).

use core::mem::{align_of, size_of};
use cuda_mem_sys::*;

fn main() {
    println!(
        "cuda-mem-sys bindings for CUDA {}.{} (CUDA_VERSION {CUDA_VERSION}){}",
        CUDA_VERSION / 1000,
        CUDA_VERSION % 1000 / 10,
        if cfg!(cuda_mem_sys_fallback) {
            ", from the committed fallback"
        } else {
            ""
        }
    );
    println!("layouts: CUmemAllocationProp {} B, CUmemLocation {} B, CUtensorMap {} B aligned to {}, CUDA_EXTERNAL_MEMORY_HANDLE_DESC {} B",
        size_of::<CUmemAllocationProp>(), size_of::<CUmemLocation>(), size_of::<CUtensorMap>(),
        align_of::<CUtensorMap>(), size_of::<CUDA_EXTERNAL_MEMORY_HANDLE_DESC>());
    println!(
        "one vocabulary: cudaStream_t and CUstream are the same type: {}",
        core::any::type_name::<cudaStream_t>() == core::any::type_name::<CUstream>()
    );
    println!(
        "flags combine: POSIX_FD | FABRIC = {:#x}",
        (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC).0
    );
    println!(
        "the VMM group: {} entry points re-exported in driver::virtual_memory_management",
        [
            driver::virtual_memory_management::cuMemCreate as *const (),
            driver::virtual_memory_management::cuMemMap as *const (),
        ]
        .len()
    );

    let r = unsafe { cuInit(0) };
    if r != CUDA_SUCCESS {
        println!("no GPU here (cuInit returned {}): the bindings build and link; GPU tests report ignored", r.0);
        return;
    }
    let mut name = [0 as core::ffi::c_char; 128];
    let mut driver = 0;
    unsafe {
        cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, 0);
        cuDriverGetVersion(&mut driver);
    }
    let name = unsafe { core::ffi::CStr::from_ptr(name.as_ptr()) }.to_string_lossy();
    println!("device 0: {name}, driver API {driver}");
    let mut p: *mut core::ffi::c_void = core::ptr::null_mut();
    let data = [0x5au8; 4096];
    let mut back = [0u8; 4096];
    unsafe {
        assert_eq!(
            cudaMallocAsync(&mut p, data.len(), cudaStreamPerThread),
            cudaSuccess
        );
        cudaMemcpyAsync(
            p,
            data.as_ptr().cast(),
            data.len(),
            cudaMemcpyHostToDevice,
            cudaStreamPerThread,
        );
        cudaMemcpyAsync(
            back.as_mut_ptr().cast(),
            p,
            data.len(),
            cudaMemcpyDeviceToHost,
            cudaStreamPerThread,
        );
        cudaFreeAsync(p, cudaStreamPerThread);
        cudaStreamSynchronize(cudaStreamPerThread);
    }
    println!(
        "cudaMallocAsync round trip: {}",
        if back == data {
            "bytes intact"
        } else {
            "BYTES CHANGED"
        }
    );
}
