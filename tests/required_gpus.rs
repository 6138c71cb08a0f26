//! `CUDA_MEM_SYS_REQUIRE_GPUS=N` turns "no usable driver / no device / fewer
//! than N GPUs" from an ignored device test into a failed one
//! (`common::gate`, `docs/gpu-tests.md`). No GPU needed: this binary runs
//! itself again as a device-test binary (the kit's `main`, one device test)
//! and reads the child's exit code and output.
//!
//! - Plain (the variable unset, or `0`): exit 0; the device test is
//!   reported ignored with the reason where there is no usable driver (the
//!   build's stub libcuda here, on a machine without a GPU), and passes
//!   where there is one.
//! - The wrong twin, required where it cannot be met: `=1` where the plain
//!   run found no usable driver, and `=9999` anywhere, must exit non-zero
//!   with a message naming the variable. So must a value that is not a count.
mod common;

use common::{round_trip, DeviceBuf, Gpu, TestResult};
use libtest_mimic::{Arguments, Failed, Trial};
use std::process::Command;
use test_support::REQUIRE_GPUS_VAR;

/// Set in the child: it then acts as a device-test binary.
const AS_DEVICE_BINARY: &str = "CUDA_MEM_SYS_REQUIRED_GPUS_CHILD";

/// The child's one device test.
fn device_memory_round_trip() -> TestResult {
    let _gpu = Gpu::new(0)?;
    let buf = DeviceBuf::new(4096)?;
    round_trip(buf.ptr, 4096, 7, "bytes through the device")
}

/// What a run of this binary as a device-test binary gave: its exit code and
/// its output (stdout and stderr).
struct Run {
    success: bool,
    code: Option<i32>,
    output: String,
}

/// This binary, run as a device-test binary with `CUDA_MEM_SYS_REQUIRE_GPUS`
/// set to `required` (`None`: unset).
fn run_child(required: Option<&str>) -> Result<Run, Failed> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let mut cmd = Command::new(&exe);
    cmd.env(AS_DEVICE_BINARY, "1").env_remove(REQUIRE_GPUS_VAR);
    if let Some(v) = required {
        cmd.env(REQUIRE_GPUS_VAR, v);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("running {}: {e}", exe.display()))?;
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(Run {
        success: out.status.success(),
        code: out.status.code(),
        output,
    })
}

/// The plain run: exit 0, its one test either ignored (no usable driver) or
/// passed; returns whether it was ignored.
fn plain_run(required: Option<&str>) -> Result<bool, Failed> {
    let run = run_child(required)?;
    let what = format!("{REQUIRE_GPUS_VAR}={required:?}");
    ensure!(
        run.success,
        "{what}: the device-test binary exited {:?}:\n{}",
        run.code,
        run.output
    );
    let ignored = run.output.contains("1 ignored");
    ensure!(
        ignored || run.output.contains("1 passed"),
        "{what}: neither passed nor ignored:\n{}",
        run.output
    );
    Ok(ignored)
}

/// A run that must fail, naming the variable (and `also`, where given).
fn failing_run(required: &str, also: Option<&str>) -> TestResult {
    let run = run_child(Some(required))?;
    let what = format!("{REQUIRE_GPUS_VAR}={required}");
    println!("  {what}: exit {:?}", run.code);
    ensure!(
        !run.success,
        "{what}: the device-test binary exited 0:\n{}",
        run.output
    );
    ensure!(
        run.output.contains(REQUIRE_GPUS_VAR) && run.output.contains("1 failed"),
        "{what}: the failure does not name {REQUIRE_GPUS_VAR}:\n{}",
        run.output
    );
    if let Some(also) = also {
        ensure!(
            run.output.contains(also),
            "{what}: the failure does not say {also:?}:\n{}",
            run.output
        );
    }
    Ok(())
}

/// Unset, empty and `0` require nothing: exit 0, ignored or passed.
fn unset_or_zero_reports_ignored_or_passes() -> TestResult {
    let ignored = plain_run(None)?;
    println!(
        "  plain run: the device test {}",
        if ignored { "ignored" } else { "passed" }
    );
    for v in ["", "0"] {
        ensure!(
            plain_run(Some(v))? == ignored,
            "{REQUIRE_GPUS_VAR}={v:?} did not act as unset"
        );
    }
    Ok(())
}

/// Where the plain run reports the test ignored (no usable driver: the stub
/// libcuda), requiring one GPU fails the run; where a GPU runs it, the
/// requirement is met and the run passes.
fn one_required_fails_where_the_plain_run_ignores() -> TestResult {
    if plain_run(None)? {
        failing_run("1", Some("this run must see 1 GPU(s), and no"))
    } else {
        ensure!(
            !plain_run(Some("1"))?,
            "{REQUIRE_GPUS_VAR}=1 on a machine with a GPU reported the test ignored"
        );
        Ok(())
    }
}

/// More GPUs than any machine has: the run fails, on every machine.
fn more_than_present_fails() -> TestResult {
    failing_run("9999", Some("this run must see 9999 GPU(s)"))
}

/// A value that is not a count fails, naming the variable.
fn not_a_count_fails() -> TestResult {
    failing_run("two", Some("is not a number of GPUs"))
}

fn main() {
    if std::env::var_os(AS_DEVICE_BINARY).is_some() {
        common::main(device_tests![device_memory_round_trip], &[]);
        return;
    }
    let trials = vec![
        Trial::test(
            "unset_or_zero_reports_ignored_or_passes",
            unset_or_zero_reports_ignored_or_passes,
        ),
        Trial::test(
            "one_required_fails_where_the_plain_run_ignores",
            one_required_fails_where_the_plain_run_ignores,
        ),
        Trial::test("more_than_present_fails", more_than_present_fails),
        Trial::test("not_a_count_fails", not_a_count_fails),
    ];
    libtest_mimic::run(&Arguments::from_args(), trials).exit();
}
