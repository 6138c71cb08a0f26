//! ns per call of cheap driver functions, for `docs/call-cost.md`.
//!
//! One source, three builds: cuda-mem-sys linked (default), cuda-mem-sys
//! loaded (`--features loaded`), cudarc 0.19 loaded (`--features cudarc`).
//! `cargo xtask gpu-bundle` carries all three; `bench.sh` runs them
//! interleaved, pinned to one core. Each figure is the minimum over 5
//! repetitions of N calls.
//!
//! Separate processes differ by more than the loader costs (CPU placement,
//! frequency, page layout), so the loaded build also measures, in the same
//! process and interleaved with its own calls, the driver's functions called
//! directly through the pointers the loader resolved (`direct`): what a linked
//! call does (one indirect call through the GOT) without the loader's check.

use std::ffi::c_void;
use std::time::Instant;

const N: u32 = 200_000;

fn per_call(n: u32, mut f: impl FnMut()) -> f64 {
    (0..5)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..n {
                f();
            }
            t.elapsed().as_nanos() as f64 / n as f64
        })
        .fold(f64::INFINITY, f64::min)
}

/// The measurements, written once over a module of driver functions (`$s`)
/// with its spelling of the few enum values used.
macro_rules! measure {
    ($s:path, $ok:expr, $mem_type:expr, $f32:expr, $interleave:expr, $swizzle:expr, $l2:expr, $oob:expr) => {{
        use $s as sys;
        unsafe {
            let check = |what: &str, r| {
                if r != $ok {
                    eprintln!("{what} failed: {r:?}");
                    std::process::exit(1);
                }
            };
            check("cuInit", sys::cuInit(0));
            let mut dev = std::mem::zeroed();
            check("cuDeviceGet", sys::cuDeviceGet(&mut dev, 0));
            let mut ctx = std::mem::zeroed();
            check(
                "cuDevicePrimaryCtxRetain",
                sys::cuDevicePrimaryCtxRetain(&mut ctx, dev),
            );
            check("cuCtxSetCurrent", sys::cuCtxSetCurrent(ctx));
            let mut stream = std::mem::zeroed();
            check("cuStreamCreate", sys::cuStreamCreate(&mut stream, 0));
            let mut dptr = std::mem::zeroed();
            check("cuMemAlloc", sys::cuMemAlloc_v2(&mut dptr, 1 << 22));
            let mut out = vec![];
            out.push((
                "cuCtxGetCurrent",
                per_call(N, || {
                    let mut c = std::mem::zeroed();
                    std::hint::black_box(sys::cuCtxGetCurrent(&mut c));
                }),
            ));
            out.push((
                "cuPointerGetAttribute",
                per_call(N, || {
                    let mut v = 0u32;
                    std::hint::black_box(sys::cuPointerGetAttribute(
                        &mut v as *mut u32 as *mut c_void,
                        $mem_type,
                        dptr,
                    ));
                }),
            ));
            out.push((
                "cuStreamQuery",
                per_call(N / 10, || {
                    std::hint::black_box(sys::cuStreamQuery(stream));
                }),
            ));
            out.push((
                "cuMemAllocAsync+cuMemFreeAsync",
                per_call(N / 10, || {
                    let mut p = std::mem::zeroed();
                    std::hint::black_box(sys::cuMemAllocAsync(&mut p, 4096, stream));
                    std::hint::black_box(sys::cuMemFreeAsync(p, stream));
                }),
            ));
            check("cuStreamSynchronize", sys::cuStreamSynchronize(stream));
            out.push((
                "cuTensorMapEncodeTiled",
                per_call(N / 10, || {
                    let mut map = std::mem::zeroed();
                    let dims = [256u64, 256];
                    let strides = [256u64 * 4];
                    let boxes = [32u32, 32];
                    let elem = [1u32, 1];
                    std::hint::black_box(sys::cuTensorMapEncodeTiled(
                        &mut map,
                        $f32,
                        2,
                        dptr as *mut c_void,
                        dims.as_ptr(),
                        strides.as_ptr(),
                        boxes.as_ptr(),
                        elem.as_ptr(),
                        $interleave,
                        $swizzle,
                        $l2,
                        $oob,
                    ));
                }),
            ));
            out
        }
    }};
}

/// The measured functions called through the driver's own pointers (from
/// `loader::function`), everything else as in the crate: the same-process
/// baseline for the crate's calls.
#[cfg(feature = "loaded")]
#[allow(non_snake_case, clippy::too_many_arguments)]
mod direct {
    pub use cuda_mem_sys::*;
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    macro_rules! direct {
        ($($name:ident($($a:ident: $t:ty),*);)*) => {
            #[allow(non_upper_case_globals)]
            mod slot { $(pub static $name: super::AtomicUsize = super::AtomicUsize::new(0);)* }
            /// Resolves each function once through the crate's loader.
            pub fn init() {
                $(
                    match loader::function(stringify!($name)) {
                        Ok(loader::Resolved::Loaded(p)) => slot::$name.store(p as usize, Relaxed),
                        other => {
                            eprintln!("{}: {other:?}", stringify!($name));
                            std::process::exit(1);
                        }
                    }
                )*
            }
            $(
                #[inline(always)]
                pub unsafe fn $name($($a: $t),*) -> CUresult {
                    let f: unsafe extern "C" fn($($t),*) -> CUresult =
                        std::mem::transmute(slot::$name.load(Relaxed));
                    f($($a),*)
                }
            )*
        };
    }
    direct! {
        cuCtxGetCurrent(pctx: *mut CUcontext);
        cuPointerGetAttribute(data: *mut std::ffi::c_void, attribute: CUpointer_attribute, ptr: CUdeviceptr);
        cuStreamQuery(stream: CUstream);
        cuMemAllocAsync(dptr: *mut CUdeviceptr, bytesize: usize, stream: CUstream);
        cuMemFreeAsync(dptr: CUdeviceptr, stream: CUstream);
        cuTensorMapEncodeTiled(
            map: *mut CUtensorMap, dtype: CUtensorMapDataType, rank: u32,
            addr: *mut std::ffi::c_void, dims: *const u64, strides: *const u64,
            boxes: *const u32, elem: *const u32, interleave: CUtensorMapInterleave,
            swizzle: CUtensorMapSwizzle, l2: CUtensorMapL2promotion,
            oob: CUtensorMapFloatOOBfill
        );
    }
}

/// Rounds of the loaded build's same-process comparison.
#[cfg(feature = "loaded")]
const SAME_PROCESS_ROUNDS: usize = 5;

/// [`measure!`] over a module with cuda-mem-sys's names (the crate, or `direct`).
#[cfg(not(feature = "cudarc"))]
macro_rules! measure_cms {
    ($s:path) => {
        measure!(
            $s,
            CUDA_SUCCESS,
            CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            CU_TENSOR_MAP_INTERLEAVE_NONE,
            CU_TENSOR_MAP_SWIZZLE_128B,
            CU_TENSOR_MAP_L2_PROMOTION_NONE,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
        )
    };
}

fn main() {
    #[cfg(feature = "loaded")]
    {
        use cuda_mem_sys::*;
        // Resolve everything first so that neither side pays a first call.
        let (driver, _) = loader::load_all();
        if driver == 0 {
            eprintln!("no driver loaded: {:?}", loader::driver());
            std::process::exit(1);
        }
        direct::init();
        for _ in 0..SAME_PROCESS_ROUNDS {
            for (who, figures) in [
                ("same-process-crate", measure_cms!(cuda_mem_sys)),
                ("same-process-direct", measure_cms!(direct)),
            ] {
                for (op, ns) in figures {
                    println!("{who} {op} {ns:.2}");
                }
            }
        }
    }
    #[cfg(not(feature = "cudarc"))]
    let (who, figures) = {
        use cuda_mem_sys::*;
        let who = if cfg!(feature = "loaded") {
            "cuda-mem-sys-loaded"
        } else {
            "cuda-mem-sys-linked"
        };
        (who, measure_cms!(cuda_mem_sys))
    };
    #[cfg(feature = "cudarc")]
    let (who, figures) = {
        use cudarc::driver::sys::*;
        (
            "cudarc-0.19-loaded",
            measure!(
                cudarc::driver::sys,
                CUresult::CUDA_SUCCESS,
                CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
                CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_NONE,
                CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
            ),
        )
    };
    for (op, ns) in figures {
        println!("{who} {op} {ns:.2}");
    }
}
