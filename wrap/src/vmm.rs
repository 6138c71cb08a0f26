//! Virtual memory management: reserve an address range, create physical
//! memory, map it into the range, set access, copy bytes, then unmap,
//! release and free (`cuMemAddressReserve`, `cuMemCreate`, `cuMemMap`,
//! `cuMemSetAccess`, `cuMemUnmap`, `cuMemRelease`, `cuMemAddressFree`).
//!
//! The borrows keep the order: a [`Mapping`] borrows its [`Reservation`] and
//! its [`PhysicalMemory`], which borrow the [`Context`]; each is undone on
//! drop, or by a method taking it by value that returns the call's code.
//!
//! Two things the driver would accept are refused here with
//! `CUDA_ERROR_INVALID_VALUE`, because a safe API cannot allow them: a
//! mapping that does not lie inside its reservation (the driver maps across
//! adjacent reservations, which may be another [`Reservation`]'s), and a
//! copy outside a mapping or into one without the access it needs.

use crate::{location, Context, Error};
use core::marker::PhantomData;
use cuda_mem_sys as sys;

/// The error a refused argument gives: the documented code for an invalid
/// value, under the call it stands for.
fn invalid(call: &'static str) -> Error {
    Error::Driver {
        call,
        code: sys::CUDA_ERROR_INVALID_VALUE,
    }
}

/// Pinned device memory on `ctx`'s device, no shareable handle.
fn properties(ctx: &Context) -> sys::CUmemAllocationProp {
    sys::CUmemAllocationProp {
        type_: sys::CU_MEM_ALLOCATION_TYPE_PINNED,
        location: location::device(ctx.device()),
        requestedHandleTypes: sys::CU_MEM_HANDLE_TYPE_NONE,
        ..Default::default()
    }
}

/// A device attribute of `ctx`'s device (`cuDeviceGetAttribute`).
fn attribute(ctx: &Context, attr: sys::CUdevice_attribute) -> Result<i32, Error> {
    let mut v = 0;
    // SAFETY: a valid out-pointer and device.
    let r = unsafe { sys::cuDeviceGetAttribute(&mut v, attr, ctx.device()) };
    Error::driver("cuDeviceGetAttribute", r, v)
}

/// Whether `ctx`'s device can export memory as a DMA-BUF
/// (`CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED`) and its VMM memory can be
/// created for GPUDirect RDMA
/// (`CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED`): what
/// [`PhysicalMemory::new_rdma`] and [`Mapping::export_dma_buf`] need.
pub fn dma_buf_supported(ctx: &Context) -> Result<bool, Error> {
    Ok(
        attribute(ctx, sys::CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)? == 1
            && attribute(
                ctx,
                sys::CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
            )? == 1,
    )
}

/// The minimum granularity of [`PhysicalMemory`] on `ctx`'s device: sizes,
/// offsets and reservations are multiples of it.
pub fn granularity(ctx: &Context) -> Result<usize, Error> {
    let prop = properties(ctx);
    let mut g = 0usize;
    // SAFETY: valid pointers.
    let r = unsafe {
        sys::cuMemGetAllocationGranularity(&mut g, &prop, sys::CU_MEM_ALLOC_GRANULARITY_MINIMUM)
    };
    Error::driver("cuMemGetAllocationGranularity", r, g)
}

/// Physical device memory (`cuMemCreate`), released on drop (`cuMemRelease`).
#[derive(Debug)]
pub struct PhysicalMemory<'c> {
    handle: sys::CUmemGenericAllocationHandle,
    size: usize,
    _ctx: PhantomData<&'c Context>,
}

impl<'c> PhysicalMemory<'c> {
    /// `size` bytes (a multiple of [`granularity`]) on `ctx`'s device.
    pub fn new(ctx: &'c Context, size: usize) -> Result<Self, Error> {
        Self::create(properties(ctx), size)
    }

    /// `size` bytes that GPUDirect RDMA may reach
    /// (`allocFlags.gpuDirectRDMACapable`): what a DMA-BUF export of VMM
    /// memory needs ([`dma_buf_supported`]).
    pub fn new_rdma(ctx: &'c Context, size: usize) -> Result<Self, Error> {
        let mut prop = properties(ctx);
        prop.allocFlags.gpuDirectRDMACapable = 1;
        Self::create(prop, size)
    }

    fn create(prop: sys::CUmemAllocationProp, size: usize) -> Result<Self, Error> {
        let mut handle = 0;
        // SAFETY: valid pointers; the handle is released by `Drop`.
        let r = unsafe { sys::cuMemCreate(&mut handle, size, &prop, 0) };
        Error::driver("cuMemCreate", r, ())?;
        Ok(PhysicalMemory {
            handle,
            size,
            _ctx: PhantomData,
        })
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// Releases the memory now, with the driver's code.
    pub fn release(self) -> Result<(), Error> {
        let handle = self.handle;
        core::mem::forget(self);
        // SAFETY: created in `new`, released once (`self` is gone).
        Error::driver("cuMemRelease", unsafe { sys::cuMemRelease(handle) }, ())
    }
}

impl Drop for PhysicalMemory<'_> {
    fn drop(&mut self) {
        // SAFETY: created in `new`, released once. A mapping keeps the
        // memory alive in the driver until it is unmapped.
        unsafe {
            sys::cuMemRelease(self.handle);
        }
    }
}

/// A reserved virtual address range (`cuMemAddressReserve`), freed on drop
/// (`cuMemAddressFree`).
#[derive(Debug)]
pub struct Reservation<'c> {
    ptr: sys::CUdeviceptr,
    size: usize,
    _ctx: PhantomData<&'c Context>,
}

impl<'c> Reservation<'c> {
    /// `size` bytes (a multiple of [`granularity`]) of address space.
    pub fn new(_ctx: &'c Context, size: usize) -> Result<Self, Error> {
        let mut ptr = 0;
        // SAFETY: a valid out-pointer; freed by `Drop`.
        let r = unsafe { sys::cuMemAddressReserve(&mut ptr, size, 0, 0, 0) };
        Error::driver("cuMemAddressReserve", r, ())?;
        Ok(Reservation {
            ptr,
            size,
            _ctx: PhantomData,
        })
    }

    pub fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// Maps all of `memory` at `offset` into the range (`cuMemMap`), with no
    /// access yet. `CUDA_ERROR_INVALID_VALUE` where it would not lie inside
    /// the range; the driver's code for the rest (an offset off the
    /// granularity, a range already mapped).
    pub fn map<'r>(
        &'r self,
        offset: usize,
        memory: &'r PhysicalMemory<'c>,
    ) -> Result<Mapping<'r>, Error> {
        let inside = offset
            .checked_add(memory.size)
            .is_some_and(|end| end <= self.size);
        if !inside {
            return Err(invalid("cuMemMap"));
        }
        let ptr = self.ptr + offset as sys::CUdeviceptr;
        // SAFETY: inside this reservation; unmapped by `Drop` of the mapping,
        // which borrows both the reservation and the memory.
        let r = unsafe { sys::cuMemMap(ptr, memory.size, 0, memory.handle, 0) };
        Error::driver("cuMemMap", r, ())?;
        Ok(Mapping {
            ptr,
            size: memory.size,
            access: Access::None,
            _borrows: PhantomData,
        })
    }

    /// Frees the range now, with the driver's code.
    pub fn free(self) -> Result<(), Error> {
        let (ptr, size) = (self.ptr, self.size);
        core::mem::forget(self);
        // SAFETY: reserved in `new`, freed once; no mapping borrows it.
        Error::driver(
            "cuMemAddressFree",
            unsafe { sys::cuMemAddressFree(ptr, size) },
            (),
        )
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        // SAFETY: reserved in `new`, freed once; no mapping borrows it.
        unsafe {
            sys::cuMemAddressFree(self.ptr, self.size);
        }
    }
}

/// What a device may do with mapped memory (`CUmemAccess_flags`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    None,
    Read,
    ReadWrite,
}

impl Access {
    fn flags(self) -> sys::CUmemAccess_flags {
        match self {
            Access::None => sys::CU_MEM_ACCESS_FLAGS_PROT_NONE,
            Access::Read => sys::CU_MEM_ACCESS_FLAGS_PROT_READ,
            Access::ReadWrite => sys::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        }
    }
}

/// Physical memory mapped into a reservation, unmapped on drop (`cuMemUnmap`).
#[derive(Debug)]
pub struct Mapping<'r> {
    ptr: sys::CUdeviceptr,
    size: usize,
    access: Access,
    _borrows: PhantomData<&'r ()>,
}

impl Mapping<'_> {
    pub fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// Sets the access of `ctx`'s device to the whole mapping (`cuMemSetAccess`).
    pub fn set_access(&mut self, ctx: &Context, access: Access) -> Result<(), Error> {
        let desc = sys::CUmemAccessDesc {
            location: location::device(ctx.device()),
            flags: access.flags(),
        };
        // SAFETY: the mapping's own range, one descriptor.
        let r = unsafe { sys::cuMemSetAccess(self.ptr, self.size, &desc, 1) };
        Error::driver("cuMemSetAccess", r, ())?;
        self.access = access;
        Ok(())
    }

    /// The access `ctx`'s device has, as the driver reports it (`cuMemGetAccess`).
    pub fn access(&self, ctx: &Context) -> Result<Access, Error> {
        let loc = location::device(ctx.device());
        let mut flags = 0u64;
        // SAFETY: valid pointers, an address of this mapping.
        let r = unsafe { sys::cuMemGetAccess(&mut flags, &loc, self.ptr) };
        Error::driver("cuMemGetAccess", r, ())?;
        Ok(match flags {
            f if f == Access::ReadWrite.flags().0 as u64 => Access::ReadWrite,
            f if f == Access::Read.flags().0 as u64 => Access::Read,
            _ => Access::None,
        })
    }

    /// Whether `[offset, offset + len)` lies inside the mapping.
    fn holds(&self, offset: usize, len: usize) -> bool {
        offset.checked_add(len).is_some_and(|end| end <= self.size)
    }

    /// Copies `data` to the mapping at `offset` (`cuMemcpyHtoD`); needs
    /// [`Access::ReadWrite`].
    pub fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), Error> {
        if self.access != Access::ReadWrite || !self.holds(offset, data.len()) {
            return Err(invalid("cuMemcpyHtoD"));
        }
        let dst = self.ptr + offset as sys::CUdeviceptr;
        // SAFETY: inside the mapping, writable; `data` is valid for its length.
        let r = unsafe { sys::cuMemcpyHtoD(dst, data.as_ptr().cast(), data.len()) };
        Error::driver("cuMemcpyHtoD", r, ())
    }

    /// Copies from the mapping at `offset` into `out` (`cuMemcpyDtoH`);
    /// needs [`Access::Read`] or more.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), Error> {
        if self.access == Access::None || !self.holds(offset, out.len()) {
            return Err(invalid("cuMemcpyDtoH"));
        }
        let src = self.ptr + offset as sys::CUdeviceptr;
        // SAFETY: inside the mapping, readable; `out` is valid for its length.
        let r = unsafe { sys::cuMemcpyDtoH(out.as_mut_ptr().cast(), src, out.len()) };
        Error::driver("cuMemcpyDtoH", r, ())
    }

    /// `[offset, offset + len)` of the mapping as a DMA-BUF file descriptor
    /// (`cuMemGetHandleForAddressRange`, `CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD`),
    /// for an RDMA device to import; closed when the `OwnedFd` drops (the
    /// exporter keeps the memory while an importer holds it). The address
    /// and the size must be multiples of the host's page size: otherwise
    /// [`Error::Misaligned`], before any call (the driver would return
    /// `CUDA_ERROR_INVALID_VALUE`). A range outside the mapping is refused
    /// with `CUDA_ERROR_INVALID_VALUE`; the memory must come from
    /// [`PhysicalMemory::new_rdma`] where the driver asks for it.
    #[cfg(unix)]
    pub fn export_dma_buf(&self, offset: usize, len: usize) -> Result<std::os::fd::OwnedFd, Error> {
        use std::os::fd::FromRawFd;
        let call = "cuMemGetHandleForAddressRange";
        if !self.holds(offset, len) || len == 0 {
            return Err(invalid(call));
        }
        let page = page_size();
        let ptr = self.ptr + offset as sys::CUdeviceptr;
        for value in [ptr, len as u64] {
            if value % page as u64 != 0 {
                return Err(Error::Misaligned {
                    call,
                    value,
                    align: page,
                });
            }
        }
        let mut fd: core::ffi::c_int = -1;
        // SAFETY: inside the mapping, page-aligned; the driver writes an
        // `int` descriptor into `fd`, which the `OwnedFd` then owns alone.
        let r = unsafe {
            sys::cuMemGetHandleForAddressRange(
                (&mut fd as *mut core::ffi::c_int).cast(),
                ptr,
                len,
                sys::CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                0,
            )
        };
        Error::driver(call, r, ())?;
        if fd < 0 {
            return Err(invalid(call));
        }
        // SAFETY: a descriptor the driver just opened for us, owned by no one else.
        Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
    }

    /// Unmaps now, with the driver's code.
    pub fn unmap(self) -> Result<(), Error> {
        let (ptr, size) = (self.ptr, self.size);
        core::mem::forget(self);
        // SAFETY: mapped in `Reservation::map`, unmapped once.
        Error::driver("cuMemUnmap", unsafe { sys::cuMemUnmap(ptr, size) }, ())
    }
}

impl Drop for Mapping<'_> {
    fn drop(&mut self) {
        // SAFETY: mapped in `Reservation::map`, unmapped once.
        unsafe {
            sys::cuMemUnmap(self.ptr, self.size);
        }
    }
}

/// The host's page size (`sysconf(_SC_PAGESIZE)`), 4096 where it cannot be read.
#[cfg(unix)]
pub fn page_size() -> usize {
    // SAFETY: no arguments but the name; returns -1 on error.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}
