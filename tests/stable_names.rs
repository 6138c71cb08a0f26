//! Names that stay the same across CUDA releases, and code written against
//! another `-sys` crate's bindings (cudarc's `sys`, whose C enums are Rust
//! enums) that ports by renaming alone. `CUmemLocation.id` is a direct field
//! up to CUDA 13.1 and sits in an anonymous union from 13.2 on; the generator
//! names anonymous members after their first field, derefs a struct to its
//! single anonymous member, and gives each field that moved a getter and a
//! setter (`build/codegen/ports.rs`), so the same source compiles against
//! every release. `cargo xtask abi` builds and runs this against each one.

// The claim includes "without a warning": no `unsafe` is needed, so none is
// allowed to be unused.
#![deny(unused_unsafe)]

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

/// Each moved field read and written by one source on every release, with
/// no `unsafe` (direct through 13.1, in an anonymous union after), and
/// landing at C's offset: the getter reads what the setter wrote, what a
/// write by name wrote, and what the bytes at C's offset hold.
#[test]
fn moved_fields_read_and_write_by_one_source_without_unsafe() {
    let mut loc = CUmemLocation::default();
    assert_eq!(loc.id(), 0);
    loc.type_ = CU_MEM_LOCATION_TYPE_DEVICE;
    loc.set_id(3);
    assert_eq!(loc.id(), 3);
    loc.id = 5; // a write by name, as before
    assert_eq!(loc.id(), 5);
    assert_eq!(
        int_at(&loc, 4),
        5,
        "CUmemLocation.id is at offset 4, as in C"
    );
    // The wrong twin: another value reads as itself, not as the last one.
    loc.set_id(-2);
    assert_ne!(loc.id(), 5);
    assert_eq!(loc.id(), -2);

    let mut rt = cudaMemLocation {
        type_: cudaMemLocationTypeDevice,
        ..Default::default()
    };
    rt.set_id(7);
    assert_eq!(rt.id(), 7);
    assert_eq!(
        int_at(&rt, 4),
        7,
        "cudaMemLocation.id is at offset 4, as in C"
    );

    // A function pointer's field, in a union from 13.2 (the struct from 12.2).
    #[cfg(cuda_12020)]
    {
        let mut kernel = cudaKernelNodeParamsV2::default();
        assert!(kernel.func().is_null());
        let marker = 0x1000usize as *mut core::ffi::c_void;
        kernel.set_func(marker);
        assert_eq!(kernel.func(), marker);
        // `func` is the struct's first member, in C as here.
        let first = unsafe { *(&kernel as *const cudaKernelNodeParamsV2).cast::<usize>() };
        assert_eq!(first, 0x1000);
    }
}

/// The `int` at byte `offset` of `value`.
fn int_at<T>(value: &T, offset: usize) -> i32 {
    assert!(offset + 4 <= core::mem::size_of::<T>());
    // SAFETY: inside `value`; an unaligned read of 4 initialised bytes.
    unsafe {
        (value as *const T)
            .cast::<u8>()
            .add(offset)
            .cast::<i32>()
            .read_unaligned()
    }
}

/// The enumerators as associated constants, spelled as cudarc spells its
/// enum variants, usable in patterns, equal to the crate-level constants;
/// under the C tag's name (`cudaError_enum`) and the typedef's (`CUresult`).
#[test]
fn enumerators_are_associated_constants_as_well() {
    assert_eq!(CUresult::CUDA_SUCCESS, CUDA_SUCCESS);
    assert_eq!(
        cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY,
        CUDA_ERROR_OUT_OF_MEMORY
    );
    assert_eq!(
        cudaError_t::cudaErrorMemoryAllocation,
        cudaErrorMemoryAllocation
    );
    assert_eq!(cudaError::cudaSuccess, cudaSuccess);
    assert_eq!(
        CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
        CU_MEM_LOCATION_TYPE_DEVICE
    );
    assert_eq!(
        CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    );
    assert_eq!(
        cudaMemAllocationType::cudaMemAllocationTypePinned,
        cudaMemAllocationTypePinned
    );
    // In a match, as ported code has them; the wrong twin: 2 is not success.
    let what = |r: CUresult| match r {
        CUresult::CUDA_SUCCESS => "ok",
        CUresult::CUDA_ERROR_OUT_OF_MEMORY => "oom",
        _ => "other",
    };
    assert_eq!(what(CUresult(0)), "ok");
    assert_eq!(what(CUresult(2)), "oom");
    assert_eq!(what(CUresult(1)), "other");
    assert_ne!(CUresult::CUDA_SUCCESS, CUresult::CUDA_ERROR_INVALID_VALUE);
}

/// Every associated constant of the bindings, each with the value of the
/// crate-level constant of its name and type, and every enumerator of an
/// enum newtype one: read from the generated text itself.
#[test]
fn every_associated_constant_is_its_crate_level_constant() {
    const GENERATED: &str = include_str!(concat!(env!("OUT_DIR"), "/cuda_mem_sys.rs"));
    let file = syn::parse_file(GENERATED).expect("the generated bindings parse");
    let name = |t: &syn::Type| match t {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    };
    // (type, name) → value, for `pub const NAME: T = T(value);`; syn's
    // equality compares the values' syntax, not their spans.
    let mut crate_level = std::collections::BTreeMap::new();
    let mut associated = std::collections::BTreeMap::new();
    for item in &file.items {
        match item {
            syn::Item::Const(c) => {
                let syn::Expr::Call(call) = &*c.expr else {
                    continue;
                };
                let syn::Expr::Path(f) = &*call.func else {
                    continue;
                };
                let ty = name(&c.ty);
                if ty.is_some() && f.path.get_ident().map(|i| i.to_string()) == ty {
                    crate_level.insert((ty, c.ident.to_string()), call.args[0].clone());
                }
            }
            syn::Item::Impl(i) if i.trait_.is_none() => {
                for it in &i.items {
                    if let syn::ImplItem::Const(c) = it {
                        let syn::Expr::Call(call) = &c.expr else {
                            panic!("{}: not Self(value)", c.ident)
                        };
                        let key = (name(&i.self_ty), c.ident.to_string());
                        associated.insert(key, call.args[0].clone());
                    }
                }
            }
            _ => {}
        }
    }
    assert!(
        associated.len() > 1000,
        "{} associated constants",
        associated.len()
    );
    assert_eq!(associated, crate_level);
}

/// `Debug` names the enumerator and its value; a value the headers do not
/// list prints bare; where enumerators share a value the first declared
/// names it; a struct's `Debug` shows its enum fields so.
#[test]
fn debug_names_the_enumerator_and_its_value() {
    assert_eq!(
        format!("{:?}", CUDA_ERROR_OUT_OF_MEMORY),
        "CUDA_ERROR_OUT_OF_MEMORY (2)"
    );
    assert_eq!(format!("{:?}", CUresult::CUDA_SUCCESS), "CUDA_SUCCESS (0)");
    assert_eq!(
        format!("{:?}", cudaErrorMemoryAllocation),
        "cudaErrorMemoryAllocation (2)"
    );
    // The wrong twins: a value no enumerator has, and a name's neighbour.
    assert_eq!(format!("{:?}", CUresult(123_456)), "123456");
    assert_ne!(
        format!("{:?}", CUDA_ERROR_INVALID_VALUE),
        "CUDA_ERROR_OUT_OF_MEMORY (2)"
    );
    // 8 is both; the first declared prints.
    assert_eq!(
        CU_DEVICE_ATTRIBUTE_SHARED_MEMORY_PER_BLOCK,
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK
    );
    assert_eq!(
        format!("{:?}", CU_DEVICE_ATTRIBUTE_SHARED_MEMORY_PER_BLOCK),
        "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK (8)"
    );
    // (A struct holding a union, `CUmemAllocationProp` from 13.2, derives no `Debug`.)
    let desc = CUDA_ARRAY_DESCRIPTOR {
        Format: CU_AD_FORMAT_UNSIGNED_INT8,
        ..Default::default()
    };
    let shown = format!("{desc:?}");
    assert!(
        shown.contains("Format: CU_AD_FORMAT_UNSIGNED_INT8 (1)"),
        "{shown}"
    );
}
