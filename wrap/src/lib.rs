//! A small safe API over [`cuda_mem_sys`], as a wrapper crate would write it:
//!
//! - [`vmm`]: a virtual address range ([`vmm::Reservation`]) with physical
//!   memory ([`vmm::PhysicalMemory`]) mapped into it ([`vmm::Mapping`]),
//!   read-write access set, bytes copied in and out; every step undone on
//!   drop, in order.
//! - [`pool`]: a stream-ordered memory pool ([`pool::Pool`]) with
//!   allocations made and freed in the order of a stream ([`pool::Stream`],
//!   [`pool::PoolBuffer`]).
//! - [`graph`]: a stream capture ([`graph::Capture`]) with allocations owned
//!   by the graph it records ([`graph::GraphBuffer`]), which cannot outlive
//!   the recording; the graph instantiated and launched.
//! - A VMM mapping exported as a DMA-BUF file descriptor
//!   ([`vmm::Mapping::export_dma_buf`], Unix), page alignment checked first.
//!
//! Every failing call is an [`Error`]: the call, the code the driver or the
//! runtime returned, and its name. With cuda-mem-sys's `dynamic-loading` the
//! same calls are made (the crate keeps their names); a library that cannot
//! be loaded comes back as its documented code
//! (`CUDA_ERROR_SHARED_OBJECT_INIT_FAILED`, 303).
//!
//! The structures whose form changed between CUDA releases are written for
//! the release cuda-mem-sys declares, by the cfgs this crate's build script
//! derives from `DEP_CUDA_MEM_SYS_VERSION_NUMBER` ([`location`]).
//!
//! Freeing twice is impossible by construction: each resource is released
//! by its `Drop`, or by a method that takes it by value.
//!
//! ```compile_fail,E0382
//! # use cuda_mem_wrap::*;
//! # fn f() -> Result<(), Error> {
//! let ctx = Context::primary(0)?;
//! let mem = vmm::PhysicalMemory::new(&ctx, vmm::granularity(&ctx)?)?;
//! mem.release()?;
//! mem.release()?; // error[E0382]: use of moved value: `mem`
//! # Ok(()) }
//! ```
//!
//! (rustdoc checks that it fails with E0382, "use of moved value", and
//! nothing else.) The same, released once, compiles:
//!
//! ```no_run
//! # use cuda_mem_wrap::*;
//! # fn f() -> Result<(), Error> {
//! let ctx = Context::primary(0)?;
//! let mem = vmm::PhysicalMemory::new(&ctx, vmm::granularity(&ctx)?)?;
//! mem.release()?;
//! # Ok(()) }
//! ```

//! cuda-mem-sys's enumerators are associated constants too, spelled as
//! cudarc's `sys` spells its enum variants (`CUresult::CUDA_SUCCESS`), and
//! only those the headers declare: a name they lack does not compile.
//!
//! ```compile_fail,E0599
//! let _ = cuda_mem_sys::CUresult::CUDA_ERROR_NO_SUCH_CODE; // error[E0599]: no associated item named ...
//! ```
//!
//! ```
//! assert_eq!(cuda_mem_sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY, cuda_mem_sys::CUDA_ERROR_OUT_OF_MEMORY);
//! ```

use core::ffi::{c_char, CStr};
use cuda_mem_sys as sys;

pub mod graph;
pub mod location;
pub mod pool;
pub mod vmm;

/// A failed call: which one, and the code the driver or the runtime returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// A driver API call returned this `CUresult`.
    Driver {
        call: &'static str,
        code: sys::CUresult,
    },
    /// A runtime API call returned this `cudaError_t`.
    Runtime {
        call: &'static str,
        code: sys::cudaError_t,
    },
    /// Refused before `call`: `value` (an address or a size) is not a
    /// multiple of `align` (the host's page size, for a DMA-BUF export).
    /// Its [`code`](Error::code) is what the driver returns for the same
    /// input, `CUDA_ERROR_INVALID_VALUE` (1).
    Misaligned {
        call: &'static str,
        value: u64,
        align: usize,
    },
}

impl Error {
    /// The call that failed (`cuMemMap`).
    pub fn call(&self) -> &'static str {
        match *self {
            Error::Driver { call, .. }
            | Error::Runtime { call, .. }
            | Error::Misaligned { call, .. } => call,
        }
    }

    /// The code as a number (`CUDA_ERROR_INVALID_VALUE` is 1).
    pub fn code(&self) -> u32 {
        match *self {
            Error::Driver { code, .. } => code.0,
            Error::Runtime { code, .. } => code.0,
            Error::Misaligned { .. } => sys::CUDA_ERROR_INVALID_VALUE.0,
        }
    }

    /// The code's name as the driver or the runtime gives it
    /// (`CUDA_ERROR_INVALID_VALUE`). Where there is no driver to ask (the
    /// link-time stub, or a driver that could not be loaded) the codes that
    /// situation returns are named here; `None` for any other.
    pub fn name(&self) -> Option<&'static str> {
        let name: *const c_char = match *self {
            Error::Driver { code, .. } => {
                let mut name = core::ptr::null();
                // SAFETY: `name` is a valid out-pointer; the driver writes a
                // pointer to a static string or nothing.
                let r = unsafe { sys::cuGetErrorName(code, &mut name) };
                if r != sys::CUDA_SUCCESS {
                    return unnamed(code);
                }
                name
            }
            // SAFETY: returns a static string (or a message for an unknown code).
            Error::Runtime { code, .. } => unsafe { sys::cudaGetErrorName(code) },
            Error::Misaligned { .. } => return Some("CUDA_ERROR_INVALID_VALUE"),
        };
        if name.is_null() {
            return None;
        }
        // SAFETY: a NUL-terminated string that lives as long as the library.
        unsafe { CStr::from_ptr(name) }.to_str().ok()
    }

    /// `Ok(value)` if a driver call returned `CUDA_SUCCESS`, else the error.
    pub(crate) fn driver<T>(call: &'static str, code: sys::CUresult, value: T) -> Result<T, Error> {
        if code == sys::CUDA_SUCCESS {
            Ok(value)
        } else {
            Err(Error::Driver { call, code })
        }
    }

    /// `Ok(value)` if a runtime call returned `cudaSuccess`, else the error.
    pub(crate) fn runtime<T>(
        call: &'static str,
        code: sys::cudaError_t,
        value: T,
    ) -> Result<T, Error> {
        if code == sys::cudaSuccess {
            Ok(value)
        } else {
            Err(Error::Runtime { call, code })
        }
    }
}

/// The names of the codes a driver cannot name because it is not there: the
/// link-time stub's, and those cuda-mem-sys's loader returns.
fn unnamed(code: sys::CUresult) -> Option<&'static str> {
    Some(match code {
        sys::CUDA_ERROR_STUB_LIBRARY => "CUDA_ERROR_STUB_LIBRARY",
        sys::CUDA_ERROR_SHARED_OBJECT_INIT_FAILED => "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
        sys::CUDA_ERROR_NOT_FOUND => "CUDA_ERROR_NOT_FOUND",
        sys::CUDA_ERROR_NOT_SUPPORTED => "CUDA_ERROR_NOT_SUPPORTED",
        _ => return None,
    })
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let kind = match *self {
            Error::Driver { .. } => "CUresult",
            Error::Runtime { .. } => "cudaError_t",
            Error::Misaligned { call, value, align } => {
                return write!(
                    f,
                    "{call} refused before the call: {value:#x} is not a multiple of the page \
                     size ({align}): CUDA_ERROR_INVALID_VALUE (1)"
                )
            }
        };
        match self.name() {
            Some(name) => write!(f, "{} returned {name} ({})", self.call(), self.code()),
            None => write!(f, "{} returned {kind} {}", self.call(), self.code()),
        }
    }
}

impl std::error::Error for Error {}

/// The number of CUDA devices, after initialising the driver (`cuInit`,
/// `cuDeviceGetCount`). An error where there is no usable driver: e.g.
/// `CUDA_ERROR_STUB_LIBRARY` (the link-time stub), `CUDA_ERROR_NO_DEVICE`,
/// or, loaded at run time, `CUDA_ERROR_SHARED_OBJECT_INIT_FAILED`.
pub fn device_count() -> Result<i32, Error> {
    // SAFETY: plain calls with valid out-pointers.
    unsafe {
        Error::driver("cuInit", sys::cuInit(0), ())?;
        let mut n = 0;
        Error::driver("cuDeviceGetCount", sys::cuDeviceGetCount(&mut n), n)
    }
}

/// A device's primary context, retained and current on this thread (what the
/// runtime API uses too). Released on drop. Not `Send`: a context is made
/// current per thread.
#[derive(Debug)]
pub struct Context {
    device: sys::CUdevice,
    ctx: sys::CUcontext,
}

impl Context {
    /// Device `ordinal`'s primary context, made current on this thread.
    pub fn primary(ordinal: i32) -> Result<Context, Error> {
        device_count()?;
        // SAFETY: valid out-pointers; the context is released by `Drop`.
        unsafe {
            let mut device = 0;
            Error::driver("cuDeviceGet", sys::cuDeviceGet(&mut device, ordinal), ())?;
            let mut ctx = core::ptr::null_mut();
            let r = sys::cuDevicePrimaryCtxRetain(&mut ctx, device);
            Error::driver("cuDevicePrimaryCtxRetain", r, ())?;
            let context = Context { device, ctx };
            Error::driver("cuCtxSetCurrent", sys::cuCtxSetCurrent(ctx), context)
        }
    }

    /// The device (`CUdevice`).
    pub fn device(&self) -> sys::CUdevice {
        self.device
    }

    /// The context (`CUcontext`).
    pub fn raw(&self) -> sys::CUcontext {
        self.ctx
    }

    /// Waits for all the context's work (`cuCtxSynchronize`).
    pub fn synchronize(&self) -> Result<(), Error> {
        // SAFETY: no arguments; the context is current.
        Error::driver("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() }, ())
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: retained in `primary`, released once here.
        unsafe {
            sys::cuDevicePrimaryCtxRelease(self.device);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where no driver can name a code (here: the link-time stub, or no
    /// driver loaded), the codes of that situation still read by name; any
    /// other code reads as its number, never as a wrong name.
    #[test]
    fn an_error_names_its_call_and_code() {
        let stub = Error::Driver {
            call: "cuInit",
            code: sys::CUDA_ERROR_STUB_LIBRARY,
        };
        assert_eq!(stub.code(), 34);
        assert_eq!(stub.name(), Some("CUDA_ERROR_STUB_LIBRARY"));
        assert_eq!(
            stub.to_string(),
            "cuInit returned CUDA_ERROR_STUB_LIBRARY (34)"
        );
        let unknown = Error::Driver {
            call: "cuMemMap",
            code: sys::CUresult(123_456),
        };
        assert_eq!(unknown.name(), None);
        assert_eq!(unknown.to_string(), "cuMemMap returned CUresult 123456");
        // `Result` plumbing: success is `Ok` with the value, anything else the error.
        assert_eq!(Error::driver("cuInit", sys::CUDA_SUCCESS, 7), Ok(7));
        assert_eq!(
            Error::driver("cuInit", sys::CUDA_ERROR_STUB_LIBRARY, 7),
            Err(stub)
        );
        // Refused before the call: the driver's code for the same input, by name.
        let unaligned = Error::Misaligned {
            call: "cuMemGetHandleForAddressRange",
            value: 0x7f00_0000_1001,
            align: 4096,
        };
        assert_eq!(unaligned.code(), 1);
        assert_eq!(unaligned.name(), Some("CUDA_ERROR_INVALID_VALUE"));
        assert_eq!(
            unaligned.to_string(),
            "cuMemGetHandleForAddressRange refused before the call: 0x7f0000001001 is not a \
             multiple of the page size (4096): CUDA_ERROR_INVALID_VALUE (1)"
        );
        let rt = Error::runtime("cudaFreeAsync", sys::cudaErrorInvalidValue, ());
        assert_eq!(
            rt.map_err(|e| (e.call(), e.code())),
            Err(("cudaFreeAsync", 1))
        );
    }
}
