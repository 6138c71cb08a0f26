//! What the device tests ask of the operating system besides CUDA, written
//! once for Linux and once for Windows: the CPU and NUMA node of the calling
//! thread, the CPU page size, and pinning the calling thread to its CPU.
//!
//! The Windows side declares the four `kernel32` functions it calls (every
//! Rust program on Windows links `kernel32`). Both sides are run without a
//! GPU by `tests/os_helpers.rs`: on Linux, and for `x86_64-pc-windows-msvc`
//! under Wine (`cargo xtask msvc`).

/// The CPU and the NUMA node the calling thread runs on (`getcpu(2)`).
#[cfg(not(windows))]
pub fn getcpu() -> (u32, u32) {
    let (mut cpu, mut node) = (0u32, 0u32);
    // SAFETY: getcpu writes two u32s through valid pointers; its third
    // argument is unused since Linux 2.6.24 and may be null.
    unsafe {
        libc::syscall(
            libc::SYS_getcpu,
            &mut cpu as *mut u32,
            &mut node as *mut u32,
            core::ptr::null_mut::<core::ffi::c_void>(),
        )
    };
    (cpu, node)
}

/// The CPU page size (`sysconf(_SC_PAGESIZE)`).
#[cfg(not(windows))]
pub fn page_size() -> usize {
    // SAFETY: sysconf reads a constant.
    (unsafe { libc::sysconf(libc::_SC_PAGESIZE) }) as usize
}

/// The calling thread pinned to the CPU it is on, the old affinity restored
/// on drop, so that "the host NUMA node closest to the calling thread's CPU"
/// is one known node.
pub struct PinnedThread {
    #[cfg(not(windows))]
    old: libc::cpu_set_t,
    #[cfg(windows)]
    old: win::GroupAffinity,
    /// The CPU the thread is pinned to (on Windows, its number in its group).
    pub cpu: u32,
    /// That CPU's NUMA node.
    pub node: i32,
}

#[cfg(not(windows))]
impl PinnedThread {
    pub fn here() -> Result<PinnedThread, String> {
        let size = core::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: cpu_set_t is plain bytes; sched_{get,set}affinity read and
        // write `size` bytes of it for the calling thread (pid 0).
        unsafe {
            let mut old: libc::cpu_set_t = core::mem::zeroed();
            if libc::sched_getaffinity(0, size, &mut old) != 0 {
                return Err("sched_getaffinity failed".into());
            }
            let (cpu, _) = getcpu();
            let mut set: libc::cpu_set_t = core::mem::zeroed();
            libc::CPU_SET(cpu as usize, &mut set);
            if libc::sched_setaffinity(0, size, &set) != 0 {
                return Err("sched_setaffinity failed".into());
            }
            PinnedThread::checked(PinnedThread { old, cpu, node: 0 })
        }
    }
}

#[cfg(not(windows))]
impl Drop for PinnedThread {
    fn drop(&mut self) {
        let size = core::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: as in `here`.
        unsafe { libc::sched_setaffinity(0, size, &self.old) };
    }
}

impl PinnedThread {
    /// `p` once the thread is seen on its CPU, with that CPU's node.
    pub fn checked(mut p: PinnedThread) -> Result<PinnedThread, String> {
        let (now, node) = getcpu();
        if now != p.cpu {
            return Err(format!("pinned to CPU {} but running on {now}", p.cpu));
        }
        p.node = node as i32;
        Ok(p)
    }
}

#[cfg(windows)]
#[allow(unused_imports)]
pub use win::{getcpu, page_size};

#[cfg(windows)]
mod win {
    use super::PinnedThread;
    use core::ffi::c_void;

    /// `PROCESSOR_NUMBER`.
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct ProcessorNumber {
        group: u16,
        number: u8,
        reserved: u8,
    }

    /// `GROUP_AFFINITY`.
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    pub struct GroupAffinity {
        mask: usize,
        group: u16,
        reserved: [u16; 3],
    }

    /// `SYSTEM_INFO`.
    #[repr(C)]
    struct SystemInfo {
        oem_id: u32,
        page_size: u32,
        minimum_application_address: *mut c_void,
        maximum_application_address: *mut c_void,
        active_processor_mask: usize,
        number_of_processors: u32,
        processor_type: u32,
        allocation_granularity: u32,
        processor_level: u16,
        processor_revision: u16,
    }

    #[link(name = "kernel32")]
    extern "system" {
        fn GetCurrentProcessorNumberEx(number: *mut ProcessorNumber);
        fn GetNumaProcessorNodeEx(number: *const ProcessorNumber, node: *mut u16) -> i32;
        fn GetCurrentThread() -> *mut c_void;
        fn SetThreadGroupAffinity(
            thread: *mut c_void,
            affinity: *const GroupAffinity,
            previous: *mut GroupAffinity,
        ) -> i32;
        fn GetSystemInfo(info: *mut SystemInfo);
    }

    fn processor() -> ProcessorNumber {
        let mut n = ProcessorNumber::default();
        // SAFETY: writes one PROCESSOR_NUMBER.
        unsafe { GetCurrentProcessorNumberEx(&mut n) };
        n
    }

    /// The CPU (its number in its processor group) and the NUMA node the
    /// calling thread runs on.
    pub fn getcpu() -> (u32, u32) {
        let n = processor();
        let mut node = 0u16;
        // SAFETY: reads one PROCESSOR_NUMBER, writes one USHORT.
        let known = unsafe { GetNumaProcessorNodeEx(&n, &mut node) } != 0;
        (n.number as u32, if known { node as u32 } else { 0 })
    }

    /// The CPU page size (`GetSystemInfo`'s `dwPageSize`).
    pub fn page_size() -> usize {
        // SAFETY: SYSTEM_INFO is plain data, written whole by GetSystemInfo.
        unsafe {
            let mut info: SystemInfo = core::mem::zeroed();
            GetSystemInfo(&mut info);
            info.page_size as usize
        }
    }

    impl PinnedThread {
        pub fn here() -> Result<PinnedThread, String> {
            let n = processor();
            let one = GroupAffinity {
                mask: 1usize << n.number,
                group: n.group,
                reserved: [0; 3],
            };
            let mut old = GroupAffinity::default();
            // SAFETY: the pseudo-handle of the calling thread; both structs
            // are valid for the call.
            if unsafe { SetThreadGroupAffinity(GetCurrentThread(), &one, &mut old) } == 0 {
                return Err(format!(
                    "SetThreadGroupAffinity: {}",
                    std::io::Error::last_os_error()
                ));
            }
            PinnedThread::checked(PinnedThread {
                old,
                cpu: n.number as u32,
                node: 0,
            })
        }
    }

    impl Drop for PinnedThread {
        fn drop(&mut self) {
            let mut was = GroupAffinity::default();
            // SAFETY: as in `here`.
            unsafe { SetThreadGroupAffinity(GetCurrentThread(), &self.old, &mut was) };
        }
    }
}
