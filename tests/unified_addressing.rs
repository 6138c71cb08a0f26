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
//! cfgs choose the form ([`At`], [`mem_advise`], [`mem_prefetch`]). From
//! 13.0: the location forms. Before 13.0: `cuMemAdvise` /
//! `cuMemPrefetchAsync` in their `CUdevice` form for device and host
//! locations (`CU_DEVICE_CPU`), checked through the same range attributes
//! (`PREFERRED_LOCATION`, `LAST_PREFETCH_LOCATION`: a device id or
//! `CU_DEVICE_CPU`); from 12.2 also their `_TYPE` / `_ID` attributes, and
//! `cuMemAdvise_v2` / `cuMemPrefetchAsync_v2` for what a `CUdevice` cannot
//! say (host NUMA, bad location types, prefetch flags). In 12.0 and 12.1,
//! which have neither, those cases are skipped inside the test with the
//! reason printed (`skipped: ...`; the split prefetch of
//! `prefetch_round_trip` then goes to the host instead of the calling
//! thread's NUMA node). Before 13.0 the three batch tests are ignored with the
//! reason and the batch bad-input cases skipped (printed). Before 12.8,
//! `IS_HW_DECOMPRESS_CAPABLE` is left out of the pointer-attribute checks (printed).
mod common;

use common::os::PinnedThread;
use common::{release_named, BadInput, Checks, CuStream, DeviceBuf, Gpu, TestResult};
use core::ffi::c_void;
use core::mem::size_of;
use core::ptr::{null, null_mut};
use cuda_mem_sys::*;
use libtest_mimic::Failed;
use At::*;

/// `CU_STREAM_LEGACY` from `cuda.h`: `#define CU_STREAM_LEGACY ((CUstream)0x1)`.
#[cfg(cuda_13000)]
fn cu_stream_legacy() -> CUstream {
    null_mut::<u8>().wrapping_add(1).cast()
}

/// Why a location a `CUdevice` cannot say is skipped before 12.2.
const NO_LOCATION_FORM: &str = "the location form (`cuMemAdvise_v2`, `cuMemPrefetchAsync_v2`, \
     `CU_MEM_LOCATION_TYPE_HOST*`): not in this release (added in 12.2)";

/// Why the `_TYPE` / `_ID` range attributes are not read before 12.2.
#[cfg(not(cuda_12020))]
const NO_TYPED_ATTRIBUTES: &str = "`CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE` (and the \
     other location-typed range attributes): not in this release (added in 12.2)";

/// Why the batch prefetch/discard checks are skipped before 13.0.
#[cfg(not(cuda_13000))]
const BATCH_NOT_IN_RELEASE: &str = "cuMemPrefetchBatchAsync, cuMemDiscardBatchAsync, \
     cuMemDiscardAndPrefetchBatchAsync: not in this release (added in 13.0)";

const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;

/// Prints a case a test leaves out, and why (the release named).
fn skipped(what: &str, why: &str) {
    println!("    skipped: {what}: {}", release_named(why));
}

/// Prints, before 12.2, that the range attributes' `_TYPE` / `_ID` are not checked.
fn typed_attributes_note() {
    #[cfg(not(cuda_12020))]
    skipped("the _TYPE / _ID range attributes", NO_TYPED_ATTRIBUTES);
}

// ---------------------------------------------------------------------------
// Memory helpers
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
    /// A managed allocation holding `pattern(seed, ..)`, and that pattern.
    fn with(size: usize, seed: u32) -> Result<(Managed, Vec<u32>), Failed> {
        let m = Managed::new(size)?;
        let data = pattern(seed, size / 4);
        m.words().copy_from_slice(&data);
        Ok((m, data))
    }
    /// The allocation seen from the host as 32-bit words (the device has
    /// concurrentManagedAccess, so the host may touch it at any time).
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
    common::cu_loc(CU_MEM_LOCATION_TYPE_DEVICE, ordinal)
}

/// The kit's byte [`common::pattern`], as `words` native-endian words.
fn pattern(seed: u32, words: usize) -> Vec<u32> {
    let bytes = common::pattern(words * 4, seed);
    let word = |b: &[u8]| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
    bytes.chunks_exact(4).map(word).collect()
}

// ---------------------------------------------------------------------------
// Locations, and the release's forms of cuMemAdvise / cuMemPrefetchAsync
// (chosen by the headers' release cfgs)
// ---------------------------------------------------------------------------

/// Where advice or a prefetch points, and what the range attributes read
/// back for a location: the tests say where, the release's form says it its
/// way ([`At::said`]).
#[derive(Clone, Copy, Debug, PartialEq)]
enum At {
    /// No location: `CU_DEVICE_INVALID`, type `CU_MEM_LOCATION_TYPE_INVALID`.
    Nowhere,
    /// A device ordinal.
    Dev(i32),
    /// The host (`CU_DEVICE_CPU`), with the id the location form ignores.
    Host(i32),
    /// A host NUMA node (location form only).
    Numa(i32),
    /// The calling thread's host NUMA node, with the id it ignores (location form only).
    NumaCurrent(i32),
    /// A location type by number (bad input; location form only).
    Kind(u32, i32),
}

/// How this release says an [`At`] to `cuMemAdvise` / `cuMemPrefetchAsync`.
enum Said {
    /// In the `CUdevice` form (before 13.0): an ordinal, or `CU_DEVICE_CPU`.
    #[cfg(not(cuda_13000))]
    Device(CUdevice),
    /// In the location form (`_v2` in 12.2..12.9, the only form from 13.0).
    #[cfg(cuda_12020)]
    Location(CUmemLocation),
    /// Not at all (12.0, 12.1 have no location form).
    #[cfg(not(cuda_12020))]
    No,
}

impl At {
    /// The `CUdevice` form for a device (ordinal >= 0: -1 and -2 are
    /// `CU_DEVICE_CPU` and `CU_DEVICE_INVALID` there) or the host, where the
    /// release has it and `device_form` allows it (no prefetch flags); else
    /// the location form, where the release has it.
    #[cfg_attr(cuda_13000, allow(unused_variables))]
    fn said(self, device_form: bool) -> Said {
        match self {
            #[cfg(not(cuda_13000))]
            Dev(d) if d >= 0 && device_form => Said::Device(d),
            #[cfg(not(cuda_13000))]
            Host(_) if device_form => Said::Device(CU_DEVICE_CPU),
            #[cfg(cuda_12020)]
            _ => Said::Location(self.loc()),
            #[cfg(not(cuda_12020))]
            _ => Said::No,
        }
    }

    #[cfg(cuda_12020)]
    fn loc(self) -> CUmemLocation {
        let (ty, id) = match self {
            Nowhere => (CU_MEM_LOCATION_TYPE_INVALID, 0),
            Dev(d) => (CU_MEM_LOCATION_TYPE_DEVICE, d),
            Host(id) => (CU_MEM_LOCATION_TYPE_HOST, id),
            Numa(n) => (CU_MEM_LOCATION_TYPE_HOST_NUMA, n),
            NumaCurrent(id) => (CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, id),
            Kind(t, id) => (CUmemLocationType_enum(t), id),
        };
        common::cu_loc(ty, id)
    }

    /// `PREFERRED_LOCATION` / `LAST_PREFETCH_LOCATION` for it: the device
    /// ordinal, `CU_DEVICE_CPU` for any host location, else `CU_DEVICE_INVALID`.
    fn legacy(self) -> i32 {
        match self {
            Dev(d) => d,
            Host(_) | Numa(_) | NumaCurrent(_) => CU_DEVICE_CPU,
            Nowhere | Kind(..) => CU_DEVICE_INVALID,
        }
    }

    /// Their `_TYPE` / `_ID` for it (12.2 on): the id only where the type
    /// makes it meaningful (device, host NUMA).
    #[cfg(cuda_12020)]
    fn typed(self) -> (CUmemLocationType, Option<i32>) {
        let l = self.loc();
        let id = matches!(self, Dev(_) | Numa(_)).then(|| common::cu_loc_id(&l));
        (l.type_, id)
    }
}

/// `cuMemAdvise` in the release's form ([`At::said`]): the `CUdevice` form
/// before 13.0 for a device or the host, so that its effect is checked
/// through the same range attributes; the location form for the rest
/// (`cuMemAdvise_v2` in 12.2..12.9). `None` where the release cannot say `at`.
fn mem_advise(p: CUdeviceptr, len: usize, advice: CUmem_advise, at: At) -> Option<CUresult> {
    Some(match at.said(true) {
        #[cfg(not(cuda_13000))]
        Said::Device(dev) => unsafe { cuMemAdvise(p, len, advice, dev) },
        #[cfg(cuda_13000)]
        Said::Location(l) => unsafe { cuMemAdvise(p, len, advice, l) },
        #[cfg(all(cuda_12020, not(cuda_13000)))]
        Said::Location(l) => unsafe { cuMemAdvise_v2(p, len, advice, l) },
        #[allow(unreachable_patterns, reason = "from 12.2 every location is said")]
        _ => return None,
    })
}

/// `cuMemPrefetchAsync` in the release's form: before 13.0
/// `(ptr, len, device, stream)`, which has no flags, for a device or the
/// host with flags 0; the location form `(ptr, len, location, flags,
/// stream)` for the rest (`cuMemPrefetchAsync_v2` in 12.2..12.9). `None`
/// where the release cannot say it.
fn mem_prefetch(p: CUdeviceptr, len: usize, at: At, flags: u32, s: CUstream) -> Option<CUresult> {
    Some(match at.said(flags == 0) {
        #[cfg(not(cuda_13000))]
        Said::Device(dev) => unsafe { cuMemPrefetchAsync(p, len, dev, s) },
        #[cfg(cuda_13000)]
        Said::Location(l) => unsafe { cuMemPrefetchAsync(p, len, l, flags, s) },
        #[cfg(all(cuda_12020, not(cuda_13000)))]
        Said::Location(l) => unsafe { cuMemPrefetchAsync_v2(p, len, l, flags, s) },
        #[allow(unreachable_patterns, reason = "from 12.2 every location is said")]
        _ => return None,
    })
}

/// The result of a call the release can make; where it cannot (`None`),
/// the skip is printed.
fn said(r: Option<CUresult>, what: &str) -> Option<CUresult> {
    if r.is_none() {
        skipped(what, NO_LOCATION_FORM);
    }
    r
}

// ---------------------------------------------------------------------------
// Host NUMA: the node the calling thread runs on, made stable by pinning
// ---------------------------------------------------------------------------

/// The host NUMA node of the tests: the device's, or the calling thread's
/// where it reports none.
#[cfg(cuda_12020)]
fn host_numa(gpu: &Gpu) -> Result<i32, Failed> {
    gpu.host_numa_node_or_thread_node()
}

/// Before 12.2 (no `CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID`): the calling thread's
/// node, for the printed skips only (the host NUMA cases need 12.2).
#[cfg(not(cuda_12020))]
fn host_numa(_gpu: &Gpu) -> Result<i32, Failed> {
    Ok(common::os::getcpu().1 as i32)
}

// ---------------------------------------------------------------------------
// Range attributes: one at a time and all at once
// ---------------------------------------------------------------------------

const SENT_I32: i32 = 0x7777_7777;

/// A range's `_TYPE` and `_ID` attributes (12.2 on; nothing before).
#[cfg(cuda_12020)]
type Typed = (CUmemLocationType, i32);
#[cfg(not(cuda_12020))]
type Typed = ();

/// Every range attribute of a range this release has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RangeState {
    read_mostly: i32,
    preferred: i32,
    accessed_by: [i32; 4],
    last_prefetch: i32,
    preferred_loc: Typed,
    last_prefetch_loc: Typed,
}

type Slot = (CUmem_range_attribute, *mut c_void, usize);

impl RangeState {
    fn sentinels() -> RangeState {
        #[cfg(cuda_12020)]
        let typed = (CUmemLocationType_enum(0x7777_7777), SENT_I32);
        #[cfg(not(cuda_12020))]
        let typed = ();
        RangeState {
            read_mostly: SENT_I32,
            preferred: SENT_I32,
            accessed_by: [SENT_I32; 4],
            last_prefetch: SENT_I32,
            preferred_loc: typed,
            last_prefetch_loc: typed,
        }
    }

    /// Every attribute with where it goes and its size.
    fn slots(&mut self) -> Vec<Slot> {
        fn slot<T>(a: CUmem_range_attribute, v: &mut T) -> Slot {
            (a, (v as *mut T).cast(), size_of::<T>())
        }
        #[allow(unused_mut, reason = "extended from 12.2 only")]
        let mut v = vec![
            slot(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, &mut self.read_mostly),
            slot(
                CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION,
                &mut self.preferred,
            ),
            slot(CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, &mut self.accessed_by),
            slot(
                CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION,
                &mut self.last_prefetch,
            ),
        ];
        #[cfg(cuda_12020)]
        v.extend([
            slot(
                CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE,
                &mut self.preferred_loc.0,
            ),
            slot(
                CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID,
                &mut self.preferred_loc.1,
            ),
            slot(
                CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE,
                &mut self.last_prefetch_loc.0,
            ),
            slot(
                CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID,
                &mut self.last_prefetch_loc.1,
            ),
        ]);
        v
    }

    /// What a host NUMA preference for `node` reads back as: that node, with
    /// `PREFERRED_LOCATION` `CU_DEVICE_CPU`.
    ///
    /// Measured on driver 580.159 (H200 host, one NUMA node): cuMemAdvise
    /// returns CUDA_SUCCESS for such a location but the range keeps no
    /// preferred location, even after a context synchronize. That is accepted
    /// and printed (it is the driver's behaviour, not the bindings'), as is
    /// plain host memory; any other answer fails.
    fn host_numa_preference(&self, what: &str, node: i32) -> At {
        #[cfg(cuda_12020)]
        if self.preferred_loc.0 == CU_MEM_LOCATION_TYPE_HOST {
            println!("{what}: host NUMA {node} reads back as plain host memory");
            return Host(0);
        } else if self.preferred_loc.0 != CU_MEM_LOCATION_TYPE_HOST_NUMA {
            println!("{what}: driver kept no preferred location (host NUMA advice without effect)");
            return Nowhere;
        }
        let _ = what;
        Numa(node)
    }
}

fn range_one<T: Copy>(
    a: CUmem_range_attribute,
    p: CUdeviceptr,
    len: usize,
    fill: T,
) -> Result<T, Failed> {
    let mut v = fill;
    let data = (&mut v as *mut T).cast();
    let what = format!("cuMemRangeGetAttribute(attribute {})", a.0);
    common::check(
        unsafe { cuMemRangeGetAttribute(data, size_of::<T>(), a, p, len) },
        &what,
    )?;
    Ok(v)
}

/// The range attributes of a range, to be checked one by one against what
/// the test did, each failure named after `what`.
struct Range<'c> {
    c: &'c mut Checks,
    what: String,
    s: RangeState,
}

impl Range<'_> {
    fn read_mostly(self, want: i32) -> Self {
        let what = format!("{}: READ_MOSTLY", self.what);
        self.c.eq(what, self.s.read_mostly, want);
        self
    }
    fn preferred(self, at: At) -> Self {
        let (legacy, typed) = (self.s.preferred, self.s.preferred_loc);
        self.located("PREFERRED_LOCATION", legacy, typed, at)
    }
    fn last_prefetch(self, at: At) -> Self {
        let (legacy, typed) = (self.s.last_prefetch, self.s.last_prefetch_loc);
        self.located("LAST_PREFETCH_LOCATION", legacy, typed, at)
    }
    /// ACCESSED_BY lists the devices with the advice, the extra space filled
    /// with `CU_DEVICE_INVALID`.
    fn accessed_by(self, ids: &[i32]) -> Self {
        let mut want = [CU_DEVICE_INVALID; 4];
        want[..ids.len()].copy_from_slice(ids);
        let what = format!("{}: ACCESSED_BY", self.what);
        self.c.eq(what, self.s.accessed_by, want);
        self
    }
    #[cfg_attr(not(cuda_12020), allow(unused_variables))]
    fn located(self, name: &str, legacy: i32, typed: Typed, at: At) -> Self {
        let what = &self.what;
        self.c.eq(format!("{what}: {name}"), legacy, at.legacy());
        #[cfg(cuda_12020)]
        {
            let (ty, id) = at.typed();
            self.c.eq(format!("{what}: {name}_TYPE"), typed.0, ty);
            if let Some(id) = id {
                self.c.eq(format!("{what}: {name}_ID"), typed.1, id);
            }
        }
        self
    }
}

/// The unified-memory calls of these tests on a [`Checks`] (and so on a
/// [`BadInput`]), their failures recorded there.
trait Ua {
    /// `cuMemAdvise` must succeed; false where it failed or the release
    /// cannot say `at` (the skip printed).
    fn advise(&mut self, p: CUdeviceptr, len: usize, advice: CUmem_advise, at: At) -> bool;
    /// `cuMemPrefetchAsync` (flags 0) must succeed, as [`Ua::advise`].
    fn prefetch(&mut self, p: CUdeviceptr, len: usize, at: At, s: CUstream) -> bool;
    /// Every range attribute read one by one with `cuMemRangeGetAttribute`,
    /// and all at once (in another order) with `cuMemRangeGetAttributes`;
    /// the two must agree.
    fn range(&mut self, what: &str, p: CUdeviceptr, len: usize) -> Result<Range<'_>, Failed>;
}

impl Ua for Checks {
    fn advise(&mut self, p: CUdeviceptr, len: usize, advice: CUmem_advise, at: At) -> bool {
        let what = format!("cuMemAdvise(advice {}, {at:?})", advice.0);
        said(mem_advise(p, len, advice, at), &what)
            .is_some_and(|r| self.ok(common::check(r, &what)))
    }

    fn prefetch(&mut self, p: CUdeviceptr, len: usize, at: At, s: CUstream) -> bool {
        let what = format!("cuMemPrefetchAsync({at:?})");
        said(mem_prefetch(p, len, at, 0, s), &what)
            .is_some_and(|r| self.ok(common::check(r, &what)))
    }

    fn range(&mut self, what: &str, p: CUdeviceptr, len: usize) -> Result<Range<'_>, Failed> {
        let mut one = RangeState::sentinels();
        for (a, data, size) in one.slots() {
            let call = format!("cuMemRangeGetAttribute(attribute {})", a.0);
            common::check(
                unsafe { cuMemRangeGetAttribute(data, size, a, p, len) },
                &call,
            )?;
        }
        let mut all = RangeState::sentinels();
        let slots: Vec<Slot> = all.slots().into_iter().rev().collect();
        let mut attrs: Vec<_> = slots.iter().map(|s| s.0).collect();
        let mut data: Vec<_> = slots.iter().map(|s| s.1).collect();
        let mut sizes: Vec<_> = slots.iter().map(|s| s.2).collect();
        let n = attrs.len();
        let (a, d, z) = (attrs.as_mut_ptr(), data.as_mut_ptr(), sizes.as_mut_ptr());
        cu!(cuMemRangeGetAttributes(d, z, a, n, p, len))?;
        let at_once = format!("{what}: cuMemRangeGetAttributes ({n} at once) vs one by one");
        self.eq(at_once, all, one);
        let what = what.to_string();
        Ok(Range {
            c: self,
            what,
            s: one,
        })
    }
}

// ---------------------------------------------------------------------------
// cuMemAdvise
// ---------------------------------------------------------------------------

fn advise_read_mostly() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    typed_attributes_note();
    let (m, data) = Managed::with(2 * MIB, 0x1234)?;
    let (p, n, half) = (m.ptr, m.size, m.size / 2);
    let fresh = c.range("fresh", p, n)?.read_mostly(0).preferred(Nowhere);
    fresh.accessed_by(&[]).last_prefetch(Nowhere);

    // The location is ignored for READ_MOSTLY: a host location with a
    // nonsense id sets it, a device location unsets it.
    //
    // Observation (driver 580.159, not asserted): with a host NUMA location
    // cuMemAdvise returns CUDA_SUCCESS and changes nothing, also for
    // SET/UNSET_READ_MOSTLY and UNSET_PREFERRED_LOCATION, whose location the
    // docs say is ignored.
    c.advise(p, half, CU_MEM_ADVISE_SET_READ_MOSTLY, Host(9999));
    let first = "SET_READ_MOSTLY on first half";
    c.range(&format!("{first}: first half"), p, half)?
        .read_mostly(1);
    c.range(&format!("{first}: second half"), m.at(half), half)?
        .read_mostly(0);
    c.range(&format!("{first}: whole (all pages must have it)"), p, n)?
        .read_mostly(0);
    // Read-duplicated data reads the same on the device and on the host.
    let dev = DeviceBuf::new(n)?;
    let stream = CuStream::new()?;
    c.prefetch(p, n, Dev(0), stream.0);
    c.ok(stream.sync());
    let on_device = device_view(&dev, p, n / 4)?;
    c.that(on_device == data, "read-mostly data differs on the device");
    c.that(
        m.words()[..] == data[..],
        "read-mostly data differs on the host",
    );
    // A host write invalidates the other copies; the device then sees it.
    m.words()[7] = 0xDEAD_BEEF;
    let seen = device_view(&dev, p, 8)?[7];
    c.eq(
        "device view after a host write to a read-mostly page",
        seen,
        0xDEAD_BEEF,
    );

    c.advise(p, n, CU_MEM_ADVISE_SET_READ_MOSTLY, Dev(0));
    c.range("SET_READ_MOSTLY on all", p, n)?.read_mostly(1);
    c.advise(p, n, CU_MEM_ADVISE_UNSET_READ_MOSTLY, Dev(0));
    let unset = c.range("UNSET_READ_MOSTLY", p, n)?.read_mostly(0);
    unset.preferred(Nowhere).accessed_by(&[]);
    c.eq("data after the copies collapse", m.words()[7], 0xDEAD_BEEF);
    let rest_same = m.words()[8..] == data[8..];
    c.that(rest_same, "data changed when read-mostly copies collapsed");
    let odd = "SET_READ_MOSTLY with {HOST_NUMA, 9999}";
    if let Some(r) = said(
        mem_advise(p, n, CU_MEM_ADVISE_SET_READ_MOSTLY, Numa(9999)),
        odd,
    ) {
        c.ok(cu!(cuCtxSynchronize()));
        let rm = range_one(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, p, n, SENT_I32)?;
        println!(
            "observation: {odd} -> {}, READ_MOSTLY {rm}",
            common::error_name(r)
        );
    }
    c.advise(p, n, CU_MEM_ADVISE_UNSET_READ_MOSTLY, Dev(0));
    c.finish()
}

fn advise_preferred_location_every_location_type() -> TestResult {
    let gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    typed_attributes_note();
    let numa = host_numa(&gpu)?;
    let pinned = PinnedThread::here().map_err(Failed::from)?;
    let (cpu, node) = (pinned.cpu, pinned.node);
    println!("host NUMA id {numa}; thread pinned to CPU {cpu} on node {node}");
    let (m, data) = Managed::with(2 * MIB, 0x5150)?;
    let (p, n, half) = (m.ptr, m.size, m.size / 2);
    let set = CU_MEM_ADVISE_SET_PREFERRED_LOCATION;
    let unset = CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION;

    // (name, the advice's location, what reads back)
    let cases = [
        ("device 0", Dev(0), Dev(0)),
        // id is ignored for HOST.
        ("host", Host(12345), Host(0)),
        // A host NUMA node: reads back as that node, or as plain host
        // memory (RangeState::host_numa_preference).
        ("host NUMA", Numa(numa), Numa(numa)),
        // id is ignored; the node of the calling thread's CPU is used.
        ("host NUMA current", NumaCurrent(12345), Numa(node)),
    ];
    for (name, at, want) in cases {
        let what = format!("SET_PREFERRED_LOCATION {name}");
        if !c.advise(p, n, set, at) {
            continue;
        }
        c.ok(cu!(cuCtxSynchronize()));
        let r = c.range(&what, p, n)?;
        println!("{what}: {:?}", r.s);
        let want = match want {
            Numa(node) => r.s.host_numa_preference(&what, node),
            _ => want,
        };
        r.preferred(want).read_mostly(0).last_prefetch(Nowhere);
        // Setting a preferred location migrates nothing by itself, and data stays intact.
        c.that(m.words()[..] == data[..], format!("{what}: data changed"));

        // Unset (location ignored, so give another one than was set): no
        // preferred location at all.
        let other = if let Dev(_) = at { Host(777) } else { Dev(0) };
        c.advise(p, n, unset, other);
        c.range(&format!("UNSET after {name}"), p, n)?
            .preferred(Nowhere);
    }

    // Different preferred locations on the two halves: each half reports its
    // own, the whole range reports none (not all pages agree).
    c.advise(p, half, set, Dev(0));
    c.advise(m.at(half), half, set, Host(0));
    c.range("split: first half", p, half)?.preferred(Dev(0));
    c.range("split: second half", m.at(half), half)?
        .preferred(Host(0));
    c.range("split: whole", p, n)?.preferred(Nowhere);
    // Preferred location on only part: the whole range has no common preference.
    c.advise(m.at(half), half, unset, Host(0));
    let only = "first half only";
    c.range(&format!("{only}: second half"), m.at(half), half)?
        .preferred(Nowhere);
    c.range(&format!("{only}: whole"), p, n)?.preferred(Nowhere);
    c.advise(p, n, unset, Host(0));
    c.that(
        m.words()[..] == data[..],
        "data changed by preferred-location advice",
    );
    drop(pinned);
    c.finish()
}

fn advise_accessed_by() -> TestResult {
    let gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    typed_attributes_note();
    let numa = host_numa(&gpu)?;
    let (m, data) = Managed::with(2 * MIB, 0xACCE)?;
    let (p, n) = (m.ptr, m.size);
    let (set, unset) = (
        CU_MEM_ADVISE_SET_ACCESSED_BY,
        CU_MEM_ADVISE_UNSET_ACCESSED_BY,
    );

    c.advise(p, n, set, Dev(0));
    let r = c.range("SET_ACCESSED_BY device 0", p, n)?.accessed_by(&[0]);
    r.preferred(Nowhere).read_mostly(0);
    // A one-element buffer holds the one device.
    let one = range_one(CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, p, n, SENT_I32)?;
    c.eq("ACCESSED_BY into 4 bytes", one, 0);
    // The device reads the data through its mapping; the host still sees it.
    let dev = DeviceBuf::new(n)?;
    let on_device = device_view(&dev, p, n / 4)?;
    c.that(on_device == data, "device view differs with ACCESSED_BY");
    c.that(
        m.words()[..] == data[..],
        "host view differs with ACCESSED_BY",
    );

    // Host (id ignored): listed as CU_DEVICE_CPU after the device; the call
    // is accepted.
    c.advise(p, n, set, Host(4242));
    let r = c.range("SET_ACCESSED_BY device 0 + host", p, n)?;
    println!("SET_ACCESSED_BY device 0 + host: {:?}", r.s.accessed_by);
    r.accessed_by(&[0, CU_DEVICE_CPU]);
    c.advise(p, n, unset, Host(0));
    c.range("UNSET_ACCESSED_BY host", p, n)?.accessed_by(&[0]);

    // Only "device" and "host" are valid for ACCESSED_BY.
    for (name, at) in [
        ("host NUMA", Numa(numa)),
        ("host NUMA current", NumaCurrent(0)),
    ] {
        let what = format!("cuMemAdvise(SET_ACCESSED_BY, {name})");
        if let Some(r) = said(mem_advise(p, n, set, at), &what) {
            c.ok(common::expect_error(r, CUDA_ERROR_INVALID_VALUE, &what));
        }
    }
    c.range("after rejected ACCESSED_BY", p, n)?
        .accessed_by(&[0]);

    // Accessed-by on the first half only: the whole range lists no device.
    c.advise(m.at(MIB), MIB, unset, Dev(0));
    let first = "ACCESSED_BY first half";
    c.range(&format!("{first}: first half"), p, MIB)?
        .accessed_by(&[0]);
    c.range(&format!("{first}: whole"), p, n)?.accessed_by(&[]);

    c.advise(p, n, unset, Dev(0));
    c.range("UNSET_ACCESSED_BY device 0", p, n)?
        .accessed_by(&[]);
    c.that(
        m.words()[..] == data[..],
        "data changed by accessed-by advice",
    );
    c.finish()
}

/// The advised range is widened to whole CPU pages: a misaligned 10-byte
/// range inside page 1 sets the advice on all of page 1 and nothing else.
fn advise_rounds_to_cpu_pages() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    typed_attributes_note();
    let page = common::os::page_size();
    let m = Managed::new(2 * MIB)?;
    c.advise(m.at(page + 100), 10, CU_MEM_ADVISE_SET_READ_MOSTLY, Dev(0));
    c.advise(
        m.at(page + 100),
        10,
        CU_MEM_ADVISE_SET_PREFERRED_LOCATION,
        Dev(0),
    );
    c.range("page 1", m.at(page), page)?
        .read_mostly(1)
        .preferred(Dev(0));
    c.range("last byte of page 1", m.at(2 * page - 1), 1)?
        .read_mostly(1);
    c.range("page 0", m.ptr, page)?
        .read_mostly(0)
        .preferred(Nowhere);
    c.range("page 2", m.at(2 * page), page)?
        .read_mostly(0)
        .preferred(Nowhere);
    c.finish()
}

/// Every advice set at once on one range, then read back in one
/// `cuMemRangeGetAttributes` call (and a subset call with odd sizes).
fn range_attributes_several_at_once() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    typed_attributes_note();
    let m = Managed::new(2 * MIB)?;
    let (p, n) = (m.ptr, m.size);
    let stream = CuStream::new()?;
    c.advise(p, n, CU_MEM_ADVISE_SET_READ_MOSTLY, Dev(0));
    c.advise(p, n, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, Dev(0));
    c.advise(p, n, CU_MEM_ADVISE_SET_ACCESSED_BY, Dev(0));
    c.prefetch(p, n, Dev(0), stream.0);
    c.ok(stream.sync());
    let r = c.range("all advice + prefetch", p, n)?.read_mostly(1);
    r.preferred(Dev(0)).accessed_by(&[0]).last_prefetch(Dev(0));

    // Three attributes, ACCESSED_BY with room for two ids. The last prefetch
    // location as its type (12.2 on), else as the device id.
    #[cfg(cuda_12020)]
    let (last, last_name, last_want) = (
        CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE,
        "LAST_PREFETCH_LOCATION_TYPE",
        CU_MEM_LOCATION_TYPE_DEVICE.0 as i32,
    );
    #[cfg(not(cuda_12020))]
    let (last, last_name, last_want) = (
        CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION,
        "LAST_PREFETCH_LOCATION",
        0,
    );
    let (mut rm, mut by, mut lt) = (SENT_I32, [SENT_I32; 2], SENT_I32);
    let mut data: [*mut c_void; 3] = [
        (&mut by as *mut [i32; 2]).cast(),
        (&mut lt as *mut i32).cast(),
        (&mut rm as *mut i32).cast(),
    ];
    let mut sizes = [8usize, 4, 4];
    let mut attrs = [
        CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY,
        last,
        CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
    ];
    let (d, z, a) = (data.as_mut_ptr(), sizes.as_mut_ptr(), attrs.as_mut_ptr());
    c.ok(cu!(cuMemRangeGetAttributes(d, z, a, 3, p, n)));
    c.eq("3 at once: ACCESSED_BY[2]", by, [0, CU_DEVICE_INVALID]);
    c.eq(format!("3 at once: {last_name}"), lt, last_want);
    c.eq("3 at once: READ_MOSTLY", rm, 1);

    c.advise(p, n, CU_MEM_ADVISE_UNSET_READ_MOSTLY, Dev(0));
    c.advise(p, n, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, Dev(0));
    c.advise(p, n, CU_MEM_ADVISE_UNSET_ACCESSED_BY, Dev(0));
    let r = c
        .range("all unset", p, n)?
        .read_mostly(0)
        .preferred(Nowhere);
    // Advice does not erase the prefetch record.
    r.accessed_by(&[]).last_prefetch(Dev(0));
    c.finish()
}

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
fn system_allocated_memory() -> TestResult {
    let gpu = Gpu::new(0)?;
    let probe = DeviceBuf::new(256)?;
    let mut c = BadInput::round_trip(probe.ptr, 256);
    let pageable = gpu.attribute(CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS)?;
    println!("pageableMemoryAccess = {pageable}");
    let heap: Vec<u32> = pattern(0x4EA9, 16 * KIB);
    let (heap_ptr, heap_len) = (heap.as_ptr() as CUdeviceptr, heap.len() * 4);
    let static_ptr = core::ptr::addr_of!(STATIC_HOST_ARRAY) as CUdeviceptr;
    let static_len = 64 * KIB;
    let stream = CuStream::new()?;

    if pageable != 0 {
        // A device with HMM/ATS: the advice is accepted and read back.
        c.advise(heap_ptr, heap_len, CU_MEM_ADVISE_SET_READ_MOSTLY, Dev(0));
        let rm = range_one(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, heap_ptr, heap_len, 0i32)?;
        c.eq("pageable heap READ_MOSTLY", rm, 1);
        c.advise(heap_ptr, heap_len, CU_MEM_ADVISE_UNSET_READ_MOSTLY, Dev(0));
        return c.finish();
    }
    let inval = CUDA_ERROR_INVALID_VALUE;
    for (name, ptr, len) in [
        ("malloc'd heap", heap_ptr, heap_len),
        ("static array", static_ptr, static_len),
    ] {
        for (advice, at) in [
            (CU_MEM_ADVISE_SET_READ_MOSTLY, Dev(0)),
            (CU_MEM_ADVISE_SET_PREFERRED_LOCATION, Host(0)),
            (CU_MEM_ADVISE_SET_PREFERRED_LOCATION, Dev(0)),
            (CU_MEM_ADVISE_SET_ACCESSED_BY, Dev(0)),
        ] {
            let what = format!("cuMemAdvise({name}, advice {})", advice.0);
            c.cu(inval, mem_advise(ptr, len, advice, at).unwrap(), &what);
        }
        let mut v = SENT_I32;
        let rm = CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY;
        let r = unsafe { cuMemRangeGetAttribute((&mut v as *mut i32).cast(), 4, rm, ptr, len) };
        c.ok(common::expect_error(
            r,
            inval,
            &format!("cuMemRangeGetAttribute({name})"),
        ));
        c.eq(
            format!("{name}: range attribute output untouched"),
            v,
            SENT_I32,
        );
        c.still_works_after("range attribute on system memory");
        let r = mem_prefetch(ptr, len, Dev(0), 0, stream.0).unwrap();
        c.cu(inval, r, &format!("cuMemPrefetchAsync({name} to device)"));
        // The batch calls: 13.0 and later (the skip is printed).
        #[cfg(cuda_13000)]
        {
            let (mut p, mut s, mut l, mut i) = ([ptr], [len], [dev_loc(0)], [0usize]);
            let (p, s, l, i) = (
                p.as_mut_ptr(),
                s.as_mut_ptr(),
                l.as_mut_ptr(),
                i.as_mut_ptr(),
            );
            let r = unsafe { cuMemPrefetchBatchAsync(p, s, 1, l, i, 1, 0, stream.0) };
            c.cu(inval, r, &format!("cuMemPrefetchBatchAsync({name})"));
            let r = unsafe { cuMemDiscardBatchAsync(p, s, 1, 0, stream.0) };
            c.cu(inval, r, &format!("cuMemDiscardBatchAsync({name})"));
        }
        #[cfg(not(cuda_13000))]
        skipped(&format!("{name}: batch checks"), BATCH_NOT_IN_RELEASE);
    }
    c.ok(stream.sync());
    c.that(heap == pattern(0x4EA9, 16 * KIB), "heap bytes changed");
    let st = unsafe { &*core::ptr::addr_of!(STATIC_HOST_ARRAY) };
    c.that(st.iter().all(|&b| b == 0x5A), "static array bytes changed");
    c.finish()
}

// ---------------------------------------------------------------------------
// cuMemPrefetchAsync and the batch prefetch/discard calls
// ---------------------------------------------------------------------------

fn prefetch_round_trip() -> TestResult {
    let gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    typed_attributes_note();
    let numa = host_numa(&gpu)?;
    let pinned = PinnedThread::here().map_err(Failed::from)?;
    let (m, data) = Managed::with(4 * MIB, 0xF00D)?;
    let (p, n, half, words) = (m.ptr, m.size, m.size / 2, m.size / 4);
    let dev = DeviceBuf::new(n)?;
    let stream = CuStream::new()?;

    // To the device: recorded as device 0; the device reads the host's bytes.
    c.prefetch(p, n, Dev(0), stream.0);
    c.ok(stream.sync());
    let r = c.range("prefetch to device 0", p, n)?;
    r.last_prefetch(Dev(0)).preferred(Nowhere);
    let on_device = device_view(&dev, p, words)?;
    c.that(
        on_device == data,
        "device view after prefetch to device differs",
    );

    // The device overwrites the first half while the data is on it.
    c.ok(cu!(cuMemsetD32(p, 0x00C0_FFEE, words / 2)));
    c.ok(cu!(cuCtxSynchronize()));

    // To the host (id ignored): recorded as the CPU; the host reads both halves.
    c.prefetch(p, n, Host(31337), stream.0);
    c.ok(stream.sync());
    c.range("prefetch to host", p, n)?.last_prefetch(Host(0));
    let host = m.words();
    let written = host[..words / 2].iter().all(|&w| w == 0x00C0_FFEE);
    c.that(written, "device-written half lost on the way to the host");
    let rest = host[words / 2..] == data[words / 2..];
    c.that(rest, "untouched half changed on the round trip");

    // Host writes, then to the device again and back through a host NUMA node.
    let data2 = pattern(0xBEEF, words);
    m.words().copy_from_slice(&data2);
    c.prefetch(p, n, Dev(0), stream.0);
    c.ok(stream.sync());
    let on_device = device_view(&dev, p, words)?;
    c.that(
        on_device == data2,
        "device view after the second prefetch differs",
    );
    if c.prefetch(p, n, Numa(numa), stream.0) {
        c.ok(stream.sync());
        let r = c.range("prefetch to host NUMA", p, n)?;
        println!("prefetch to host NUMA {numa}: {:?}", r.s);
        r.last_prefetch(Numa(numa));
        let same = m.words()[..] == data2[..];
        c.that(same, "data changed on the way to the host NUMA node");
    }

    // Half to the device, half to the current thread's NUMA node (12.2 on;
    // before, to the host: a record of two locations either way).
    //
    // The record is "the last location the application requested": a
    // request for the current thread's node is kept as that request, type
    // HOST_NUMA_CURRENT with the id as passed (measured on driver 580; the
    // docs list only DEVICE, HOST and HOST_NUMA here, and say to ignore the id
    // of any other type).
    let (second, name) = if cfg!(cuda_12020) {
        (NumaCurrent(999), "host NUMA current")
    } else {
        skipped(
            "split: host NUMA current (the host instead)",
            NO_LOCATION_FORM,
        );
        (Host(999), "host")
    };
    c.prefetch(p, half, Dev(0), stream.0);
    c.prefetch(m.at(half), half, second, stream.0);
    c.ok(stream.sync());
    c.range("split: first half (device)", p, half)?
        .last_prefetch(Dev(0));
    let r = c.range(&format!("split: second half ({name})"), m.at(half), half)?;
    println!("prefetch to {name} (node {}): {:?}", pinned.node, r.s);
    r.last_prefetch(second);
    c.range("split: whole (two locations)", p, n)?
        .last_prefetch(Nowhere);
    let on_device = device_view(&dev, p, words)?;
    c.that(
        on_device == data2,
        "device view after the split prefetch differs",
    );
    let on_host = m.words()[..] == data2[..];
    c.that(on_host, "host view after the split prefetch differs");
    drop(pinned);
    c.finish()
}

/// Ranges for the batch calls: `n` managed allocations of 1 MiB with
/// distinct patterns.
#[cfg(cuda_13000)]
fn batch_ranges(n: usize, seed: u32) -> Result<(Vec<Managed>, Vec<Vec<u32>>), Failed> {
    (0..n)
        .map(|i| Managed::with(MIB, seed + i as u32 * 0x1111))
        .collect()
}

/// `cuMemPrefetchBatchAsync` / `cuMemDiscardAndPrefetchBatchAsync` of
/// `dptrs` (with `sizes`), the locations starting at the indices `idxs`.
#[cfg(cuda_13000)]
fn batch_call(
    discard: bool,
    dptrs: &mut [CUdeviceptr],
    sizes: &mut [usize],
    locs: &mut [CUmemLocation],
    idxs: &mut [usize],
    s: CUstream,
) -> TestResult {
    let (d, z, n) = (dptrs.as_mut_ptr(), sizes.as_mut_ptr(), dptrs.len());
    let (l, i, nl) = (locs.as_mut_ptr(), idxs.as_mut_ptr(), locs.len());
    if discard {
        cu!(cuMemDiscardAndPrefetchBatchAsync(d, z, n, l, i, nl, 0, s))
    } else {
        cu!(cuMemPrefetchBatchAsync(d, z, n, l, i, nl, 0, s))
    }
}

#[cfg(cuda_13000)]
fn prefetch_batch() -> TestResult {
    let gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    let numa = host_numa(&gpu)?;
    let stream = CuStream::new()?;
    let dev = DeviceBuf::new(MIB)?;
    let (m, pats) = batch_ranges(4, 0xB000)?;
    let half = MIB / 2;

    // A -> device 0; B, C -> host; first half of D -> host NUMA.
    let mut dptrs = [m[0].ptr, m[1].ptr, m[2].ptr, m[3].ptr];
    let mut locs = [dev_loc(0), Host(0).loc(), Numa(numa).loc()];
    let sizes = &mut [MIB, MIB, MIB, half];
    c.ok(batch_call(
        false,
        &mut dptrs,
        sizes,
        &mut locs,
        &mut [0, 1, 3],
        stream.0,
    ));
    c.ok(stream.sync());
    c.range("batch 1: A", m[0].ptr, MIB)?.last_prefetch(Dev(0));
    c.range("batch 1: B", m[1].ptr, MIB)?.last_prefetch(Host(0));
    c.range("batch 1: C", m[2].ptr, MIB)?.last_prefetch(Host(0));
    c.range("batch 1: D first half", m[3].ptr, half)?
        .last_prefetch(Numa(numa));
    let r = c.range(
        "batch 1: D second half (not in the batch)",
        m[3].at(half),
        half,
    )?;
    r.last_prefetch(Nowhere);
    c.range("batch 1: D whole", m[3].ptr, MIB)?
        .last_prefetch(Nowhere);
    let on_device = device_view(&dev, m[0].ptr, MIB / 4)?;
    c.that(
        on_device == pats[0],
        "A differs on the device after batch 1",
    );

    // A, B -> host; C, D -> device 0.
    let mut locs = [Host(0).loc(), dev_loc(0)];
    c.ok(batch_call(
        false,
        &mut dptrs,
        &mut [MIB; 4],
        &mut locs,
        &mut [0, 2],
        stream.0,
    ));
    c.ok(stream.sync());
    for (i, name) in ["A", "B", "C", "D"].into_iter().enumerate() {
        let name = format!("batch 2: {name}");
        let want = if i < 2 { Host(0) } else { Dev(0) };
        c.range(&name, m[i].ptr, MIB)?.last_prefetch(want);
        let on_device = device_view(&dev, m[i].ptr, MIB / 4)?;
        c.that(on_device == pats[i], format!("{name}: device view differs"));
        let on_host = m[i].words()[..] == pats[i][..];
        c.that(on_host, format!("{name}: host view differs"));
    }
    c.finish()
}

#[cfg(cuda_13000)]
fn discard_batch() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    let stream = CuStream::new()?;
    let s = stream.0;
    let dev = DeviceBuf::new(MIB)?;
    let (m, pats) = batch_ranges(3, 0xD000)?;
    let (half, words) = (MIB / 2, MIB / 4);

    // A and C on the device, B on the host.
    c.prefetch(m[0].ptr, MIB, Dev(0), s);
    c.prefetch(m[1].ptr, MIB, Host(0), s);
    c.prefetch(m[2].ptr, MIB, Dev(0), s);
    c.ok(stream.sync());
    // Policies on A: discarding drops contents, not advice.
    c.advise(m[0].ptr, MIB, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, Dev(0));
    c.advise(m[0].ptr, MIB, CU_MEM_ADVISE_SET_ACCESSED_BY, Dev(0));

    // Discard all of A and the first half of B; C is not in the batch.
    let mut dptrs = [m[0].ptr, m[1].ptr];
    let mut sizes = [MIB, half];
    let (d, z) = (dptrs.as_mut_ptr(), sizes.as_mut_ptr());
    c.ok(cu!(cuMemDiscardBatchAsync(d, z, 2, 0, s)));
    c.ok(stream.sync());
    // The discarded ranges keep their advice, and their prefetch record
    // (the last location the application asked to prefetch them to; a
    // discard is no prefetch).
    let r = c.range("discarded A", m[0].ptr, MIB)?.preferred(Dev(0));
    r.accessed_by(&[0]).last_prefetch(Dev(0));
    let r = c.range("discarded first half of B", m[1].ptr, half)?;
    r.preferred(Nowhere).last_prefetch(Host(0));
    // What was not discarded keeps its bytes and its record.
    c.range("C (not discarded)", m[2].ptr, MIB)?
        .last_prefetch(Dev(0));
    let on_device = device_view(&dev, m[2].ptr, words)?;
    c.that(
        on_device == pats[2],
        "C (not discarded) changed on the device",
    );
    let on_host = m[2].words()[..] == pats[2][..];
    c.that(on_host, "C (not discarded) changed on the host");
    let b_rest = m[1].words()[words / 2..] == pats[1][words / 2..];
    c.that(b_rest, "second half of B (not discarded) changed");

    // Discarded memory is written (the host writes A, the device the first
    // half of B) and then reads back exactly.
    let new_a = pattern(0xA11A, words);
    m[0].words().copy_from_slice(&new_a);
    c.ok(cu!(cuMemsetD32(m[1].ptr, 0x0B0B_0B0B, words / 2)));
    c.ok(cu!(cuCtxSynchronize()));
    let on_device = device_view(&dev, m[0].ptr, words)?;
    c.that(
        on_device == new_a,
        "A rewritten on the host reads wrong on the device",
    );
    let on_host = m[0].words()[..] == new_a[..];
    c.that(on_host, "A rewritten on the host reads wrong on the host");
    let b = m[1].words();
    let b_first = b[..words / 2].iter().all(|&w| w == 0x0B0B_0B0B);
    c.that(b_first, "B rewritten on the device reads wrong on the host");
    let b_rest = b[words / 2..] == pats[1][words / 2..];
    c.that(b_rest, "second half of B changed after the rewrite");
    let bd = device_view(&dev, m[1].ptr, words)?;
    let b_dev = bd[..words / 2].iter().all(|&w| w == 0x0B0B_0B0B);
    c.that(b_dev, "B rewritten on the device reads wrong on the device");

    // A prefetch after a discard is recorded as usual.
    c.ok(cu!(cuMemDiscardBatchAsync(d, z, 1, 0, s)));
    c.prefetch(m[0].ptr, MIB, Host(0), s);
    c.ok(stream.sync());
    let what = "A discarded then prefetched to host";
    c.range(what, m[0].ptr, MIB)?.last_prefetch(Host(0));
    m[0].words().copy_from_slice(&pats[0]);
    let on_device = device_view(&dev, m[0].ptr, words)?;
    c.that(
        on_device == pats[0],
        "A rewritten after prefetch reads wrong on the device",
    );
    c.finish()
}

#[cfg(cuda_13000)]
fn discard_and_prefetch_batch() -> TestResult {
    let gpu = Gpu::new(0)?;
    let mut c = Checks::new();
    let numa = host_numa(&gpu)?;
    let stream = CuStream::new()?;
    let dev = DeviceBuf::new(MIB)?;
    let (m, _) = batch_ranges(4, 0xDA00)?;
    let words = MIB / 4;
    let names = ["A", "B", "C", "D"];

    // A, B -> device 0; C, D -> host.
    let mut dptrs = [m[0].ptr, m[1].ptr, m[2].ptr, m[3].ptr];
    let mut locs = [dev_loc(0), Host(0).loc()];
    c.ok(batch_call(
        true,
        &mut dptrs,
        &mut [MIB; 4],
        &mut locs,
        &mut [0, 2],
        stream.0,
    ));
    c.ok(stream.sync());
    for i in 0..4 {
        let name = format!("discard+prefetch 1: {}", names[i]);
        let want = if i < 2 { Dev(0) } else { Host(0) };
        c.range(&name, m[i].ptr, MIB)?.last_prefetch(want);
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
        let on_device = device_view(&dev, m[i].ptr, words)?;
        c.that(
            on_device == want,
            format!("{}: device view after rewrite differs", names[i]),
        );
        let on_host = m[i].words()[..] == want[..];
        c.that(
            on_host,
            format!("{}: host view after rewrite differs", names[i]),
        );
    }

    // A, B, C -> host NUMA; D -> device 0.
    let mut locs = [Numa(numa).loc(), dev_loc(0)];
    c.ok(batch_call(
        true,
        &mut dptrs,
        &mut [MIB; 4],
        &mut locs,
        &mut [0, 3],
        stream.0,
    ));
    c.ok(stream.sync());
    for i in 0..4 {
        let name = format!("discard+prefetch 2: {}", names[i]);
        let want = if i < 3 { Numa(numa) } else { Dev(0) };
        c.range(&name, m[i].ptr, MIB)?.last_prefetch(want);
        m[i].words().copy_from_slice(&fresh[3 - i]);
        let on_device = device_view(&dev, m[i].ptr, words)?;
        c.that(
            on_device == fresh[3 - i],
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
    common::vmm::set_access(va, 2 * g, &[rw])?;
    // Bytes into both, then B becomes read-only. A copy from pageable memory
    // may still be under way when cuMemcpyHtoD returns (NVIDIA's "API
    // synchronization behavior"): synchronised before B's access changes.
    let da = pattern(0x7A, g / 4);
    let db = pattern(0x7B, g / 4);
    cu!(cuMemcpyHtoD(va, da.as_ptr().cast(), g))?;
    cu!(cuMemcpyHtoD(va + g as u64, db.as_ptr().cast(), g))?;
    cu!(cuCtxSynchronize())?;
    common::vmm::set_access(va + g as u64, g, &[ro])?;
    common::vmm::read_back(va, g, &[rw])?;

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
            common::vmm::set_access(vc, g, &[rw])?;
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

fn bad_advise() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let probe = DeviceBuf::new(256)?;
    let mut c = BadInput::round_trip(probe.ptr, 256);
    typed_attributes_note();
    let m = Managed::new(2 * MIB)?;
    let d = DeviceBuf::new(MIB)?;
    let stack = [0u8; 4096];
    let stack_ptr = stack.as_ptr() as CUdeviceptr;
    let heap = vec![0u8; 64 * KIB];
    let heap_ptr = heap.as_ptr() as CUdeviceptr;
    let inval = CUDA_ERROR_INVALID_VALUE;
    let (p, n) = (m.ptr, m.size);

    // A device ordinal past the last device. The location form (13.0 on)
    // answers CUDA_ERROR_INVALID_VALUE (measured; the docs list it besides
    // CUDA_ERROR_INVALID_DEVICE); the CUdevice form, which the releases
    // before 13.0 use for a device, answers CUDA_ERROR_INVALID_DEVICE,
    // another of cuMemAdvise's documented codes (measured, H100, driver
    // 580.159: runs 20 and 21 in docs/device-results.md, 12.2..12.9).
    let no_such_device = if cfg!(cuda_13000) {
        inval
    } else {
        CUDA_ERROR_INVALID_DEVICE
    };
    // (code, pointer, count, advice, location, case); the cases of a
    // location only the location form says are skipped before 12.2.
    #[rustfmt::skip]
    let cases = [
        (inval, p, n, 0, Dev(0), "cuMemAdvise(advice 0)"),
        (inval, p, n, 7, Dev(0), "cuMemAdvise(advice 7)"),
        (inval, p, n, 0x7FFF_FFFF, Dev(0), "cuMemAdvise(advice 0x7fffffff)"),
        (inval, p, 0, 1, Dev(0), "cuMemAdvise(count 0)"),
        (inval, 0, n, 1, Dev(0), "cuMemAdvise(null pointer)"),
        (inval, d.ptr, MIB, 1, Dev(0), "cuMemAdvise(cuMemAlloc memory)"),
        (inval, stack_ptr, 4096, 3, Dev(0), "cuMemAdvise(stack memory)"),
        (inval, p, n + 4 * MIB, 1, Dev(0), "cuMemAdvise(range past the allocation)"),
        (no_such_device, p, n, 3, Dev(64), "cuMemAdvise(PREFERRED, device 64)"),
        (inval, p, n, 3, Dev(-5), "cuMemAdvise(PREFERRED, device -5)"),
        (no_such_device, p, n, 5, Dev(64), "cuMemAdvise(ACCESSED_BY, device 64)"),
        (inval, p, n, 3, Kind(99, 0), "cuMemAdvise(PREFERRED, location type 99)"),
        (inval, p, n, 3, Nowhere, "cuMemAdvise(PREFERRED, location type INVALID)"),
        (inval, p, n, 3, Numa(100_000), "cuMemAdvise(PREFERRED, host NUMA 100000)"),
    ];
    for (want, ptr, len, advice, at, what) in cases {
        if let Some(r) = said(mem_advise(ptr, len, CUmem_advise_enum(advice), at), what) {
            c.cu(want, r, what);
        }
    }
    // None of the failed calls left any advice behind.
    let after = c.range("after bad advice", p, n)?.read_mostly(0);
    after.preferred(Nowhere).accessed_by(&[]);

    // cuMemRangeGetAttribute
    let mut v = [SENT_I32; 4];
    let vp: *mut c_void = v.as_mut_ptr().cast();
    let rm = CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY.0;
    let by = CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY.0;
    // (data, dataSize, attribute, pointer, count, case)
    for (data, size, a, ptr, len, what) in [
        (vp, 8, rm, p, n, "READ_MOSTLY, dataSize 8"),
        (vp, 2, rm, p, n, "READ_MOSTLY, dataSize 2"),
        (vp, 0, rm, p, n, "dataSize 0"),
        (vp, 6, by, p, n, "ACCESSED_BY, dataSize 6"),
        (vp, 4, 0, p, n, "attribute 0"),
        (vp, 4, 99, p, n, "attribute 99"),
        (null_mut(), 4, rm, p, n, "null data"),
        (vp, 4, rm, p, 0, "count 0"),
        (vp, 4, rm, 0, n, "null pointer"),
        (vp, 4, rm, d.ptr, MIB, "cuMemAlloc memory"),
        (vp, 4, rm, heap_ptr, 4096, "heap memory"),
        (vp, 4, rm, p, n + 4 * MIB, "range past the allocation"),
    ] {
        let a = CUmem_range_attribute_enum(a);
        let r = unsafe { cuMemRangeGetAttribute(data, size, a, ptr, len) };
        c.cu(inval, r, &format!("cuMemRangeGetAttribute({what})"));
    }
    let what = "cuMemRangeGetAttribute(PREFERRED_LOCATION_TYPE, dataSize 8)";
    #[cfg(cuda_12020)]
    {
        let pt = CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE;
        c.cu(
            inval,
            unsafe { cuMemRangeGetAttribute(vp, 8, pt, p, n) },
            what,
        );
    }
    #[cfg(not(cuda_12020))]
    skipped(what, NO_TYPED_ATTRIBUTES);
    c.eq(
        "range attribute output after failed calls",
        v,
        [SENT_I32; 4],
    );

    // cuMemRangeGetAttributes
    let (mut a, mut b) = (SENT_I32, SENT_I32);
    let mut data: [*mut c_void; 2] = [(&mut a as *mut i32).cast(), (&mut b as *mut i32).cast()];
    let mut attrs = [
        CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
        CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION,
    ];
    let mut bad_attrs = [
        CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
        CUmem_range_attribute_enum(99),
    ];
    let (mut sizes, mut bad_sizes) = ([4usize, 4], [4usize, 8]);
    let (dp, zs, ats) = (data.as_mut_ptr(), sizes.as_mut_ptr(), attrs.as_mut_ptr());
    let (bad_z, bad_a) = (bad_sizes.as_mut_ptr(), bad_attrs.as_mut_ptr());
    // (data, dataSizes, attributes, numAttributes, pointer, count, case)
    for (data, sizes, attrs, k, ptr, len, what) in [
        (dp, bad_z, ats, 2, p, n, "one dataSize wrong"),
        (dp, zs, bad_a, 2, p, n, "one attribute 99"),
        (null_mut(), zs, ats, 2, p, n, "null data"),
        (dp, null_mut(), ats, 2, p, n, "null dataSizes"),
        (dp, zs, null_mut(), 2, p, n, "null attributes"),
        (dp, zs, ats, 0, p, n, "numAttributes 0"),
        (dp, zs, ats, 2, d.ptr, MIB, "cuMemAlloc memory"),
    ] {
        let r = unsafe { cuMemRangeGetAttributes(data, sizes, attrs, k, ptr, len) };
        c.cu(inval, r, &format!("cuMemRangeGetAttributes({what})"));
    }
    // And the good call still answers.
    c.ok(cu!(cuMemRangeGetAttributes(dp, zs, ats, 2, p, n)));
    let good = "good cuMemRangeGetAttributes after bad ones";
    c.eq(good, (a, b), (0, CU_DEVICE_INVALID));
    drop(heap);
    c.finish()
}

fn bad_prefetch() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let probe = DeviceBuf::new(256)?;
    let mut c = BadInput::round_trip(probe.ptr, 256);
    typed_attributes_note();
    let m = Managed::new(2 * MIB)?;
    let d = DeviceBuf::new(MIB)?;
    let stream = CuStream::new()?;
    let s = stream.0;
    let stack = [0u8; 4096];
    let stack_ptr = stack.as_ptr() as CUdeviceptr;
    // A device that does not exist: cuMemPrefetchAsync answers
    // CUDA_ERROR_INVALID_DEVICE (in both forms), cuMemPrefetchBatchAsync
    // CUDA_ERROR_INVALID_VALUE (both documented codes of these calls; measured).
    //
    // Not tested: prefetchLocIdxs that do not increase ({0, 0}), which the
    // docs forbid, are accepted by driver 580.159 (CUDA_SUCCESS, and the
    // prefetch happens).
    let inval = CUDA_ERROR_INVALID_VALUE;
    let (p, n) = (m.ptr, m.size);

    // (code, pointer, count, location, flags, case); flags and the cases of
    // a location only the location form says are skipped before 12.2.
    #[rustfmt::skip]
    let cases = [
        (inval, d.ptr, MIB, Dev(0), 0, "cuMemPrefetchAsync(cuMemAlloc memory)"),
        (inval, stack_ptr, 4096, Dev(0), 0, "cuMemPrefetchAsync(stack memory)"),
        (inval, 0, n, Dev(0), 0, "cuMemPrefetchAsync(null pointer)"),
        (inval, p, 0, Dev(0), 0, "cuMemPrefetchAsync(count 0)"),
        (inval, p, n, Dev(0), 1, "cuMemPrefetchAsync(flags 1)"),
        (inval, p, n + 4 * MIB, Dev(0), 0, "cuMemPrefetchAsync(range past the allocation)"),
        (CUDA_ERROR_INVALID_DEVICE, p, n, Dev(64), 0, "cuMemPrefetchAsync(device 64)"),
        (inval, p, n, Nowhere, 0, "cuMemPrefetchAsync(location type INVALID)"),
        (inval, p, n, Kind(99, 0), 0, "cuMemPrefetchAsync(location type 99)"),
    ];
    for (want, ptr, len, at, flags, what) in cases {
        if let Some(r) = said(mem_prefetch(ptr, len, at, flags, s), what) {
            c.cu(want, r, what);
        }
    }
    c.ok(stream.sync());
    let after = "after bad prefetches (nothing recorded)";
    c.range(after, p, n)?.last_prefetch(Nowhere);

    // Batches (13.0 and later; the skip is printed): two ranges (the two halves).
    #[cfg(cuda_13000)]
    {
        let half = n / 2;
        let mut dptrs = [p, p + half as u64];
        let mut sizes = [half, half];
        let mut locs = [dev_loc(0), Host(0).loc()];
        let (mut with_device_mem, mut zero_size, mut bad_loc) =
            ([p, d.ptr], [half, 0], [dev_loc(64)]);
        let (dpp, szp, lp) = (dptrs.as_mut_ptr(), sizes.as_mut_ptr(), locs.as_mut_ptr());
        let (dm, zs, bl) = (
            with_device_mem.as_mut_ptr(),
            zero_size.as_mut_ptr(),
            bad_loc.as_mut_ptr(),
        );
        let legacy = cu_stream_legacy();
        // (dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, stream, case)
        #[rustfmt::skip]
        let prefetches: [(_, _, _, _, &[usize], _, _, _, _); 13] = [
            (dpp, szp, 2, lp, &[0, 1], 2, 0, null_mut(), "legacy NULL stream"),
            (dpp, szp, 2, lp, &[0, 1], 2, 0, legacy, "CU_STREAM_LEGACY"),
            (dpp, szp, 2, lp, &[0, 1], 2, 1, s, "flags 1"),
            (dpp, szp, 0, lp, &[0, 1], 2, 0, s, "count 0"),
            (dpp, szp, 2, lp, &[0, 1], 0, 0, s, "numPrefetchLocs 0"),
            (dpp, szp, 2, lp, &[0, 1, 1], 3, 0, s, "numPrefetchLocs > count"),
            (dpp, szp, 2, lp, &[1, 1], 2, 0, s, "prefetchLocIdxs[0] = 1"),
            (dpp, szp, 2, lp, &[0, 2], 2, 0, s, "prefetchLocIdxs[1] = count"),
            (null_mut(), szp, 2, lp, &[0], 1, 0, s, "null dptrs"),
            (dpp, szp, 2, null_mut(), &[0], 1, 0, s, "null prefetchLocs"),
            (dm, szp, 2, lp, &[0], 1, 0, s, "cuMemAlloc memory in the batch"),
            (dpp, zs, 2, lp, &[0], 1, 0, s, "a size 0"),
            (dpp, szp, 2, bl, &[0], 1, 0, s, "device 64"),
        ];
        for (dptrs, sizes, count, locs, idxs, nlocs, flags, stream, what) in prefetches {
            let mut idxs = idxs.to_vec();
            let i = idxs.as_mut_ptr();
            let r = unsafe {
                cuMemPrefetchBatchAsync(dptrs, sizes, count, locs, i, nlocs, flags, stream)
            };
            c.cu(inval, r, &format!("cuMemPrefetchBatchAsync({what})"));
        }
        // (prefetchLocIdxs, numPrefetchLocs, flags, stream, case) of two ranges
        #[rustfmt::skip]
        let discard_prefetches: [(&[usize], _, _, _, _); 4] = [
            (&[0, 1], 2, 0, null_mut(), "NULL stream"),
            (&[0, 1], 2, 1, s, "flags 1"),
            (&[1, 1], 2, 0, s, "idxs[0] = 1"),
            (&[0, 1, 1], 3, 0, s, "numPrefetchLocs > count"),
        ];
        for (idxs, nlocs, flags, stream, what) in discard_prefetches {
            let mut idxs = idxs.to_vec();
            let i = idxs.as_mut_ptr();
            let r = unsafe {
                cuMemDiscardAndPrefetchBatchAsync(dpp, szp, 2, lp, i, nlocs, flags, stream)
            };
            let what = format!("cuMemDiscardAndPrefetchBatchAsync({what})");
            c.cu(inval, r, &what);
        }
        // (dptrs, count, flags, stream, case)
        #[rustfmt::skip]
        let discards = [
            (dpp, 2, 0, null_mut(), "legacy NULL stream"),
            (dpp, 2, 1, s, "flags 1"),
            (dpp, 0, 0, s, "count 0"),
            (dm, 2, 0, s, "cuMemAlloc memory in the batch"),
            (null_mut(), 2, 0, s, "null dptrs"),
        ];
        for (dptrs, count, flags, stream, what) in discards {
            let r = unsafe { cuMemDiscardBatchAsync(dptrs, szp, count, flags, stream) };
            c.cu(inval, r, &format!("cuMemDiscardBatchAsync({what})"));
        }
        c.ok(stream.sync());
        // No rejected batch got as far as the second half: nothing is recorded
        // for it.
        let second = "after bad batches: second half (nothing recorded)";
        c.range(second, dptrs[1], half)?.last_prefetch(Nowhere);
        // Not asserted: a batch rejected because of a later range (a size 0, a
        // cuMemAlloc pointer) may already have prefetched the earlier ranges; on
        // driver 580.159 the first half reads back as prefetched to device 0
        // (the docs say nothing about partial batches).
        let first = c.range("after bad batches: first half", dptrs[0], half)?.s;
        let (ty, id) = first.last_prefetch_loc;
        println!(
            "after bad batches, first half: LAST_PREFETCH_LOCATION_TYPE {} id {id}",
            ty.0
        );
        // And a good batch still works.
        let mut idx = [0usize, 1];
        let i = idx.as_mut_ptr();
        c.ok(cu!(cuMemPrefetchBatchAsync(dpp, szp, 2, lp, i, 2, 0, s)));
        c.ok(stream.sync());
        let good = "good batch after bad ones: second half";
        c.range(good, dptrs[1], half)?.last_prefetch(Host(0));
    }
    #[cfg(not(cuda_13000))]
    skipped("bad batches", BATCH_NOT_IN_RELEASE);
    c.finish()
}

fn bad_pointer() -> TestResult {
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
    // (data, attribute, pointer, case)
    let (a0, a99) = (CUpointer_attribute_enum(0), CUpointer_attribute_enum(99));
    let past = d.ptr + MIB as u64 + 4096;
    let freed = DeviceBuf::new(MIB)?.ptr; // freed at the end of the statement
    for (data, a, ptr, what) in [
        (null_mut(), mt, d.ptr, "null data"),
        (op, a0, d.ptr, "attribute 0"),
        (op, a99, d.ptr, "attribute 99"),
        (op, mt, past, "past the allocation"),
        (op, mt, freed, "freed allocation"),
    ] {
        c.cu(
            inval,
            get(data, a, ptr),
            &format!("cuPointerGetAttribute({what})"),
        );
    }
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
        Err(e) => c.fail(format!(
            "cuPointerGetAttributes(stack pointer) returned {}",
            common::error_name(e)
        )),
    }
    c.still_works_after("cuPointerGetAttributes(stack pointer)");
    let mut attrs = [mt, CU_POINTER_ATTRIBUTE_IS_MANAGED];
    let mut bad_attrs = [mt, CUpointer_attribute_enum(99)];
    let (mut x, mut y) = (SENT_A, SENT_A);
    let mut data: [*mut c_void; 2] = [(&mut x as *mut u64).cast(), (&mut y as *mut u64).cast()];
    let dp = data.as_mut_ptr();
    let (ap, bad_ap) = (attrs.as_mut_ptr(), bad_attrs.as_mut_ptr());
    // (numAttributes, attributes, data, case)
    for (k, attrs, data, what) in [
        (2, null_mut(), dp, "null attributes"),
        (2, ap, null_mut(), "null data"),
        (0, ap, dp, "numAttributes 0"),
        (2, bad_ap, dp, "attribute 99"),
    ] {
        let r = unsafe { cuPointerGetAttributes(k, attrs, data, d.ptr) };
        c.cu(inval, r, &format!("cuPointerGetAttributes({what})"));
    }
    c.ok(cu!(cuPointerGetAttributes(2, ap, dp, d.ptr)));
    c.eq(
        "good cuPointerGetAttributes after bad ones",
        (low(x, 4), low(y, 4)),
        (CU_MEMORYTYPE_DEVICE.0 as u64, 0),
    );

    // cuPointerSetAttribute: only SYNC_MEMOPS can be set.
    let one = 1u32;
    let vp: *const c_void = (&one as *const u32).cast();
    let sm = CU_POINTER_ATTRIBUTE_SYNC_MEMOPS;
    // (value, attribute, pointer, case)
    for (v, a, ptr, what) in [
        (vp, CU_POINTER_ATTRIBUTE_IS_MANAGED, d.ptr, "IS_MANAGED"),
        (vp, mt, d.ptr, "MEMORY_TYPE"),
        (vp, a99, d.ptr, "attribute 99"),
        (vp, sm, stack_ptr, "SYNC_MEMOPS, stack pointer"),
        (vp, sm, 0, "SYNC_MEMOPS, null pointer"),
        (null(), sm, d.ptr, "null value"),
    ] {
        let r = unsafe { cuPointerSetAttribute(v, a, ptr) };
        c.cu(inval, r, &format!("cuPointerSetAttribute({what})"));
    }
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

fn bad_input_advise_and_range_attributes() -> TestResult {
    in_child("bad_advise")
}

fn bad_input_prefetch_and_batches() -> TestResult {
    in_child("bad_prefetch")
}

fn bad_input_pointer_attributes() -> TestResult {
    in_child("bad_pointer")
}

fn main() {
    let tests = device_tests![
        advise_read_mostly,
        advise_preferred_location_every_location_type,
        advise_accessed_by,
        advise_rounds_to_cpu_pages,
        range_attributes_several_at_once,
        system_allocated_memory,
        prefetch_round_trip,
        prefetch_batch if cfg(cuda_13000) else "`cuMemPrefetchBatchAsync`: not in this release (added in 13.0)",
        discard_batch if cfg(cuda_13000) else "`cuMemDiscardBatchAsync`: not in this release (added in 13.0)",
        discard_and_prefetch_batch if cfg(cuda_13000) else "`cuMemDiscardAndPrefetchBatchAsync`: not in this release (added in 13.0)",
        pointer_attributes_device_memory,
        pointer_attributes_managed,
        pointer_attributes_host_pinned,
        pointer_attributes_vmm,
        pointer_attributes_pool,
        pointer_set_attribute_sync_memops,
        bad_input_advise_and_range_attributes,
        bad_input_prefetch_and_batches,
        bad_input_pointer_attributes,
    ];
    let roles: &[common::ChildRole] = &[
        ("bad_advise", || child(bad_advise)),
        ("bad_prefetch", || child(bad_prefetch)),
        ("bad_pointer", || child(bad_pointer)),
    ];
    common::main(tests, roles);
}
