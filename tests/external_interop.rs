//! External Resource Interoperability (driver API 6.20) on a real GPU.
//!
//! - CUDA's own memory: a VMM allocation exported as a POSIX file descriptor and
//!   imported with `cuImportExternalMemory` (`OPAQUE_FD`), mapped at an offset with
//!   `cuExternalMemoryGetMappedBuffer`; bytes written through one view are read
//!   through the other, both ways.
//! - Bad input: each case returns its exact error code, a descriptor a failed
//!   import did not take is still ours, and the process keeps working.
//! - Vulkan as an independent producer: exportable buffer and image memory, a
//!   timeline and a binary semaphore, all as `OPAQUE_FD`; CUDA waits, reads the
//!   buffer (mapped buffer) and the image (mapped mipmapped array), writes its own
//!   bytes and signals; Vulkan waits on the host and reads CUDA's bytes.
//!
//! The Vulkan test needs a Vulkan loader and a Vulkan device that is the CUDA
//! device (same UUID). Where either is missing it reports itself *ignored* with
//! the reason (see `Body::Ignorable`), never passed.
//!
//! On the headless H200 machine (driver 580.159.04) NVIDIA's shipped ICD manifest
//! names `libGLX_nvidia.so.0`, whose `vk_icdGetInstanceProcAddr` gives no
//! `vkCreateInstance` without a display (VK_ERROR_INCOMPATIBLE_DRIVER). Point the
//! loader at the EGL library instead, which works there:
//! ```text
//! printf '{"file_format_version":"1.0.1","ICD":{"library_path":"libEGL_nvidia.so.0","api_version":"1.4.312"}}' >/tmp/nvidia_egl_icd.json
//! export VK_DRIVER_FILES=/tmp/nvidia_egl_icd.json
//! ```
//!
//! Every test here shares POSIX descriptors (`OPAQUE_FD`), so the tests are
//! in a Unix-only module (`interop`); on Windows each is still listed, and
//! reported ignored with the reason (`common::POSIX_ONLY`).
mod common;

use common::DeviceTest;
#[cfg(unix)]
use interop::*;

// ---------------------------------------------------------------------------
// Runner: the harness's CUDA gate, plus Vulkan tests that may report ignored.
// ---------------------------------------------------------------------------

fn main() {
    let mut tests = device_tests![
        vmm_allocation_imported_as_external_memory if cfg(unix) else common::POSIX_ONLY,
        process_death_importer_killed_while_mapped if cfg(unix) else common::POSIX_ONLY,
        process_death_exporter_killed if cfg(unix) else common::POSIX_ONLY,
        process_death_descriptor_after_sender_died if cfg(unix) else common::POSIX_ONLY,
        bad_mipmap_and_semaphore_input_is_an_error if cfg(unix) else common::POSIX_ONLY,
        bad_external_memory_input_is_rejected if cfg(unix) else common::POSIX_ONLY,
    ];
    const VULKAN: &str = "vulkan_buffer_image_and_semaphores_round_trip";
    const DMA_BUF: &str = "dma_buf_export_read_through_vulkan";
    #[cfg(unix)]
    tests.push(DeviceTest::may_ignore(VULKAN, vulkan_round_trip));
    #[cfg(unix)]
    tests.push(DeviceTest::may_ignore(DMA_BUF, dma_buf_read_through_vulkan));
    #[cfg(not(unix))]
    tests.push(DeviceTest::ignored(VULKAN, common::POSIX_ONLY));
    #[cfg(not(unix))]
    tests.push(DeviceTest::ignored(DMA_BUF, common::POSIX_ONLY));
    common::main(
        tests,
        &[
            #[cfg(unix)]
            (EXPORTER, common::vmm::pd_exporter),
            #[cfg(unix)]
            (IMPORTER, ext_importer),
            #[cfg(unix)]
            ("unmeasured_bad_input", unmeasured_bad_input),
        ],
    );
}

/// The tests and their helpers (Unix only: see the top of the file).
#[cfg(unix)]
mod interop {
    use crate::common::process_death as pd;
    use crate::common::vmm::{close_fd, fd_is_open, opened, Mapping};
    use crate::common::TestResult;
    use crate::common::{pattern, read, reads, same, write, BadInput, Checks, Gpu, PageLocked};
    use crate::{common, cu, cu_err, ensure};
    use ash::vk;
    use cuda_mem_sys::*;
    use libtest_mimic::Failed;
    use std::mem::ManuallyDrop;
    use std::ptr::null_mut;

    /// The child roles of the process-death scenarios.
    pub const EXPORTER: &str = "ext_exporter";
    pub const IMPORTER: &str = "ext_importer";

    // ---------------------------------------------------------------------------
    // CUDA helpers
    // ---------------------------------------------------------------------------

    fn opaque_fd_desc(fd: i32, size: u64, flags: u32) -> CUDA_EXTERNAL_MEMORY_HANDLE_DESC {
        let mut d: CUDA_EXTERNAL_MEMORY_HANDLE_DESC = unsafe { core::mem::zeroed() };
        d.type_ = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
        d.handle.fd = fd;
        d.size = size;
        d.flags = flags;
        d
    }

    /// `cuImportExternalMemory` of `fd` as `OPAQUE_FD` memory: the handle, or
    /// the code of a failed import (which leaves the descriptor ours: closed here).
    fn import_raw(fd: i32, size: u64, flags: u32) -> Result<CUexternalMemory, CUresult> {
        let mut ext: CUexternalMemory = null_mut();
        let r = unsafe { cuImportExternalMemory(&mut ext, &opaque_fd_desc(fd, size, flags)) };
        if r != CUDA_SUCCESS {
            let _ = close_fd(fd);
            return Err(r);
        }
        Ok(ext)
    }

    /// Imports `fd` as `OPAQUE_FD` memory. On success CUDA owns the descriptor (we
    /// never touch it again); on failure it is still ours, and is closed here.
    fn import_memory(fd: i32, size: u64, flags: u32) -> Result<CUexternalMemory, Failed> {
        let ext = import_raw(fd, size, flags)
            .map_err(|r| format!("cuImportExternalMemory returned {}", common::error_name(r)))?;
        ensure!(!ext.is_null(), "cuImportExternalMemory: a null handle");
        Ok(ext)
    }

    fn import_semaphore(
        fd: i32,
        ty: CUexternalSemaphoreHandleType,
    ) -> Result<CUexternalSemaphore, Failed> {
        let mut d: CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC = unsafe { core::mem::zeroed() };
        d.type_ = ty;
        d.handle.fd = fd;
        let mut sem: CUexternalSemaphore = null_mut();
        let r = unsafe { cuImportExternalSemaphore(&mut sem, &d) };
        if r != CUDA_SUCCESS {
            let _ = close_fd(fd);
            return common::check(r, "cuImportExternalSemaphore").map(|()| sem);
        }
        ensure!(!sem.is_null(), "cuImportExternalSemaphore: a null handle");
        Ok(sem)
    }

    fn mapped_buffer(ext: CUexternalMemory, offset: u64, size: u64) -> Result<CUdeviceptr, Failed> {
        let bd = CUDA_EXTERNAL_MEMORY_BUFFER_DESC {
            offset,
            size,
            ..Default::default()
        };
        let mut p: CUdeviceptr = 0;
        cu!(cuExternalMemoryGetMappedBuffer(&mut p, ext, &bd))?;
        ensure!(p != 0, "cuExternalMemoryGetMappedBuffer: a null pointer");
        Ok(p)
    }

    /// Page-locked host memory freed explicitly ([`PageLocked::free`]): left
    /// allocated if a test fails while a stream may still write to it.
    fn kept(p: Result<PageLocked, Failed>) -> Result<ManuallyDrop<PageLocked>, Failed> {
        p.map(ManuallyDrop::new)
    }

    /// Polls `stream` until its work is done; fails after 30 s instead of hanging.
    fn wait_stream(stream: CUstream, what: &str) -> TestResult {
        let start = std::time::Instant::now();
        loop {
            let r = unsafe { cuStreamQuery(stream) };
            if r == CUDA_SUCCESS {
                return Ok(());
            }
            if r != CUDA_ERROR_NOT_READY {
                return common::check(r, "cuStreamQuery");
            }
            let late = start.elapsed().as_secs() >= 30;
            ensure!(!late, "{what}: stream still not done after 30 s");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    // ---------------------------------------------------------------------------
    // CUDA memory exported and imported back
    // ---------------------------------------------------------------------------

    pub fn vmm_allocation_imported_as_external_memory() -> TestResult {
        let gpu = Gpu::new(0)?;
        let vmm = Mapping::posix_shareable(&gpu, 2)?;
        cu!(cuMemsetD8(vmm.ptr, 0x11, vmm.size))?;

        let fd = vmm.export_fd()?;
        let ext = import_memory(fd, vmm.size as u64, 0)?;
        // CUDA owns `fd` from here on: not touched again.

        // A window [off, off + len) that starts inside the first granule and crosses into the second.
        // Two granules: `len` is one.
        let len = vmm.size / 2;
        let off = len / 2;
        let mapped = mapped_buffer(ext, off as u64, len as u64)?;
        let (size, at, end) = (vmm.size, vmm.ptr, off + len);
        println!(
            "VMM {size} bytes at {at:#x}; external mapping of [{off:#x}, {end:#x}) at {mapped:#x}"
        );

        // Both views start with the same bytes.
        reads(mapped, &vec![0x11; len], "mapped view of the VMM memset")?;

        // Written through the VMM view, read through the external mapping.
        let a = pattern(len, 1);
        write(vmm.ptr + off as u64, &a)?;
        reads(mapped, &a, "VMM write not seen through the mapped buffer")?;

        // Written through the external mapping, read through the VMM view.
        let b = pattern(len, 0xBEEF);
        write(mapped, &b)?;
        cu!(cuMemsetD8(mapped, 0x7E, 1))?; // a device-side write too
        let mut want = b.clone();
        want[0] = 0x7E;
        let what = "mapped-buffer write not seen through the VMM view";
        reads(vmm.ptr + off as u64, &want, what)?;

        // Outside the window nothing changed.
        let before = read(vmm.ptr, off)?;
        let after = read(vmm.ptr + (off + len) as u64, vmm.size - off - len)?;
        let unchanged = before.iter().chain(&after).all(|&b| b == 0x11);
        ensure!(unchanged, "bytes outside the mapped window changed");

        cu!(cuMemFree(mapped))?;
        cu!(cuDestroyExternalMemory(ext))?;
        // The allocation itself is untouched by destroying the import.
        let what = "VMM view after cuDestroyExternalMemory";
        reads(vmm.ptr + off as u64, &want, what)?;
        vmm.free()
    }

    // ---------------------------------------------------------------------------
    // Bad input
    // ---------------------------------------------------------------------------

    // ---------------------------------------------------------------------------
    // Process death: a VMM descriptor imported as external memory by another
    // process, when one side is SIGKILLed (tests/common/process_death.rs)
    // ---------------------------------------------------------------------------

    /// The importer's external memory object and the buffer mapped on it.
    struct ExtHeld {
        ext: CUexternalMemory,
        p: CUdeviceptr,
        _gpu: Gpu,
    }

    impl pd::Held for ExtHeld {
        fn read(&mut self, n: usize) -> Result<Vec<u8>, String> {
            pd::read_device(self.p, n)
        }
        /// The documented order: free the mapped buffer, then destroy the object.
        fn release(self: Box<Self>) -> String {
            let free = unsafe { cuMemFree(self.p) };
            let destroy = unsafe { cuDestroyExternalMemory(self.ext) };
            pd::steps(&[("mem_free", free), ("destroy", destroy)])
        }
    }

    fn ext_import(fd: i32, f: &pd::Fields) -> Result<Box<dyn pd::Held>, String> {
        let gpu = Gpu::new(0).map_err(pd::message)?;
        let size = f.number("bytes").map_err(pd::message)?;
        // CUDA owns the descriptor from a successful import; a failed one closes it.
        let ext = import_raw(fd, size, 0).map_err(pd::code)?;
        let p = mapped_buffer(ext, 0, size).map_err(|e| {
            unsafe { cuDestroyExternalMemory(ext) };
            format!("mapped_buffer:{}", pd::message(e))
        })?;
        Ok(Box::new(ExtHeld { ext, p, _gpu: gpu }))
    }

    pub fn ext_importer() -> TestResult {
        pd::importer_main(ext_import)
    }

    /// An importer child holding the external-memory mapping is SIGKILLed: the
    /// exporter's bytes are intact, it keeps allocating and freeing, and once it
    /// frees its allocation the memory is back (`cuMemGetInfo`).
    pub fn process_death_importer_killed_while_mapped() -> TestResult {
        let released = "after the exporter freed its allocation";
        common::vmm::pd_importer_killed("ext_importer_killed_while_mapped", IMPORTER, released)
    }

    /// The exporter child is SIGKILLed while the importer child reads through
    /// external memory. The external-memory reference does not say what the
    /// mapping does then (the VMM one says the allocation lives while any
    /// shareable counterpart does): recorded; the importer must exit 0 and the
    /// memory come back.
    pub fn process_death_exporter_killed() -> TestResult {
        let _gpu = Gpu::new(0)?;
        let (test, free) = ("ext_exporter_killed", pd::free_memory);
        pd::exporter_killed(test, EXPORTER, IMPORTER, &[], false, free)
    }

    /// A VMM descriptor imported as external memory after its sender was
    /// SIGKILLed: recorded (the bytes or an error code); the importer exits 0 and
    /// the memory comes back.
    pub fn process_death_descriptor_after_sender_died() -> TestResult {
        let _gpu = Gpu::new(0)?;
        let (test, free) = ("ext_descriptor_after_sender_died", pd::free_memory);
        pd::descriptor_after_sender_died(test, EXPORTER, IMPORTER, &[], false, free)
    }

    /// Import described by `d` must fail with `want`: `p`'s bad case (an import
    /// that wrongly succeeds is destroyed). A descriptor that was ours (`ours`)
    /// must still be open after the failed import (it does not take it), and is
    /// closed here.
    fn import_must_fail(
        p: &mut BadInput,
        what: &str,
        d: &CUDA_EXTERNAL_MEMORY_HANDLE_DESC,
        want: CUresult,
        ours: bool,
    ) -> TestResult {
        let mut ext: CUexternalMemory = null_mut();
        let r = unsafe { cuImportExternalMemory(&mut ext, d) };
        let fd = unsafe { d.handle.fd };
        let left_open = ours && r != CUDA_SUCCESS && fd_is_open(fd);
        if left_open {
            p.note(what, close_fd(fd));
        }
        let taken = ours && r != CUDA_SUCCESS && !left_open;
        p.that(
            !taken,
            format!("{what}: descriptor {fd} was closed by a failed import"),
        );
        let case = format!("cuImportExternalMemory({what})");
        p.cu_undo(want, r, &case, || cu!(cuDestroyExternalMemory(ext)))
    }

    /// `cuExternalMemoryGetMappedBuffer` must fail with `want`: `p`'s bad case (a
    /// mapping that wrongly succeeds is freed without being touched).
    fn map_must_fail(
        p: &mut BadInput,
        ext: CUexternalMemory,
        (offset, size, flags): (u64, u64, u32),
        want: CUresult,
    ) -> TestResult {
        let bd = CUDA_EXTERNAL_MEMORY_BUFFER_DESC {
            offset,
            size,
            flags,
            ..Default::default()
        };
        let mut ptr: CUdeviceptr = 0;
        let r = unsafe { cuExternalMemoryGetMappedBuffer(&mut ptr, ext, &bd) };
        let what = format!(
            "cuExternalMemoryGetMappedBuffer(offset {offset:#x}, size {size:#x}, flags {flags})"
        );
        p.cu_undo(want, r, &what, || cu!(cuMemFree(ptr)))
    }

    /// The process still works: a memset and a read back on the VMM allocation.
    fn still_works(vmm: &Mapping, value: u32) -> TestResult {
        cu!(cuMemsetD32(vmm.ptr, value, 1024))?;
        let what = format!("memset {value:#x} read back after a bad call");
        reads(vmm.ptr, &value.to_le_bytes().repeat(1024), &what)
    }

    pub fn bad_external_memory_input_is_rejected() -> TestResult {
        let gpu = Gpu::new(0)?;
        let vmm = Mapping::shareable(&gpu, 2)?;
        let size = vmm.size as u64;
        let granule = size / 2;
        let mut p = BadInput::new(|round| still_works(&vmm, round));
        const INVALID: CUresult = CUDA_ERROR_INVALID_VALUE;

        // Wrong handle type for the descriptor: a handle type that does not exist
        // (0), and a POSIX fd described as OPAQUE_WIN32: measured on driver 580
        // (Linux), CUDA_ERROR_NOT_SUPPORTED, a code the reference does not list
        // for cuImportExternalMemory. Import flags neither 0 nor
        // CUDA_EXTERNAL_MEMORY_DEDICATED.
        let fd_type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
        let win32 = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32;
        #[rustfmt::skip]
    let imports = [
        ("handle type 0", CUexternalMemoryHandleType(0), 0, INVALID),
        ("POSIX fd as OPAQUE_WIN32", win32, 0, CUDA_ERROR_NOT_SUPPORTED),
        ("import flags 0x2", fd_type, 0x2, INVALID),
    ];
        for (what, ty, flags, want) in imports {
            let mut d = opaque_fd_desc(vmm.export_fd()?, size, flags);
            d.type_ = ty;
            import_must_fail(&mut p, what, &d, want, true)?;
        }

        // A closed descriptor. Measured on driver 580: CUDA_ERROR_UNKNOWN (not in the
        // reference's list).
        let fd = vmm.export_fd()?;
        close_fd(fd)?;
        ensure!(!fd_is_open(fd), "descriptor {fd} still open after close");
        let (closed, none) = (opaque_fd_desc(fd, size, 0), opaque_fd_desc(-1, size, 0));
        import_must_fail(&mut p, "closed fd", &closed, CUDA_ERROR_UNKNOWN, false)?;
        // No descriptor at all (-1). Measured on driver 580: CUDA_ERROR_UNKNOWN too.
        import_must_fail(&mut p, "fd -1", &none, CUDA_ERROR_UNKNOWN, false)?;

        // Size larger than the exported allocation. Measured on driver 580: the import
        // itself is accepted (the size is not checked against the allocation there);
        // a mapping that reaches past the allocation's real end is refused.
        let big = size + granule;
        match import_raw(vmm.export_fd()?, big, 0) {
            Ok(ext_big) => {
                // Mapping past the real end, and in the declared tail.
                map_must_fail(&mut p, ext_big, (0, big, 0), INVALID)?;
                map_must_fail(&mut p, ext_big, (size, granule, 0), INVALID)?;
                let destroyed = cu!(cuDestroyExternalMemory(ext_big));
                p.note("size > allocation: destroy", destroyed);
            }
            Err(r) => p.note(
                "size > allocation: import",
                common::expect_error(r, INVALID, "cuImportExternalMemory"),
            ),
        }
        p.still_works_after("after size > allocation");

        // Mapped buffers on a valid import: offset == size, offset past the end,
        // a range that runs past the end, buffer flags 1.
        let ext = import_memory(vmm.export_fd()?, size, 0)?;
        #[rustfmt::skip]
    let maps = [(size, 65536, 0), (size + granule, 65536, 0), (size - 65536, 2 * 65536, 0), (0, 65536, 1)];
        for map in maps {
            map_must_fail(&mut p, ext, map, INVALID)?;
        }

        // The import itself is still good: a full mapping sees the VMM bytes.
        let mapped = mapped_buffer(ext, 0, size)?;
        let a = pattern(vmm.size, 77);
        write(vmm.ptr, &a)?;
        p.note(
            "valid mapping after the bad ones",
            reads(mapped, &a, "read"),
        );
        cu!(cuMemFree(mapped))?;
        cu!(cuDestroyExternalMemory(ext))?;
        let p = p.into_checks();
        vmm.free()?;
        p.finish()
    }

    /// The entry points whose bad input is a null or empty handle
    /// (`cuExternalMemoryGetMappedMipmappedArray`, the semaphore signal, wait and
    /// destroy calls, `cuDestroyExternalMemory`): each in a child, so that a
    /// driver crash is recorded instead of ending the whole binary. Codes measured
    /// on an H100 (driver 580.159.04) are asserted exactly, with the reference's
    /// code named where the driver differs. The one crash measured, and the
    /// only one taken ([`judge_child`]): a null semaphore given to
    /// `cuSignalExternalSemaphoresAsync` ends the child by SIGSEGV.
    pub fn bad_mipmap_and_semaphore_input_is_an_error() -> TestResult {
        use std::os::unix::process::ExitStatusExt;
        // The wrong twins: another signal, a crash of another case.
        ensure!(
            judge_child("signal", false, Some(libc::SIGABRT)).is_err()
                && judge_child("wait", false, Some(libc::SIGSEGV)).is_err()
                && judge_child("signal", false, None).is_err(),
            "the judge of the children takes an outcome not measured"
        );
        for case in ["mipmap", "signal", "wait", "destroy", "destroy-memory"] {
            let mut child = common::spawn_child(
                "unmeasured_bad_input",
                &[("CUDA_MEM_SYS_BAD_INPUT_CASE", case.to_string())],
            );
            let status = child
                .wait()
                .map_err(|e| format!("waiting for {case}: {e}"))?;
            if let Some(line) = judge_child(case, status.success(), status.signal())? {
                println!("{line}");
            }
        }
        Ok(())
    }

    /// A bad-input child's outcome: exit 0 (its codes checked inside), or,
    /// for the `signal` case alone, SIGSEGV: measured with 12.0's, 13.0's
    /// and 13.5's headers, linked and loaded, on an H100 and an H200 (driver
    /// 580.159.04, docs/device-results.md run 46): a null `CUexternalSemaphore`
    /// crashes the driver in `cuSignalExternalSemaphoresAsync` (the reference
    /// requires valid handles; the crate cannot check one). `Ok(Some(line))`:
    /// the bad-input line recording the crash.
    fn judge_child(
        case: &str,
        success: bool,
        signal: Option<i32>,
    ) -> Result<Option<String>, Failed> {
        match (success, signal) {
            (true, _) => Ok(None),
            (false, Some(libc::SIGSEGV)) if case == "signal" => Ok(Some(format!(
                "bad-input: cuSignalExternalSemaphoresAsync expected=CUDA_ERROR_INVALID_HANDLE(400) \
                 got=signal-{} case={case}(null handle) [recorded: the driver crashes, as measured]",
                libc::SIGSEGV
            ))),
            (false, Some(sig)) => Err(format!(
                "child {case} died of signal {sig}, where {} was measured",
                if case == "signal" { "SIGSEGV" } else { "exit 0 with its codes" }
            )
            .into()),
            (false, None) => Err(format!("child {case} failed (see its output above)").into()),
        }
    }

    /// A bad call whose code was measured: exactly `measured`; `documented` is
    /// the reference's code, named in the case where the driver differs.
    fn must_return(
        r: CUresult,
        measured: CUresult,
        documented: CUresult,
        what: &str,
    ) -> TestResult {
        let what = if measured == documented {
            what.to_string()
        } else {
            format!(
                "{what} [measured; the reference lists {}]",
                common::error_name(documented)
            )
        };
        common::expect_error(r, measured, &what)
    }

    /// A bad call measured to crash the driver (`judge_child`): should a
    /// driver return instead, the code must be the reference's
    /// (`documented`) or the one its sibling calls return (`sibling`).
    fn measured_crash(
        r: CUresult,
        documented: CUresult,
        sibling: CUresult,
        what: &str,
    ) -> TestResult {
        common::report_bad_input(
            None,
            &format!("{what} [returned where a crash was measured]"),
            &common::error_name(documented),
            &common::error_name(r),
        );
        ensure!(
            r == documented || r == sibling,
            "{what} returned {}, expected {} or {}",
            common::error_name(r),
            common::error_name(documented),
            common::error_name(sibling)
        );
        Ok(())
    }

    /// Child of `bad_mipmap_and_semaphore_input_is_an_error`.
    pub fn unmeasured_bad_input() -> TestResult {
        let gpu = Gpu::new(0)?;
        let vmm = Mapping::shareable(&gpu, 2)?;
        let mut p = Checks::default();
        let fd = vmm.export_fd()?;
        let ext = import_memory(fd, vmm.size as u64, 0)?;

        let case = std::env::var("CUDA_MEM_SYS_BAD_INPUT_CASE").unwrap_or_default();
        let run = |c: &str| case.is_empty() || case == c;
        // A mipmapped-array description that describes nothing (all zero: no
        // format, no levels). The reference lists CUDA_ERROR_INVALID_VALUE.
        let mipmap = || {
            let desc: CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC = unsafe { core::mem::zeroed() };
            let mut mm: CUmipmappedArray = null_mut();
            let r = unsafe { cuExternalMemoryGetMappedMipmappedArray(&mut mm, ext, &desc) };
            if r == CUDA_SUCCESS && !mm.is_null() {
                unsafe { cuMipmappedArrayDestroy(mm) };
            }
            r
        };
        // A null semaphore handle in a valid one-element array. The reference
        // lists CUDA_ERROR_INVALID_HANDLE for a handle that is not one.
        let sems: [CUexternalSemaphore; 1] = [null_mut()];
        let signal: [CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS; 1] = unsafe { core::mem::zeroed() };
        let wait: [CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS; 1] = unsafe { core::mem::zeroed() };
        let signal = || unsafe {
            cuSignalExternalSemaphoresAsync(sems.as_ptr(), signal.as_ptr(), 1, null_mut())
        };
        let wait = || unsafe {
            cuWaitExternalSemaphoresAsync(sems.as_ptr(), wait.as_ptr(), 1, null_mut())
        };
        let destroy = || unsafe { cuDestroyExternalSemaphore(null_mut()) };
        // A null external memory. The reference lists CUDA_ERROR_INVALID_HANDLE;
        // measured on two H200s (driver 580.159.04): CUDA_ERROR_INVALID_VALUE.
        let destroy_memory = || unsafe { cuDestroyExternalMemory(null_mut()) };
        let (invalid, handle) = (CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_HANDLE);
        // (case, the bad call, the code measured (None: the driver crashes,
        // `judge_child`), the reference's code, what it is)
        type Call<'a> = (
            &'a str,
            &'a dyn Fn() -> CUresult,
            Option<CUresult>,
            CUresult,
            &'a str,
        );
        #[rustfmt::skip]
    let calls: [Call; 5] = [
        ("mipmap", &mipmap, Some(invalid), invalid, "cuExternalMemoryGetMappedMipmappedArray(all-zero description)"),
        ("signal", &signal, None, handle, "cuSignalExternalSemaphoresAsync(null semaphore)"),
        ("wait", &wait, Some(invalid), handle, "cuWaitExternalSemaphoresAsync(null semaphore)"),
        ("destroy", &destroy, Some(invalid), handle, "cuDestroyExternalSemaphore(null)"),
        ("destroy-memory", &destroy_memory, Some(invalid), handle, "cuDestroyExternalMemory(null)"),
    ];
        for (i, (c, call, measured, documented, what)) in calls.into_iter().enumerate() {
            if run(c) {
                let r = call();
                let checked = match measured {
                    Some(m) => must_return(r, m, documented, what),
                    // Measured: the driver crashes (`judge_child`).
                    None => measured_crash(r, documented, invalid, what),
                };
                p.note(what, checked);
                p.note(&format!("after {what}"), still_works(&vmm, 21 + i as u32));
            }
        }
        cu!(cuCtxSynchronize())?;
        cu!(cuDestroyExternalMemory(ext))?;
        vmm.free()?;
        p.finish()
    }

    // ---------------------------------------------------------------------------
    // Vulkan
    // ---------------------------------------------------------------------------

    const OPAQUE_FD_MEM: vk::ExternalMemoryHandleTypeFlags =
        vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD;
    const OPAQUE_FD_SEM: vk::ExternalSemaphoreHandleTypeFlags =
        vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD;

    fn vk_err(what: &str) -> impl Fn(vk::Result) -> Failed + '_ {
        move |e| format!("{what}: {e:?}").into()
    }

    /// A Vulkan device that is CUDA device 0, with everything it allocated.
    struct Vulkan {
        _entry: ash::Entry,
        instance: ash::Instance,
        pdev: vk::PhysicalDevice,
        device: ash::Device,
        queue: vk::Queue,
        family: u32,
        pool: vk::CommandPool,
        mem_props: vk::PhysicalDeviceMemoryProperties,
        mem_fd: ash::khr::external_memory_fd::Device,
        sem_fd: ash::khr::external_semaphore_fd::Device,
        buffers: Vec<vk::Buffer>,
        images: Vec<vk::Image>,
        memories: Vec<vk::DeviceMemory>,
        semaphores: Vec<vk::Semaphore>,
        fences: Vec<vk::Fence>,
        /// The device offers `VK_EXT_external_memory_dma_buf` (enabled then).
        dma_buf: bool,
    }

    /// `Err(reason)` when there is no Vulkan to test with (the test is then ignored).
    fn vulkan_for(cuda_uuid: [u8; 16]) -> Result<Result<Vulkan, String>, Failed> {
        let entry = match unsafe { ash::Entry::load() } {
            Ok(e) => e,
            Err(e) => return Ok(Err(format!("no Vulkan loader: {e}"))),
        };
        let version = unsafe { entry.try_enumerate_instance_version() }
            .map_err(vk_err("vkEnumerateInstanceVersion"))?;
        let version = version.unwrap_or(vk::API_VERSION_1_0);
        if version < vk::API_VERSION_1_2 {
            return Ok(Err(format!(
                "Vulkan loader is {}.{}, need 1.2",
                vk::api_version_major(version),
                vk::api_version_minor(version)
            )));
        }
        let app = vk::ApplicationInfo::default()
            .application_name(c"cuda-mem-sys external_interop")
            .api_version(vk::API_VERSION_1_2);
        let instance = match unsafe {
            entry.create_instance(
                &vk::InstanceCreateInfo::default().application_info(&app),
                None,
            )
        } {
            Ok(i) => i,
            Err(vk::Result::ERROR_INCOMPATIBLE_DRIVER) => {
                return Ok(Err(
                    "no Vulkan driver: vkCreateInstance returned VK_ERROR_INCOMPATIBLE_DRIVER"
                        .into(),
                ))
            }
            Err(e) => return Err(format!("vkCreateInstance: {e:?}").into()),
        };
        // From here on, `instance` must be destroyed on every path.
        let found = (|| -> Result<Result<(vk::PhysicalDevice, String, u32), String>, Failed> {
            let pdevs = unsafe { instance.enumerate_physical_devices() }
                .map_err(vk_err("vkEnumeratePhysicalDevices"))?;
            if pdevs.is_empty() {
                return Ok(Err("no Vulkan physical device".into()));
            }
            let mut seen = Vec::new();
            for pdev in pdevs {
                let mut id = vk::PhysicalDeviceIDProperties::default();
                let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut id);
                unsafe { instance.get_physical_device_properties2(pdev, &mut props2) };
                let props = props2.properties;
                let name = props
                    .device_name_as_c_str()
                    .unwrap_or(c"?")
                    .to_string_lossy()
                    .into_owned();
                if id.device_uuid == cuda_uuid {
                    return Ok(Ok((pdev, name, props.api_version)));
                }
                seen.push(name);
            }
            Ok(Err(format!(
                "no Vulkan device has CUDA device 0's UUID (Vulkan devices: {})",
                seen.join(", ")
            )))
        })();
        let (pdev, name, api) = match found {
            Ok(Ok(f)) => f,
            Ok(Err(reason)) => {
                unsafe { instance.destroy_instance(None) };
                return Ok(Err(reason));
            }
            Err(e) => {
                unsafe { instance.destroy_instance(None) };
                return Err(e);
            }
        };
        let v = |v| (vk::api_version_major(v), vk::api_version_minor(v));
        let ((major, minor), patch) = (v(api), vk::api_version_patch(api));
        let (lmajor, lminor) = v(version);
        println!("Vulkan device {name}, API {major}.{minor}.{patch} (loader {lmajor}.{lminor})");
        match Vulkan::open(entry, instance, pdev, api) {
            Ok(v) => Ok(Ok(v)),
            Err(failed) => {
                let (instance, e) = *failed;
                unsafe { instance.destroy_instance(None) };
                Err(e)
            }
        }
    }

    impl Vulkan {
        fn open(
            entry: ash::Entry,
            instance: ash::Instance,
            pdev: vk::PhysicalDevice,
            api: u32,
        ) -> Result<Vulkan, Box<(ash::Instance, Failed)>> {
            // Failing here gives `instance` back, for the caller to destroy.
            let fail = |instance, e: String| Err(Box::new((instance, e.into())));
            if api < vk::API_VERSION_1_2 {
                let e = "the Vulkan device is older than 1.2 (timeline semaphores)";
                return fail(instance, e.into());
            }
            let families = unsafe { instance.get_physical_device_queue_family_properties(pdev) };
            let Some(family) = families.iter().position(|f| {
                f.queue_flags
                    .intersects(vk::QueueFlags::GRAPHICS | vk::QueueFlags::COMPUTE)
            }) else {
                return fail(instance, "no graphics or compute queue family".into());
            };
            let family = family as u32;
            let priorities = [1.0f32];
            let queues = [vk::DeviceQueueCreateInfo::default()
                .queue_family_index(family)
                .queue_priorities(&priorities)];
            // VK_EXT_external_memory_dma_buf where the device offers it
            // (`dma_buf_export_read_through_vulkan` imports CUDA's dma-buf).
            let offered =
                unsafe { instance.enumerate_device_extension_properties(pdev) }.unwrap_or_default();
            let dma_buf = offered.iter().any(|e| {
                e.extension_name_as_c_str() == Ok(ash::ext::external_memory_dma_buf::NAME)
            });
            let mut exts = vec![
                ash::khr::external_memory_fd::NAME.as_ptr(),
                ash::khr::external_semaphore_fd::NAME.as_ptr(),
            ];
            if dma_buf {
                exts.push(ash::ext::external_memory_dma_buf::NAME.as_ptr());
            }
            let mut f12 = vk::PhysicalDeviceVulkan12Features::default().timeline_semaphore(true);
            let info = vk::DeviceCreateInfo::default()
                .queue_create_infos(&queues)
                .enabled_extension_names(&exts)
                .push_next(&mut f12);
            let device = match unsafe { instance.create_device(pdev, &info, None) } {
                Ok(d) => d,
                Err(e) => return fail(instance, format!("vkCreateDevice: {e:?}")),
            };
            let queue = unsafe { device.get_device_queue(family, 0) };
            let pool = match unsafe {
                device.create_command_pool(
                    &vk::CommandPoolCreateInfo::default().queue_family_index(family),
                    None,
                )
            } {
                Ok(p) => p,
                Err(e) => {
                    unsafe { device.destroy_device(None) };
                    return fail(instance, format!("vkCreateCommandPool: {e:?}"));
                }
            };
            let mem_props = unsafe { instance.get_physical_device_memory_properties(pdev) };
            let mem_fd = ash::khr::external_memory_fd::Device::new(&instance, &device);
            let sem_fd = ash::khr::external_semaphore_fd::Device::new(&instance, &device);
            Ok(Vulkan {
                _entry: entry,
                instance,
                pdev,
                device,
                queue,
                family,
                pool,
                mem_props,
                mem_fd,
                sem_fd,
                buffers: vec![],
                images: vec![],
                memories: vec![],
                semaphores: vec![],
                fences: vec![],
                dma_buf,
            })
        }

        fn memory_type(&self, bits: u32, want: vk::MemoryPropertyFlags) -> Result<u32, Failed> {
            (0..self.mem_props.memory_type_count)
                .find(|&i| {
                    bits & (1 << i) != 0
                        && self.mem_props.memory_types[i as usize]
                            .property_flags
                            .contains(want)
                })
                .ok_or_else(|| format!("no memory type {want:?} in {bits:#x}").into())
        }

        fn allocate(
            &mut self,
            req: vk::MemoryRequirements,
            want: vk::MemoryPropertyFlags,
            export: bool,
            dedicated: Option<(vk::Buffer, vk::Image)>,
        ) -> Result<vk::DeviceMemory, Failed> {
            let mut export_info =
                vk::ExportMemoryAllocateInfo::default().handle_types(OPAQUE_FD_MEM);
            let mut dedicated_info = vk::MemoryDedicatedAllocateInfo::default();
            let mut info = vk::MemoryAllocateInfo::default()
                .allocation_size(req.size)
                .memory_type_index(self.memory_type(req.memory_type_bits, want)?);
            if export {
                info = info.push_next(&mut export_info);
            }
            if let Some((buffer, image)) = dedicated {
                dedicated_info = dedicated_info.buffer(buffer).image(image);
                info = info.push_next(&mut dedicated_info);
            }
            let mem = unsafe { self.device.allocate_memory(&info, None) }
                .map_err(vk_err("vkAllocateMemory"))?;
            self.memories.push(mem);
            Ok(mem)
        }

        /// Device-local memory exported as OPAQUE_FD for `req`, dedicated to `to`
        /// (a buffer or an image) where `features` or `ded` ask for it (printed
        /// after `what`): the memory, and whether it is dedicated.
        fn allocate_exported(
            &mut self,
            what: &str,
            req: vk::MemoryRequirements,
            ded: &vk::MemoryDedicatedRequirements,
            features: vk::ExternalMemoryFeatureFlags,
            to: (vk::Buffer, vk::Image),
        ) -> Result<(vk::DeviceMemory, bool), Failed> {
            let (requires, prefers) = (
                ded.requires_dedicated_allocation,
                ded.prefers_dedicated_allocation,
            );
            let dedicated = features.contains(vk::ExternalMemoryFeatureFlags::DEDICATED_ONLY)
                || requires != 0
                || prefers != 0;
            let local = vk::MemoryPropertyFlags::DEVICE_LOCAL;
            let mem = self.allocate(req, local, true, dedicated.then_some(to))?;
            println!(
            "{what}, allocation {} bytes, dedicated {dedicated} (requires {requires}, prefers {prefers}, features {features:?})",
            req.size
        );
            Ok((mem, dedicated))
        }

        /// A buffer whose memory is exported as OPAQUE_FD: (buffer, memory, allocation size, dedicated).
        fn exportable_buffer(
            &mut self,
            size: u64,
            usage: vk::BufferUsageFlags,
        ) -> Result<(vk::Buffer, vk::DeviceMemory, u64, bool), Failed> {
            let mut ext_props = vk::ExternalBufferProperties::default();
            unsafe {
                self.instance
                    .get_physical_device_external_buffer_properties(
                        self.pdev,
                        &vk::PhysicalDeviceExternalBufferInfo::default()
                            .usage(usage)
                            .handle_type(OPAQUE_FD_MEM),
                        &mut ext_props,
                    )
            };
            let features = ext_props
                .external_memory_properties
                .external_memory_features;
            let exportable = features.contains(vk::ExternalMemoryFeatureFlags::EXPORTABLE);
            ensure!(
                exportable,
                "buffers are not exportable as OPAQUE_FD ({features:?})"
            );
            let mut ext_info =
                vk::ExternalMemoryBufferCreateInfo::default().handle_types(OPAQUE_FD_MEM);
            let info = vk::BufferCreateInfo::default()
                .size(size)
                .usage(usage)
                .sharing_mode(vk::SharingMode::EXCLUSIVE)
                .push_next(&mut ext_info);
            let buffer = unsafe { self.device.create_buffer(&info, None) }
                .map_err(vk_err("vkCreateBuffer"))?;
            self.buffers.push(buffer);
            let mut ded = vk::MemoryDedicatedRequirements::default();
            let mut req2 = vk::MemoryRequirements2::default().push_next(&mut ded);
            unsafe {
                self.device.get_buffer_memory_requirements2(
                    &vk::BufferMemoryRequirementsInfo2::default().buffer(buffer),
                    &mut req2,
                )
            };
            let what = format!("Vulkan buffer: {size} bytes");
            let req = req2.memory_requirements;
            let to = (buffer, vk::Image::null());
            let (mem, dedicated) = self.allocate_exported(&what, req, &ded, features, to)?;
            unsafe { self.device.bind_buffer_memory(buffer, mem, 0) }
                .map_err(vk_err("vkBindBufferMemory"))?;
            Ok((buffer, mem, req.size, dedicated))
        }

        /// A 2D image whose memory is exported as OPAQUE_FD: (image, memory, allocation size, dedicated).
        fn exportable_image(
            &mut self,
            format: vk::Format,
            width: u32,
            height: u32,
            usage: vk::ImageUsageFlags,
        ) -> Result<(vk::Image, vk::DeviceMemory, u64, bool), Failed> {
            let mut ext_fmt = vk::ExternalImageFormatProperties::default();
            let mut fmt_props = vk::ImageFormatProperties2::default().push_next(&mut ext_fmt);
            let mut ext_fmt_info =
                vk::PhysicalDeviceExternalImageFormatInfo::default().handle_type(OPAQUE_FD_MEM);
            let fmt_info = vk::PhysicalDeviceImageFormatInfo2::default()
                .format(format)
                .ty(vk::ImageType::TYPE_2D)
                .tiling(vk::ImageTiling::OPTIMAL)
                .usage(usage)
                .push_next(&mut ext_fmt_info);
            unsafe {
                self.instance.get_physical_device_image_format_properties2(
                    self.pdev,
                    &fmt_info,
                    &mut fmt_props,
                )
            }
            .map_err(vk_err(
                "vkGetPhysicalDeviceImageFormatProperties2 (exportable image)",
            ))?;
            let features = ext_fmt.external_memory_properties.external_memory_features;
            let exportable = features.contains(vk::ExternalMemoryFeatureFlags::EXPORTABLE);
            ensure!(
                exportable,
                "images are not exportable as OPAQUE_FD ({features:?})"
            );
            let mut ext_info =
                vk::ExternalMemoryImageCreateInfo::default().handle_types(OPAQUE_FD_MEM);
            let info = vk::ImageCreateInfo::default()
                .image_type(vk::ImageType::TYPE_2D)
                .format(format)
                .extent(vk::Extent3D {
                    width,
                    height,
                    depth: 1,
                })
                .mip_levels(1)
                .array_layers(1)
                .samples(vk::SampleCountFlags::TYPE_1)
                .tiling(vk::ImageTiling::OPTIMAL)
                .usage(usage)
                .sharing_mode(vk::SharingMode::EXCLUSIVE)
                .initial_layout(vk::ImageLayout::UNDEFINED)
                .push_next(&mut ext_info);
            let image = unsafe { self.device.create_image(&info, None) }
                .map_err(vk_err("vkCreateImage"))?;
            self.images.push(image);
            let mut ded = vk::MemoryDedicatedRequirements::default();
            let mut req2 = vk::MemoryRequirements2::default().push_next(&mut ded);
            unsafe {
                self.device.get_image_memory_requirements2(
                    &vk::ImageMemoryRequirementsInfo2::default().image(image),
                    &mut req2,
                )
            };
            let what = format!("Vulkan image: {width}x{height} {format:?}");
            let req = req2.memory_requirements;
            let to = (vk::Buffer::null(), image);
            let (mem, dedicated) = self.allocate_exported(&what, req, &ded, features, to)?;
            unsafe { self.device.bind_image_memory(image, mem, 0) }
                .map_err(vk_err("vkBindImageMemory"))?;
            Ok((image, mem, req.size, dedicated))
        }

        /// A host-visible, coherent buffer, mapped: (buffer, pointer).
        fn host_buffer(&mut self, size: u64) -> Result<(vk::Buffer, *mut u8), Failed> {
            let info = vk::BufferCreateInfo::default()
                .size(size)
                .usage(vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST)
                .sharing_mode(vk::SharingMode::EXCLUSIVE);
            let buffer = unsafe { self.device.create_buffer(&info, None) }
                .map_err(vk_err("vkCreateBuffer (host)"))?;
            self.buffers.push(buffer);
            let req = unsafe { self.device.get_buffer_memory_requirements(buffer) };
            let mem = self.allocate(
                req,
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT,
                false,
                None,
            )?;
            unsafe { self.device.bind_buffer_memory(buffer, mem, 0) }
                .map_err(vk_err("vkBindBufferMemory (host)"))?;
            let p = unsafe {
                self.device
                    .map_memory(mem, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())
            }
            .map_err(vk_err("vkMapMemory"))?;
            Ok((buffer, p.cast()))
        }

        /// An exportable semaphore (timeline when `timeline`) and its OPAQUE_FD.
        fn exportable_semaphore(&mut self, timeline: bool) -> Result<(vk::Semaphore, i32), Failed> {
            let ty = if timeline {
                vk::SemaphoreType::TIMELINE
            } else {
                vk::SemaphoreType::BINARY
            };
            let mut type_info = vk::SemaphoreTypeCreateInfo::default()
                .semaphore_type(ty)
                .initial_value(0);
            let mut ext_props = vk::ExternalSemaphoreProperties::default();
            let mut query_type = vk::SemaphoreTypeCreateInfo::default().semaphore_type(ty);
            unsafe {
                self.instance
                    .get_physical_device_external_semaphore_properties(
                        self.pdev,
                        &vk::PhysicalDeviceExternalSemaphoreInfo::default()
                            .handle_type(OPAQUE_FD_SEM)
                            .push_next(&mut query_type),
                        &mut ext_props,
                    )
            };
            let features = ext_props.external_semaphore_features;
            let exportable = features.contains(vk::ExternalSemaphoreFeatureFlags::EXPORTABLE);
            let what = format!("{ty:?} semaphores are not exportable as OPAQUE_FD ({features:?})");
            ensure!(exportable, "{what}");
            let mut export = vk::ExportSemaphoreCreateInfo::default().handle_types(OPAQUE_FD_SEM);
            let info = vk::SemaphoreCreateInfo::default()
                .push_next(&mut type_info)
                .push_next(&mut export);
            let sem = unsafe { self.device.create_semaphore(&info, None) }
                .map_err(vk_err("vkCreateSemaphore"))?;
            self.semaphores.push(sem);
            let fd = self.semaphore_fd(sem)?;
            Ok((sem, fd))
        }

        fn semaphore_fd(&self, sem: vk::Semaphore) -> Result<i32, Failed> {
            let fd = unsafe {
                self.sem_fd.get_semaphore_fd(
                    &vk::SemaphoreGetFdInfoKHR::default()
                        .semaphore(sem)
                        .handle_type(OPAQUE_FD_SEM),
                )
            }
            .map_err(vk_err("vkGetSemaphoreFdKHR"))?;
            opened(fd, "vkGetSemaphoreFdKHR")
        }

        fn memory_fd(&self, mem: vk::DeviceMemory) -> Result<i32, Failed> {
            let fd = unsafe {
                self.mem_fd.get_memory_fd(
                    &vk::MemoryGetFdInfoKHR::default()
                        .memory(mem)
                        .handle_type(OPAQUE_FD_MEM),
                )
            }
            .map_err(vk_err("vkGetMemoryFdKHR"))?;
            opened(fd, "vkGetMemoryFdKHR")
        }

        /// Records a one-time command buffer and submits it with `wait`/`signal`;
        /// returns the fence that signals when it completes.
        fn submit(
            &mut self,
            record: impl FnOnce(&ash::Device, vk::CommandBuffer),
            wait: &[vk::Semaphore],
            signal: &[vk::Semaphore],
            signal_values: &[u64],
        ) -> Result<vk::Fence, Failed> {
            let cbs = unsafe {
                self.device.allocate_command_buffers(
                    &vk::CommandBufferAllocateInfo::default()
                        .command_pool(self.pool)
                        .level(vk::CommandBufferLevel::PRIMARY)
                        .command_buffer_count(1),
                )
            }
            .map_err(vk_err("vkAllocateCommandBuffers"))?;
            let cb = cbs[0];
            unsafe {
                self.device
                    .begin_command_buffer(
                        cb,
                        &vk::CommandBufferBeginInfo::default()
                            .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
                    )
                    .map_err(vk_err("vkBeginCommandBuffer"))?;
                record(&self.device, cb);
                self.device
                    .end_command_buffer(cb)
                    .map_err(vk_err("vkEndCommandBuffer"))?;
            }
            let fence = unsafe {
                self.device
                    .create_fence(&vk::FenceCreateInfo::default(), None)
            }
            .map_err(vk_err("vkCreateFence"))?;
            self.fences.push(fence);
            let stages = vec![vk::PipelineStageFlags::TRANSFER; wait.len()];
            let wait_values = vec![0u64; wait.len()];
            let mut timeline = vk::TimelineSemaphoreSubmitInfo::default()
                .wait_semaphore_values(&wait_values)
                .signal_semaphore_values(signal_values);
            let submit = vk::SubmitInfo::default()
                .command_buffers(&cbs)
                .wait_semaphores(wait)
                .wait_dst_stage_mask(&stages)
                .signal_semaphores(signal)
                .push_next(&mut timeline);
            unsafe { self.device.queue_submit(self.queue, &[submit], fence) }
                .map_err(vk_err("vkQueueSubmit"))?;
            Ok(fence)
        }

        fn wait_fence(&self, fence: vk::Fence) -> TestResult {
            unsafe { self.device.wait_for_fences(&[fence], true, 30_000_000_000) }
                .map_err(vk_err("vkWaitForFences"))?;
            Ok(())
        }
    }

    impl Drop for Vulkan {
        fn drop(&mut self) {
            unsafe {
                let d = &self.device;
                let _ = d.device_wait_idle();
                self.fences.iter().for_each(|&f| d.destroy_fence(f, None));
                self.semaphores
                    .iter()
                    .for_each(|&s| d.destroy_semaphore(s, None));
                self.buffers.iter().for_each(|&b| d.destroy_buffer(b, None));
                self.images.iter().for_each(|&i| d.destroy_image(i, None));
                self.memories.iter().for_each(|&m| d.free_memory(m, None));
                self.device.destroy_command_pool(self.pool, None);
                self.device.destroy_device(None);
                self.instance.destroy_instance(None);
            }
        }
    }

    const COLOR: vk::ImageSubresourceRange = vk::ImageSubresourceRange {
        aspect_mask: vk::ImageAspectFlags::COLOR,
        base_mip_level: 0,
        level_count: 1,
        base_array_layer: 0,
        layer_count: 1,
    };

    /// A barrier on an image (and a buffer) from the first to the second of each
    /// pair: queue family (a hand-over where they differ), layout (the image's),
    /// access, pipeline stage.
    struct Barrier {
        families: [u32; 2],
        layouts: [vk::ImageLayout; 2],
        access: [vk::AccessFlags; 2],
        stages: [vk::PipelineStageFlags; 2],
    }

    impl Barrier {
        /// Records it into `cb` for `image` and, where given, the whole of `buffer`.
        fn record(
            &self,
            d: &ash::Device,
            cb: vk::CommandBuffer,
            on: (Option<vk::Buffer>, vk::Image),
        ) {
            let ([from, to], [src, dst]) = (self.families, self.access);
            let buffer = on.0.map(|b| {
                vk::BufferMemoryBarrier::default()
                    .buffer(b)
                    .size(vk::WHOLE_SIZE)
                    .src_access_mask(src)
                    .dst_access_mask(dst)
                    .src_queue_family_index(from)
                    .dst_queue_family_index(to)
            });
            let img = vk::ImageMemoryBarrier::default()
                .old_layout(self.layouts[0])
                .new_layout(self.layouts[1])
                .src_access_mask(src)
                .dst_access_mask(dst)
                .src_queue_family_index(from)
                .dst_queue_family_index(to)
                .image(on.1)
                .subresource_range(COLOR);
            let ([first, then], none) = (self.stages, vk::DependencyFlags::empty());
            let buffers = buffer.as_slice();
            unsafe { d.cmd_pipeline_barrier(cb, first, then, none, &[], buffers, &[img]) };
        }
    }

    fn image_copy(width: u32, height: u32) -> vk::BufferImageCopy {
        vk::BufferImageCopy::default()
            .image_subresource(vk::ImageSubresourceLayers {
                aspect_mask: vk::ImageAspectFlags::COLOR,
                mip_level: 0,
                base_array_layer: 0,
                layer_count: 1,
            })
            .image_extent(vk::Extent3D {
                width,
                height,
                depth: 1,
            })
    }

    const BUF_SIZE: u64 = 1 << 20;
    const FILL: u32 = 0xA5C3_1E7F;
    const IMG_W: usize = 96;
    const IMG_H: usize = 40;

    /// Issue 41 (DMA-BUF): the bytes of a `cuMemAlloc` range exported as a
    /// dma-buf (`cuMemGetHandleForAddressRange`, `DMA_BUF_FD`) read by
    /// another consumer, Vulkan (`VK_EXT_external_memory_dma_buf`): the
    /// dma-buf imported as a buffer's memory, copied to a host buffer, must
    /// hold the range's bytes, not another range's (the wrong twin: the
    /// same comparison against the second range's bytes must fail). Where
    /// Vulkan cannot take it, the test says which step refused, with the
    /// `VkResult` measured, and reports itself ignored (`tests/dma_buf.rs`
    /// checks the exports apart where no consumer reads them).
    pub fn dma_buf_read_through_vulkan() -> Result<Option<String>, Failed> {
        const SIZE: usize = 2 << 20;
        let gpu = Gpu::new(0)?;
        let mut supported = 0;
        cu!(cuDeviceGetAttribute(
            &mut supported,
            CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
            gpu.dev
        ))?;
        println!("CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED {supported}");
        let mut uuid: CUuuid = Default::default();
        cu!(cuDeviceGetUuid(&mut uuid, gpu.dev))?;
        let mut v = match vulkan_for(uuid.bytes.map(|b| b as u8))? {
            Ok(v) => v,
            Err(reason) => return Ok(Some(reason)),
        };
        if !v.dma_buf {
            let why = "the Vulkan device of CUDA device 0 does not offer \
                       VK_EXT_external_memory_dma_buf: no Vulkan consumer of the dma-buf here";
            println!("{why}");
            return Ok(Some(why.into()));
        }
        let (ours, theirs) = (common::pattern(SIZE, 0x3D), common::pattern(SIZE, 0x91));
        let a = common::DeviceBuf::with(&ours)?;
        let _b = common::DeviceBuf::with(&theirs)?;
        cu!(cuCtxSynchronize())?;
        let mut fd: i32 = -1;
        let r = unsafe {
            cuMemGetHandleForAddressRange(
                (&mut fd as *mut i32).cast(),
                a.ptr,
                SIZE,
                CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                0,
            )
        };
        if r != CUDA_SUCCESS {
            if fd >= 0 {
                let _ = close_fd(fd);
            }
            ensure!(
                supported == 0,
                "the device reports DMA-BUF support, and the export returned {}",
                common::error_name(r)
            );
            return Ok(Some(format!(
                "no dma-buf export here: {}",
                common::error_name(r)
            )));
        }
        // Ours until an import succeeds (Vulkan then owns it).
        let mut owned = Some(fd);
        let give_back = |owned: &mut Option<i32>| {
            if let Some(fd) = owned.take() {
                let _ = close_fd(fd);
            }
        };
        const DMA_BUF: vk::ExternalMemoryHandleTypeFlags =
            vk::ExternalMemoryHandleTypeFlags::DMA_BUF_EXT;
        let mut fd_props = vk::MemoryFdPropertiesKHR::default();
        let r = unsafe {
            v.mem_fd
                .get_memory_fd_properties(DMA_BUF, fd, &mut fd_props)
        };
        println!(
            "vkGetMemoryFdPropertiesKHR(DMA_BUF): {r:?}, memory types {:#x}",
            fd_props.memory_type_bits
        );
        if let Err(e) = r {
            give_back(&mut owned);
            return Ok(Some(format!(
                "Vulkan does not take CUDA's dma-buf: vkGetMemoryFdPropertiesKHR returned {e:?}"
            )));
        }
        let mut ext_info = vk::ExternalMemoryBufferCreateInfo::default().handle_types(DMA_BUF);
        let info = vk::BufferCreateInfo::default()
            .size(SIZE as u64)
            .usage(vk::BufferUsageFlags::TRANSFER_SRC)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .push_next(&mut ext_info);
        let buffer = match unsafe { v.device.create_buffer(&info, None) } {
            Ok(b) => b,
            Err(e) => {
                give_back(&mut owned);
                return Ok(Some(format!(
                    "Vulkan does not take CUDA's dma-buf: vkCreateBuffer (DMA_BUF) returned {e:?}"
                )));
            }
        };
        v.buffers.push(buffer);
        let req = unsafe { v.device.get_buffer_memory_requirements(buffer) };
        let bits = req.memory_type_bits & fd_props.memory_type_bits;
        println!(
            "buffer needs {} B, memory types {:#x}; both {bits:#x}",
            req.size, req.memory_type_bits
        );
        if bits == 0 || req.size > SIZE as u64 {
            give_back(&mut owned);
            return Ok(Some(format!(
                "Vulkan does not take CUDA's dma-buf: no memory type fits (buffer {:#x}, \
                 dma-buf {:#x}, {} B needed of {SIZE})",
                req.memory_type_bits, fd_props.memory_type_bits, req.size
            )));
        }
        let mut import = vk::ImportMemoryFdInfoKHR::default()
            .handle_type(DMA_BUF)
            .fd(fd);
        let alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size)
            .memory_type_index(bits.trailing_zeros())
            .push_next(&mut import);
        let mem = match unsafe { v.device.allocate_memory(&alloc, None) } {
            Ok(m) => m,
            Err(e) => {
                give_back(&mut owned);
                return Ok(Some(format!(
                    "Vulkan does not take CUDA's dma-buf: vkAllocateMemory importing it \
                     returned {e:?}"
                )));
            }
        };
        // Vulkan's now: not closed here.
        let _ = owned.take();
        v.memories.push(mem);
        unsafe { v.device.bind_buffer_memory(buffer, mem, 0) }
            .map_err(vk_err("vkBindBufferMemory (dma-buf)"))?;
        let (host, host_ptr) = v.host_buffer(SIZE as u64)?;
        let done = v.submit(
            |d, cb| unsafe {
                let region = vk::BufferCopy::default().size(SIZE as u64);
                d.cmd_copy_buffer(cb, buffer, host, &[region]);
            },
            &[],
            &[],
            &[],
        )?;
        v.wait_fence(done)?;
        let got = unsafe { std::slice::from_raw_parts(host_ptr, SIZE) }.to_vec();
        ensure!(
            same(&got, &theirs, "wrong twin: the other range's bytes").is_err(),
            "the check takes the other range's bytes"
        );
        same(&got, &ours, "the dma-buf read through Vulkan")?;
        println!("{SIZE} B of the dma-buf read through Vulkan: the range's own bytes");
        Ok(None)
    }

    pub fn vulkan_round_trip() -> Result<Option<String>, Failed> {
        use vk::{AccessFlags as A, ImageLayout as L, PipelineStageFlags as S};
        let gpu = Gpu::new(0)?;
        let mut uuid: CUuuid = Default::default();
        cu!(cuDeviceGetUuid(&mut uuid, gpu.dev))?;
        let cuda_uuid: [u8; 16] = uuid.bytes.map(|b| b as u8);
        let mut v = match vulkan_for(cuda_uuid)? {
            Ok(v) => v,
            Err(reason) => return Ok(Some(reason)),
        };

        // --- Vulkan: exportable buffer, image, semaphores; fill and signal. ---
        let usage_buf = vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST;
        let (vbuf, vbuf_mem, vbuf_alloc, vbuf_dedicated) =
            v.exportable_buffer(BUF_SIZE, usage_buf)?;
        let format = vk::Format::R8G8B8A8_UINT;
        let usage_img = vk::ImageUsageFlags::TRANSFER_SRC
            | vk::ImageUsageFlags::TRANSFER_DST
            | vk::ImageUsageFlags::SAMPLED
            | vk::ImageUsageFlags::STORAGE;
        let (image, image_mem, image_alloc, image_dedicated) =
            v.exportable_image(format, IMG_W as u32, IMG_H as u32, usage_img)?;
        let img_bytes = (IMG_W * IMG_H * 4) as u64;
        let (staging, staging_ptr) = v.host_buffer(img_bytes)?;
        // The image's texels (RGBA8, row-major, tightly packed).
        let texels = pattern(IMG_W * IMG_H * 4, 0x7E);
        unsafe { std::ptr::copy_nonoverlapping(texels.as_ptr(), staging_ptr, texels.len()) };
        let (readback_buf, readback_buf_ptr) = v.host_buffer(BUF_SIZE)?;
        let (readback_img, readback_img_ptr) = v.host_buffer(img_bytes)?;
        let (timeline, timeline_fd) = v.exportable_semaphore(true)?;
        let (binary, binary_fd) = v.exportable_semaphore(false)?;
        let buf_fd = v.memory_fd(vbuf_mem)?;
        let img_fd = v.memory_fd(image_mem)?;
        let family = v.family;

        let produce = v.submit(
            |d, cb| unsafe {
                let to_dst = Barrier {
                    families: [vk::QUEUE_FAMILY_IGNORED; 2],
                    layouts: [L::UNDEFINED, L::TRANSFER_DST_OPTIMAL],
                    access: [A::empty(), A::TRANSFER_WRITE],
                    stages: [S::TOP_OF_PIPE, S::TRANSFER],
                };
                to_dst.record(d, cb, (None, image));
                d.cmd_fill_buffer(cb, vbuf, 0, BUF_SIZE, FILL);
                d.cmd_copy_buffer_to_image(
                    cb,
                    staging,
                    image,
                    vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                    &[image_copy(IMG_W as u32, IMG_H as u32)],
                );
                // Release both to the external queue family (CUDA), image in GENERAL layout.
                let release = Barrier {
                    families: [family, vk::QUEUE_FAMILY_EXTERNAL],
                    layouts: [L::TRANSFER_DST_OPTIMAL, L::GENERAL],
                    access: [A::TRANSFER_WRITE, A::empty()],
                    stages: [S::TRANSFER, S::BOTTOM_OF_PIPE],
                };
                release.record(d, cb, (Some(vbuf), image));
            },
            &[],
            &[timeline, binary],
            &[1, 0],
        )?;

        // --- CUDA: import everything. ---
        let flags_of = |dedicated: bool| CUDA_EXTERNAL_MEMORY_DEDICATED * dedicated as u32;
        let cu_buf = import_memory(buf_fd, vbuf_alloc, flags_of(vbuf_dedicated))?;
        let cu_img = import_memory(img_fd, image_alloc, flags_of(image_dedicated))?;
        let cu_timeline = import_semaphore(
            timeline_fd,
            CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD,
        )?;
        let cu_binary = import_semaphore(binary_fd, CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD)?;
        let buf_ptr = mapped_buffer(cu_buf, 0, BUF_SIZE)?;
        let md = CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC {
            offset: 0,
            arrayDesc: CUDA_ARRAY3D_DESCRIPTOR {
                Width: IMG_W,
                Height: IMG_H,
                Depth: 0, // 2D
                Format: CU_AD_FORMAT_UNSIGNED_INT8,
                NumChannels: 4,
                Flags: CUDA_ARRAY3D_SURFACE_LDST,
            },
            numLevels: 1,
            ..Default::default()
        };
        let mut mip: CUmipmappedArray = null_mut();
        cu!(cuExternalMemoryGetMappedMipmappedArray(
            &mut mip, cu_img, &md
        ))?;
        let mut level: CUarray = null_mut();
        cu!(cuMipmappedArrayGetLevel(&mut level, mip, 0))?;
        let mut ad: CUDA_ARRAY3D_DESCRIPTOR = Default::default();
        cu!(cuArray3DGetDescriptor(&mut ad, level))?;
        ensure!(
            ad.Width == IMG_W
                && ad.Height == IMG_H
                && ad.Format == CU_AD_FORMAT_UNSIGNED_INT8
                && ad.NumChannels == 4,
            "level 0 is {}x{}x{} format {} x{} channels",
            ad.Width,
            ad.Height,
            ad.Depth,
            ad.Format.0,
            ad.NumChannels
        );

        // --- CUDA: wait for Vulkan, read its bytes. ---
        let mut stream: CUstream = null_mut();
        cu!(cuStreamCreate(&mut stream, CU_STREAM_NON_BLOCKING.0))?;
        let sems = [cu_timeline, cu_binary];
        let mut waits: [CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS; 2] = unsafe { core::mem::zeroed() };
        waits[0].params.fence.value = 1;
        let (sp, wp, n) = (sems.as_ptr(), waits.as_ptr(), BUF_SIZE as usize);
        cu!(cuWaitExternalSemaphoresAsync(sp, wp, 2, stream))?;
        // Page-locked host memory: copies queued behind the wait return at once, and
        // the stream is polled with a time limit instead of blocking forever.
        let got_buf = kept(PageLocked::new(BUF_SIZE as usize))?;
        cu!(cuMemcpyDtoHAsync(got_buf.vptr(), buf_ptr, n, stream))?;
        let got_img = kept(PageLocked::new(texels.len()))?;
        let c2 = CUDA_MEMCPY2D {
            srcMemoryType: CU_MEMORYTYPE_ARRAY,
            srcArray: level,
            dstMemoryType: CU_MEMORYTYPE_HOST,
            dstHost: got_img.vptr(),
            dstPitch: IMG_W * 4,
            WidthInBytes: IMG_W * 4,
            Height: IMG_H,
            ..Default::default()
        };
        cu!(cuMemcpy2DAsync(&c2, stream))?;
        wait_stream(
            stream,
            "CUDA waiting for Vulkan's signal (timeline 1 + binary)",
        )?;
        v.wait_fence(produce)?;
        let want_buf = FILL.to_le_bytes().repeat(BUF_SIZE as usize / 4);
        let what = "CUDA does not see Vulkan's vkCmdFillBuffer";
        same(got_buf.as_slice(), &want_buf, what)?;
        let what = "CUDA does not see Vulkan's image texels";
        same(got_img.as_slice(), &texels, what)?;
        println!("CUDA read Vulkan's buffer ({BUF_SIZE} bytes) and image ({IMG_W}x{IMG_H} RGBA8)");

        // --- CUDA: write its own bytes, signal timeline = 2 and the binary semaphore. ---
        let cuda_buf = kept(PageLocked::with(&pattern(BUF_SIZE as usize, 0xC0DA)))?;
        cu!(cuMemcpyHtoDAsync(buf_ptr, cuda_buf.vptr(), n, stream))?;
        let cuda_img: Vec<u8> = texels.iter().map(|b| !b.rotate_left(3)).collect();
        let cuda_img = kept(PageLocked::with(&cuda_img))?;
        let c3 = CUDA_MEMCPY3D {
            srcMemoryType: CU_MEMORYTYPE_HOST,
            srcHost: cuda_img.vptr(),
            srcPitch: IMG_W * 4,
            srcHeight: IMG_H,
            dstMemoryType: CU_MEMORYTYPE_ARRAY,
            dstArray: level,
            WidthInBytes: IMG_W * 4,
            Height: IMG_H,
            Depth: 1,
            ..Default::default()
        };
        cu!(cuMemcpy3DAsync(&c3, stream))?;
        let mut signals: [CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS; 2] =
            unsafe { core::mem::zeroed() };
        signals[0].params.fence.value = 2;
        let gp = signals.as_ptr();
        cu!(cuSignalExternalSemaphoresAsync(sp, gp, 2, stream))?;

        // --- Vulkan: host wait for 2, then read CUDA's bytes (GPU wait on the binary one). ---
        let tl = [timeline];
        let two = [2u64];
        unsafe {
            v.device.wait_semaphores(
                &vk::SemaphoreWaitInfo::default()
                    .semaphores(&tl)
                    .values(&two),
                30_000_000_000,
            )
        }
        .map_err(vk_err("vkWaitSemaphores(timeline >= 2)"))?;
        let value = unsafe { v.device.get_semaphore_counter_value(timeline) }
            .map_err(vk_err("vkGetSemaphoreCounterValue"))?;
        ensure!(value == 2, "timeline after CUDA's signal: {value}, not 2");
        let consume = v.submit(
            |d, cb| unsafe {
                let acquire = Barrier {
                    families: [vk::QUEUE_FAMILY_EXTERNAL, family],
                    layouts: [L::GENERAL, L::TRANSFER_SRC_OPTIMAL],
                    access: [A::empty(), A::TRANSFER_READ],
                    stages: [S::TRANSFER; 2],
                };
                acquire.record(d, cb, (Some(vbuf), image));
                d.cmd_copy_buffer(
                    cb,
                    vbuf,
                    readback_buf,
                    &[vk::BufferCopy {
                        src_offset: 0,
                        dst_offset: 0,
                        size: BUF_SIZE,
                    }],
                );
                d.cmd_copy_image_to_buffer(
                    cb,
                    image,
                    vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                    readback_img,
                    &[image_copy(IMG_W as u32, IMG_H as u32)],
                );
                let to_host = vk::MemoryBarrier::default()
                    .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
                    .dst_access_mask(vk::AccessFlags::HOST_READ);
                d.cmd_pipeline_barrier(
                    cb,
                    vk::PipelineStageFlags::TRANSFER,
                    vk::PipelineStageFlags::HOST,
                    vk::DependencyFlags::empty(),
                    &[to_host],
                    &[],
                    &[],
                );
            },
            &[binary],
            &[],
            &[],
        )?;
        v.wait_fence(consume)?;
        let vk_buf = unsafe { std::slice::from_raw_parts(readback_buf_ptr, BUF_SIZE as usize) };
        let what = "Vulkan does not see CUDA's buffer bytes";
        same(vk_buf, cuda_buf.as_slice(), what)?;
        let vk_img = unsafe { std::slice::from_raw_parts(readback_img_ptr, texels.len()) };
        let what = "Vulkan does not see CUDA's image texels";
        same(vk_img, cuda_img.as_slice(), what)?;
        println!("Vulkan read CUDA's buffer and image bytes after vkWaitSemaphores(2)");

        // --- CUDA really waits: a wait for 3 holds the stream until Vulkan signals 3 from the host. ---
        const MARK: u32 = 0x5EED_F00D;
        waits[0].params.fence.value = 3;
        let (tl, w0) = (&cu_timeline, &waits[0]);
        cu!(cuWaitExternalSemaphoresAsync(tl, w0, 1, stream))?;
        cu!(cuMemsetD32Async(buf_ptr, MARK, 1, stream))?;
        std::thread::sleep(std::time::Duration::from_millis(200));
        cu_err!(CUDA_ERROR_NOT_READY, cuStreamQuery(stream))?;
        let mut word = [0u8; 4];
        cu!(cuMemcpyDtoH(word.as_mut_ptr().cast(), buf_ptr, 4))?;
        let (ran, w) = (word != cuda_buf.as_slice()[..4], u32::from_le_bytes(word));
        ensure!(!ran, "work behind the unmet wait already ran ({w:#x})");
        unsafe {
            v.device.signal_semaphore(
                &vk::SemaphoreSignalInfo::default()
                    .semaphore(timeline)
                    .value(3),
            )
        }
        .map_err(vk_err("vkSignalSemaphore(3)"))?;
        wait_stream(stream, "CUDA waiting for vkSignalSemaphore(3)")?;
        cu!(cuMemcpyDtoH(word.as_mut_ptr().cast(), buf_ptr, 4))?;
        let ran = u32::from_le_bytes(word) == MARK;
        ensure!(
            ran,
            "work behind the wait did not run after Vulkan signaled 3"
        );
        println!("CUDA's wait for timeline 3 held the stream until vkSignalSemaphore(3)");

        // --- Semaphore import flags not zero ("must be zero"): CUDA_ERROR_INVALID_VALUE
        // (measured on driver 580); a failed import leaves the descriptor ours. ---
        let fd = v.semaphore_fd(binary)?;
        let mut sd: CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC = unsafe { core::mem::zeroed() };
        sd.type_ = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD;
        sd.handle.fd = fd;
        sd.flags = 1;
        let mut bad: CUexternalSemaphore = null_mut();
        let r = unsafe { cuImportExternalSemaphore(&mut bad, &sd) };
        if r == CUDA_SUCCESS {
            unsafe { cuDestroyExternalSemaphore(bad) };
        }
        let still_ours = r != CUDA_SUCCESS && fd_is_open(fd);
        if still_ours {
            close_fd(fd)?;
        }
        common::expect_error(
            r,
            CUDA_ERROR_INVALID_VALUE,
            "cuImportExternalSemaphore(OPAQUE_FD, flags 1)",
        )?;
        ensure!(still_ours, "descriptor closed by a failed semaphore import");
        cu!(cuStreamQuery(stream))?;

        // --- Release everything: CUDA first, then Vulkan (Drop). ---
        for p in [got_buf, got_img, cuda_buf, cuda_img] {
            ManuallyDrop::into_inner(p).free()?;
        }
        cu!(cuStreamDestroy(stream))?;
        cu!(cuMemFree(buf_ptr))?;
        cu!(cuMipmappedArrayDestroy(mip))?;
        cu!(cuDestroyExternalMemory(cu_buf))?;
        cu!(cuDestroyExternalMemory(cu_img))?;
        cu!(cuDestroyExternalSemaphore(cu_timeline))?;
        cu!(cuDestroyExternalSemaphore(cu_binary))?;
        let value = unsafe { v.device.get_semaphore_counter_value(timeline) }
            .map_err(vk_err("vkGetSemaphoreCounterValue"))?;
        ensure!(value == 3, "timeline at the end: {value}, not 3");
        drop(v);
        // The process keeps working.
        let (mut free, mut total) = (0usize, 0usize);
        cu!(cuMemGetInfo(&mut free, &mut total))?;
        let what = format!("cuMemGetInfo: free {free}, total {total}");
        ensure!(free > 0 && free <= total, "{what}");
        Ok(None)
    }
}
