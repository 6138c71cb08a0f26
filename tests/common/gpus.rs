//! Every GPU this process sees, and the one pair loop of the multi-GPU tests:
//! the devices ([`every_gpu`]), their ordered pairs ([`pairs`],
//! [`for_each_pair`]), peer capability for every pair
//! ([`require_peer_access`]), a copy kernel a device runs itself
//! ([`CopyKernel`]), and the every-device check of memory they all reach
//! ([`each_writes_every_other_reads`]): each device writes its own slot,
//! every device reads every slot back as its writer wrote it, and the same
//! check given bytes their writer never wrote must refuse them
//! ([`refuses_unwritten`], its wrong twin).
//!
//! The cross-process tests start one importer child a device
//! ([`spawn_importers`], Unix only), each told its device and its slice of
//! the shared bytes ([`slice`]).
use super::memory::{pattern, same, DeviceBuf};
use super::{Checks, Gpu, TestResult};
use core::ptr::null_mut;
use cuda_mem_sys::*;
use libtest_mimic::Failed;

/// The ordinal of the device an importer child runs on (set by [`spawn_importers`]).
pub const DEVICE_VAR: &str = "CUDA_MEM_SYS_IMPORTER_DEVICE";
/// How many importers share the bytes (set by [`spawn_importers`]).
pub const IMPORTERS_VAR: &str = "CUDA_MEM_SYS_IMPORTERS";

/// How many devices this process sees (`cuDeviceGetCount`).
pub fn device_count() -> Result<i32, Failed> {
    let mut n = 0;
    cu!(cuDeviceGetCount(&mut n))?;
    ensure!(n > 0, "cuDeviceGetCount: {n} devices");
    Ok(n)
}

/// Every device's primary context, in ordinal order (`gpus[k]` is device
/// `k`); device 0's is current on return.
pub fn every_gpu() -> Result<Vec<Gpu>, Failed> {
    let gpus = (0..device_count()?)
        .map(Gpu::new)
        .collect::<Result<Vec<_>, _>>()?;
    cu!(cuCtxSetCurrent(gpus[0].ctx))?;
    Ok(gpus)
}

/// Every ordered pair `(a, b)` of distinct indices below `n`: `n (n - 1)`
/// of them, none twice.
pub fn pairs(n: usize) -> Vec<(usize, usize)> {
    (0..n)
        .flat_map(|a| (0..n).filter(move |&b| b != a).map(move |b| (a, b)))
        .collect()
}

/// Runs `f(a, b)` for every ordered pair of [`pairs`]`(n)`: every pair runs,
/// and each failure is reported with its pair.
pub fn for_each_pair(n: usize, mut f: impl FnMut(usize, usize) -> TestResult) -> TestResult {
    let mut c = Checks::new();
    for (a, b) in pairs(n) {
        c.note(&format!("devices {a} -> {b}"), f(a, b));
    }
    c.finish()
}

/// `cuDeviceCanAccessPeer` for every ordered pair (printed); fails naming
/// each device that cannot reach another's memory.
pub fn require_peer_access(gpus: &[Gpu]) -> TestResult {
    let mut can = vec![];
    let checked = for_each_pair(gpus.len(), |reader, owner| {
        let mut v = -1;
        let (r, o) = (gpus[reader].dev, gpus[owner].dev);
        cu!(cuDeviceCanAccessPeer(&mut v, r, o))?;
        can.push(format!("{reader}->{owner}:{v}"));
        ensure!(
            v == 1,
            "device {reader} cannot access device {owner}'s memory"
        );
        Ok(())
    });
    println!(
        "  {} GPUs, can-access-peer (reader->owner): {}",
        gpus.len(),
        can.join(" ")
    );
    checked
}

/// The bytes device `writer` writes in a multi-GPU test (`salt` tells the
/// tests, and the owners within a test, apart): they differ from any other
/// writer's at every byte.
pub fn written_by(writer: usize, n: usize, salt: u32) -> Vec<u8> {
    pattern(n, salt.wrapping_mul(64).wrapping_add(writer as u32))
}

/// `Ok` if `got`, read by device `reader`, is what device `writer` wrote.
pub fn read_as_written(got: &[u8], writer: usize, reader: usize, salt: u32) -> TestResult {
    let what = format!("device {reader} reading what device {writer} wrote");
    same(got, &written_by(writer, got.len(), salt), &what)
}

/// The wrong twin of [`read_as_written`]: given bytes device `writer` never
/// wrote (another device's), the check must refuse them.
pub fn refuses_unwritten(other: &[u8], writer: usize, reader: usize, salt: u32) -> TestResult {
    ensure!(
        read_as_written(other, writer, reader, salt).is_err(),
        "the check of device {writer}'s bytes read by device {reader} accepted bytes device {writer} never wrote"
    );
    Ok(())
}

/// Memory at `ptr` that every device of `gpus` may read and write, one slot
/// of `slot` bytes (a multiple of 4) a device: device `k`'s own kernel
/// writes [`written_by`]`(k)` into slot `k`; then every device's kernel
/// copies the whole range into its own memory, and each slot is checked as
/// its writer wrote it (every ordered pair, and each device's own slot). The
/// wrong twin runs beside it: slot 0 checked as if device 1 (where there is
/// one device: a device that does not exist) had written it must be
/// refused. Returns the range as written. Leaves device 0's context current.
pub fn each_writes_every_other_reads(
    gpus: &[Gpu],
    ptr: CUdeviceptr,
    slot: usize,
    salt: u32,
) -> Result<Vec<u8>, Failed> {
    let n = gpus.len();
    for (k, g) in gpus.iter().enumerate() {
        cu!(cuCtxSetCurrent(g.ctx))?;
        let kernel = CopyKernel::load()?;
        let src = DeviceBuf::with(&written_by(k, slot, salt))?;
        kernel.copy(ptr + (k * slot) as u64, src.ptr, slot, null_mut())?;
        cu!(cuCtxSynchronize())?;
    }
    let mut c = Checks::new();
    for (reader, g) in gpus.iter().enumerate() {
        cu!(cuCtxSetCurrent(g.ctx))?;
        let kernel = CopyKernel::load()?;
        let dst = DeviceBuf::new(n * slot)?;
        kernel.copy(dst.ptr, ptr, n * slot, null_mut())?;
        cu!(cuCtxSynchronize())?;
        let got = dst.read()?;
        for (writer, bytes) in got.chunks(slot).enumerate() {
            c.ok(read_as_written(bytes, writer, reader, salt));
        }
        c.ok(refuses_unwritten(&got[..slot], 1, reader, salt));
    }
    cu!(cuCtxSetCurrent(gpus[0].ctx))?;
    println!(
        "  {n} devices each wrote {slot} B and read all {} B back ({} ordered pairs)",
        n * slot,
        pairs(n).len()
    );
    c.finish()?;
    Ok((0..n).flat_map(|k| written_by(k, slot, salt)).collect())
}

/// Byte range `k` of `n` nearly equal slices of `size` bytes (the last one
/// takes the rest).
pub fn slice(size: usize, n: usize, k: usize) -> std::ops::Range<usize> {
    let each = size / n;
    let end = if k + 1 == n { size } else { (k + 1) * each };
    k * each..end
}

/// `base` with each slice `k` of `n` ([`slice`]) replaced by
/// `pattern(len, seed + k)`: the bytes after each importer wrote its own.
pub fn sliced(base: &[u8], n: usize, seed: u32) -> Vec<u8> {
    let mut v = base.to_vec();
    for k in 0..n {
        let r = slice(v.len(), n, k);
        let len = r.len();
        v[r].copy_from_slice(&pattern(len, seed + k as u32));
    }
    v
}

/// One child of this test binary in `role` a device: child `k` is told to
/// run on device `k` ([`DEVICE_VAR`]) and how many share the bytes
/// ([`IMPORTERS_VAR`]), with the test's `env` too. Every wait on them is
/// bounded, and dropping one kills it ([`super::process_death::Peer`]).
#[cfg(unix)]
pub fn spawn_importers(
    role: &str,
    n: usize,
    env: &[(&str, String)],
) -> Result<Vec<super::process_death::Peer>, Failed> {
    (0..n)
        .map(|k| {
            let mut env = env.to_vec();
            env.push((DEVICE_VAR, k.to_string()));
            env.push((IMPORTERS_VAR, n.to_string()));
            super::process_death::Peer::spawn(role, &env)
        })
        .collect()
}

/// In an importer child: its device and how many importers there are.
pub fn importer_place() -> Result<(usize, usize), Failed> {
    let var = |name: &str| -> Result<usize, Failed> {
        let v = std::env::var(name).map_err(|e| format!("{name}: {e}"))?;
        Ok(v.parse().map_err(|e| format!("{name}={v}: {e}"))?)
    };
    Ok((var(DEVICE_VAR)?, var(IMPORTERS_VAR)?))
}

pub use super::kernels::CopyKernel;

/// One step of a conversation with every importer, in turn: tells each
/// `say` (where given) and expects `want` back from each, within the link's
/// bound.
#[cfg(unix)]
pub fn every_importer(
    importers: &mut [super::process_death::Peer],
    say: Option<&str>,
    want: &str,
) -> TestResult {
    for (k, p) in importers.iter_mut().enumerate() {
        if let Some(say) = say {
            p.link.send(say)?;
        }
        let answer = p.link.expect()?;
        ensure!(answer == want, "importer {k} sent {answer:?}, not {want:?}");
    }
    Ok(())
}

/// Every importer told to end (its socket closed), then waited for (bounded):
/// every importer's failure is reported.
#[cfg(unix)]
pub fn finish_importers(importers: Vec<super::process_death::Peer>) -> TestResult {
    let mut c = Checks::new();
    for (k, p) in importers.into_iter().enumerate() {
        c.note(&format!("importer {k}"), p.finish());
    }
    c.finish()
}
