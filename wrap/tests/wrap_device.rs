//! The wrapper's safe API on a GPU: each test checks what reached the device
//! (bytes written and read back), and a wrong case each returns its
//! documented code as an `Err`. Without a usable driver or device every test
//! reports itself ignored with the reason (`cuInit`'s or
//! `cuDeviceGetCount`'s code), never passes empty; where the run must have
//! GPUs (`CUDA_MEM_SYS_REQUIRE_GPUS=N`, `docs/gpu-tests.md`), finding fewer
//! than N fails every test instead.

use cuda_mem_sys as sys;
use cuda_mem_wrap::graph::{CaptureMode, NodeKind};
use cuda_mem_wrap::pool::{Pool, Stream};
use cuda_mem_wrap::vmm::{self, Access, PhysicalMemory, Reservation};
use cuda_mem_wrap::{device_count, location, Context, Error};
use libtest_mimic::{Arguments, Completion, Failed, Trial};

type TestResult = Result<(), Failed>;

/// A test that may find, once it runs, that the device lacks what it needs:
/// `Ok(Some(reason))` reports it ignored with that reason.
type MaybeResult = Result<Option<String>, Failed>;

/// A test's body, or why this build cannot run it.
type Body = Result<Test, String>;

#[derive(Clone, Copy)]
enum Test {
    Runs(fn() -> TestResult),
    May(fn() -> MaybeResult),
}

/// Fails with `message` unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+).into());
        }
    };
}

/// `n` bytes that differ along the buffer and from one seed to the next.
fn pattern(n: usize, seed: u32) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_right(13) as u8 ^ seed as u8)
        .collect()
}

fn same(got: &[u8], want: &[u8], what: &str) -> TestResult {
    match got.iter().zip(want).position(|(a, b)| a != b) {
        None if got.len() == want.len() => Ok(()),
        None => Err(format!("{what}: {} bytes, expected {}", got.len(), want.len()).into()),
        Some(i) => Err(format!(
            "{what}: byte {i} is {:#04x}, expected {:#04x}",
            got[i], want[i]
        )
        .into()),
    }
}

/// `Ok` if `result` is exactly the error `want` (its call and code).
fn expect_err<T: std::fmt::Debug>(result: Result<T, Error>, want: Error, what: &str) -> TestResult {
    match result {
        Err(e) if e == want => {
            println!("  {what}: {e}");
            Ok(())
        }
        Err(e) => Err(format!("{what}: {e}, expected {want:?}").into()),
        Ok(v) => Err(format!("{what}: succeeded ({v:?}), expected {want:?}").into()),
    }
}

fn drv(call: &'static str, code: sys::CUresult) -> Error {
    Error::Driver { call, code }
}

/// Used by the pool test, which needs 12.2 (`maxSize`).
#[cfg(cuda_12020)]
fn rt(call: &'static str, code: sys::cudaError_t) -> Error {
    Error::Runtime { call, code }
}

/// A VMM range end to end: reserve two granules, create as much memory, map
/// it, set read-write access (the driver reports none before, read-write
/// after), write a pattern with cuMemcpyHtoD and read it back with
/// cuMemcpyDtoH; then unmap, release and free, each returning success.
fn vmm_range_holds_what_was_written() -> TestResult {
    let ctx = Context::primary(0)?;
    let g = vmm::granularity(&ctx)?;
    let range = Reservation::new(&ctx, 2 * g)?;
    let mem = PhysicalMemory::new(&ctx, 2 * g)?;
    let mut map = range.map(0, &mem)?;
    ensure!(
        map.ptr() == range.ptr(),
        "mapped at {:#x}, not the range's start",
        map.ptr()
    );
    let before = map.access(&ctx)?;
    ensure!(
        before == Access::None,
        "access before cuMemSetAccess: {before:?}"
    );
    map.set_access(&ctx, Access::ReadWrite)?;
    let after = map.access(&ctx)?;
    ensure!(
        after == Access::ReadWrite,
        "access after cuMemSetAccess: {after:?}"
    );
    let data = pattern(2 * g, 1);
    map.write(0, &data)?;
    let mut back = vec![0u8; 2 * g];
    map.read(0, &mut back)?;
    same(&back, &data, "the range read back")?;
    // A part of it, at an offset.
    let part = pattern(4096, 2);
    map.write(g + 512, &part)?;
    let mut back = vec![0u8; 4096];
    map.read(g + 512, &mut back)?;
    same(&back, &part, "4 KiB at granule 1 + 512")?;
    map.unmap()?;
    mem.release()?;
    range.free()?;
    Ok(())
}

/// The wrong cases of the VMM range: memory mapped past the reservation's
/// end (bigger than the reservation, or at an offset that leaves it), a copy
/// before access is set, a copy past the mapping's end, and a size off the
/// granularity (the driver's own refusal), each an `Err` with
/// CUDA_ERROR_INVALID_VALUE; then a mapping still works.
fn vmm_range_refuses_what_does_not_fit() -> TestResult {
    let ctx = Context::primary(0)?;
    let g = vmm::granularity(&ctx)?;
    let invalid = sys::CUDA_ERROR_INVALID_VALUE;
    let small = Reservation::new(&ctx, g)?;
    let big = PhysicalMemory::new(&ctx, 2 * g)?;
    expect_err(
        small.map(0, &big),
        drv("cuMemMap", invalid),
        "2 granules into a 1-granule reservation",
    )?;
    let range = Reservation::new(&ctx, 2 * g)?;
    expect_err(
        range.map(g, &big),
        drv("cuMemMap", invalid),
        "2 granules at granule 1 of 2",
    )?;
    expect_err(
        range.map(usize::MAX, &big),
        drv("cuMemMap", invalid),
        "at offset usize::MAX",
    )?;
    // The driver's refusal, named by the driver.
    let odd = PhysicalMemory::new(&ctx, g + g / 2);
    let e = odd.as_ref().err().copied();
    expect_err(
        odd,
        drv("cuMemCreate", invalid),
        "cuMemCreate of 1.5 granules",
    )?;
    let shown = e.map(|e| e.to_string()).unwrap_or_default();
    ensure!(
        shown == "cuMemCreate returned CUDA_ERROR_INVALID_VALUE (1)",
        "the error reads {shown:?}"
    );
    // Mapped, no access yet: copies are refused, not sent to the device.
    let mut map = range.map(0, &big)?;
    expect_err(
        map.write(0, &[1, 2, 3]),
        drv("cuMemcpyHtoD", invalid),
        "a write before cuMemSetAccess",
    )?;
    expect_err(
        map.read(0, &mut [0; 3]),
        drv("cuMemcpyDtoH", invalid),
        "a read before cuMemSetAccess",
    )?;
    map.set_access(&ctx, Access::ReadWrite)?;
    let past = map.write(2 * g - 2, &[1, 2, 3]);
    expect_err(
        past,
        drv("cuMemcpyHtoD", invalid),
        "3 bytes at 2 before the end",
    )?;
    // Read-only: reads work, writes are refused.
    map.set_access(&ctx, Access::Read)?;
    expect_err(
        map.write(0, &[1]),
        drv("cuMemcpyHtoD", invalid),
        "a write to a read-only mapping",
    )?;
    map.set_access(&ctx, Access::ReadWrite)?;
    // And the range still works.
    let data = pattern(2 * g, 3);
    map.write(0, &data)?;
    let mut back = vec![0u8; 2 * g];
    map.read(0, &mut back)?;
    same(&back, &data, "the range after the refusals")
}

/// A stream-ordered pool end to end: allocate 1 MiB from a new pool in a
/// stream's order, set it to 0xa5 with cudaMemsetAsync and read it back,
/// copy a pattern in and read it back; the pool's location is device 0.
fn pool_allocation_holds_what_was_written() -> TestResult {
    let ctx = Context::primary(0)?;
    let pool = Pool::new(0)?;
    let stream = Stream::new()?;
    let n = 1 << 20;
    let mut buf = pool.alloc_async(n, &stream)?;
    buf.memset_async(0xa5)?;
    let mut back = vec![0u8; n];
    buf.copy_to_host(0, &mut back)?;
    same(
        &back,
        &vec![0xa5; n],
        "the pool buffer after cudaMemsetAsync(0xa5)",
    )?;
    let data = pattern(n, 4);
    buf.copy_from_host(0, &data)?;
    buf.copy_to_host(0, &mut back)?;
    same(&back, &data, "the pool buffer read back")?;
    buf.free()?;
    stream.synchronize()?;
    // The location written in the release's form reads back as device 0.
    let loc = location::device(ctx.device());
    ensure!(
        location::device_id(&loc) == ctx.device(),
        "location id {}",
        location::device_id(&loc)
    );
    Ok(())
}

/// The wrong cases of the pool: an allocation over the pool's maximum size
/// (cudaErrorMemoryAllocation), a copy past the buffer's end
/// (cudaErrorInvalidValue); then the pool still allocates.
#[cfg(cuda_12020)]
fn pool_refuses_what_does_not_fit() -> TestResult {
    let _ctx = Context::primary(0)?;
    let mib = 1 << 20;
    let pool = Pool::with_max_size(0, 64 * mib)?;
    let stream = Stream::new()?;
    let over = pool.alloc_async(128 * mib, &stream).map(|b| b.size());
    let oom = sys::cudaErrorMemoryAllocation;
    expect_err(
        over,
        rt("cudaMallocFromPoolAsync", oom),
        "128 MiB from a pool of at most 64",
    )?;
    let mut buf = pool.alloc_async(mib, &stream)?;
    let inval = sys::cudaErrorInvalidValue;
    let past = buf.copy_from_host(mib - 1, &[1, 2]);
    expect_err(
        past,
        rt("cudaMemcpyAsync", inval),
        "2 bytes at 1 before the end",
    )?;
    let data = pattern(mib, 5);
    buf.copy_from_host(0, &data)?;
    let mut back = vec![0u8; mib];
    buf.copy_to_host(0, &mut back)?;
    same(&back, &data, "the pool buffer after the refusals")
}

/// Allocation inside a capture, in each capture mode: `cudaMallocAsync` on
/// the capturing stream records an allocation node whose address is the
/// buffer's and whose size is its size; the memset, the copy out and the
/// free are nodes too. The graph, launched three times, leaves 0x5a in the
/// buffer outside it each time (zeroed before). The wrong case: a copy into
/// a smaller buffer is refused (cudaErrorInvalidValue) and records nothing.
fn captured_allocation_is_a_graph_node_and_runs_in_each_launch() -> TestResult {
    let _ctx = Context::primary(0)?;
    let n = 1 << 20;
    let pool = Pool::new(0)?;
    let outside = Stream::new()?;
    let small = pool.alloc_async(n / 2, &outside)?;
    for mode in [
        CaptureMode::Global,
        CaptureMode::ThreadLocal,
        CaptureMode::Relaxed,
    ] {
        // `out` is borrowed by the graph once the copy into it is recorded:
        // zeroed first, outside the capture.
        let mut out = pool.alloc_async(n, &outside)?;
        out.memset_async(0)?;
        outside.synchronize()?;
        let mut stream = Stream::new()?;
        let capture = stream.begin_capture(mode)?;
        let mut buf = capture.alloc(n)?;
        let addr = buf.ptr();
        buf.memset(0x5a)?;
        expect_err(
            buf.copy_into(&small),
            Error::Runtime {
                call: "cudaMemcpyAsync",
                code: sys::cudaErrorInvalidValue,
            },
            "1 MiB into 512 KiB",
        )?;
        buf.copy_into(&out)?;
        buf.free()?;
        let graph = capture.end()?;
        let nodes = graph.nodes()?;
        println!("  {mode:?}: {nodes:?}");
        ensure!(
            nodes.contains(&NodeKind::MemAlloc { ptr: addr, size: n }),
            "{mode:?}: no allocation node of {n} bytes at {addr:?}: {nodes:?}"
        );
        for kind in [NodeKind::Memset, NodeKind::Memcpy, NodeKind::MemFree] {
            ensure!(
                nodes.contains(&kind),
                "{mode:?}: no {kind:?} node: {nodes:?}"
            );
        }
        ensure!(
            nodes.len() == 4,
            "{mode:?}: {} nodes, expected 4",
            nodes.len()
        );
        let exec = graph.instantiate()?;
        for launch in 0..3 {
            exec.launch(&stream)?;
            stream.synchronize()?;
            let mut back = vec![0u8; n];
            out.copy_to_host(0, &mut back)?;
            same(&back, &vec![0x5a; n], &format!("{mode:?}, launch {launch}"))?;
        }
    }
    Ok(())
}

/// The same from a pool of one's own (`cudaMallocFromPoolAsync` in the
/// capture): the allocation node's address is the buffer's, and a launch
/// leaves the pattern outside the graph. A capture dropped without `end`
/// leaves its stream usable (a plain allocation on it works after).
fn pool_allocation_in_a_capture_is_a_graph_node() -> TestResult {
    let _ctx = Context::primary(0)?;
    let n = 1 << 20;
    let pool = Pool::new(0)?;
    let outside = Stream::new()?;
    let mut out = pool.alloc_async(n, &outside)?;
    out.memset_async(0)?;
    outside.synchronize()?;
    let graph_pool = Pool::new(0)?;
    let mut stream = Stream::new()?;
    {
        let abandoned = stream.begin_capture(CaptureMode::Global)?;
        let _buf = abandoned.alloc(n)?;
    }
    let mut after = pool.alloc_async(4096, &stream)?;
    after.memset_async(1)?;
    after.free()?;
    stream.synchronize()?;
    let capture = stream.begin_capture(CaptureMode::Global)?;
    let mut buf = capture.alloc_from(&graph_pool, n)?;
    let addr = buf.ptr();
    buf.memset(0xc3)?;
    buf.copy_into(&out)?;
    drop(buf); // the free node, recorded by Drop
    let graph = capture.end()?;
    let nodes = graph.nodes()?;
    ensure!(
        nodes.contains(&NodeKind::MemAlloc { ptr: addr, size: n })
            && nodes.contains(&NodeKind::MemFree),
        "nodes: {nodes:?}"
    );
    let exec = graph.instantiate()?;
    exec.launch(&stream)?;
    stream.synchronize()?;
    let mut back = vec![0u8; n];
    out.copy_to_host(0, &mut back)?;
    same(&back, &vec![0xc3; n], "the pool buffer after one launch")
}

/// A VMM mapping of GPUDirect-RDMA-capable memory exported as a DMA-BUF:
/// the descriptor's size (`lseek` to its end) is the range's, for the whole
/// mapping and for one page at page 1. The wrong cases: an address one byte
/// off a page and a size one byte over are refused before the call
/// (`Error::Misaligned`, code 1), a range past the mapping with
/// CUDA_ERROR_INVALID_VALUE; then the export still works. Ignored where the
/// device does not support DMA-BUF or RDMA with VMM memory.
#[cfg(unix)]
fn vmm_range_exports_a_dma_buf_of_its_size() -> MaybeResult {
    use std::io::{Seek, SeekFrom};
    let ctx = Context::primary(0)?;
    if !vmm::dma_buf_supported(&ctx)? {
        return Ok(Some(
            "CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED or GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED \
             is 0 on device 0"
                .into(),
        ));
    }
    let g = vmm::granularity(&ctx)?;
    let page = vmm::page_size();
    let range = Reservation::new(&ctx, 2 * g)?;
    let mem = PhysicalMemory::new_rdma(&ctx, 2 * g)?;
    let mut map = range.map(0, &mem)?;
    map.set_access(&ctx, Access::ReadWrite)?;
    let size_of = |fd: std::os::fd::OwnedFd| -> Result<u64, Failed> {
        let mut file = std::fs::File::from(fd);
        Ok(file
            .seek(SeekFrom::End(0))
            .map_err(|e| format!("lseek: {e}"))?)
    };
    for (offset, len) in [(0, 2 * g), (page, page)] {
        let fd = map.export_dma_buf(offset, len)?;
        let size = size_of(fd)?;
        println!("  [{offset:#x}, +{len:#x}): a descriptor of {size} bytes");
        ensure!(size == len as u64, "[{offset:#x}, +{len:#x}): {size} bytes");
    }
    let ptr = map.ptr();
    let call = "cuMemGetHandleForAddressRange";
    expect_err(
        map.export_dma_buf(1, page),
        Error::Misaligned {
            call,
            value: ptr + 1,
            align: page,
        },
        "an address 1 byte off a page",
    )?;
    expect_err(
        map.export_dma_buf(0, page + 1),
        Error::Misaligned {
            call,
            value: page as u64 + 1,
            align: page,
        },
        "a size 1 byte over a page",
    )?;
    expect_err(
        map.export_dma_buf(g, 2 * g),
        drv(call, sys::CUDA_ERROR_INVALID_VALUE),
        "2 granules from granule 1 of 2",
    )?;
    let e = map.export_dma_buf(1, page).err().map(|e| e.code());
    ensure!(e == Some(1), "the refusal's code: {e:?}");
    let size = size_of(map.export_dma_buf(0, g)?)?;
    ensure!(size == g as u64, "after the refusals: {size} bytes");
    Ok(None)
}

/// The variable that makes "no usable driver / no device / fewer than N
/// GPUs" a failure (`docs/gpu-tests.md`; the crate's tests read it through
/// their test-support package, which this crate, written as any dependent
/// would be, does not use).
const REQUIRE_GPUS_VAR: &str = "CUDA_MEM_SYS_REQUIRE_GPUS";

/// Why the device tests cannot run here, if they cannot; `Err` where the run
/// requires more GPUs than it finds ([`REQUIRE_GPUS_VAR`]).
fn unavailable() -> Result<Option<String>, String> {
    let v = std::env::var(REQUIRE_GPUS_VAR).unwrap_or_default();
    let required: u32 = match v.trim() {
        "" => 0,
        n => n
            .parse()
            .map_err(|_| format!("{REQUIRE_GPUS_VAR}={n:?} is not a number of GPUs"))?,
    };
    let (found, why) = match device_count() {
        Ok(0) => (0, Some("no CUDA device".to_string())),
        Ok(n) => (n, None),
        Err(e) => (0, Some(format!("no usable CUDA driver: {e}"))),
    };
    if (found as u32) < required {
        let why = why.unwrap_or_else(|| format!("it sees {found}"));
        return Err(format!(
            "{REQUIRE_GPUS_VAR}={required}: this run must see {required} GPU(s), and {why}"
        ));
    }
    Ok(why)
}

fn main() {
    let args = Arguments::from_args();
    let why = unavailable();
    let runs = |f: fn() -> TestResult| -> Body { Ok(Test::Runs(f)) };
    let mut tests: Vec<(&str, Body)> = vec![
        (
            "vmm_range_holds_what_was_written",
            runs(vmm_range_holds_what_was_written),
        ),
        (
            "vmm_range_refuses_what_does_not_fit",
            runs(vmm_range_refuses_what_does_not_fit),
        ),
        (
            "pool_allocation_holds_what_was_written",
            runs(pool_allocation_holds_what_was_written),
        ),
        (
            "captured_allocation_is_a_graph_node_and_runs_in_each_launch",
            runs(captured_allocation_is_a_graph_node_and_runs_in_each_launch),
        ),
        (
            "pool_allocation_in_a_capture_is_a_graph_node",
            runs(pool_allocation_in_a_capture_is_a_graph_node),
        ),
    ];
    #[cfg(unix)]
    tests.push((
        "vmm_range_exports_a_dma_buf_of_its_size",
        Ok(Test::May(vmm_range_exports_a_dma_buf_of_its_size)),
    ));
    // Told as the test's own answer (ignored, with why), so that `May` is
    // made on every target (no dead variant where this test cannot run).
    #[cfg(not(unix))]
    tests.push((
        "vmm_range_exports_a_dma_buf_of_its_size",
        Ok(Test::May(|| {
            Ok(Some("DMA-BUF descriptors are Unix only".into()))
        })),
    ));
    #[cfg(cuda_12020)]
    tests.push((
        "pool_refuses_what_does_not_fit",
        runs(pool_refuses_what_does_not_fit),
    ));
    #[cfg(not(cuda_12020))]
    tests.push((
        "pool_refuses_what_does_not_fit",
        Err(format!(
            "cudaMemPoolProps::maxSize: not in CUDA {}.{} (added in 12.2)",
            sys::CUDA_VERSION / 1000,
            sys::CUDA_VERSION % 1000 / 10
        )),
    ));
    let trials = tests
        .into_iter()
        .map(|(name, test)| {
            let why = why.clone();
            Trial::ignorable_test(name, move || match (test, why) {
                (_, Err(required)) => Err(required.into()),
                (Err(reason), _) | (_, Ok(Some(reason))) => Ok(Completion::ignored_with(reason)),
                (Ok(Test::Runs(f)), Ok(None)) => f().map(|()| Completion::Completed),
                (Ok(Test::May(f)), Ok(None)) => f().map(|ignored| match ignored {
                    Some(reason) => Completion::ignored_with(reason),
                    None => Completion::Completed,
                }),
            })
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
