//! Names that stay the same across CUDA releases. `CUmemLocation.id` is a
//! direct field up to CUDA 13.1 and sits in an anonymous union from 13.2 on;
//! the generator names anonymous members after their first field and derefs a
//! struct to its single anonymous member, so the same source compiles against
//! every release. `cargo xtask abi` builds this against each one.

use cuda_mem_sys::*;

#[test]
#[allow(unused_unsafe)]
fn mem_location_id_is_reachable_by_name_in_every_release() {
    unsafe {
        let mut loc: CUmemLocation = core::mem::zeroed();
        loc.type_ = CU_MEM_LOCATION_TYPE_DEVICE;
        loc.id = 0;
        assert_eq!(loc.type_, CU_MEM_LOCATION_TYPE_DEVICE);
        assert_eq!(loc.id, 0);
        loc.id = 3;
        assert_eq!(loc.id, 3);
        // The id sits right after the type, as in C.
        let base = &loc as *const CUmemLocation as usize;
        assert_eq!(core::ptr::addr_of!(loc.id) as usize - base, 4);
    }
}
