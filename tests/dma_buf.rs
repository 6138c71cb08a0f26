//! DMA-BUF export: `cuMemGetHandleForAddressRange` with
//! `CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD` (driver 6.13 Memory Management; in
//! the headers since 11.7), the descriptor an RDMA stack registers.
//!
//! For each kind of device memory (`cuMemAlloc`, a `gpuDirectRDMACapable`
//! `cuMemCreate` mapping, a pool allocation, one VMM range mapped from two
//! allocations) the descriptor is a dma-buf (the kernel's
//! `/proc/self/fdinfo` names its exporter) whose size (`lseek(fd, 0,
//! SEEK_END)`) is the range's; a page-aligned subrange exports its own size;
//! an unaligned address or size is refused with `CUDA_ERROR_INVALID_VALUE`;
//! the mapping-type flag `CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE`
//! (headers from 12.8) gives a descriptor or "not supported", whichever the
//! platform has, printed. The checks have their wrong twins: the size check
//! given another range's descriptor, and the dma-buf check given a `memfd`
//! of the right size, must refuse them. Every descriptor is closed.
//!
//! A `gpuDirectRDMACapable` allocation reads the flag back
//! (`cuMemGetAllocationPropertiesFromHandle`; one made without it must not).
//! The bytes of two exported subranges are read through their descriptors
//! (`mmap`), each its own and not the other's; where this driver's exporter
//! does not map a dma-buf, the test prints the errno and checks instead
//! that the two exports are two dma-bufs. The other consumer tried,
//! Vulkan's import (`external_interop`'s `dma_buf_export_read_through_vulkan`),
//! is not offered by the H200's Vulkan device with driver 580.159.04.
//!
//! Where every query says the device cannot export
//! (`CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED` 0 and an export refused; for the
//! VMM cases `CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED` 0
//! and a `gpuDirectRDMACapable` `cuMemCreate` refused) each test reports
//! itself ignored with that reason; queries that disagree fail it. Linux only: the
//! descriptors are Linux dma-bufs (reported ignored elsewhere with
//! [`common::POSIX_ONLY`]).
// The driver's structs are filled in field by field, as C code does.
#![allow(clippy::field_reassign_with_default)]

mod common;

#[cfg(unix)]
use common::os::page_size;
#[cfg(unix)]
use common::vmm::{min_granularity, reserve, set_rw, Handle};
#[cfg(unix)]
use common::{Checks, CuStream, DeviceBuf, Gpu, TestResult};
#[cfg(unix)]
use cuda_mem_sys::*;
#[cfg(unix)]
use libtest_mimic::Failed;
#[cfg(unix)]
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// What a test body returns: `Ok(Some(reason))` where the device cannot
/// export dma-bufs.
#[cfg(unix)]
type MayIgnore = Result<Option<String>, Failed>;

#[cfg(unix)]
const MIB: usize = 1 << 20;

// ---------------------------------------------------------------------------
// Helpers: the export, and the two checks of a descriptor
// ---------------------------------------------------------------------------

/// `cuMemGetHandleForAddressRange(DMA_BUF_FD)` of `[ptr, ptr + size)`: the
/// code, and the descriptor when there is one (owned: closed on drop).
#[cfg(unix)]
fn export_raw(ptr: CUdeviceptr, size: usize, flags: u64) -> (CUresult, Option<OwnedFd>) {
    let mut fd: i32 = -1;
    let handle = (&mut fd as *mut i32).cast();
    let r = unsafe {
        cuMemGetHandleForAddressRange(
            handle,
            ptr,
            size,
            CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
            flags,
        )
    };
    // A descriptor the driver gave is ours to close, whatever the code.
    let owned = (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) });
    (r, owned)
}

/// The dma-buf of `[ptr, ptr + size)`, checked ([`check_dma_buf`]).
#[cfg(unix)]
fn export(ptr: CUdeviceptr, size: usize, what: &str) -> Result<OwnedFd, Failed> {
    let (r, fd) = export_raw(ptr, size, 0);
    common::check(
        r,
        &format!("cuMemGetHandleForAddressRange({what}, {size} B)"),
    )?;
    let fd = fd.ok_or_else(|| format!("{what}: CUDA_SUCCESS and no descriptor"))?;
    check_dma_buf(&fd, size, what)?;
    Ok(fd)
}

/// The size of the object `fd` refers to, as `lseek(fd, 0, SEEK_END)` says.
#[cfg(unix)]
fn end_of(fd: &OwnedFd) -> Result<u64, Failed> {
    let end = unsafe { libc::lseek(fd.as_raw_fd(), 0, libc::SEEK_END) };
    let e = std::io::Error::last_os_error();
    ensure!(end >= 0, "lseek({}, 0, SEEK_END): {e}", fd.as_raw_fd());
    Ok(end as u64)
}

/// The exporter the kernel names for `fd` (`exp_name:` in
/// `/proc/self/fdinfo/<fd>`, shown for dma-bufs only), or, on a kernel
/// without it, the descriptor's link (`/dmabuf:`, `anon_inode:dmabuf`) where
/// it names a dma-buf; `None` for anything else.
#[cfg(unix)]
fn dma_buf_exporter(fd: &OwnedFd) -> Result<Option<String>, Failed> {
    let path = format!("/proc/self/fdinfo/{}", fd.as_raw_fd());
    let info = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let named = info
        .lines()
        .find_map(|l| l.strip_prefix("exp_name:"))
        .map(|n| n.trim().to_string());
    let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .map(|l| l.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(named.or_else(|| link.contains("dmabuf").then_some(link)))
}

/// `fd` is a dma-buf of exactly `size` bytes.
#[cfg(unix)]
fn check_dma_buf(fd: &OwnedFd, size: usize, what: &str) -> TestResult {
    let exporter = dma_buf_exporter(fd)?;
    let end = end_of(fd)?;
    println!(
        "  {what}: descriptor {}, exporter {exporter:?}, lseek(SEEK_END) {end} B (range {size} B)",
        fd.as_raw_fd()
    );
    ensure!(
        exporter.is_some(),
        "{what}: descriptor {} is not a dma-buf (no exp_name in its fdinfo)",
        fd.as_raw_fd()
    );
    ensure!(
        end == size as u64,
        "{what}: the dma-buf is {end} B, the range {size} B"
    );
    Ok(())
}

/// The wrong twins of [`check_dma_buf`]: `fd` (a dma-buf of `size` bytes)
/// taken for a range of another size, and a `memfd` of the right size
/// (not a dma-buf), must each be refused.
#[cfg(unix)]
fn check_refuses_the_wrong(fd: &OwnedFd, size: usize) -> TestResult {
    let other = size + page_size();
    ensure!(
        check_dma_buf(fd, other, "wrong twin: another range's size").is_err(),
        "the size check took a {size} B dma-buf for a {other} B range"
    );
    let raw = unsafe { libc::memfd_create(c"plain-memfd".as_ptr(), 0) };
    let e = std::io::Error::last_os_error();
    ensure!(raw >= 0, "memfd_create: {e}");
    let memfd = unsafe { OwnedFd::from_raw_fd(raw) };
    let sized = unsafe { libc::ftruncate(raw, size as libc::off_t) } == 0;
    let e = std::io::Error::last_os_error();
    ensure!(sized, "ftruncate(memfd, {size}): {e}");
    ensure!(
        check_dma_buf(&memfd, size, "wrong twin: a memfd").is_err(),
        "the dma-buf check took a memfd of {size} B for a dma-buf"
    );
    Ok(())
}

/// A yes/no device attribute, by its name: 0 or 1, else a failure (a
/// wrong constant reads another attribute's value).
#[cfg(unix)]
fn yes_no(gpu: &Gpu, attr: CUdevice_attribute, name: &str) -> Result<bool, Failed> {
    let v = gpu.attribute(attr)?;
    println!("  {name} = {v}");
    ensure!(
        v == 0 || v == 1,
        "{name} reads {v} on device 0, not 0 or 1 (a wrong constant?)"
    );
    Ok(v == 1)
}

/// Device 0 when it exports dma-bufs (and, with `vmm`, exports VMM
/// allocations made for GPUDirect RDMA); else the reason, for the test to
/// report itself ignored. Every query that can say so is asked
/// (`DMA_BUF_SUPPORTED`; `GPU_DIRECT_RDMA_SUPPORTED` through the driver and
/// the runtime; `GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED`), and the act
/// itself (an export; a `gpuDirectRDMACapable` `cuMemCreate`): the test is
/// ignored only where they all say no. Queries that disagree, or one that
/// says no where the act succeeds, fail it (a wrong constant reads 0 too).
#[cfg(unix)]
fn device(vmm: bool) -> Result<Result<Gpu, String>, Failed> {
    let gpu = Gpu::new(0)?;
    let dma_buf = yes_no(
        &gpu,
        CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
        "CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED",
    )?;
    let rdma = yes_no(
        &gpu,
        CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED,
        "CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED",
    )?;
    let mut rt_rdma = -1;
    rt!(cudaDeviceGetAttribute(
        &mut rt_rdma,
        cudaDevAttrGPUDirectRDMASupported,
        0
    ))?;
    println!("  cudaDevAttrGPUDirectRDMASupported = {rt_rdma}");
    ensure!(
        rt_rdma == rdma as i32,
        "GPUDirect RDMA: the driver's attribute reads {}, the runtime's {rt_rdma}",
        rdma as i32
    );
    // The act: a 2 MiB cuMemAlloc exported.
    let buf = DeviceBuf::new(2 * MIB)?;
    let (r, fd) = export_raw(buf.ptr, buf.len, 0);
    drop((fd, buf));
    println!(
        "  cuMemGetHandleForAddressRange(DMA_BUF_FD, a cuMemAlloc) returned {}",
        common::error_name(r)
    );
    if !dma_buf {
        ensure!(
            r != CUDA_SUCCESS,
            "device 0 exports a dma-buf, yet CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED reads 0"
        );
        return Ok(Err(format!(
            "CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0 on device 0, and an export returns {}",
            common::error_name(r)
        )));
    }
    if !vmm {
        return Ok(Ok(gpu));
    }
    let vmm_rdma = yes_no(
        &gpu,
        CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
        "CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED",
    )?;
    if !vmm_rdma {
        // The act: a gpuDirectRDMACapable allocation of one granule.
        let prop = rdma_prop(&gpu);
        let g = min_granularity(&prop)?;
        let mut h: Handle = 0;
        let r = unsafe { cuMemCreate(&mut h, g, &prop, 0) };
        if r == CUDA_SUCCESS {
            cu!(cuMemRelease(h))?;
        }
        ensure!(
            r != CUDA_SUCCESS,
            "device 0 makes gpuDirectRDMACapable VMM memory, yet \
             CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED reads 0 \
             (GPU_DIRECT_RDMA_SUPPORTED {})",
            rdma as i32
        );
        return Ok(Err(format!(
            "CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED is 0 on device 0, \
             and a gpuDirectRDMACapable cuMemCreate returns {}",
            common::error_name(r)
        )));
    }
    Ok(Ok(gpu))
}

/// Runs `body` on device 0 where it can export (see [`device`]), else
/// reports the reason.
#[cfg(unix)]
fn on_device(vmm: bool, body: impl FnOnce(&Gpu) -> TestResult) -> MayIgnore {
    match device(vmm)? {
        Ok(gpu) => body(&gpu).map(|()| None),
        Err(reason) => Ok(Some(reason)),
    }
}

/// Pinned device-0 memory made for GPUDirect RDMA (`allocFlags.gpuDirectRDMACapable`).
#[cfg(unix)]
fn rdma_prop(gpu: &Gpu) -> CUmemAllocationProp {
    let mut prop = common::vmm::device_prop(gpu.dev, CU_MEM_HANDLE_TYPE_NONE);
    prop.allocFlags.gpuDirectRDMACapable = 1;
    prop
}

/// `allocFlags.gpuDirectRDMACapable` of the allocation `h`, as
/// `cuMemGetAllocationPropertiesFromHandle` reads it back (poisoned first).
#[cfg(unix)]
fn rdma_flag(h: Handle) -> Result<u8, Failed> {
    let mut p = CUmemAllocationProp::default();
    p.allocFlags.gpuDirectRDMACapable = 0x7f;
    cu!(cuMemGetAllocationPropertiesFromHandle(&mut p, h))?;
    Ok(p.allocFlags.gpuDirectRDMACapable)
}

/// `Ok` if allocation `h` reads back as made for GPUDirect RDMA.
#[cfg(unix)]
fn reads_rdma_capable(h: Handle, what: &str) -> TestResult {
    let flag = rdma_flag(h)?;
    println!("  {what}: gpuDirectRDMACapable reads back {flag}");
    ensure!(
        flag == 1,
        "{what}: gpuDirectRDMACapable reads back {flag} (cuMemGetAllocationPropertiesFromHandle), set 1"
    );
    Ok(())
}

/// `handles.len()` allocations of `each` bytes mapped one after another in
/// one fresh reservation, read-write for `gpu`: the range's address.
#[cfg(unix)]
fn map_contiguous(gpu: &Gpu, handles: &[Handle], each: usize) -> Result<CUdeviceptr, Failed> {
    let size = handles.len() * each;
    let ptr = reserve(size, 0, 0)?;
    for (k, &h) in handles.iter().enumerate() {
        cu!(cuMemMap(ptr + (k * each) as u64, each, 0, h, 0))?;
    }
    set_rw(ptr, size, gpu.dev)?;
    Ok(ptr)
}

// ---------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------

/// A 2 MiB `cuMemAlloc` exports a dma-buf of 2 MiB; the checks refuse the
/// wrong descriptor and a memfd.
#[cfg(unix)]
fn mem_alloc_exports_its_size() -> MayIgnore {
    on_device(false, |_| {
        let buf = DeviceBuf::new(2 * MIB)?;
        let fd = export(buf.ptr, buf.len, "cuMemAlloc")?;
        check_refuses_the_wrong(&fd, buf.len)
    })
}

/// A page-aligned subrange (one page, one page in) of a `cuMemAlloc`
/// exports a dma-buf of that page, not of the allocation; the size check
/// refuses it as the whole allocation's.
#[cfg(unix)]
fn page_aligned_subrange_exports_its_size() -> MayIgnore {
    on_device(false, |_| {
        let page = page_size();
        let buf = DeviceBuf::new(2 * MIB)?;
        let fd = export(buf.ptr + page as u64, page, "one page of a cuMemAlloc")?;
        let whole = check_dma_buf(&fd, buf.len, "wrong twin: the page as the allocation");
        ensure!(
            whole.is_err(),
            "the size check took a page's dma-buf for the 2 MiB allocation's"
        );
        Ok(())
    })
}

/// An address or a size one byte off the host page is refused with
/// `CUDA_ERROR_INVALID_VALUE` (the reference: both "must be aligned to host
/// page size"), and no descriptor is left open.
#[cfg(unix)]
fn unaligned_range_refused() -> MayIgnore {
    on_device(false, |_| {
        let page = page_size();
        let buf = DeviceBuf::new(2 * MIB)?;
        let mut c = Checks::new();
        for (what, ptr, size) in [
            ("address one byte past the start", buf.ptr + 1, page),
            ("size one byte over a page", buf.ptr, page + 1),
        ] {
            let (r, fd) = export_raw(ptr, size, 0);
            let case = format!("cuMemGetHandleForAddressRange(DMA_BUF_FD, {what})");
            c.code(r, CUDA_ERROR_INVALID_VALUE, &case);
            c.that(fd.is_none(), format!("{case}: a descriptor was returned"));
        }
        // Still exports after the refusals.
        c.ok(export(buf.ptr, buf.len, "cuMemAlloc after the refusals").map(drop));
        c.finish()
    })
}

/// A `cuMemCreate` allocation made for GPUDirect RDMA, mapped, exports a
/// dma-buf of its size (one granule).
#[cfg(unix)]
fn rdma_capable_vmm_mapping_exports_its_size() -> MayIgnore {
    on_device(true, |gpu| {
        let prop = rdma_prop(gpu);
        let g = min_granularity(&prop)?;
        let h = common::vmm::create(g, &prop)?;
        let mut c = Checks::new();
        c.ok(reads_rdma_capable(h, "the cuMemCreate allocation"));
        // The wrong twin: an allocation made without the flag must be refused.
        let plain = common::vmm::create(
            g,
            &common::vmm::device_prop(gpu.dev, CU_MEM_HANDLE_TYPE_NONE),
        )?;
        c.that(
            reads_rdma_capable(plain, "wrong twin: an allocation made without the flag").is_err(),
            "the read-back took an allocation made without gpuDirectRDMACapable for one made with it",
        );
        cu!(cuMemRelease(plain))?;
        let ptr = map_contiguous(gpu, &[h], g)?;
        c.ok(export(ptr, g, "a gpuDirectRDMACapable cuMemCreate mapping").map(drop));
        common::vmm::unmap_release_free(ptr, g, h)?;
        c.finish()
    })
}

/// One VMM range mapped from two allocations (same device, same
/// properties, as the reference requires) exports one dma-buf of the whole
/// range, and each half its own.
#[cfg(unix)]
fn vmm_range_of_two_allocations_exports_its_size() -> MayIgnore {
    on_device(true, |gpu| {
        let prop = rdma_prop(gpu);
        let g = min_granularity(&prop)?;
        let hs = [
            common::vmm::create(g, &prop)?,
            common::vmm::create(g, &prop)?,
        ];
        let ptr = map_contiguous(gpu, &hs, g)?;
        let mut c = Checks::new();
        for (k, &h) in hs.iter().enumerate() {
            c.ok(reads_rdma_capable(h, &format!("allocation {k}")));
        }
        c.ok(export(ptr, 2 * g, "a range over two allocations").map(drop));
        c.ok(export(ptr, g, "its first allocation").map(drop));
        c.ok(export(ptr + g as u64, g, "its second allocation").map(drop));
        cu!(cuMemUnmap(ptr, 2 * g))?;
        for h in hs {
            cu!(cuMemRelease(h))?;
        }
        cu!(cuMemAddressFree(ptr, 2 * g))?;
        c.finish()
    })
}

/// `DMA_BUF_IOCTL_SYNC` (`_IOW('b', 0, struct dma_buf_sync)`, linux/dma-buf.h)
/// and its flags: a CPU access to a mapped dma-buf is bracketed by it.
#[cfg(unix)]
const DMA_BUF_IOCTL_SYNC: libc::c_ulong = 0x4008_6200;
#[cfg(unix)]
const DMA_BUF_SYNC_READ: u64 = 1;
#[cfg(unix)]
const DMA_BUF_SYNC_END: u64 = 4;

/// The bytes of the dma-buf `fd` (`len` of them), read through a
/// read-only shared mapping of the descriptor (the consumer a process has);
/// `Err(errno)` where the exporter does not map it.
#[cfg(unix)]
fn mapped_bytes(fd: &OwnedFd, len: usize) -> Result<Result<Vec<u8>, std::io::Error>, Failed> {
    let raw = fd.as_raw_fd();
    let p = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            raw,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Ok(Err(std::io::Error::last_os_error()));
    }
    let sync = |flags: u64| {
        let r = unsafe { libc::ioctl(raw, DMA_BUF_IOCTL_SYNC as _, &flags) };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            println!("  DMA_BUF_IOCTL_SYNC({flags:#x}) on descriptor {raw}: {e}");
        }
    };
    sync(DMA_BUF_SYNC_READ);
    let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, len) }.to_vec();
    sync(DMA_BUF_SYNC_READ | DMA_BUF_SYNC_END);
    let unmapped = unsafe { libc::munmap(p, len) } == 0;
    let e = std::io::Error::last_os_error();
    ensure!(unmapped, "munmap of the dma-buf mapping: {e}");
    Ok(Ok(bytes))
}

/// The bytes of two page-aligned subranges of a written `cuMemAlloc`, each
/// exported, read through their descriptors: each reads as its own
/// subrange's bytes, and (the wrong twin) not as the other's. Where this
/// driver's exporter does not map a dma-buf to the CPU (`mmap` fails), the
/// test says so with the errno measured, and checks instead what a process
/// can: the two exports are two dma-bufs (their inodes differ), each of its
/// subrange's size.
#[cfg(unix)]
fn exported_bytes_read_through_the_descriptor() -> MayIgnore {
    on_device(false, |_| {
        let page = page_size();
        let buf = DeviceBuf::new(2 * MIB)?;
        let data = common::pattern(buf.len, 0x0d3a);
        common::write(buf.ptr, &data)?;
        cu!(cuCtxSynchronize())?;
        let subranges = [(page, "page 1"), (3 * page, "page 3")];
        let mut fds = vec![];
        for &(at, what) in &subranges {
            fds.push(export(buf.ptr + at as u64, page, what)?);
        }
        let mut c = Checks::new();
        let mut read = vec![];
        for (fd, &(at, what)) in fds.iter().zip(&subranges) {
            match mapped_bytes(fd, page)? {
                Ok(bytes) => {
                    c.ok(common::same(&bytes, &data[at..at + page], what));
                    read.push(bytes);
                }
                Err(e) => println!(
                    "  mmap of the dma-buf of {what}: {e} (errno {}): this driver's exporter does not map it to the CPU",
                    e.raw_os_error().unwrap_or(0)
                ),
            }
        }
        if read.len() == 2 {
            let (other_at, other) = (subranges[1].0, subranges[1].1);
            c.that(
                common::same(&read[0], &data[other_at..other_at + page], other).is_err(),
                "the byte check took page 1's dma-buf for page 3's",
            );
            return c.finish();
        }
        c.that(
            read.is_empty(),
            "one subrange's dma-buf maps and the other's does not",
        );
        // What a process can check without a mapping: two dma-bufs, each of
        // its subrange's size ([`export`] checked the sizes).
        let ino = |fd: &OwnedFd| -> Result<u64, Failed> {
            let mut st: libc::stat = unsafe { core::mem::zeroed() };
            let ok = unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } == 0;
            let e = std::io::Error::last_os_error();
            ensure!(ok, "fstat of a dma-buf: {e}");
            Ok(st.st_ino as u64)
        };
        let (a, b) = (ino(&fds[0])?, ino(&fds[1])?);
        println!("  the two exports' inodes: {a}, {b}");
        c.that(
            a != b,
            format!("the exports of page 1 and page 3 are one dma-buf (inode {a})"),
        );
        c.finish()
    })
}

/// A 2 MiB allocation from a created pool (`cuMemAllocFromPoolAsync`)
/// exports a dma-buf of 2 MiB.
#[cfg(unix)]
fn pool_allocation_exports_its_size() -> MayIgnore {
    on_device(false, |gpu| {
        let mut props = CUmemPoolProps::default();
        props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.location = common::vmm::device_location(gpu.dev);
        let mut pool: CUmemoryPool = core::ptr::null_mut();
        cu!(cuMemPoolCreate(&mut pool, &props))?;
        let s = CuStream::new()?;
        let mut p: CUdeviceptr = 0;
        cu!(cuMemAllocFromPoolAsync(&mut p, 2 * MIB, pool, s.0))?;
        s.sync()?;
        let checked = export(p, 2 * MIB, "a pool allocation").map(drop);
        cu!(cuMemFreeAsync(p, s.0))?;
        s.sync()?;
        cu!(cuMemPoolDestroy(pool))?;
        checked
    })
}

/// `CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE` (a dma-buf mapped through
/// PCIe BAR1): the reference says it gives such a descriptor "on a supported
/// platform" and an error otherwise; success (a dma-buf of the range's size)
/// or `CUDA_ERROR_NOT_SUPPORTED`, printed, and nothing else.
#[cfg(all(unix, cuda_12080))]
fn pcie_mapping_type_flag() -> MayIgnore {
    on_device(false, |_| {
        let buf = DeviceBuf::new(2 * MIB)?;
        let flag = CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE.0 as u64;
        let (r, fd) = export_raw(buf.ptr, buf.len, flag);
        let what = "cuMemGetHandleForAddressRange(DMA_BUF_FD, MAPPING_TYPE_PCIE)";
        println!("  {what} returned {}", common::error_name(r));
        if r == CUDA_SUCCESS {
            let fd = fd.ok_or_else(|| format!("{what}: CUDA_SUCCESS and no descriptor"))?;
            return check_dma_buf(&fd, buf.len, "a BAR1 dma-buf");
        }
        ensure!(fd.is_none(), "{what}: a descriptor with an error");
        ensure!(
            r == CUDA_ERROR_NOT_SUPPORTED,
            "{what} returned {}, neither success nor CUDA_ERROR_NOT_SUPPORTED",
            common::error_name(r)
        );
        Ok(())
    })
}

/// Before 12.8 the flag is not in the headers: reported with the release.
#[cfg(all(unix, not(cuda_12080)))]
fn pcie_mapping_type_flag() -> MayIgnore {
    let why = "CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE: not in these headers (added in 12.8)";
    Ok(Some(common::release_named(why)))
}

fn main() {
    common::main(
        device_tests![
            mem_alloc_exports_its_size if cfg(unix) else common::POSIX_ONLY,
            page_aligned_subrange_exports_its_size if cfg(unix) else common::POSIX_ONLY,
            exported_bytes_read_through_the_descriptor if cfg(unix) else common::POSIX_ONLY,
            unaligned_range_refused if cfg(unix) else common::POSIX_ONLY,
            rdma_capable_vmm_mapping_exports_its_size if cfg(unix) else common::POSIX_ONLY,
            vmm_range_of_two_allocations_exports_its_size if cfg(unix) else common::POSIX_ONLY,
            pool_allocation_exports_its_size if cfg(unix) else common::POSIX_ONLY,
            pcie_mapping_type_flag if cfg(unix) else common::POSIX_ONLY,
        ],
        &[],
    );
}
