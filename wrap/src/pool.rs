//! A stream-ordered memory pool (runtime API: `cudaMemPoolCreate`,
//! `cudaMallocFromPoolAsync`, `cudaFreeAsync`, `cudaMemPoolDestroy`).
//!
//! A [`PoolBuffer`] borrows its [`Pool`] and its [`Stream`]: it is freed in
//! that stream's order on drop (or by [`PoolBuffer::free`]), before the pool
//! is destroyed and the stream with it.

use crate::{location, Error};
use core::ffi::c_void;
use core::marker::PhantomData;
use cuda_mem_sys as sys;

/// A runtime stream (`cudaStreamCreateWithFlags`, non-blocking), destroyed
/// on drop (`cudaStreamDestroy`).
#[derive(Debug)]
pub struct Stream {
    raw: sys::cudaStream_t,
}

impl Stream {
    pub fn new() -> Result<Stream, Error> {
        let mut raw = core::ptr::null_mut();
        // SAFETY: a valid out-pointer; destroyed by `Drop`.
        let r = unsafe { sys::cudaStreamCreateWithFlags(&mut raw, sys::cudaStreamNonBlocking) };
        Error::runtime("cudaStreamCreateWithFlags", r, Stream { raw })
    }

    pub fn raw(&self) -> sys::cudaStream_t {
        self.raw
    }

    /// Waits for the stream's work (`cudaStreamSynchronize`).
    pub fn synchronize(&self) -> Result<(), Error> {
        // SAFETY: a stream of ours.
        let r = unsafe { sys::cudaStreamSynchronize(self.raw) };
        Error::runtime("cudaStreamSynchronize", r, ())
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once (its pending work completes).
        unsafe {
            sys::cudaStreamDestroy(self.raw);
        }
    }
}

/// A memory pool of pinned memory on one device, destroyed on drop
/// (`cudaMemPoolDestroy`).
#[derive(Debug)]
pub struct Pool {
    raw: sys::cudaMemPool_t,
}

impl Pool {
    /// A pool on device `device`, of the system's default maximum size.
    pub fn new(device: i32) -> Result<Pool, Error> {
        Pool::create(device, 0)
    }

    /// A pool on device `device` that holds at most `max_size` bytes
    /// (`cudaMemPoolProps::maxSize`, in the headers from CUDA 12.2: this
    /// function exists only where cuda-mem-sys declares 12.2 or newer).
    #[cfg(cuda_12020)]
    pub fn with_max_size(device: i32, max_size: usize) -> Result<Pool, Error> {
        Pool::create(device, max_size)
    }

    fn create(device: i32, max_size: usize) -> Result<Pool, Error> {
        #[cfg(not(cuda_12020))]
        let _ = max_size;
        let props = sys::cudaMemPoolProps {
            allocType: sys::cudaMemAllocationTypePinned,
            handleTypes: sys::cudaMemHandleTypeNone,
            location: location::runtime_device(device),
            #[cfg(cuda_12020)]
            maxSize: max_size,
            ..Default::default()
        };
        let mut raw = core::ptr::null_mut();
        // SAFETY: valid pointers; destroyed by `Drop`.
        let r = unsafe { sys::cudaMemPoolCreate(&mut raw, &props) };
        Error::runtime("cudaMemPoolCreate", r, Pool { raw })
    }

    pub fn raw(&self) -> sys::cudaMemPool_t {
        self.raw
    }

    /// `size` bytes from the pool, allocated in `stream`'s order
    /// (`cudaMallocFromPoolAsync`).
    pub fn alloc_async<'a>(
        &'a self,
        size: usize,
        stream: &'a Stream,
    ) -> Result<PoolBuffer<'a>, Error> {
        let mut ptr: *mut c_void = core::ptr::null_mut();
        // SAFETY: a valid out-pointer, our pool and stream; freed by `Drop`.
        let r = unsafe { sys::cudaMallocFromPoolAsync(&mut ptr, size, self.raw, stream.raw) };
        Error::runtime("cudaMallocFromPoolAsync", r, ())?;
        Ok(PoolBuffer {
            alloc: StreamAlloc {
                ptr,
                size,
                stream: stream.raw,
            },
            _borrows: PhantomData,
        })
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // SAFETY: created in `create`, destroyed once; every buffer borrowing
        // it is gone (their frees may still be pending: the runtime then
        // releases the pool once they complete).
        unsafe {
            sys::cudaMemPoolDestroy(self.raw);
        }
    }
}

/// Memory from a [`Pool`], used and freed in the order of one [`Stream`].
#[derive(Debug)]
pub struct PoolBuffer<'a> {
    alloc: StreamAlloc,
    _borrows: PhantomData<&'a Pool>,
}

/// A stream-ordered allocation: `size` bytes at `ptr`, set and freed in
/// `stream`'s order (a capturing stream's: recorded in its graph). Freed on
/// drop (`cudaFreeAsync`), or by [`StreamAlloc::free`]. What it is allocated
/// from and in outlives it (its owner's borrows).
#[derive(Debug)]
pub(crate) struct StreamAlloc {
    pub(crate) ptr: *mut c_void,
    pub(crate) size: usize,
    pub(crate) stream: sys::cudaStream_t,
}

impl StreamAlloc {
    /// Sets every byte to `value` (`cudaMemsetAsync`).
    pub(crate) fn memset(&mut self, value: u8) -> Result<(), Error> {
        // SAFETY: our allocation, its whole size, in its stream.
        let r = unsafe { sys::cudaMemsetAsync(self.ptr, value.into(), self.size, self.stream) };
        Error::runtime("cudaMemsetAsync", r, ())
    }

    /// Frees now, in the stream's order, with the runtime's code (`cudaFreeAsync`).
    pub(crate) fn free(self) -> Result<(), Error> {
        let (ptr, stream) = (self.ptr, self.stream);
        core::mem::forget(self);
        // SAFETY: allocated in this stream, freed once, in it.
        Error::runtime(
            "cudaFreeAsync",
            unsafe { sys::cudaFreeAsync(ptr, stream) },
            (),
        )
    }
}

impl Drop for StreamAlloc {
    fn drop(&mut self) {
        // SAFETY: allocated in this stream, freed once, in it (the stream
        // outlives the allocation).
        unsafe {
            sys::cudaFreeAsync(self.ptr, self.stream);
        }
    }
}

impl PoolBuffer<'_> {
    pub fn ptr(&self) -> *mut c_void {
        self.alloc.ptr
    }

    pub fn size(&self) -> usize {
        self.alloc.size
    }

    /// Sets every byte to `value`, in the stream's order (`cudaMemsetAsync`).
    pub fn memset_async(&mut self, value: u8) -> Result<(), Error> {
        self.alloc.memset(value)
    }

    /// Copies `data` in at `offset`, in the stream's order, and waits for it
    /// (`cudaMemcpyAsync`, `cudaStreamSynchronize`). `cudaErrorInvalidValue`
    /// where it would not fit.
    pub fn copy_from_host(&mut self, offset: usize, data: &[u8]) -> Result<(), Error> {
        let dst = self.at(offset, data.len(), "cudaMemcpyAsync")?;
        let kind = sys::cudaMemcpyHostToDevice;
        // SAFETY: inside our allocation; `data` outlives the copy (waited for).
        let r = unsafe {
            sys::cudaMemcpyAsync(
                dst,
                data.as_ptr().cast(),
                data.len(),
                kind,
                self.alloc.stream,
            )
        };
        Error::runtime("cudaMemcpyAsync", r, ())?;
        self.wait()
    }

    /// Copies from `offset` into `out`, in the stream's order, and waits for
    /// it. `cudaErrorInvalidValue` where it would not fit.
    pub fn copy_to_host(&self, offset: usize, out: &mut [u8]) -> Result<(), Error> {
        let src = self.at(offset, out.len(), "cudaMemcpyAsync")?;
        let kind = sys::cudaMemcpyDeviceToHost;
        // SAFETY: inside our allocation; `out` outlives the copy (waited for).
        let r = unsafe {
            sys::cudaMemcpyAsync(
                out.as_mut_ptr().cast(),
                src,
                out.len(),
                kind,
                self.alloc.stream,
            )
        };
        Error::runtime("cudaMemcpyAsync", r, ())?;
        self.wait()
    }

    /// Frees now, in the stream's order, with the runtime's code (`cudaFreeAsync`).
    pub fn free(self) -> Result<(), Error> {
        self.alloc.free()
    }

    /// The address of `[offset, offset + len)`, if it lies inside.
    fn at(&self, offset: usize, len: usize, call: &'static str) -> Result<*mut c_void, Error> {
        match offset.checked_add(len) {
            Some(end) if end <= self.alloc.size => {
                Ok(self.alloc.ptr.cast::<u8>().wrapping_add(offset).cast())
            }
            _ => Err(Error::Runtime {
                call,
                code: sys::cudaErrorInvalidValue,
            }),
        }
    }

    fn wait(&self) -> Result<(), Error> {
        // SAFETY: the stream outlives the buffer.
        let r = unsafe { sys::cudaStreamSynchronize(self.alloc.stream) };
        Error::runtime("cudaStreamSynchronize", r, ())
    }
}
