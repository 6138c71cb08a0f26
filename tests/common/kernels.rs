//! The device tests' copy kernel (`tests/kernels/copy_u32.ptx`), loaded with
//! `cuModuleLoadData`: a device itself reads and writes the memory under test.
use super::TestResult;
use core::ffi::c_void;
use core::ptr::null_mut;
use cuda_mem_sys::*;
use libtest_mimic::Failed;

/// `copy_u32(dst, src, n)`, NUL-terminated for `cuModuleLoadData`.
const COPY_PTX: &str = concat!(include_str!("../kernels/copy_u32.ptx"), "\0");

/// The copy kernel loaded into the current context.
pub struct CopyKernel {
    module: CUmodule,
    func: CUfunction,
}

impl CopyKernel {
    pub fn load() -> Result<CopyKernel, Failed> {
        let mut module: CUmodule = null_mut();
        cu!(cuModuleLoadData(&mut module, COPY_PTX.as_ptr().cast()))?;
        let mut func: CUfunction = null_mut();
        let got = cu!(cuModuleGetFunction(&mut func, module, c"copy_u32".as_ptr()));
        if got.is_err() {
            unsafe { cuModuleUnload(module) };
        }
        got?;
        Ok(CopyKernel { module, func })
    }

    /// Copies `bytes` (a multiple of 4) from `src` to `dst` on `stream`.
    pub fn copy(&self, dst: u64, src: u64, bytes: usize, stream: CUstream) -> TestResult {
        let (mut d, mut s, mut n) = (dst, src, (bytes / 4) as u32);
        let mut params = [
            (&mut d as *mut u64).cast::<c_void>(),
            (&mut s as *mut u64).cast::<c_void>(),
            (&mut n as *mut u32).cast::<c_void>(),
        ];
        cu!(cuLaunchKernel(
            self.func,
            n.div_ceil(256),
            1,
            1,
            256,
            1,
            1,
            0,
            stream,
            params.as_mut_ptr(),
            null_mut()
        ))
    }
}

impl Drop for CopyKernel {
    fn drop(&mut self) {
        unsafe { cuModuleUnload(self.module) };
    }
}
