//! Device-test harness shared by the GPU test files (each is a `harness = false`
//! test target driven by libtest-mimic).
//!
//! Without a CUDA driver or device every device test reports itself *ignored*
//! with the reason (visible in the test output); it never passes without running.
//! Where the run must have GPUs (`CUDA_MEM_SYS_REQUIRE_GPUS=N`: a GPU CI
//! runner, the GPU bundle's scripts), no usable driver, no device or fewer
//! than N of them fails every test instead ([`gate`]).
//! A test binary can re-run itself as a child process (`spawn_child`) for the
//! multi-process tests, and pass file descriptors over a Unix socket.
//!
//! The kit, one of each: tests are registered with `device_tests![]` (a test
//! of an entry point the headers' release lacks is one entry, reported
//! ignored with the reason: [`DeviceTest::not_in_release`]); failed checks are
//! collected in [`Checks`]; a bad call and the proof the process still works
//! afterwards are one `bad!`/[`BadInput`] call; bytes are [`pattern`] and
//! compared with [`same`]; device memory, page-locked memory, streams, events
//! and the host NUMA ids are in [`memory`]; VMM allocations, mappings and
//! their POSIX descriptors in [`vmm`]; every GPU and the one loop over their
//! pairs in [`gpus`]; a copy kernel (PTX) in [`kernels`].
// The macros wrap FFI calls in `unsafe` on purpose: every test body calls C.
#![allow(dead_code)]

// POSIX descriptors over a Unix socket, and the process-death scenarios
// built on them (`process_death::peers`), are Unix only. A test that needs
// them is registered on Windows too, reported ignored with [`POSIX_ONLY`]
// (`device_tests![name if cfg(unix) else POSIX_ONLY]`).
#[cfg(unix)]
pub mod fd_passing;
pub mod process_death;

use cuda_mem_sys::*;
use libtest_mimic::{Arguments, Completion, Failed, Trial};
use std::ffi::CStr;
use std::sync::OnceLock;

pub type TestResult = Result<(), Failed>;

/// One device test: its name, how many GPUs it needs, its body.
pub struct DeviceTest {
    pub name: &'static str,
    pub gpus: i32,
    pub run: Run,
}

/// What running a [`DeviceTest`] means.
pub enum Run {
    /// A body that passes or fails.
    Body(fn() -> TestResult),
    /// A body that returns `Ok(Some(reason))` when something it needs besides
    /// CUDA (Vulkan, say) is not there: the test is then reported ignored.
    MayIgnore(fn() -> Result<Option<String>, Failed>),
    /// Not runnable in this build (an entry point the release lacks): always
    /// reported ignored with this reason, never passed empty.
    Ignored(String),
}

/// What a test body returns: [`TestResult`] (passes or fails), or
/// `Result<Option<String>, Failed>` for a body that finds at run time that
/// the device lacks what it needs (`Ok(Some(reason))`: reported ignored with
/// the reason, never passed empty).
pub trait Body: Sized {
    fn run(f: fn() -> Self) -> Run;
}

impl Body for TestResult {
    fn run(f: fn() -> TestResult) -> Run {
        Run::Body(f)
    }
}

impl Body for Result<Option<String>, Failed> {
    fn run(f: fn() -> Self) -> Run {
        Run::MayIgnore(f)
    }
}

/// A test needing one GPU.
pub fn test<R: Body>(name: &'static str, run: fn() -> R) -> DeviceTest {
    test_gpus(name, 1, run)
}

/// A test needing `gpus` GPUs (reported ignored where fewer exist), its body
/// either kind of [`Body`].
pub fn test_gpus<R: Body>(name: &'static str, gpus: i32, run: fn() -> R) -> DeviceTest {
    DeviceTest {
        name,
        gpus,
        run: R::run(run),
    }
}

impl DeviceTest {
    /// A test whose body may report itself ignored ([`Run::MayIgnore`]).
    pub const fn may_ignore(
        name: &'static str,
        run: fn() -> Result<Option<String>, Failed>,
    ) -> DeviceTest {
        DeviceTest {
            name,
            gpus: 1,
            run: Run::MayIgnore(run),
        }
    }

    /// A test this build cannot run, listed under its own name and reported
    /// ignored with `reason`, e.g. for a test of an entry point the headers'
    /// release lacks:
    /// `DeviceTest::ignored("prefetch_batch", "`cuMemPrefetchBatchAsync`: not in 12.4")`.
    /// A reason written "not in these headers" or "not in this release" is
    /// reported with the headers' release instead ([`release_named`]).
    pub fn ignored(name: &'static str, reason: impl Into<String>) -> DeviceTest {
        DeviceTest {
            name,
            gpus: 1,
            run: Run::Ignored(release_named(&reason.into())),
        }
    }

    /// [`DeviceTest::ignored`] for a test of `entry`, which the CUDA `release`
    /// these bindings were built from does not have.
    pub fn not_in_release(name: &'static str, entry: &str, release: &str) -> DeviceTest {
        DeviceTest::ignored(name, format!("`{entry}`: not in {release}"))
    }

    /// An empty list, which `device_tests!` fills one test at a time.
    pub fn none() -> Vec<DeviceTest> {
        Vec::new()
    }

    /// Runs the test, as a libtest-mimic trial would.
    fn run(self) -> Result<Completion, Failed> {
        if let Run::Ignored(reason) = self.run {
            return Ok(Completion::ignored_with(reason));
        }
        if let Some(reason) = gate(self.gpus)? {
            return Ok(Completion::ignored_with(reason));
        }
        match self.run {
            Run::Body(f) => f().map(|()| Completion::Completed),
            Run::MayIgnore(f) => f().map(|r| match r {
                None => Completion::Completed,
                Some(reason) => Completion::ignored_with(reason),
            }),
            Run::Ignored(_) => unreachable!("handled above"),
        }
    }
}

/// The device tests of a binary, each named after its body:
/// `device_tests![a, b @ 2, c]` is `vec![test("a", a), test_gpus("b", 2, b),
/// test("c", c)]` (a body returns a [`TestResult`], or, where it may find the
/// device lacking, `Result<Option<String>, Failed>`: see [`Body`]). An entry `#[cfg(..)] name` is left out where the cfg does
/// not hold, and `name if cfg(cuda_12080) else "reason"` registers `name`
/// where the cfg holds and, elsewhere, a test of the same name reported
/// ignored with the reason ([`DeviceTest::ignored`]): one line for a test of
/// an entry point some releases lack.
#[macro_export]
macro_rules! device_tests {
    ($($(#[$attr:meta])* $name:ident $(@ $gpus:literal)? $(if cfg($cfg:meta) else $why:expr)?),* $(,)?) => {{
        // One statement a test, so that a cfg'd entry leaves out its own.
        #[allow(unused_mut)]
        let mut tests = $crate::common::DeviceTest::none();
        $(
            $(#[cfg($cfg)])? $(#[$attr])*
            tests.push($crate::common::test_gpus(
                stringify!($name),
                1 $(- 1 + $gpus)?,
                $name,
            ));
            $(
                #[cfg(not($cfg))]
                tests.push($crate::common::DeviceTest::ignored(stringify!($name), $why));
            )?
        )*
        tests
    }};
}

/// Why a test of POSIX file descriptors is not run on Windows, where the
/// shareable handles are `CU_MEM_HANDLE_TYPE_WIN32` handles (not tested).
pub const POSIX_ONLY: &str = "Unix only: POSIX descriptors over a Unix socket \
     (Windows shares CU_MEM_HANDLE_TYPE_WIN32 handles, not tested here)";

/// A failure's message, for a report.
pub fn message(e: Failed) -> String {
    e.message().unwrap_or("failed").to_string()
}

/// The release of the headers these bindings came from, from their
/// `CUDA_VERSION` (13020 -> "13.2").
pub fn headers_release() -> String {
    let v = cuda_mem_sys::CUDA_VERSION;
    format!("{}.{}", v / 1000, v % 1000 / 10)
}

/// `reason` with "these headers" / "this release" replaced by the headers'
/// release, as the release-matrix table reports it: "`cuMemPrefetchBatchAsync`:
/// not in this release (added in 13.0)" reads "... not in 12.4 (added in 13.0)".
pub fn release_named(reason: &str) -> String {
    let release = headers_release();
    reason
        .replace("not in these headers", &format!("not in {release}"))
        .replace("not in this release", &format!("not in {release}"))
}

/// A role a test binary can play as a child process, and its body.
pub type ChildRole = (&'static str, fn() -> TestResult);

/// The environment variable that makes a test binary act as a child process.
pub const CHILD_ROLE_VAR: &str = "CUDA_MEM_SYS_CHILD_ROLE";

/// Set (to anything) by `run.sh --sanitize`'s self-test: the pool-IPC importer
/// child then keeps what it imported, a leak compute-sanitizer must report.
pub const SELFTEST_LEAK_VAR: &str = "CUDA_MEM_SYS_SELFTEST_LEAK_IMPORT";

/// The `main` of a device-test binary: runs a child role if asked to,
/// else the tests (one at a time: some measure device memory).
pub fn main(tests: Vec<DeviceTest>, child_roles: &[ChildRole]) {
    run_child_role(child_roles);
    let mut args = Arguments::from_args();
    if args.test_threads.is_none() {
        args.test_threads = Some(1);
    }
    let trials = tests
        .into_iter()
        .map(|t| Trial::ignorable_test(t.name, move || t.run()))
        .collect();
    libtest_mimic::run(&args, trials).exit();
}

/// If this process was started as a child (`CHILD_ROLE_VAR`), runs that role
/// and exits; else returns. Test binaries with a `main` of their own call it first.
pub fn run_child_role(child_roles: &[ChildRole]) {
    run_role(child_roles, true);
}

/// [`run_child_role`] for roles that need no GPU (the plumbing's own test).
pub fn run_host_child_role(child_roles: &[ChildRole]) {
    run_role(child_roles, false);
}

fn run_role(child_roles: &[ChildRole], needs_gpu: bool) {
    if let Ok(role) = std::env::var(CHILD_ROLE_VAR) {
        let Some((_, f)) = child_roles.iter().find(|(r, _)| *r == role) else {
            eprintln!("unknown child role {role}");
            std::process::exit(2);
        };
        // A child is a fresh process: the driver needs initialising there too.
        if let Some(reason) = needs_gpu.then(|| unavailable(1)).flatten() {
            eprintln!("child {role}: {reason}");
            std::process::exit(1);
        }
        match f() {
            Ok(()) => std::process::exit(0),
            Err(e) => {
                eprintln!("child {role} failed: {}", e.message().unwrap_or("?"));
                std::process::exit(1);
            }
        }
    }
}

/// Why tests needing `gpus` devices cannot run here, or `None` if they can.
/// Where the run requires GPUs (`CUDA_MEM_SYS_REQUIRE_GPUS=N`,
/// [`test_support::REQUIRE_GPUS_VAR`]), no usable driver, no device or fewer
/// than N devices is a failure naming the variable, not a reason: see
/// [`gate`].
pub fn unavailable(gpus: i32) -> Option<String> {
    match probe() {
        Err(reason) => Some(reason.clone()),
        Ok(n) if *n < gpus => Some(format!("needs {gpus} GPUs, this machine has {n}")),
        Ok(_) => None,
    }
}

/// What a test needing `gpus` devices does here: `Ok(None)` runs it,
/// `Ok(Some(why))` reports it ignored, `Err` fails it (the run requires more
/// GPUs than it finds: [`test_support::REQUIRE_GPUS_VAR`]). A test needing
/// more GPUs than the required count is still reported ignored where the
/// machine has fewer.
pub fn gate(gpus: i32) -> Result<Option<String>, Failed> {
    match probe() {
        Err(reason) => Ok(Some(test_support::may_ignore(reason.clone())?)),
        Ok(n) => {
            test_support::enough(*n as u32)?;
            Ok((*n < gpus).then(|| format!("needs {gpus} GPUs, this machine has {n}")))
        }
    }
}

/// `cuInit` and `cuDeviceGetCount`, once a process: the devices, or why
/// there are none to use.
fn probe() -> &'static Result<i32, String> {
    static PROBE: OnceLock<Result<i32, String>> = OnceLock::new();
    PROBE.get_or_init(|| {
        let r = unsafe { cuInit(0) };
        let stub = "no CUDA driver: cuInit reached the stub libcuda (CUDA_ERROR_STUB_LIBRARY)";
        if r == CUDA_ERROR_STUB_LIBRARY {
            return Err(stub.into());
        }
        if r != CUDA_SUCCESS {
            return Err(format!(
                "no usable CUDA driver: cuInit returned {}",
                r.name()
            ));
        }
        let mut n = 0;
        let r = unsafe { cuDeviceGetCount(&mut n) };
        if r != CUDA_SUCCESS || n == 0 {
            return Err(format!(
                "no CUDA device (cuDeviceGetCount returned {}, {n} devices)",
                r.name()
            ));
        }
        Ok(n)
    })
}

/// A result code of the driver (`CUresult`) or of the runtime (`cudaError_t`):
/// the checks below are one function for both.
pub trait Code: Copy + PartialEq {
    const SUCCESS: Self;
    /// The success code's name, as one word.
    const SUCCESS_NAME: &'static str;
    /// `CUDA_ERROR_INVALID_VALUE (1)`, `cudaErrorInvalidValue (1)`: the API's name.
    fn name(self) -> String;
}

/// `NAME (n)`, from the name the API gave (`None` where it gave none).
fn named(name: *const core::ffi::c_char, n: impl std::fmt::Display) -> Option<String> {
    let name = (!name.is_null()).then(|| unsafe { CStr::from_ptr(name) }.to_string_lossy())?;
    Some(format!("{name} ({n})"))
}

impl Code for CUresult {
    const SUCCESS: CUresult = CUDA_SUCCESS;
    const SUCCESS_NAME: &'static str = "CUDA_SUCCESS";
    fn name(self) -> String {
        let mut name = core::ptr::null();
        let known = unsafe { cuGetErrorName(self, &mut name) } == CUDA_SUCCESS;
        let name = if known { named(name, self.0) } else { None };
        name.unwrap_or_else(|| format!("CUresult {}", self.0))
    }
}

impl Code for cudaError_t {
    const SUCCESS: cudaError_t = cudaSuccess;
    const SUCCESS_NAME: &'static str = "cudaSuccess";
    fn name(self) -> String {
        let name = named(unsafe { cudaGetErrorName(self) }, self.0);
        name.unwrap_or_else(|| format!("cudaError_t {}", self.0))
    }
}

/// `CUDA_ERROR_INVALID_VALUE (1)`: the driver's (or the runtime's) name for a code.
pub fn error_name<C: Code>(r: C) -> String {
    r.name()
}

/// `Ok` if a driver or runtime call succeeded, else a failure naming the call and the code.
pub fn check<C: Code>(r: C, what: &str) -> TestResult {
    if r == C::SUCCESS {
        return Ok(());
    }
    Err(format!("{what} returned {}", r.name()).into())
}

/// Prints one parseable line for a deliberately bad call, which
/// `cargo xtask device-report <dir>` turns into the bad-input table of
/// `docs/device-results.md`:
/// `bad-input: <entry point> expected=<code> got=<code> case=<the call>`.
/// The entry point is the name before the first `(` of `what`; `entry`
/// overrides it where `what` does not start with one.
pub fn report_bad_input(entry: Option<&str>, what: &str, expected: &str, got: &str) {
    let what = what.split_whitespace().collect::<Vec<_>>().join(" ");
    let entry = entry.unwrap_or_else(|| what.split(['(', ' ']).next().unwrap_or("?"));
    let one_word = |c: &str| c.replace(" (", "(").replace(' ', "_");
    let (expected, got) = (one_word(expected), one_word(got));
    println!("bad-input: {entry} expected={expected} got={got} case={what}");
}

/// `Ok` if a driver or runtime call returned exactly `expected` (a bad call,
/// `expected` not success, is reported for the bad-input table).
pub fn expect_error<C: Code>(r: C, expected: C, what: &str) -> TestResult {
    if expected != C::SUCCESS {
        report_bad_input(None, what, &expected.name(), &r.name());
    }
    if r == expected {
        return Ok(());
    }
    Err(format!("{what} returned {}, expected {}", r.name(), expected.name()).into())
}

/// `twins!(scenario => rt_test, drv_test; ..)`: the runtime's and the
/// driver's test of one twin scenario generic over its API (the `Rt` and
/// `Drv` types in scope where it is used), under their registered names.
#[macro_export]
macro_rules! twins {
    ($($scenario:ident => $rt:ident, $drv:ident;)*) => {$(
        fn $rt() -> $crate::common::TestResult {
            $scenario::<Rt>()
        }
        fn $drv() -> $crate::common::TestResult {
            $scenario::<Drv>()
        }
    )*};
}

/// Driver call that must succeed: `cu!(cuMemCreate(&mut h, size, &prop, 0))?`.
#[macro_export]
macro_rules! cu {
    ($call:expr) => {
        $crate::common::check(unsafe { $call }, stringify!($call))
    };
}

/// Runtime call that must succeed: `rt!(cudaMallocAsync(&mut p, n, s))?`.
#[macro_export]
macro_rules! rt {
    ($call:expr) => {
        $crate::common::check(unsafe { $call }, stringify!($call))
    };
}

/// Driver call that must fail with a given code: `cu_err!(CUDA_ERROR_INVALID_VALUE, cuMemMap(..))?`.
#[macro_export]
macro_rules! cu_err {
    ($expected:expr, $call:expr) => {
        $crate::common::expect_error(unsafe { $call }, $expected, stringify!($call))
    };
}

/// Runtime call that must fail with a given code.
#[macro_export]
macro_rules! rt_err {
    ($expected:expr, $call:expr) => {
        $crate::common::expect_error(unsafe { $call }, $expected, stringify!($call))
    };
}

/// Fails the test with a message unless `cond` holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+).into());
        }
    };
}

/// Device `ordinal` with its primary context made current on this thread.
pub struct Gpu {
    pub dev: CUdevice,
    pub ctx: CUcontext,
}

impl Gpu {
    pub fn new(ordinal: i32) -> Result<Gpu, Failed> {
        let (mut dev, mut ctx) = (0, core::ptr::null_mut());
        cu!(cuDeviceGet(&mut dev, ordinal))?;
        cu!(cuDevicePrimaryCtxRetain(&mut ctx, dev))?;
        cu!(cuCtxSetCurrent(ctx))?;
        Ok(Gpu { dev, ctx })
    }

    pub fn attribute(&self, attr: CUdevice_attribute) -> Result<i32, Failed> {
        let mut v = 0;
        cu!(cuDeviceGetAttribute(&mut v, attr, self.dev))?;
        Ok(v)
    }

    /// Fails with `why` unless the device's yes/no attribute `attr` is 1.
    pub fn require(&self, attr: CUdevice_attribute, why: &str) -> TestResult {
        ensure!(self.attribute(attr)? == 1, "{why}");
        Ok(())
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        unsafe {
            cuDevicePrimaryCtxRelease(self.dev);
        }
    }
}

/// Runs this test binary again as a child with `role` (see [`main`]), with
/// extra environment variables; returns the running child.
pub fn spawn_child(role: &str, env: &[(&str, String)]) -> std::process::Child {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.env(CHILD_ROLE_VAR, role);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("spawning the child test process")
}

/// Waits for a child and fails unless it exited 0.
pub fn wait_child(mut child: std::process::Child, role: &str) -> TestResult {
    let status = child
        .wait()
        .map_err(|e| format!("waiting for {role}: {e}"))?;
    ensure!(status.success(), "child {role} exited with {status}");
    Ok(())
}

// After the macros, which they use.
pub mod checks;
pub mod gpus;
pub mod kernels;
pub mod memory;
pub mod os;
pub mod vmm;

#[allow(unused_imports)]
pub use checks::{BadInput, Checks};
#[allow(unused_imports)]
pub use memory::*;
