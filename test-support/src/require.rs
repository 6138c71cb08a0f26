//! `CUDA_MEM_SYS_REQUIRE_GPUS=N`: on a machine that must run the device
//! tests (a GPU CI runner, the GPU bundle's `run.sh` and `matrix.sh`), "no
//! usable driver", "no device" and "fewer than N GPUs" fail the tests
//! instead of reporting them ignored. Unset, empty or `0`: nothing is
//! required, and a machine without a GPU reports the device tests ignored
//! with the reason. A value that is not a count fails, naming the variable.
//! `docs/gpu-tests.md` documents it; `tests/required_gpus.rs` proves it.

use libtest_mimic::{Completion, Failed};

/// The variable's name, spelt once for every test binary that reads it.
pub const REQUIRE_GPUS_VAR: &str = "CUDA_MEM_SYS_REQUIRE_GPUS";

/// How many GPUs this run requires: 0 where the variable is unset, empty
/// or `0`; an error naming the variable for a value that is not a count.
pub fn required_gpus() -> Result<u32, String> {
    let Some(v) = std::env::var_os(REQUIRE_GPUS_VAR) else {
        return Ok(0);
    };
    let v = v.to_string_lossy();
    let v = v.trim();
    if v.is_empty() {
        return Ok(0);
    }
    v.parse().map_err(|_| {
        format!("{REQUIRE_GPUS_VAR}={v:?} is not a number of GPUs (set it to the GPUs the run must see, e.g. 1, or unset it)")
    })
}

/// What a device test does where no GPU can run it (`why`: no usable
/// driver, no device): `Ok(why)` (report it ignored) when the run requires
/// none, else the failure, naming the variable.
pub fn may_ignore(why: String) -> Result<String, String> {
    match required_gpus()? {
        0 => Ok(why),
        n => Err(format!(
            "{REQUIRE_GPUS_VAR}={n}: this run must see {n} GPU(s), and {why}"
        )),
    }
}

/// [`may_ignore`] as a check's outcome: ignored with `why`, or the failure.
pub fn ignored_unless_required(why: String) -> Result<Completion, Failed> {
    Ok(Completion::ignored_with(may_ignore(why)?))
}

/// `Err` naming the variable when the run requires more GPUs than `have`
/// (the probe found a driver and `have` devices).
pub fn enough(have: u32) -> Result<(), String> {
    match required_gpus()? {
        n if have >= n => Ok(()),
        n => Err(format!(
            "{REQUIRE_GPUS_VAR}={n}: this run must see {n} GPU(s), and it sees {have}"
        )),
    }
}
