//! Stream-ordered allocation inside a CUDA graph, in the manner of NVIDIA's
//! `graphMemoryNodes` and `graphMemoryFootprint` samples:
//!
//! 1. A stream captured into a graph: `cudaMallocAsync`, the `fill` kernel
//!    (launched through the driver API on the captured stream), a copy out,
//!    `cudaFreeAsync`. The captured graph holds an allocation node and a free
//!    node; it is instantiated and replayed 1000 times, each replay checked
//!    at a few points (the bytes the kernel wrote, through the graph's own
//!    allocation).
//! 2. The footprint: the graph memory attributes (used and reserved, current
//!    and high) after the replays, printed; the high marks reset to 0 read
//!    back the current figures; once the graph is destroyed
//!    `cudaDeviceGraphMemTrim` gives the reserved memory back.
//!
//! `cargo run --example graph_memory`. Exit codes: 0 all checks passed, 1 a
//! call or a check failed (the last line says which), 77 no GPU here (last
//! line starts with `no GPU:`).

use cuda_mem_sys::*;
use std::ffi::{c_void, CStr};
use std::process::exit;
use std::ptr::null_mut;

const PTX: &str = concat!(include_str!("kernels/fill.ptx"), "\0");
const MIB: usize = 1 << 20;
/// Bytes the graph allocates at each replay.
const BYTES: usize = 16 * MIB;
const REPLAYS: u32 = 1000;

/// Calls a runtime function; on an error prints its name and code and exits 1.
macro_rules! rt {
    ($f:ident($($arg:expr),* $(,)?)) => {{
        let r = unsafe { $f($($arg),*) };
        if r != cudaSuccess {
            let name = unsafe { CStr::from_ptr(cudaGetErrorName(r)) };
            fail(&format!("{} returned {} ({})", stringify!($f), name.to_string_lossy(), r.0));
        }
    }};
}

/// Calls a driver function; on an error prints its name and code and exits 1.
macro_rules! cu {
    ($f:ident($($arg:expr),* $(,)?)) => {{
        let r = unsafe { $f($($arg),*) };
        if r != CUDA_SUCCESS {
            fail(&format!("{} returned {}", stringify!($f), r.0));
        }
    }};
}

fn fail(what: &str) -> ! {
    println!("FAILED: {what}");
    exit(1)
}

fn check(ok: bool, what: &str) {
    if !ok {
        fail(what);
    }
}

/// Device 0's primary context, current for the driver calls and the runtime's.
/// Returns the `fill` kernel loaded in it and its module.
fn setup() -> (CUmodule, CUfunction) {
    let r = unsafe { cuInit(0) };
    if r != CUDA_SUCCESS {
        println!("no GPU: cuInit returned {}; nothing to run", r.0);
        exit(77);
    }
    let mut ctx = null_mut();
    cu!(cuDevicePrimaryCtxRetain(&mut ctx, 0));
    cu!(cuCtxSetCurrent(ctx));
    rt!(cudaSetDevice(0));
    let mut pools = 0;
    rt!(cudaDeviceGetAttribute(
        &mut pools,
        cudaDevAttrMemoryPoolsSupported,
        0
    ));
    check(
        pools == 1,
        "device 0 has no memory pools (graph allocations need them)",
    );
    let mut module = null_mut();
    cu!(cuModuleLoadData(&mut module, PTX.as_ptr().cast()));
    let mut f = null_mut();
    cu!(cuModuleGetFunction(&mut f, module, c"fill".as_ptr()));
    (module, f)
}

/// The four graph memory attributes of device 0, in bytes.
fn footprint() -> [u64; 4] {
    let attrs = [
        cudaGraphMemAttrUsedMemCurrent,
        cudaGraphMemAttrUsedMemHigh,
        cudaGraphMemAttrReservedMemCurrent,
        cudaGraphMemAttrReservedMemHigh,
    ];
    attrs.map(|a| {
        let mut v: u64 = 0;
        rt!(cudaDeviceGetGraphMemAttribute(
            0,
            a,
            (&mut v as *mut u64).cast()
        ));
        v
    })
}

fn print_footprint(when: &str, f: [u64; 4]) {
    let mib = |b: u64| b as f64 / MIB as f64;
    println!(
        "  footprint {when}: used {:.1} MiB (high {:.1} MiB), reserved {:.1} MiB (high {:.1} MiB)",
        mib(f[0]),
        mib(f[1]),
        mib(f[2]),
        mib(f[3])
    );
}

fn main() {
    let (module, f) = setup();
    let mut stream = null_mut();
    rt!(cudaStreamCreateWithFlags(
        &mut stream,
        cudaStreamNonBlocking
    ));
    let mut host: *mut c_void = null_mut();
    rt!(cudaMallocHost(&mut host, BYTES));
    rt!(cudaDeviceGraphMemTrim(0));
    let mut zero: u64 = 0;
    rt!(cudaDeviceSetGraphMemAttribute(
        0,
        cudaGraphMemAttrUsedMemHigh,
        (&mut zero as *mut u64).cast()
    ));
    rt!(cudaDeviceSetGraphMemAttribute(
        0,
        cudaGraphMemAttrReservedMemHigh,
        (&mut zero as *mut u64).cast()
    ));
    print_footprint("before", footprint());

    // 1. Capture: allocate, fill, copy out, free; the salt is a kernel
    // parameter, changed between replays in the executable graph.
    println!("1. capture: cudaMallocAsync, fill, copy out, cudaFreeAsync");
    rt!(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    let mut p: *mut c_void = null_mut();
    rt!(cudaMallocAsync(&mut p, BYTES, stream));
    let (mut out, mut n, mut salt) = (p as CUdeviceptr, (BYTES / 4) as u32, 0u32);
    let mut params = [
        (&mut out as *mut CUdeviceptr).cast::<c_void>(),
        (&mut n as *mut u32).cast(),
        (&mut salt as *mut u32).cast(),
    ];
    cu!(cuLaunchKernel(
        f,
        n.div_ceil(256).min(1024),
        1,
        1,
        256,
        1,
        1,
        0,
        stream,
        params.as_mut_ptr(),
        null_mut()
    ));
    rt!(cudaMemcpyAsync(
        host,
        p,
        BYTES,
        cudaMemcpyDeviceToHost,
        stream
    ));
    rt!(cudaFreeAsync(p, stream));
    let mut graph = null_mut();
    rt!(cudaStreamEndCapture(stream, &mut graph));

    let mut count = 0;
    rt!(cudaGraphGetNodes(graph, null_mut(), &mut count));
    let mut nodes = vec![null_mut(); count];
    rt!(cudaGraphGetNodes(graph, nodes.as_mut_ptr(), &mut count));
    let (mut allocs, mut frees, mut kernel) = (0, 0, null_mut());
    for &node in &nodes[..count] {
        let mut t = cudaGraphNodeTypeEmpty;
        rt!(cudaGraphNodeGetType(node, &mut t));
        if t == cudaGraphNodeTypeMemAlloc {
            allocs += 1;
            // SAFETY: plain old data, filled in by the call.
            let mut ap: cudaMemAllocNodeParams = unsafe { std::mem::zeroed() };
            rt!(cudaGraphMemAllocNodeGetParams(node, &mut ap));
            check(
                ap.bytesize == BYTES && ap.dptr == p,
                "the allocation node's size and address are not the captured allocation's",
            );
        }
        frees += (t == cudaGraphNodeTypeMemFree) as usize;
        if t == cudaGraphNodeTypeKernel {
            kernel = node;
        }
    }
    println!("  the graph: {count} nodes, {allocs} allocation, {frees} free, at {p:?}");
    check(
        allocs == 1 && frees == 1 && !kernel.is_null(),
        "the captured graph has not one allocation, one free and one kernel node",
    );

    let mut exec = null_mut();
    rt!(cudaGraphInstantiate(&mut exec, graph, 0));
    let mut first = [0; 4];
    for replay in 1..=REPLAYS {
        let checked = replay == 1 || replay % 250 == 0;
        if checked {
            // A new salt for the kernel node of the executable graph.
            salt = replay;
            // SAFETY: plain old data, filled in by the call, then one field.
            let mut kp: CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
            cu!(cuGraphKernelNodeGetParams(kernel, &mut kp));
            kp.kernelParams = params.as_mut_ptr();
            cu!(cuGraphExecKernelNodeSetParams(exec, kernel, &kp));
        }
        rt!(cudaGraphLaunch(exec, stream));
        if checked {
            rt!(cudaStreamSynchronize(stream));
            // SAFETY: `BYTES` of page-locked memory the graph copied into.
            let words = unsafe { std::slice::from_raw_parts(host as *const u32, BYTES / 4) };
            let bad = (0..words.len()).find(|&i| words[i] != i as u32 ^ salt);
            if let Some(i) = bad {
                fail(&format!(
                    "replay {replay}: word {i} is {:#x}, expected {:#x}",
                    words[i],
                    i as u32 ^ salt
                ));
            }
            let now = footprint();
            if replay == 1 {
                first = now;
                print_footprint("after the first replay", now);
            }
            check(
                now == first,
                &format!("replay {replay}: the footprint moved: {now:?}, first {first:?}"),
            );
        }
    }
    rt!(cudaStreamSynchronize(stream));
    println!("  {REPLAYS} replays, every checked one's {BYTES} bytes as the kernel wrote them");

    // 2. The footprint.
    println!("2. footprint");
    let after = footprint();
    print_footprint(&format!("after {REPLAYS} replays"), after);
    check(
        after[1] >= BYTES as u64 && after[2] >= BYTES as u64,
        "the used high mark or the reserved figure is below the graph's allocation",
    );
    rt!(cudaDeviceSetGraphMemAttribute(
        0,
        cudaGraphMemAttrUsedMemHigh,
        (&mut zero as *mut u64).cast()
    ));
    let reset = footprint();
    check(
        reset[1] == reset[0],
        "the used high mark reset to 0 does not read back the current figure",
    );
    rt!(cudaGraphExecDestroy(exec));
    rt!(cudaGraphDestroy(graph));
    rt!(cudaDeviceSynchronize());
    rt!(cudaDeviceGraphMemTrim(0));
    let trimmed = footprint();
    print_footprint("after destroying the graph and trimming", trimmed);
    check(
        after[2] - trimmed[2].min(after[2]) >= BYTES as u64,
        "trim gave back less than the graph's allocation",
    );
    rt!(cudaFreeHost(host));
    rt!(cudaStreamDestroy(stream));
    cu!(cuModuleUnload(module));
    println!(
        "OK: graph_memory, an allocation captured into a graph, {REPLAYS} replays, footprint {:.0} MiB reserved, trimmed to {:.0} MiB",
        after[2] as f64 / MIB as f64,
        trimmed[2] as f64 / MIB as f64
    );
}
