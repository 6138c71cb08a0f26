//! Memory locations, in the form of the release cuda-mem-sys declares.
//!
//! `CUmemLocation`'s `id` sits in an anonymous union from CUDA 13.2
//! (cuda-mem-sys names it `anon_id`, of type `CUmemLocation_st__anon_id`),
//! `cudaMemLocation`'s from 13.3. A struct literal must name the form of its
//! release: the build script's `cuda_13020` / `cuda_13030` cfgs choose it.

use cuda_mem_sys as sys;

/// Device `device` as a driver `CUmemLocation`.
pub fn device(device: sys::CUdevice) -> sys::CUmemLocation {
    #[cfg(not(cuda_13020))]
    let location = sys::CUmemLocation {
        type_: sys::CU_MEM_LOCATION_TYPE_DEVICE,
        id: device,
    };
    #[cfg(cuda_13020)]
    let location = sys::CUmemLocation {
        type_: sys::CU_MEM_LOCATION_TYPE_DEVICE,
        anon_id: sys::CUmemLocation_st__anon_id { id: device },
    };
    location
}

/// Device `device` as a runtime `cudaMemLocation`.
pub fn runtime_device(device: i32) -> sys::cudaMemLocation {
    #[cfg(not(cuda_13030))]
    let location = sys::cudaMemLocation {
        type_: sys::cudaMemLocationTypeDevice,
        id: device,
    };
    #[cfg(cuda_13030)]
    let location = sys::cudaMemLocation {
        type_: sys::cudaMemLocationTypeDevice,
        anon_id: sys::cudaMemLocation__anon_id { id: device },
    };
    location
}

/// The device id of a driver location of type device.
pub fn device_id(location: &sys::CUmemLocation) -> i32 {
    #[cfg(not(cuda_13020))]
    let id = location.id;
    // SAFETY: every member of the union is a 4-byte id, written as `id`.
    #[cfg(cuda_13020)]
    let id = unsafe { location.anon_id.id };
    id
}
