//! Tensor maps (driver API 6.30): encode a tiled map of a 2D `f32` tensor
//! (`cuTensorMapEncodeTiled`) and let the tensor memory accelerator (TMA) of a
//! compute capability 9.0+ GPU load one box of it into shared memory, in a
//! kernel written in PTX for this example (`kernels/tma_tile.ptx`). The box is
//! checked element by element: inside the tensor, then straddling its edge
//! (out-of-bounds elements arrive as zeros), then after pointing the map at
//! another tensor (`cuTensorMapReplaceAddress`).
//!
//! `cargo run --example tensor_map`. Exit codes: 0 all checks passed, 1 a
//! call or a check failed (the last line says which), 77 cannot run here
//! (last line starts with `no GPU:`, or `skipped:` below compute capability 9.0).

// Structs are filled field by field: `CUmemLocation::id` moves into an anonymous
// union in CUDA 13.2, and `loc.id = 0` compiles on every release where a struct
// literal does not.
#![allow(clippy::field_reassign_with_default)]

use cuda_mem_sys::*;
use std::ffi::{c_void, CStr};
use std::process::exit;
use std::ptr::null_mut;

const PTX: &str = concat!(include_str!("kernels/tma_tile.ptx"), "\0");

/// The tensor: `W` columns (innermost) by `H` rows of f32, rows packed.
const W: usize = 64;
const H: usize = 32;
/// The box the TMA copies: `BW` columns by `BH` rows (1 KiB).
const BW: usize = 32;
const BH: usize = 8;
const BOX_BYTES: usize = BW * BH * 4;

macro_rules! cu {
    ($f:ident($($arg:expr),* $(,)?)) => {{
        let r = unsafe { $f($($arg),*) };
        if r != CUDA_SUCCESS {
            fail(&format!("{} returned {}", stringify!($f), error_name(r)));
        }
    }};
}

fn error_name(r: CUresult) -> String {
    let mut s = std::ptr::null();
    match unsafe { cuGetErrorName(r, &mut s) } {
        CUDA_SUCCESS => format!(
            "{} ({})",
            unsafe { CStr::from_ptr(s) }.to_string_lossy(),
            r.0
        ),
        _ => r.0.to_string(),
    }
}

fn fail(what: &str) -> ! {
    println!("FAILED: {what}");
    exit(1)
}

/// Element (x, y) of tensor `t`: exact in f32, and different in every tensor.
fn value(t: usize, x: usize, y: usize) -> f32 {
    (t * 100_000 + y * 1000 + x) as f32
}

/// Launches `load_tile` for the box at (`x`, `y`) and returns the box, row by row.
fn load_tile(f: CUfunction, map: &CUtensorMap, out: CUdeviceptr, x: i32, y: i32) -> Vec<f32> {
    let (mut out_arg, mut nbytes, mut c0, mut c1) = (out, BOX_BYTES as u32, x, y);
    let mut params = [
        // The map is a by-value parameter: pass the address of the 128 bytes.
        (map as *const CUtensorMap).cast_mut().cast::<c_void>(),
        (&mut out_arg as *mut CUdeviceptr).cast(),
        (&mut nbytes as *mut u32).cast(),
        (&mut c0 as *mut i32).cast(),
        (&mut c1 as *mut i32).cast(),
    ];
    cu!(cuLaunchKernel(
        f,
        1,
        1,
        1,
        128,
        1,
        1,
        0,
        null_mut(),
        params.as_mut_ptr(),
        null_mut()
    ));
    cu!(cuCtxSynchronize());
    let mut back = vec![0u8; BOX_BYTES + 4];
    cu!(cuMemcpyDtoH(back.as_mut_ptr().cast(), out, back.len()));
    let status = u32::from_le_bytes(back[BOX_BYTES..].try_into().unwrap());
    if status != 1 {
        fail(&format!(
            "the tensor copy did not complete (status {status})"
        ));
    }
    back[..BOX_BYTES]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

/// Checks the box at (`x`, `y`) against tensor `t`, zeros outside it.
fn expect_box(tile: &[f32], t: usize, x: usize, y: usize, what: &str) {
    let mut outside = 0;
    for r in 0..BH {
        for c in 0..BW {
            let (gx, gy) = (x + c, y + r);
            let inside = gx < W && gy < H;
            let want = if inside { value(t, gx, gy) } else { 0.0 };
            outside += usize::from(!inside);
            let got = tile[r * BW + c];
            if got != want {
                fail(&format!(
                    "{what}: box element (row {r}, column {c}) is {got}, expected {want}"
                ));
            }
        }
    }
    println!("{what}: the {BW}x{BH} box at ({x}, {y}) matches the tensor ({outside} elements outside it read as 0)");
}

fn main() {
    let r = unsafe { cuInit(0) };
    if r != CUDA_SUCCESS {
        println!("no GPU: cuInit returned {}; nothing to run", r.0);
        exit(77);
    }
    let mut major = 0;
    cu!(cuDeviceGetAttribute(
        &mut major,
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
        0
    ));
    if major < 9 {
        println!("skipped: tensor maps need compute capability 9.0, device 0 has {major}.x");
        exit(77);
    }
    let mut ctx = null_mut();
    cu!(cuDevicePrimaryCtxRetain(&mut ctx, 0));
    cu!(cuCtxSetCurrent(ctx));
    let mut module = null_mut();
    cu!(cuModuleLoadData(&mut module, PTX.as_ptr().cast()));
    let mut f = null_mut();
    cu!(cuModuleGetFunction(&mut f, module, c"load_tile".as_ptr()));

    // Two tensors on the device (cuMemAlloc's alignment exceeds the map's 16 bytes).
    let mut tensors = [0; 2];
    for (t, dev) in tensors.iter_mut().enumerate() {
        let host: Vec<f32> = (0..W * H).map(|i| value(t, i % W, i / W)).collect();
        cu!(cuMemAlloc(dev, W * H * 4));
        cu!(cuMemcpyHtoD(*dev, host.as_ptr().cast(), W * H * 4));
    }
    let mut out = 0;
    cu!(cuMemAlloc(&mut out, BOX_BYTES + 4));

    // The map: sizes innermost first; strides (bytes) of every dimension but
    // the innermost; a box whose inner extent is a multiple of 16 bytes.
    let dims = [W as u64, H as u64];
    let strides = [(W * 4) as u64];
    let box_dims = [BW as u32, BH as u32];
    let element_strides = [1u32, 1];
    let mut map = CUtensorMap::default();
    cu!(cuTensorMapEncodeTiled(
        &mut map,
        CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        2,
        tensors[0] as *mut c_void,
        dims.as_ptr(),
        strides.as_ptr(),
        box_dims.as_ptr(),
        element_strides.as_ptr(),
        CU_TENSOR_MAP_INTERLEAVE_NONE,
        CU_TENSOR_MAP_SWIZZLE_NONE,
        CU_TENSOR_MAP_L2_PROMOTION_NONE,
        // Out-of-bounds elements are zeros (NAN_REQUEST_ZERO_FMA would give NaNs).
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
    ));
    println!("encoded a tiled map of a {W}x{H} f32 tensor, box {BW}x{BH}");

    let tile = load_tile(f, &map, out, 32, 8);
    expect_box(&tile, 0, 32, 8, "inside the tensor");
    let tile = load_tile(f, &map, out, 48, 28);
    expect_box(&tile, 0, 48, 28, "across the tensor's corner");

    // Same shape, other memory: only the address changes in the map.
    cu!(cuTensorMapReplaceAddress(
        &mut map,
        tensors[1] as *mut c_void
    ));
    let tile = load_tile(f, &map, out, 0, 16);
    expect_box(&tile, 1, 0, 16, "after cuTensorMapReplaceAddress");

    for p in [tensors[0], tensors[1], out] {
        cu!(cuMemFree(p));
    }
    cu!(cuModuleUnload(module));
    cu!(cuDevicePrimaryCtxRelease(0));
    println!("OK: tensor_map, three boxes loaded by the TMA and checked element by element");
}
