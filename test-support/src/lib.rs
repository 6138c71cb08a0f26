//! What cuda-mem-sys's tests and its ABI proofs share: the headers and C
//! compiler the crate was built with, scratch folders, and a libtest-mimic
//! `main` that reports a test ignored (with the reason) where the build had
//! no headers (the committed fallback). The build's facts come from this
//! package's build script, which reads cuda-mem-sys's `DEP_CUDA_MEM_SYS_*`
//! metadata as any dependent does.

mod require;
pub use require::{enough, ignored_unless_required, may_ignore, required_gpus, REQUIRE_GPUS_VAR};

use libtest_mimic::{Arguments, Completion, Failed, Trial};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The target the crate was built for.
pub const TARGET: &str = env!("TEST_SUPPORT_TARGET");
/// The machine that built it.
pub const HOST: &str = env!("TEST_SUPPORT_HOST");
/// The target's C compiler as the build found it (the cc crate's choice).
pub const TARGET_CC: Option<&str> = option_env!("TEST_SUPPORT_TARGET_CC");
/// The crate's `DEP_CUDA_MEM_SYS_INCLUDE`: the include folders of headers of
/// its bindings' release, joined like `PATH`.
pub const INCLUDE_DIRS: Option<&str> = option_env!("TEST_SUPPORT_INCLUDE_DIRS");
/// The crate's `DEP_CUDA_MEM_SYS_BINDINGS`: `generated`,
/// `committed-same-headers` or `committed`.
pub const BINDINGS: &str = env!("TEST_SUPPORT_BINDINGS");
/// The variable that names the CUDA headers (spelt here, not taken from
/// `build/locate.rs`: the tests hold the documented name).
pub const INCLUDE_DIR_VAR: &str = "CUDA_MEM_SYS_INCLUDE_DIR";
/// Every variable naming a CUDA root, in the build's search order.
pub const ROOT_VARS: [&str; 5] = [
    INCLUDE_DIR_VAR,
    "CUDA_PATH",
    "CUDA_HOME",
    "CUDA_ROOT",
    "CUDA_TOOLKIT_ROOT_DIR",
];

pub type Check = (&'static str, CheckFn);

/// The [`Check`]s of functions, each named by its function:
/// `test_support::main(test_support::checks![a_fact, its_wrong_twin])`.
#[macro_export]
macro_rules! checks {
    ($($check:ident),+ $(,)?) => {
        vec![$((stringify!($check), $check as $crate::CheckFn)),+]
    };
}

/// What a check is: `Ok(Completion::Ignored { reason })` where it cannot run.
pub type CheckFn = fn() -> Result<Completion, Failed>;

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
    match INCLUDE_DIRS {
        // Joined on the build's host, as its PATH is (`:` on Linux): a test
        // for Windows running under Wine would split at `;` and find one
        // folder named `a:b` where the headers have two (the 12.x wheels).
        Some(dirs) => {
            let host_separator = if HOST.contains("windows") { ';' } else { ':' };
            Ok(dirs
                .split(host_separator)
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .collect())
        }
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
    let mut b = cc::Build::new();
    b.target(TARGET).host(HOST);
    if let Some(cc) = TARGET_CC {
        // The compiler the build found for the target (`CC_<target>` honoured
        // there; a test running under Wine would look for `gcc.exe`);
        // `CUDA_MEM_SYS_TEST_CC` overrides it where the tests run.
        b.compiler(std::env::var("CUDA_MEM_SYS_TEST_CC").unwrap_or(cc.into()));
    }
    b.opt_level(0)
        .cargo_metadata(false)
        .cargo_warnings(false)
        .warnings(false)
        .includes(include_dirs);
    if env!("TEST_SUPPORT_PER_THREAD_DEFAULT_STREAM") == "1" {
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
    format!(
        "CARGO_TARGET_{}_RUNNER",
        TARGET.to_uppercase().replace(['-', '.'], "_")
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
/// is no binfmt: a program started directly would not run). On Windows the
/// test is itself a Windows program (under Wine, too), which starts another
/// one directly.
pub fn target_command(program: &Path) -> Command {
    if cfg!(windows) {
        return Command::new(program);
    }
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

/// Runs a program of the build machine (the C compiler) and collects its
/// output, as `Command::output` does.
///
/// A Windows test running under Wine on Linux starts the Linux C compiler,
/// but Wine gives it no process handle and no pipes: the compiler runs, and
/// its exit status and output are lost. There (`/bin/sh` exists, which it
/// does not on Windows itself) the command runs through `/bin/sh`, which
/// writes the output and the exit status to files in a scratch folder; the
/// status file appears last, when the program has ended. Arguments get `/`
/// for `\` (a path joined on Windows), as the Linux program reads them.
pub fn host_output(cmd: &mut Command) -> std::io::Result<std::process::Output> {
    if !cfg!(windows) || !Path::new("/bin/sh").exists() {
        return cmd.output();
    }
    through_sh(cmd, std::time::Duration::from_secs(600))
}

/// [`host_output`]'s way under Wine: `cmd` through `/bin/sh`, its output
/// and exit status read from files; an error where no status came within
/// `limit`. (Any Unix runs it too: the unit tests do.)
fn through_sh(cmd: &Command, limit: std::time::Duration) -> std::io::Result<std::process::Output> {
    let dir = scratch_under_target("host-tool");
    let unix = |p: &Path| p.to_string_lossy().replace('\\', "/");
    let slash = |s: &std::ffi::OsStr| s.to_string_lossy().replace('\\', "/");
    let (out, err, status) = (
        dir.path().join("out"),
        dir.path().join("err"),
        dir.path().join("status"),
    );
    let script = format!(
        "\"$0\" \"$@\" >'{}' 2>'{}'; echo $? >'{}.tmp' && mv '{}.tmp' '{}'",
        unix(&out),
        unix(&err),
        unix(&status),
        unix(&status),
        unix(&status)
    );
    let mut sh = Command::new("/bin/sh");
    sh.arg("-c")
        .arg(script)
        .arg(slash(cmd.get_program()))
        .args(cmd.get_args().map(slash));
    // Started, never waited for (Wine cannot); the status file tells the end.
    let _child = sh.spawn()?;
    let start = std::time::Instant::now();
    let code = loop {
        if let Ok(text) = std::fs::read_to_string(&status) {
            break text.trim().parse::<i32>().unwrap_or(-1);
        }
        if start.elapsed() > limit {
            return Err(std::io::Error::other(format!(
                "{cmd:?} under Wine: no exit status after {} s",
                limit.as_secs()
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Ok(std::process::Output {
        status: exit_status(code),
        stdout: std::fs::read(&out).unwrap_or_default(),
        stderr: std::fs::read(&err).unwrap_or_default(),
    })
}

#[cfg(windows)]
fn exit_status(code: i32) -> std::process::ExitStatus {
    std::os::windows::process::ExitStatusExt::from_raw(code as u32)
}

#[cfg(not(windows))]
fn exit_status(code: i32) -> std::process::ExitStatus {
    std::os::unix::process::ExitStatusExt::from_raw(code << 8)
}

/// `out` where its program exited successfully; else `"{what} failed:"` and
/// the program's stderr.
pub fn succeeded(
    out: std::process::Output,
    what: impl std::fmt::Display,
) -> Result<std::process::Output, String> {
    if out.status.success() {
        return Ok(out);
    }
    Err(format!(
        "{what} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    ))
}

/// A scratch folder under the target folder (a Linux path also under Wine,
/// where `temp_dir()` is a Windows one the Linux C compiler cannot read).
pub fn scratch_under_target(name: &str) -> Scratch {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let base = option_env!("TEST_SUPPORT_SCRATCH")
        .map(PathBuf::from)
        .filter(|b| b.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("cuda-mem-sys-{name}-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Set in the child [`main_runs_the_checks_and_exits_with_their_verdict`]
    /// starts: `pass` or `fail`, the check `main` runs there.
    const MAIN_CHILD: &str = "TEST_SUPPORT_MAIN_CHILD";

    /// Only in that child (this binary run again): [`main`] with one check,
    /// named as this test so that the child's own filter selects it.
    #[test]
    fn main_child() {
        fn passes() -> Result<Completion, Failed> {
            println!("MAIN-CHECK-RAN");
            Ok(Completion::Completed)
        }
        fn fails() -> Result<Completion, Failed> {
            Err("MAIN-CHECK-FAILED".into())
        }
        match std::env::var(MAIN_CHILD).as_deref() {
            Ok("pass") => main(vec![("tests::main_child", passes)]),
            Ok(_) => main(vec![("tests::main_child", fails)]),
            Err(_) => {}
        }
    }

    /// `main` runs its checks and exits with their verdict: 0 with the
    /// check's output where it passes, non-zero naming it where it fails
    /// (the wrong twin, a `main` that runs nothing, lets every proof pass).
    #[test]
    fn main_runs_the_checks_and_exits_with_their_verdict() {
        let run = |mode: &str| {
            Command::new(std::env::current_exe().unwrap())
                .args(["tests::main_child", "--exact", "--nocapture"])
                .env(MAIN_CHILD, mode)
                .output()
                .unwrap()
        };
        let pass = run("pass");
        let out = String::from_utf8_lossy(&pass.stdout);
        assert!(pass.status.success(), "{out}");
        assert!(
            out.contains("MAIN-CHECK-RAN") && out.contains("1 passed"),
            "{out}"
        );
        let fail = run("fail");
        let out = String::from_utf8_lossy(&fail.stdout);
        assert!(!fail.status.success(), "{out}");
        assert!(
            out.contains("MAIN-CHECK-FAILED") && out.contains("1 failed"),
            "{out}"
        );
    }

    /// Each kind of scratch folder is removed, with its files, when its
    /// guard drops, and not before.
    #[test]
    fn a_scratch_folder_goes_with_its_guard() {
        let made = [
            scratch("unit"),
            scratch_under_target("unit"),
            remove_on_drop({
                let d =
                    std::env::temp_dir().join(format!("test-support-unit-{}", std::process::id()));
                std::fs::create_dir_all(&d).unwrap();
                d
            }),
        ];
        let paths: Vec<PathBuf> = made.iter().map(|s| s.path().to_path_buf()).collect();
        for p in &paths {
            std::fs::write(p.join("file"), "x").unwrap();
            assert!(p.join("file").is_file(), "{}", p.display());
        }
        assert_ne!(paths[0], paths[1]);
        drop(made);
        for p in &paths {
            assert!(!p.exists(), "{} is still there", p.display());
        }
    }

    /// The runner is cargo's variable for the target, split as cargo splits
    /// it, and goes before the program; without it the program starts alone.
    #[test]
    fn the_runner_is_cargos_variable_for_the_target() {
        let var = runner_var();
        if TARGET == "x86_64-unknown-linux-gnu" {
            assert_eq!(var, "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER");
        }
        if TARGET == "aarch64-unknown-linux-gnu" {
            assert_eq!(var, "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER");
        }
        assert!(
            var.starts_with("CARGO_TARGET_") && var.ends_with("_RUNNER"),
            "{var}"
        );
        let before = std::env::var_os(&var);
        std::env::set_var(&var, "qemu-aarch64  -L /usr/aarch64-linux-gnu");
        assert_eq!(runner(), ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"]);
        let program = Path::new("/nowhere/program");
        let cmd = target_command(program);
        if !cfg!(windows) {
            assert_eq!(cmd.get_program(), "qemu-aarch64");
            let args: Vec<&std::ffi::OsStr> = cmd.get_args().collect();
            assert_eq!(args, ["-L", "/usr/aarch64-linux-gnu", "/nowhere/program"]);
        }
        std::env::remove_var(&var);
        assert!(runner().is_empty());
        let cmd = target_command(program);
        assert_eq!(cmd.get_program(), program);
        assert_eq!(cmd.get_args().count(), 0);
        if let Some(v) = before {
            std::env::set_var(&var, v);
        }
    }

    /// A program's output and exit status, directly and through `/bin/sh`
    /// as under Wine (there `\` in an argument is read as `/`, the only
    /// difference): the status's code, stdout and stderr apart; a program
    /// that outlives the limit is an error, named.
    #[cfg(unix)]
    #[test]
    fn host_output_collects_the_output_and_the_status() {
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", "printf '%s' \"$0\"; printf err >&2; exit 3", "a\\b"]);
        let direct = host_output(&mut cmd).unwrap();
        assert_eq!(direct.stdout, b"a\\b");
        assert_eq!(direct.stderr, b"err");
        assert_eq!(direct.status.code(), Some(3));
        let limit = std::time::Duration::from_secs(60);
        let wine = through_sh(&cmd, limit).unwrap();
        assert_eq!(wine.stdout, b"a/b");
        assert_eq!(wine.stderr, b"err");
        assert_eq!(wine.status.code(), Some(3));
        assert!(succeeded(wine, "the program").is_err());
        let mut ok = Command::new("/bin/sh");
        ok.args(["-c", "printf fine"]);
        let out = succeeded(through_sh(&ok, limit).unwrap(), "printf").unwrap();
        assert_eq!(out.stdout, b"fine");
        let mut slow = Command::new("/bin/sh");
        slow.args(["-c", "sleep 3"]);
        let e = through_sh(&slow, std::time::Duration::from_millis(500)).unwrap_err();
        assert!(e.to_string().contains("no exit status after 0 s"), "{e}");
    }
}
