//! Tensor Map Object Management (driver API 6.30), proven by the hardware that
//! reads the maps: the bulk tensor copy engine (TMA) of compute capability 9.0+.
//!
//! A tensor map is a 128-byte opaque descriptor, so `CUDA_SUCCESS` from an
//! encode says nothing about it. Every map made here is handed to a kernel that
//! issues `cp.async.bulk.tensor` with it (an mbarrier in shared memory counts
//! the bytes in); the raw shared-memory image the copy engine wrote is copied
//! out byte for byte and compared with the box computed on the CPU:
//! out-of-bounds fill (zeros, or NaN for floats), element strides, swizzle
//! patterns, im2col traversal.
//!
//! Measured on the H200 (driver 580.159, CUDA 13.0), printed by the tests: the
//! NaN out-of-bounds fill is `0x7ff77ff7` for f32 and `0x7ff7` for f16 and
//! bf16; `cuTensorMapEncodeIm2colWide` is not refused on compute capability 9.0.
//!
//! Kernels: hand-written PTX (chosen over CUDA C compiled by nvcc, so that the
//! code that runs is the code in the repository), in `tests/kernels/`,
//! embedded with `include_str!` and JIT-compiled by the driver with
//! `cuModuleLoadDataEx`. `tensor_map_sm90.ptx` holds the tiled and im2col
//! kernels (`.target sm_90`; its header says why not sm_90a);
//! `tensor_map_im2col_w_sm100.ptx` holds the im2col::w kernel, loaded only on
//! devices of compute capability 10.0 or higher.
mod common;

#[cfg(cuda_12080)]
use common::expect_error;
use common::message;
use common::{error_name, Checks, DeviceBuf, Gpu, TestResult};
use core::ffi::c_void;
use core::ptr::{addr_of_mut, null_mut};
use cuda_mem_sys::*;
use libtest_mimic::Failed;

/// The tiled and im2col kernels, NUL-terminated for `cuModuleLoadDataEx`.
const PTX_SM90: &str = concat!(include_str!("kernels/tensor_map_sm90.ptx"), "\0");
/// The im2col::w kernel (compute capability 10.0+), NUL-terminated.
#[cfg(cuda_12080)]
const PTX_SM100: &str = concat!(include_str!("kernels/tensor_map_im2col_w_sm100.ptx"), "\0");

/// Size of the kernels' shared-memory tile; their status block follows it in `out`.
const TILE: usize = 32768;
const OUT_LEN: usize = TILE + 64;

// ---------------------------------------------------------------------------
// Device plumbing
// ---------------------------------------------------------------------------

owned_handle!(
    /// A module JIT-compiled from NUL-terminated PTX; unloaded on drop.
    Module(CUmodule),
    cuModuleUnload
);

impl Module {
    fn load(ptx: &str) -> Result<Module, Failed> {
        let mut log = vec![0u8; 16384];
        let mut options = [CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
        let mut values = [log.as_mut_ptr().cast::<c_void>(), log.len() as *mut c_void];
        let mut module = null_mut();
        let r = unsafe {
            cuModuleLoadDataEx(
                &mut module,
                ptx.as_ptr().cast(),
                2,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        if r != CUDA_SUCCESS {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            return Err(format!(
                "cuModuleLoadDataEx returned {}; JIT error log: {}",
                error_name(r),
                String::from_utf8_lossy(&log[..end])
            )
            .into());
        }
        Ok(Module(module))
    }

    fn function(&self, name: &str) -> Result<CUfunction, Failed> {
        let cname = std::ffi::CString::new(name).unwrap();
        let mut f = null_mut();
        cu!(cuModuleGetFunction(&mut f, self.0, cname.as_ptr()))?;
        Ok(f)
    }
}

/// Where the kernel finds the map.
enum MapArg<'a> {
    /// By value, as the 128-byte `__grid_constant__` kernel parameter.
    Param(&'a CUtensorMap),
    /// A copy in global memory (the `*_gmap` kernels acquire it with
    /// `fence.proxy.tensormap::generic`).
    Global(CUdeviceptr),
}

/// What one kernel launch brought back.
struct Load {
    /// The raw shared-memory image of the box, byte for byte.
    image: Vec<u8>,
    /// The shared-memory address of the tile (its alignment sets the swizzle base).
    smem: u32,
}

/// Launches `f` (one CTA of 128 threads) to load the box at `coords` into
/// shared memory (`nbytes`, the mbarrier's expected transaction count) and copy
/// the tile out.
fn load_box(
    f: CUfunction,
    map: MapArg,
    coords: &[i32],
    offsets: [u32; 2],
    nbytes: usize,
) -> Result<Load, Failed> {
    let fits = nbytes % 16 == 0 && nbytes <= TILE;
    ensure!(fits, "a box of {nbytes} bytes exceeds the kernels' tile");
    let out = DeviceBuf::new(OUT_LEN)?;
    cu!(cuMemsetD8(out.ptr, 0xA5, OUT_LEN))?;
    let mut c = [0i32; 5];
    c[..coords.len()].copy_from_slice(coords);
    let mut o = offsets;
    let mut out_ptr = out.ptr;
    let mut n = nbytes as u32;
    let mut gmap: CUdeviceptr = match map {
        MapArg::Global(p) => p,
        MapArg::Param(_) => 0,
    };
    let map_ptr: *mut c_void = match map {
        MapArg::Param(m) => (m as *const CUtensorMap).cast_mut().cast(),
        MapArg::Global(_) => addr_of_mut!(gmap).cast(),
    };
    // The map, out, nbytes, the five coordinates, the two offsets.
    let out_n = [addr_of_mut!(out_ptr).cast(), addr_of_mut!(n).cast()];
    let mut params: Vec<*mut c_void> = [map_ptr].into_iter().chain(out_n).collect();
    params.extend(c.iter_mut().map(|c| (c as *mut i32).cast::<c_void>()));
    params.extend(o.iter_mut().map(|o| (o as *mut u32).cast::<c_void>()));
    let p = params.as_mut_ptr();
    let r = unsafe { cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, null_mut(), p, null_mut()) };
    common::check(
        r,
        "cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, null_mut(), p, null_mut())",
    )?;
    cu!(cuCtxSynchronize())?;
    let back = out.read()?;
    let word = |at: usize| u32::from_le_bytes(back[at..at + 4].try_into().unwrap());
    let (status, smem, spins) = (word(TILE), word(TILE + 4), word(TILE + 8));
    ensure!(
        status == 1,
        "the bulk tensor copy did not complete {nbytes} bytes on the mbarrier (status {status:#x}, {spins} spins)"
    );
    Ok(Load {
        image: back[..nbytes].to_vec(),
        smem,
    })
}

// ---------------------------------------------------------------------------
// Host-side tensors and the CPU model of the copy engine
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Debug)]
enum Ty {
    F32,
    F16,
    Bf16,
    U8,
}

impl Ty {
    fn size(self) -> usize {
        match self {
            Ty::F32 => 4,
            Ty::F16 | Ty::Bf16 => 2,
            Ty::U8 => 1,
        }
    }

    fn cu(self) -> CUtensorMapDataType {
        match self {
            Ty::F32 => CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            Ty::F16 => CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            Ty::Bf16 => CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            Ty::U8 => CU_TENSOR_MAP_DATA_TYPE_UINT8,
        }
    }

    /// Bits of element `i` of a test tensor: distinct neighbours, never NaN,
    /// infinite or subnormal (nothing a copy could canonicalise).
    fn pattern(self, i: usize, seed: usize) -> u32 {
        let k = i + seed * 7919;
        match self {
            Ty::F32 => (k as f32 * 0.5 + 1.0).to_bits(),
            Ty::F16 => ((((k / 30) % 2) << 15) | ((1 + k % 30) << 10) | ((k * 37) % 1024)) as u32,
            Ty::Bf16 => ((((k / 200) % 2) << 15) | ((1 + k % 200) << 7) | ((k * 13) % 128)) as u32,
            Ty::U8 => ((k * 131 + 17) % 256) as u32,
        }
    }

    fn is_nan(self, bits: u32) -> bool {
        match self {
            Ty::F32 => f32::from_bits(bits).is_nan(),
            Ty::F16 => bits & 0x7C00 == 0x7C00 && bits & 0x03FF != 0,
            Ty::Bf16 => bits & 0x7F80 == 0x7F80 && bits & 0x007F != 0,
            Ty::U8 => false,
        }
    }
}

fn bits_of(bytes: &[u8]) -> u32 {
    let mut b = [0u8; 4];
    b[..bytes.len()].copy_from_slice(bytes);
    u32::from_le_bytes(b)
}

/// A tensor in device memory and its host image.
struct Tensor {
    ty: Ty,
    /// Elements per dimension, innermost first.
    dims: Vec<u64>,
    /// Bytes between consecutive indices of dimensions 1.. (rank - 1 entries).
    strides: Vec<u64>,
    host: Vec<u8>,
    dev: DeviceBuf,
}

impl Tensor {
    fn new(ty: Ty, dims: &[u64], strides: &[u64], seed: usize) -> Result<Tensor, Failed> {
        assert_eq!(strides.len() + 1, dims.len());
        let esz = ty.size();
        let bytes = match strides.last() {
            Some(&s) => (s * dims[dims.len() - 1]) as usize,
            None => dims[0] as usize * esz,
        };
        let mut host = vec![0u8; bytes];
        for (i, e) in host.chunks_exact_mut(esz).enumerate() {
            e.copy_from_slice(&ty.pattern(i, seed).to_le_bytes()[..esz]);
        }
        let dev = DeviceBuf::with(&host)?;
        Ok(Tensor {
            ty,
            dims: dims.to_vec(),
            strides: strides.to_vec(),
            host,
            dev,
        })
    }

    fn rank(&self) -> u32 {
        self.dims.len() as u32
    }

    fn addr(&self) -> *mut c_void {
        self.dev.ptr as *mut c_void
    }

    /// Byte offset of the element at `x`, or `None` outside the tensor.
    fn offset(&self, x: &[i64]) -> Option<usize> {
        let strides = std::iter::once(self.ty.size() as u64).chain(self.strides.iter().copied());
        let mut off = 0i64;
        for ((&xi, &dim), stride) in x.iter().zip(&self.dims).zip(strides) {
            if xi < 0 || xi >= dim as i64 {
                return None;
            }
            off += xi * stride as i64;
        }
        Some(off as usize)
    }

    /// The element at `x` into `dst`; `false` (and `dst` untouched) outside the tensor.
    fn fetch(&self, x: &[i64], dst: &mut [u8]) -> bool {
        match self.offset(x) {
            Some(off) => {
                dst.copy_from_slice(&self.host[off..off + dst.len()]);
                true
            }
            None => false,
        }
    }
}

/// A box as the copy engine should write it to shared memory, without swizzle:
/// innermost dimension first, densely packed, `oob[e]` where element `e` fell
/// outside the tensor (its bytes left 0).
struct Expected {
    image: Vec<u8>,
    oob: Vec<bool>,
}

impl Expected {
    fn oob_count(&self) -> usize {
        self.oob.iter().filter(|&&o| o).count()
    }
}

/// Tiled mode: `ceil(box[i] / elementStrides[i])` elements along dimension i,
/// at `coords[i] + j * elementStrides[i]` (dimension 0 is always traversed with
/// stride 1 here).
fn tiled_box(t: &Tensor, boxd: &[u32], estr: &[u32], coords: &[i32]) -> Expected {
    let rank = t.dims.len();
    let esz = t.ty.size();
    let counts: Vec<usize> = (0..rank)
        .map(|i| boxd[i].div_ceil(estr[i]) as usize)
        .collect();
    let total: usize = counts.iter().product();
    let mut image = vec![0u8; total * esz];
    let mut oob = vec![false; total];
    let mut x = vec![0i64; rank];
    for e in 0..total {
        let mut rem = e;
        for i in 0..rank {
            x[i] = coords[i] as i64 + (rem % counts[i]) as i64 * estr[i] as i64;
            rem /= counts[i];
        }
        oob[e] = !t.fetch(&x, &mut image[e * esz..(e + 1) * esz]);
    }
    Expected { image, oob }
}

/// The swizzle pattern of the copy engine, on a tile that starts at a
/// 1024-byte boundary: 16-byte chunk `c` (address bits 4..6) of each 128-byte
/// line `l` (bits 7..9) moves to chunk `c ^ (l & mask)`, mask 1 / 3 / 7 for the
/// 32 / 64 / 128-byte modes (the pattern repeats every 256 / 512 / 1024 bytes).
fn swizzle(dense: &[u8], span: usize) -> Vec<u8> {
    let mask = match span {
        0 => 0,
        32 => 1,
        64 => 3,
        128 => 7,
        _ => panic!("no {span}-byte swizzle"),
    };
    assert_eq!(dense.len() % 16, 0);
    let mut out = vec![0u8; dense.len()];
    for o in (0..dense.len()).step_by(16) {
        let p = o ^ (((o >> 7) & mask) << 4);
        out[p..p + 16].copy_from_slice(&dense[o..o + 16]);
    }
    out
}

/// Compares a device image with the CPU's, element by element: in-bounds
/// elements exactly; out-of-bounds ones zero (`nan_fill` false) or one and the
/// same NaN (`nan_fill` true), whose bits it returns.
fn check_elements(
    what: &str,
    ty: Ty,
    got: &[u8],
    want: &Expected,
    nan_fill: bool,
) -> Result<Option<u32>, String> {
    let esz = ty.size();
    let (n, expected) = (got.len(), want.image.len());
    if n != expected {
        return Err(format!("{what}: {n} bytes back, {expected} expected"));
    }
    let mut nan_bits = None;
    let mut bad = Vec::new();
    for (e, &out) in want.oob.iter().enumerate() {
        let g = bits_of(&got[e * esz..(e + 1) * esz]);
        let w = bits_of(&want.image[e * esz..(e + 1) * esz]);
        let ok = if !out {
            g == w
        } else if nan_fill {
            let first = *nan_bits.get_or_insert(g);
            ty.is_nan(g) && g == first
        } else {
            g == 0
        };
        if !ok {
            let (oob, w) = (if out { " (OOB)" } else { "" }, format!("{w:#x}"));
            let w = if out && nan_fill { "NaN" } else { &w };
            bad.push(format!("#{e}{oob}: {g:#x} (expected {w})"));
        }
    }
    if bad.is_empty() {
        Ok(nan_bits)
    } else {
        Err(format!(
            "{what}: {} of {} elements differ; first: {}",
            bad.len(),
            want.oob.len(),
            bad[..bad.len().min(8)].join(", ")
        ))
    }
}

/// For a failed swizzle check: where each 16-byte chunk of the device image
/// came from in the unswizzled box (the data make chunks unique).
fn chunk_map(got: &[u8], dense: &[u8]) -> String {
    let chunks: Vec<&[u8]> = dense.chunks(16).collect();
    got.chunks(16)
        .take(24)
        .enumerate()
        .map(|(p, c)| match chunks.iter().position(|d| *d == c) {
            Some(q) => format!("{p}<-{q}"),
            None => format!("{p}<-?"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// No swizzle, no L2 promotion, zero fill: the plain map's options.
const SW_NONE: CUtensorMapSwizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
const L2_NONE: CUtensorMapL2promotion = CU_TENSOR_MAP_L2_PROMOTION_NONE;
const FILL_NONE: CUtensorMapFloatOOBfill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;

fn encode_tiled(
    t: &Tensor,
    boxd: &[u32],
    estr: &[u32],
    swizzle: CUtensorMapSwizzle,
    l2: CUtensorMapL2promotion,
    fill: CUtensorMapFloatOOBfill,
) -> Result<CUtensorMap, Failed> {
    let mut map = CUtensorMap::default();
    cu!(cuTensorMapEncodeTiled(
        &mut map,
        t.ty.cu(),
        t.rank(),
        t.addr(),
        t.dims.as_ptr(),
        t.strides.as_ptr(),
        boxd.as_ptr(),
        estr.as_ptr(),
        CU_TENSOR_MAP_INTERLEAVE_NONE,
        swizzle,
        l2,
        fill
    ))?;
    Ok(map)
}

fn tile_kernel(m: &Module, rank: u32) -> Result<CUfunction, Failed> {
    m.function(&format!("tma_tile_{rank}d"))
}

/// Loads the box at `coords` with `f` and compares it with `want`
/// ([`check_elements`]): the NaN fill's bits, or what went wrong.
#[allow(clippy::too_many_arguments)]
fn load_checked(
    what: &str,
    f: CUfunction,
    map: MapArg,
    coords: &[i32],
    offsets: [u32; 2],
    ty: Ty,
    want: &Expected,
    nan_fill: bool,
) -> Result<Option<u32>, String> {
    let load = load_box(f, map, coords, offsets, want.image.len())
        .map_err(|e| format!("{what}: {}", message(e)))?;
    check_elements(what, ty, &load.image, want, nan_fill)
}

// ---------------------------------------------------------------------------
// Tiled mode
// ---------------------------------------------------------------------------

/// A tiled case: type, dims, strides, box, element strides, the coords of each box.
struct Tc(
    Ty,
    &'static [u64],
    &'static [u64],
    &'static [u32],
    &'static [u32],
    &'static [&'static [i32]],
);

/// Loads every box of every case with one map per case, comparing each with
/// the CPU; returns the failures and prints what it saw.
fn run_tiled_cases(
    m: &Module,
    cases: &[Tc],
    fill: CUtensorMapFloatOOBfill,
    seed: usize,
) -> Result<Checks, Failed> {
    let nan_fill = fill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
    let mut failures = Checks::new();
    for &Tc(ty, dims, strides, boxd, estr, all_coords) in cases {
        let t = Tensor::new(ty, dims, strides, seed)?;
        let map = encode_tiled(&t, boxd, estr, SW_NONE, L2_NONE, fill)?;
        let f = tile_kernel(m, t.rank())?;
        for &coords in all_coords {
            let want = tiled_box(&t, boxd, estr, coords);
            let rank = t.rank();
            let what = format!(
                "rank {rank} {ty:?} dims {dims:?} box {boxd:?} elementStrides {estr:?} at {coords:?}"
            );
            let map = MapArg::Param(&map);
            match load_checked(&what, f, map, coords, [0, 0], ty, &want, nan_fill) {
                Err(e) => failures.fail(e),
                Ok(nan) => {
                    println!(
                        "  {what}: {} bytes match, {} elements out of bounds{}",
                        want.image.len(),
                        want.oob_count(),
                        nan.map(|b| format!(" (filled with NaN {b:#x})"))
                            .unwrap_or_default()
                    );
                    if nan_fill && nan.is_none() {
                        failures.fail(format!(
                            "{what}: no element out of bounds, the NaN fill was not exercised"
                        ));
                    }
                }
            }
        }
    }
    Ok(failures)
}

/// Ranks 1-5, f32 / f16 / bf16 / u8, padded row pitches, boxes partly outside
/// the tensor on either side (zero fill), element strides 2 and 3.
fn tiled_ranks_types_zero_fill() -> TestResult {
    // `CU_TENSOR_MAP_NUM_QWORDS` 16 and `alignas(64)` through 12.9, 128 from 13.0.
    let want_align = if cfg!(cuda_13000) { 128 } else { 64 };
    ensure!(
        size_of::<CUtensorMap>() == 128 && align_of::<CUtensorMap>() == want_align,
        "CUtensorMap is {} bytes aligned to {}, CUDA {} says 128 and {want_align}",
        size_of::<CUtensorMap>(),
        align_of::<CUtensorMap>(),
        cuda_mem_sys::CUDA_VERSION
    );
    let _gpu = Gpu::new(0)?;
    let m = Module::load(PTX_SM90)?;
    #[rustfmt::skip]
    let cases = [
        Tc(Ty::F32, &[1000], &[], &[64], &[1], &[&[0], &[480], &[960], &[-32]]),
        Tc(Ty::F16, &[100, 37], &[208], &[32, 16], &[1, 1], &[&[0, 0], &[80, 30], &[-8, -5]]),
        Tc(Ty::Bf16, &[100, 37], &[224], &[32, 12], &[1, 3], &[&[16, 2], &[88, 30], &[-16, -4]]),
        Tc(Ty::U8, &[64, 20, 7], &[80, 1632], &[32, 8, 6], &[1, 2, 3], &[&[0, 0, 0], &[48, -3, 5], &[16, 14, 1]]),
        Tc(Ty::F16, &[24, 6, 5, 3], &[48, 288, 1440], &[16, 4, 3, 2], &[1, 1, 2, 1], &[&[0, 0, 0, 0], &[16, 4, 3, 2]]),
        Tc(Ty::F32, &[12, 5, 4, 3, 2], &[48, 256, 1024, 3072], &[8, 4, 4, 2, 2], &[1, 1, 2, 1, 1], &[&[0, 0, 0, 0, 0], &[8, 2, -1, 1, 1]]),
        Tc(Ty::U8, &[200, 3, 2, 2, 3], &[208, 624, 1248, 2496], &[64, 2, 2, 2, 2], &[1, 1, 1, 1, 1], &[&[160, 2, 1, -1, 2]]),
    ];
    run_tiled_cases(&m, &cases, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE, 1)?.finish()
}

/// `CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA`: out-of-bounds elements
/// of f32, f16 and bf16 boxes come back as NaN, in-bounds ones unchanged.
fn tiled_nan_oob_fill() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let m = Module::load(PTX_SM90)?;
    #[rustfmt::skip]
    let cases = [
        Tc(Ty::F32, &[40, 10], &[160], &[16, 8], &[1, 1], &[&[32, 6], &[-4, -2]]),
        Tc(Ty::F16, &[100, 37], &[208], &[32, 16], &[1, 1], &[&[80, 30]]),
        Tc(Ty::Bf16, &[100, 37], &[208], &[32, 16], &[1, 2], &[&[-8, 28]]),
        Tc(Ty::F32, &[12, 5, 4], &[48, 240], &[8, 4, 2], &[1, 1, 1], &[&[8, 3, 3]]),
    ];
    let nan = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
    run_tiled_cases(&m, &cases, nan, 2)?.finish()
}

/// Every swizzle mode of Hopper (none, 32B, 64B, 128B): the raw shared-memory
/// image, byte for byte, equals the CPU's box put through the CPU model of the
/// swizzle pattern (and, for the swizzled modes, differs from the plain box).
fn tiled_swizzle_modes() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let m = Module::load(PTX_SM90)?;
    let f = tile_kernel(&m, 2)?;
    // (type, dims, row pitch, box, coords, swizzle, the swizzle span in bytes (0: none))
    #[rustfmt::skip]
    let cases = [
        (Ty::F32, [64, 64], 256, [32, 16], [32, 8], CU_TENSOR_MAP_SWIZZLE_NONE, 0),
        (Ty::F32, [64, 64], 256, [8, 32], [8, 16], CU_TENSOR_MAP_SWIZZLE_32B, 32),
        (Ty::F16, [128, 64], 256, [32, 32], [32, 8], CU_TENSOR_MAP_SWIZZLE_64B, 64),
        (Ty::F32, [64, 64], 256, [32, 16], [0, 40], CU_TENSOR_MAP_SWIZZLE_128B, 128),
        (Ty::U8, [256, 64], 256, [128, 16], [128, 8], CU_TENSOR_MAP_SWIZZLE_128B, 128),
        (Ty::F32, [64, 64], 256, [32, 16], [48, 56], CU_TENSOR_MAP_SWIZZLE_128B, 128),
        (Ty::Bf16, [100, 40], 208, [16, 64], [-8, 8], CU_TENSOR_MAP_SWIZZLE_32B, 32),
    ];
    let mut failures = Checks::new();
    for (i, (ty, dims, pitch, boxd, coords, sw, span)) in cases.into_iter().enumerate() {
        let t = Tensor::new(ty, &dims, &[pitch], 3 + i)?;
        let map = encode_tiled(&t, &boxd, &[1, 1], sw, L2_NONE, FILL_NONE)?;
        let dense = tiled_box(&t, &boxd, &[1, 1], &coords);
        let want = swizzle(&dense.image, span);
        let what = format!(
            "{span}B swizzle ({}), {ty:?} box {boxd:?} at {coords:?}",
            sw.0
        );
        if span != 0 && want == dense.image {
            failures.fail(format!(
                "{what}: the swizzle model leaves this box unchanged, the case proves nothing"
            ));
            continue;
        }
        match load_box(f, MapArg::Param(&map), &coords, [0, 0], want.len()) {
            Err(e) => failures.fail(format!("{what}: {}", message(e))),
            Ok(load) if load.smem % 1024 != 0 => failures.fail(format!(
                "{what}: tile at shared address {:#x}, not 1024-byte aligned",
                load.smem
            )),
            Ok(load) if load.image != want => {
                let differ = load.image.iter().zip(&want).filter(|(a, b)| a != b).count();
                failures.fail(format!(
                    "{what}: {differ} of {} bytes differ from the model; chunks (device <- unswizzled box): {}",
                    want.len(),
                    chunk_map(&load.image, &dense.image)
                ));
            }
            Ok(_) => println!(
                "  {what}: {} raw bytes match the model ({} elements out of bounds, zero)",
                want.len(),
                dense.oob_count()
            ),
        }
    }
    failures.finish()
}

/// All four L2 promotion values encode, and a map with each loads the right box.
fn tiled_l2_promotion_values() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let m = Module::load(PTX_SM90)?;
    let f = tile_kernel(&m, 2)?;
    let t = Tensor::new(Ty::F32, &[64, 48], &[256], 9)?;
    let (boxd, estr, coords) = ([32u32, 16u32], [1u32, 1u32], [48i32, 40i32]);
    let want = tiled_box(&t, &boxd, &estr, &coords);
    let mut failures = Checks::new();
    for (name, l2) in [
        ("NONE", CU_TENSOR_MAP_L2_PROMOTION_NONE),
        ("L2_64B", CU_TENSOR_MAP_L2_PROMOTION_L2_64B),
        ("L2_128B", CU_TENSOR_MAP_L2_PROMOTION_L2_128B),
        ("L2_256B", CU_TENSOR_MAP_L2_PROMOTION_L2_256B),
    ] {
        let what = format!("L2 promotion {name}");
        let map = encode_tiled(&t, &boxd, &estr, SW_NONE, l2, FILL_NONE)?;
        let map = MapArg::Param(&map);
        match load_checked(&what, f, map, &coords, [0, 0], Ty::F32, &want, false) {
            Err(e) => failures.fail(e),
            Ok(_) => println!("  {what}: box of {} bytes matches", want.image.len()),
        }
    }
    failures.finish()
}

/// `cuTensorMapReplaceAddress`: the same map, pointed at a second buffer, loads
/// the second buffer's data (and back). Both as a kernel parameter and as a
/// copy in global memory read after `fence.proxy.tensormap::generic.acquire`.
fn replace_address() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let m = Module::load(PTX_SM90)?;
    let f_param = tile_kernel(&m, 2)?;
    let f_global = m.function("tma_tile_2d_gmap")?;
    let dims = [48u64, 40];
    let a = Tensor::new(Ty::F16, &dims, &[112], 11)?;
    let b = Tensor::new(Ty::F16, &dims, &[112], 12)?;
    let (boxd, estr, coords) = ([32u32, 8u32], [1u32, 1u32], [32i32, 36i32]);
    let want_a = tiled_box(&a, &boxd, &estr, &coords);
    let want_b = tiled_box(&b, &boxd, &estr, &coords);
    let differ = want_a.image != want_b.image;
    ensure!(differ, "the two buffers' boxes are the same");
    let mut map = encode_tiled(&a, &boxd, &estr, SW_NONE, L2_NONE, FILL_NONE)?;
    let gmap = DeviceBuf::new(size_of::<CUtensorMap>())?;
    let at = gmap.ptr;
    ensure!(at % 128 == 0, "cuMemAlloc gave {at:#x}: not 128-aligned");
    let map_bytes = |map: &CUtensorMap| unsafe {
        core::slice::from_raw_parts(
            (map as *const CUtensorMap).cast::<u8>(),
            size_of::<CUtensorMap>(),
        )
        .to_vec()
    };
    let mut failures = Checks::new();
    let mut step = |what: &str, map: &CUtensorMap, want: &Expected| -> TestResult {
        gmap.write(&map_bytes(map))?;
        for (how, arg, f) in [
            ("parameter", MapArg::Param(map), f_param),
            ("global memory", MapArg::Global(gmap.ptr), f_global),
        ] {
            let what = format!("{what}, map as {how}");
            match load_checked(&what, f, arg, &coords, [0, 0], Ty::F16, want, false) {
                Err(e) => failures.fail(e),
                Ok(_) => println!("  {what}: box matches"),
            }
        }
        Ok(())
    };
    step("encoded on buffer A", &map, &want_a)?;
    cu!(cuTensorMapReplaceAddress(&mut map, b.addr()))?;
    step("address replaced by buffer B", &map, &want_b)?;
    cu!(cuTensorMapReplaceAddress(&mut map, a.addr()))?;
    step("address replaced back by buffer A", &map, &want_a)?;
    failures.finish()
}

// ---------------------------------------------------------------------------
// im2col mode
// ---------------------------------------------------------------------------

/// im2col parameters of a rank-4 (NHWC) map; index 0 is W, 1 is H (the driver's
/// dimension order, innermost first).
struct Im2col {
    lower: [i32; 2],
    upper: [i32; 2],
    channels: u32,
    pixels: u32,
}

/// Reading choices of the im2col model, all `false` in the model the test
/// asserts; the others only name, after a mismatch, which reading the hardware
/// followed.
#[derive(Clone, Copy, Debug, Default)]
struct Reading {
    /// Corner arrays in H, W order.
    corners_hw: bool,
    /// Instruction offsets in H, W order.
    offsets_hw: bool,
    /// Upper corner inclusive (box one pixel larger in W and H).
    inclusive: bool,
}

/// CPU im2col of an NHWC tensor (dims C, W, H, N): the bounding box of each
/// image spans `[lower, dim + upper)` in W and H; starting at the filter base
/// `(w, h, n)` of `coords` (C, W, H, N) it walks `pixels` pixels through the
/// boxes in W, then H, then N order, and for each reads `channels` channels from
/// `coords[0]` at the pixel moved by the im2col offsets (W, H).
fn im2col_box(t: &Tensor, p: &Im2col, coords: [i32; 4], offsets: [i32; 2], r: Reading) -> Expected {
    let esz = t.ty.size();
    let swap = |a: [i32; 2], yes: bool| if yes { [a[1], a[0]] } else { a };
    let (lower, upper) = (swap(p.lower, r.corners_hw), swap(p.upper, r.corners_hw));
    let off = swap(offsets, r.offsets_hw);
    let extra = r.inclusive as i64;
    let bw = t.dims[1] as i64 + upper[0] as i64 - lower[0] as i64 + extra;
    let bh = t.dims[2] as i64 + upper[1] as i64 - lower[1] as i64 + extra;
    let start = (coords[3] as i64 * bh + (coords[2] - lower[1]) as i64) * bw
        + (coords[1] - lower[0]) as i64;
    let total = (p.pixels * p.channels) as usize;
    let mut image = vec![0u8; total * esz];
    let mut oob = vec![false; total];
    for px in 0..p.pixels as i64 {
        let idx = start + px;
        let n = idx / (bw * bh);
        let h = lower[1] as i64 + (idx / bw) % bh;
        let w = lower[0] as i64 + idx % bw;
        for k in 0..p.channels as i64 {
            let e = (px * p.channels as i64 + k) as usize;
            let x = [
                coords[0] as i64 + k,
                w + off[0] as i64,
                h + off[1] as i64,
                n,
            ];
            oob[e] = !t.fetch(&x, &mut image[e * esz..(e + 1) * esz]);
        }
    }
    Expected { image, oob }
}

/// `cuTensorMapEncodeIm2col` on a small NHWC tensor with lower and upper
/// bounding-box corners (a padded convolution's windows), loaded by
/// `cp.async.bulk.tensor.4d...im2col` with im2col offsets, across an image
/// boundary and partly out of bounds; compared with a CPU im2col.
fn im2col_nhwc() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let m = Module::load(PTX_SM90)?;
    let f = m.function("tma_im2col_4d")?;
    // N = 2 images of H = 4 x W = 5 pixels, C = 12 f32 channels.
    let t = Tensor::new(Ty::F32, &[12, 5, 4, 2], &[48, 240, 960], 21)?;
    // Boxes W in [-1, 4), H in [-2, 4): 5 x 6 filter bases per image.
    let p = Im2col {
        lower: [-1, -2],
        upper: [-1, 0],
        channels: 8,
        pixels: 40,
    };
    let estr = [1u32; 4];
    let mut failures = Checks::new();
    let nan = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
    // (fill, the (coords (C, W, H, N), im2col offsets (W, H)) of each load)
    #[rustfmt::skip]
    let cases = [
        (FILL_NONE, &[([4, 2, -1, 0], [0, 0]), ([4, 2, -1, 0], [2, 1]), ([0, -1, -2, 0], [1, 2])][..]),
        (nan, &[([8, 3, 0, 0], [1, 0])][..]),
    ];
    for (fill, loads) in cases {
        let nan_fill = fill == nan;
        let mut map = CUtensorMap::default();
        cu!(cuTensorMapEncodeIm2col(
            &mut map,
            t.ty.cu(),
            4,
            t.addr(),
            t.dims.as_ptr(),
            t.strides.as_ptr(),
            p.lower.as_ptr(),
            p.upper.as_ptr(),
            p.channels,
            p.pixels,
            estr.as_ptr(),
            CU_TENSOR_MAP_INTERLEAVE_NONE,
            SW_NONE,
            L2_NONE,
            fill
        ))?;
        for &(coords, offsets) in loads {
            let want = im2col_box(&t, &p, coords, offsets, Reading::default());
            let what = format!(
                "im2col at (C, W, H, N) {coords:?} offsets (W, H) {offsets:?}{}",
                if nan_fill { ", NaN fill" } else { "" }
            );
            match load_box(
                f,
                MapArg::Param(&map),
                &coords,
                offsets.map(|o| o as u32),
                want.image.len(),
            ) {
                Err(e) => failures.fail(format!("{what}: {}", message(e))),
                Ok(load) => match check_elements(&what, Ty::F32, &load.image, &want, nan_fill) {
                    Ok(nan) => println!(
                        "  {what}: {} pixels x {} channels match, {} elements out of bounds{}",
                        p.pixels,
                        p.channels,
                        want.oob_count(),
                        nan.map(|b| format!(" (NaN {b:#x})")).unwrap_or_default()
                    ),
                    Err(e) => {
                        let mut matching = Vec::new();
                        for bits in 0..8u8 {
                            let r = Reading {
                                corners_hw: bits & 1 != 0,
                                offsets_hw: bits & 2 != 0,
                                inclusive: bits & 4 != 0,
                            };
                            let alt = im2col_box(&t, &p, coords, offsets, r);
                            if !nan_fill && alt.image == load.image {
                                matching.push(format!("{r:?}"));
                            }
                        }
                        failures.fail(format!(
                            "{e}; readings of the model that match the device: [{}]",
                            matching.join("; ")
                        ));
                    }
                },
            }
        }
    }
    failures.finish()
}

/// `cuTensorMapEncodeIm2colWide`, documented for compute capability 10.0 or
/// higher. On 10.x devices an `im2col::w` load of a padded row is compared with
/// the CPU. Below 10.0 no instruction reads such a map, so the full check cannot
/// run; there the test asserts what the driver returns: measured on the H200
/// (9.0, driver 580.159, CUDA 13.0), the encode is *not* refused
/// (`CUDA_SUCCESS`, no error to assert), and it prints whether the map was
/// written and what two invalid calls return (no swizzle, which the same
/// driver also accepts below 10.0, and rank 2). On 10.x those two must return
/// `CUDA_ERROR_INVALID_VALUE`.
#[cfg(cuda_12080)]
fn im2col_wide() -> TestResult {
    let gpu = Gpu::new(0)?;
    let major = gpu.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = gpu.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    // N = 2, H = 3, W = 8, C = 16 f32 channels (64 bytes: the 64B swizzle span).
    let t = Tensor::new(Ty::F32, &[16, 8, 3, 2], &[64, 512, 1536], 31)?;
    let (lower_w, upper_w, channels, pixels) = (-1, 0, 16u32, 9u32);
    let estr = [1u32; 4];
    let wide = |map: &mut CUtensorMap, rank: u32, swizzle: CUtensorMapSwizzle| unsafe {
        cuTensorMapEncodeIm2colWide(
            map,
            t.ty.cu(),
            rank,
            t.addr(),
            t.dims.as_ptr(),
            t.strides.as_ptr(),
            lower_w,
            upper_w,
            channels,
            pixels,
            estr.as_ptr(),
            CU_TENSOR_MAP_INTERLEAVE_NONE,
            CU_TENSOR_MAP_IM2COL_WIDE_MODE_W,
            swizzle,
            CU_TENSOR_MAP_L2_PROMOTION_NONE,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    // Two calls the reference rules out: no swizzle (the wide modes take 64B,
    // 128B or 128B_ATOM_32B only) and rank 2 (3 to 5).
    let invalid = [
        ("without swizzle", 4, CU_TENSOR_MAP_SWIZZLE_NONE),
        ("of rank 2", 2, CU_TENSOR_MAP_SWIZZLE_64B),
    ];
    // The map starts filled with 0xA5 bytes, to see whether an encode wrote it.
    let filled = || CUtensorMap {
        opaque: [0xA5A5_A5A5_A5A5_A5A5; 16],
    };
    let mut map = filled();
    let r = wide(&mut map, 4, CU_TENSOR_MAP_SWIZZLE_64B);
    if major < 10 {
        println!(
            "  cuTensorMapEncodeIm2colWide (valid parameters) on compute capability {major}.{minor} \
             returned {} and {} the map; the full check (an im2col::w load compared with the CPU) \
             needs compute capability 10.0",
            error_name(r),
            if map.opaque == filled().opaque { "did not write" } else { "wrote" }
        );
        // Measured on the H200 (driver 580.159, CUDA 13.0): not refused.
        let what = "cuTensorMapEncodeIm2colWide below compute capability 10.0";
        expect_error(r, CUDA_SUCCESS, what)?;
        // Recorded, not asserted: below 10.0 the documented parameter checks
        // need not all run (measured on driver 580.159: no swizzle is accepted,
        // rank 2 returns CUDA_ERROR_INVALID_VALUE).
        for (what, rank, swizzle) in invalid {
            let mut scratch = filled();
            let r = wide(&mut scratch, rank, swizzle);
            let code = error_name(r);
            println!("  cuTensorMapEncodeIm2colWide {what} on {major}.{minor}: {code}");
            common::report_bad_input(
                None,
                &format!(
                    "cuTensorMapEncodeIm2colWide {what} [recorded: compute capability \
                     {major}.{minor}, below 10.0, is not asserted]"
                ),
                &error_name(CUDA_ERROR_INVALID_VALUE),
                &error_name(r),
            );
        }
        // The process keeps working: a tiled map on the same tensor encodes.
        encode_tiled(&t, &[16, 4, 2, 1], &estr, SW_NONE, L2_NONE, FILL_NONE)?;
        return Ok(());
    }
    for (what, rank, swizzle) in invalid {
        let mut scratch = filled();
        let r = wide(&mut scratch, rank, swizzle);
        let what = format!("cuTensorMapEncodeIm2colWide {what}");
        expect_error(r, CUDA_ERROR_INVALID_VALUE, &what)?;
    }
    common::check(r, "cuTensorMapEncodeIm2colWide")?;
    let m = Module::load(PTX_SM100)?;
    let f = m.function("tma_im2col_w_4d")?;
    // Row h = 1 of image n = 1, from the padding column w = -1 to w = 7.
    let coords = [0, -1, 1, 1];
    let esz = t.ty.size();
    let mut dense = vec![0u8; (pixels * channels) as usize * esz];
    let mut oob = 0;
    for px in 0..pixels as i64 {
        for k in 0..channels as i64 {
            let e = (px * channels as i64 + k) as usize;
            let x = [k, coords[1] as i64 + px, coords[2] as i64, coords[3] as i64];
            if !t.fetch(&x, &mut dense[e * esz..(e + 1) * esz]) {
                oob += 1;
            }
        }
    }
    let want = swizzle(&dense, 64);
    let load = load_box(f, MapArg::Param(&map), &coords, [0, 0], want.len())?;
    ensure!(
        load.image == want,
        "im2col::w row differs from the CPU ({} of {} bytes); chunks (device <- unswizzled): {}",
        load.image.iter().zip(&want).filter(|(a, b)| a != b).count(),
        want.len(),
        chunk_map(&load.image, &dense)
    );
    println!("  im2col::w on {major}.{minor}: {pixels} pixels x {channels} channels match ({oob} out of bounds)");
    Ok(())
}

// ---------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------

/// Invalid encodes return the documented `CUDA_ERROR_INVALID_VALUE`, and after
/// each one a valid encode still succeeds; at the end a map made after all of
/// them still loads the right box.
fn bad_input_documented_errors() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let m = Module::load(PTX_SM90)?;
    let t = Tensor::new(Ty::F32, &[64, 32], &[256], 41)?;
    let base = t.dev.ptr;
    let im = Tensor::new(Ty::F32, &[12, 5, 4, 2], &[48, 240, 960], 42)?;
    let z = CU_TENSOR_MAP_INTERLEAVE_NONE;
    let (sw_none, l2, fill0) = (SW_NONE, L2_NONE, FILL_NONE);
    /// One `cuTensorMapEncodeTiled`'s arguments: the valid 2D map on `t`,
    /// which each bad case changes in one parameter.
    struct Args {
        ty: CUtensorMapDataType,
        rank: u32,
        addr: CUdeviceptr,
        dims: Vec<u64>,
        strides: Vec<u64>,
        boxd: Vec<u32>,
        estr: Vec<u32>,
        sw: CUtensorMapSwizzle,
        fill: CUtensorMapFloatOOBfill,
    }
    let tiled = |change: &dyn Fn(&mut Args)| {
        let mut a = Args {
            ty: CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            rank: 2,
            addr: base,
            dims: vec![64, 32],
            strides: vec![256],
            boxd: vec![32, 8],
            estr: vec![1, 1],
            sw: sw_none,
            fill: fill0,
        };
        change(&mut a);
        let mut map = CUtensorMap::default();
        unsafe {
            cuTensorMapEncodeTiled(
                &mut map,
                a.ty,
                a.rank,
                a.addr as *mut c_void,
                a.dims.as_ptr(),
                a.strides.as_ptr(),
                a.boxd.as_ptr(),
                a.estr.as_ptr(),
                z,
                a.sw,
                l2,
                a.fill,
            )
        }
    };
    let f32t = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    let good = || tiled(&|_| {});
    // im2col on `im` (NHWC, rank 4, padded to the 6-entry arrays other
    // ranks read); corners -1.
    let im2col = |rank: u32, channels: u32, pixels: u32| {
        let mut map = CUtensorMap::default();
        let dims = [12u64, 5, 4, 2, 1, 1];
        let strides = [48u64, 240, 960, 1920, 1920];
        let corner = [-1i32; 4];
        unsafe {
            cuTensorMapEncodeIm2col(
                &mut map,
                f32t,
                rank,
                im.addr(),
                dims.as_ptr(),
                strides.as_ptr(),
                corner.as_ptr(),
                corner.as_ptr(),
                channels,
                pixels,
                [1u32; 6].as_ptr(),
                z,
                sw_none,
                l2,
                fill0,
            )
        }
    };
    // The valid forms that each bad case changes in one parameter.
    common::check(good(), "the valid tiled encode")?;
    common::check(im2col(4, 8, 16), "the valid im2col encode")?;
    let mut replace_target = encode_tiled(&t, &[32, 8], &[1, 1], sw_none, l2, fill0)?;
    let six = |rank| {
        move |a: &mut Args| {
            a.rank = rank;
            a.dims = vec![64, 32, 1, 1, 1, 1];
            a.strides = vec![256, 8192, 8192, 8192, 8192];
            a.boxd = vec![32, 8, 1, 1, 1, 1];
            a.estr = vec![1; 6];
        }
    };
    let swizzle = |sw, inner| move |a: &mut Args| (a.sw, a.boxd[0]) = (sw, inner);
    let nan_u8 = |a: &mut Args| {
        (a.ty, a.dims[0]) = (CU_TENSOR_MAP_DATA_TYPE_UINT8, 256);
        a.fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
    };
    let replaced =
        unsafe { cuTensorMapReplaceAddress(&mut replace_target, (base + 8) as *mut c_void) };
    #[rustfmt::skip]
    let cases: Vec<(&str, CUresult)> = vec![
        ("global address 8 bytes past a 16-byte boundary", tiled(&|a| a.addr = base + 8)),
        ("global stride 200 bytes (not a multiple of 16)", tiled(&|a| (a.dims[0], a.strides[0]) = (50, 200))),
        ("box dimension 257 (over 256)", tiled(&|a| (a.dims[1], a.boxd[1]) = (300, 257))),
        ("rank 0", tiled(&six(0))),
        ("rank 6 (over 5)", tiled(&six(6))),
        ("element stride 9 (over 8)", tiled(&|a| (a.boxd[1], a.estr[1]) = (9, 9))),
        ("inner box 20 bytes (not a multiple of 16)", tiled(&|a| a.boxd[0] = 5)),
        ("32B swizzle with a 64-byte inner box", tiled(&swizzle(CU_TENSOR_MAP_SWIZZLE_32B, 16))),
        ("64B swizzle with a 128-byte inner box", tiled(&swizzle(CU_TENSOR_MAP_SWIZZLE_64B, 32))),
        ("128B swizzle with a 256-byte inner box", tiled(&swizzle(CU_TENSOR_MAP_SWIZZLE_128B, 64))),
        ("NaN fill for UINT8 (not a floating-point type)", tiled(&nan_u8)),
        ("im2col of rank 2 (must be 3 to 5)", im2col(2, 8, 16)),
        ("im2col of rank 6 (must be 3 to 5)", im2col(6, 8, 16)),
        ("im2col with 257 channels per pixel (over 256)", im2col(4, 257, 16)),
        ("im2col with 1025 pixels per column (over 1024)", im2col(4, 8, 1025)),
        ("replace address by one 8 bytes past a 16-byte boundary", replaced),
    ];
    let mut failures = Checks::new();
    let invalid = CUDA_ERROR_INVALID_VALUE;
    for (what, r) in cases {
        let entry = match what.split(' ').next() {
            Some("im2col") => "cuTensorMapEncodeIm2col",
            Some("replace") => "cuTensorMapReplaceAddress",
            _ => "cuTensorMapEncodeTiled",
        };
        common::report_bad_input(Some(entry), what, &error_name(invalid), &error_name(r));
        println!("  {what}: {}", error_name(r));
        let (got, want) = (error_name(r), error_name(invalid));
        failures.that(
            r == invalid,
            format_args!("{what}: returned {got}, expected {want}"),
        );
        let after = good();
        let after_name = error_name(after);
        let msg = format_args!("after {what}: a valid encode returned {after_name}");
        failures.that(after == CUDA_SUCCESS, msg);
    }
    // Still working: a fresh map loads the right box.
    let boxd = [32u32, 8];
    let map = encode_tiled(&t, &boxd, &[1, 1], sw_none, l2, fill0)?;
    let want = tiled_box(&t, &boxd, &[1, 1], &[32, 28]);
    let (f, what) = (tile_kernel(&m, 2)?, "load after the bad inputs");
    let load = load_box(f, MapArg::Param(&map), &[32, 28], [0, 0], want.image.len())?;
    if let Err(e) = check_elements(what, Ty::F32, &load.image, &want, false) {
        failures.fail(e);
    }
    failures.finish()
}

fn main() {
    common::main(
        device_tests![
            tiled_ranks_types_zero_fill,
            tiled_nan_oob_fill,
            tiled_swizzle_modes,
            tiled_l2_promotion_values,
            replace_address,
            im2col_nhwc,
            im2col_wide if cfg(cuda_12080) else "cuTensorMapEncodeIm2colWide: not in these headers (added in 12.8)",
            bad_input_documented_errors,
        ],
        &[],
    );
}
