//! Stream-ordered allocation inside a stream capture (runtime API:
//! `cudaStreamBeginCapture`, `cudaMallocAsync`, `cudaMallocFromPoolAsync`,
//! `cudaFreeAsync`, `cudaStreamEndCapture`, `cudaGraphInstantiate`,
//! `cudaGraphLaunch`).
//!
//! A [`Capture`] holds its [`Stream`] mutably: while it records, nothing
//! else can enqueue on that stream, allocate from it or free to it (a
//! [`PoolBuffer`] of the stream cannot even exist),
//! and nothing can wait for it (`cudaStreamSynchronize` during a capture
//! fails and ends the capture). A [`GraphBuffer`], allocated in the capture,
//! is owned by the graph being recorded: its allocation and its free are
//! nodes of the graph (`cudaMallocAsync` and `cudaFreeAsync` on the capturing
//! stream), and it borrows the capture, so it cannot outlive the recording
//! nor be freed with the stream API:
//!
//! ```compile_fail,E0505
//! # use cuda_mem_wrap::{graph::CaptureMode, pool::Stream, Error};
//! # fn f() -> Result<(), Error> {
//! let mut stream = Stream::new()?;
//! let capture = stream.begin_capture(CaptureMode::Global)?;
//! let buffer = capture.alloc(1 << 20)?;
//! let graph = capture.end()?; // error[E0505]: cannot move out of `capture` because it is borrowed
//! drop(buffer);
//! # Ok(()) }
//! ```
//!
//! ```compile_fail,E0502
//! # use cuda_mem_wrap::{graph::CaptureMode, pool::{Pool, Stream}, Error};
//! # fn f() -> Result<(), Error> {
//! let pool = Pool::new(0)?;
//! let mut stream = Stream::new()?;
//! let capture = stream.begin_capture(CaptureMode::Global)?;
//! // error[E0502]: the stream is mutably borrowed by the capture
//! let outside = pool.alloc_async(1 << 20, &stream)?;
//! # drop(capture);
//! # Ok(()) }
//! ```
//!
//! The same, in order (the buffer freed in the capture, then the capture
//! ended), compiles:
//!
//! ```no_run
//! # use cuda_mem_wrap::{graph::CaptureMode, pool::Stream, Error};
//! # fn f() -> Result<(), Error> {
//! let mut stream = Stream::new()?;
//! let capture = stream.begin_capture(CaptureMode::Global)?;
//! let mut buffer = capture.alloc(1 << 20)?;
//! buffer.memset(0x5a)?;
//! buffer.free()?;
//! let graph = capture.end()?;
//! # Ok(()) }
//! ```

use crate::pool::{Pool, PoolBuffer, Stream, StreamAlloc};
use crate::Error;
use core::ffi::c_void;
use core::marker::PhantomData;
use cuda_mem_sys as sys;

/// Which other threads' calls a capture forbids (`cudaStreamCaptureMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureMode {
    Global,
    ThreadLocal,
    Relaxed,
}

impl CaptureMode {
    fn raw(self) -> sys::cudaStreamCaptureMode {
        match self {
            CaptureMode::Global => sys::cudaStreamCaptureModeGlobal,
            CaptureMode::ThreadLocal => sys::cudaStreamCaptureModeThreadLocal,
            CaptureMode::Relaxed => sys::cudaStreamCaptureModeRelaxed,
        }
    }
}

impl Stream {
    /// Starts recording the stream's work into a graph
    /// (`cudaStreamBeginCapture`). The stream is the capture's until
    /// [`Capture::end`] (or the capture's drop, which ends it and discards
    /// the graph).
    pub fn begin_capture<'d>(&mut self, mode: CaptureMode) -> Result<Capture<'_, 'd>, Error> {
        // SAFETY: our stream; the capture is ended by `end` or `Drop`.
        let r = unsafe { sys::cudaStreamBeginCapture(self.raw(), mode.raw()) };
        Error::runtime("cudaStreamBeginCapture", r, ())?;
        Ok(Capture {
            stream: self.raw(),
            _borrows: PhantomData,
        })
    }
}

/// A stream being recorded into a graph. `'s` is the stream's borrow, which
/// ends with the capture; `'d` is the borrow of everything the recorded work
/// refers to (a pool allocated from, the destinations of
/// [`GraphBuffer::copy_into`]), which the [`Graph`] and its [`GraphExec`]
/// carry on.
#[derive(Debug)]
pub struct Capture<'s, 'd> {
    stream: sys::cudaStream_t,
    _borrows: PhantomData<(&'s mut Stream, &'d ())>,
}

impl<'d> Capture<'_, 'd> {
    /// `size` bytes allocated in the graph (`cudaMallocAsync` on the
    /// capturing stream: an allocation node), from the device's default pool.
    pub fn alloc(&self, size: usize) -> Result<GraphBuffer<'_, 'd>, Error> {
        let mut ptr: *mut c_void = core::ptr::null_mut();
        // SAFETY: a valid out-pointer, our capturing stream; freed in the
        // capture by the buffer's `Drop` or `free`.
        let r = unsafe { sys::cudaMallocAsync(&mut ptr, size, self.stream) };
        self.buffer("cudaMallocAsync", r, ptr, size)
    }

    /// `size` bytes allocated in the graph from `pool`
    /// (`cudaMallocFromPoolAsync` on the capturing stream). The pool is
    /// borrowed for as long as the capture and its graph.
    pub fn alloc_from(&self, pool: &'d Pool, size: usize) -> Result<GraphBuffer<'_, 'd>, Error> {
        let mut ptr: *mut c_void = core::ptr::null_mut();
        // SAFETY: as in `alloc`; the pool outlives the graph ('d).
        let r = unsafe { sys::cudaMallocFromPoolAsync(&mut ptr, size, pool.raw(), self.stream) };
        self.buffer("cudaMallocFromPoolAsync", r, ptr, size)
    }

    fn buffer(
        &self,
        call: &'static str,
        r: sys::cudaError_t,
        ptr: *mut c_void,
        size: usize,
    ) -> Result<GraphBuffer<'_, 'd>, Error> {
        Error::runtime(call, r, ())?;
        Ok(GraphBuffer {
            alloc: StreamAlloc {
                ptr,
                size,
                stream: self.stream,
            },
            _capture: PhantomData,
        })
    }

    /// Ends the recording (`cudaStreamEndCapture`): the graph of what was
    /// recorded, which keeps borrowed what the recorded work refers to. The
    /// stream is free again (to launch the graph in, for one).
    pub fn end(self) -> Result<Graph<'d>, Error> {
        let stream = self.stream;
        core::mem::forget(self);
        let mut graph = core::ptr::null_mut();
        // SAFETY: our capturing stream, ended once (`self` is gone).
        let r = unsafe { sys::cudaStreamEndCapture(stream, &mut graph) };
        Error::runtime(
            "cudaStreamEndCapture",
            r,
            Graph {
                raw: graph,
                _borrows: PhantomData,
            },
        )
    }
}

impl Drop for Capture<'_, '_> {
    fn drop(&mut self) {
        // Ends the capture so the stream is usable again; the graph is discarded.
        let mut graph = core::ptr::null_mut();
        // SAFETY: our capturing stream, ended once.
        unsafe {
            if sys::cudaStreamEndCapture(self.stream, &mut graph) == sys::cudaSuccess
                && !graph.is_null()
            {
                sys::cudaGraphDestroy(graph);
            }
        }
    }
}

/// Memory owned by the graph a [`Capture`] records: allocated by one of its
/// nodes and freed by another (its `Drop`, or [`GraphBuffer::free`], records
/// `cudaFreeAsync` on the capturing stream). Its address is the one every
/// launch of the graph uses; the memory holds anything only while a launch
/// runs.
#[derive(Debug)]
pub struct GraphBuffer<'c, 'd> {
    alloc: StreamAlloc,
    _capture: PhantomData<(&'c (), &'d ())>,
}

impl<'d> GraphBuffer<'_, 'd> {
    /// The address the graph's launches use.
    pub fn ptr(&self) -> *mut c_void {
        self.alloc.ptr
    }

    pub fn size(&self) -> usize {
        self.alloc.size
    }

    /// Records setting every byte to `value` (`cudaMemsetAsync`).
    pub fn memset(&mut self, value: u8) -> Result<(), Error> {
        self.alloc.memset(value)
    }

    /// Records copying the whole buffer into `dst` (`cudaMemcpyAsync`,
    /// device to device), which the graph then borrows. `cudaErrorInvalidValue`,
    /// before any call, where it would not fit.
    pub fn copy_into(&self, dst: &'d PoolBuffer<'_>) -> Result<(), Error> {
        let a = &self.alloc;
        if dst.size() < a.size {
            return Err(Error::Runtime {
                call: "cudaMemcpyAsync",
                code: sys::cudaErrorInvalidValue,
            });
        }
        let kind = sys::cudaMemcpyDeviceToDevice;
        // SAFETY: both device allocations, `a.size` bytes inside each; the
        // destination outlives the graph ('d).
        let r = unsafe { sys::cudaMemcpyAsync(dst.ptr(), a.ptr, a.size, kind, a.stream) };
        Error::runtime("cudaMemcpyAsync", r, ())
    }

    /// Records the free now (`cudaFreeAsync`), with the runtime's code.
    pub fn free(self) -> Result<(), Error> {
        self.alloc.free()
    }
}

/// What a node of a graph is, for the kinds this crate records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// A memory allocation node (`cudaGraphNodeTypeMemAlloc`), with the
    /// address it allocates.
    MemAlloc {
        ptr: *mut c_void,
        size: usize,
    },
    /// A memory free node (`cudaGraphNodeTypeMemFree`).
    MemFree,
    Memset,
    Memcpy,
    /// Any other kind, as the runtime numbers it.
    Other(u32),
}

/// A recorded graph (`cudaGraph_t`), destroyed on drop (`cudaGraphDestroy`).
#[derive(Debug)]
pub struct Graph<'d> {
    raw: sys::cudaGraph_t,
    _borrows: PhantomData<&'d ()>,
}

impl Graph<'_> {
    pub fn raw(&self) -> sys::cudaGraph_t {
        self.raw
    }

    /// The graph's nodes, in the runtime's order (`cudaGraphGetNodes`,
    /// `cudaGraphNodeGetType`, `cudaGraphMemAllocNodeGetParams`).
    pub fn nodes(&self) -> Result<Vec<NodeKind>, Error> {
        let mut n = 0usize;
        // SAFETY: a null array asks for the count.
        let r = unsafe { sys::cudaGraphGetNodes(self.raw, core::ptr::null_mut(), &mut n) };
        Error::runtime("cudaGraphGetNodes", r, ())?;
        let mut nodes = vec![core::ptr::null_mut(); n];
        // SAFETY: room for `n` nodes.
        let r = unsafe { sys::cudaGraphGetNodes(self.raw, nodes.as_mut_ptr(), &mut n) };
        Error::runtime("cudaGraphGetNodes", r, ())?;
        nodes.truncate(n);
        nodes
            .into_iter()
            .map(|node| {
                let mut t = sys::cudaGraphNodeType(0);
                // SAFETY: a node of this graph; a valid out-pointer.
                let r = unsafe { sys::cudaGraphNodeGetType(node, &mut t) };
                Error::runtime("cudaGraphNodeGetType", r, ())?;
                Ok(match t {
                    sys::cudaGraphNodeTypeMemAlloc => {
                        let mut p = sys::cudaMemAllocNodeParams::default();
                        // SAFETY: an allocation node; a valid out-pointer.
                        let r = unsafe { sys::cudaGraphMemAllocNodeGetParams(node, &mut p) };
                        Error::runtime("cudaGraphMemAllocNodeGetParams", r, ())?;
                        NodeKind::MemAlloc {
                            ptr: p.dptr,
                            size: p.bytesize,
                        }
                    }
                    sys::cudaGraphNodeTypeMemFree => NodeKind::MemFree,
                    sys::cudaGraphNodeTypeMemset => NodeKind::Memset,
                    sys::cudaGraphNodeTypeMemcpy => NodeKind::Memcpy,
                    other => NodeKind::Other(other.0),
                })
            })
            .collect()
    }

    /// An executable graph (`cudaGraphInstantiate`, no flags).
    pub fn instantiate(&self) -> Result<GraphExec<'_>, Error> {
        let mut exec = core::ptr::null_mut();
        // SAFETY: our graph, a valid out-pointer; destroyed by `Drop`.
        let r = unsafe { sys::cudaGraphInstantiate(&mut exec, self.raw, 0) };
        Error::runtime(
            "cudaGraphInstantiate",
            r,
            GraphExec {
                raw: exec,
                _graph: PhantomData,
            },
        )
    }
}

impl Drop for Graph<'_> {
    fn drop(&mut self) {
        // SAFETY: ended from a capture, destroyed once; no GraphExec borrows it.
        unsafe {
            sys::cudaGraphDestroy(self.raw);
        }
    }
}

/// An instantiated graph, destroyed on drop (`cudaGraphExecDestroy`).
#[derive(Debug)]
pub struct GraphExec<'g> {
    raw: sys::cudaGraphExec_t,
    _graph: PhantomData<&'g ()>,
}

impl GraphExec<'_> {
    /// Launches the graph in `stream`'s order (`cudaGraphLaunch`).
    pub fn launch(&self, stream: &Stream) -> Result<(), Error> {
        // SAFETY: our executable graph and a stream of ours; what it refers
        // to is borrowed for the graph's lifetime.
        let r = unsafe { sys::cudaGraphLaunch(self.raw, stream.raw()) };
        Error::runtime("cudaGraphLaunch", r, ())
    }
}

impl Drop for GraphExec<'_> {
    fn drop(&mut self) {
        // SAFETY: instantiated once, destroyed once. The runtime waits for
        // its launches before releasing it.
        unsafe {
            sys::cudaGraphExecDestroy(self.raw);
        }
    }
}
