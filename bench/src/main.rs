//! ns per call of cheap driver functions, for `docs/call-cost.md`.
//!
//! One source, three builds: cuda-mem-sys linked (default), cuda-mem-sys
//! loaded (`--features loaded`), cudarc 0.19 loaded (`--features cudarc`).
//! `cargo xtask gpu-bundle` carries all three; `run.sh --bench` runs them
//! interleaved. Each figure is the minimum over 5 repetitions of N calls.

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

fn main() {
    #[cfg(not(feature = "cudarc"))]
    let (who, figures) = {
        use cuda_mem_sys::*;
        let who = if cfg!(feature = "loaded") {
            "cuda-mem-sys-loaded"
        } else {
            "cuda-mem-sys-linked"
        };
        (
            who,
            measure!(
                cuda_mem_sys,
                CUDA_SUCCESS,
                CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_NONE,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
            ),
        )
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
