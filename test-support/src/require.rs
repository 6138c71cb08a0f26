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
    enough_of(have, required_gpus()?)
}

/// [`enough`] with the requirement given: `have` GPUs against `n` required.
fn enough_of(have: u32, n: u32) -> Result<(), String> {
    if have >= n {
        Ok(())
    } else {
        Err(format!(
            "{REQUIRE_GPUS_VAR}={n}: this run must see {n} GPU(s), and it sees {have}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Around the count required: N − 1 fails naming the variable and both
    /// counts; N and N + 1 pass (the wrong twin `have + 1 >= n` lets N − 1
    /// through, `have > n` refuses N).
    #[test]
    fn enough_is_exactly_the_count_required() {
        for n in [1, 2, 4, 8, 9999] {
            let short = enough_of(n - 1, n).unwrap_err();
            assert_eq!(
                short,
                format!(
                    "{REQUIRE_GPUS_VAR}={n}: this run must see {n} GPU(s), and it sees {}",
                    n - 1
                )
            );
            assert_eq!(enough_of(n, n), Ok(()), "{n} of {n}");
            assert_eq!(enough_of(n + 1, n), Ok(()), "{} of {n}", n + 1);
        }
        // Nothing required: none present is enough.
        assert_eq!(enough_of(0, 0), Ok(()));
        assert_eq!(enough_of(3, 0), Ok(()));
        assert!(enough_of(0, 1).is_err());
    }

    /// The variable read through `enough`, `may_ignore` and `required_gpus`:
    /// one test, as the variable is the process's (the others here read none).
    #[test]
    fn the_variable_sets_the_requirement() {
        std::env::set_var(REQUIRE_GPUS_VAR, " 2 ");
        assert_eq!(required_gpus(), Ok(2));
        assert!(enough(1).unwrap_err().contains("it sees 1"));
        assert_eq!(enough(2), Ok(()));
        assert_eq!(enough(3), Ok(()));
        let e = may_ignore("no device".into()).unwrap_err();
        assert_eq!(
            e,
            format!("{REQUIRE_GPUS_VAR}=2: this run must see 2 GPU(s), and no device")
        );
        std::env::set_var(REQUIRE_GPUS_VAR, "two");
        let e = required_gpus().unwrap_err();
        assert!(
            e.starts_with(&format!("{REQUIRE_GPUS_VAR}=\"two\" is not a number")),
            "{e}"
        );
        assert!(enough(5).is_err());
        for unset in ["", "0"] {
            std::env::set_var(REQUIRE_GPUS_VAR, unset);
            assert_eq!(required_gpus(), Ok(0));
            assert_eq!(enough(0), Ok(()));
            assert_eq!(may_ignore("no device".into()), Ok("no device".into()));
        }
        std::env::remove_var(REQUIRE_GPUS_VAR);
        assert_eq!(required_gpus(), Ok(0));
        assert_eq!(may_ignore("no driver".into()), Ok("no driver".into()));
    }
}
