//! The crate as a C program's library, for `first_call.c` (built by
//! `cargo xtask valgrind` as a cdylib on cuda-mem-sys with the features
//! `dynamic-loading` and `export-c-names`, whose trampolines it exports).

/// `cuInit(7)`: Rust's inlined loaded call (the fake driver answers 0).
#[no_mangle]
pub extern "C" fn probe_init() -> i32 {
    // SAFETY: cuInit takes its flags by value.
    unsafe { cuda_mem_sys::cuInit(7).0 as i32 }
}

/// `loader::driver()`'s version of the driver, or -1 where it did not load.
#[no_mangle]
pub extern "C" fn probe_driver_version() -> i32 {
    match cuda_mem_sys::loader::driver() {
        Ok(d) => d.version.map_or(-1, |v| v as i32),
        Err(_) => -1,
    }
}
