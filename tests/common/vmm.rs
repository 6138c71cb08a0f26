//! Virtual memory management (`cuMemCreate`, `cuMemMap`) for the device tests:
//! allocation properties, the create / reserve / map / set-access steps
//! (every access set read back for each location it names), a
//! mapped allocation ([`Mapping`]) with its POSIX descriptor, and the exporter
//! of the process-death scenarios that share such a descriptor
//! ([`pd_export`], [`pd_exporter`]).
#[cfg(unix)]
use super::process_death as pd;
use super::{cu_loc, Gpu, TestResult};
#[cfg(unix)]
use super::{read, round_trip, write};
use cuda_mem_sys::*;
use libtest_mimic::Failed;

pub type Handle = CUmemGenericAllocationHandle;

pub const RW: u64 = CU_MEM_ACCESS_FLAGS_PROT_READWRITE.0 as u64;
pub const NONE: u64 = CU_MEM_ACCESS_FLAGS_PROT_NONE.0 as u64;
pub const FD: CUmemAllocationHandleType = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;

/// Pinned memory at location `loc`/`id`, with `handles` requested.
pub fn prop_at(
    loc: CUmemLocationType,
    id: i32,
    handles: CUmemAllocationHandleType,
) -> CUmemAllocationProp {
    CUmemAllocationProp {
        type_: CU_MEM_ALLOCATION_TYPE_PINNED,
        location: cu_loc(loc, id),
        requestedHandleTypes: handles,
        ..Default::default()
    }
}

/// Pinned memory on device `dev`, with `handles` requested.
pub fn device_prop(dev: CUdevice, handles: CUmemAllocationHandleType) -> CUmemAllocationProp {
    prop_at(CU_MEM_LOCATION_TYPE_DEVICE, dev, handles)
}

pub fn device_location(dev: CUdevice) -> CUmemLocation {
    cu_loc(CU_MEM_LOCATION_TYPE_DEVICE, dev)
}

pub fn access_desc(location: CUmemLocation, flags: CUmemAccess_flags) -> CUmemAccessDesc {
    CUmemAccessDesc { location, flags }
}

pub fn granularity(
    prop: &CUmemAllocationProp,
    option: CUmemAllocationGranularity_flags,
) -> Result<usize, Failed> {
    let mut g = 0usize;
    cu!(cuMemGetAllocationGranularity(&mut g, prop, option))?;
    ensure!(g > 0, "granularity 0");
    Ok(g)
}

pub fn min_granularity(prop: &CUmemAllocationProp) -> Result<usize, Failed> {
    granularity(prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)
}

pub fn create(size: usize, prop: &CUmemAllocationProp) -> Result<Handle, Failed> {
    let mut h: Handle = 0;
    cu!(cuMemCreate(&mut h, size, prop, 0))?;
    Ok(h)
}

pub fn reserve(size: usize, alignment: usize, hint: CUdeviceptr) -> Result<CUdeviceptr, Failed> {
    let mut p: CUdeviceptr = 0;
    cu!(cuMemAddressReserve(&mut p, size, alignment, hint, 0))?;
    Ok(p)
}

/// Read-write access for device `dev` to `[ptr, ptr + size)`.
pub fn set_rw(ptr: CUdeviceptr, size: usize, dev: CUdevice) -> TestResult {
    set_rw_for(ptr, size, &[device_location(dev)])
}

/// Read-write access to `[ptr, ptr + size)` for every one of `locations`,
/// in one `cuMemSetAccess`, read back ([`set_access`]).
pub fn set_rw_for(ptr: CUdeviceptr, size: usize, locations: &[CUmemLocation]) -> TestResult {
    let rw = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    let d: Vec<_> = locations.iter().map(|&l| access_desc(l, rw)).collect();
    set_access(ptr, size, &d)
}

/// `cuMemSetAccess(ptr, size, descs)`, then every location's flags read
/// back (`cuMemGetAccess`) at the range's first and last byte: each must be
/// what its descriptor set ([`read_back`]).
/// The current context, if any, is synchronised first: a `cuMemcpyHtoD`
/// from pageable memory may still be landing when it returns (NVIDIA's "API
/// synchronization behavior"), and a range made read-only under it faults.
pub fn set_access(ptr: CUdeviceptr, size: usize, descs: &[CUmemAccessDesc]) -> TestResult {
    let mut ctx = core::ptr::null_mut();
    cu!(cuCtxGetCurrent(&mut ctx))?;
    if !ctx.is_null() {
        cu!(cuCtxSynchronize())?;
    }
    cu!(cuMemSetAccess(ptr, size, descs.as_ptr(), descs.len()))?;
    read_back(ptr, size, descs)
}

/// `Ok` if every descriptor's location reads back its flags at the first
/// and the last byte of `[ptr, ptr + size)`; else every mismatch, named.
pub fn read_back(ptr: CUdeviceptr, size: usize, descs: &[CUmemAccessDesc]) -> TestResult {
    let mut wrong = vec![];
    for d in descs {
        for at in [ptr, ptr + size as u64 - 1] {
            let got = get_access(at, d.location)?;
            if got != d.flags.0 as u64 {
                wrong.push(format!(
                    "location (type {}, id {}) at {at:#x}: flags {got}, set {}",
                    d.location.type_.0,
                    super::cu_loc_id(&d.location),
                    d.flags.0
                ));
            }
        }
    }
    ensure!(
        wrong.is_empty(),
        "cuMemSetAccess({ptr:#x}, {size}) read back (cuMemGetAccess): {}",
        wrong.join("; ")
    );
    Ok(())
}

pub fn get_access(ptr: CUdeviceptr, loc: CUmemLocation) -> Result<u64, Failed> {
    let mut f: u64 = u64::MAX;
    cu!(cuMemGetAccess(&mut f, &loc, ptr))?;
    Ok(f)
}

/// `h` mapped at `ptr` (`size` bytes, the whole reservation) let go of:
/// unmapped, released, the reservation freed.
pub fn unmap_release_free(ptr: CUdeviceptr, size: usize, h: Handle) -> TestResult {
    cu!(cuMemUnmap(ptr, size))?;
    cu!(cuMemRelease(h))?;
    cu!(cuMemAddressFree(ptr, size))
}

/// A physical allocation mapped read-write for one device at a fresh reservation.
pub struct Mapping {
    pub handle: Handle,
    pub ptr: CUdeviceptr,
    pub size: usize,
}

impl Mapping {
    pub fn new(prop: &CUmemAllocationProp, size: usize, dev: CUdevice) -> Result<Mapping, Failed> {
        let handle = create(size, prop)?;
        let ptr = reserve_map_rw(size, handle, dev)?;
        Ok(Mapping { handle, ptr, size })
    }

    /// `granules` minimum granules of POSIX-fd shareable memory on `gpu`.
    pub fn shareable(gpu: &Gpu, granules: usize) -> Result<Mapping, Failed> {
        let prop = device_prop(gpu.dev, FD);
        Mapping::new(&prop, granules * min_granularity(&prop)?, gpu.dev)
    }

    /// [`Mapping::shareable`], on a device that must support POSIX file
    /// descriptor handles (else it fails, naming the device).
    pub fn posix_shareable(gpu: &Gpu, granules: usize) -> Result<Mapping, Failed> {
        gpu.require(
            CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
            &format!(
                "device {} does not support POSIX file descriptor handles",
                gpu.dev
            ),
        )?;
        Mapping::shareable(gpu, granules)
    }

    /// A new POSIX file descriptor for the allocation (ours until imported).
    #[cfg(unix)]
    pub fn export_fd(&self) -> Result<i32, Failed> {
        let mut fd: i32 = -1;
        let r = export_fd_raw(&mut fd, self.handle, 0);
        super::check(r, "cuMemExportToShareableHandle")?;
        opened(fd, "cuMemExportToShareableHandle")
    }

    pub fn free(self) -> TestResult {
        unmap_release_free(self.ptr, self.size, self.handle)
    }
}

#[cfg(unix)]
pub fn fd_is_open(fd: i32) -> bool {
    (unsafe { libc::fcntl(fd, libc::F_GETFD) }) != -1
}

/// `fd` if it is an open descriptor, else a failure naming `what` gave it.
#[cfg(unix)]
pub fn opened(fd: i32, what: &str) -> Result<i32, Failed> {
    ensure!(fd >= 0 && fd_is_open(fd), "{what} gave descriptor {fd}");
    Ok(fd)
}

#[cfg(unix)]
pub fn close_fd(fd: i32) -> TestResult {
    let (closed, e) = (
        unsafe { libc::close(fd) } == 0,
        std::io::Error::last_os_error(),
    );
    ensure!(closed, "close({fd}): {e}");
    Ok(())
}

/// The exporter's allocation in the process-death scenarios, freed when the
/// exporter ends normally.
#[cfg(unix)]
pub struct Exported {
    m: Option<Mapping>,
    gpu: Gpu,
}

#[cfg(unix)]
impl Drop for Exported {
    fn drop(&mut self) {
        if let Some(m) = self.m.take() {
            let _ = m.free();
        }
    }
}

/// Two granules of POSIX-fd shareable memory holding `pd::pattern`, exported:
/// the descriptor, the fields the importer needs, the allocation.
#[cfg(unix)]
pub fn pd_export() -> Result<(i32, pd::Fields, Exported), Failed> {
    let gpu = Gpu::new(0)?;
    let m = Mapping::shareable(&gpu, 2)?;
    write(m.ptr, &pd::pattern(m.size, pd::SEED))?;
    let fd = m.export_fd()?;
    let mut f = pd::Fields::default();
    f.push("bytes", m.size);
    f.push("seed", pd::SEED);
    Ok((fd, f, Exported { m: Some(m), gpu }))
}

/// [`pd::importer_killed`] with the exporter in this process ([`pd_export`])
/// and the test's own context reference on device 0 (the exporter releases
/// its own with the memory; the free-memory figures after that need a live
/// context).
#[cfg(unix)]
pub fn pd_importer_killed(test: &str, importer: &str, released: &str) -> TestResult {
    let _gpu = Gpu::new(0)?;
    pd::importer_killed(test, importer, pd_export, pd::free_memory, released)
}

/// Child: the exporter of the process-death scenarios.
#[cfg(unix)]
pub fn pd_exporter() -> TestResult {
    pd::exporter_main(|| {
        let (fd, f, kept) = pd_export()?;
        Ok((fd, f, Box::new(kept)))
    })
}

#[cfg(unix)]
impl pd::Exporting for Exported {
    fn read(&mut self, n: usize) -> Result<Vec<u8>, String> {
        let m = self.m.as_ref().ok_or("no mapping kept")?;
        read(m.ptr, n).map_err(pd::message)
    }
    fn go_on(&mut self, round: u32) -> TestResult {
        let m = Mapping::shareable(&self.gpu, 2)?;
        let checked = round_trip(
            m.ptr,
            m.size,
            round,
            "a new allocation after the importer died",
        );
        m.free()?;
        checked
    }
}

/// `cuMemExportToShareableHandle` of `h` as a POSIX descriptor into `fd`.
pub fn export_fd_raw(fd: &mut i32, h: Handle, flags: u64) -> CUresult {
    unsafe { cuMemExportToShareableHandle((fd as *mut i32).cast(), h, FD, flags) }
}

/// `cuMemImportFromShareableHandle` of the POSIX descriptor `fd` into `h`.
pub fn import_fd(h: &mut Handle, fd: i32) -> CUresult {
    unsafe { cuMemImportFromShareableHandle(h, fd as isize as *mut core::ffi::c_void, FD) }
}

/// `h` mapped over the whole of a fresh reservation of `size` bytes,
/// read-write for device `dev`: its address.
pub fn reserve_map_rw(size: usize, h: Handle, dev: CUdevice) -> Result<CUdeviceptr, Failed> {
    let ptr = reserve(size, 0, 0)?;
    cu!(cuMemMap(ptr, size, 0, h, 0))?;
    set_rw(ptr, size, dev)?;
    Ok(ptr)
}

/// What [`reserve_map_rw`] made, unmapped and its reservation freed.
pub fn unmap_free(ptr: CUdeviceptr, size: usize) -> TestResult {
    cu!(cuMemUnmap(ptr, size))?;
    cu!(cuMemAddressFree(ptr, size))
}
