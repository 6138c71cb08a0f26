//! Stream-ordered allocation inside CUDA graphs, in the runtime (`rt_*`) and
//! the driver (`drv_*`): `c(uda)MallocAsync`/`FreeAsync` and allocation from
//! a pool of one's own under stream capture in each capture mode; explicit
//! memory nodes (`c(uda)GraphAddMemAllocNode`/`AddMemFreeNode`), their
//! parameters read back, peer access through their access descriptors on
//! every GPU present; `AutoFreeOnLaunch` and freeing outside the graph; the
//! graph memory attributes and `c(uda)DeviceGraphMemTrim`; 10 000 replays;
//! the generic node form (`c(uda)GraphAddNode`), whose signature changed
//! between releases (docs/release-changes.md, "Graph memory").
//!
//! Every check reads back an effect (bytes copied through the graph's
//! allocation, parameters and attributes the driver reports, codes) and has a
//! wrong twin: the same check given a deliberately wrong expectation must
//! fail ([`catches`]). Every test gives back what it made (graphs, executable
//! graphs, allocations left by a graph, the graph memory, trimmed): the
//! binary runs clean under compute-sanitizer's memcheck.
mod common;

use common::kernels::CopyKernel;
use common::{
    check, cu_loc, cu_loc_id, pattern, reads, rt_loc, rt_loc_id, write, Checks, Code, CuEvent,
    CuStream, DeviceBuf, Gpu, TestResult,
};
use core::ffi::c_void;
use core::ptr::{null, null_mut};
use cuda_mem_sys::*;
use libtest_mimic::Failed;

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

// ---------------------------------------------------------------------------
// Checks and their wrong twins
// ---------------------------------------------------------------------------

/// The wrong twin of a check: `wrong`, the same check given a deliberately
/// wrong expectation, must fail.
fn catches(c: &mut Checks, what: &str, wrong: TestResult) {
    c.that(
        wrong.is_err(),
        format!("the check passed a deliberately wrong {what}"),
    );
}

/// `got` must be `want`.
fn equal<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> TestResult {
    ensure!(got == want, "{what}: got {got:?}, expected {want:?}");
    Ok(())
}

/// `got` must be at least `least`.
fn at_least(what: &str, got: u64, least: u64) -> TestResult {
    ensure!(got >= least, "{what}: {got} B, expected at least {least} B");
    Ok(())
}

/// A driver or runtime code must be `want`.
fn code<C: Code>(what: &str, got: C, want: C) -> TestResult {
    ensure!(
        got == want,
        "{what} returned {}, expected {}",
        got.name(),
        want.name()
    );
    Ok(())
}

/// What an allocation node reports about itself.
#[derive(Clone, Debug, PartialEq)]
struct AllocParams {
    bytesize: usize,
    dptr: u64,
    /// `poolProps.allocType` is pinned (the only type graph allocations have).
    pinned: bool,
    /// `poolProps.location`: a device and its ordinal.
    device: Option<i32>,
    /// The access descriptors: (device, read-write).
    access: Vec<(i32, bool)>,
}

/// The four graph memory attributes of a device, in bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Footprint {
    used: u64,
    used_high: u64,
    reserved: u64,
    reserved_high: u64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Attr {
    UsedCurrent,
    UsedHigh,
    ReservedCurrent,
    ReservedHigh,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Global,
    ThreadLocal,
    Relaxed,
}

const MODES: [Mode; 3] = [Mode::Global, Mode::ThreadLocal, Mode::Relaxed];

// ---------------------------------------------------------------------------
// Owned graphs and pools
// ---------------------------------------------------------------------------

/// A graph (`CUgraph` is `cudaGraph_t`); destroyed on drop.
struct Graph(CUgraph);
impl Drop for Graph {
    fn drop(&mut self) {
        if !self.0.is_null() {
            unsafe { cuGraphDestroy(self.0) };
        }
    }
}

/// An executable graph; destroyed on drop.
struct Exec(CUgraphExec);
impl Drop for Exec {
    fn drop(&mut self) {
        if !self.0.is_null() {
            unsafe { cuGraphExecDestroy(self.0) };
        }
    }
}

/// A memory pool of one's own on device 0; destroyed on drop.
struct Pool(CUmemoryPool);
impl Drop for Pool {
    fn drop(&mut self) {
        unsafe { cuMemPoolDestroy(self.0) };
    }
}

fn vptr(p: u64) -> *mut c_void {
    p as usize as *mut c_void
}

// ---------------------------------------------------------------------------
// The two APIs: each scenario is written once, generic over `Api`
// ---------------------------------------------------------------------------

trait Api {
    const NAME: &'static str;
    /// The entry points named in bad-input lines.
    const LAUNCH: &'static str;
    const GET_ATTR: &'static str;
    const SET_ATTR: &'static str;
    type Code: Code + std::fmt::Debug + Send + 'static;
    const INVALID_VALUE: Self::Code;
    const INVALID_DEVICE: Self::Code;
    const NOT_SUPPORTED: Self::Code;
    const CAPTURE_UNSUPPORTED: Self::Code;
    const CAPTURE_INVALIDATED: Self::Code;
    /// Makes device `ordinal` (whose primary context `gpu` holds) current.
    fn current(gpu: &Gpu, ordinal: i32) -> TestResult;
    fn begin_capture(s: CUstream, mode: Mode) -> Self::Code;
    fn end_capture(s: CUstream, g: &mut CUgraph) -> Self::Code;
    /// The capture status is active, and the number of nodes the next
    /// captured node will depend on (`c(uda)StreamGetCaptureInfo`, in the
    /// release's form: edge data from 13.0).
    fn capture_info(s: CUstream) -> Result<(bool, usize), Failed>;
    fn malloc_async(p: &mut u64, n: usize, s: CUstream) -> Self::Code;
    fn malloc_from_pool_async(p: &mut u64, n: usize, pool: CUmemoryPool, s: CUstream)
        -> Self::Code;
    fn free_async(p: u64, s: CUstream) -> Self::Code;
    fn copy_async(dst: u64, src: u64, n: usize, s: CUstream) -> Self::Code;
    /// `cudaMalloc`/`cuMemAlloc`: a call stream capture may forbid.
    fn malloc(p: &mut u64, n: usize) -> Self::Code;
    fn free(p: u64) -> Self::Code;
    /// A pool of one's own on device 0 (pinned device memory).
    fn pool() -> Result<Pool, Failed>;
    fn graph() -> Result<Graph, Failed>;
    /// An allocation node of `n` bytes on device 0, read-write for `peers`.
    fn add_alloc_node(
        g: CUgraph,
        deps: &[CUgraphNode],
        n: usize,
        peers: &[i32],
    ) -> Result<(CUgraphNode, u64), Failed>;
    fn alloc_params(node: CUgraphNode) -> Result<AllocParams, Failed>;
    fn add_free_node(g: CUgraph, deps: &[CUgraphNode], p: u64) -> Result<CUgraphNode, Failed>;
    fn free_node_dptr(node: CUgraphNode) -> Result<u64, Failed>;
    /// A node copying `n` bytes (unified addresses) in `ctx`.
    fn add_copy_node(
        g: CUgraph,
        deps: &[CUgraphNode],
        dst: u64,
        src: u64,
        n: usize,
        ctx: CUcontext,
    ) -> Result<CUgraphNode, Failed>;
    fn instantiate(e: &mut CUgraphExec, g: CUgraph, auto_free: bool) -> Self::Code;
    fn launch(e: CUgraphExec, s: CUstream) -> Self::Code;
    fn exec_destroy(e: CUgraphExec) -> Self::Code;
    fn graph_destroy(g: CUgraph) -> Self::Code;
    /// The numbers of allocation and free nodes in `g`.
    fn memory_nodes(g: CUgraph) -> Result<(usize, usize), Failed>;
    /// `c(uda)DeviceGetGraphMemAttribute` of device `dev` (an ordinal: the
    /// driver's `CUdevice` is one).
    fn get_attr_code(dev: i32, a: Attr, v: &mut u64) -> Self::Code;
    fn get_attr(dev: i32, a: Attr) -> Result<u64, Failed> {
        let mut v = 0;
        check(
            Self::get_attr_code(dev, a, &mut v),
            &format!("{} get graph memory attribute {a:?}", Self::NAME),
        )?;
        Ok(v)
    }
    fn set_attr(dev: i32, a: Attr, v: u64) -> Self::Code;
    fn trim(dev: i32) -> TestResult;
}

struct Rt;
struct Drv;

fn rt_mode(m: Mode) -> cudaStreamCaptureMode {
    match m {
        Mode::Global => cudaStreamCaptureModeGlobal,
        Mode::ThreadLocal => cudaStreamCaptureModeThreadLocal,
        Mode::Relaxed => cudaStreamCaptureModeRelaxed,
    }
}

fn cu_mode(m: Mode) -> CUstreamCaptureMode {
    match m {
        Mode::Global => CU_STREAM_CAPTURE_MODE_GLOBAL,
        Mode::ThreadLocal => CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
        Mode::Relaxed => CU_STREAM_CAPTURE_MODE_RELAXED,
    }
}

fn rt_attr(a: Attr) -> cudaGraphMemAttributeType {
    match a {
        Attr::UsedCurrent => cudaGraphMemAttrUsedMemCurrent,
        Attr::UsedHigh => cudaGraphMemAttrUsedMemHigh,
        Attr::ReservedCurrent => cudaGraphMemAttrReservedMemCurrent,
        Attr::ReservedHigh => cudaGraphMemAttrReservedMemHigh,
    }
}

fn cu_attr(a: Attr) -> CUgraphMem_attribute {
    match a {
        Attr::UsedCurrent => CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT,
        Attr::UsedHigh => CU_GRAPH_MEM_ATTR_USED_MEM_HIGH,
        Attr::ReservedCurrent => CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT,
        Attr::ReservedHigh => CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH,
    }
}

/// Runtime pool properties of pinned memory on device 0 (the form every
/// release takes: fields set one by one on a zeroed struct).
fn rt_pool_props() -> cudaMemPoolProps {
    // SAFETY: plain old data; zero is "none" for every other field.
    let mut p: cudaMemPoolProps = unsafe { core::mem::zeroed() };
    p.allocType = cudaMemAllocationTypePinned;
    p.location = rt_loc(cudaMemLocationTypeDevice, 0);
    p
}

fn cu_pool_props() -> CUmemPoolProps {
    // SAFETY: as for `rt_pool_props`.
    let mut p: CUmemPoolProps = unsafe { core::mem::zeroed() };
    p.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location = cu_loc(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    p
}

fn rt_access(peers: &[i32]) -> Vec<cudaMemAccessDesc> {
    peers
        .iter()
        .map(|&d| {
            // SAFETY: plain old data, then every field written.
            let mut a: cudaMemAccessDesc = unsafe { core::mem::zeroed() };
            a.location = rt_loc(cudaMemLocationTypeDevice, d);
            a.flags = cudaMemAccessFlagsProtReadWrite;
            a
        })
        .collect()
}

fn cu_access(peers: &[i32]) -> Vec<CUmemAccessDesc> {
    peers
        .iter()
        .map(|&d| {
            // SAFETY: as for `rt_access`.
            let mut a: CUmemAccessDesc = unsafe { core::mem::zeroed() };
            a.location = cu_loc(CU_MEM_LOCATION_TYPE_DEVICE, d);
            a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
            a
        })
        .collect()
}

impl Api for Rt {
    const NAME: &'static str = "runtime";
    const LAUNCH: &'static str = "cudaGraphLaunch";
    const GET_ATTR: &'static str = "cudaDeviceGetGraphMemAttribute";
    const SET_ATTR: &'static str = "cudaDeviceSetGraphMemAttribute";
    type Code = cudaError_t;
    const INVALID_VALUE: cudaError_t = cudaErrorInvalidValue;
    const INVALID_DEVICE: cudaError_t = cudaErrorInvalidDevice;
    const NOT_SUPPORTED: cudaError_t = cudaErrorNotSupported;
    const CAPTURE_UNSUPPORTED: cudaError_t = cudaErrorStreamCaptureUnsupported;
    const CAPTURE_INVALIDATED: cudaError_t = cudaErrorStreamCaptureInvalidated;
    fn current(gpu: &Gpu, ordinal: i32) -> TestResult {
        cu!(cuCtxSetCurrent(gpu.ctx))?;
        rt!(cudaSetDevice(ordinal))
    }
    fn begin_capture(s: CUstream, mode: Mode) -> cudaError_t {
        unsafe { cudaStreamBeginCapture(s, rt_mode(mode)) }
    }
    fn end_capture(s: CUstream, g: &mut CUgraph) -> cudaError_t {
        unsafe { cudaStreamEndCapture(s, g) }
    }
    fn capture_info(s: CUstream) -> Result<(bool, usize), Failed> {
        let (mut status, mut id, mut g) = (cudaStreamCaptureStatusNone, 0, null_mut());
        let (mut deps, mut n): (*const cudaGraphNode_t, usize) = (null(), 0);
        // 13.0 gave the name the edge-data form (12.3 to 12.9: `_v3`).
        #[cfg(cuda_13000)]
        rt!(cudaStreamGetCaptureInfo(
            s,
            &mut status,
            &mut id,
            &mut g,
            &mut deps,
            &mut null(),
            &mut n
        ))?;
        #[cfg(not(cuda_13000))]
        rt!(cudaStreamGetCaptureInfo(
            s,
            &mut status,
            &mut id,
            &mut g,
            &mut deps,
            &mut n
        ))?;
        Ok((status == cudaStreamCaptureStatusActive && !g.is_null(), n))
    }
    fn malloc_async(p: &mut u64, n: usize, s: CUstream) -> cudaError_t {
        let mut v = null_mut();
        let r = unsafe { cudaMallocAsync(&mut v, n, s) };
        *p = v as u64;
        r
    }
    fn malloc_from_pool_async(
        p: &mut u64,
        n: usize,
        pool: CUmemoryPool,
        s: CUstream,
    ) -> cudaError_t {
        let mut v = null_mut();
        let r = unsafe { cudaMallocFromPoolAsync(&mut v, n, pool, s) };
        *p = v as u64;
        r
    }
    fn free_async(p: u64, s: CUstream) -> cudaError_t {
        unsafe { cudaFreeAsync(vptr(p), s) }
    }
    fn copy_async(dst: u64, src: u64, n: usize, s: CUstream) -> cudaError_t {
        unsafe { cudaMemcpyAsync(vptr(dst), vptr(src), n, cudaMemcpyDefault, s) }
    }
    fn malloc(p: &mut u64, n: usize) -> cudaError_t {
        let mut v = null_mut();
        let r = unsafe { cudaMalloc(&mut v, n) };
        *p = v as u64;
        r
    }
    fn free(p: u64) -> cudaError_t {
        unsafe { cudaFree(vptr(p)) }
    }
    fn pool() -> Result<Pool, Failed> {
        let mut pool = null_mut();
        rt!(cudaMemPoolCreate(&mut pool, &rt_pool_props()))?;
        Ok(Pool(pool))
    }
    fn graph() -> Result<Graph, Failed> {
        let mut g = null_mut();
        rt!(cudaGraphCreate(&mut g, 0))?;
        Ok(Graph(g))
    }
    fn add_alloc_node(
        g: CUgraph,
        deps: &[CUgraphNode],
        n: usize,
        peers: &[i32],
    ) -> Result<(CUgraphNode, u64), Failed> {
        let access = rt_access(peers);
        // SAFETY: plain old data, then the fields written.
        let mut p: cudaMemAllocNodeParams = unsafe { core::mem::zeroed() };
        p.poolProps = rt_pool_props();
        p.accessDescs = access.as_ptr();
        p.accessDescCount = access.len();
        p.bytesize = n;
        let mut node = null_mut();
        rt!(cudaGraphAddMemAllocNode(
            &mut node,
            g,
            deps.as_ptr(),
            deps.len(),
            &mut p
        ))?;
        Ok((node, p.dptr as u64))
    }
    fn alloc_params(node: CUgraphNode) -> Result<AllocParams, Failed> {
        // SAFETY: plain old data, filled in by the call.
        let mut p: cudaMemAllocNodeParams = unsafe { core::mem::zeroed() };
        rt!(cudaGraphMemAllocNodeGetParams(node, &mut p))?;
        let access = (0..p.accessDescCount)
            .map(|i| {
                // SAFETY: the driver's array of `accessDescCount` descriptors.
                let a = unsafe { &*p.accessDescs.add(i) };
                (
                    rt_loc_id(&a.location),
                    a.flags == cudaMemAccessFlagsProtReadWrite,
                )
            })
            .collect();
        let loc = &p.poolProps.location;
        Ok(AllocParams {
            bytesize: p.bytesize,
            dptr: p.dptr as u64,
            pinned: p.poolProps.allocType == cudaMemAllocationTypePinned,
            device: (loc.type_ == cudaMemLocationTypeDevice).then(|| rt_loc_id(loc)),
            access,
        })
    }
    fn add_free_node(g: CUgraph, deps: &[CUgraphNode], p: u64) -> Result<CUgraphNode, Failed> {
        let mut node = null_mut();
        rt!(cudaGraphAddMemFreeNode(
            &mut node,
            g,
            deps.as_ptr(),
            deps.len(),
            vptr(p)
        ))?;
        Ok(node)
    }
    fn free_node_dptr(node: CUgraphNode) -> Result<u64, Failed> {
        let mut p: *mut c_void = null_mut();
        rt!(cudaGraphMemFreeNodeGetParams(
            node,
            (&mut p as *mut *mut c_void).cast()
        ))?;
        Ok(p as u64)
    }
    fn add_copy_node(
        g: CUgraph,
        deps: &[CUgraphNode],
        dst: u64,
        src: u64,
        n: usize,
        _ctx: CUcontext,
    ) -> Result<CUgraphNode, Failed> {
        let mut node = null_mut();
        rt!(cudaGraphAddMemcpyNode1D(
            &mut node,
            g,
            deps.as_ptr(),
            deps.len(),
            vptr(dst),
            vptr(src),
            n,
            cudaMemcpyDefault
        ))?;
        Ok(node)
    }
    fn instantiate(e: &mut CUgraphExec, g: CUgraph, auto_free: bool) -> cudaError_t {
        let flags = if auto_free {
            cudaGraphInstantiateFlagAutoFreeOnLaunch.0 as u64
        } else {
            0
        };
        unsafe { cudaGraphInstantiate(e, g, flags) }
    }
    fn launch(e: CUgraphExec, s: CUstream) -> cudaError_t {
        unsafe { cudaGraphLaunch(e, s) }
    }
    fn exec_destroy(e: CUgraphExec) -> cudaError_t {
        unsafe { cudaGraphExecDestroy(e) }
    }
    fn graph_destroy(g: CUgraph) -> cudaError_t {
        unsafe { cudaGraphDestroy(g) }
    }
    fn memory_nodes(g: CUgraph) -> Result<(usize, usize), Failed> {
        let mut n = 0;
        rt!(cudaGraphGetNodes(g, null_mut(), &mut n))?;
        let mut nodes = vec![null_mut(); n];
        rt!(cudaGraphGetNodes(g, nodes.as_mut_ptr(), &mut n))?;
        let (mut allocs, mut frees) = (0, 0);
        for node in &nodes[..n] {
            let mut t = cudaGraphNodeTypeEmpty;
            rt!(cudaGraphNodeGetType(*node, &mut t))?;
            allocs += (t == cudaGraphNodeTypeMemAlloc) as usize;
            frees += (t == cudaGraphNodeTypeMemFree) as usize;
        }
        Ok((allocs, frees))
    }
    fn get_attr_code(dev: i32, a: Attr, v: &mut u64) -> cudaError_t {
        unsafe { cudaDeviceGetGraphMemAttribute(dev, rt_attr(a), (v as *mut u64).cast()) }
    }
    fn set_attr(dev: i32, a: Attr, mut v: u64) -> cudaError_t {
        unsafe { cudaDeviceSetGraphMemAttribute(dev, rt_attr(a), (&mut v as *mut u64).cast()) }
    }
    fn trim(dev: i32) -> TestResult {
        rt!(cudaDeviceGraphMemTrim(dev))
    }
}

/// The driver's `CUdevice` of an ordinal.
fn cu_device(ordinal: i32) -> Result<CUdevice, Failed> {
    let mut d = 0;
    cu!(cuDeviceGet(&mut d, ordinal))?;
    Ok(d)
}

impl Api for Drv {
    const NAME: &'static str = "driver";
    const LAUNCH: &'static str = "cuGraphLaunch";
    const GET_ATTR: &'static str = "cuDeviceGetGraphMemAttribute";
    const SET_ATTR: &'static str = "cuDeviceSetGraphMemAttribute";
    type Code = CUresult;
    const INVALID_VALUE: CUresult = CUDA_ERROR_INVALID_VALUE;
    const INVALID_DEVICE: CUresult = CUDA_ERROR_INVALID_DEVICE;
    const NOT_SUPPORTED: CUresult = CUDA_ERROR_NOT_SUPPORTED;
    const CAPTURE_UNSUPPORTED: CUresult = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    const CAPTURE_INVALIDATED: CUresult = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    fn current(gpu: &Gpu, _ordinal: i32) -> TestResult {
        cu!(cuCtxSetCurrent(gpu.ctx))
    }
    fn begin_capture(s: CUstream, mode: Mode) -> CUresult {
        unsafe { cuStreamBeginCapture(s, cu_mode(mode)) }
    }
    fn end_capture(s: CUstream, g: &mut CUgraph) -> CUresult {
        unsafe { cuStreamEndCapture(s, g) }
    }
    fn capture_info(s: CUstream) -> Result<(bool, usize), Failed> {
        let (mut status, mut id, mut g) = (CU_STREAM_CAPTURE_STATUS_NONE, 0, null_mut());
        let (mut deps, mut n): (*const CUgraphNode, usize) = (null(), 0);
        // 13.0 maps the name to `cuStreamGetCaptureInfo_v3` (edge data);
        // before, to `_v2`.
        #[cfg(cuda_13000)]
        cu!(cuStreamGetCaptureInfo(
            s,
            &mut status,
            &mut id,
            &mut g,
            &mut deps,
            &mut null(),
            &mut n
        ))?;
        #[cfg(not(cuda_13000))]
        cu!(cuStreamGetCaptureInfo(
            s,
            &mut status,
            &mut id,
            &mut g,
            &mut deps,
            &mut n
        ))?;
        Ok((status == CU_STREAM_CAPTURE_STATUS_ACTIVE && !g.is_null(), n))
    }
    fn malloc_async(p: &mut u64, n: usize, s: CUstream) -> CUresult {
        unsafe { cuMemAllocAsync(p, n, s) }
    }
    fn malloc_from_pool_async(p: &mut u64, n: usize, pool: CUmemoryPool, s: CUstream) -> CUresult {
        unsafe { cuMemAllocFromPoolAsync(p, n, pool, s) }
    }
    fn free_async(p: u64, s: CUstream) -> CUresult {
        unsafe { cuMemFreeAsync(p, s) }
    }
    fn copy_async(dst: u64, src: u64, n: usize, s: CUstream) -> CUresult {
        unsafe { cuMemcpyAsync(dst, src, n, s) }
    }
    fn malloc(p: &mut u64, n: usize) -> CUresult {
        unsafe { cuMemAlloc(p, n) }
    }
    fn free(p: u64) -> CUresult {
        unsafe { cuMemFree(p) }
    }
    fn pool() -> Result<Pool, Failed> {
        let mut pool = null_mut();
        cu!(cuMemPoolCreate(&mut pool, &cu_pool_props()))?;
        Ok(Pool(pool))
    }
    fn graph() -> Result<Graph, Failed> {
        let mut g = null_mut();
        cu!(cuGraphCreate(&mut g, 0))?;
        Ok(Graph(g))
    }
    fn add_alloc_node(
        g: CUgraph,
        deps: &[CUgraphNode],
        n: usize,
        peers: &[i32],
    ) -> Result<(CUgraphNode, u64), Failed> {
        let access = cu_access(peers);
        // SAFETY: plain old data, then the fields written.
        let mut p: CUDA_MEM_ALLOC_NODE_PARAMS = unsafe { core::mem::zeroed() };
        p.poolProps = cu_pool_props();
        p.accessDescs = access.as_ptr();
        p.accessDescCount = access.len();
        p.bytesize = n;
        let mut node = null_mut();
        cu!(cuGraphAddMemAllocNode(
            &mut node,
            g,
            deps.as_ptr(),
            deps.len(),
            &mut p
        ))?;
        Ok((node, p.dptr))
    }
    fn alloc_params(node: CUgraphNode) -> Result<AllocParams, Failed> {
        // SAFETY: plain old data, filled in by the call.
        let mut p: CUDA_MEM_ALLOC_NODE_PARAMS = unsafe { core::mem::zeroed() };
        cu!(cuGraphMemAllocNodeGetParams(node, &mut p))?;
        let access = (0..p.accessDescCount)
            .map(|i| {
                // SAFETY: the driver's array of `accessDescCount` descriptors.
                let a = unsafe { &*p.accessDescs.add(i) };
                (
                    cu_loc_id(&a.location),
                    a.flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
                )
            })
            .collect();
        let loc = &p.poolProps.location;
        Ok(AllocParams {
            bytesize: p.bytesize,
            dptr: p.dptr,
            pinned: p.poolProps.allocType == CU_MEM_ALLOCATION_TYPE_PINNED,
            device: (loc.type_ == CU_MEM_LOCATION_TYPE_DEVICE).then(|| cu_loc_id(loc)),
            access,
        })
    }
    fn add_free_node(g: CUgraph, deps: &[CUgraphNode], p: u64) -> Result<CUgraphNode, Failed> {
        let mut node = null_mut();
        cu!(cuGraphAddMemFreeNode(
            &mut node,
            g,
            deps.as_ptr(),
            deps.len(),
            p
        ))?;
        Ok(node)
    }
    fn free_node_dptr(node: CUgraphNode) -> Result<u64, Failed> {
        let mut p = 0;
        cu!(cuGraphMemFreeNodeGetParams(node, &mut p))?;
        Ok(p)
    }
    fn add_copy_node(
        g: CUgraph,
        deps: &[CUgraphNode],
        dst: u64,
        src: u64,
        n: usize,
        ctx: CUcontext,
    ) -> Result<CUgraphNode, Failed> {
        // SAFETY: plain old data; zero is the default of every other field.
        let mut c: CUDA_MEMCPY3D = unsafe { core::mem::zeroed() };
        c.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
        c.srcDevice = src;
        c.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
        c.dstDevice = dst;
        c.WidthInBytes = n;
        c.Height = 1;
        c.Depth = 1;
        let mut node = null_mut();
        cu!(cuGraphAddMemcpyNode(
            &mut node,
            g,
            deps.as_ptr(),
            deps.len(),
            &c,
            ctx
        ))?;
        Ok(node)
    }
    fn instantiate(e: &mut CUgraphExec, g: CUgraph, auto_free: bool) -> CUresult {
        let flags = if auto_free {
            CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH.0 as u64
        } else {
            0
        };
        // `cuGraphInstantiate` is `cuGraphInstantiateWithFlags` from 12.0 (the
        // symbol `cuGraphInstantiate` keeps the 11.x form with an error node
        // and a log buffer): AutoFreeOnLaunch working proves which was linked.
        unsafe { cuGraphInstantiate(e, g, flags) }
    }
    fn launch(e: CUgraphExec, s: CUstream) -> CUresult {
        unsafe { cuGraphLaunch(e, s) }
    }
    fn exec_destroy(e: CUgraphExec) -> CUresult {
        unsafe { cuGraphExecDestroy(e) }
    }
    fn graph_destroy(g: CUgraph) -> CUresult {
        unsafe { cuGraphDestroy(g) }
    }
    fn memory_nodes(g: CUgraph) -> Result<(usize, usize), Failed> {
        let mut n = 0;
        cu!(cuGraphGetNodes(g, null_mut(), &mut n))?;
        let mut nodes = vec![null_mut(); n];
        cu!(cuGraphGetNodes(g, nodes.as_mut_ptr(), &mut n))?;
        let (mut allocs, mut frees) = (0, 0);
        for node in &nodes[..n] {
            let mut t = CU_GRAPH_NODE_TYPE_EMPTY;
            cu!(cuGraphNodeGetType(*node, &mut t))?;
            allocs += (t == CU_GRAPH_NODE_TYPE_MEM_ALLOC) as usize;
            frees += (t == CU_GRAPH_NODE_TYPE_MEM_FREE) as usize;
        }
        Ok((allocs, frees))
    }
    fn get_attr_code(dev: i32, a: Attr, v: &mut u64) -> CUresult {
        unsafe { cuDeviceGetGraphMemAttribute(dev, cu_attr(a), (v as *mut u64).cast()) }
    }
    fn set_attr(dev: i32, a: Attr, mut v: u64) -> CUresult {
        unsafe { cuDeviceSetGraphMemAttribute(dev, cu_attr(a), (&mut v as *mut u64).cast()) }
    }
    fn trim(dev: i32) -> TestResult {
        cu!(cuDeviceGraphMemTrim(cu_device(dev)?))
    }
}

// ---------------------------------------------------------------------------
// Shared steps
// ---------------------------------------------------------------------------

/// Device 0, current for the API.
fn init<A: Api>() -> Result<Gpu, Failed> {
    let gpu = Gpu::new(0)?;
    A::current(&gpu, 0)?;
    Ok(gpu)
}

/// `g` instantiated (with AutoFreeOnLaunch or not).
fn exec<A: Api>(g: CUgraph, auto_free: bool) -> Result<Exec, Failed> {
    let mut e = null_mut();
    check(
        A::instantiate(&mut e, g, auto_free),
        &format!("{} instantiate (auto free {auto_free})", A::NAME),
    )?;
    Ok(Exec(e))
}

fn launch<A: Api>(e: &Exec, s: &CuStream) -> TestResult {
    check(A::launch(e.0, s.0), &format!("{} graph launch", A::NAME))
}

/// The four graph memory attributes of device 0.
fn footprint<A: Api>() -> Result<Footprint, Failed> {
    Ok(Footprint {
        used: A::get_attr(0, Attr::UsedCurrent)?,
        used_high: A::get_attr(0, Attr::UsedHigh)?,
        reserved: A::get_attr(0, Attr::ReservedCurrent)?,
        reserved_high: A::get_attr(0, Attr::ReservedHigh)?,
    })
}

/// `n` zero bytes at `p`.
fn zero(p: u64, n: usize) -> TestResult {
    cu!(cuMemsetD8(p, 0, n))
}

/// A graph of explicit nodes: allocate `n` bytes (read-write for `peers`),
/// copy `input` into them, then, where `out` is given, copy them to `out`;
/// free them in the graph where `free_in_graph`. Returns the graph, the
/// allocation node, the address and the free node.
fn alloc_copy_graph<A: Api>(
    gpu: &Gpu,
    n: usize,
    peers: &[i32],
    input: u64,
    out: Option<u64>,
    free_in_graph: bool,
) -> Result<(Graph, CUgraphNode, u64, Option<CUgraphNode>), Failed> {
    let g = A::graph()?;
    let (alloc, a) = A::add_alloc_node(g.0, &[], n, peers)?;
    let mut last = A::add_copy_node(g.0, &[alloc], a, input, n, gpu.ctx)?;
    if let Some(out) = out {
        last = A::add_copy_node(g.0, &[last], out, a, n, gpu.ctx)?;
    }
    let free = if free_in_graph {
        Some(A::add_free_node(g.0, &[last], a)?)
    } else {
        None
    };
    Ok((g, alloc, a, free))
}

// ---------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------

/// Under stream capture in each mode, an allocation from the device's
/// current pool and one from a pool of one's own, each written by a copy and
/// copied out, then freed: the captured graph holds two allocation and two
/// free nodes, and every launch carries fresh bytes through both.
fn capture_each_mode<A: Api>() -> TestResult {
    let _gpu = init::<A>()?;
    let s = CuStream::new()?;
    let pool = A::pool()?;
    const N: usize = 256 * KIB;
    let input = DeviceBuf::new(N)?;
    let out = [DeviceBuf::new(N)?, DeviceBuf::new(N)?];
    let mut c = Checks::new();
    for (m, mode) in MODES.iter().enumerate() {
        let what = format!("{} capture ({mode:?})", A::NAME);
        check(A::begin_capture(s.0, *mode), &format!("{what}: begin"))?;
        let captured = (|| -> Result<(bool, usize), Failed> {
            let (mut a, mut b) = (0, 0);
            check(A::malloc_async(&mut a, N, s.0), "malloc async")?;
            let info = A::capture_info(s.0)?;
            check(A::copy_async(a, input.ptr, N, s.0), "copy in")?;
            check(A::copy_async(out[0].ptr, a, N, s.0), "copy out")?;
            check(A::free_async(a, s.0), "free async")?;
            check(
                A::malloc_from_pool_async(&mut b, N, pool.0, s.0),
                "malloc from pool async",
            )?;
            check(A::copy_async(b, input.ptr, N, s.0), "copy in")?;
            check(A::copy_async(out[1].ptr, b, N, s.0), "copy out")?;
            check(A::free_async(b, s.0), "free async")?;
            Ok(info)
        })();
        let mut g = null_mut();
        let end = A::end_capture(s.0, &mut g);
        let g = Graph(g);
        let (active, deps) = captured.map_err(|e| format!("{what}: {}", common::message(e)))?;
        check(end, &format!("{what}: end"))?;
        c.ok(equal(&format!("{what}: capture info active"), active, true));
        c.ok(equal(
            &format!("{what}: dependencies after the allocation"),
            deps,
            1,
        ));
        catches(&mut c, "dependency count", equal("", deps, 0));
        let nodes = A::memory_nodes(g.0)?;
        c.ok(equal(
            &format!("{what}: (alloc, free) nodes"),
            nodes,
            (2, 2),
        ));
        catches(&mut c, "node count", equal("", nodes, (3, 2)));
        let e = exec::<A>(g.0, false)?;
        for round in 0..2u32 {
            let data = pattern(N, 10 * m as u32 + round + 1);
            write(input.ptr, &data)?;
            zero(out[0].ptr, N)?;
            zero(out[1].ptr, N)?;
            launch::<A>(&e, &s)?;
            s.sync()?;
            c.ok(reads(out[0].ptr, &data, &format!("{what}: current pool")));
            c.ok(reads(out[1].ptr, &data, &format!("{what}: own pool")));
            let wrong = pattern(N, 10 * m as u32 + round + 101);
            catches(&mut c, "byte pattern", reads(out[1].ptr, &wrong, ""));
        }
    }
    drop(pool);
    A::trim(0)?;
    c.finish()
}

/// What a capture mode allows (NVIDIA's `cudaStreamBeginCapture` and
/// `cudaThreadExchangeStreamCaptureMode`): a `cudaMalloc`/`cuMemAlloc`, a
/// potentially unsafe call, from another thread (refused under a global
/// capture only) and from the capturing thread (refused unless relaxed,
/// which invalidates the capture): the codes of (other thread, own thread,
/// end of capture).
fn mode_rule<A: Api>(mode: Mode) -> (A::Code, A::Code, A::Code) {
    let ok = A::Code::SUCCESS;
    let (no, invalidated) = (A::CAPTURE_UNSUPPORTED, A::CAPTURE_INVALIDATED);
    match mode {
        Mode::Global => (no, no, invalidated),
        Mode::ThreadLocal => (ok, no, invalidated),
        Mode::Relaxed => (ok, ok, ok),
    }
}

/// The observed codes follow `rule`.
fn follows<C: Code>(what: &str, got: (C, C, C), rule: (C, C, C)) -> TestResult {
    code(&format!("{what}: other thread's malloc"), got.0, rule.0)?;
    code(&format!("{what}: own thread's malloc"), got.1, rule.1)?;
    code(&format!("{what}: end of capture"), got.2, rule.2)
}

/// Each capture mode's rule for potentially unsafe calls, seen from the
/// capturing thread and from another one; the wrong twin: the next mode's
/// rule does not fit what was seen.
fn capture_modes_unsafe_calls<A: Api>() -> TestResult {
    let gpu = init::<A>()?;
    let s = CuStream::new()?;
    let ctx = gpu.ctx as usize;
    let mut c = Checks::new();
    for (m, mode) in MODES.iter().enumerate() {
        let what = format!("{} capture ({mode:?})", A::NAME);
        // A node, so that the capture is not empty.
        let probe = DeviceBuf::new(4 * KIB)?;
        check(A::begin_capture(s.0, *mode), &format!("{what}: begin"))?;
        let memset = cu!(cuMemsetD8Async(probe.ptr, 1, 4 * KIB, s.0));
        let other = std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    let gpu = Gpu {
                        dev: 0,
                        ctx: ctx as CUcontext,
                    };
                    let current = A::current(&gpu, 0);
                    std::mem::forget(gpu); // the primary context is the test's
                    current?;
                    let mut q = 0;
                    let r = A::malloc(&mut q, 64 * KIB);
                    if r == A::Code::SUCCESS {
                        check(A::free(q), "free in the other thread")?;
                    }
                    Ok::<_, Failed>(r)
                })
                .join()
                .map_err(|_| Failed::from("the other thread panicked"))
        })?;
        let mut p = 0;
        let own = A::malloc(&mut p, 64 * KIB);
        let mut g = null_mut();
        let end = A::end_capture(s.0, &mut g);
        drop(Graph(g));
        if own == A::Code::SUCCESS {
            check(A::free(p), "free")?;
        }
        memset?;
        let seen = (other?, own, end);
        println!(
            "    {what}: other thread {}, own thread {}, end {}",
            seen.0.name(),
            seen.1.name(),
            seen.2.name()
        );
        c.ok(follows(&what, seen, mode_rule::<A>(*mode)));
        let next = MODES[(m + 1) % MODES.len()];
        catches(
            &mut c,
            &format!("mode rule ({next:?} for {mode:?})"),
            follows("", seen, mode_rule::<A>(next)),
        );
    }
    c.finish()
}

/// Explicit memory nodes: the allocation node's parameters (size, address,
/// pinned memory on device 0, no peer access) and the free node's address
/// read back; the graph copies bytes through the allocation.
fn memory_nodes_read_back<A: Api>() -> TestResult {
    let gpu = init::<A>()?;
    let s = CuStream::new()?;
    const N: usize = 2 * MIB + 4 * KIB;
    let data = pattern(N, 3);
    let input = DeviceBuf::with(&data)?;
    let out = DeviceBuf::new(N)?;
    let (g, alloc, a, free) = alloc_copy_graph::<A>(&gpu, N, &[], input.ptr, Some(out.ptr), true)?;
    let mut c = Checks::new();
    let want = AllocParams {
        bytesize: N,
        dptr: a,
        pinned: true,
        device: Some(0),
        access: vec![],
    };
    let got = A::alloc_params(alloc)?;
    c.that(a != 0, "the allocation node gave a null address");
    c.ok(equal("allocation node parameters", &got, &want));
    for (twin, wrong) in [
        (
            "size",
            AllocParams {
                bytesize: N + 1,
                ..want.clone()
            },
        ),
        (
            "address",
            AllocParams {
                dptr: a + 4096,
                ..want.clone()
            },
        ),
        (
            "device",
            AllocParams {
                device: Some(1),
                ..want.clone()
            },
        ),
        (
            "access list",
            AllocParams {
                access: vec![(1, true)],
                ..want.clone()
            },
        ),
    ] {
        catches(&mut c, twin, equal("", &got, &wrong));
    }
    let freed = A::free_node_dptr(free.expect("freed in the graph"))?;
    c.ok(equal("free node address", freed, a));
    catches(&mut c, "free node address", equal("", freed, a + 1));
    let e = exec::<A>(g.0, false)?;
    launch::<A>(&e, &s)?;
    s.sync()?;
    c.ok(reads(
        out.ptr,
        &data,
        "bytes through the graph's allocation",
    ));
    catches(&mut c, "byte pattern", reads(out.ptr, &pattern(N, 4), ""));
    drop(e);
    drop(g);
    A::trim(0)?;
    c.finish()
}

/// Every other GPU present reads, through the allocation node's access
/// descriptors, what the graph on device 0 wrote: its pointer attribute says
/// read-write from there, and its own kernel copies the bytes out.
fn memory_nodes_peer_access<A: Api>() -> TestResult {
    let gpu = init::<A>()?;
    let mut count = 0;
    cu!(cuDeviceGetCount(&mut count))?;
    let peers: Vec<i32> = (1..count).collect();
    for &d in &peers {
        let mut can = 0;
        cu!(cuDeviceCanAccessPeer(&mut can, cu_device(d)?, gpu.dev))?;
        ensure!(can == 1, "device {d} cannot access device 0's memory");
    }
    let s = CuStream::new()?;
    const N: usize = 4 * MIB;
    let data = pattern(N, 5);
    let input = DeviceBuf::with(&data)?;
    let (g, alloc, a, _) = alloc_copy_graph::<A>(&gpu, N, &peers, input.ptr, None, false)?;
    let mut c = Checks::new();
    let got = A::alloc_params(alloc)?;
    let access: Vec<(i32, bool)> = peers.iter().map(|&d| (d, true)).collect();
    c.ok(equal("access descriptors read back", &got.access, &access));
    catches(
        &mut c,
        "access list",
        equal("", &got.access, &access[1..].to_vec()),
    );
    let e = exec::<A>(g.0, false)?;
    launch::<A>(&e, &s)?;
    s.sync()?;
    for &d in &peers {
        let what = format!("device {d}");
        let peer = Gpu::new(d)?;
        A::current(&peer, d)?;
        let mut flags: u32 = 0;
        let r = cu!(cuPointerGetAttribute(
            (&mut flags as *mut u32).cast(),
            CU_POINTER_ATTRIBUTE_ACCESS_FLAGS,
            a
        ));
        c.ok(r.and_then(|()| {
            equal(
                &format!("{what}: access flags"),
                flags,
                CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE.0,
            )
        }));
        catches(
            &mut c,
            "access flags",
            equal("", flags, CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ.0),
        );
        let kernel = CopyKernel::load()?;
        let mine = DeviceBuf::new(N)?;
        let ps = CuStream::new()?;
        kernel.copy(mine.ptr, a, N, ps.0)?;
        ps.sync()?;
        c.ok(reads(
            mine.ptr,
            &data,
            &format!("{what} reads the graph's allocation"),
        ));
        catches(&mut c, "byte pattern", reads(mine.ptr, &pattern(N, 6), ""));
        drop((ps, mine, kernel));
    }
    A::current(&gpu, 0)?;
    check(
        A::free_async(a, s.0),
        "free the graph's allocation outside the graph",
    )?;
    s.sync()?;
    drop(e);
    drop(g);
    A::trim(0)?;
    c.finish()
}

/// A graph that allocates and does not free. Without AutoFreeOnLaunch a
/// relaunch while the allocation lives returns the documented
/// `INVALID_VALUE`; freed outside the graph on another stream (ordered by
/// events), it launches again; a second executable graph of a graph with
/// memory nodes is refused while the first exists; with AutoFreeOnLaunch
/// relaunches need no free.
fn auto_free_on_launch<A: Api>() -> TestResult {
    let gpu = init::<A>()?;
    let (s1, s2) = (CuStream::new()?, CuStream::new()?);
    let (e1, e2) = (CuEvent::new()?, CuEvent::new()?);
    const N: usize = MIB;
    let input = DeviceBuf::new(N)?;
    let out = DeviceBuf::new(N)?;
    let (g, _, a, _) = alloc_copy_graph::<A>(&gpu, N, &[], input.ptr, Some(out.ptr), false)?;
    let mut c = Checks::new();
    let round = |e: &Exec, seed: u32, c: &mut Checks| -> TestResult {
        let data = pattern(N, seed);
        write(input.ptr, &data)?;
        zero(out.ptr, N)?;
        launch::<A>(e, &s1)?;
        s1.sync()?;
        c.ok(reads(out.ptr, &data, &format!("launch {seed}")));
        catches(
            c,
            "byte pattern",
            reads(out.ptr, &pattern(N, seed + 50), ""),
        );
        Ok(())
    };
    // Freed on s2 after s1's launch, s1 waits for the free.
    let free_elsewhere = || -> TestResult {
        cu!(cuEventRecord(e1.0, s1.0))?;
        cu!(cuStreamWaitEvent(s2.0, e1.0, 0))?;
        check(A::free_async(a, s2.0), "free on another stream")?;
        cu!(cuEventRecord(e2.0, s2.0))?;
        cu!(cuStreamWaitEvent(s1.0, e2.0, 0))
    };
    {
        let plain = exec::<A>(g.0, false)?;
        round(&plain, 1, &mut c)?;
        let relaunch = A::launch(plain.0, s1.0);
        let what = format!("{}(exec, s) relaunched, its allocation unfreed", A::LAUNCH);
        c.code(relaunch, A::INVALID_VALUE, &what);
        catches(
            &mut c,
            "relaunch code",
            code("", relaunch, A::Code::SUCCESS),
        );
        let mut second = null_mut();
        let r = A::instantiate(&mut second, g.0, false);
        drop(Exec(if r == A::Code::SUCCESS {
            second
        } else {
            null_mut()
        }));
        // Documented as "an error" (cudaGraphInstantiate lists only
        // INVALID_VALUE). Measured "not supported" (801) through the runtime
        // and the driver, with 12.0's, 13.0's and 13.5's headers, linked and
        // loaded (H200, driver 580.159.04, docs/device-results.md run 46).
        let what = "a second executable graph of a graph with memory nodes";
        c.code(r, A::NOT_SUPPORTED, what);
        catches(
            &mut c,
            "second instantiation code",
            code("", r, A::INVALID_VALUE),
        );
        free_elsewhere()?;
        round(&plain, 2, &mut c)?;
        free_elsewhere()?;
        s1.sync()?;
        s2.sync()?;
    }
    let auto = exec::<A>(g.0, true)?;
    for seed in 3..6 {
        round(&auto, seed, &mut c)?;
    }
    free_elsewhere()?;
    s1.sync()?;
    drop(auto);
    drop(g);
    A::trim(0)?;
    c.finish()
}

/// The graph memory attributes and trim: a graph of 32 MiB raises the used
/// high mark and the reserved figure to at least 32 MiB; a high mark reset
/// to 0 reads back the current figure; a high mark set to another value,
/// or a current figure set, is refused and changes nothing; a device that
/// does not exist gets the documented `INVALID_DEVICE`; once the graph is
/// destroyed, the trim itself (the reserved figure read after the
/// destruction, then after the trim) gives back at least the 32 MiB.
fn attributes_and_trim<A: Api>() -> TestResult {
    let gpu = init::<A>()?;
    let s = CuStream::new()?;
    const N: usize = 32 * MIB;
    let n = N as u64;
    let input = DeviceBuf::new(N)?;
    A::trim(0)?;
    let before = footprint::<A>()?;
    println!("    {} before: {before:?}", A::NAME);
    let (g, _, _, _) = alloc_copy_graph::<A>(&gpu, N, &[], input.ptr, None, true)?;
    let e = exec::<A>(g.0, false)?;
    launch::<A>(&e, &s)?;
    s.sync()?;
    let after = footprint::<A>()?;
    println!("    {} after a launch: {after:?}", A::NAME);
    let mut c = Checks::new();
    c.ok(at_least("used high mark", after.used_high, n));
    catches(
        &mut c,
        "used high mark",
        at_least("", after.used_high, after.used_high + 1),
    );
    c.ok(at_least("reserved", after.reserved, n));
    catches(
        &mut c,
        "reserved figure",
        at_least("", after.reserved, after.reserved + 1),
    );
    c.ok(at_least(
        "reserved high mark",
        after.reserved_high,
        after.reserved,
    ));
    c.ok(at_least(
        "used high mark over used",
        after.used_high,
        after.used,
    ));

    for (high, current) in [
        (Attr::UsedHigh, Attr::UsedCurrent),
        (Attr::ReservedHigh, Attr::ReservedCurrent),
    ] {
        let what = format!("{} {high:?} reset to 0", A::NAME);
        check(A::set_attr(0, high, 0), &what)?;
        let (h, cur) = (A::get_attr(0, high)?, A::get_attr(0, current)?);
        c.ok(equal(&format!("{what}: reads back {current:?}"), h, cur));
        catches(&mut c, "reset high mark", equal("", h, cur + 1));
        // "can only be reset to zero", with no code documented: the call
        // is refused with the code for a bad argument (the reference's
        // lists name INVALID_VALUE and INVALID_DEVICE; the device is
        // valid) and leaves the figure as it was; nor can a current figure
        // be set.
        for (attr, value) in [(high, 1), (current, 0)] {
            let was = A::get_attr(0, attr)?;
            let r = A::set_attr(0, attr, value);
            let what = format!("{}(0, {attr:?}, {value})", A::SET_ATTR);
            c.code(r, A::INVALID_VALUE, &what);
            let now = A::get_attr(0, attr)?;
            c.ok(equal(&format!("{attr:?} after the refused set"), now, was));
            if attr == high {
                catches(&mut c, "unchanged figure", equal("", now, value));
            }
        }
    }
    // A device that does not exist: the documented code.
    let mut count = 0;
    cu!(cuDeviceGetCount(&mut count))?;
    let mut v = 0;
    let r = A::get_attr_code(count, Attr::UsedCurrent, &mut v);
    let what = format!("{}(<device count>, used current)", A::GET_ATTR);
    c.code(r, A::INVALID_DEVICE, &what);

    let (e, g) = (
        std::mem::ManuallyDrop::new(e),
        std::mem::ManuallyDrop::new(g),
    );
    check(A::exec_destroy(e.0), "executable graph destroy")?;
    check(A::graph_destroy(g.0), "graph destroy")?;
    cu!(cuCtxSynchronize())?;
    let reserved = A::get_attr(0, Attr::ReservedCurrent)?;
    let untrimmed = A::get_attr(0, Attr::ReservedCurrent)?;
    A::trim(0)?;
    let trimmed = A::get_attr(0, Attr::ReservedCurrent)?;
    println!(
        "    {}: reserved {} B with the graph, {reserved} B after its destruction, {trimmed} B after the trim",
        A::NAME,
        after.reserved
    );
    // The trim's own effect, measured apart from the graph's destruction:
    // the reserved figure read after the destruction (and a synchronise)
    // and again after the trim drops by at least the freed allocation's
    // size. A trim that does nothing leaves it where the destruction did.
    let dropped = reserved.saturating_sub(trimmed);
    c.ok(at_least("reserved figure dropped by the trim", dropped, n));
    catches(&mut c, "trimmed amount", at_least("", dropped, dropped + 1));
    // The wrong twin: the drop around no trim at all (the figure read
    // twice after the destruction) must be refused.
    catches(
        &mut c,
        "drop without a trim",
        at_least("", reserved.saturating_sub(untrimmed), n),
    );
    c.finish()
}

/// 10 000 replays of a graph that allocates, copies through and frees: the
/// allocation node's address and every graph memory figure are those of the
/// first launch throughout, the high mark never passes the first launch's,
/// and the bytes come through (checked every 1000th launch).
fn replays_10000<A: Api>() -> TestResult {
    let gpu = init::<A>()?;
    let s = CuStream::new()?;
    const N: usize = 64 * KIB;
    const REPLAYS: u32 = 10_000;
    let input = DeviceBuf::new(N)?;
    let out = DeviceBuf::new(N)?;
    let (g, alloc, a, _) = alloc_copy_graph::<A>(&gpu, N, &[], input.ptr, Some(out.ptr), true)?;
    let e = exec::<A>(g.0, false)?;
    A::trim(0)?;
    check(A::set_attr(0, Attr::UsedHigh, 0), "used high mark reset")?;
    check(
        A::set_attr(0, Attr::ReservedHigh, 0),
        "reserved high mark reset",
    )?;
    launch::<A>(&e, &s)?;
    s.sync()?;
    let first = footprint::<A>()?;
    println!("    {} after the first launch: {first:?}", A::NAME);
    let mut c = Checks::new();
    for i in 1..=REPLAYS {
        let sample = i % 1000 == 0;
        let data = sample.then(|| pattern(N, i / 1000));
        if let Some(data) = &data {
            s.sync()?;
            write(input.ptr, data)?;
        }
        launch::<A>(&e, &s)?;
        if let Some(data) = &data {
            s.sync()?;
            c.ok(reads(out.ptr, data, &format!("launch {i}")));
            let now = footprint::<A>()?;
            let flat = Footprint {
                used_high: first.used_high,
                reserved_high: first.reserved_high,
                ..now
            };
            c.ok(equal(&format!("launch {i}: current figures"), flat, first));
            c.ok(equal(
                &format!("launch {i}: high marks"),
                (now.used_high, now.reserved_high),
                (first.used_high, first.reserved_high),
            ));
            let grown = Footprint {
                used: first.used + 1,
                ..first
            };
            catches(&mut c, "used figure", equal("", flat, grown));
        }
    }
    s.sync()?;
    let dptr = A::alloc_params(alloc)?.dptr;
    c.ok(equal(
        "the allocation node's address after the replays",
        dptr,
        a,
    ));
    catches(&mut c, "address", equal("", dptr, a + 256));
    drop(e);
    drop(g);
    A::trim(0)?;
    c.finish()
}

twins! {
    capture_each_mode => rt_capture_each_mode_current_and_own_pool, drv_capture_each_mode_current_and_own_pool;
    capture_modes_unsafe_calls => rt_capture_modes_unsafe_calls, drv_capture_modes_unsafe_calls;
    memory_nodes_read_back => rt_memory_nodes_read_back, drv_memory_nodes_read_back;
    memory_nodes_peer_access => rt_memory_nodes_peer_access, drv_memory_nodes_peer_access;
    auto_free_on_launch => rt_auto_free_on_launch_and_free_elsewhere, drv_auto_free_on_launch_and_free_elsewhere;
    attributes_and_trim => rt_attributes_and_trim, drv_attributes_and_trim;
    replays_10000 => rt_replays_10000_stable, drv_replays_10000_stable;
}

// ---------------------------------------------------------------------------
// The generic node form, told apart by release
// ---------------------------------------------------------------------------

/// Where the driver is older than a form these headers use: the reason to
/// report the test ignored (`cudaErrorCallRequiresNewerDriver` and 801 are
/// what such a call returns), naming the form and both releases.
#[cfg(cuda_13020)]
fn needs_driver(form: &str, release: i32) -> Result<Option<String>, Failed> {
    let mut v = 0;
    cu!(cuDriverGetVersion(&mut v))?;
    Ok((v < release).then(|| {
        format!(
            "{form} needs a driver of CUDA {}.{} or newer; this one is {}.{}",
            release / 1000,
            release % 1000 / 10,
            v / 1000,
            v % 1000 / 10
        )
    }))
}

/// `cudaGraphAddNode` in the release's form: 12.2 without edge data, 12.3
/// to 12.9 also `cudaGraphAddNode_v2` with edge data, 13.0 the name with
/// edge data. An allocation node and a free node made so; their parameters
/// read back through the memory-node getters and, from 13.2,
/// `cudaGraphNodeGetParams`; bytes through the graph.
#[cfg(cuda_12020)]
fn rt_add_node_release_form() -> Result<Option<String>, Failed> {
    #[cfg(cuda_13020)]
    if let Some(why) = needs_driver("cudaGraphNodeGetParams (13.2)", 13020)? {
        return Ok(Some(why));
    }
    let gpu = init::<Rt>()?;
    let s = CuStream::new()?;
    const N: usize = MIB;
    let data = pattern(N, 7);
    let input = DeviceBuf::with(&data)?;
    let out = DeviceBuf::new(N)?;
    let g = Rt::graph()?;
    // SAFETY: plain old data, then the fields written.
    let mut p: cudaGraphNodeParams = unsafe { core::mem::zeroed() };
    p.type_ = cudaGraphNodeTypeMemAlloc;
    let mut alloc: cudaMemAllocNodeParamsV2 = unsafe { core::mem::zeroed() };
    alloc.poolProps = rt_pool_props();
    alloc.bytesize = N;
    p.alloc = alloc;
    let mut node = null_mut();
    #[cfg(cuda_13000)]
    rt!(cudaGraphAddNode(&mut node, g.0, null(), null(), 0, &mut p))?;
    #[cfg(not(cuda_13000))]
    rt!(cudaGraphAddNode(&mut node, g.0, null(), 0, &mut p))?;
    // SAFETY: the union member the call filled in (`type_` says which).
    let a = unsafe { p.alloc.dptr } as u64;
    let mut c = Checks::new();
    let got = Rt::alloc_params(node)?;
    c.ok(equal(
        "(size, address) read back",
        (got.bytesize, got.dptr),
        (N, a),
    ));
    catches(&mut c, "size", equal("", got.bytesize, N * 2));
    #[cfg(cuda_13020)]
    {
        // SAFETY: plain old data, filled in by the call.
        let mut q: cudaGraphNodeParams = unsafe { core::mem::zeroed() };
        rt!(cudaGraphNodeGetParams(node, &mut q))?;
        c.ok(equal(
            "cudaGraphNodeGetParams type",
            q.type_,
            cudaGraphNodeTypeMemAlloc,
        ));
        // SAFETY: `type_` was just checked to be an allocation node's.
        let (size, dptr) = unsafe { (q.alloc.bytesize, q.alloc.dptr as u64) };
        c.ok(equal(
            "cudaGraphNodeGetParams (size, address)",
            (size, dptr),
            (N, a),
        ));
        catches(&mut c, "address", equal("", dptr, a + 1));
    }
    let c1 = Rt::add_copy_node(g.0, &[node], a, input.ptr, N, gpu.ctx)?;
    let c2 = Rt::add_copy_node(g.0, &[c1], out.ptr, a, N, gpu.ctx)?;
    // SAFETY: as above.
    let mut f: cudaGraphNodeParams = unsafe { core::mem::zeroed() };
    f.type_ = cudaGraphNodeTypeMemFree;
    f.free = cudaMemFreeNodeParams { dptr: vptr(a) };
    let mut free = null_mut();
    #[cfg(cuda_13000)]
    rt!(cudaGraphAddNode(&mut free, g.0, &c2, null(), 1, &mut f))?;
    #[cfg(all(cuda_12030, not(cuda_13000)))]
    rt!(cudaGraphAddNode_v2(&mut free, g.0, &c2, null(), 1, &mut f))?;
    #[cfg(not(cuda_12030))]
    rt!(cudaGraphAddNode(&mut free, g.0, &c2, 1, &mut f))?;
    let freed = Rt::free_node_dptr(free)?;
    c.ok(equal("free node address", freed, a));
    let e = exec::<Rt>(g.0, false)?;
    launch::<Rt>(&e, &s)?;
    s.sync()?;
    c.ok(reads(out.ptr, &data, "bytes through the generic nodes"));
    catches(&mut c, "byte pattern", reads(out.ptr, &pattern(N, 8), ""));
    drop(e);
    drop(g);
    Rt::trim(0)?;
    c.finish()?;
    Ok(None)
}

/// `cuGraphAddNode` in the release's form: 12.2 without edge data, 12.3 to
/// 12.9 also `cuGraphAddNode_v2` with it, from 13.0 the name mapped to
/// `cuGraphAddNode_v2`; read back as for the runtime (`cuGraphNodeGetParams`
/// from 13.2).
#[cfg(cuda_12020)]
fn drv_add_node_release_form() -> Result<Option<String>, Failed> {
    // cuGraphAddNode's ABI version in these headers (`PFN_cuGraphAddNode_v13040`
    // from 13.4), then cuGraphNodeGetParams (13.2).
    #[cfg(cuda_13040)]
    if let Some(why) = needs_driver("cuGraphAddNode (its 13.4 form)", 13040)? {
        return Ok(Some(why));
    }
    #[cfg(cuda_13020)]
    if let Some(why) = needs_driver("cuGraphNodeGetParams (13.2)", 13020)? {
        return Ok(Some(why));
    }
    let gpu = init::<Drv>()?;
    let s = CuStream::new()?;
    const N: usize = MIB;
    let data = pattern(N, 9);
    let input = DeviceBuf::with(&data)?;
    let out = DeviceBuf::new(N)?;
    let g = Drv::graph()?;
    // SAFETY: plain old data, then the fields written.
    let mut p: CUgraphNodeParams = unsafe { core::mem::zeroed() };
    p.type_ = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
    let mut alloc: CUDA_MEM_ALLOC_NODE_PARAMS_v2 = unsafe { core::mem::zeroed() };
    alloc.poolProps = cu_pool_props();
    alloc.bytesize = N;
    p.alloc = alloc;
    let mut node = null_mut();
    #[cfg(cuda_13000)]
    cu!(cuGraphAddNode(&mut node, g.0, null(), null(), 0, &mut p))?;
    #[cfg(not(cuda_13000))]
    cu!(cuGraphAddNode(&mut node, g.0, null(), 0, &mut p))?;
    // SAFETY: the union member the call filled in.
    let a = unsafe { p.alloc.dptr };
    let mut c = Checks::new();
    let got = Drv::alloc_params(node)?;
    c.ok(equal(
        "(size, address) read back",
        (got.bytesize, got.dptr),
        (N, a),
    ));
    catches(&mut c, "size", equal("", got.bytesize, N * 2));
    #[cfg(cuda_13020)]
    {
        // SAFETY: plain old data, filled in by the call.
        let mut q: CUgraphNodeParams = unsafe { core::mem::zeroed() };
        cu!(cuGraphNodeGetParams(node, &mut q))?;
        c.ok(equal(
            "cuGraphNodeGetParams type",
            q.type_,
            CU_GRAPH_NODE_TYPE_MEM_ALLOC,
        ));
        // SAFETY: `type_` was just checked.
        let (size, dptr) = unsafe { (q.alloc.bytesize, q.alloc.dptr) };
        c.ok(equal(
            "cuGraphNodeGetParams (size, address)",
            (size, dptr),
            (N, a),
        ));
        catches(&mut c, "address", equal("", dptr, a + 1));
    }
    let c1 = Drv::add_copy_node(g.0, &[node], a, input.ptr, N, gpu.ctx)?;
    let c2 = Drv::add_copy_node(g.0, &[c1], out.ptr, a, N, gpu.ctx)?;
    // SAFETY: as above.
    let mut f: CUgraphNodeParams = unsafe { core::mem::zeroed() };
    f.type_ = CU_GRAPH_NODE_TYPE_MEM_FREE;
    f.free = CUDA_MEM_FREE_NODE_PARAMS { dptr: a };
    let mut free = null_mut();
    #[cfg(cuda_13000)]
    cu!(cuGraphAddNode(&mut free, g.0, &c2, null(), 1, &mut f))?;
    #[cfg(all(cuda_12030, not(cuda_13000)))]
    cu!(cuGraphAddNode_v2(&mut free, g.0, &c2, null(), 1, &mut f))?;
    #[cfg(not(cuda_12030))]
    cu!(cuGraphAddNode(&mut free, g.0, &c2, 1, &mut f))?;
    let freed = Drv::free_node_dptr(free)?;
    c.ok(equal("free node address", freed, a));
    let e = exec::<Drv>(g.0, false)?;
    launch::<Drv>(&e, &s)?;
    s.sync()?;
    c.ok(reads(out.ptr, &data, "bytes through the generic nodes"));
    catches(&mut c, "byte pattern", reads(out.ptr, &pattern(N, 10), ""));
    drop(e);
    drop(g);
    Drv::trim(0)?;
    c.finish()?;
    Ok(None)
}

fn main() {
    common::main(
        device_tests![
            rt_capture_each_mode_current_and_own_pool,
            rt_capture_modes_unsafe_calls,
            rt_memory_nodes_read_back,
            rt_memory_nodes_peer_access @ 2,
            rt_auto_free_on_launch_and_free_elsewhere,
            rt_attributes_and_trim,
            rt_replays_10000_stable,
            rt_add_node_release_form if cfg(cuda_12020) else "cudaGraphAddNode, cudaGraphNodeParams: not in these headers (added in 12.2)",
            drv_capture_each_mode_current_and_own_pool,
            drv_capture_modes_unsafe_calls,
            drv_memory_nodes_read_back,
            drv_memory_nodes_peer_access @ 2,
            drv_auto_free_on_launch_and_free_elsewhere,
            drv_attributes_and_trim,
            drv_replays_10000_stable,
            drv_add_node_release_form if cfg(cuda_12020) else "cuGraphAddNode, CUgraphNodeParams: not in these headers (added in 12.2)",
        ],
        &[],
    );
}
