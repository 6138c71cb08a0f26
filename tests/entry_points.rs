//! The 53 entry points of the five API groups (NVIDIA's reference, CUDA 13.0)
//! are declared, each reachable through its group's module and the crate
//! root, and C enums are never Rust enums. Compiles or fails: no GPU needed.

#![cfg(cuda_13000)]

use cuda_mem_sys::*;

#[test]
fn every_entry_point_is_declared_in_its_group() {
    let entry_points: [(&str, *const ()); 53] = [
        (
            "cuMemAddressFree",
            driver::virtual_memory_management::cuMemAddressFree as *const (),
        ),
        (
            "cuMemAddressReserve",
            driver::virtual_memory_management::cuMemAddressReserve as *const (),
        ),
        (
            "cuMemCreate",
            driver::virtual_memory_management::cuMemCreate as *const (),
        ),
        (
            "cuMemExportToShareableHandle",
            driver::virtual_memory_management::cuMemExportToShareableHandle as *const (),
        ),
        (
            "cuMemGetAccess",
            driver::virtual_memory_management::cuMemGetAccess as *const (),
        ),
        (
            "cuMemGetAllocationGranularity",
            driver::virtual_memory_management::cuMemGetAllocationGranularity as *const (),
        ),
        (
            "cuMemGetAllocationPropertiesFromHandle",
            driver::virtual_memory_management::cuMemGetAllocationPropertiesFromHandle as *const (),
        ),
        (
            "cuMemImportFromShareableHandle",
            driver::virtual_memory_management::cuMemImportFromShareableHandle as *const (),
        ),
        (
            "cuMemMap",
            driver::virtual_memory_management::cuMemMap as *const (),
        ),
        (
            "cuMemMapArrayAsync",
            driver::virtual_memory_management::cuMemMapArrayAsync as *const (),
        ),
        (
            "cuMemRelease",
            driver::virtual_memory_management::cuMemRelease as *const (),
        ),
        (
            "cuMemRetainAllocationHandle",
            driver::virtual_memory_management::cuMemRetainAllocationHandle as *const (),
        ),
        (
            "cuMemSetAccess",
            driver::virtual_memory_management::cuMemSetAccess as *const (),
        ),
        (
            "cuMemUnmap",
            driver::virtual_memory_management::cuMemUnmap as *const (),
        ),
        (
            "cuMemAdvise",
            driver::unified_addressing::cuMemAdvise as *const (),
        ),
        (
            "cuMemDiscardAndPrefetchBatchAsync",
            driver::unified_addressing::cuMemDiscardAndPrefetchBatchAsync as *const (),
        ),
        (
            "cuMemDiscardBatchAsync",
            driver::unified_addressing::cuMemDiscardBatchAsync as *const (),
        ),
        (
            "cuMemPrefetchAsync",
            driver::unified_addressing::cuMemPrefetchAsync as *const (),
        ),
        (
            "cuMemPrefetchBatchAsync",
            driver::unified_addressing::cuMemPrefetchBatchAsync as *const (),
        ),
        (
            "cuMemRangeGetAttribute",
            driver::unified_addressing::cuMemRangeGetAttribute as *const (),
        ),
        (
            "cuMemRangeGetAttributes",
            driver::unified_addressing::cuMemRangeGetAttributes as *const (),
        ),
        (
            "cuPointerGetAttribute",
            driver::unified_addressing::cuPointerGetAttribute as *const (),
        ),
        (
            "cuPointerGetAttributes",
            driver::unified_addressing::cuPointerGetAttributes as *const (),
        ),
        (
            "cuPointerSetAttribute",
            driver::unified_addressing::cuPointerSetAttribute as *const (),
        ),
        (
            "cudaFreeAsync",
            runtime::stream_ordered_memory_allocator::cudaFreeAsync as *const (),
        ),
        (
            "cudaMallocAsync",
            runtime::stream_ordered_memory_allocator::cudaMallocAsync as *const (),
        ),
        (
            "cudaMallocFromPoolAsync",
            runtime::stream_ordered_memory_allocator::cudaMallocFromPoolAsync as *const (),
        ),
        (
            "cudaMemGetDefaultMemPool",
            runtime::stream_ordered_memory_allocator::cudaMemGetDefaultMemPool as *const (),
        ),
        (
            "cudaMemGetMemPool",
            runtime::stream_ordered_memory_allocator::cudaMemGetMemPool as *const (),
        ),
        (
            "cudaMemPoolCreate",
            runtime::stream_ordered_memory_allocator::cudaMemPoolCreate as *const (),
        ),
        (
            "cudaMemPoolDestroy",
            runtime::stream_ordered_memory_allocator::cudaMemPoolDestroy as *const (),
        ),
        (
            "cudaMemPoolExportPointer",
            runtime::stream_ordered_memory_allocator::cudaMemPoolExportPointer as *const (),
        ),
        (
            "cudaMemPoolExportToShareableHandle",
            runtime::stream_ordered_memory_allocator::cudaMemPoolExportToShareableHandle
                as *const (),
        ),
        (
            "cudaMemPoolGetAccess",
            runtime::stream_ordered_memory_allocator::cudaMemPoolGetAccess as *const (),
        ),
        (
            "cudaMemPoolGetAttribute",
            runtime::stream_ordered_memory_allocator::cudaMemPoolGetAttribute as *const (),
        ),
        (
            "cudaMemPoolImportFromShareableHandle",
            runtime::stream_ordered_memory_allocator::cudaMemPoolImportFromShareableHandle
                as *const (),
        ),
        (
            "cudaMemPoolImportPointer",
            runtime::stream_ordered_memory_allocator::cudaMemPoolImportPointer as *const (),
        ),
        (
            "cudaMemPoolSetAccess",
            runtime::stream_ordered_memory_allocator::cudaMemPoolSetAccess as *const (),
        ),
        (
            "cudaMemPoolSetAttribute",
            runtime::stream_ordered_memory_allocator::cudaMemPoolSetAttribute as *const (),
        ),
        (
            "cudaMemPoolTrimTo",
            runtime::stream_ordered_memory_allocator::cudaMemPoolTrimTo as *const (),
        ),
        (
            "cudaMemSetMemPool",
            runtime::stream_ordered_memory_allocator::cudaMemSetMemPool as *const (),
        ),
        (
            "cuTensorMapEncodeIm2col",
            driver::tensor_map_object_management::cuTensorMapEncodeIm2col as *const (),
        ),
        (
            "cuTensorMapEncodeIm2colWide",
            driver::tensor_map_object_management::cuTensorMapEncodeIm2colWide as *const (),
        ),
        (
            "cuTensorMapEncodeTiled",
            driver::tensor_map_object_management::cuTensorMapEncodeTiled as *const (),
        ),
        (
            "cuTensorMapReplaceAddress",
            driver::tensor_map_object_management::cuTensorMapReplaceAddress as *const (),
        ),
        (
            "cuDestroyExternalMemory",
            driver::external_resource_interoperability::cuDestroyExternalMemory as *const (),
        ),
        (
            "cuDestroyExternalSemaphore",
            driver::external_resource_interoperability::cuDestroyExternalSemaphore as *const (),
        ),
        (
            "cuExternalMemoryGetMappedBuffer",
            driver::external_resource_interoperability::cuExternalMemoryGetMappedBuffer
                as *const (),
        ),
        (
            "cuExternalMemoryGetMappedMipmappedArray",
            driver::external_resource_interoperability::cuExternalMemoryGetMappedMipmappedArray
                as *const (),
        ),
        (
            "cuImportExternalMemory",
            driver::external_resource_interoperability::cuImportExternalMemory as *const (),
        ),
        (
            "cuImportExternalSemaphore",
            driver::external_resource_interoperability::cuImportExternalSemaphore as *const (),
        ),
        (
            "cuSignalExternalSemaphoresAsync",
            driver::external_resource_interoperability::cuSignalExternalSemaphoresAsync
                as *const (),
        ),
        (
            "cuWaitExternalSemaphoresAsync",
            driver::external_resource_interoperability::cuWaitExternalSemaphoresAsync as *const (),
        ),
    ];
    for (name, f) in entry_points {
        assert!(!f.is_null(), "{name}");
    }
    assert_eq!(entry_points.len(), 53);
}

#[test]
fn documented_names_take_the_cuda_13_signatures() {
    // cuMemAdvise and cuMemPrefetchAsync take a CUmemLocation since 13.0.
    let _: unsafe extern "C" fn(CUdeviceptr, usize, CUmem_advise, CUmemLocation) -> CUresult =
        cuMemAdvise;
    let _: unsafe extern "C" fn(
        CUdeviceptr,
        usize,
        CUmemLocation,
        ::core::ffi::c_uint,
        CUstream,
    ) -> CUresult = cuMemPrefetchAsync;
    let _: unsafe extern "C" fn(
        *const ::core::ffi::c_void,
        usize,
        cudaMemoryAdvise,
        cudaMemLocation,
    ) -> cudaError_t = cudaMemAdvise;
}

#[test]
fn driver_and_runtime_share_one_vocabulary() {
    fn same<T>(_: T, _: T) {}
    same::<cudaStream_t>(core::ptr::null_mut(), CU_STREAM_LEGACY as CUstream);
    same::<cudaEvent_t>(
        core::ptr::null_mut(),
        core::ptr::null_mut::<CUevent_st>() as CUevent,
    );
    same::<cudaMemPool_t>(
        core::ptr::null_mut(),
        core::ptr::null_mut::<CUmemPoolHandle_st>() as CUmemoryPool,
    );
    same::<cudaGraph_t>(
        core::ptr::null_mut(),
        core::ptr::null_mut::<CUgraph_st>() as CUgraph,
    );
    same::<cudaUserObject_t>(
        core::ptr::null_mut(),
        core::ptr::null_mut::<CUuserObject_st>() as CUuserObject,
    );
    same::<cudaKernel_t>(
        core::ptr::null_mut(),
        core::ptr::null_mut::<CUkern_st>() as CUkernel,
    );
    same::<cudaLibrary_t>(
        core::ptr::null_mut(),
        core::ptr::null_mut::<CUlib_st>() as CUlibrary,
    );
}

#[test]
fn no_c_enum_is_a_rust_enum() {
    let generated = include_str!(concat!(env!("OUT_DIR"), "/cuda_mem_sys.rs"));
    assert!(
        !generated.contains("pub enum "),
        "a C enum became a Rust enum"
    );
    // Any value a newer driver returns is representable.
    let unknown = CUresult(0xdead);
    assert_ne!(unknown, CUDA_SUCCESS);
    let flags = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC;
    assert_eq!(flags.0, 0x9);
}
