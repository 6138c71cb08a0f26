//! What the ABI tests share: the headers and C compiler the crate was built
//! with, and a libtest-mimic `main` that reports a test ignored (with the
//! reason) where the build had no headers (the committed fallback).
#![allow(dead_code)]

use libtest_mimic::{Arguments, Completion, Failed, Trial};
use std::path::{Path, PathBuf};
use std::process::Command;

pub type Check = (&'static str, fn() -> Result<Completion, Failed>);

pub fn main(checks: Vec<Check>) {
    let args = Arguments::from_args();
    let trials = checks
        .into_iter()
        .map(|(name, f)| Trial::ignorable_test(name, f))
        .collect();
    libtest_mimic::run(&args, trials).exit();
}

/// The header directories the crate was generated from (`CUDA_MEM_SYS_TEST_INCLUDE_DIRS`
/// overrides them where the tests run on another machine), or why there are none.
pub fn include_dirs() -> Result<Vec<PathBuf>, String> {
    if let Ok(dirs) = std::env::var("CUDA_MEM_SYS_TEST_INCLUDE_DIRS") {
        return Ok(std::env::split_paths(&dirs).collect());
    }
    match option_env!("CUDA_MEM_SYS_INCLUDE_DIRS") {
        Some(dirs) => Ok(std::env::split_paths(dirs).collect()),
        None => Err(
            "built without CUDA headers (the committed fallback bindings): set \
                     CUDA_MEM_SYS_INCLUDE_DIR, e.g. to the output of `cargo xtask headers 13.0`"
                .into(),
        ),
    }
}

/// The C compiler for the crate's target (the `cc` crate's choice for that
/// target on the build's host: `aarch64-linux-gnu-gcc`, `x86_64-w64-mingw32-gcc`,
/// `CC_<target>` honoured), configured with its headers and the
/// `per-thread-default-stream` feature's define.
pub fn c_compiler(include_dirs: &[PathBuf]) -> cc::Build {
    let target = env!("CUDA_MEM_SYS_TARGET");
    let mut b = cc::Build::new();
    b.target(target).host(env!("CUDA_MEM_SYS_HOST"));
    if let Some(cc) = option_env!("CUDA_MEM_SYS_TARGET_CC") {
        // The compiler the build found for the target (`CC_<target>` honoured
        // there; a test running under Wine would look for `gcc.exe`);
        // `CUDA_MEM_SYS_TEST_CC` overrides it where the tests run.
        b.compiler(std::env::var("CUDA_MEM_SYS_TEST_CC").unwrap_or(cc.into()));
    }
    b.opt_level(0)
        .cargo_metadata(false)
        .warnings(false)
        .includes(include_dirs);
    if cfg!(feature = "per-thread-default-stream") {
        b.define("CUDA_API_PER_THREAD_DEFAULT_STREAM", None);
    }
    b
}

/// A scratch folder, removed with everything in it when dropped (also when
/// the test fails or panics): keep it in a variable while its files are used.
/// Other scratch folders: `scratch(name).path()`.
pub struct Scratch(PathBuf);

impl Scratch {
    /// The folder (no `Deref` on purpose: `scratch(..).join(..)` would drop,
    /// and so remove, the folder at the end of that statement).
    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `dir` (made by someone else), removed with its contents when the guard drops.
pub fn remove_on_drop(dir: PathBuf) -> Scratch {
    Scratch(dir)
}

/// A fresh scratch folder for generated C files (tests run in parallel).
pub fn scratch(name: &str) -> Scratch {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("cuda-mem-sys-{name}-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// The variable cargo reads the target's runner from: `CARGO_TARGET_<TRIPLE>_RUNNER`.
pub fn runner_var() -> String {
    let triple = env!("CUDA_MEM_SYS_TARGET");
    format!(
        "CARGO_TARGET_{}_RUNNER",
        triple.to_uppercase().replace(['-', '.'], "_")
    )
}

/// The runner's words (`qemu-aarch64 -L /usr/aarch64-linux-gnu`, `wine`), as
/// cargo splits them; empty where none is set (the host runs the target's
/// programs itself).
pub fn runner() -> Vec<String> {
    std::env::var(runner_var())
        .map(|r| r.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// A command that runs a program built for the crate's target the way cargo
/// runs the test itself: through the target's runner where one is set, so
/// that an aarch64 program runs under `qemu-aarch64` on an x86_64 host (there
/// is no binfmt: a program started directly would not run).
pub fn target_command(program: &Path) -> Command {
    match runner().split_first() {
        Some((first, rest)) => {
            let mut cmd = Command::new(first);
            cmd.args(rest).arg(program);
            cmd
        }
        None => Command::new(program),
    }
}

/// A program's file name on the crate's target (`layout_check.exe` on Windows).
pub fn target_exe(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}
