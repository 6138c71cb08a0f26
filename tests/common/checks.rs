//! The one collector of failed checks ([`Checks`]) and the one "bad input,
//! then still works" helper ([`BadInput`]) of the device tests.
use super::memory::round_trip;
use super::{report_bad_input, Code, TestResult};
use cuda_mem_sys::*;
use std::fmt::{Debug, Display};

/// The failures of one test, collected so that a run reports every mismatch
/// (bad-input tables, values the driver fills in), not just the first;
/// [`Checks::finish`] turns them into the test's result.
#[derive(Default)]
pub struct Checks(Vec<String>);

impl Checks {
    pub fn new() -> Checks {
        Checks::default()
    }

    /// Records a failure (and prints it at once, so the log shows its place).
    pub fn fail(&mut self, msg: impl Display) {
        let msg = msg.to_string();
        println!("    FAILED: {msg}");
        self.0.push(msg);
    }

    /// Records a failed `cu!`/`rt!`/`ensure!`...; returns whether it passed.
    pub fn ok(&mut self, r: TestResult) -> bool {
        match r {
            Ok(()) => true,
            Err(e) => {
                self.fail(e.message().unwrap_or("(no message)"));
                false
            }
        }
    }

    /// [`Checks::ok`], the failure prefixed with `what`.
    pub fn note(&mut self, what: &str, r: TestResult) {
        if let Err(e) = r {
            self.fail(format!("{what}: {}", e.message().unwrap_or("?")));
        }
    }

    /// Records `msg` unless `cond` holds.
    pub fn that(&mut self, cond: bool, msg: impl Display) {
        if !cond {
            self.fail(msg);
        }
    }

    /// `got` must equal `want`.
    pub fn eq<T: PartialEq + Debug>(&mut self, what: impl Display, got: T, want: T) {
        if got != want {
            self.fail(format!("{what}: got {got:?}, expected {want:?}"));
        }
    }

    /// A driver or runtime call returned `got` where `want` is documented;
    /// prints the code either way and reports a bad call (`want` not success)
    /// for the bad-input table (`common::report_bad_input`).
    pub fn code<C: Code>(&mut self, got: C, want: C, what: &str) {
        let (got_name, want_name) = (got.name(), want.name());
        println!("    {got_name} <- {what}");
        if want != C::SUCCESS {
            report_bad_input(None, what, &want_name, &got_name);
        }
        let msg = format!("{what} returned {got_name}, expected {want_name}");
        self.that(got == want, msg);
    }

    /// `got` must be `observed`: what the driver was measured to return where
    /// NVIDIA documents (or implies) `documented`.
    pub fn code_observed<C: Code>(&mut self, got: C, documented: C, observed: C, what: &str) {
        let (got_name, doc) = (got.name(), documented.name());
        println!("    {got_name} <- {what} (documented: {doc})");
        let case = format!("{what} [documented: {doc}]");
        report_bad_input(None, &case, &observed.name(), &got_name);
        let msg = format!(
            "{what} returned {got_name}, expected {} (documented: {doc})",
            observed.name()
        );
        self.that(got == observed, msg);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The failures so far.
    pub fn failures(&self) -> &[String] {
        &self.0
    }

    /// `Ok` if nothing failed, else every failure, one a line.
    pub fn finish(self) -> TestResult {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{} check(s) failed:\n  {}",
                self.0.len(),
                self.0.join("\n  ")
            )
            .into())
        }
    }
}

/// "Bad input, then still works": a [`Checks`] (reached through `Deref`)
/// whose every bad call ([`BadInput::cu`], for either API's code, and the `bad!`
/// macro) is followed by a probe that shows the process still works. The
/// probe gets the round (1, 2, ...) to vary what it writes.
pub struct BadInput<'a> {
    checks: Checks,
    probe: Box<dyn FnMut(u32) -> TestResult + 'a>,
    round: u32,
}

impl<'a> BadInput<'a> {
    pub fn new(probe: impl FnMut(u32) -> TestResult + 'a) -> BadInput<'a> {
        BadInput {
            checks: Checks::new(),
            probe: Box::new(probe),
            round: 0,
        }
    }

    /// The usual probe: `n` bytes of device memory at `ptr` (yours, for the
    /// test's length) still take a fresh pattern and give it back.
    pub fn round_trip(ptr: CUdeviceptr, n: usize) -> BadInput<'static> {
        BadInput::new(move |round| round_trip(ptr, n, round, "device round trip"))
    }

    /// Runs the probe after a bad case.
    pub fn still_works(&mut self) {
        self.still_works_after("");
    }

    /// Runs the probe; a failure names the call it came after.
    pub fn still_works_after(&mut self, after: &str) {
        self.round += 1;
        if let Err(e) = (self.probe)(self.round) {
            let why = e.message().unwrap_or("?").to_string();
            let after = if after.is_empty() {
                String::new()
            } else {
                format!(" ({after})")
            };
            self.checks.fail(format!(
                "not working after bad case {}{after}: {why}",
                self.round
            ));
        }
    }

    /// A bad driver or runtime call: `got` must be `want`, then the process
    /// still works.
    pub fn cu<C: Code>(&mut self, want: C, got: C, what: &str) {
        self.checks.code(got, want, what);
        self.still_works_after(what);
    }

    /// A bad case checked by the test itself (`r`, noted under `what`), then
    /// the probe.
    pub fn result(&mut self, what: &str, r: TestResult) {
        self.checks.note(what, r);
        self.still_works_after(what);
    }

    /// The checks so far, the probe dropped (and with it what it borrows).
    pub fn into_checks(self) -> Checks {
        self.checks
    }

    pub fn finish(self) -> TestResult {
        self.checks.finish()
    }
}

impl std::ops::Deref for BadInput<'_> {
    type Target = Checks;
    fn deref(&self) -> &Checks {
        &self.checks
    }
}

impl std::ops::DerefMut for BadInput<'_> {
    fn deref_mut(&mut self) -> &mut Checks {
        &mut self.checks
    }
}

/// A bad driver or runtime call, recorded against the code it must return:
/// `bad!(b, CUDA_ERROR_INVALID_VALUE, cuMemMap(..))` on a [`BadInput`] (then
/// the probe runs) or on a [`Checks`] (`Checks::code`, no probe).
#[macro_export]
macro_rules! bad {
    ($b:expr, $want:expr, $call:expr) => {
        $crate::common::checks::BadCall::bad_call(
            &mut $b,
            $want,
            unsafe { $call },
            stringify!($call),
        )
    };
}

/// What `bad!` calls on a [`Checks`] or a [`BadInput`], for a driver
/// (`CUresult`) or a runtime (`cudaError_t`) code.
pub trait BadCall<Code> {
    fn bad_call(&mut self, want: Code, got: Code, what: &str);
}

impl<C: Code> BadCall<C> for Checks {
    fn bad_call(&mut self, want: C, got: C, what: &str) {
        self.code(got, want, what);
    }
}

impl<C: Code> BadCall<C> for BadInput<'_> {
    fn bad_call(&mut self, want: C, got: C, what: &str) {
        self.cu(want, got, what);
    }
}

impl BadInput<'_> {
    /// [`BadInput::cu`] for a call that takes something if it wrongly
    /// succeeds (a handle, a mapping, a descriptor): `undo` gives it back
    /// before the probe runs. Fails only if `undo` does.
    pub fn cu_undo(
        &mut self,
        want: CUresult,
        got: CUresult,
        what: &str,
        undo: impl FnOnce() -> TestResult,
    ) -> TestResult {
        self.checks.code(got, want, what);
        let undone = if got == CUDA_SUCCESS { undo() } else { Ok(()) };
        self.still_works_after(what);
        undone
    }

    /// [`BadInput::cu_undo`] where the driver was measured to return
    /// `observed` for the `documented` code ([`Checks::code_observed`]).
    pub fn cu_observed_undo(
        &mut self,
        documented: CUresult,
        observed: CUresult,
        got: CUresult,
        what: &str,
        undo: impl FnOnce() -> TestResult,
    ) -> TestResult {
        self.checks.code_observed(got, documented, observed, what);
        let undone = if got == CUDA_SUCCESS { undo() } else { Ok(()) };
        self.still_works_after(what);
        undone
    }
}
