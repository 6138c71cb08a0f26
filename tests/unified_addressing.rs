//! Unified Addressing (CUDA driver API, module 6.17) on a real device.
//!
//! Every check reads back a documented effect: range attributes after
//! `cuMemAdvise` / prefetches / discards, bytes after migrations, pointer
//! attributes against what was allocated. Bad input asserts the exact error
//! code, and after each bad call a small round trip shows the process still works.
//!
//! Where the docs leave a value open or driver 580.159 departs from them, the
//! comment says "measured" (H200, CUDA 13.0). Checks inside a test are
//! collected (`Checks`) so one run reports every mismatch of a test, not only
//! the first. The bad-input tests run in child processes of this binary.
//!
//! Every release 12.0..13.5 builds the same 19 tests; the headers' release
//! cfgs choose the form. From 13.0: the location forms. 12.2..12.9:
//! `cuMemAdvise` / `cuMemPrefetchAsync` in their `CUdevice` form for device
//! and host locations (`CU_DEVICE_CPU`), checked through the same range
//! attributes, and `cuMemAdvise_v2` / `cuMemPrefetchAsync_v2` for what a
//! `CUdevice` cannot say (host NUMA, bad types); the three batch tests are
//! ignored with the reason and the batch bad-input cases skipped (printed).
//! 12.0..12.1: the tests that need location types or the range attributes'
//! `_TYPE` / `_ID` are ignored with the reason. Before 12.8,
//! `IS_HW_DECOMPRESS_CAPABLE` is left out of the pointer-attribute checks (printed).
mod common;

#[cfg(cuda_12020)]
use common::getcpu;
use common::{cu_loc as loc, test, BadInput, Checks, CuStream, DeviceBuf, Gpu, TestResult};
use core::ffi::c_void;
#[cfg(cuda_12020)]
use core::fmt::Debug;
#[cfg(cuda_12020)]
use core::mem::size_of;
use core::ptr::{null, null_mut};
use cuda_mem_sys::*;
use libtest_mimic::Failed;

/// `CU_STREAM_LEGACY` from `cuda.h`: `#define CU_STREAM_LEGACY ((CUstream)0x1)`.
#[cfg(cuda_13000)]
fn cu_stream_legacy() -> CUstream {
    null_mut::<u8>().wrapping_add(1).cast()
}

/// Why the tests of cuMemAdvise and the prefetches are ignored before 12.2.
#[cfg(not(cuda_12020))]
const NO_LOCATION_TYPES: &str = "`CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE` (and the other \
     location-typed range attributes, `CU_MEM_LOCATION_TYPE_HOST*`): not in this release (added in 12.2)";

/// Why the batch prefetch/discard checks are skipped before 13.0.
#[cfg(all(cuda_12020, not(cuda_13000)))]
const BATCH_NOT_IN_RELEASE: &str = "cuMemPrefetchBatchAsync, cuMemDiscardBatchAsync, \
     cuMemDiscardAndPrefetchBatchAsync: not in this release (added in 13.0)";

const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;

// ---------------------------------------------------------------------------
// Collected checks and RAII helpers
// ---------------------------------------------------------------------------

/// Managed memory from `cuMemAllocManaged(.., CU_MEM_ATTACH_GLOBAL)`.
struct Managed {
    ptr: CUdeviceptr,
    size: usize,
}

impl Managed {
    fn new(size: usize) -> Result<Managed, Failed> {
        let mut ptr = 0;
        cu!(cuMemAllocManaged(&mut ptr, size, CU_MEM_ATTACH_GLOBAL.0))?;
        Ok(Managed { ptr, size })
    }
    /// The allocation seen from the host as 32-bit words (the device has
    /// concurrentManagedAccess, so the host may touch it at any time).
    #[cfg(cuda_12020)]
    #[allow(clippy::mut_from_ref)]
    fn words(&self) -> &mut [u32] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut u32, self.size / 4) }
    }
    fn at(&self, offset: usize) -> CUdeviceptr {
        self.ptr + offset as u64
    }
}

impl Drop for Managed {
    fn drop(&mut self) {
        unsafe { cuMemFree(self.ptr) };
    }
}

/// The words at `src` as the device sees them: copied device-to-device into
/// `buf`, then to the host.
fn device_view(buf: &DeviceBuf, src: CUdeviceptr, words: usize) -> Result<Vec<u32>, Failed> {
    assert!(words * 4 <= buf.len);
    cu!(cuMemcpyDtoD(buf.ptr, src, words * 4))?;
    let mut out = vec![0u32; words];
    cu!(cuMemcpyDtoH(out.as_mut_ptr().cast(), buf.ptr, words * 4))?;
    Ok(out)
}

/// Runs a closure when dropped (frees what a test made, also on early return).
struct Defer<F: FnMut()>(F);

impl<F: FnMut()> Drop for Defer<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}

fn dev_loc(ordinal: i32) -> CUmemLocation {
    loc(CU_MEM_LOCATION_TYPE_DEVICE, ordinal)
}

#[cfg(cuda_12020)]
fn host_loc() -> CUmemLocation {
    loc(CU_MEM_LOCATION_TYPE_HOST, 0)
}

fn pattern(seed: u32, words: usize) -> Vec<u32> {
    (0..words as u32)
        .map(|i| i.wrapping_mul(0x0101_0101) ^ seed.rotate_left(i % 32))
        .collect()
}

// ---------------------------------------------------------------------------
// The release's forms of cuMemAdvise / cuMemPrefetchAsync (chosen by the
// headers' release cfgs)
// ---------------------------------------------------------------------------

/// 13.0 and later: `cuMemAdvise` takes a `CUmemLocation`.
#[cfg(cuda_13000)]
unsafe fn mem_advise(
    p: CUdeviceptr,
    len: usize,
    advice: CUmem_advise,
    l: CUmemLocation,
) -> CUresult {
    unsafe { cuMemAdvise(p, len, advice, l) }
}

/// 12.2..12.9: `cuMemAdvise` takes a `CUdevice`. A device (ordinal >= 0) or
/// host location goes through that form (`CU_DEVICE_CPU` for the host), so
/// the tests check the CUdevice form's effect through the same range
/// attributes; what it cannot express (host NUMA, bad types, negative ids)
/// goes through `cuMemAdvise_v2`, the location form of these releases.
#[cfg(all(cuda_12020, not(cuda_13000)))]
unsafe fn mem_advise(
    p: CUdeviceptr,
    len: usize,
    advice: CUmem_advise,
    l: CUmemLocation,
) -> CUresult {
    match legacy_device(&l) {
        Some(dev) => unsafe { cuMemAdvise(p, len, advice, dev) },
        None => unsafe { cuMemAdvise_v2(p, len, advice, l) },
    }
}

/// 13.0 and later: `cuMemPrefetchAsync(ptr, len, location, flags, stream)`.
#[cfg(cuda_13000)]
unsafe fn mem_prefetch(
    p: CUdeviceptr,
    len: usize,
    l: CUmemLocation,
    flags: u32,
    s: CUstream,
) -> CUresult {
    unsafe { cuMemPrefetchAsync(p, len, l, flags, s) }
}

/// 12.2..12.9: `cuMemPrefetchAsync(ptr, len, device, stream)` (no flags) for
/// a device or host location with flags 0; the rest through
/// `cuMemPrefetchAsync_v2`, the location form of these releases.
#[cfg(all(cuda_12020, not(cuda_13000)))]
unsafe fn mem_prefetch(
    p: CUdeviceptr,
    len: usize,
    l: CUmemLocation,
    flags: u32,
    s: CUstream,
) -> CUresult {
    match legacy_device(&l) {
        Some(dev) if flags == 0 => unsafe { cuMemPrefetchAsync(p, len, dev, s) },
        _ => unsafe { cuMemPrefetchAsync_v2(p, len, l, flags, s) },
    }
}

/// The `CUdevice` that means the same as `l` in the pre-13.0 forms: the
/// ordinal of a device location (>= 0: -1 and -2 are CU_DEVICE_CPU and
/// CU_DEVICE_INVALID there), `CU_DEVICE_CPU` for the host.
#[cfg(all(cuda_12020, not(cuda_13000)))]
fn legacy_device(l: &CUmemLocation) -> Option<CUdevice> {
    let id = common::cu_loc_id(l);
    if l.type_ == CU_MEM_LOCATION_TYPE_DEVICE && id >= 0 {
        Some(id)
    } else if l.type_ == CU_MEM_LOCATION_TYPE_HOST {
        Some(CU_DEVICE_CPU)
    } else {
        None
    }
}

// ---------------------------------------------------------------------------
// Host NUMA: the node the calling thread runs on, made stable by pinning
// ---------------------------------------------------------------------------

/// The calling thread pinned to the CPU it is on (restored on drop), so that
/// "the host NUMA node closest to the calling thread's CPU" is one known node.
#[cfg(cuda_12020)]
struct PinnedThread {
    old: libc::cpu_set_t,
    cpu: u32,
    node: i32,
}

#[cfg(cuda_12020)]
impl PinnedThread {
    fn here() -> Result<PinnedThread, Failed> {
        unsafe {
            let mut old: libc::cpu_set_t = core::mem::zeroed();
            ensure!(
                libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut old) == 0,
                "sched_getaffinity failed"
            );
            let (cpu, _) = getcpu();
            let mut set: libc::cpu_set_t = core::mem::zeroed();
            libc::CPU_SET(cpu as usize, &mut set);
            ensure!(
                libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) == 0,
                "sched_setaffinity failed"
            );
            let (now, node) = getcpu();
            ensure!(now == cpu, "pinned to CPU {cpu} but running on {now}");
            Ok(PinnedThread {
                old,
                cpu,
                node: node as i32,
            })
        }
    }
}

#[cfg(cuda_12020)]
impl Drop for PinnedThread {
    fn drop(&mut self) {
        unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &self.old) };
    }
}

// ---------------------------------------------------------------------------
// Range attributes: one at a time and all at once
// ---------------------------------------------------------------------------

#[cfg(cuda_12020)]
const SENT_I32: i32 = 0x7777_7777;
#[cfg(cuda_12020)]
const SENT_TYPE: CUmemLocationType = CUmemLocationType_enum(0x7777_7777);

/// Every range attribute of a range.
#[cfg(cuda_12020)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RangeState {
    read_mostly: i32,
    preferred: i32,
    preferred_type: CUmemLocationType,
    preferred_id: i32,
    accessed_by: [i32; 4],
    last_prefetch: i32,
    last_prefetch_type: CUmemLocationType,
    last_prefetch_id: i32,
}

#[cfg(cuda_12020)]
impl RangeState {
    fn sentinels() -> RangeState {
        RangeState {
            read_mostly: SENT_I32,
            preferred: SENT_I32,
            preferred_type: SENT_TYPE,
            preferred_id: SENT_I32,
            accessed_by: [SENT_I32; 4],
            last_prefetch: SENT_I32,
            last_prefetch_type: SENT_TYPE,
            last_prefetch_id: SENT_I32,
        }
    }
}

#[cfg(cuda_12020)]
fn range_one<T: Copy>(
    attr: CUmem_range_attribute,
    ptr: CUdeviceptr,
    len: usize,
    fill: T,
) -> Result<T, Failed> {
    let mut v = fill;
    common::check(
        unsafe {
            cuMemRangeGetAttribute((&mut v as *mut T).cast(), size_of::<T>(), attr, ptr, len)
        },
        &format!("cuMemRangeGetAttribute(attribute {})", attr.0),
    )?;
    Ok(v)
}

/// All range attributes read one by one with `cuMemRangeGetAttribute`, and
/// all at once (in another order) with `cuMemRangeGetAttributes`; the two must agree.
#[cfg(cuda_12020)]
fn range_state(
    c: &mut Checks,
    what: &str,
    ptr: CUdeviceptr,
    len: usize,
) -> Result<RangeState, Failed> {
    let single = RangeState {
        read_mostly: range_one(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, ptr, len, SENT_I32)?,
        preferred: range_one(
            CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION,
            ptr,
            len,
            SENT_I32,
        )?,
        preferred_type: range_one(
            CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE,
            ptr,
            len,
            SENT_TYPE,
        )?,
        preferred_id: range_one(
            CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID,
            ptr,
            len,
            SENT_I32,
        )?,
        accessed_by: range_one(CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, ptr, len, [SENT_I32; 4])?,
        last_prefetch: range_one(
            CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION,
            ptr,
            len,
            SENT_I32,
        )?,
        last_prefetch_type: range_one(
            CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE,
            ptr,
            len,
            SENT_TYPE,
        )?,
        last_prefetch_id: range_one(
            CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID,
            ptr,
            len,
            SENT_I32,
        )?,
    };
    let mut b = RangeState::sentinels();
    let mut data: [*mut c_void; 8] = [
        (&mut b.last_prefetch_id as *mut i32).cast(),
        (&mut b.accessed_by as *mut [i32; 4]).cast(),
        (&mut b.preferred_type as *mut CUmemLocationType).cast(),
        (&mut b.read_mostly as *mut i32).cast(),
        (&mut b.last_prefetch_type as *mut CUmemLocationType).cast(),
        (&mut b.preferred as *mut i32).cast(),
        (&mut b.last_prefetch as *mut i32).cast(),
        (&mut b.preferred_id as *mut i32).cast(),
    ];
    let mut sizes: [usize; 8] = [
        4,
        16,
        size_of::<CUmemLocationType>(),
        4,
        size_of::<CUmemLocationType>(),
        4,
        4,
        4,
    ];
    let mut attrs = [
        CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID,
        CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY,
        CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE,
        CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
        CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE,
        CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION,
        CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION,
        CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID,
    ];
    cu!(cuMemRangeGetAttributes(
        data.as_mut_ptr(),
        sizes.as_mut_ptr(),
        attrs.as_mut_ptr(),
        8,
        ptr,
        len
    ))?;
    c.eq(
        format!("{what}: cuMemRangeGetAttributes (8 at once) vs one by one"),
        b,
        single,
    );
    Ok(single)
}

/// The preferred location the range attributes must show. `legacy` is the
/// `CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION` value (device ordinal,
/// `CU_DEVICE_CPU` or `CU_DEVICE_INVALID`); `id` is checked where the type
/// makes it meaningful (device, host NUMA).
#[cfg(cuda_12020)]
fn want_preferred(
    c: &mut Checks,
    what: &str,
    s: &RangeState,
    legacy: i32,
    ty: CUmemLocationType,
    id: i32,
) {
    c.eq(format!("{what}: PREFERRED_LOCATION"), s.preferred, legacy);
    c.eq(
        format!("{what}: PREFERRED_LOCATION_TYPE"),
        s.preferred_type,
        ty,
    );
    if ty == CU_MEM_LOCATION_TYPE_DEVICE || ty == CU_MEM_LOCATION_TYPE_HOST_NUMA {
        c.eq(format!("{what}: PREFERRED_LOCATION_ID"), s.preferred_id, id);
    }
}

/// A host NUMA preference (HOST_NUMA, or HOST_NUMA_CURRENT resolved to the
/// calling thread's node) must read back as `CU_MEM_LOCATION_TYPE_HOST_NUMA`
/// with that node and the legacy attribute `CU_DEVICE_CPU`.
///
/// Measured on driver 580.159 (H200 host, one NUMA node): cuMemAdvise
/// returns CUDA_SUCCESS for such a location but the range keeps no
/// preferred location, even after a context synchronize. That is accepted
/// and printed (it is the driver's behaviour, not the bindings'), as is
/// plain host memory; any other answer fails.
#[cfg(cuda_12020)]
fn want_preferred_host_numa(c: &mut Checks, what: &str, s: &RangeState, node: i32) {
    if s.preferred_type == CU_MEM_LOCATION_TYPE_HOST_NUMA {
        want_preferred(
            c,
            what,
            s,
            CU_DEVICE_CPU,
            CU_MEM_LOCATION_TYPE_HOST_NUMA,
            node,
        );
    } else if s.preferred_type == CU_MEM_LOCATION_TYPE_HOST {
        println!("{what}: host NUMA {node} reads back as plain host memory");
        want_preferred(c, what, s, CU_DEVICE_CPU, CU_MEM_LOCATION_TYPE_HOST, 0);
    } else {
        println!("{what}: driver kept no preferred location (host NUMA advice without effect)");
        want_no_preferred(c, what, s);
    }
}

#[cfg(cuda_12020)]
fn want_no_preferred(c: &mut Checks, what: &str, s: &RangeState) {
    want_preferred(
        c,
        what,
        s,
        CU_DEVICE_INVALID,
        CU_MEM_LOCATION_TYPE_INVALID,
        0,
    );
}

#[cfg(cuda_12020)]
fn want_last_prefetch(
    c: &mut Checks,
    what: &str,
    s: &RangeState,
    legacy: i32,
    ty: CUmemLocationType,
    id: i32,
) {
    c.eq(
        format!("{what}: LAST_PREFETCH_LOCATION"),
        s.last_prefetch,
        legacy,
    );
    c.eq(
        format!("{what}: LAST_PREFETCH_LOCATION_TYPE"),
        s.last_prefetch_type,
        ty,
    );
    if ty == CU_MEM_LOCATION_TYPE_DEVICE || ty == CU_MEM_LOCATION_TYPE_HOST_NUMA {
        c.eq(
            format!("{what}: LAST_PREFETCH_LOCATION_ID"),
            s.last_prefetch_id,
            id,
        );
    }
}

#[cfg(cuda_12020)]
fn want_no_prefetch(c: &mut Checks, what: &str, s: &RangeState) {
    want_last_prefetch(
        c,
        what,
        s,
        CU_DEVICE_INVALID,
        CU_MEM_LOCATION_TYPE_INVALID,
        0,
    );
}

/// ACCESSED_BY lists the devices with the advice, the extra space filled with
/// `CU_DEVICE_INVALID`.
#[cfg(cuda_12020)]
fn want_accessed_by(c: &mut Checks, what: &str, s: &RangeState, ids: &[i32]) {
    let mut want = [CU_DEVICE_INVALID; 4];
    want[..ids.len()].copy_from_slice(ids);
    c.eq(format!("{what}: ACCESSED_BY"), s.accessed_by, want);
}

#[cfg(cuda_12020)]
fn advise(
    c: &mut Checks,
    ptr: CUdeviceptr,
    len: usize,
    advice: CUmem_advise,
    l: CUmemLocation,
) -> bool {
    c.ok(common::check(
        unsafe { mem_advise(ptr, len, advice, l) },
        &format!(
            "cuMemAdvise(advice {}, location type {} id {})",
            advice.0,
            l.type_.0,
            common::cu_loc_id(&l)
        ),
    ))
}

// ---------------------------------------------------------------------------
// cuMemAdvise
// ---------------------------------------------------------------------------

#[cfg(cuda_12020)]
fn advise_read_mostly() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    let m = Managed::new(2 * MIB)?;
    let data = pattern(0x1234, m.size / 4);
    m.words().copy_from_slice(&data);

    let s = range_state(&mut c, "fresh", m.ptr, m.size)?;
    c.eq("fresh: READ_MOSTLY", s.read_mostly, 0);
    want_no_preferred(&mut c, "fresh", &s);
    want_accessed_by(&mut c, "fresh", &s, &[]);
    want_no_prefetch(&mut c, "fresh", &s);

    // The location is ignored for READ_MOSTLY: a host location with a
    // nonsense id sets it, a device location unsets it.
    //
    // Observation (driver 580.159, not asserted): with a host NUMA location
    // cuMemAdvise returns CUDA_SUCCESS and changes nothing, also for
    // SET/UNSET_READ_MOSTLY and UNSET_PREFERRED_LOCATION, whose location the
    // docs say is ignored.
    let ignored = loc(CU_MEM_LOCATION_TYPE_HOST, 9999);
    let ignored_unset = dev_loc(0);
    advise(
        &mut c,
        m.ptr,
        m.size / 2,
        CU_MEM_ADVISE_SET_READ_MOSTLY,
        ignored,
    );
    let first = range_state(
        &mut c,
        "SET_READ_MOSTLY on first half: first half",
        m.ptr,
        m.size / 2,
    )?;
    c.eq(
        "SET_READ_MOSTLY on first half: first half READ_MOSTLY",
        first.read_mostly,
        1,
    );
    let second = range_state(
        &mut c,
        "SET_READ_MOSTLY on first half: second half",
        m.at(m.size / 2),
        m.size / 2,
    )?;
    c.eq(
        "SET_READ_MOSTLY on first half: second half READ_MOSTLY",
        second.read_mostly,
        0,
    );
    let whole = range_state(
        &mut c,
        "SET_READ_MOSTLY on first half: whole",
        m.ptr,
        m.size,
    )?;
    c.eq(
        "SET_READ_MOSTLY on first half: whole READ_MOSTLY (all pages must have it)",
        whole.read_mostly,
        0,
    );
    // Read-duplicated data reads the same on the device and on the host.
    let dev = DeviceBuf::new(m.size)?;
    let stream = CuStream::new()?;
    c.ok(cu!(mem_prefetch(m.ptr, m.size, dev_loc(0), 0, stream.0)));
    c.ok(stream.sync());
    c.that(
        device_view(&dev, m.ptr, m.size / 4)? == data,
        "read-mostly data differs on the device",
    );
    c.that(
        m.words()[..] == data[..],
        "read-mostly data differs on the host",
    );
    // A host write invalidates the other copies; the device then sees it.
    m.words()[7] = 0xDEAD_BEEF;
    c.eq(
        "device view after a host write to a read-mostly page",
        device_view(&dev, m.ptr, 8)?[7],
        0xDEAD_BEEF,
    );

    advise(
        &mut c,
        m.ptr,
        m.size,
        CU_MEM_ADVISE_SET_READ_MOSTLY,
        dev_loc(0),
    );
    let s = range_state(&mut c, "SET_READ_MOSTLY on all", m.ptr, m.size)?;
    c.eq("SET_READ_MOSTLY on all: READ_MOSTLY", s.read_mostly, 1);
    advise(
        &mut c,
        m.ptr,
        m.size,
        CU_MEM_ADVISE_UNSET_READ_MOSTLY,
        ignored_unset,
    );
    let s = range_state(&mut c, "UNSET_READ_MOSTLY", m.ptr, m.size)?;
    c.eq("UNSET_READ_MOSTLY: READ_MOSTLY", s.read_mostly, 0);
    want_no_preferred(&mut c, "UNSET_READ_MOSTLY", &s);
    want_accessed_by(&mut c, "UNSET_READ_MOSTLY", &s, &[]);
    c.eq("data after the copies collapse", m.words()[7], 0xDEAD_BEEF);
    c.that(
        m.words()[8..] == data[8..],
        "data changed when read-mostly copies collapsed",
    );
    let odd = loc(CU_MEM_LOCATION_TYPE_HOST_NUMA, 9999);
    let r = unsafe { mem_advise(m.ptr, m.size, CU_MEM_ADVISE_SET_READ_MOSTLY, odd) };
    c.ok(cu!(cuCtxSynchronize()));
    let rm = range_one(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m.ptr, m.size, SENT_I32)?;
    println!(
        "observation: SET_READ_MOSTLY with {{HOST_NUMA, 9999}} -> {}, READ_MOSTLY {rm}",
        common::error_name(r)
    );
    advise(
        &mut c,
        m.ptr,
        m.size,
        CU_MEM_ADVISE_UNSET_READ_MOSTLY,
        dev_loc(0),
    );
    c.finish()
}

#[cfg(cuda_12020)]
fn advise_preferred_location_every_location_type() -> TestResult {
    let gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    let numa = gpu.host_numa_node_or_thread_node()?;
    let pinned = PinnedThread::here()?;
    println!(
        "host NUMA id {numa}; thread pinned to CPU {} on node {}",
        pinned.cpu, pinned.node
    );
    let m = Managed::new(2 * MIB)?;
    let data = pattern(0x5150, m.size / 4);
    m.words().copy_from_slice(&data);

    let cases: [(&str, CUmemLocation, i32, CUmemLocationType, i32); 4] = [
        ("device 0", dev_loc(0), 0, CU_MEM_LOCATION_TYPE_DEVICE, 0),
        // id is ignored for HOST.
        (
            "host",
            loc(CU_MEM_LOCATION_TYPE_HOST, 12345),
            CU_DEVICE_CPU,
            CU_MEM_LOCATION_TYPE_HOST,
            0,
        ),
        // A host NUMA node: reads back as that node, or as plain host
        // memory (see want_preferred_host_numa).
        (
            "host NUMA",
            loc(CU_MEM_LOCATION_TYPE_HOST_NUMA, numa),
            CU_DEVICE_CPU,
            CU_MEM_LOCATION_TYPE_HOST_NUMA,
            numa,
        ),
        // id is ignored; the node of the calling thread's CPU is used.
        (
            "host NUMA current",
            loc(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 12345),
            CU_DEVICE_CPU,
            CU_MEM_LOCATION_TYPE_HOST_NUMA,
            pinned.node,
        ),
    ];
    for (name, l, legacy, ty, id) in cases {
        let what = format!("SET_PREFERRED_LOCATION {name}");
        if !advise(
            &mut c,
            m.ptr,
            m.size,
            CU_MEM_ADVISE_SET_PREFERRED_LOCATION,
            l,
        ) {
            continue;
        }
        c.ok(cu!(cuCtxSynchronize()));
        let s = range_state(&mut c, &what, m.ptr, m.size)?;
        println!("{what}: {s:?}");
        if ty == CU_MEM_LOCATION_TYPE_HOST_NUMA {
            want_preferred_host_numa(&mut c, &what, &s, id);
        } else {
            want_preferred(&mut c, &what, &s, legacy, ty, id);
        }
        c.eq(format!("{what}: READ_MOSTLY"), s.read_mostly, 0);
        want_no_prefetch(&mut c, &what, &s);
        // Setting a preferred location migrates nothing by itself, and data stays intact.
        c.that(m.words()[..] == data[..], format!("{what}: data changed"));

        // Unset (location ignored, so give another one than was set): no
        // preferred location at all.
        let other = if l.type_ == CU_MEM_LOCATION_TYPE_DEVICE {
            loc(CU_MEM_LOCATION_TYPE_HOST, 777)
        } else {
            dev_loc(0)
        };
        advise(
            &mut c,
            m.ptr,
            m.size,
            CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION,
            other,
        );
        let s = range_state(&mut c, &format!("UNSET after {name}"), m.ptr, m.size)?;
        want_no_preferred(&mut c, &format!("UNSET after {name}"), &s);
    }

    // Different preferred locations on the two halves: each half reports its
    // own, the whole range reports none (not all pages agree).
    let half = m.size / 2;
    advise(
        &mut c,
        m.ptr,
        half,
        CU_MEM_ADVISE_SET_PREFERRED_LOCATION,
        dev_loc(0),
    );
    advise(
        &mut c,
        m.at(half),
        half,
        CU_MEM_ADVISE_SET_PREFERRED_LOCATION,
        host_loc(),
    );
    let s = range_state(&mut c, "split: first half", m.ptr, half)?;
    want_preferred(
        &mut c,
        "split: first half",
        &s,
        0,
        CU_MEM_LOCATION_TYPE_DEVICE,
        0,
    );
    let s = range_state(&mut c, "split: second half", m.at(half), half)?;
    want_preferred(
        &mut c,
        "split: second half",
        &s,
        CU_DEVICE_CPU,
        CU_MEM_LOCATION_TYPE_HOST,
        0,
    );
    let s = range_state(&mut c, "split: whole", m.ptr, m.size)?;
    want_no_preferred(&mut c, "split: whole", &s);
    // Preferred location on only part: the whole range has no common preference.
    advise(
        &mut c,
        m.at(half),
        half,
        CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION,
        host_loc(),
    );
    let s = range_state(&mut c, "first half only: second half", m.at(half), half)?;
    want_no_preferred(&mut c, "first half only: second half", &s);
    let s = range_state(&mut c, "first half only: whole", m.ptr, m.size)?;
    want_no_preferred(&mut c, "first half only: whole", &s);
    advise(
        &mut c,
        m.ptr,
        m.size,
        CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION,
        host_loc(),
    );
    c.that(
        m.words()[..] == data[..],
        "data changed by preferred-location advice",
    );
    drop(pinned);
    c.finish()
}

#[cfg(cuda_12020)]
fn advise_accessed_by() -> TestResult {
    let gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    let numa = gpu.host_numa_node_or_thread_node()?;
    let m = Managed::new(2 * MIB)?;
    let data = pattern(0xACCE, m.size / 4);
    m.words().copy_from_slice(&data);

    advise(
        &mut c,
        m.ptr,
        m.size,
        CU_MEM_ADVISE_SET_ACCESSED_BY,
        dev_loc(0),
    );
    let s = range_state(&mut c, "SET_ACCESSED_BY device 0", m.ptr, m.size)?;
    want_accessed_by(&mut c, "SET_ACCESSED_BY device 0", &s, &[0]);
    want_no_preferred(&mut c, "SET_ACCESSED_BY device 0", &s);
    c.eq("SET_ACCESSED_BY device 0: READ_MOSTLY", s.read_mostly, 0);
    // A one-element buffer holds the one device.
    c.eq(
        "ACCESSED_BY into 4 bytes",
        range_one(CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, m.ptr, m.size, SENT_I32)?,
        0,
    );
    // The device reads the data through its mapping; the host still sees it.
    let dev = DeviceBuf::new(m.size)?;
    c.that(
        device_view(&dev, m.ptr, m.size / 4)? == data,
        "device view differs with ACCESSED_BY",
    );
    c.that(
        m.words()[..] == data[..],
        "host view differs with ACCESSED_BY",
    );

    // Host (id ignored): the host is not a device id, so the list does not
    // change by it; the call is accepted.
    advise(
        &mut c,
        m.ptr,
        m.size,
        CU_MEM_ADVISE_SET_ACCESSED_BY,
        loc(CU_MEM_LOCATION_TYPE_HOST, 4242),
    );
    let s = range_state(&mut c, "SET_ACCESSED_BY host too", m.ptr, m.size)?;
    println!("SET_ACCESSED_BY device 0 + host: {:?}", s.accessed_by);
    want_accessed_by(
        &mut c,
        "SET_ACCESSED_BY device 0 + host",
        &s,
        &[0, CU_DEVICE_CPU],
    );
    advise(
        &mut c,
        m.ptr,
        m.size,
        CU_MEM_ADVISE_UNSET_ACCESSED_BY,
        host_loc(),
    );
    let s = range_state(&mut c, "UNSET_ACCESSED_BY host", m.ptr, m.size)?;
    want_accessed_by(&mut c, "UNSET_ACCESSED_BY host", &s, &[0]);

    // Only "device" and "host" are valid for ACCESSED_BY.
    for (name, l) in [
        ("host NUMA", loc(CU_MEM_LOCATION_TYPE_HOST_NUMA, numa)),
        (
            "host NUMA current",
            loc(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0),
        ),
    ] {
        c.ok(common::expect_error(
            unsafe { mem_advise(m.ptr, m.size, CU_MEM_ADVISE_SET_ACCESSED_BY, l) },
            CUDA_ERROR_INVALID_VALUE,
            &format!("cuMemAdvise(SET_ACCESSED_BY, {name})"),
        ));
    }
    let s = range_state(&mut c, "after rejected ACCESSED_BY", m.ptr, m.size)?;
    want_accessed_by(&mut c, "after rejected ACCESSED_BY", &s, &[0]);

    // Accessed-by on the first half only: the whole range lists no device.
    advise(
        &mut c,
        m.at(MIB),
        MIB,
        CU_MEM_ADVISE_UNSET_ACCESSED_BY,
        dev_loc(0),
    );
    let s = range_state(&mut c, "ACCESSED_BY first half: first half", m.ptr, MIB)?;
    want_accessed_by(&mut c, "ACCESSED_BY first half: first half", &s, &[0]);
    let s = range_state(&mut c, "ACCESSED_BY first half: whole", m.ptr, m.size)?;
    want_accessed_by(&mut c, "ACCESSED_BY first half: whole", &s, &[]);

    advise(
        &mut c,
        m.ptr,
        m.size,
        CU_MEM_ADVISE_UNSET_ACCESSED_BY,
        dev_loc(0),
    );
    let s = range_state(&mut c, "UNSET_ACCESSED_BY device 0", m.ptr, m.size)?;
    want_accessed_by(&mut c, "UNSET_ACCESSED_BY device 0", &s, &[]);
    c.that(
        m.words()[..] == data[..],
        "data changed by accessed-by advice",
    );
    c.finish()
}

/// The advised range is widened to whole CPU pages: a misaligned 10-byte
/// range inside page 1 sets the advice on all of page 1 and nothing else.
#[cfg(cuda_12020)]
fn advise_rounds_to_cpu_pages() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    let m = Managed::new(2 * MIB)?;
    advise(
        &mut c,
        m.at(page + 100),
        10,
        CU_MEM_ADVISE_SET_READ_MOSTLY,
        dev_loc(0),
    );
    advise(
        &mut c,
        m.at(page + 100),
        10,
        CU_MEM_ADVISE_SET_PREFERRED_LOCATION,
        dev_loc(0),
    );
    let s = range_state(&mut c, "page 1", m.at(page), page)?;
    c.eq("page 1: READ_MOSTLY", s.read_mostly, 1);
    want_preferred(&mut c, "page 1", &s, 0, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    let s = range_state(&mut c, "last byte of page 1", m.at(2 * page - 1), 1)?;
    c.eq("last byte of page 1: READ_MOSTLY", s.read_mostly, 1);
    let s = range_state(&mut c, "page 0", m.ptr, page)?;
    c.eq("page 0: READ_MOSTLY", s.read_mostly, 0);
    want_no_preferred(&mut c, "page 0", &s);
    let s = range_state(&mut c, "page 2", m.at(2 * page), page)?;
    c.eq("page 2: READ_MOSTLY", s.read_mostly, 0);
    want_no_preferred(&mut c, "page 2", &s);
    c.finish()
}

/// Every advice set at once on one range, then read back in one
/// `cuMemRangeGetAttributes` call (and a subset call with odd sizes).
#[cfg(cuda_12020)]
fn range_attributes_several_at_once() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    let m = Managed::new(2 * MIB)?;
    let stream = CuStream::new()?;
    advise(
        &mut c,
        m.ptr,
        m.size,
        CU_MEM_ADVISE_SET_READ_MOSTLY,
        dev_loc(0),
    );
    advise(
        &mut c,
        m.ptr,
        m.size,
        CU_MEM_ADVISE_SET_PREFERRED_LOCATION,
        dev_loc(0),
    );
    advise(
        &mut c,
        m.ptr,
        m.size,
        CU_MEM_ADVISE_SET_ACCESSED_BY,
        dev_loc(0),
    );
    c.ok(cu!(mem_prefetch(m.ptr, m.size, dev_loc(0), 0, stream.0)));
    c.ok(stream.sync());
    let s = range_state(&mut c, "all advice + prefetch", m.ptr, m.size)?;
    c.eq("READ_MOSTLY", s.read_mostly, 1);
    want_preferred(&mut c, "all advice", &s, 0, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    want_accessed_by(&mut c, "all advice", &s, &[0]);
    want_last_prefetch(&mut c, "all advice", &s, 0, CU_MEM_LOCATION_TYPE_DEVICE, 0);

    // Three attributes, ACCESSED_BY with room for two ids.
    let (mut rm, mut by, mut lt) = (SENT_I32, [SENT_I32; 2], SENT_TYPE);
    let mut data: [*mut c_void; 3] = [
        (&mut by as *mut [i32; 2]).cast(),
        (&mut lt as *mut CUmemLocationType).cast(),
        (&mut rm as *mut i32).cast(),
    ];
    let mut sizes = [8usize, 4, 4];
    let mut attrs = [
        CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY,
        CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE,
        CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
    ];
    c.ok(cu!(cuMemRangeGetAttributes(
        data.as_mut_ptr(),
        sizes.as_mut_ptr(),
        attrs.as_mut_ptr(),
        3,
        m.ptr,
        m.size
    )));
    c.eq("3 at once: ACCESSED_BY[2]", by, [0, CU_DEVICE_INVALID]);
    c.eq(
        "3 at once: LAST_PREFETCH_LOCATION_TYPE",
        lt,
        CU_MEM_LOCATION_TYPE_DEVICE,
    );
    c.eq("3 at once: READ_MOSTLY", rm, 1);

    advise(
        &mut c,
        m.ptr,
        m.size,
        CU_MEM_ADVISE_UNSET_READ_MOSTLY,
        dev_loc(0),
    );
    advise(
        &mut c,
        m.ptr,
        m.size,
        CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION,
        dev_loc(0),
    );
    advise(
        &mut c,
        m.ptr,
        m.size,
        CU_MEM_ADVISE_UNSET_ACCESSED_BY,
        dev_loc(0),
    );
    let s = range_state(&mut c, "all unset", m.ptr, m.size)?;
    c.eq("all unset: READ_MOSTLY", s.read_mostly, 0);
    want_no_preferred(&mut c, "all unset", &s);
    want_accessed_by(&mut c, "all unset", &s, &[]);
    // Advice does not erase the prefetch record.
    want_last_prefetch(&mut c, "all unset", &s, 0, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    c.finish()
}

#[cfg(cuda_12020)]
static mut STATIC_HOST_ARRAY: [u8; 64 * 1024] = [0x5A; 64 * 1024];

/// System-allocated memory (malloc'd heap, a static array).
///
/// The docs accept system-allocated pageable memory only where the device
/// can access pageable memory (`CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS`,
/// i.e. HMM or ATS); "specifying an invalid system-allocated pageable memory
/// range results in an error". The H200 host here reports 0 (no HMM/ATS), so
/// such a range is no unified memory at all: advice, range attributes,
/// prefetches and discards on it fail with CUDA_ERROR_INVALID_VALUE
/// (measured), and the bytes stay untouched.
#[cfg(cuda_12020)]
fn system_allocated_memory() -> TestResult {
    let gpu = Gpu::new(0)?;
    let probe = DeviceBuf::new(256)?;
    let mut c = BadInput::round_trip(probe.ptr, 256);
    let pageable = gpu.attribute(CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS)?;
    println!("pageableMemoryAccess = {pageable}");
    let heap: Vec<u32> = pattern(0x4EA9, 16 * KIB);
    let heap_ptr = heap.as_ptr() as CUdeviceptr;
    let heap_len = heap.len() * 4;
    let static_ptr = core::ptr::addr_of!(STATIC_HOST_ARRAY) as CUdeviceptr;
    let static_len = 64 * KIB;
    let stream = CuStream::new()?;

    if pageable != 0 {
        // A device with HMM/ATS: the advice is accepted and read back.
        advise(
            &mut c,
            heap_ptr,
            heap_len,
            CU_MEM_ADVISE_SET_READ_MOSTLY,
            dev_loc(0),
        );
        c.eq(
            "pageable heap READ_MOSTLY",
            range_one(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, heap_ptr, heap_len, 0i32)?,
            1,
        );
        advise(
            &mut c,
            heap_ptr,
            heap_len,
            CU_MEM_ADVISE_UNSET_READ_MOSTLY,
            dev_loc(0),
        );
        return c.finish();
    }
    let inval = CUDA_ERROR_INVALID_VALUE;
    for (name, ptr, len) in [
        ("malloc'd heap", heap_ptr, heap_len),
        ("static array", static_ptr, static_len),
    ] {
        for (advice, l) in [
            (CU_MEM_ADVISE_SET_READ_MOSTLY, dev_loc(0)),
            (CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host_loc()),
            (CU_MEM_ADVISE_SET_PREFERRED_LOCATION, dev_loc(0)),
            (CU_MEM_ADVISE_SET_ACCESSED_BY, dev_loc(0)),
        ] {
            c.cu(
                inval,
                unsafe { mem_advise(ptr, len, advice, l) },
                &format!("cuMemAdvise({name}, advice {})", advice.0),
            );
        }
        let mut v = SENT_I32;
        c.ok(common::expect_error(
            unsafe {
                cuMemRangeGetAttribute(
                    (&mut v as *mut i32).cast(),
                    4,
                    CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
                    ptr,
                    len,
                )
            },
            inval,
            &format!("cuMemRangeGetAttribute({name})"),
        ));
        c.eq(
            format!("{name}: range attribute output untouched"),
            v,
            SENT_I32,
        );
        c.still_works_after("range attribute on system memory");
        c.cu(
            inval,
            unsafe { mem_prefetch(ptr, len, dev_loc(0), 0, stream.0) },
            &format!("cuMemPrefetchAsync({name} to device)"),
        );
        // The batch calls: 13.0 and later (the skip is printed).
        #[cfg(cuda_13000)]
        {
            let (mut p, mut s, mut l, mut i) = ([ptr], [len], [dev_loc(0)], [0usize]);
            c.cu(
                inval,
                unsafe {
                    cuMemPrefetchBatchAsync(
                        p.as_mut_ptr(),
                        s.as_mut_ptr(),
                        1,
                        l.as_mut_ptr(),
                        i.as_mut_ptr(),
                        1,
                        0,
                        stream.0,
                    )
                },
                &format!("cuMemPrefetchBatchAsync({name})"),
            );
            c.cu(
                inval,
                unsafe { cuMemDiscardBatchAsync(p.as_mut_ptr(), s.as_mut_ptr(), 1, 0, stream.0) },
                &format!("cuMemDiscardBatchAsync({name})"),
            );
        }
        #[cfg(not(cuda_13000))]
        println!("{name}: batch checks skipped: {BATCH_NOT_IN_RELEASE}");
    }
    c.ok(stream.sync());
    c.that(heap == pattern(0x4EA9, 16 * KIB), "heap bytes changed");
    let st = unsafe {
        std::slice::from_raw_parts(
            core::ptr::addr_of!(STATIC_HOST_ARRAY).cast::<u8>(),
            64 * KIB,
        )
    };
    c.that(st.iter().all(|&b| b == 0x5A), "static array bytes changed");
    c.finish()
}

// ---------------------------------------------------------------------------
// cuMemPrefetchAsync and the batch prefetch/discard calls
// ---------------------------------------------------------------------------

#[cfg(cuda_12020)]
fn prefetch_round_trip() -> TestResult {
    let gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    let numa = gpu.host_numa_node_or_thread_node()?;
    let pinned = PinnedThread::here()?;
    let m = Managed::new(4 * MIB)?;
    let words = m.size / 4;
    let dev = DeviceBuf::new(m.size)?;
    let stream = CuStream::new()?;
    let data = pattern(0xF00D, words);
    m.words().copy_from_slice(&data);

    // To the device: recorded as device 0; the device reads the host's bytes.
    c.ok(cu!(mem_prefetch(m.ptr, m.size, dev_loc(0), 0, stream.0)));
    c.ok(stream.sync());
    let s = range_state(&mut c, "prefetch to device 0", m.ptr, m.size)?;
    want_last_prefetch(
        &mut c,
        "prefetch to device 0",
        &s,
        0,
        CU_MEM_LOCATION_TYPE_DEVICE,
        0,
    );
    want_no_preferred(&mut c, "prefetch to device 0", &s);
    c.that(
        device_view(&dev, m.ptr, words)? == data,
        "device view after prefetch to device differs",
    );

    // The device overwrites the first half while the data is on it.
    c.ok(cu!(cuMemsetD32(m.ptr, 0x00C0_FFEE, words / 2)));
    c.ok(cu!(cuCtxSynchronize()));

    // To the host (id ignored): recorded as the CPU; the host reads both halves.
    c.ok(cu!(mem_prefetch(
        m.ptr,
        m.size,
        loc(CU_MEM_LOCATION_TYPE_HOST, 31337),
        0,
        stream.0
    )));
    c.ok(stream.sync());
    let s = range_state(&mut c, "prefetch to host", m.ptr, m.size)?;
    want_last_prefetch(
        &mut c,
        "prefetch to host",
        &s,
        CU_DEVICE_CPU,
        CU_MEM_LOCATION_TYPE_HOST,
        0,
    );
    let host = m.words();
    c.that(
        host[..words / 2].iter().all(|&w| w == 0x00C0_FFEE),
        "device-written half lost on the way to the host",
    );
    c.that(
        host[words / 2..] == data[words / 2..],
        "untouched half changed on the round trip",
    );

    // Host writes, then to the device again and back through a host NUMA node.
    let data2 = pattern(0xBEEF, words);
    m.words().copy_from_slice(&data2);
    c.ok(cu!(mem_prefetch(m.ptr, m.size, dev_loc(0), 0, stream.0)));
    c.ok(stream.sync());
    c.that(
        device_view(&dev, m.ptr, words)? == data2,
        "device view after the second prefetch differs",
    );
    c.ok(cu!(mem_prefetch(
        m.ptr,
        m.size,
        loc(CU_MEM_LOCATION_TYPE_HOST_NUMA, numa),
        0,
        stream.0
    )));
    c.ok(stream.sync());
    let s = range_state(&mut c, "prefetch to host NUMA", m.ptr, m.size)?;
    println!("prefetch to host NUMA {numa}: {s:?}");
    want_last_prefetch(
        &mut c,
        "prefetch to host NUMA",
        &s,
        CU_DEVICE_CPU,
        CU_MEM_LOCATION_TYPE_HOST_NUMA,
        numa,
    );
    c.that(
        m.words()[..] == data2[..],
        "data changed on the way to the host NUMA node",
    );

    // Half to the device, half to the current thread's NUMA node.
    let half = m.size / 2;
    c.ok(cu!(mem_prefetch(m.ptr, half, dev_loc(0), 0, stream.0)));
    c.ok(cu!(mem_prefetch(
        m.at(half),
        half,
        loc(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 999),
        0,
        stream.0
    )));
    c.ok(stream.sync());
    let s = range_state(&mut c, "split: first half", m.ptr, half)?;
    want_last_prefetch(
        &mut c,
        "split: first half (device)",
        &s,
        0,
        CU_MEM_LOCATION_TYPE_DEVICE,
        0,
    );
    let s = range_state(&mut c, "split: second half", m.at(half), half)?;
    println!(
        "prefetch to host NUMA current (node {}): {s:?}",
        pinned.node
    );
    // The record is "the last location the application requested": a
    // request for the current thread's node is kept as that request, type
    // HOST_NUMA_CURRENT with the id as passed (measured on driver 580; the
    // docs list only DEVICE, HOST and HOST_NUMA here, and say to ignore the id
    // of any other type).
    want_last_prefetch(
        &mut c,
        "split: second half (host NUMA current)",
        &s,
        CU_DEVICE_CPU,
        CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT,
        0,
    );
    let s = range_state(&mut c, "split: whole", m.ptr, m.size)?;
    want_no_prefetch(&mut c, "split: whole (two locations)", &s);
    c.that(
        device_view(&dev, m.ptr, words)? == data2,
        "device view after the split prefetch differs",
    );
    c.that(
        m.words()[..] == data2[..],
        "host view after the split prefetch differs",
    );
    drop(pinned);
    c.finish()
}

/// Ranges for the batch calls: `n` managed allocations of 1 MiB with
/// distinct patterns.
#[cfg(cuda_13000)]
fn batch_ranges(n: usize, seed: u32) -> Result<(Vec<Managed>, Vec<Vec<u32>>), Failed> {
    let mut ms = Vec::new();
    let mut pats = Vec::new();
    for i in 0..n {
        let m = Managed::new(MIB)?;
        let p = pattern(seed + i as u32 * 0x1111, MIB / 4);
        m.words().copy_from_slice(&p);
        ms.push(m);
        pats.push(p);
    }
    Ok((ms, pats))
}

#[cfg(cuda_13000)]
fn prefetch_batch() -> TestResult {
    let gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    let numa = gpu.host_numa_node_or_thread_node()?;
    let stream = CuStream::new()?;
    let dev = DeviceBuf::new(MIB)?;
    let (m, pats) = batch_ranges(4, 0xB000)?;
    let half = MIB / 2;

    // A -> device 0; B, C -> host; first half of D -> host NUMA.
    let mut dptrs = [m[0].ptr, m[1].ptr, m[2].ptr, m[3].ptr];
    let mut sizes = [MIB, MIB, MIB, half];
    let mut locs = [
        dev_loc(0),
        host_loc(),
        loc(CU_MEM_LOCATION_TYPE_HOST_NUMA, numa),
    ];
    let mut idxs = [0usize, 1, 3];
    c.ok(cu!(cuMemPrefetchBatchAsync(
        dptrs.as_mut_ptr(),
        sizes.as_mut_ptr(),
        4,
        locs.as_mut_ptr(),
        idxs.as_mut_ptr(),
        3,
        0,
        stream.0
    )));
    c.ok(stream.sync());
    let s = range_state(&mut c, "batch 1: A", m[0].ptr, MIB)?;
    want_last_prefetch(&mut c, "batch 1: A", &s, 0, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    for (i, name) in [(1, "B"), (2, "C")] {
        let s = range_state(&mut c, &format!("batch 1: {name}"), m[i].ptr, MIB)?;
        want_last_prefetch(
            &mut c,
            &format!("batch 1: {name}"),
            &s,
            CU_DEVICE_CPU,
            CU_MEM_LOCATION_TYPE_HOST,
            0,
        );
    }
    let s = range_state(&mut c, "batch 1: D first half", m[3].ptr, half)?;
    want_last_prefetch(
        &mut c,
        "batch 1: D first half",
        &s,
        CU_DEVICE_CPU,
        CU_MEM_LOCATION_TYPE_HOST_NUMA,
        numa,
    );
    let s = range_state(&mut c, "batch 1: D second half", m[3].at(half), half)?;
    want_no_prefetch(&mut c, "batch 1: D second half (not in the batch)", &s);
    let s = range_state(&mut c, "batch 1: D whole", m[3].ptr, MIB)?;
    want_no_prefetch(&mut c, "batch 1: D whole", &s);
    c.that(
        device_view(&dev, m[0].ptr, MIB / 4)? == pats[0],
        "A differs on the device after batch 1",
    );

    // A, B -> host; C, D -> device 0.
    let mut sizes = [MIB; 4];
    let mut locs = [host_loc(), dev_loc(0)];
    let mut idxs = [0usize, 2];
    c.ok(cu!(cuMemPrefetchBatchAsync(
        dptrs.as_mut_ptr(),
        sizes.as_mut_ptr(),
        4,
        locs.as_mut_ptr(),
        idxs.as_mut_ptr(),
        2,
        0,
        stream.0
    )));
    c.ok(stream.sync());
    for i in 0..4 {
        let name = format!("batch 2: {}", ["A", "B", "C", "D"][i]);
        let s = range_state(&mut c, &name, m[i].ptr, MIB)?;
        if i < 2 {
            want_last_prefetch(
                &mut c,
                &name,
                &s,
                CU_DEVICE_CPU,
                CU_MEM_LOCATION_TYPE_HOST,
                0,
            );
        } else {
            want_last_prefetch(&mut c, &name, &s, 0, CU_MEM_LOCATION_TYPE_DEVICE, 0);
        }
        c.that(
            device_view(&dev, m[i].ptr, MIB / 4)? == pats[i],
            format!("{name}: device view differs"),
        );
        c.that(
            m[i].words()[..] == pats[i][..],
            format!("{name}: host view differs"),
        );
    }
    c.finish()
}

#[cfg(cuda_13000)]
fn discard_batch() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    let stream = CuStream::new()?;
    let dev = DeviceBuf::new(MIB)?;
    let (m, pats) = batch_ranges(3, 0xD000)?;
    let half = MIB / 2;
    let words = MIB / 4;

    // A and C on the device, B on the host.
    c.ok(cu!(mem_prefetch(m[0].ptr, MIB, dev_loc(0), 0, stream.0)));
    c.ok(cu!(mem_prefetch(m[1].ptr, MIB, host_loc(), 0, stream.0)));
    c.ok(cu!(mem_prefetch(m[2].ptr, MIB, dev_loc(0), 0, stream.0)));
    c.ok(stream.sync());
    // Policies on A: discarding drops contents, not advice.
    advise(
        &mut c,
        m[0].ptr,
        MIB,
        CU_MEM_ADVISE_SET_PREFERRED_LOCATION,
        dev_loc(0),
    );
    advise(
        &mut c,
        m[0].ptr,
        MIB,
        CU_MEM_ADVISE_SET_ACCESSED_BY,
        dev_loc(0),
    );

    // Discard all of A and the first half of B; C is not in the batch.
    let mut dptrs = [m[0].ptr, m[1].ptr];
    let mut sizes = [MIB, half];
    c.ok(cu!(cuMemDiscardBatchAsync(
        dptrs.as_mut_ptr(),
        sizes.as_mut_ptr(),
        2,
        0,
        stream.0
    )));
    c.ok(stream.sync());
    // The discarded ranges keep their advice, and their prefetch record
    // (the last location the application asked to prefetch them to; a
    // discard is no prefetch).
    let s = range_state(&mut c, "discarded A", m[0].ptr, MIB)?;
    want_preferred(&mut c, "discarded A", &s, 0, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    want_accessed_by(&mut c, "discarded A", &s, &[0]);
    want_last_prefetch(&mut c, "discarded A", &s, 0, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    let s = range_state(&mut c, "discarded first half of B", m[1].ptr, half)?;
    want_no_preferred(&mut c, "discarded first half of B", &s);
    want_last_prefetch(
        &mut c,
        "discarded first half of B",
        &s,
        CU_DEVICE_CPU,
        CU_MEM_LOCATION_TYPE_HOST,
        0,
    );
    // What was not discarded keeps its bytes and its record.
    let s = range_state(&mut c, "C (not discarded)", m[2].ptr, MIB)?;
    want_last_prefetch(
        &mut c,
        "C (not discarded)",
        &s,
        0,
        CU_MEM_LOCATION_TYPE_DEVICE,
        0,
    );
    c.that(
        device_view(&dev, m[2].ptr, words)? == pats[2],
        "C (not discarded) changed on the device",
    );
    c.that(
        m[2].words()[..] == pats[2][..],
        "C (not discarded) changed on the host",
    );
    c.that(
        m[1].words()[words / 2..] == pats[1][words / 2..],
        "second half of B (not discarded) changed",
    );

    // Discarded memory is written (the host writes A, the device the first
    // half of B) and then reads back exactly.
    let new_a = pattern(0xA11A, words);
    m[0].words().copy_from_slice(&new_a);
    c.ok(cu!(cuMemsetD32(m[1].ptr, 0x0B0B_0B0B, words / 2)));
    c.ok(cu!(cuCtxSynchronize()));
    c.that(
        device_view(&dev, m[0].ptr, words)? == new_a,
        "A rewritten on the host reads wrong on the device",
    );
    c.that(
        m[0].words()[..] == new_a[..],
        "A rewritten on the host reads wrong on the host",
    );
    let b = m[1].words();
    c.that(
        b[..words / 2].iter().all(|&w| w == 0x0B0B_0B0B),
        "B rewritten on the device reads wrong on the host",
    );
    c.that(
        b[words / 2..] == pats[1][words / 2..],
        "second half of B changed after the rewrite",
    );
    let bd = device_view(&dev, m[1].ptr, words)?;
    c.that(
        bd[..words / 2].iter().all(|&w| w == 0x0B0B_0B0B),
        "B rewritten on the device reads wrong on the device",
    );

    // A prefetch after a discard is recorded as usual.
    c.ok(cu!(cuMemDiscardBatchAsync(
        dptrs.as_mut_ptr(),
        sizes.as_mut_ptr(),
        1,
        0,
        stream.0
    )));
    c.ok(cu!(mem_prefetch(m[0].ptr, MIB, host_loc(), 0, stream.0)));
    c.ok(stream.sync());
    let s = range_state(&mut c, "A discarded then prefetched to host", m[0].ptr, MIB)?;
    want_last_prefetch(
        &mut c,
        "A discarded then prefetched to host",
        &s,
        CU_DEVICE_CPU,
        CU_MEM_LOCATION_TYPE_HOST,
        0,
    );
    m[0].words().copy_from_slice(&pats[0]);
    c.that(
        device_view(&dev, m[0].ptr, words)? == pats[0],
        "A rewritten after prefetch reads wrong on the device",
    );
    c.finish()
}

#[cfg(cuda_13000)]
fn discard_and_prefetch_batch() -> TestResult {
    let gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    let numa = gpu.host_numa_node_or_thread_node()?;
    let stream = CuStream::new()?;
    let dev = DeviceBuf::new(MIB)?;
    let (m, _) = batch_ranges(4, 0xDA00)?;
    let words = MIB / 4;
    let names = ["A", "B", "C", "D"];

    // A, B -> device 0; C, D -> host.
    let mut dptrs = [m[0].ptr, m[1].ptr, m[2].ptr, m[3].ptr];
    let mut sizes = [MIB; 4];
    let mut locs = [dev_loc(0), host_loc()];
    let mut idxs = [0usize, 2];
    c.ok(cu!(cuMemDiscardAndPrefetchBatchAsync(
        dptrs.as_mut_ptr(),
        sizes.as_mut_ptr(),
        4,
        locs.as_mut_ptr(),
        idxs.as_mut_ptr(),
        2,
        0,
        stream.0
    )));
    c.ok(stream.sync());
    for i in 0..4 {
        let name = format!("discard+prefetch 1: {}", names[i]);
        let s = range_state(&mut c, &name, m[i].ptr, MIB)?;
        if i < 2 {
            want_last_prefetch(&mut c, &name, &s, 0, CU_MEM_LOCATION_TYPE_DEVICE, 0);
        } else {
            want_last_prefetch(
                &mut c,
                &name,
                &s,
                CU_DEVICE_CPU,
                CU_MEM_LOCATION_TYPE_HOST,
                0,
            );
        }
    }
    // Written where they now live (A, B by the device; C, D by the host), read back both ways.
    let fresh: Vec<Vec<u32>> = (0..4).map(|i| pattern(0x600D + i, words)).collect();
    for i in 0..4 {
        if i < 2 {
            c.ok(cu!(cuMemsetD32(m[i].ptr, 0x1000_0000 + i as u32, words)));
        } else {
            m[i].words().copy_from_slice(&fresh[i]);
        }
    }
    c.ok(cu!(cuCtxSynchronize()));
    for i in 0..4 {
        let want: Vec<u32> = if i < 2 {
            vec![0x1000_0000 + i as u32; words]
        } else {
            fresh[i].clone()
        };
        c.that(
            device_view(&dev, m[i].ptr, words)? == want,
            format!("{}: device view after rewrite differs", names[i]),
        );
        c.that(
            m[i].words()[..] == want[..],
            format!("{}: host view after rewrite differs", names[i]),
        );
    }

    // A, B, C -> host NUMA; D -> device 0.
    let mut locs = [loc(CU_MEM_LOCATION_TYPE_HOST_NUMA, numa), dev_loc(0)];
    let mut idxs = [0usize, 3];
    c.ok(cu!(cuMemDiscardAndPrefetchBatchAsync(
        dptrs.as_mut_ptr(),
        sizes.as_mut_ptr(),
        4,
        locs.as_mut_ptr(),
        idxs.as_mut_ptr(),
        2,
        0,
        stream.0
    )));
    c.ok(stream.sync());
    for i in 0..4 {
        let name = format!("discard+prefetch 2: {}", names[i]);
        let s = range_state(&mut c, &name, m[i].ptr, MIB)?;
        if i < 3 {
            want_last_prefetch(
                &mut c,
                &name,
                &s,
                CU_DEVICE_CPU,
                CU_MEM_LOCATION_TYPE_HOST_NUMA,
                numa,
            );
        } else {
            want_last_prefetch(&mut c, &name, &s, 0, CU_MEM_LOCATION_TYPE_DEVICE, 0);
        }
        m[i].words().copy_from_slice(&fresh[3 - i]);
        c.that(
            device_view(&dev, m[i].ptr, words)? == fresh[3 - i],
            format!("{name}: rewrite reads wrong on the device"),
        );
    }
    c.finish()
}

// ---------------------------------------------------------------------------
// Pointer attributes
// ---------------------------------------------------------------------------

const SENT_A: u64 = 0xA5A5_A5A5_A5A5_A5A5;
const SENT_B: u64 = 0x5A5A_5A5A_5A5A_5A5A;

/// Every queryable pointer attribute (all but P2P_TOKENS, a struct), with the
/// number of bytes the driver writes for it.
const POINTER_ATTRS_BEFORE_12_8: [(CUpointer_attribute, &str, usize); 19] = [
    (CU_POINTER_ATTRIBUTE_CONTEXT, "CONTEXT", 8),
    (CU_POINTER_ATTRIBUTE_MEMORY_TYPE, "MEMORY_TYPE", 4),
    (CU_POINTER_ATTRIBUTE_DEVICE_POINTER, "DEVICE_POINTER", 8),
    (CU_POINTER_ATTRIBUTE_HOST_POINTER, "HOST_POINTER", 8),
    (CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, "SYNC_MEMOPS", 4),
    (CU_POINTER_ATTRIBUTE_BUFFER_ID, "BUFFER_ID", 8),
    (CU_POINTER_ATTRIBUTE_IS_MANAGED, "IS_MANAGED", 4),
    (CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, "DEVICE_ORDINAL", 4),
    (
        CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
        "IS_LEGACY_CUDA_IPC_CAPABLE",
        4,
    ),
    (CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, "RANGE_START_ADDR", 8),
    (CU_POINTER_ATTRIBUTE_RANGE_SIZE, "RANGE_SIZE", 8),
    (CU_POINTER_ATTRIBUTE_MAPPED, "MAPPED", 4),
    (
        CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES,
        "ALLOWED_HANDLE_TYPES",
        8,
    ),
    (
        CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE,
        "IS_GPU_DIRECT_RDMA_CAPABLE",
        4,
    ),
    (CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, "ACCESS_FLAGS", 4),
    (CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, "MEMPOOL_HANDLE", 8),
    (CU_POINTER_ATTRIBUTE_MAPPING_SIZE, "MAPPING_SIZE", 8),
    (
        CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR,
        "MAPPING_BASE_ADDR",
        8,
    ),
    (CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, "MEMORY_BLOCK_ID", 8),
];

/// The attributes `cuPointerGetAttributes` documents.
const MULTI_ATTRS_BEFORE_12_8: [CUpointer_attribute; 14] = [
    CU_POINTER_ATTRIBUTE_CONTEXT,
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
    CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
    CU_POINTER_ATTRIBUTE_HOST_POINTER,
    CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
    CU_POINTER_ATTRIBUTE_BUFFER_ID,
    CU_POINTER_ATTRIBUTE_IS_MANAGED,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
    CU_POINTER_ATTRIBUTE_RANGE_SIZE,
    CU_POINTER_ATTRIBUTE_MAPPED,
    CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
    CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES,
    CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
];

/// Every pointer attribute with its name and width: the list above, and
/// `CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE` (4 bytes) from 12.8.
fn pointer_attrs() -> Vec<(CUpointer_attribute, &'static str, usize)> {
    #[allow(unused_mut, reason = "pushed to from 12.8 only")]
    let mut v = POINTER_ATTRS_BEFORE_12_8.to_vec();
    #[cfg(cuda_12080)]
    v.push((
        CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE,
        "IS_HW_DECOMPRESS_CAPABLE",
        4,
    ));
    v
}

/// The attributes `cuPointerGetAttributes` documents: the list above, and
/// `CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE` from 12.8 (15 then).
fn multi_attrs() -> Vec<CUpointer_attribute> {
    #[allow(unused_mut, reason = "pushed to from 12.8 only")]
    let mut v = MULTI_ATTRS_BEFORE_12_8.to_vec();
    #[cfg(cuda_12080)]
    v.push(CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE);
    v
}

/// `wants` and, from 12.8, `want` for `CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE`
/// (before 12.8 the attribute does not exist: check_pointer prints the skip).
fn with_decompress(
    want: Want,
    wants: impl Into<Vec<(CUpointer_attribute, Want)>>,
) -> Vec<(CUpointer_attribute, Want)> {
    #[allow(unused_mut, reason = "pushed to from 12.8 only")]
    let mut v = wants.into();
    #[cfg(cuda_12080)]
    v.push((CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE, want));
    #[cfg(not(cuda_12080))]
    let _ = want;
    v
}

fn attr_name(a: CUpointer_attribute) -> &'static str {
    pointer_attrs()
        .into_iter()
        .find(|(x, _, _)| *x == a)
        .map_or("?", |(_, n, _)| n)
}

/// How many low bytes differ from the fill in neither read: the bytes the driver wrote.
fn written_width(a: u64, b: u64) -> usize {
    (0..8)
        .take_while(|i| (a >> (8 * i)) as u8 == (b >> (8 * i)) as u8)
        .count()
}

fn low(v: u64, width: usize) -> u64 {
    if width >= 8 {
        v
    } else {
        v & ((1u64 << (8 * width)) - 1)
    }
}

/// One attribute read twice into 8-byte slots filled with two different
/// patterns: the value and how many bytes the driver wrote.
fn ptr_attr(attr: CUpointer_attribute, ptr: CUdeviceptr) -> Result<(u64, usize), CUresult> {
    let (mut a, mut b) = (SENT_A, SENT_B);
    let r = unsafe { cuPointerGetAttribute((&mut a as *mut u64).cast(), attr, ptr) };
    if r != CUDA_SUCCESS {
        return Err(r);
    }
    let r = unsafe { cuPointerGetAttribute((&mut b as *mut u64).cast(), attr, ptr) };
    if r != CUDA_SUCCESS {
        return Err(r);
    }
    let w = written_width(a, b);
    Ok((low(a, w), w))
}

/// The documented attributes (15; 14 before 12.8) in one
/// `cuPointerGetAttributes` call (twice, with two fills): values and written widths.
fn ptr_attrs_multi(ptr: CUdeviceptr) -> Result<Vec<(u64, usize)>, CUresult> {
    let mut attrs = multi_attrs();
    let n = attrs.len();
    let mut a = vec![SENT_A; n];
    let mut b = vec![SENT_B; n];
    for slots in [&mut a, &mut b] {
        let mut data: Vec<*mut c_void> = slots.iter_mut().map(|s| (s as *mut u64).cast()).collect();
        let r =
            unsafe { cuPointerGetAttributes(n as u32, attrs.as_mut_ptr(), data.as_mut_ptr(), ptr) };
        if r != CUDA_SUCCESS {
            return Err(r);
        }
    }
    Ok(a.iter()
        .zip(b.iter())
        .map(|(&x, &y)| {
            let w = written_width(x, y);
            (low(x, w), w)
        })
        .collect())
}

/// Each pointer attribute read alone: its value and written width, or the error.
type AttrReads = Vec<(CUpointer_attribute, Result<(u64, usize), CUresult>)>;

#[derive(Clone, Copy)]
enum Want {
    Is(u64),
    Fails(CUresult),
    NonZero,
    /// 0 or 1.
    Bool,
}

/// Checks the attributes of `ptr` against `wants` (attributes not listed are
/// printed only), their widths, and that `cuPointerGetAttributes` returns
/// the same values in one call. Returns the single-call results.
fn check_pointer(
    c: &mut Checks,
    label: &str,
    ptr: CUdeviceptr,
    wants: &[(CUpointer_attribute, Want)],
) -> AttrReads {
    let mut got = Vec::new();
    let mut line = format!("{label} @ {ptr:#x}:");
    #[cfg(not(cuda_12080))]
    println!("{label}: IS_HW_DECOMPRESS_CAPABLE not checked: not in this release (added in 12.8)");
    for (attr, name, width) in pointer_attrs() {
        let r = ptr_attr(attr, ptr);
        match r {
            Ok((v, w)) => {
                line += &format!(" {name}={v:#x}");
                c.eq(format!("{label}: bytes written for {name}"), w, width);
            }
            Err(e) => line += &format!(" {name}=<{}>", common::error_name(e)),
        }
        if let Some((_, want)) = wants.iter().find(|(a, _)| *a == attr) {
            match (*want, r) {
                (Want::Is(v), Ok((g, _))) => c.eq(format!("{label}: {name}"), g, v),
                (Want::NonZero, Ok((g, _))) => c.that(g != 0, format!("{label}: {name} is 0")),
                (Want::Bool, Ok((g, _))) => {
                    c.that(g <= 1, format!("{label}: {name} = {g}, no boolean"))
                }
                (Want::Fails(e), Err(g)) => c.eq(
                    format!("{label}: {name} error"),
                    common::error_name(g),
                    common::error_name(e),
                ),
                (Want::Fails(e), Ok((g, _))) => c.that(
                    false,
                    format!(
                        "{label}: {name} returned {g:#x}, expected {}",
                        common::error_name(e)
                    ),
                ),
                (_, Err(e)) => c.that(
                    false,
                    format!("{label}: {name} failed with {}", common::error_name(e)),
                ),
            }
        }
        got.push((attr, r));
    }
    println!("{line}");
    match ptr_attrs_multi(ptr) {
        Err(e) => c.that(
            false,
            format!(
                "{label}: cuPointerGetAttributes returned {}",
                common::error_name(e)
            ),
        ),
        Ok(multi) => {
            for (i, attr) in multi_attrs().iter().enumerate() {
                let name = attr_name(*attr);
                let single = got
                    .iter()
                    .find(|(a, _)| a == attr)
                    .map(|(_, r)| *r)
                    .unwrap();
                match single {
                    Ok((v, w)) => c.eq(
                        format!("{label}: cuPointerGetAttributes {name} vs cuPointerGetAttribute"),
                        multi[i],
                        (v, w),
                    ),
                    // What fails alone reads as the default NULL/0 in the
                    // multi-attribute call.
                    Err(_) => c.eq(
                        format!("{label}: cuPointerGetAttributes {name} (fails alone)"),
                        multi[i].0,
                        0,
                    ),
                }
            }
        }
    }
    got
}

fn value_of(got: &AttrReads, a: CUpointer_attribute) -> u64 {
    got.iter()
        .find(|(x, _)| *x == a)
        .and_then(|(_, r)| r.ok())
        .map_or(u64::MAX, |(v, _)| v)
}

fn pointer_attributes_device_memory() -> TestResult {
    let gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    let rdma = gpu.attribute(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED)? as u64;
    let size = MIB + 3 * KIB;
    let a = DeviceBuf::new(size)?;
    let (mut base, mut len) = (0, 0);
    cu!(cuMemGetAddressRange(&mut base, &mut len, a.ptr + 5000))?;
    ensure!(
        base == a.ptr && len == size,
        "cuMemGetAddressRange: {base:#x}+{len}"
    );
    let inner = a.ptr + 5000;
    #[cfg(cuda_12080)]
    println!(
        "MEM_DECOMPRESS_ALGORITHM_MASK {:#x}",
        gpu.attribute(CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK)?
    );
    use Want::*;
    // IS_HW_DECOMPRESS_CAPABLE: cuMemAlloc memory reads 1 on the H200
    // (measured), although CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK
    // is printed above; the docs give no rule for plain allocations, so only
    // its form is checked.
    let wants = with_decompress(
        Bool,
        [
            (CU_POINTER_ATTRIBUTE_CONTEXT, Is(gpu.ctx as u64)),
            (
                CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                Is(CU_MEMORYTYPE_DEVICE.0 as u64),
            ),
            (CU_POINTER_ATTRIBUTE_DEVICE_POINTER, Is(inner)),
            (
                CU_POINTER_ATTRIBUTE_HOST_POINTER,
                Fails(CUDA_ERROR_INVALID_VALUE),
            ),
            (CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, Is(0)),
            (CU_POINTER_ATTRIBUTE_BUFFER_ID, NonZero),
            (CU_POINTER_ATTRIBUTE_IS_MANAGED, Is(0)),
            (CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, Is(0)),
            (CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, Is(1)),
            (CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, Is(a.ptr)),
            (CU_POINTER_ATTRIBUTE_RANGE_SIZE, Is(size as u64)),
            (CU_POINTER_ATTRIBUTE_MAPPED, Is(1)),
            (
                CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES,
                Is(CU_MEM_HANDLE_TYPE_NONE.0 as u64),
            ),
            (CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, Is(rdma)),
            (
                CU_POINTER_ATTRIBUTE_ACCESS_FLAGS,
                Is(CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE.0 as u64),
            ),
            (CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, Is(0)),
        ],
    );
    let got_a = check_pointer(&mut c, "cuMemAlloc (inner pointer)", inner, &wants);
    let id_a = value_of(&got_a, CU_POINTER_ATTRIBUTE_BUFFER_ID);
    // The base pointer names the same buffer.
    let got_base = check_pointer(&mut c, "cuMemAlloc (base pointer)", a.ptr, &[]);
    c.eq(
        "BUFFER_ID of base vs inner pointer",
        value_of(&got_base, CU_POINTER_ATTRIBUTE_BUFFER_ID),
        id_a,
    );
    // Another allocation has another id; ids are never reused after a free.
    let b = DeviceBuf::new(size)?;
    let id_b = value_of(
        &check_pointer(&mut c, "second cuMemAlloc", b.ptr, &[]),
        CU_POINTER_ATTRIBUTE_BUFFER_ID,
    );
    c.that(
        id_b != id_a,
        format!("two live allocations share BUFFER_ID {id_a}"),
    );
    let a_ptr = a.ptr;
    drop(a);
    let a2 = DeviceBuf::new(size)?;
    let id_a2 = value_of(
        &check_pointer(&mut c, "cuMemAlloc after a free", a2.ptr, &[]),
        CU_POINTER_ATTRIBUTE_BUFFER_ID,
    );
    println!(
        "reallocation at {:#x} (freed one was at {a_ptr:#x})",
        a2.ptr
    );
    c.that(
        id_a2 != id_a && id_a2 != id_b,
        format!("BUFFER_ID {id_a2} reused after a free"),
    );
    // The device pointer the attribute gives carries bytes.
    let data = pattern(0xD1CE, 256);
    let dptr = value_of(
        &check_pointer(&mut c, "b", b.ptr, &[]),
        CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
    );
    let mut back = vec![0u32; 256];
    c.ok(cu!(cuMemcpyHtoD(dptr, data.as_ptr().cast(), 1024)));
    c.ok(cu!(cuMemcpyDtoH(back.as_mut_ptr().cast(), b.ptr, 1024)));
    c.that(
        back == data,
        "bytes through the DEVICE_POINTER attribute differ",
    );
    c.finish()
}

fn pointer_attributes_managed() -> TestResult {
    let gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    let m = Managed::new(2 * MIB)?;
    let inner = m.at(12345);
    use Want::*;
    let wants = with_decompress(
        Is(0),
        [
            (CU_POINTER_ATTRIBUTE_CONTEXT, Is(gpu.ctx as u64)),
            // Managed memory reports the device memory type (measured), with IS_MANAGED set.
            (
                CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                Is(CU_MEMORYTYPE_DEVICE.0 as u64),
            ),
            (CU_POINTER_ATTRIBUTE_DEVICE_POINTER, Is(inner)),
            (CU_POINTER_ATTRIBUTE_HOST_POINTER, Is(inner)),
            (CU_POINTER_ATTRIBUTE_BUFFER_ID, NonZero),
            (CU_POINTER_ATTRIBUTE_IS_MANAGED, Is(1)),
            (CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, Is(0)),
            (CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, Is(0)),
            (CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, Is(m.ptr)),
            (CU_POINTER_ATTRIBUTE_RANGE_SIZE, Is(m.size as u64)),
            (CU_POINTER_ATTRIBUTE_MAPPED, Is(1)),
            (CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, Is(0)),
            (CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, Is(0)),
        ],
    );
    let got = check_pointer(&mut c, "cuMemAllocManaged", inner, &wants);
    // The host pointer the attribute gives reads what the device wrote.
    c.ok(cu!(cuMemsetD8(m.ptr, 0x3C, m.size)));
    c.ok(cu!(cuCtxSynchronize()));
    let hp = value_of(&got, CU_POINTER_ATTRIBUTE_HOST_POINTER);
    if hp != u64::MAX {
        let v = unsafe { *(hp as *const u8) };
        c.eq("byte through HOST_POINTER", v, 0x3C);
    }
    c.finish()
}

fn pointer_attributes_host_pinned() -> TestResult {
    let gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    let dev = DeviceBuf::new(64 * KIB)?;
    let size = 64 * KIB;
    for (label, flags) in [
        (
            "cuMemHostAlloc(PORTABLE|DEVICEMAP)",
            Some(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
        ),
        (
            "cuMemHostAlloc(DEVICEMAP|WRITECOMBINED)",
            Some(CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED),
        ),
        ("cuMemAllocHost", None),
    ] {
        let mut p: *mut c_void = null_mut();
        match flags {
            Some(f) => cu!(cuMemHostAlloc(&mut p, size, f))?,
            None => cu!(cuMemAllocHost(&mut p, size))?,
        }
        let _free = Defer(move || unsafe {
            cuMemFreeHost(p);
        });
        let mut dp: CUdeviceptr = 0;
        cu!(cuMemHostGetDevicePointer(&mut dp, p, 0))?;
        let hp = p as u64;
        use Want::*;
        let wants = with_decompress(
            Is(0),
            [
                (CU_POINTER_ATTRIBUTE_CONTEXT, Is(gpu.ctx as u64)),
                (
                    CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                    Is(CU_MEMORYTYPE_HOST.0 as u64),
                ),
                (CU_POINTER_ATTRIBUTE_DEVICE_POINTER, Is(dp + 100)),
                (CU_POINTER_ATTRIBUTE_HOST_POINTER, Is(hp + 100)),
                (CU_POINTER_ATTRIBUTE_BUFFER_ID, NonZero),
                (CU_POINTER_ATTRIBUTE_IS_MANAGED, Is(0)),
                (CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, Is(0)),
                (CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, Is(0)),
                (CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, Is(hp)),
                (CU_POINTER_ATTRIBUTE_RANGE_SIZE, Is(size as u64)),
                (CU_POINTER_ATTRIBUTE_MAPPED, Is(1)),
                (CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, Is(0)),
                (CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, Is(0)),
            ],
        );
        let got = check_pointer(&mut c, label, hp + 100, &wants);
        // Through the device pointer the attribute gives, the device sees the host's bytes.
        let data = pattern(0x4057, size / 4);
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), p as *mut u32, size / 4) };
        let dev_ptr = value_of(&got, CU_POINTER_ATTRIBUTE_DEVICE_POINTER);
        if dev_ptr != u64::MAX {
            c.that(
                device_view(&dev, dev_ptr - 100, size / 4)? == data,
                format!("{label}: device view differs"),
            );
        }
    }
    c.finish()
}

fn pointer_attributes_vmm() -> TestResult {
    let gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    let prop = CUmemAllocationProp {
        type_: CU_MEM_ALLOCATION_TYPE_PINNED,
        location: dev_loc(0),
        requestedHandleTypes: CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
        ..Default::default()
    };
    let mut g = 0usize;
    cu!(cuMemGetAllocationGranularity(
        &mut g,
        &prop,
        CU_MEM_ALLOC_GRANULARITY_MINIMUM
    ))?;
    let rdma_vmm = gpu.attribute(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED)?;

    // A: exportable as a POSIX fd, GPUDirect RDMA capable (where supported);
    // B: no handle type, not RDMA capable.
    let mut prop_a = prop;
    prop_a.allocFlags.gpuDirectRDMACapable = (rdma_vmm != 0) as u8;
    let mut prop_b = prop;
    prop_b.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
    let (mut ha, mut hb) = (0, 0);
    cu!(cuMemCreate(&mut ha, g, &prop_a, 0))?;
    let _ra = Defer(move || unsafe {
        cuMemRelease(ha);
    });
    cu!(cuMemCreate(&mut hb, g, &prop_b, 0))?;
    let _rb = Defer(move || unsafe {
        cuMemRelease(hb);
    });
    // Reserve 3 granules: A at 0, B at 1, the third stays unmapped.
    let mut va: CUdeviceptr = 0;
    cu!(cuMemAddressReserve(&mut va, 3 * g, 0, 0, 0))?;
    let _fa = Defer(move || unsafe {
        cuMemAddressFree(va, 3 * g);
    });
    cu!(cuMemMap(va, g, 0, ha, 0))?;
    let _ua = Defer(move || unsafe {
        cuMemUnmap(va, g);
    });
    cu!(cuMemMap(va + g as u64, g, 0, hb, 0))?;
    let _ub = Defer(move || unsafe {
        cuMemUnmap(va + g as u64, g);
    });
    let rw = CUmemAccessDesc {
        location: dev_loc(0),
        flags: CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    let ro = CUmemAccessDesc {
        location: dev_loc(0),
        flags: CU_MEM_ACCESS_FLAGS_PROT_READ,
    };
    cu!(cuMemSetAccess(va, 2 * g, &rw, 1))?;
    // Bytes into both, then B becomes read-only.
    let da = pattern(0x7A, g / 4);
    let db = pattern(0x7B, g / 4);
    cu!(cuMemcpyHtoD(va, da.as_ptr().cast(), g))?;
    cu!(cuMemcpyHtoD(va + g as u64, db.as_ptr().cast(), g))?;
    cu!(cuMemSetAccess(va + g as u64, g, &ro, 1))?;

    use Want::*;
    let common_wants = |base: u64| {
        with_decompress(
            Is(0),
            vec![
                // VMM memory belongs to no context: NULL (measured).
                (CU_POINTER_ATTRIBUTE_CONTEXT, Is(0)),
                (
                    CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                    Is(CU_MEMORYTYPE_DEVICE.0 as u64),
                ),
                (CU_POINTER_ATTRIBUTE_DEVICE_POINTER, Is(base + 4096)),
                (
                    CU_POINTER_ATTRIBUTE_HOST_POINTER,
                    Fails(CUDA_ERROR_INVALID_VALUE),
                ),
                (CU_POINTER_ATTRIBUTE_BUFFER_ID, NonZero),
                (CU_POINTER_ATTRIBUTE_IS_MANAGED, Is(0)),
                (CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, Is(0)),
                (CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, Is(0)),
                // The reservation, not the mapping.
                (CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, Is(va)),
                (CU_POINTER_ATTRIBUTE_RANGE_SIZE, Is(3 * g as u64)),
                (CU_POINTER_ATTRIBUTE_MAPPED, Is(1)),
                (CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, Is(0)),
                // The mapping the pointer belongs to.
                (CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, Is(base)),
                (CU_POINTER_ATTRIBUTE_MAPPING_SIZE, Is(g as u64)),
                (CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, NonZero),
            ],
        )
    };
    let mut wa = common_wants(va);
    wa.push((
        CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES,
        Is(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR.0 as u64),
    ));
    wa.push((
        CU_POINTER_ATTRIBUTE_ACCESS_FLAGS,
        Is(CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE.0 as u64),
    ));
    wa.push((
        CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE,
        Is((rdma_vmm != 0) as u64),
    ));
    let got_a = check_pointer(&mut c, "VMM A (POSIX fd, RDMA, read-write)", va + 4096, &wa);
    let vb = va + g as u64;
    let mut wb = common_wants(vb);
    wb.push((CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, Is(0)));
    wb.push((
        CU_POINTER_ATTRIBUTE_ACCESS_FLAGS,
        Is(CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ.0 as u64),
    ));
    wb.push((CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, Is(0)));
    let got_b = check_pointer(&mut c, "VMM B (no handle, read-only)", vb + 4096, &wb);
    c.that(
        value_of(&got_a, CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID)
            != value_of(&got_b, CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID),
        "A and B share a MEMORY_BLOCK_ID",
    );
    // The reserved but unmapped third granule is not mapped.
    let unmapped = ptr_attr(CU_POINTER_ATTRIBUTE_MAPPED, va + 2 * g as u64 + 4096);
    println!("unmapped granule: MAPPED -> {unmapped:?}");
    match unmapped {
        Ok((v, _)) => c.eq("unmapped granule: MAPPED", v, 0),
        Err(e) => c.eq(
            "unmapped granule: MAPPED error",
            common::error_name(e),
            common::error_name(CUDA_ERROR_INVALID_VALUE),
        ),
    }
    // Both mappings still read back their bytes (B through its read-only mapping).
    let dev = DeviceBuf::new(g)?;
    c.that(device_view(&dev, va, g / 4)? == da, "VMM A bytes differ");
    c.that(device_view(&dev, vb, g / 4)? == db, "VMM B bytes differ");

    // (12.8 and later; the skip is printed.)
    #[cfg(cuda_12080)]
    {
        // Usage CU_MEM_CREATE_USAGE_HW_DECOMPRESS: the allocation is then
        // decompress capable, where the device can create it at all.
        let mut prop_c = prop_b;
        prop_c.allocFlags.usage = CU_MEM_CREATE_USAGE_HW_DECOMPRESS as u16;
        let mut hc = 0;
        let r = unsafe { cuMemCreate(&mut hc, g, &prop_c, 0) };
        println!(
            "cuMemCreate(usage HW_DECOMPRESS): {}",
            common::error_name(r)
        );
        if r == CUDA_SUCCESS {
            let _rc = Defer(move || unsafe {
                cuMemRelease(hc);
            });
            let mut vc: CUdeviceptr = 0;
            cu!(cuMemAddressReserve(&mut vc, g, 0, 0, 0))?;
            let _fc = Defer(move || unsafe {
                cuMemAddressFree(vc, g);
            });
            cu!(cuMemMap(vc, g, 0, hc, 0))?;
            let _uc = Defer(move || unsafe {
                cuMemUnmap(vc, g);
            });
            cu!(cuMemSetAccess(vc, g, &rw, 1))?;
            check_pointer(
                &mut c,
                "VMM C (usage HW_DECOMPRESS)",
                vc,
                &[(CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE, Is(1))],
            );
        }
    }
    #[cfg(not(cuda_12080))]
    println!("VMM C: CU_MEM_CREATE_USAGE_HW_DECOMPRESS: not in this release (added in 12.8)");
    c.finish()
}

fn pointer_attributes_pool() -> TestResult {
    let gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    let stream = CuStream::new()?;
    let mut default_pool: CUmemoryPool = null_mut();
    cu!(cuDeviceGetDefaultMemPool(&mut default_pool, gpu.dev))?;
    let props = CUmemPoolProps {
        allocType: CU_MEM_ALLOCATION_TYPE_PINNED,
        handleTypes: CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
        location: dev_loc(0),
        ..Default::default()
    };
    let mut pool: CUmemoryPool = null_mut();
    cu!(cuMemPoolCreate(&mut pool, &props))?;
    let _destroy = Defer(move || unsafe {
        cuMemPoolDestroy(pool);
    });
    let size = MIB;
    let (mut a, mut b) = (0, 0);
    cu!(cuMemAllocAsync(&mut a, size, stream.0))?;
    cu!(cuMemAllocFromPoolAsync(&mut b, size, pool, stream.0))?;
    let s = stream.0;
    let _free = Defer(move || unsafe {
        cuMemFreeAsync(a, s);
        cuMemFreeAsync(b, s);
        cuStreamSynchronize(s);
    });
    stream.sync()?;
    use Want::*;
    for (label, ptr, pool_h, handles) in [
        ("cuMemAllocAsync (default pool)", a, default_pool, 0u64),
        (
            "cuMemAllocFromPoolAsync (POSIX-fd pool)",
            b,
            pool,
            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR.0 as u64,
        ),
    ] {
        let wants = with_decompress(
            Is(0),
            [
                (
                    CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                    Is(CU_MEMORYTYPE_DEVICE.0 as u64),
                ),
                // Stream-ordered allocations belong to no context: NULL (measured).
                (CU_POINTER_ATTRIBUTE_CONTEXT, Is(0)),
                // The allocation itself, not the pool's larger mapping.
                (CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, Is(ptr)),
                (CU_POINTER_ATTRIBUTE_RANGE_SIZE, Is(size as u64)),
                (CU_POINTER_ATTRIBUTE_DEVICE_POINTER, Is(ptr + 256)),
                (
                    CU_POINTER_ATTRIBUTE_HOST_POINTER,
                    Fails(CUDA_ERROR_INVALID_VALUE),
                ),
                (CU_POINTER_ATTRIBUTE_BUFFER_ID, NonZero),
                (CU_POINTER_ATTRIBUTE_IS_MANAGED, Is(0)),
                (CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, Is(0)),
                (CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, Is(0)),
                (CU_POINTER_ATTRIBUTE_MAPPED, Is(1)),
                (CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, Is(handles)),
                (
                    CU_POINTER_ATTRIBUTE_ACCESS_FLAGS,
                    Is(CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE.0 as u64),
                ),
                (CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, Is(pool_h as u64)),
            ],
        );
        let got = check_pointer(&mut c, label, ptr + 256, &wants);
        let start = value_of(&got, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR);
        let len = value_of(&got, CU_POINTER_ATTRIBUTE_RANGE_SIZE);
        c.that(
            start <= ptr && ptr + size as u64 <= start.saturating_add(len),
            format!("{label}: range {start:#x}+{len:#x} does not hold the allocation {ptr:#x}+{size:#x}"),
        );
        let data = pattern(ptr as u32, 1024);
        let mut back = vec![0u32; 1024];
        c.ok(cu!(cuMemcpyHtoD(ptr, data.as_ptr().cast(), 4096)));
        c.ok(cu!(cuMemcpyDtoH(back.as_mut_ptr().cast(), ptr, 4096)));
        c.that(back == data, format!("{label}: bytes differ"));
    }
    c.finish()
}

fn sync_memops(ptr: CUdeviceptr) -> Result<u64, Failed> {
    ptr_attr(CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, ptr)
        .map(|(v, _)| v)
        .map_err(|e| format!("SYNC_MEMOPS: {}", common::error_name(e)).into())
}

fn pointer_set_attribute_sync_memops() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    let d = DeviceBuf::new(MIB)?;
    let m = Managed::new(MIB)?;
    let mut hp: *mut c_void = null_mut();
    cu!(cuMemAllocHost(&mut hp, 64 * KIB))?;
    let _free = Defer(move || unsafe {
        cuMemFreeHost(hp);
    });
    for (label, base) in [
        ("cuMemAlloc", d.ptr),
        ("cuMemAllocManaged", m.ptr),
        ("cuMemAllocHost", hp as u64),
    ] {
        let before = sync_memops(base + 64)?;
        println!("{label}: SYNC_MEMOPS initially {before}");
        for v in [1u32, 0, 1] {
            c.ok(cu!(cuPointerSetAttribute(
                (&v as *const u32).cast(),
                CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                base + 64
            )));
            // Set through an inner pointer, read through the base: the region's attribute.
            c.eq(
                format!("{label}: SYNC_MEMOPS after setting {v}"),
                sync_memops(base)?,
                v as u64,
            );
            let mut attrs = [CU_POINTER_ATTRIBUTE_SYNC_MEMOPS];
            let mut slot = SENT_A;
            let mut data = [(&mut slot as *mut u64).cast::<c_void>()];
            c.ok(cu!(cuPointerGetAttributes(
                1,
                attrs.as_mut_ptr(),
                data.as_mut_ptr(),
                base
            )));
            c.eq(
                format!("{label}: cuPointerGetAttributes SYNC_MEMOPS after setting {v}"),
                low(slot, 4),
                v as u64,
            );
        }
    }
    // Querying P2P tokens sets SYNC_MEMOPS on the region (documented side effect).
    let e = DeviceBuf::new(MIB)?;
    let zero = 0u32;
    c.ok(cu!(cuPointerSetAttribute(
        (&zero as *const u32).cast(),
        CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
        e.ptr
    )));
    let mut tokens: CUDA_POINTER_ATTRIBUTE_P2P_TOKENS = unsafe { core::mem::zeroed() };
    let r = unsafe {
        cuPointerGetAttribute(
            (&mut tokens as *mut CUDA_POINTER_ATTRIBUTE_P2P_TOKENS).cast(),
            CU_POINTER_ATTRIBUTE_P2P_TOKENS,
            e.ptr,
        )
    };
    println!(
        "P2P_TOKENS: {} p2pToken {:#x} vaSpaceToken {:#x}",
        common::error_name(r),
        tokens.p2pToken,
        tokens.vaSpaceToken
    );
    if r == CUDA_SUCCESS {
        c.eq(
            "SYNC_MEMOPS after querying P2P_TOKENS",
            sync_memops(e.ptr)?,
            1,
        );
    } else {
        c.that(
            false,
            format!("P2P_TOKENS on cuMemAlloc memory: {}", common::error_name(r)),
        );
    }
    c.finish()
}

// ---------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------

#[cfg(cuda_12020)]
fn bad_input_advise_and_range_attributes() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let probe = DeviceBuf::new(256)?;
    let mut c = BadInput::round_trip(probe.ptr, 256);
    let m = Managed::new(2 * MIB)?;
    let d = DeviceBuf::new(MIB)?;
    let stack = [0u8; 4096];
    let stack_ptr = stack.as_ptr() as CUdeviceptr;
    let heap = vec![0u8; 64 * KIB];
    let heap_ptr = heap.as_ptr() as CUdeviceptr;
    // A device that does not exist is CUDA_ERROR_INVALID_VALUE here (measured;
    // the docs list it besides CUDA_ERROR_INVALID_DEVICE).
    let inval = CUDA_ERROR_INVALID_VALUE;
    let (p, n) = (m.ptr, m.size);

    let adv = |ptr, len, a: u32, l| unsafe { mem_advise(ptr, len, CUmem_advise_enum(a), l) };
    // A device ordinal past the last device. The location form (13.0 on)
    // answers CUDA_ERROR_INVALID_VALUE; the CUdevice form, which 12.2..12.9
    // use for a device, answers CUDA_ERROR_INVALID_DEVICE, another of
    // cuMemAdvise's documented codes (measured, H100, driver 580.159: run 20
    // in docs/device-results.md).
    #[cfg(cuda_13000)]
    let no_such_device = inval;
    #[cfg(not(cuda_13000))]
    let no_such_device = CUDA_ERROR_INVALID_DEVICE;
    c.cu(inval, adv(p, n, 0, dev_loc(0)), "cuMemAdvise(advice 0)");
    c.cu(inval, adv(p, n, 7, dev_loc(0)), "cuMemAdvise(advice 7)");
    c.cu(
        inval,
        adv(p, n, 0x7FFF_FFFF, dev_loc(0)),
        "cuMemAdvise(advice 0x7fffffff)",
    );
    c.cu(inval, adv(p, 0, 1, dev_loc(0)), "cuMemAdvise(count 0)");
    c.cu(inval, adv(0, n, 1, dev_loc(0)), "cuMemAdvise(null pointer)");
    c.cu(
        inval,
        adv(d.ptr, MIB, 1, dev_loc(0)),
        "cuMemAdvise(cuMemAlloc memory)",
    );
    c.cu(
        inval,
        adv(stack_ptr, 4096, 3, dev_loc(0)),
        "cuMemAdvise(stack memory)",
    );
    c.cu(
        inval,
        adv(p, n + 4 * MIB, 1, dev_loc(0)),
        "cuMemAdvise(range past the allocation)",
    );
    c.cu(
        no_such_device,
        adv(p, n, 3, dev_loc(64)),
        "cuMemAdvise(PREFERRED, device 64)",
    );
    c.cu(
        inval,
        adv(p, n, 3, dev_loc(-5)),
        "cuMemAdvise(PREFERRED, device -5)",
    );
    c.cu(
        no_such_device,
        adv(p, n, 5, dev_loc(64)),
        "cuMemAdvise(ACCESSED_BY, device 64)",
    );
    c.cu(
        inval,
        adv(p, n, 3, loc(CUmemLocationType_enum(99), 0)),
        "cuMemAdvise(PREFERRED, location type 99)",
    );
    c.cu(
        inval,
        adv(p, n, 3, loc(CU_MEM_LOCATION_TYPE_INVALID, 0)),
        "cuMemAdvise(PREFERRED, location type INVALID)",
    );
    c.cu(
        inval,
        adv(p, n, 3, loc(CU_MEM_LOCATION_TYPE_HOST_NUMA, 100_000)),
        "cuMemAdvise(PREFERRED, host NUMA 100000)",
    );
    // None of the failed calls left any advice behind.
    let s = range_state(&mut c, "after bad advice", p, n)?;
    c.eq("after bad advice: READ_MOSTLY", s.read_mostly, 0);
    want_no_preferred(&mut c, "after bad advice", &s);
    want_accessed_by(&mut c, "after bad advice", &s, &[]);

    // cuMemRangeGetAttribute
    let mut v = [SENT_I32; 4];
    let vp: *mut c_void = v.as_mut_ptr().cast();
    let get = |data, size, a: u32, ptr, len| unsafe {
        cuMemRangeGetAttribute(data, size, CUmem_range_attribute_enum(a), ptr, len)
    };
    let rm = CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY.0;
    let by = CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY.0;
    let pt = CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE.0;
    c.cu(
        inval,
        get(vp, 8, rm, p, n),
        "cuMemRangeGetAttribute(READ_MOSTLY, dataSize 8)",
    );
    c.cu(
        inval,
        get(vp, 2, rm, p, n),
        "cuMemRangeGetAttribute(READ_MOSTLY, dataSize 2)",
    );
    c.cu(
        inval,
        get(vp, 0, rm, p, n),
        "cuMemRangeGetAttribute(dataSize 0)",
    );
    c.cu(
        inval,
        get(vp, 6, by, p, n),
        "cuMemRangeGetAttribute(ACCESSED_BY, dataSize 6)",
    );
    c.cu(
        inval,
        get(vp, 8, pt, p, n),
        "cuMemRangeGetAttribute(PREFERRED_LOCATION_TYPE, dataSize 8)",
    );
    c.cu(
        inval,
        get(vp, 4, 0, p, n),
        "cuMemRangeGetAttribute(attribute 0)",
    );
    c.cu(
        inval,
        get(vp, 4, 99, p, n),
        "cuMemRangeGetAttribute(attribute 99)",
    );
    c.cu(
        inval,
        get(null_mut(), 4, rm, p, n),
        "cuMemRangeGetAttribute(null data)",
    );
    c.cu(
        inval,
        get(vp, 4, rm, p, 0),
        "cuMemRangeGetAttribute(count 0)",
    );
    c.cu(
        inval,
        get(vp, 4, rm, 0, n),
        "cuMemRangeGetAttribute(null pointer)",
    );
    c.cu(
        inval,
        get(vp, 4, rm, d.ptr, MIB),
        "cuMemRangeGetAttribute(cuMemAlloc memory)",
    );
    c.cu(
        inval,
        get(vp, 4, rm, heap_ptr, 4096),
        "cuMemRangeGetAttribute(heap memory)",
    );
    c.cu(
        inval,
        get(vp, 4, rm, p, n + 4 * MIB),
        "cuMemRangeGetAttribute(range past the allocation)",
    );
    c.eq(
        "range attribute output after failed calls",
        v,
        [SENT_I32; 4],
    );

    // cuMemRangeGetAttributes
    let (mut a, mut b2) = (SENT_I32, SENT_I32);
    let mut data: [*mut c_void; 2] = [(&mut a as *mut i32).cast(), (&mut b2 as *mut i32).cast()];
    let mut attrs = [
        CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
        CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION,
    ];
    let mut good_sizes = [4usize, 4];
    let mut bad_sizes = [4usize, 8];
    let mut bad_attrs = [
        CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
        CUmem_range_attribute_enum(99),
    ];
    let dp = data.as_mut_ptr();
    let gs = good_sizes.as_mut_ptr();
    c.cu(
        inval,
        unsafe { cuMemRangeGetAttributes(dp, bad_sizes.as_mut_ptr(), attrs.as_mut_ptr(), 2, p, n) },
        "cuMemRangeGetAttributes(one dataSize wrong)",
    );
    c.cu(
        inval,
        unsafe { cuMemRangeGetAttributes(dp, gs, bad_attrs.as_mut_ptr(), 2, p, n) },
        "cuMemRangeGetAttributes(one attribute 99)",
    );
    c.cu(
        inval,
        unsafe { cuMemRangeGetAttributes(null_mut(), gs, attrs.as_mut_ptr(), 2, p, n) },
        "cuMemRangeGetAttributes(null data)",
    );
    c.cu(
        inval,
        unsafe { cuMemRangeGetAttributes(dp, null_mut(), attrs.as_mut_ptr(), 2, p, n) },
        "cuMemRangeGetAttributes(null dataSizes)",
    );
    c.cu(
        inval,
        unsafe { cuMemRangeGetAttributes(dp, gs, null_mut(), 2, p, n) },
        "cuMemRangeGetAttributes(null attributes)",
    );
    c.cu(
        inval,
        unsafe { cuMemRangeGetAttributes(dp, gs, attrs.as_mut_ptr(), 0, p, n) },
        "cuMemRangeGetAttributes(numAttributes 0)",
    );
    c.cu(
        inval,
        unsafe { cuMemRangeGetAttributes(dp, gs, attrs.as_mut_ptr(), 2, d.ptr, MIB) },
        "cuMemRangeGetAttributes(cuMemAlloc memory)",
    );
    // And the good call still answers.
    c.ok(cu!(cuMemRangeGetAttributes(
        dp,
        gs,
        attrs.as_mut_ptr(),
        2,
        p,
        n
    )));
    c.eq(
        "good cuMemRangeGetAttributes after bad ones",
        (a, b2),
        (0, CU_DEVICE_INVALID),
    );
    drop(heap);
    c.finish()
}

#[cfg(cuda_12020)]
fn bad_input_prefetch_and_batches() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let probe = DeviceBuf::new(256)?;
    let mut c = BadInput::round_trip(probe.ptr, 256);
    let m = Managed::new(2 * MIB)?;
    let d = DeviceBuf::new(MIB)?;
    let stream = CuStream::new()?;
    let s = stream.0;
    let stack = [0u8; 4096];
    let stack_ptr = stack.as_ptr() as CUdeviceptr;
    // A device that does not exist: cuMemPrefetchAsync answers
    // CUDA_ERROR_INVALID_DEVICE, cuMemPrefetchBatchAsync CUDA_ERROR_INVALID_VALUE
    // (both documented codes of these calls; measured).
    //
    // Not tested: prefetchLocIdxs that do not increase ({0, 0}), which the
    // docs forbid, are accepted by driver 580.159 (CUDA_SUCCESS, and the
    // prefetch happens).
    let inval = CUDA_ERROR_INVALID_VALUE;
    let (p, n) = (m.ptr, m.size);

    let pf = |ptr, len, l, flags| unsafe { mem_prefetch(ptr, len, l, flags, s) };
    c.cu(
        inval,
        pf(d.ptr, MIB, dev_loc(0), 0),
        "cuMemPrefetchAsync(cuMemAlloc memory)",
    );
    c.cu(
        inval,
        pf(stack_ptr, 4096, dev_loc(0), 0),
        "cuMemPrefetchAsync(stack memory)",
    );
    c.cu(
        inval,
        pf(0, n, dev_loc(0), 0),
        "cuMemPrefetchAsync(null pointer)",
    );
    c.cu(
        inval,
        pf(p, 0, dev_loc(0), 0),
        "cuMemPrefetchAsync(count 0)",
    );
    c.cu(
        inval,
        pf(p, n, dev_loc(0), 1),
        "cuMemPrefetchAsync(flags 1)",
    );
    c.cu(
        inval,
        pf(p, n + 4 * MIB, dev_loc(0), 0),
        "cuMemPrefetchAsync(range past the allocation)",
    );
    c.cu(
        CUDA_ERROR_INVALID_DEVICE,
        pf(p, n, dev_loc(64), 0),
        "cuMemPrefetchAsync(device 64)",
    );
    c.cu(
        inval,
        pf(p, n, loc(CU_MEM_LOCATION_TYPE_INVALID, 0), 0),
        "cuMemPrefetchAsync(location type INVALID)",
    );
    c.cu(
        inval,
        pf(p, n, loc(CUmemLocationType_enum(99), 0), 0),
        "cuMemPrefetchAsync(location type 99)",
    );
    c.ok(stream.sync());
    let st = range_state(&mut c, "after bad prefetches", p, n)?;
    want_no_prefetch(&mut c, "after bad prefetches (nothing recorded)", &st);

    // Batches (13.0 and later; the skip is printed).
    #[cfg(cuda_13000)]
    {
        // Batches: two ranges (the two halves).
        let half = n / 2;
        let mut dptrs = [p, p + half as u64];
        let mut sizes = [half, half];
        let mut locs = [dev_loc(0), host_loc()];
        let (dpp, szp, lp) = (dptrs.as_mut_ptr(), sizes.as_mut_ptr(), locs.as_mut_ptr());
        let batch = |idx: &mut [usize], count, nlocs, flags, stream| unsafe {
            cuMemPrefetchBatchAsync(dpp, szp, count, lp, idx.as_mut_ptr(), nlocs, flags, stream)
        };
        c.cu(
            inval,
            batch(&mut [0, 1], 2, 2, 0, null_mut()),
            "cuMemPrefetchBatchAsync(legacy NULL stream)",
        );
        c.cu(
            inval,
            batch(&mut [0, 1], 2, 2, 0, cu_stream_legacy()),
            "cuMemPrefetchBatchAsync(CU_STREAM_LEGACY)",
        );
        c.cu(
            inval,
            batch(&mut [0, 1], 2, 2, 1, s),
            "cuMemPrefetchBatchAsync(flags 1)",
        );
        c.cu(
            inval,
            batch(&mut [0, 1], 0, 2, 0, s),
            "cuMemPrefetchBatchAsync(count 0)",
        );
        c.cu(
            inval,
            batch(&mut [0, 1], 2, 0, 0, s),
            "cuMemPrefetchBatchAsync(numPrefetchLocs 0)",
        );
        c.cu(
            inval,
            batch(&mut [0, 1, 1], 2, 3, 0, s),
            "cuMemPrefetchBatchAsync(numPrefetchLocs > count)",
        );
        c.cu(
            inval,
            batch(&mut [1, 1], 2, 2, 0, s),
            "cuMemPrefetchBatchAsync(prefetchLocIdxs[0] = 1)",
        );
        c.cu(
            inval,
            batch(&mut [0, 2], 2, 2, 0, s),
            "cuMemPrefetchBatchAsync(prefetchLocIdxs[1] = count)",
        );
        let mut idx = [0usize];
        c.cu(
            inval,
            unsafe { cuMemPrefetchBatchAsync(null_mut(), szp, 2, lp, idx.as_mut_ptr(), 1, 0, s) },
            "cuMemPrefetchBatchAsync(null dptrs)",
        );
        c.cu(
            inval,
            unsafe { cuMemPrefetchBatchAsync(dpp, szp, 2, null_mut(), idx.as_mut_ptr(), 1, 0, s) },
            "cuMemPrefetchBatchAsync(null prefetchLocs)",
        );
        let mut with_device_mem = [p, d.ptr];
        c.cu(
            inval,
            unsafe {
                cuMemPrefetchBatchAsync(
                    with_device_mem.as_mut_ptr(),
                    szp,
                    2,
                    lp,
                    idx.as_mut_ptr(),
                    1,
                    0,
                    s,
                )
            },
            "cuMemPrefetchBatchAsync(cuMemAlloc memory in the batch)",
        );
        let mut zero_size = [half, 0];
        c.cu(
            inval,
            unsafe {
                cuMemPrefetchBatchAsync(
                    dpp,
                    zero_size.as_mut_ptr(),
                    2,
                    lp,
                    idx.as_mut_ptr(),
                    1,
                    0,
                    s,
                )
            },
            "cuMemPrefetchBatchAsync(a size 0)",
        );
        let mut bad_loc = [dev_loc(64)];
        c.cu(
            inval,
            unsafe {
                cuMemPrefetchBatchAsync(
                    dpp,
                    szp,
                    2,
                    bad_loc.as_mut_ptr(),
                    idx.as_mut_ptr(),
                    1,
                    0,
                    s,
                )
            },
            "cuMemPrefetchBatchAsync(device 64)",
        );
        let dab = |idx: &mut [usize], count, nlocs, flags, stream| unsafe {
            cuMemDiscardAndPrefetchBatchAsync(
                dpp,
                szp,
                count,
                lp,
                idx.as_mut_ptr(),
                nlocs,
                flags,
                stream,
            )
        };
        c.cu(
            inval,
            dab(&mut [0, 1], 2, 2, 0, null_mut()),
            "cuMemDiscardAndPrefetchBatchAsync(NULL stream)",
        );
        c.cu(
            inval,
            dab(&mut [0, 1], 2, 2, 1, s),
            "cuMemDiscardAndPrefetchBatchAsync(flags 1)",
        );
        c.cu(
            inval,
            dab(&mut [1, 1], 2, 2, 0, s),
            "cuMemDiscardAndPrefetchBatchAsync(idxs[0] = 1)",
        );
        c.cu(
            inval,
            dab(&mut [0, 1, 1], 2, 3, 0, s),
            "cuMemDiscardAndPrefetchBatchAsync(numPrefetchLocs > count)",
        );
        let discard = |count, flags, stream| unsafe {
            cuMemDiscardBatchAsync(dpp, szp, count, flags, stream)
        };
        c.cu(
            inval,
            discard(2, 0, null_mut()),
            "cuMemDiscardBatchAsync(legacy NULL stream)",
        );
        c.cu(inval, discard(2, 1, s), "cuMemDiscardBatchAsync(flags 1)");
        c.cu(inval, discard(0, 0, s), "cuMemDiscardBatchAsync(count 0)");
        c.cu(
            inval,
            unsafe { cuMemDiscardBatchAsync(with_device_mem.as_mut_ptr(), szp, 2, 0, s) },
            "cuMemDiscardBatchAsync(cuMemAlloc memory in the batch)",
        );
        c.cu(
            inval,
            unsafe { cuMemDiscardBatchAsync(null_mut(), szp, 2, 0, s) },
            "cuMemDiscardBatchAsync(null dptrs)",
        );
        c.ok(stream.sync());
        // No rejected batch got as far as the second half: nothing is recorded
        // for it.
        let st = range_state(&mut c, "after bad batches: second half", dptrs[1], half)?;
        want_no_prefetch(
            &mut c,
            "after bad batches: second half (nothing recorded)",
            &st,
        );
        // Not asserted: a batch rejected because of a later range (a size 0, a
        // cuMemAlloc pointer) may already have prefetched the earlier ranges; on
        // driver 580.159 the first half reads back as prefetched to device 0
        // (the docs say nothing about partial batches).
        let st = range_state(&mut c, "after bad batches: first half", dptrs[0], half)?;
        println!(
            "after bad batches, first half: LAST_PREFETCH_LOCATION_TYPE {} id {}",
            st.last_prefetch_type.0, st.last_prefetch_id
        );
        // And a good batch still works.
        let mut idx = [0usize, 1];
        c.ok(cu!(cuMemPrefetchBatchAsync(
            dpp,
            szp,
            2,
            lp,
            idx.as_mut_ptr(),
            2,
            0,
            s
        )));
        c.ok(stream.sync());
        let st = range_state(
            &mut c,
            "good batch after bad ones: second half",
            dptrs[1],
            half,
        )?;
        want_last_prefetch(
            &mut c,
            "good batch after bad ones: second half",
            &st,
            CU_DEVICE_CPU,
            CU_MEM_LOCATION_TYPE_HOST,
            0,
        );
    }
    #[cfg(not(cuda_13000))]
    println!("bad batches: skipped: {BATCH_NOT_IN_RELEASE}");
    c.finish()
}

fn bad_input_pointer_attributes() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let probe = DeviceBuf::new(256)?;
    let mut c = BadInput::round_trip(probe.ptr, 256);
    let d = DeviceBuf::new(MIB)?;
    let stack = [0u8; 4096];
    let stack_ptr = stack.as_ptr() as CUdeviceptr;
    let heap = vec![0u8; 64 * KIB];
    let heap_ptr = heap.as_ptr() as CUdeviceptr;
    let inval = CUDA_ERROR_INVALID_VALUE;
    let mut out = SENT_A;
    let op: *mut c_void = (&mut out as *mut u64).cast();
    let get = |data, a: CUpointer_attribute, ptr| unsafe { cuPointerGetAttribute(data, a, ptr) };
    let mt = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;

    for (name, ptr) in [("stack", stack_ptr), ("heap", heap_ptr), ("null", 0)] {
        for a in [
            mt,
            CU_POINTER_ATTRIBUTE_CONTEXT,
            CU_POINTER_ATTRIBUTE_IS_MANAGED,
            CU_POINTER_ATTRIBUTE_BUFFER_ID,
        ] {
            c.cu(
                inval,
                get(op, a, ptr),
                &format!("cuPointerGetAttribute({}, {name} pointer)", attr_name(a)),
            );
        }
    }
    c.cu(
        inval,
        get(null_mut(), mt, d.ptr),
        "cuPointerGetAttribute(null data)",
    );
    c.cu(
        inval,
        get(op, CUpointer_attribute_enum(0), d.ptr),
        "cuPointerGetAttribute(attribute 0)",
    );
    c.cu(
        inval,
        get(op, CUpointer_attribute_enum(99), d.ptr),
        "cuPointerGetAttribute(attribute 99)",
    );
    c.cu(
        inval,
        get(op, mt, d.ptr + MIB as u64 + 4096),
        "cuPointerGetAttribute(past the allocation)",
    );
    let freed = DeviceBuf::new(MIB)?;
    let freed_ptr = freed.ptr;
    drop(freed);
    c.cu(
        inval,
        get(op, mt, freed_ptr),
        "cuPointerGetAttribute(freed allocation)",
    );
    c.eq(
        "output after failed cuPointerGetAttribute calls",
        out,
        SENT_A,
    );

    // cuPointerGetAttributes: a pointer CUDA does not know is no error; the
    // attributes read as their defaults: NULL/0, DEVICE_ORDINAL
    // CU_DEVICE_INVALID, and HOST_POINTER the pointer itself (the host
    // reaches its own memory there; measured).
    match ptr_attrs_multi(stack_ptr) {
        Ok(vals) => {
            let line: Vec<String> = multi_attrs()
                .iter()
                .zip(&vals)
                .map(|(a, (v, _))| format!("{}={v:#x}", attr_name(*a)))
                .collect();
            println!("cuPointerGetAttributes(stack pointer): {}", line.join(" "));
            for (a, (v, _)) in multi_attrs().iter().zip(&vals) {
                let want = if *a == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL {
                    CU_DEVICE_INVALID as u32 as u64
                } else if *a == CU_POINTER_ATTRIBUTE_HOST_POINTER {
                    stack_ptr
                } else {
                    0
                };
                c.eq(
                    format!("cuPointerGetAttributes(stack pointer): {}", attr_name(*a)),
                    *v,
                    want,
                );
            }
        }
        Err(e) => c.that(
            false,
            format!(
                "cuPointerGetAttributes(stack pointer) returned {}",
                common::error_name(e)
            ),
        ),
    }
    c.still_works_after("cuPointerGetAttributes(stack pointer)");
    let mut attrs = [mt, CU_POINTER_ATTRIBUTE_IS_MANAGED];
    let mut bad_attrs = [mt, CUpointer_attribute_enum(99)];
    let (mut x, mut y) = (SENT_A, SENT_A);
    let mut data: [*mut c_void; 2] = [(&mut x as *mut u64).cast(), (&mut y as *mut u64).cast()];
    let dp = data.as_mut_ptr();
    c.cu(
        inval,
        unsafe { cuPointerGetAttributes(2, null_mut(), dp, d.ptr) },
        "cuPointerGetAttributes(null attributes)",
    );
    c.cu(
        inval,
        unsafe { cuPointerGetAttributes(2, attrs.as_mut_ptr(), null_mut(), d.ptr) },
        "cuPointerGetAttributes(null data)",
    );
    c.cu(
        inval,
        unsafe { cuPointerGetAttributes(0, attrs.as_mut_ptr(), dp, d.ptr) },
        "cuPointerGetAttributes(numAttributes 0)",
    );
    c.cu(
        inval,
        unsafe { cuPointerGetAttributes(2, bad_attrs.as_mut_ptr(), dp, d.ptr) },
        "cuPointerGetAttributes(attribute 99)",
    );
    c.ok(cu!(cuPointerGetAttributes(
        2,
        attrs.as_mut_ptr(),
        dp,
        d.ptr
    )));
    c.eq(
        "good cuPointerGetAttributes after bad ones",
        (low(x, 4), low(y, 4)),
        (CU_MEMORYTYPE_DEVICE.0 as u64, 0),
    );

    // cuPointerSetAttribute: only SYNC_MEMOPS can be set.
    let one = 1u32;
    let vp: *const c_void = (&one as *const u32).cast();
    let set = |v, a, ptr| unsafe { cuPointerSetAttribute(v, a, ptr) };
    let sm = CU_POINTER_ATTRIBUTE_SYNC_MEMOPS;
    c.cu(
        inval,
        set(vp, CU_POINTER_ATTRIBUTE_IS_MANAGED, d.ptr),
        "cuPointerSetAttribute(IS_MANAGED)",
    );
    c.cu(
        inval,
        set(vp, mt, d.ptr),
        "cuPointerSetAttribute(MEMORY_TYPE)",
    );
    c.cu(
        inval,
        set(vp, CUpointer_attribute_enum(99), d.ptr),
        "cuPointerSetAttribute(attribute 99)",
    );
    c.cu(
        inval,
        set(vp, sm, stack_ptr),
        "cuPointerSetAttribute(SYNC_MEMOPS, stack pointer)",
    );
    c.cu(
        inval,
        set(vp, sm, 0),
        "cuPointerSetAttribute(SYNC_MEMOPS, null pointer)",
    );
    c.cu(
        inval,
        set(null(), sm, d.ptr),
        "cuPointerSetAttribute(null value)",
    );
    c.eq("SYNC_MEMOPS after failed sets", sync_memops(d.ptr)?, 0);
    drop(heap);
    c.finish()
}

/// Runs a bad-input test body in a child process of this binary, so that a
/// driver that crashed on bad input would fail that test alone.
fn in_child(role: &str) -> TestResult {
    common::wait_child(common::spawn_child(role, &[]), role)
}

/// The child side: the driver is initialized here (the harness probed it in
/// the parent only), then the body runs.
fn child(body: fn() -> TestResult) -> TestResult {
    cu!(cuInit(0))?;
    body()
}

fn main() {
    let mut tests = device_tests![
        advise_read_mostly if cfg(cuda_12020) else "`CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE` (and the other location-typed range attributes, `CU_MEM_LOCATION_TYPE_HOST*`): not in this release (added in 12.2)",
        advise_preferred_location_every_location_type if cfg(cuda_12020) else "`CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE` (and the other location-typed range attributes, `CU_MEM_LOCATION_TYPE_HOST*`): not in this release (added in 12.2)",
        advise_accessed_by if cfg(cuda_12020) else "`CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE` (and the other location-typed range attributes, `CU_MEM_LOCATION_TYPE_HOST*`): not in this release (added in 12.2)",
        advise_rounds_to_cpu_pages if cfg(cuda_12020) else "`CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE` (and the other location-typed range attributes, `CU_MEM_LOCATION_TYPE_HOST*`): not in this release (added in 12.2)",
        range_attributes_several_at_once if cfg(cuda_12020) else "`CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE` (and the other location-typed range attributes, `CU_MEM_LOCATION_TYPE_HOST*`): not in this release (added in 12.2)",
        system_allocated_memory if cfg(cuda_12020) else "`CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE` (and the other location-typed range attributes, `CU_MEM_LOCATION_TYPE_HOST*`): not in this release (added in 12.2)",
        prefetch_round_trip if cfg(cuda_12020) else "`CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE` (and the other location-typed range attributes, `CU_MEM_LOCATION_TYPE_HOST*`): not in this release (added in 12.2)",
        prefetch_batch if cfg(cuda_13000) else "`cuMemPrefetchBatchAsync`: not in this release (added in 13.0)",
        discard_batch if cfg(cuda_13000) else "`cuMemDiscardBatchAsync`: not in this release (added in 13.0)",
        discard_and_prefetch_batch if cfg(cuda_13000) else "`cuMemDiscardAndPrefetchBatchAsync`: not in this release (added in 13.0)",
        pointer_attributes_device_memory,
        pointer_attributes_managed,
        pointer_attributes_host_pinned,
        pointer_attributes_vmm,
        pointer_attributes_pool,
        pointer_set_attribute_sync_memops,
    ];
    // The bad-input tests of cuMemAdvise / prefetches check location types
    // and the location-typed range attributes (12.2 and later).
    #[cfg(cuda_12020)]
    tests.extend([
        test("bad_input_advise_and_range_attributes", || {
            in_child("bad_advise")
        }),
        test("bad_input_prefetch_and_batches", || {
            in_child("bad_prefetch")
        }),
    ]);
    #[cfg(not(cuda_12020))]
    tests.extend([
        common::DeviceTest::ignored("bad_input_advise_and_range_attributes", NO_LOCATION_TYPES),
        common::DeviceTest::ignored("bad_input_prefetch_and_batches", NO_LOCATION_TYPES),
    ]);
    tests.push(test("bad_input_pointer_attributes", || {
        in_child("bad_pointer")
    }));
    #[cfg(cuda_12020)]
    let roles: &[common::ChildRole] = &[
        ("bad_advise", || {
            child(bad_input_advise_and_range_attributes)
        }),
        ("bad_prefetch", || child(bad_input_prefetch_and_batches)),
        ("bad_pointer", || child(bad_input_pointer_attributes)),
    ];
    #[cfg(not(cuda_12020))]
    let roles: &[common::ChildRole] = &[("bad_pointer", || child(bad_input_pointer_attributes))];
    common::main(tests, roles);
}
