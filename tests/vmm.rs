//! Virtual Memory Management (driver API 6.14) on a real device.
//!
//! Every entry point of the group is called with its documented effect read
//! back: bytes through mappings (one allocation at two addresses, a range grown
//! by a second allocation, host and host-NUMA memory, a sparse array's tiles),
//! access flags, allocation properties, reference counting seen in
//! `cuMemGetInfo`, a POSIX file descriptor shared with one importer process a
//! GPU, the fabric handle type, bad input with its exact error code, and
//! 10,000 create/map/unmap/release cycles without a leak. Where there are two
//! GPUs or more, every one takes part and every ordered pair is checked
//! (`tests/common/gpus.rs`): memory on each device granted to each other, and
//! one range striped over them all.
// The driver's structs are filled in field by field, as C code does.
#![allow(clippy::field_reassign_with_default)]

mod common;

use common::process_death as pd;
use common::vmm::*;
use common::TestResult;
use common::{
    error_name, gpus, pattern, read, reads, round_trip, same, write, BadInput, Checks, Gpu,
};
use cuda_mem_sys::*;
use libtest_mimic::Failed;
use std::ffi::c_void;
use std::time::Instant;

/// The size of the allocation a parent shares with its importer child.
#[cfg(unix)]
const SIZE_VAR: &str = "CUDA_MEM_SYS_VMM_SIZE";

/// The child roles of the process-death scenarios.
#[cfg(unix)]
const EXPORTER: &str = "vmm_exporter";
#[cfg(unix)]
const IMPORTER: &str = "vmm_importer";

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

fn properties(h: Handle) -> Result<CUmemAllocationProp, Failed> {
    let mut p = CUmemAllocationProp::default();
    // Poison the fields the driver must fill in.
    p.type_ = CUmemAllocationType(0x7f);
    p.location.type_ = CUmemLocationType(0x7f);
    p.location.id = -77;
    p.requestedHandleTypes = CUmemAllocationHandleType(0x7f);
    cu!(cuMemGetAllocationPropertiesFromHandle(&mut p, h))?;
    Ok(p)
}

/// The properties read back from a handle: type PINNED, a location type out of
/// `locs` (with `id` where given), requested handle types out of `handles`
/// (first the documented value, then what driver 580.159 was seen to report).
fn assert_props(
    c: &mut Checks,
    p: &CUmemAllocationProp,
    locs: &[CUmemLocationType],
    id: Option<i32>,
    handles: &[CUmemAllocationHandleType],
    what: &str,
) {
    println!(
        "    {what}: type {}, location {{ type {}, id {} }}, requestedHandleTypes {}, usage {}",
        p.type_.0,
        p.location.type_.0,
        common::cu_loc_id(&p.location),
        p.requestedHandleTypes.0,
        p.allocFlags.usage
    );
    let pinned = CU_MEM_ALLOCATION_TYPE_PINNED;
    c.eq(format!("{what}: type (PINNED)"), p.type_, pinned);
    let (loc, handle) = (p.location.type_, p.requestedHandleTypes);
    let loc_ids: Vec<_> = locs.iter().map(|l| l.0).collect();
    let handle_ids: Vec<_> = handles.iter().map(|h| h.0).collect();
    let msg = format!(
        "{what}: location type {} (expected one of {loc_ids:?})",
        loc.0
    );
    c.that(locs.contains(&loc), msg);
    if let Some(id) = id {
        let got = common::cu_loc_id(&p.location);
        c.eq(format!("{what}: location id"), got, id);
    }
    let msg = format!(
        "{what}: requestedHandleTypes {} (expected one of {handle_ids:?})",
        handle.0
    );
    c.that(handles.contains(&handle), msg);
}

/// [`assert_props`] of memory on device `dev`.
fn assert_device_props(
    c: &mut Checks,
    p: &CUmemAllocationProp,
    dev: CUdevice,
    handles: &[CUmemAllocationHandleType],
    what: &str,
) {
    let device = [CU_MEM_LOCATION_TYPE_DEVICE];
    assert_props(c, p, &device, Some(dev), handles, what);
}

// ---------------------------------------------------------------------------
// Granularity, device memory, reservations
// ---------------------------------------------------------------------------

fn granularity_minimum_and_recommended() -> TestResult {
    let gpu = Gpu::new(0)?;
    gpu.require(
        CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
        "device 0 does not support virtual memory management",
    )?;
    let none = CU_MEM_HANDLE_TYPE_NONE;
    let mut tile_pool = device_prop(gpu.dev, none);
    tile_pool.allocFlags.usage = CU_MEM_CREATE_USAGE_TILE_POOL as u16;
    #[allow(unused_mut)] // nothing is added before 12.2
    let mut props = [
        ("device", device_prop(gpu.dev, none)),
        ("device, POSIX fd", device_prop(gpu.dev, FD)),
        ("device, tile pool", tile_pool),
    ]
    .to_vec();
    #[cfg(cuda_12020)]
    {
        let numa = gpu.attribute(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID)?.max(0);
        props.push(("host", prop_at(CU_MEM_LOCATION_TYPE_HOST, 0, none)));
        let host_numa = prop_at(CU_MEM_LOCATION_TYPE_HOST_NUMA, numa, none);
        props.push(("host NUMA", host_numa));
    }
    #[cfg(not(cuda_12020))]
    println!("  skipped: host and host-NUMA granularity: CU_MEM_LOCATION_TYPE_HOST* not in these headers (added in 12.2)");
    for (what, prop) in &props {
        let min = granularity(prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)?;
        let rec = granularity(prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)?;
        println!("  {what}: minimum {min} B, recommended {rec} B");
        let (pow2, multiple) = (min.is_power_of_two(), rec >= min && rec % min == 0);
        ensure!(pow2, "{what}: minimum {min} not a power of two");
        ensure!(
            multiple,
            "{what}: recommended {rec} not a multiple of {min}"
        );
    }
    // The minimum is what cuMemCreate accepts: a multiple of it works, half of it does not.
    let prop = device_prop(gpu.dev, CU_MEM_HANDLE_TYPE_NONE);
    let min = min_granularity(&prop)?;
    let h = create(min, &prop)?;
    cu!(cuMemRelease(h))?;
    let mut h: Handle = 0;
    cu_err!(
        CUDA_ERROR_INVALID_VALUE,
        cuMemCreate(&mut h, min / 2, &prop, 0)
    )?;
    let h = create(3 * min, &prop)?;
    cu!(cuMemRelease(h))?;
    Ok(())
}

fn device_memory_map_round_trip() -> TestResult {
    let gpu = Gpu::new(0)?;
    let mut c = Checks::default();
    let prop = device_prop(gpu.dev, CU_MEM_HANDLE_TYPE_NONE);
    let g = min_granularity(&prop)?;
    let size = 2 * g;

    let h = create(size, &prop)?;
    let p = properties(h)?;
    assert_device_props(&mut c, &p, gpu.dev, &[CU_MEM_HANDLE_TYPE_NONE], "created");

    let ptr = reserve(size, 0, 0)?;
    println!("  reserved {size} B at {ptr:#x}");
    let aligned = ptr != 0 && ptr % g as u64 == 0;
    ensure!(aligned, "reservation {ptr:#x} not aligned to {g}");
    cu!(cuMemMap(ptr, size, 0, h, 0))?;
    // "all mappings start with no accessibility setup"
    let before = get_access(ptr, device_location(gpu.dev))?;
    println!("  access after cuMemMap, before cuMemSetAccess: {before}");
    c.eq(
        "access before cuMemSetAccess (PROT_NONE is 0)",
        before,
        NONE,
    );
    set_rw(ptr, size, gpu.dev)?;
    let after = get_access(ptr, device_location(gpu.dev))?;
    let inside = get_access(ptr + size as u64 - 1, device_location(gpu.dev))?;
    println!("  access after cuMemSetAccess: {after} (last byte {inside})");
    c.eq("access (READWRITE is 3)", after, RW);
    c.eq("last byte access", inside, RW);
    // The wrong twin of the read-back every access set gets (common::vmm::
    // set_access): the range taken for read-only must be refused.
    let read_only = access_desc(device_location(gpu.dev), CU_MEM_ACCESS_FLAGS_PROT_READ);
    c.that(
        common::vmm::read_back(ptr, size, &[read_only]).is_err(),
        "the access read-back took a read-write range for read-only",
    );

    let data = pattern(size, 1);
    write(ptr, &data)?;
    same(&read(ptr, size)?, &data, "bytes through the mapping")?;
    cu!(cuMemsetD32(ptr + g as u64, 0xA5C3_5A3C, 16))?;
    let mut want = data.clone();
    for k in 0..16 {
        want[g + 4 * k..g + 4 * k + 4].copy_from_slice(&0xA5C3_5A3Cu32.to_le_bytes());
    }
    same(&read(ptr, size)?, &want, "bytes after cuMemsetD32")?;

    // Unmapping turns the range back into a reservation; the physical memory
    // (still held by the handle) keeps its bytes and maps again.
    cu!(cuMemUnmap(ptr, size))?;
    let mut rh: Handle = 0;
    c.code(
        unsafe { cuMemRetainAllocationHandle(&mut rh, ptr as *mut c_void) },
        CUDA_ERROR_INVALID_VALUE,
        "cuMemRetainAllocationHandle on the unmapped range",
    );
    cu!(cuMemMap(ptr, size, 0, h, 0))?;
    let again = get_access(ptr, device_location(gpu.dev))?;
    c.eq("access of the new mapping (PROT_NONE is 0)", again, NONE);
    set_rw(ptr, size, gpu.dev)?;
    same(&read(ptr, size)?, &want, "bytes after unmap and map again")?;

    unmap_release_free(ptr, size, h)?;
    c.finish()
}

fn one_allocation_at_two_addresses() -> TestResult {
    let gpu = Gpu::new(0)?;
    let prop = device_prop(gpu.dev, CU_MEM_HANDLE_TYPE_NONE);
    let g = min_granularity(&prop)?;
    let h = create(g, &prop)?;
    let a = reserve_map_rw(g, h, gpu.dev)?;
    let b = reserve_map_rw(g, h, gpu.dev)?;
    println!("  one allocation at {a:#x} and {b:#x}");
    ensure!(a != b, "two reservations at the same address {a:#x}");

    let data = pattern(g, 2);
    write(a, &data)?;
    reads(b, &data, "written at the first address, read at the second")?;
    cu!(cuMemsetD8(b + 4096, 0x6B, 4096))?;
    let mut want = data;
    want[4096..8192].fill(0x6B);
    reads(a, &want, "set at the second address, read at the first")?;

    // The second mapping outlives the first.
    cu!(cuMemUnmap(a, g))?;
    reads(b, &want, "second address after unmapping the first")?;
    unmap_free(b, g)?;
    cu!(cuMemRelease(h))?;
    cu!(cuMemAddressFree(a, g))
}

fn grown_range_is_contiguous() -> TestResult {
    let gpu = Gpu::new(0)?;
    let mut c = Checks::default();
    let prop = device_prop(gpu.dev, CU_MEM_HANDLE_TYPE_NONE);
    let g = min_granularity(&prop)?;
    let gg = g as u64;
    let base = reserve(2 * g, 0, 0)?;

    // First allocation in the first half of the reservation.
    let h1 = create(g, &prop)?;
    cu!(cuMemMap(base, g, 0, h1, 0))?;
    set_rw(base, g, gpu.dev)?;
    let first = pattern(g, 3);
    write(base, &first)?;

    // Grown: a second allocation mapped right after the first.
    let h2 = create(g, &prop)?;
    cu!(cuMemMap(base + gg, g, 0, h2, 0))?;
    // One cuMemSetAccess over the whole range, both allocations.
    set_rw(base, 2 * g, gpu.dev)?;
    let acc = get_access(base + gg, device_location(gpu.dev))?;
    c.eq("second allocation's access", acc, RW);

    // One host-to-device copy spanning the boundary.
    let span = pattern(g, 4);
    write(base + gg / 2, &span)?;
    let all = read(base, 2 * g)?;
    same(&all[..g / 2], &first[..g / 2], "first half before the span")?;
    same(&all[g / 2..g / 2 + g], &span, "copy spanning the boundary")?;

    // One device-to-device copy spanning the boundary, both ways.
    let scratch_buf = common::DeviceBuf::new(g)?;
    let scratch = scratch_buf.ptr;
    cu!(cuMemcpyDtoD(scratch, base + gg / 2, g))?;
    same(&read(scratch, g)?, &span, "DtoD out of the spanning range")?;
    let other = pattern(g, 5);
    write(scratch, &other)?;
    cu!(cuMemcpyDtoD(base + gg / 4, scratch, g))?;
    let all = read(base, 2 * g)?;
    let what = "DtoD into the spanning range";
    same(&all[g / 4..g / 4 + g], &other, what)?;

    // The second half really is the second allocation: map it alone elsewhere.
    let alone = reserve_map_rw(g, h2, gpu.dev)?;
    let what = "second allocation seen at its own address";
    reads(alone, &all[g..], what)?;
    unmap_free(alone, g)?;

    drop(scratch_buf);
    // Each cuMemMap is unmapped as a whole.
    cu!(cuMemUnmap(base, g))?;
    cu!(cuMemUnmap(base + gg, g))?;
    cu!(cuMemRelease(h1))?;
    cu!(cuMemRelease(h2))?;
    cu!(cuMemAddressFree(base, 2 * g))?;
    c.finish()
}

fn reserve_with_hint_and_alignment() -> TestResult {
    let gpu = Gpu::new(0)?;
    let prop = device_prop(gpu.dev, CU_MEM_HANDLE_TYPE_NONE);
    let g = min_granularity(&prop)?;
    let gg = g as u64;

    // Alignment: several reservations, each on a 32-granule boundary.
    let align = 32 * g;
    let mut aligned = Vec::new();
    for _ in 0..4 {
        let p = reserve(g, align, 0)?;
        aligned.push(p);
        let what = format!("reservation {p:#x} not aligned to {align:#x}");
        ensure!(p % align as u64 == 0, "{what}");
    }
    println!("  aligned to {align:#x}: {aligned:x?}");
    for p in aligned {
        cu!(cuMemAddressFree(p, g))?;
    }

    // Hint: a hole known to be free (just released) is taken where asked.
    let hole = reserve(8 * g, 0, 0)?;
    cu!(cuMemAddressFree(hole, 8 * g))?;
    let hint = hole + 3 * gg;
    let got = reserve(2 * g, 0, hint)?;
    println!("  hint {hint:#x} -> {got:#x}");
    ensure!(got == hint, "reserved with hint {hint:#x} at {got:#x}");
    // Hint and alignment together.
    let hint2 = hole + 6 * gg;
    let got2 = reserve(g, g, hint2)?;
    println!("  hint {hint2:#x}, alignment {g:#x} -> {got2:#x}");
    ensure!(got2 == hint2, "reserved with hint {hint2:#x} at {got2:#x}");

    // The hinted range is a usable reservation.
    let h = create(2 * g, &prop)?;
    cu!(cuMemMap(got, 2 * g, 0, h, 0))?;
    set_rw(got, 2 * g, gpu.dev)?;
    round_trip(got, 2 * g, 6, "bytes at the hinted reservation")?;
    unmap_release_free(got, 2 * g, h)?;
    cu!(cuMemAddressFree(got2, g))?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Host memory
// ---------------------------------------------------------------------------

/// Host memory mapped for the device: bytes through the mapping, properties,
/// and the device's free memory untouched by the allocation.
#[cfg(cuda_12020)]
fn host_round_trip(loc: CUmemLocationType, id: i32, what: &str) -> TestResult {
    let gpu = Gpu::new(0)?;
    let mut c = Checks::default();
    let prop = prop_at(loc, id, CU_MEM_HANDLE_TYPE_NONE);
    let g = min_granularity(&prop)?;
    let size = g * (64usize << 20).div_ceil(g);
    println!("  {what}: granularity {g}, allocation {size} B");

    let free0 = pd::free_memory()?;
    let h = create(size, &prop)?;
    let free1 = pd::free_memory()?;
    let (before, after) = (pd::mib(free0), pd::mib(free1));
    println!("  device free memory {before} before, {after} after creating");
    let msg = format!("{what}: {size} B of host memory took device memory ({free0} -> {free1})");
    c.that(free1 + size / 2 > free0, msg);
    let p = properties(h)?;
    let (locs, want_id): (&[CUmemLocationType], _) = if loc == CU_MEM_LOCATION_TYPE_HOST {
        // A HOST allocation (no NUMA node asked for) reads back as HOST_NUMA
        // (with the node it landed on) from driver 580.159.
        (
            &[CU_MEM_LOCATION_TYPE_HOST, CU_MEM_LOCATION_TYPE_HOST_NUMA],
            None,
        )
    } else {
        (&[loc], Some(id))
    };
    assert_props(&mut c, &p, locs, want_id, &[CU_MEM_HANDLE_TYPE_NONE], what);

    let ptr = reserve(size, g, 0)?;
    cu!(cuMemMap(ptr, size, 0, h, 0))?;
    set_rw(ptr, size, gpu.dev)?;
    let acc = get_access(ptr, device_location(gpu.dev))?;
    c.eq(format!("{what}: device access"), acc, RW);

    let data = pattern(size, 7);
    write(ptr, &data)?;
    same(&read(ptr, size)?, &data, "host memory through the mapping")?;
    // The device reads and writes it too (device-to-device copies).
    let dbuf = common::DeviceBuf::new(size)?;
    cu!(cuMemcpyDtoD(dbuf.ptr, ptr, size))?;
    reads(dbuf.ptr, &data, "host memory copied to device memory")?;
    cu!(cuMemsetD8(dbuf.ptr, 0x3D, size))?;
    cu!(cuMemcpyDtoD(ptr, dbuf.ptr, size))?;
    cu!(cuCtxSynchronize())?;
    let what = "device memory copied to host memory";
    reads(ptr, &vec![0x3D; size], what)?;
    drop(dbuf);

    unmap_release_free(ptr, size, h)?;
    c.finish()
}

#[cfg(cuda_12020)]
fn host_memory_location_host() -> TestResult {
    #[cfg(cuda_13000)]
    println!(
        "  CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = {}",
        Gpu::new(0)?.attribute(CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)?
    );
    // The id is ignored for CU_MEM_LOCATION_TYPE_HOST.
    host_round_trip(CU_MEM_LOCATION_TYPE_HOST, 0, "host")
}

#[cfg(cuda_12020)]
fn host_memory_location_host_numa() -> TestResult {
    let gpu = Gpu::new(0)?;
    #[cfg(cuda_12090)]
    println!(
        "  CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = {}",
        gpu.attribute(CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)?
    );
    let id = gpu.attribute(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID)?;
    println!("  CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID = {id}");
    let numa = gpu.host_numa_node_or_0()?;
    host_round_trip(CU_MEM_LOCATION_TYPE_HOST_NUMA, numa, "host NUMA")?;
    // The CPU's own access (a child process: a wrong mapping must not take the
    // test binary down).
    common::wait_child(
        common::spawn_child("host_numa_cpu_access", &[]),
        "host_numa_cpu_access",
    )
}

/// Child: host-NUMA memory made accessible to the CPU too (a HOST_NUMA access
/// descriptor), read and written through the same virtual address by both.
#[cfg(not(cuda_12020))]
fn host_numa_cpu_access() -> TestResult {
    Err("CU_MEM_LOCATION_TYPE_HOST_NUMA: not in these headers (added in 12.2)".into())
}

#[cfg(cuda_12020)]
fn host_numa_cpu_access() -> TestResult {
    cu!(cuInit(0))?;
    let gpu = Gpu::new(0)?;
    let numa = gpu.host_numa_node_or_0()?;
    let prop = prop_at(
        CU_MEM_LOCATION_TYPE_HOST_NUMA,
        numa,
        CU_MEM_HANDLE_TYPE_NONE,
    );
    let g = min_granularity(&prop)?;
    let h = create(g, &prop)?;
    let ptr = reserve(g, g, 0)?;
    cu!(cuMemMap(ptr, g, 0, h, 0))?;
    let host_numa = common::cu_loc(CU_MEM_LOCATION_TYPE_HOST_NUMA, numa);
    set_rw_for(ptr, g, &[device_location(gpu.dev), host_numa])?;
    let host = get_access(ptr, host_numa)?;
    let dev = get_access(ptr, device_location(gpu.dev))?;
    println!("  child: host-NUMA access {host}, device access {dev}");
    let rw = host == RW && dev == RW;
    ensure!(rw, "access flags host {host}, device {dev}");

    let data = pattern(g, 8);
    write(ptr, &data)?;
    cu!(cuCtxSynchronize())?;
    let cpu = unsafe { std::slice::from_raw_parts_mut(ptr as usize as *mut u8, g) };
    same(cpu, &data, "CPU reading what the device copy wrote")?;
    let cpu_data = pattern(g, 9);
    cpu.copy_from_slice(&cpu_data);
    reads(ptr, &cpu_data, "device copy reading what the CPU wrote")?;

    unmap_release_free(ptr, g, h)?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Handles: retain, properties, reference counting
// ---------------------------------------------------------------------------

fn retain_handle_and_reference_counting() -> TestResult {
    let gpu = Gpu::new(0)?;
    let mut c = Checks::default();
    let prop = device_prop(gpu.dev, FD);
    let g = min_granularity(&prop)?;
    let size = 32 * g;

    // Warm up so that the driver's own first-use allocations are not counted.
    Mapping::new(&prop, g, gpu.dev)?.free()?;
    let free0 = pd::free_memory()?;
    let m = Mapping::new(&prop, size, gpu.dev)?;
    let (h, ptr) = (m.handle, m.ptr);
    let free_mapped = pd::free_memory()?;
    let msg = format!("creating {size} B took only {} B", free0 - free_mapped);
    c.that(free_mapped + size <= free0, msg);
    let data = pattern(size, 10);
    write(ptr, &data)?;

    // Any address inside the mapping gives the same handle back.
    let mut rh: Handle = 0;
    cu!(cuMemRetainAllocationHandle(
        &mut rh,
        (ptr + size as u64 / 2 + 12345) as *mut c_void
    ))?;
    println!("  created handle {h:#x}, retained {rh:#x}");
    c.that(rh == h, format!("retained handle {rh:#x} is not {h:#x}"));
    let p = properties(rh)?;
    assert_device_props(&mut c, &p, gpu.dev, &[FD], "retained");

    // Release the retained reference and the original: the mapping still holds
    // the memory.
    cu!(cuMemRelease(rh))?;
    cu!(cuMemRelease(h))?;
    reads(ptr, &data, "mapping after releasing both handles")?;
    let data2 = pattern(size, 11);
    write(ptr, &data2)?;
    reads(ptr, &data2, "writing after releasing both handles")?;
    let free_released = pd::free_memory()?;
    let (mib0, mib1, mib2) = (pd::mib(free0), pd::mib(free_mapped), pd::mib(free_released));
    println!("  free memory: {mib0} at start, {mib1} mapped, {mib2} after both releases");
    let msg = format!("memory returned while still mapped ({free_released} free)");
    c.that(free_released + size <= free0, msg);

    // Retained again through the mapping: same handle, same properties.
    let mut rh2: Handle = 0;
    cu!(cuMemRetainAllocationHandle(&mut rh2, ptr as *mut c_void))?;
    c.that(rh2 == h, format!("retained again {rh2:#x}, not {h:#x}"));
    let p = properties(rh2)?;
    assert_device_props(&mut c, &p, gpu.dev, &[FD], "retained again");
    cu!(cuMemRelease(rh2))?;

    // The last reference goes with the mapping.
    cu!(cuMemUnmap(ptr, size))?;
    let free_unmapped = pd::free_memory()?;
    cu!(cuMemAddressFree(ptr, size))?;
    let free_end = pd::free_memory()?;
    let (mib0, mib1) = (pd::mib(free_unmapped), pd::mib(free_end));
    println!("  free memory: {mib0} after unmap, {mib1} after address free");
    let held = free0.saturating_sub(free_unmapped);
    c.that(
        free_unmapped + g > free0,
        format!("{held} B still held after the unmap"),
    );
    let leaked = free0.saturating_sub(free_end);
    c.that(free_end + g > free0, format!("{leaked} B leaked"));
    c.finish()
}

// ---------------------------------------------------------------------------
// Sharing: POSIX file descriptors across processes, fabric handles
// ---------------------------------------------------------------------------

/// A POSIX descriptor of device 0's memory sent to one importer process a
/// GPU, importer `k` on device `k` (with one GPU: one importer, beside the
/// exporter on device 0). Each imports, maps for its own device and reads the
/// exporter's bytes; then each writes its own slice; the exporter reads every
/// importer's slice, and each importer reads every other's; the importers'
/// release leaves the exporter's memory alone.
#[cfg(unix)]
fn posix_fd_across_two_processes() -> TestResult {
    let n = gpus::device_count()? as usize;
    let gpu = Gpu::new(0)?;
    let m = Mapping::posix_shareable(&gpu, 2)?;
    write(m.ptr, &pattern(m.size, 20))?;
    // Checked open there.
    let fd = m.export_fd()?;
    println!("  exported descriptor {fd} to {n} importers, one a device");
    let talked = share_with_importers(fd, &m, n);
    let closed = close_fd(fd);
    // The importers' release leaves the exporter's memory alone.
    let what = "exporter after the importers left";
    let after = reads(m.ptr, &gpus::sliced(&pattern(m.size, 20), n, 21), what);
    let freed = m.free();
    talked.and(closed).and(after).and(freed)
}

/// The exporter's side of [`posix_fd_across_two_processes`]: each step goes
/// to every importer before the next (no importer writes before all have
/// read the exporter's bytes); every answer is waited for with a bound.
#[cfg(unix)]
fn share_with_importers(fd: i32, m: &Mapping, n: usize) -> TestResult {
    let env = [(SIZE_VAR, m.size.to_string())];
    let mut importers = gpus::spawn_importers("posix_fd_importer", n, &env)?;
    for p in &mut importers {
        p.link.set_timeout(std::time::Duration::from_secs(120))?;
        p.link.send_fd(fd)?;
    }
    // Each importer read the exporter's bytes; then each wrote its slice.
    gpus::every_importer(&mut importers, None, "R")?;
    gpus::every_importer(&mut importers, Some("W"), "W")?;
    let want = gpus::sliced(&pattern(m.size, 20), n, 21);
    reads(m.ptr, &want, "exporter reading every importer's bytes")?;
    // Each read every other importer's slice, then released its mapping.
    gpus::every_importer(&mut importers, Some("C"), "C")?;
    gpus::every_importer(&mut importers, Some("D"), "D")?;
    gpus::finish_importers(importers)
}

/// Child: imports the descriptor sent over the socket on its own device
/// ([`gpus::importer_place`]), maps it for that device, reads the exporter's
/// bytes (`R`), writes its own slice when told (`W`), reads every
/// importer's slice when told (`C`), releases when told (`D`).
#[cfg(unix)]
fn posix_fd_importer() -> TestResult {
    cu!(cuInit(0))?;
    let (k, n) = gpus::importer_place()?;
    let mut dev0: CUdevice = 0;
    cu!(cuDeviceGet(&mut dev0, 0))?;
    let gpu = Gpu::new(k as i32)?;
    let mut link = pd::Link::from_parent()?;
    link.set_timeout(std::time::Duration::from_secs(120))?;
    let size: usize = std::env::var(SIZE_VAR)?.parse()?;
    let fd = link.recv_fd()?;
    let pid = std::process::id();
    println!("  importer {k} of {n} (pid {pid}, device {k}): descriptor {fd}");

    let mut h: Handle = 0;
    common::check(import_fd(&mut h, fd), "cuMemImportFromShareableHandle")?;
    close_fd(fd)?;
    let mut c = Checks::default();
    let p = properties(h)?;
    // The imported handle reads back with no requested handle types
    // (driver 580.159); the exporter's own handle reports POSIX_FD. The
    // memory is device 0's, whichever device imports it.
    let handles = [FD, CU_MEM_HANDLE_TYPE_NONE];
    assert_device_props(&mut c, &p, dev0, &handles, "imported");
    c.finish()?;

    let ptr = reserve_map_rw(size, h, gpu.dev)?;
    let ask = |link: &mut pd::Link, want: &str| -> TestResult {
        let said = link.expect()?;
        ensure!(said == want, "exporter sent {said:?}, not {want:?}");
        Ok(())
    };
    let exporters = pattern(size, 20);
    reads(ptr, &exporters, "importer reading the exporter's bytes")?;
    link.send("R")?;
    ask(&mut link, "W")?;
    let mine = gpus::slice(size, n, k);
    let seed = 21 + k as u32;
    write(ptr + mine.start as u64, &pattern(mine.len(), seed))?;
    cu!(cuCtxSynchronize())?;
    link.send("W")?;
    ask(&mut link, "C")?;
    let what = "importer reading every importer's bytes";
    reads(ptr, &gpus::sliced(&exporters, n, 21), what)?;
    link.send("C")?;
    ask(&mut link, "D")?;
    unmap_release_free(ptr, size, h)?;
    link.send("D")
}

// ---------------------------------------------------------------------------
// Process death: POSIX descriptors when one side is SIGKILLed
// (tests/common/process_death.rs has the scenarios and the wire format)
// ---------------------------------------------------------------------------

/// What the importer child holds: the imported handle mapped read-write.
#[cfg(unix)]
struct VmmHeld {
    h: Handle,
    ptr: CUdeviceptr,
    size: usize,
    _gpu: Gpu,
}

#[cfg(unix)]
impl pd::Held for VmmHeld {
    fn read(&mut self, n: usize) -> Result<Vec<u8>, String> {
        pd::read_device(self.ptr, n)
    }
    fn release(self: Box<Self>) -> String {
        pd::steps(&[
            ("unmap", unsafe { cuMemUnmap(self.ptr, self.size) }),
            ("release", unsafe { cuMemRelease(self.h) }),
            ("address_free", unsafe {
                cuMemAddressFree(self.ptr, self.size)
            }),
        ])
    }
}

#[cfg(unix)]
fn vmm_import(fd: i32, f: &pd::Fields) -> Result<Box<dyn pd::Held>, String> {
    let gpu = Gpu::new(0).map_err(pd::message)?;
    let size = f.number("bytes").map_err(pd::message)? as usize;
    let mut h: Handle = 0;
    let r = import_fd(&mut h, fd);
    unsafe { libc::close(fd) };
    if r != CUDA_SUCCESS {
        return Err(pd::code(r));
    }
    let ptr = reserve(size, 0, 0).map_err(pd::message)?;
    let mapped = unsafe { cuMemMap(ptr, size, 0, h, 0) };
    if mapped != CUDA_SUCCESS {
        unsafe {
            cuMemRelease(h);
            cuMemAddressFree(ptr, size);
        }
        return Err(format!("map:{}", pd::code(mapped)));
    }
    let held = VmmHeld {
        h,
        ptr,
        size,
        _gpu: gpu,
    };
    set_rw(ptr, size, held._gpu.dev).map_err(pd::message)?;
    Ok(Box::new(held))
}

/// Child: the importer of the process-death tests.
#[cfg(unix)]
fn vmm_importer() -> TestResult {
    pd::importer_main(vmm_import)
}

/// An importer child holding a mapping is SIGKILLed: the exporter's bytes are
/// intact, it keeps creating and releasing allocations, and once it releases
/// its own handle `cuMemGetInfo` shows the memory back.
#[cfg(unix)]
fn process_death_importer_killed_while_mapped() -> TestResult {
    let released = "after the exporter released its handle";
    common::vmm::pd_importer_killed("vmm_importer_killed_while_mapped", IMPORTER, released)
}

/// The exporter child is SIGKILLed while the importer child has the memory
/// mapped: a VMM handle is reference counted (an imported handle is one of
/// the "shareable counterparts" whose release frees the memory), so the
/// importer still reads the exporter's bytes; the memory comes back after.
#[cfg(unix)]
fn process_death_exporter_killed_importer_reads_on() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let (test, free) = ("vmm_exporter_killed", pd::free_memory);
    pd::exporter_killed(test, EXPORTER, IMPORTER, &[], true, free)
}

/// A descriptor received after its sender was SIGKILLed still imports and
/// reads the sender's bytes (the descriptor is a reference to the
/// allocation), and closing it returns the memory.
#[cfg(unix)]
fn process_death_descriptor_outlives_its_sender() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let (test, free) = ("vmm_descriptor_after_sender_died", pd::free_memory);
    pd::descriptor_after_sender_died(test, EXPORTER, IMPORTER, &[], true, free)
}

#[cfg(cuda_12030)]
fn fabric_handle() -> TestResult {
    let gpu = Gpu::new(0)?;
    println!(
        "  CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED = {}, sizeof(CUmemFabricHandle) = {}",
        gpu.attribute(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED)?,
        core::mem::size_of::<CUmemFabricHandle>()
    );
    let size = core::mem::size_of::<CUmemFabricHandle>();
    ensure!(size == 64, "CUmemFabricHandle is {size} bytes, not 64");
    let prop = device_prop(gpu.dev, CU_MEM_HANDLE_TYPE_FABRIC);
    let mut g = 0usize;
    let r =
        unsafe { cuMemGetAllocationGranularity(&mut g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) };
    println!("  granularity for fabric memory: {} ({g} B)", error_name(r));
    if r != CUDA_SUCCESS {
        g = min_granularity(&device_prop(gpu.dev, CU_MEM_HANDLE_TYPE_NONE))?;
    }
    let mut h: Handle = 0;
    let r = unsafe { cuMemCreate(&mut h, g, &prop, 0) };
    if r == CUDA_ERROR_NOT_PERMITTED || r == CUDA_ERROR_NOT_SUPPORTED {
        let code = error_name(r);
        println!("  cuMemCreate with CU_MEM_HANDLE_TYPE_FABRIC: {code} (no IMEX channel)");
        // The process goes on working.
        let plain = device_prop(gpu.dev, CU_MEM_HANDLE_TYPE_NONE);
        let m = Mapping::new(&plain, g, gpu.dev)?;
        round_trip(m.ptr, 4096, 30, "after the fabric refusal")?;
        return m.free();
    }
    common::check(r, "cuMemCreate(CU_MEM_HANDLE_TYPE_FABRIC)")?;
    println!("  cuMemCreate with CU_MEM_HANDLE_TYPE_FABRIC succeeded");
    let mut fh = CUmemFabricHandle::default();
    let (fhp, fabric) = (
        (&mut fh as *mut CUmemFabricHandle).cast(),
        CU_MEM_HANDLE_TYPE_FABRIC,
    );
    cu!(cuMemExportToShareableHandle(fhp, h, fabric, 0))?;
    ensure!(fh.data.iter().any(|&b| b != 0), "fabric handle is all zero");
    let mut h2: Handle = 0;
    cu!(cuMemImportFromShareableHandle(&mut h2, fhp, fabric))?;
    // The imported handle is the same memory.
    let a = reserve_map_rw(g, h, gpu.dev)?;
    let b = reserve_map_rw(g, h2, gpu.dev)?;
    let data = pattern(g, 31);
    write(a, &data)?;
    same(&read(b, g)?, &data, "through the imported fabric handle")?;
    unmap_free(a, g)?;
    unmap_free(b, g)?;
    cu!(cuMemRelease(h2))?;
    cu!(cuMemRelease(h))
}

// ---------------------------------------------------------------------------
// Sparse arrays: cuMemMapArrayAsync
// ---------------------------------------------------------------------------

struct Sparse {
    array: CUarray,
    tile_w: u32,
    tile_h: u32,
    stream: CUstream,
    dev_mask: u32,
}

impl Sparse {
    fn info(
        &self,
        tile_x: u32,
        op: CUmemOperationType,
        pool: Handle,
        pool_offset: u64,
    ) -> CUarrayMapInfo {
        let mut m = CUarrayMapInfo::default();
        m.resourceType = CU_RESOURCE_TYPE_ARRAY;
        m.resource.array = self.array;
        m.subresourceType = CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_SPARSE_LEVEL;
        m.subresource.sparseLevel.level = 0;
        m.subresource.sparseLevel.layer = 0;
        m.subresource.sparseLevel.offsetX = tile_x * self.tile_w;
        m.subresource.sparseLevel.offsetY = 0;
        m.subresource.sparseLevel.offsetZ = 0;
        m.subresource.sparseLevel.extentWidth = self.tile_w;
        m.subresource.sparseLevel.extentHeight = self.tile_h;
        m.subresource.sparseLevel.extentDepth = 1;
        m.memOperationType = op;
        m.memHandleType = CU_MEM_HANDLE_TYPE_GENERIC;
        m.memHandle.memHandle = pool;
        m.offset = pool_offset;
        m.deviceBitMask = self.dev_mask;
        m
    }

    fn apply(&self, infos: &mut [CUarrayMapInfo]) -> TestResult {
        cu!(cuMemMapArrayAsync(
            infos.as_mut_ptr(),
            infos.len() as u32,
            self.stream
        ))?;
        cu!(cuStreamSynchronize(self.stream))
    }

    fn tile_bytes(&self) -> usize {
        self.tile_w as usize * self.tile_h as usize * 4
    }

    /// Copies one tile's worth of u32 texels (as bytes) into tile `tile_x` of row 0.
    fn put(&self, tile_x: u32, data: &[u8]) -> TestResult {
        let mut c = CUDA_MEMCPY2D::default();
        c.srcMemoryType = CU_MEMORYTYPE_HOST;
        c.srcHost = data.as_ptr().cast();
        c.srcPitch = self.tile_w as usize * 4;
        c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
        c.dstArray = self.array;
        c.dstXInBytes = (tile_x * self.tile_w) as usize * 4;
        c.dstY = 0;
        c.WidthInBytes = self.tile_w as usize * 4;
        c.Height = self.tile_h as usize;
        cu!(cuMemcpy2D(&c))
    }

    fn get(&self, tile_x: u32) -> Result<Vec<u8>, Failed> {
        let mut out = vec![0u8; self.tile_bytes()];
        let mut c = CUDA_MEMCPY2D::default();
        c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
        c.srcArray = self.array;
        c.srcXInBytes = (tile_x * self.tile_w) as usize * 4;
        c.srcY = 0;
        c.dstMemoryType = CU_MEMORYTYPE_HOST;
        c.dstHost = out.as_mut_ptr().cast();
        c.dstPitch = self.tile_w as usize * 4;
        c.WidthInBytes = self.tile_w as usize * 4;
        c.Height = self.tile_h as usize;
        cu!(cuMemcpy2D(&c))?;
        Ok(out)
    }
}

fn sparse_array_tile_mapping() -> TestResult {
    let gpu = Gpu::new(0)?;
    let mut c = Checks::default();
    gpu.require(
        CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED,
        "device 0 has no sparse CUDA arrays",
    )?;
    let size = core::mem::size_of::<CUarrayMapInfo>();
    println!("  sizeof(CUarrayMapInfo) = {size} (gcc: 96)");
    let mut desc = CUDA_ARRAY3D_DESCRIPTOR::default();
    desc.Width = 1024;
    desc.Height = 1024;
    desc.Depth = 0;
    desc.Format = CU_AD_FORMAT_UNSIGNED_INT32;
    desc.NumChannels = 1;
    desc.Flags = CUDA_ARRAY3D_SPARSE;
    let mut array: CUarray = core::ptr::null_mut();
    cu!(cuArray3DCreate(&mut array, &desc))?;
    let mut sp = CUDA_ARRAY_SPARSE_PROPERTIES::default();
    cu!(cuArrayGetSparseProperties(&mut sp, array))?;
    let (w, h, d) = (
        sp.tileExtent.width,
        sp.tileExtent.height,
        sp.tileExtent.depth,
    );
    let (level, size, flags) = (sp.miptailFirstLevel, sp.miptailSize, sp.flags);
    println!("  tile {w}x{h}x{d} texels, mip tail from level {level} ({size} B), flags {flags}");
    ensure!(w > 0 && h > 0 && 1024 % w == 0, "tile extent {w}x{h}");
    let stream = common::CuStream::new()?;
    let s = Sparse {
        array,
        tile_w: sp.tileExtent.width,
        tile_h: sp.tileExtent.height,
        stream: stream.0,
        dev_mask: 1 << gpu.dev,
    };
    let tile = s.tile_bytes() as u64;
    println!("  tile size {tile} B");

    // The tile pool.
    let mut pool_prop = device_prop(gpu.dev, CU_MEM_HANDLE_TYPE_NONE);
    pool_prop.allocFlags.usage = CU_MEM_CREATE_USAGE_TILE_POOL as u16;
    let pool_size = min_granularity(&pool_prop)?;
    let two = pool_size as u64 >= 2 * tile;
    ensure!(two, "pool {pool_size} B smaller than two tiles");
    let pool = create(pool_size, &pool_prop)?;
    // cuMemGetAllocationPropertiesFromHandle reads allocFlags.usage back as 0
    // (driver 580.159), so the flag's effect is checked instead: the pool maps
    // array tiles, a plain allocation is refused (below).
    let p = properties(pool)?;
    println!("  tile pool's usage reads back as {}", p.allocFlags.usage);

    // Tiles 0 and 1 of row 0 both on the pool's second tile: they alias.
    s.apply(&mut [
        s.info(0, CU_MEM_OPERATION_TYPE_MAP, pool, tile),
        s.info(1, CU_MEM_OPERATION_TYPE_MAP, pool, tile),
    ])?;
    let a = pattern(tile as usize, 40);
    s.put(0, &a)?;
    same(&s.get(0)?, &a, "tile 0 read back")?;
    let what = "tile 1 (same pool offset) shows tile 0's bytes";
    same(&s.get(1)?, &a, what)?;
    let b = pattern(tile as usize, 41);
    s.put(1, &b)?;
    same(&s.get(0)?, &b, "tile 0 shows tile 1's bytes")?;

    // Bad map requests (documented: CUDA_ERROR_INVALID_VALUE); the mapped
    // tiles keep working after each.
    let mut bad_mask = s.info(2, CU_MEM_OPERATION_TYPE_MAP, pool, 0);
    bad_mask.deviceBitMask = 0;
    #[rustfmt::skip]
    bad!(c, CUDA_ERROR_INVALID_VALUE, cuMemMapArrayAsync(&mut bad_mask, 1, s.stream));
    let mut bad_extent = s.info(2, CU_MEM_OPERATION_TYPE_MAP, pool, 0);
    bad_extent.subresource.sparseLevel.extentWidth = s.tile_w / 2;
    #[rustfmt::skip]
    bad!(c, CUDA_ERROR_INVALID_VALUE, cuMemMapArrayAsync(&mut bad_extent, 1, s.stream));
    let plain_prop = device_prop(gpu.dev, CU_MEM_HANDLE_TYPE_NONE);
    let plain = create(pool_size, &plain_prop)?;
    let mut not_pool = s.info(2, CU_MEM_OPERATION_TYPE_MAP, plain, 0);
    #[rustfmt::skip]
    bad!(c, CUDA_ERROR_INVALID_VALUE, cuMemMapArrayAsync(&mut not_pool, 1, s.stream));
    let mut misaligned = s.info(2, CU_MEM_OPERATION_TYPE_MAP, pool, tile / 2);
    #[rustfmt::skip]
    bad!(c, CUDA_ERROR_INVALID_VALUE, cuMemMapArrayAsync(&mut misaligned, 1, s.stream));
    cu!(cuStreamSynchronize(s.stream))?;
    if c.failures().iter().any(|f| f.contains("CUDA_SUCCESS")) {
        // A bad request was accepted: tile 2 may be mapped; unmap it.
        let mut unmap = s.info(2, CU_MEM_OPERATION_TYPE_UNMAP, 0, 0);
        let r = unsafe { cuMemMapArrayAsync(&mut unmap, 1, s.stream) };
        println!("    unmapping tile 2: {}", error_name(r));
        cu!(cuStreamSynchronize(s.stream))?;
    }
    cu!(cuMemRelease(plain))?;
    same(&s.get(0)?, &b, "tile 0 after the bad requests")?;

    // Tile 1 moved to the pool's first tile: no longer aliasing tile 0.
    s.apply(&mut [s.info(1, CU_MEM_OPERATION_TYPE_UNMAP, 0, 0)])?;
    s.apply(&mut [s.info(1, CU_MEM_OPERATION_TYPE_MAP, pool, 0)])?;
    let d = pattern(tile as usize, 42);
    s.put(1, &d)?;
    same(&s.get(1)?, &d, "tile 1 on its own pool tile")?;
    same(&s.get(0)?, &b, "tile 0 unchanged by tile 1")?;

    // Unmap both (memHandle must be zero for an unmap).
    s.apply(&mut [
        s.info(0, CU_MEM_OPERATION_TYPE_UNMAP, 0, 0),
        s.info(1, CU_MEM_OPERATION_TYPE_UNMAP, 0, 0),
    ])?;
    cu!(cuArrayDestroy(s.array))?;
    cu!(cuMemRelease(pool))?;
    c.finish()
}

// ---------------------------------------------------------------------------
// Every GPU (two or more): the pair loop of tests/common/gpus.rs
// ---------------------------------------------------------------------------

/// The access flags of `ptr` from every device of `gpus`.
fn access_flags(gpus: &[Gpu], ptr: CUdeviceptr) -> Result<Vec<u64>, Failed> {
    gpus.iter()
        .map(|g| get_access(ptr, device_location(g.dev)))
        .collect()
}

/// Memory on each device in turn, made accessible to every other device one
/// at a time (each grant adds that device's read-write access and no
/// other's), written by every device and read by every other.
fn two_gpus_set_access() -> TestResult {
    let gpus = gpus::every_gpu()?;
    gpus::require_peer_access(&gpus)?;
    let mut c = Checks::new();
    for owner in 0..gpus.len() {
        let what = format!("memory on device {owner}");
        c.note(&what, access_from_every_device(&gpus, owner));
    }
    c.finish()
}

fn access_from_every_device(gpus: &[Gpu], owner: usize) -> TestResult {
    let n = gpus.len();
    cu!(cuCtxSetCurrent(gpus[owner].ctx))?;
    let prop = device_prop(gpus[owner].dev, CU_MEM_HANDLE_TYPE_NONE);
    let g = min_granularity(&prop)?;
    let size = n * g;
    let m = Mapping::new(&prop, size, gpus[owner].dev)?;
    let ptr = m.ptr;
    let mut granted = vec![owner];
    let mut c = Checks::new();
    let mut expect = |granted: &[usize], when: &str| -> TestResult {
        let got = access_flags(gpus, ptr)?;
        let want: Vec<u64> = (0..n)
            .map(|d| if granted.contains(&d) { RW } else { NONE })
            .collect();
        println!("  device {owner}'s memory, {when}: access flags {got:?}");
        c.eq(format!("access flags {when}"), got, want);
        Ok(())
    };
    expect(&granted, "mapped for its own device")?;
    for peer in (0..n).filter(|&d| d != owner) {
        set_rw(ptr, size, gpus[peer].dev)?;
        granted.push(peer);
        expect(&granted, &format!("after granting device {peer}"))?;
    }
    c.finish()?;
    let want = gpus::each_writes_every_other_reads(gpus, ptr, g, owner as u32 + 1)?;
    cu!(cuCtxSetCurrent(gpus[owner].ctx))?;
    reads(ptr, &want, "the owner reading every device's writes")?;
    m.free()
}

/// One range striped over every GPU: chunk `k` is an allocation on device
/// `k` (its properties say so), the whole range accessible to every device in
/// one `cuMemSetAccess`, each device writing its own chunk and every device
/// reading every chunk (`examples/vmm.rs` stripes the same way).
fn striped_range_over_every_gpu() -> TestResult {
    let gpus = gpus::every_gpu()?;
    gpus::require_peer_access(&gpus)?;
    let n = gpus.len();
    let props: Vec<_> = gpus
        .iter()
        .map(|g| device_prop(g.dev, CU_MEM_HANDLE_TYPE_NONE))
        .collect();
    let mut chunk = 0;
    for p in &props {
        chunk = chunk.max(min_granularity(p)?);
    }
    for p in &props {
        let g = min_granularity(p)?;
        ensure!(
            chunk % g == 0,
            "granularities {chunk} and {g} do not divide"
        );
    }
    let size = n * chunk;
    let ptr = reserve(size, 0, 0)?;
    let mut handles = vec![];
    for (k, p) in props.iter().enumerate() {
        let h = create(chunk, p)?;
        handles.push(h);
        cu!(cuMemMap(ptr + (k * chunk) as u64, chunk, 0, h, 0))?;
    }
    let every: Vec<_> = gpus.iter().map(|g| device_location(g.dev)).collect();
    set_rw_for(ptr, size, &every)?;
    let mut c = Checks::new();
    for (k, g) in gpus.iter().enumerate() {
        let at = ptr + (k * chunk) as u64;
        let mut h: Handle = 0;
        cu!(cuMemRetainAllocationHandle(&mut h, at as *mut c_void))?;
        let p = properties(h)?;
        cu!(cuMemRelease(h))?;
        c.eq(
            format!("chunk {k}'s location"),
            (p.location.type_, common::cu_loc_id(&p.location)),
            (CU_MEM_LOCATION_TYPE_DEVICE, g.dev),
        );
        let got = access_flags(&gpus, at)?;
        c.eq(format!("chunk {k}'s access flags"), got, vec![RW; n]);
    }
    println!("  {n} chunks of {chunk} B, one a device, at {ptr:#x}");
    c.ok(gpus::each_writes_every_other_reads(&gpus, ptr, chunk, 0x5D).map(|_| ()));
    cu!(cuMemUnmap(ptr, size))?;
    for h in handles {
        cu!(cuMemRelease(h))?;
    }
    cu!(cuMemAddressFree(ptr, size))?;
    c.finish()
}

// ---------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------

fn bad_input_error_codes() -> TestResult {
    let gpu = Gpu::new(0)?;
    let prop = device_prop(gpu.dev, CU_MEM_HANDLE_TYPE_NONE);
    let g = min_granularity(&prop)?;
    let gg = g as u64;
    let m = Mapping::new(&prop, g, gpu.dev)?;
    let mut c = BadInput::round_trip(m.ptr, 256);
    let mut h: Handle = 0;
    let mut p: CUdeviceptr = 0;
    let null_h: *mut Handle = core::ptr::null_mut();
    let null_p: *mut CUdeviceptr = core::ptr::null_mut();
    const INVALID: CUresult = CUDA_ERROR_INVALID_VALUE;

    println!("  cuMemCreate");
    for (size, flags, what) in [
        (g + g / 2, 0, "cuMemCreate(1.5 granules)"),
        (0, 0, "cuMemCreate(0 bytes)"),
        (g, 1, "cuMemCreate(.., flags 1)"),
    ] {
        let r = unsafe { cuMemCreate(&mut h, size, &prop, flags) };
        c.cu_undo(INVALID, r, what, || cu!(cuMemRelease(h)))?;
    }
    bad!(c, INVALID, cuMemCreate(null_h, g, &prop, 0));
    bad!(c, INVALID, cuMemCreate(&mut h, g, core::ptr::null(), 0));
    // "HOST allocations are not IPC capable and requestedHandleTypes must be 0"
    // (the host location types are in the headers from 12.2).
    #[cfg(cuda_12020)]
    {
        let host_fd = prop_at(CU_MEM_LOCATION_TYPE_HOST, 0, FD);
        bad!(c, INVALID, cuMemCreate(&mut h, g, &host_fd, 0));
        // "Specifying CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT ... CUDA_ERROR_INVALID_VALUE"
        let none = CU_MEM_HANDLE_TYPE_NONE;
        let numa_current = prop_at(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0, none);
        bad!(c, INVALID, cuMemCreate(&mut h, g, &numa_current, 0));
    }
    #[cfg(not(cuda_12020))]
    println!("  skipped: the HOST/HOST_NUMA_CURRENT cases: CU_MEM_LOCATION_TYPE_HOST* not in these headers (added in 12.2)");

    println!("  cuMemGetAllocationGranularity");
    let mut gran = 0usize;
    #[rustfmt::skip]
    bad!(c, INVALID, cuMemGetAllocationGranularity(core::ptr::null_mut(), &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    #[rustfmt::skip]
    bad!(c, INVALID, cuMemGetAllocationGranularity(&mut gran, core::ptr::null(), CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    #[rustfmt::skip]
    bad!(c, INVALID, cuMemGetAllocationGranularity(&mut gran, &prop, CUmemAllocationGranularity_flags(7)));

    println!("  cuMemAddressReserve / cuMemAddressFree");
    bad!(c, INVALID, cuMemAddressReserve(null_p, g, 0, 0, 0));
    #[rustfmt::skip]
    let reserves = [
        (g, 0, 1, "cuMemAddressReserve(.., flags 1)"),
        (g, 3 * 4096, 0, "cuMemAddressReserve(alignment 12 KiB, not a power of two)"),
        (0, 0, 0, "cuMemAddressReserve(0 bytes)"),
        (g + 1, 0, 0, "cuMemAddressReserve(size not a multiple of the page size)"),
    ];
    for (size, align, flags, what) in reserves {
        let r = unsafe { cuMemAddressReserve(&mut p, size, align, 0, flags) };
        c.cu_undo(INVALID, r, what, || cu!(cuMemAddressFree(p, size)))?;
    }
    let r = reserve(2 * g, 0, 0)?;
    let wrong = unsafe { cuMemAddressFree(r, g) };
    c.code(wrong, INVALID, "cuMemAddressFree(r, g) of a 2g reservation");
    c.still_works();
    if wrong != CUDA_SUCCESS {
        // The reservation is intact: freed with its own size.
        cu!(cuMemAddressFree(r, 2 * g))?;
    }
    c.still_works();

    println!("  cuMemMap / cuMemUnmap");
    let h1 = create(2 * g, &prop)?;
    let h2 = create(2 * g, &prop)?;
    let r = reserve(4 * g, 0, 0)?;
    cu!(cuMemMap(r, 2 * g, 0, h1, 0))?;
    let twice = unsafe { cuMemMap(r, 2 * g, 0, h2, 0) };
    let what = "cuMemMap onto an already mapped range";
    c.cu_undo(INVALID, twice, what, || cu!(cuMemUnmap(r, 2 * g)))?;
    let partly = unsafe { cuMemMap(r + gg, 2 * g, 0, h2, 0) };
    let what = "cuMemMap overlapping a mapped range";
    c.cu_undo(INVALID, partly, what, || cu!(cuMemUnmap(r + gg, 2 * g)))?;
    bad!(c, INVALID, cuMemMap(r + 2 * gg, g, 0, h2, 1));
    // Sizes, offsets and addresses off the granularity, and a mapping past the
    // allocation's end: the text implies CUDA_ERROR_INVALID_VALUE ("must be a
    // multiple of the value given via cuMemGetAllocationGranularity", "offset +
    // size must be less than the size of the memory allocation"); driver
    // 580.159 returns CUDA_ERROR_NOT_SUPPORTED, which is in cuMemMap's list.
    #[rustfmt::skip]
    let maps = [
        (r + 2 * gg, g / 2, 0, "cuMemMap(half a granule)"),
        (r + 2 * gg, 2 * g, g, "cuMemMap(offset + size past the allocation)"),
        (r + 2 * gg + 4096, g, 0, "cuMemMap(address off the granularity)"),
    ];
    for (at, size, offset, what) in maps {
        let got = unsafe { cuMemMap(at, size, offset, h2, 0) };
        let undo = || cu!(cuMemUnmap(at, size));
        c.cu_observed_undo(INVALID, CUDA_ERROR_NOT_SUPPORTED, got, what, undo)?;
    }
    // Unmapping a sub-range of one cuMemMap.
    let sub = unsafe { cuMemUnmap(r, g) };
    c.code(sub, INVALID, "cuMemUnmap of half of a mapping");
    c.still_works();
    // cuMemSetAccess on a reserved, unmapped range.
    let d = access_desc(device_location(gpu.dev), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    bad!(c, INVALID, cuMemSetAccess(r + 2 * gg, 2 * g, &d, 1));
    // ... and on a range only partly mapped: refused, and the mapped part
    // keeps the access it had (none: never set), at its first and last byte.
    bad!(c, INVALID, cuMemSetAccess(r, 4 * g, &d, 1));
    let unchanged = access_desc(device_location(gpu.dev), CU_MEM_ACCESS_FLAGS_PROT_NONE);
    let what = "the mapped part's access after the refused cuMemSetAccess";
    c.note(what, read_back(r, 2 * g, &[unchanged]));
    // The wrong twin: the refused read-write taken as granted must be caught.
    c.that(
        read_back(r, 2 * g, &[d]).is_err(),
        "the read-back took the refused read-write for granted",
    );
    // "Users cannot specify CU_MEM_LOCATION_TYPE_HOST_NUMA accessibility for
    // allocations created on with other location types." (12.2 on)
    #[cfg(cuda_12020)]
    {
        let numa = common::cu_loc(CU_MEM_LOCATION_TYPE_HOST_NUMA, 0);
        let host_d = access_desc(numa, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
        // Driver 580.159 returns CUDA_ERROR_NOT_SUPPORTED (in the documented list).
        c.code_observed(
            unsafe { cuMemSetAccess(r, 2 * g, &host_d, 1) },
            INVALID,
            CUDA_ERROR_NOT_SUPPORTED,
            "cuMemSetAccess(HOST_NUMA access to device memory)",
        );
        let what = "the device's access after the refused HOST_NUMA cuMemSetAccess";
        c.note(what, read_back(r, 2 * g, &[unchanged]));
        c.still_works();
    }
    let mut flags = 0u64;
    let loc = device_location(gpu.dev);
    bad!(c, INVALID, cuMemGetAccess(core::ptr::null_mut(), &loc, r));
    bad!(c, INVALID, cuMemGetAccess(&mut flags, core::ptr::null(), r));
    bad!(c, INVALID, cuMemGetAccess(&mut flags, &loc, r + 2 * gg));
    bad!(
        c,
        INVALID,
        cuMemRetainAllocationHandle(null_h, r as *mut c_void)
    );
    #[rustfmt::skip]
    bad!(c, INVALID, cuMemRetainAllocationHandle(&mut h, (r + 2 * gg) as *mut c_void));
    if sub == CUDA_SUCCESS {
        cu!(cuMemUnmap(r + gg, g))?;
    } else {
        cu!(cuMemUnmap(r, 2 * g))?;
    }
    cu!(cuMemAddressFree(r, 4 * g))?;
    cu!(cuMemRelease(h1))?;
    cu!(cuMemRelease(h2))?;
    c.still_works();

    println!("  cuMemGetAllocationPropertiesFromHandle / cuMemExportToShareableHandle / cuMemImportFromShareableHandle");
    #[rustfmt::skip]
    bad!(c, INVALID, cuMemGetAllocationPropertiesFromHandle(core::ptr::null_mut(), m.handle));
    // The POSIX-descriptor cases (Unix only: Windows shares WIN32 handles).
    #[cfg(unix)]
    {
        let fd_prop = device_prop(gpu.dev, FD);
        let hf = create(g, &fd_prop)?;
        let mut fd: i32 = -1;
        #[rustfmt::skip]
        bad!(c, INVALID, cuMemExportToShareableHandle(core::ptr::null_mut(), hf, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        let close = |fd| {
            move || {
                unsafe { libc::close(fd) };
                Ok(())
            }
        };
        let r1 = export_fd_raw(&mut fd, hf, 1);
        let what = "cuMemExportToShareableHandle(.., flags 1)";
        c.cu_undo(INVALID, r1, what, close(fd))?;
        // An allocation created without POSIX descriptors requested.
        let r2 = export_fd_raw(&mut fd, m.handle, 0);
        let what = "cuMemExportToShareableHandle of an allocation without requestedHandleTypes";
        c.cu_undo(INVALID, r2, what, close(fd))?;

        common::check(
            export_fd_raw(&mut fd, hf, 0),
            "cuMemExportToShareableHandle",
        )?;
        #[rustfmt::skip]
        bad!(c, INVALID, cuMemImportFromShareableHandle(null_h, fd as isize as *mut c_void, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
        // A closed descriptor.
        ensure!(unsafe { libc::close(fd) } == 0, "closing {fd}");
        ensure!(!fd_is_open(fd), "descriptor {fd} reopened");
        // Driver 580.159 returns CUDA_ERROR_UNKNOWN, which is not among the
        // documented codes (INVALID_VALUE, NOT_INITIALIZED, DEINITIALIZED,
        // NOT_PERMITTED, NOT_SUPPORTED).
        let closed = import_fd(&mut h, fd);
        let what = "cuMemImportFromShareableHandle of a closed descriptor";
        let undo = || cu!(cuMemRelease(h));
        c.cu_observed_undo(INVALID, CUDA_ERROR_UNKNOWN, closed, what, undo)?;
        // A descriptor that is no exported allocation.
        let devnull = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        ensure!(devnull >= 0, "opening /dev/null");
        let foreign = import_fd(&mut h, devnull);
        unsafe { libc::close(devnull) };
        // Likewise CUDA_ERROR_UNKNOWN from driver 580.159 (undocumented).
        let what = "cuMemImportFromShareableHandle of /dev/null";
        let undo = || cu!(cuMemRelease(h));
        c.cu_observed_undo(INVALID, CUDA_ERROR_UNKNOWN, foreign, what, undo)?;
        cu!(cuMemRelease(hf))?;
    }
    #[cfg(not(unix))]
    println!(
        "  (not run: the POSIX-descriptor cases, {})",
        common::POSIX_ONLY
    );
    c.still_works();

    m.free()?;
    c.finish()
}

/// The second cuMemRelease of one handle. NVIDIA documents "If handle is not a
/// valid handle the behavior is undefined", so it runs in a child process;
/// driver 580.159 returns CUDA_ERROR_INVALID_VALUE (in cuMemRelease's list).
fn release_of_released_handle() -> TestResult {
    let exe = std::env::current_exe()?;
    let out = std::process::Command::new(exe)
        .env(common::CHILD_ROLE_VAR, "double_release")
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    ensure!(out.status.success(), "child double_release: {}", out.status);
    let code = stdout
        .lines()
        .find_map(|l| l.strip_prefix("second cuMemRelease: "))
        .and_then(|v| v.trim().parse::<u32>().ok())
        .ok_or("child printed no result")?;
    let what = "second cuMemRelease of one handle";
    common::expect_error(CUresult(code as _), CUDA_ERROR_INVALID_VALUE, what)
}

/// Child: releases one handle twice, then shows the process still works.
fn double_release() -> TestResult {
    cu!(cuInit(0))?;
    let gpu = Gpu::new(0)?;
    let prop = device_prop(gpu.dev, CU_MEM_HANDLE_TYPE_NONE);
    let g = min_granularity(&prop)?;
    let h = create(g, &prop)?;
    cu!(cuMemRelease(h))?;
    let r = unsafe { cuMemRelease(h) };
    println!("second cuMemRelease: {}", r.0);
    println!("  ({})", error_name(r));
    let m = Mapping::new(&prop, g, gpu.dev)?;
    round_trip(m.ptr, g, 60, "after the second release")?;
    m.free()
}

// ---------------------------------------------------------------------------
// Leaks
// ---------------------------------------------------------------------------

fn no_leak_over_10000_cycles() -> TestResult {
    const CYCLES: usize = 10_000;
    let gpu = Gpu::new(0)?;
    let prop = device_prop(gpu.dev, CU_MEM_HANDLE_TYPE_NONE);
    let g = min_granularity(&prop)?;
    for _ in 0..10 {
        Mapping::new(&prop, g, gpu.dev)?.free()?;
    }
    let start = pd::free_memory()?;
    let mut held = 0usize;
    let t = Instant::now();
    for i in 0..CYCLES {
        let m = Mapping::new(&prop, g, gpu.dev)?;
        if i % 1000 == 0 {
            // The cycle is real: memory taken, bytes through the mapping.
            held = pd::free_memory()?;
            let taken = held + g <= start;
            ensure!(taken, "cycle {i}: {g} B not taken from free memory");
            let v = (i / 1000) as u8 + 1;
            cu!(cuMemsetD8(m.ptr, v, g))?;
            reads(m.ptr + g as u64 - 64, &[v; 64], &format!("cycle {i}"))?;
        }
        m.free()?;
    }
    let elapsed = t.elapsed();
    let end = pd::free_memory()?;
    let (secs, mib) = (elapsed.as_secs_f64(), pd::mib);
    println!(
        "  {CYCLES} cycles of {g} B in {secs:.2} s ({:.1} us each): free memory {start} B ({}) at start, {held} B while one was held, {end} B ({}) at end",
        secs * 1e6 / CYCLES as f64, mib(start), mib(end)
    );
    let lost = start.saturating_sub(end);
    ensure!(end + g > start, "{lost} B lost over {CYCLES} cycles");
    Ok(())
}

fn main() {
    common::main(
        device_tests![
            granularity_minimum_and_recommended,
            device_memory_map_round_trip,
            one_allocation_at_two_addresses,
            grown_range_is_contiguous,
            reserve_with_hint_and_alignment,
            host_memory_location_host if cfg(cuda_12020) else "CU_MEM_LOCATION_TYPE_HOST: not in these headers (added in 12.2)",
            host_memory_location_host_numa if cfg(cuda_12020) else "CU_MEM_LOCATION_TYPE_HOST_NUMA: not in these headers (added in 12.2)",
            retain_handle_and_reference_counting,
            posix_fd_across_two_processes if cfg(unix) else common::POSIX_ONLY,
            process_death_importer_killed_while_mapped if cfg(unix) else common::POSIX_ONLY,
            process_death_exporter_killed_importer_reads_on if cfg(unix) else common::POSIX_ONLY,
            process_death_descriptor_outlives_its_sender if cfg(unix) else common::POSIX_ONLY,
            fabric_handle if cfg(cuda_12030) else "CUmemFabricHandle, CU_MEM_HANDLE_TYPE_FABRIC: not in these headers (added in 12.3)",
            sparse_array_tile_mapping,
            two_gpus_set_access @ 2,
            striped_range_over_every_gpu @ 2,
            bad_input_error_codes,
            release_of_released_handle,
            no_leak_over_10000_cycles,
        ],
        &[
            #[cfg(unix)]
            ("posix_fd_importer", posix_fd_importer),
            #[cfg(unix)]
            (EXPORTER, common::vmm::pd_exporter),
            #[cfg(unix)]
            (IMPORTER, vmm_importer),
            ("host_numa_cpu_access", host_numa_cpu_access),
            ("double_release", double_release),
        ],
    );
}
