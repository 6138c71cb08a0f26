//! The smallest proof that the bindings reach a real driver and runtime:
//! versions, the device's name, and bytes through device memory.
mod common;

use common::{round_trip, DeviceBuf, Gpu, TestResult};
use cuda_mem_sys::*;

fn driver_and_runtime_versions() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let (mut driver, mut runtime) = (0, 0);
    cu!(cuDriverGetVersion(&mut driver))?;
    rt!(cudaRuntimeGetVersion(&mut runtime))?;
    println!("driver {driver}, runtime {runtime}, headers {CUDA_VERSION}");
    // NVIDIA's minor-version compatibility: a runtime runs on any driver of
    // its major (a 13.5 runtime on a 13.0 driver); across majors the driver
    // must be the newer.
    let compatible = driver >= runtime || driver / 1000 == runtime / 1000;
    if driver < runtime && compatible {
        println!("driver {driver} older than runtime {runtime}: same major (minor-version compatibility)");
    }
    ensure!(
        compatible,
        "driver {driver} older than runtime {runtime}, of another major"
    );
    ensure!(
        runtime as u32 == CUDA_VERSION,
        "runtime {runtime} is not the headers' {CUDA_VERSION}"
    );
    Ok(())
}

fn device_memory_round_trip() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let buf = DeviceBuf::new(4096)?;
    round_trip(buf.ptr, 4096, 7, "bytes through the device")
}

fn main() {
    common::main(
        device_tests![driver_and_runtime_versions, device_memory_round_trip],
        &[],
    );
}
