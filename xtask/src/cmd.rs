//! Command plumbing every task shares: the workspace, running a command,
//! and the tools a command needs (libclang, the Wine shim). It imports no
//! task: every task may import it, and no import goes back up into `main.rs`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root (the folder above `xtask/`).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Writes `contents` to `path`; the error names the file.
pub fn write_file(path: &Path, contents: impl AsRef<[u8]>) -> Result<(), String> {
    std::fs::write(path, contents).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// Runs a command, failing with its description if it fails.
pub fn run_cmd(cmd: &mut Command) -> Result<(), String> {
    let status = cmd.status().map_err(|e| format!("{cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed ({status})"))
    }
}

/// A step's title in the log; on a lean CI machine (see [`lean`]) with the
/// disk space left, so that a full disk shows where it filled.
pub fn step(title: &str) {
    let now = std::time::Instant::now();
    let mut steps = STEPS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((last, started)) = steps.last_mut() {
        let seconds = now.duration_since(*started).as_secs_f64();
        println!("(step took {seconds:.0} s: {last})");
        *last = format!("{seconds:>6.0} s  {last}");
    }
    steps.push((title.to_string(), now));
    drop(steps);
    println!("\n==== {title}");
    if lean() {
        if let Ok(out) = Command::new("df").args(["-Pk", "."]).output() {
            let text = String::from_utf8_lossy(&out.stdout);
            if let Some(kib) = text
                .lines()
                .nth(1)
                .and_then(|l| l.split_whitespace().nth(3))
                .and_then(|v| v.parse::<u64>().ok())
            {
                println!("(disk: {:.1} GiB free)", kib as f64 / (1 << 20) as f64);
            }
        }
    }
}

/// Every step's title and start, in order; a finished step's title is
/// prefixed with its seconds ([`step`], [`step_times`]).
static STEPS: std::sync::Mutex<Vec<(String, std::time::Instant)>> =
    std::sync::Mutex::new(Vec::new());

/// The steps so far, each with its seconds (the last one's up to now), and
/// their total: what CI's budget (45 minutes) is read from.
pub fn step_times() -> String {
    let steps = STEPS.lock().unwrap_or_else(|e| e.into_inner());
    let mut text = String::from("step times:\n");
    for (i, (title, started)) in steps.iter().enumerate() {
        if i + 1 == steps.len() {
            let seconds = started.elapsed().as_secs_f64();
            text.push_str(&format!("{seconds:>6.0} s  {title}\n"));
        } else {
            text.push_str(&format!("{title}\n"));
        }
    }
    if let Some((_, first)) = steps.first() {
        text.push_str(&format!(
            "{:>6.0} s  in all\n",
            first.elapsed().as_secs_f64()
        ));
    }
    text
}

/// CI's machines may have little disk (a run failed with "No space left on
/// device" after 8 minutes): `.ci/run` sets `CUDA_MEM_SYS_CI_LEAN=1`, with
/// no debug info and no incremental files, and then each step's own target
/// folder goes once the step has passed ([`discard`]). A developer's
/// `cargo xtask ci` keeps them, so that a second run reuses them.
pub fn lean() -> bool {
    std::env::var_os("CUDA_MEM_SYS_CI_LEAN").is_some_and(|v| v == "1")
}

/// On a lean CI machine, the build folders under `dir` (a step's own
/// `CARGO_TARGET_DIR`) once its step has passed; the files directly in it
/// (what a step leaves to read, such as `target/abi/<release>/abi.txt`) stay.
pub fn discard(dir: &Path) {
    if !lean() {
        return;
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

/// libclang 19 (Debian 12's newest; older ones lose doc comments).
pub fn ensure_libclang() -> Result<(), String> {
    let dir = Path::new("/usr/lib/llvm-19/lib");
    if !dir.join("libclang.so").exists() && !dir.join("libclang-19.so").exists() {
        step("installing libclang-19-dev");
        run_cmd(Command::new("apt-get").args(["update", "-qq"]))?;
        run_cmd(Command::new("apt-get").args(["install", "-y", "-qq", "libclang-19-dev"]))?;
    }
    std::env::set_var("LIBCLANG_PATH", dir);
    Ok(())
}

/// Wine 8.0 (Debian 12) lacks `bcryptprimitives.dll`, whose `ProcessPrng`
/// Rust's standard library imports on Windows since 1.78: a one-function DLL
/// over `RtlGenRandom`, built with MinGW into `target/wine-shim/` (WINEPATH).
pub fn wine_shim(workspace: &Path) -> Result<PathBuf, String> {
    let dir = workspace.join("target/wine-shim");
    let dll = dir.join("bcryptprimitives.dll");
    if dll.is_file() {
        return Ok(dir);
    }
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let c = dir.join("bcryptprimitives.c");
    std::fs::write(
        &c,
        "#include <windows.h>\n\
         BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);\n\
         __declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {\n\
         \x20   while (len) {\n\
         \x20       ULONG n = len > 0x10000 ? 0x10000 : (ULONG)len;\n\
         \x20       if (!SystemFunction036(data, n)) return FALSE;\n\
         \x20       data += n; len -= n;\n\
         \x20   }\n\
         \x20   return TRUE;\n}\n",
    )
    .map_err(|e| e.to_string())?;
    run_cmd(
        Command::new("x86_64-w64-mingw32-gcc")
            .args(["-shared", "-O2", "-o"])
            .arg(&dll)
            .arg(&c)
            .arg("-ladvapi32"),
    )?;
    Ok(dir)
}

/// cargo's runner for Windows programs (`CARGO_TARGET_<TRIPLE>_RUNNER`):
/// `wine`, started once more where wine itself, not the program, died of a
/// signal. Wine 8.0 (Debian 12) has been seen to end by SIGSEGV after a test
/// binary that starts Linux programs (the C compiler, `host_output`) had
/// printed all its results (CI, tree `7741a04`, `abi_field_types`: "2 passed"
/// then signal 11). A Windows program's own crash cannot end the wine process
/// by a signal: wine exits with the exception's code's low byte (5 for an
/// access violation, 9 for a Rust abort), which goes back unchanged, as does
/// every status but 128+n. The second run's status is the verdict, and both
/// runs are named on stderr.
pub fn wine_runner(workspace: &Path) -> Result<PathBuf, String> {
    let dir = workspace.join("target/wine-runner");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let runner = dir.join("wine-runner");
    let script = "#!/bin/sh\n\
         # written by cargo xtask (xtask/src/cmd.rs, wine_runner)\n\
         wine \"$@\"\n\
         status=$?\n\
         if [ $status -gt 128 ] && [ $status -lt 160 ]; then\n\
         \x20   echo \"wine-runner: wine itself ended by signal $((status - 128)) running $1 \
         (a Windows program's crash is an exit code, not a signal); running it once more\" >&2\n\
         \x20   wine \"$@\"\n\
         \x20   status=$?\n\
         \x20   echo \"wine-runner: the second run of $1 ended with $status\" >&2\n\
         fi\n\
         exit $status\n";
    if std::fs::read_to_string(&runner).ok().as_deref() != Some(script) {
        std::fs::write(&runner, script).map_err(|e| format!("{}: {e}", runner.display()))?;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&runner, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("{}: {e}", runner.display()))?;
    }
    Ok(runner)
}

/// `cargo` (a build of programs for `.gpu-bundle/`) run: no debug
/// information (the symbol table stays: abi_symbols reads it), its messages
/// as JSON on stdout (each program's `executable`), its diagnostics shown.
pub fn bundle_build(cargo: &mut Command) -> Result<std::process::Output, String> {
    cargo
        .arg("--message-format=json-render-diagnostics")
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .env("CARGO_PROFILE_DEV_STRIP", "debuginfo")
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("{cargo:?}: {e}"))
}

/// This toolchain's cargo in `workspace`, with no CUDA location in its environment.
pub fn cargo(workspace: &Path) -> Command {
    cargo_of(Command::new(env!("CARGO")), workspace)
}

/// rustup's `toolchain`, installed if missing (minimal profile).
pub fn install_toolchain(toolchain: &str) -> Result<(), String> {
    run_cmd(Command::new("rustup").args([
        "toolchain",
        "install",
        toolchain,
        "--profile",
        "minimal",
    ]))
}

/// The cargo of rustup's `toolchain` ([`install_toolchain`]) in `workspace`,
/// with no CUDA location in its environment and none of the outer cargo's
/// choices (its rustc, rustdoc, toolchain).
pub fn toolchain_cargo(workspace: &Path, toolchain: &str) -> Command {
    let mut rustup = Command::new("rustup");
    rustup.args(["run", toolchain, "cargo"]);
    let mut c = cargo_of(rustup, workspace);
    for var in [
        "RUSTC",
        "RUSTDOC",
        "RUSTUP_TOOLCHAIN",
        "CARGO",
        "RUSTC_WRAPPER",
    ] {
        c.env_remove(var);
    }
    c
}

/// `command` (a cargo) in `workspace`, with no CUDA location in its environment.
pub fn cargo_of(mut command: Command, workspace: &Path) -> Command {
    command.current_dir(workspace);
    for var in generator::locate::ROOT_VARS {
        command.env_remove(var);
    }
    command
}

/// The string value of `"key":"..."` in one line of cargo's JSON output.
pub fn json_str<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(&format!("\"{key}\":\""))? + key.len() + 4;
    let len = line[start..].find('"')?;
    Some(&line[start..start + len])
}

#[cfg(all(test, unix))]
mod tests {
    use std::path::Path;
    use std::process::Command;

    /// A `wine` on PATH that counts its runs in `dir/count` and ends as
    /// `FAKE` says: by SIGSEGV on its first run only, always, or exit 5 (a
    /// Windows program's access violation as wine reports it).
    fn fake_wine(dir: &Path) {
        let wine = dir.join("bin/wine");
        std::fs::create_dir_all(wine.parent().unwrap()).unwrap();
        std::fs::write(
            &wine,
            format!(
                "#!/bin/sh\nc={}/count\nn=$(cat $c 2>/dev/null || echo 0); n=$((n+1)); echo $n > $c\n\
                 case \"$FAKE\" in first) [ $n = 1 ] && kill -SEGV $$; exit 0;; always) kill -SEGV $$;; code5) exit 5;; esac\n",
                dir.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wine, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn run(fake: &str) -> (Option<i32>, String, String) {
        let dir =
            std::env::temp_dir().join(format!("xtask-wine-runner-{fake}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        fake_wine(&dir);
        let runner = super::wine_runner(&dir).unwrap();
        let path = format!(
            "{}:{}",
            dir.join("bin").display(),
            std::env::var("PATH").unwrap()
        );
        let out = Command::new(&runner)
            .arg("prog.exe")
            .env("PATH", path)
            .env("FAKE", fake)
            .output()
            .unwrap();
        let count = std::fs::read_to_string(dir.join("count")).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        (
            out.status.code(),
            count.trim().to_string(),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    }

    #[test]
    fn wine_runner_runs_once_more_only_where_wine_died_of_a_signal() {
        let (code, runs, stderr) = run("first");
        assert_eq!((code, runs.as_str()), (Some(0), "2"), "{stderr}");
        assert!(
            stderr.contains("ended by signal 11 running prog.exe"),
            "{stderr}"
        );
        // Twice a signal: the second status is the verdict.
        let (code, runs, _) = run("always");
        assert_eq!((code, runs.as_str()), (Some(139), "2"));
        // The wrong twin: a program's own crash (exit 5) is not run again.
        let (code, runs, stderr) = run("code5");
        assert_eq!((code, runs.as_str()), (Some(5), "1"));
        assert!(stderr.is_empty(), "{stderr}");
    }
}

/// clang 19, besides gcc: `generator/tests/loader_type_check.rs` runs the build
/// script's type check of the loader table under both (it reports ignored
/// without clang).
pub fn ensure_clang() -> Result<(), String> {
    if !Path::new("/usr/lib/llvm-19/bin/clang").exists() {
        step("installing clang-19");
        run_cmd(Command::new("apt-get").args(["update", "-qq"]))?;
        run_cmd(Command::new("apt-get").args(["install", "-y", "-qq", "clang-19"]))?;
    }
    Ok(())
}

pub const AARCH64: &str = "aarch64-unknown-linux-gnu";
pub const WINDOWS: &str = "x86_64-pc-windows-gnu";

/// A Rust target and the Debian packages that build and run its programs
/// here (no binfmt: programs run through cargo's runner).
pub fn ensure_target(target: &str) -> Result<(), String> {
    let (tools, packages): (&[&str], &[&str]) = match target {
        AARCH64 => (
            &["/usr/bin/aarch64-linux-gnu-gcc", "/usr/bin/qemu-aarch64"],
            &[
                "gcc-aarch64-linux-gnu",
                "libc6-dev-arm64-cross",
                "qemu-user",
            ],
        ),
        _ => (
            &["/usr/bin/x86_64-w64-mingw32-gcc", "/usr/lib/wine/wine64"],
            &["gcc-mingw-w64-x86-64", "wine64"],
        ),
    };
    if tools.iter().any(|t| !Path::new(t).exists()) {
        step(&format!("installing {}", packages.join(" ")));
        run_cmd(Command::new("apt-get").args(["update", "-qq"]))?;
        run_cmd(
            Command::new("apt-get")
                .args(["install", "-y", "-qq"])
                .args(packages)
                .env("DEBIAN_FRONTEND", "noninteractive"),
        )?;
    }
    run_cmd(Command::new("rustup").args(["target", "add", target]))
}
