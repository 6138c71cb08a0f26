//! Memory, stream and event helpers of the device tests, and the one byte
//! pattern they write and compare.
#[cfg(cuda_12020)]
use super::Gpu;
use super::TestResult;
use core::ffi::c_void;
use core::ptr::null_mut;
use cuda_mem_sys::*;
use libtest_mimic::Failed;

/// `n` bytes that differ from one seed to the next at every byte (for seeds
/// that differ modulo 256) and along the buffer (not periodic in any power of
/// two below 64 KiB).
pub fn pattern(n: usize, seed: u32) -> Vec<u8> {
    (0..n)
        .map(|i| {
            let i = i as u32;
            (i.wrapping_mul(2_654_435_761) >> 13)
                .wrapping_add(seed.wrapping_mul(97))
                .wrapping_add(i >> 16) as u8
        })
        .collect()
}

/// Where `got` first differs from `want`, for failure messages.
pub fn first_difference(got: &[u8], want: &[u8]) -> String {
    match got.iter().zip(want).position(|(a, b)| a != b) {
        Some(i) => format!(
            "first difference at byte {i}: {:#04x}, expected {:#04x} ({} of {} bytes differ)",
            got[i],
            want[i],
            got.iter().zip(want).filter(|(a, b)| a != b).count(),
            got.len()
        ),
        None if got.len() != want.len() => {
            format!("{} bytes, expected {}", got.len(), want.len())
        }
        None => "equal".into(),
    }
}

/// `Ok` if `got` is `want`, else a failure naming `what` and the first difference.
pub fn same(got: &[u8], want: &[u8], what: &str) -> TestResult {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: {}", first_difference(got, want)).into())
    }
}

/// `Ok` if the device memory at `ptr` holds `want` (`cuMemcpyDtoH` of as
/// many bytes), else a failure naming `what` and the first difference.
pub fn reads(ptr: CUdeviceptr, want: &[u8], what: &str) -> TestResult {
    same(&read(ptr, want.len())?, want, what)
}

/// Writes `pattern(n, seed)` to the device memory at `ptr` and reads it back:
/// `Ok` if the bytes came back, else a failure naming `what`.
pub fn round_trip(ptr: CUdeviceptr, n: usize, seed: u32, what: &str) -> TestResult {
    let data = pattern(n, seed);
    write(ptr, &data)?;
    reads(ptr, &data, what)
}

/// Copies `data` to device memory at `ptr` (`cuMemcpyHtoD`).
pub fn write(ptr: CUdeviceptr, data: &[u8]) -> TestResult {
    cu!(cuMemcpyHtoD(ptr, data.as_ptr().cast(), data.len()))
}

/// `n` bytes of device memory at `ptr` (`cuMemcpyDtoH`).
pub fn read(ptr: CUdeviceptr, n: usize) -> Result<Vec<u8>, Failed> {
    let mut v = vec![0u8; n];
    cu!(cuMemcpyDtoH(v.as_mut_ptr().cast(), ptr, n))?;
    Ok(v)
}

/// Device memory from `cuMemAlloc`; freed on drop.
pub struct DeviceBuf {
    pub ptr: CUdeviceptr,
    pub len: usize,
}

impl DeviceBuf {
    pub fn new(len: usize) -> Result<DeviceBuf, Failed> {
        let mut ptr = 0;
        cu!(cuMemAlloc(&mut ptr, len))?;
        Ok(DeviceBuf { ptr, len })
    }

    /// A buffer holding `data`.
    pub fn with(data: &[u8]) -> Result<DeviceBuf, Failed> {
        let b = DeviceBuf::new(data.len())?;
        b.write(data)?;
        Ok(b)
    }

    pub fn write(&self, data: &[u8]) -> TestResult {
        assert!(data.len() <= self.len);
        write(self.ptr, data)
    }

    /// The whole buffer.
    pub fn read(&self) -> Result<Vec<u8>, Failed> {
        read(self.ptr, self.len)
    }
}

impl Drop for DeviceBuf {
    fn drop(&mut self) {
        unsafe { cuMemFree(self.ptr) };
    }
}

/// Page-locked host memory from the runtime (`cudaMallocHost`), for copies
/// that must not block the host thread; freed on drop.
pub struct PageLocked {
    ptr: *mut u8,
    len: usize,
}

impl PageLocked {
    pub fn new(len: usize) -> Result<PageLocked, Failed> {
        let mut p: *mut c_void = null_mut();
        rt!(cudaMallocHost(&mut p, len))?;
        Ok(PageLocked { ptr: p.cast(), len })
    }
    pub fn with(data: &[u8]) -> Result<PageLocked, Failed> {
        let mut p = PageLocked::new(data.len())?;
        p.as_mut_slice().copy_from_slice(data);
        Ok(p)
    }
    pub fn as_slice(&self) -> &[u8] {
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
    pub fn vptr(&self) -> *mut c_void {
        self.ptr.cast()
    }
    /// Frees it now (`cudaFreeHost`), checked.
    pub fn free(self) -> TestResult {
        let p = std::mem::ManuallyDrop::new(self);
        rt!(cudaFreeHost(p.vptr()))
    }
}

impl Drop for PageLocked {
    fn drop(&mut self) {
        unsafe { cudaFreeHost(self.ptr.cast()) };
    }
}

/// A handle owned by a wrapper `$name(pub $ty)` and destroyed on drop by
/// `$destroy`; with `new = |h| create`, also `$name::new()`: a null `h`
/// handed to `create` (a `cu!`/`rt!` call that fills it in).
#[macro_export]
macro_rules! owned_handle {
    ($(#[$m:meta])* $name:ident($ty:ty), $destroy:ident $(, new = |$h:ident| $create:expr)?) => {
        $(#[$m])*
        pub struct $name(pub $ty);
        impl Drop for $name {
            fn drop(&mut self) {
                unsafe { $destroy(self.0) };
            }
        }
        $(impl $name {
            pub fn new() -> Result<$name, libtest_mimic::Failed> {
                let mut $h: $ty = core::ptr::null_mut();
                $create?;
                Ok($name($h))
            }
        })?
    };
}

owned_handle!(
    /// A non-blocking driver stream (`cuStreamCreate`); destroyed on drop.
    CuStream(CUstream), cuStreamDestroy,
    new = |s| cu!(cuStreamCreate(&mut s, CU_STREAM_NON_BLOCKING.0))
);
owned_handle!(
    /// A non-blocking runtime stream (`cudaStreamCreateWithFlags`); destroyed on drop.
    RtStream(cudaStream_t), cudaStreamDestroy,
    new = |s| rt!(cudaStreamCreateWithFlags(&mut s, cudaStreamNonBlocking))
);
owned_handle!(
    /// A driver event without timing (`cuEventCreate`); destroyed on drop.
    CuEvent(CUevent), cuEventDestroy,
    new = |e| cu!(cuEventCreate(&mut e, CU_EVENT_DISABLE_TIMING.0))
);
owned_handle!(
    /// A runtime event without timing (`cudaEventCreateWithFlags`); destroyed on drop.
    RtEvent(cudaEvent_t), cudaEventDestroy,
    new = |e| rt!(cudaEventCreateWithFlags(&mut e, cudaEventDisableTiming))
);

impl CuStream {
    pub fn sync(&self) -> TestResult {
        cu!(cuStreamSynchronize(self.0))
    }
}

impl RtStream {
    pub fn sync(&self) -> TestResult {
        rt!(cudaStreamSynchronize(self.0))
    }
}

/// `CUmemLocation { type_, id }`, on every release: from CUDA 13.2 `id` sits in
/// an anonymous union, which the bindings reach through `Deref` (assignment
/// compiles on both forms, a struct literal does not).
pub fn cu_loc(type_: CUmemLocationType, id: i32) -> CUmemLocation {
    // SAFETY: plain old data; every field is then written.
    let mut loc: CUmemLocation = unsafe { core::mem::zeroed() };
    loc.type_ = type_;
    loc.id = id;
    loc
}

/// `cudaMemLocation { type_, id }`, on every release (`id` in an anonymous
/// union from 13.3).
pub fn rt_loc(type_: cudaMemLocationType, id: i32) -> cudaMemLocation {
    // SAFETY: plain old data; every field is then written.
    let mut loc: cudaMemLocation = unsafe { core::mem::zeroed() };
    loc.type_ = type_;
    loc.id = id;
    loc
}

/// A location's `id`, on every release (a union member from 13.2, whose read
/// is `unsafe`; every member of that union is an `int`-sized id).
#[allow(unused_unsafe)]
pub fn cu_loc_id(loc: &CUmemLocation) -> i32 {
    // SAFETY: the union's members are all 4-byte ids written as `id`.
    unsafe { loc.id }
}

/// A runtime location's `id`, on every release (a union member from 13.3).
#[allow(unused_unsafe)]
pub fn rt_loc_id(loc: &cudaMemLocation) -> i32 {
    // SAFETY: as for [`cu_loc_id`].
    unsafe { loc.id }
}

/// The three things the tests mean by a host NUMA id, one function each
/// (`CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID` is in the headers from 12.2).
#[cfg(cuda_12020)]
impl Gpu {
    /// `CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID`, the node closest to the GPU; fails
    /// where the device reports none (-1).
    pub fn host_numa_node(&self) -> Result<i32, Failed> {
        let id = self.attribute(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID)?;
        let dev = self.dev;
        let why =
            format!("device {dev} has no host NUMA node (CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID = {id})");
        ensure!(id >= 0, "{why}");
        Ok(id)
    }

    /// `CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID`, or 0 where the system has no NUMA
    /// (-1): the id a `CU_MEM_LOCATION_TYPE_HOST_NUMA` location must then carry.
    pub fn host_numa_node_or_0(&self) -> Result<i32, Failed> {
        Ok(self.attribute(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID)?.max(0))
    }

    /// `CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID`, or, where the device reports none,
    /// the node of the calling thread's CPU.
    pub fn host_numa_node_or_thread_node(&self) -> Result<i32, Failed> {
        let id = self.attribute(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID)?;
        Ok(if id >= 0 {
            id
        } else {
            super::os::getcpu().1 as i32
        })
    }
}
