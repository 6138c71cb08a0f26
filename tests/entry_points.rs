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

/// The differences between a module's `ENTRY_POINTS` and the reference list of
/// its group: names missing from the module, then names the reference lacks.
fn entry_point_differences(module: &[&str], reference: &[&str]) -> Vec<String> {
    let missing = reference
        .iter()
        .filter(|n| !module.contains(n))
        .map(|n| format!("missing {n}"));
    let extra = module
        .iter()
        .filter(|n| !reference.contains(n))
        .map(|n| format!("not in the reference: {n}"));
    let mut seen = Vec::new();
    let duplicated = module
        .iter()
        .filter(|n| {
            let dup = seen.contains(n);
            seen.push(n);
            dup
        })
        .map(|n| format!("listed twice: {n}"));
    missing.chain(extra).chain(duplicated).collect()
}

/// NVIDIA's reference list of the five groups' entry points (CUDA 13.0), one
/// `group<TAB>function<TAB>library` a line: the project's one reference file,
/// which `cargo xtask changes` and `device-report` read too.
fn reference(group: &str) -> Vec<&'static str> {
    include_str!("../xtask/entry-points.tsv")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let mut f = l.split('\t');
            (f.next() == Some(group)).then(|| f.next().unwrap())
        })
        .collect()
}

#[test]
fn each_group_module_counts_exactly_its_documented_entry_points() {
    let modules: [(&str, &[&str]); 5] = [
        (
            "virtual-memory-management",
            driver::virtual_memory_management::ENTRY_POINTS,
        ),
        (
            "unified-addressing",
            driver::unified_addressing::ENTRY_POINTS,
        ),
        (
            "stream-ordered-memory-allocator",
            runtime::stream_ordered_memory_allocator::ENTRY_POINTS,
        ),
        (
            "tensor-map",
            driver::tensor_map_object_management::ENTRY_POINTS,
        ),
        (
            "external-resource-interop",
            driver::external_resource_interoperability::ENTRY_POINTS,
        ),
    ];
    let mut total = 0;
    for (group, module) in modules {
        let reference = reference(group);
        assert!(!reference.is_empty(), "{group}: not in the reference file");
        assert_eq!(
            entry_point_differences(module, &reference),
            Vec::<String>::new(),
            "{group}"
        );
        total += module.len();
    }
    assert_eq!(total, 53);
}

#[test]
fn a_wrong_entry_point_list_is_caught_by_name() {
    // The versioned symbol instead of the documented name, one name dropped,
    // one listed twice: each is named.
    let reference = reference("unified-addressing");
    let mut wrong: Vec<&str> = reference
        .iter()
        .copied()
        .filter(|n| *n != "cuMemAdvise" && *n != "cuPointerSetAttribute")
        .collect();
    wrong.push("cuMemAdvise_v2");
    wrong.push("cuMemRangeGetAttribute");
    assert_eq!(
        entry_point_differences(&wrong, &reference),
        [
            "missing cuMemAdvise",
            "missing cuPointerSetAttribute",
            "not in the reference: cuMemAdvise_v2",
            "listed twice: cuMemRangeGetAttribute",
        ]
    );
}
