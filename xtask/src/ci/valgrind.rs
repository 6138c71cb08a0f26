//! `cargo xtask valgrind`: the loader's first call, made by 32 threads at
//! once, under valgrind's race detector; 0 errors, and its wrong twin caught.
//!
//! `loader-model/valgrind/first_call.c` (plain pthreads released by one
//! barrier) calls the crate built as a cdylib (`loader-model/valgrind/probe.rs`,
//! `dynamic-loading` and `export-c-names`, the committed bindings) over the
//! fake driver, twice:
//!
//! - with `--cfg cuda_mem_sys_valgrind`, the loader's atomics told to the
//!   tool (`src/loader/valgrind.rs`): 0 errors;
//! - with `--cfg cuda_mem_sys_valgrind_wrong_twin` as well, every atomic
//!   store told as `Relaxed` (the load's `DONE` published without its
//!   edge): the tool must report errors.
//!
//! Each build has a target folder of its own (the flags rebuild everything
//! they touch). The tools and their settings: [`TOOLS`].

use crate::cmd::{cargo_of, discard, run_cmd, step};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The tools, each with its arguments: DRD with no suppression at all (not
/// even valgrind's defaults), the verdict; helgrind as a second opinion,
/// with valgrind's default suppressions, of which it uses one:
/// `helgrind-glibc2X-005` (a race whose innermost frame is in `libc.so.6`:
/// glibc's own `pthread_mutex_lock` reading its mutex word inside the
/// lock helgrind intercepts). Both with `--fair-sched=yes` (threads take
/// turns, so that more of them meet inside the load) and `LD_BIND_NOW=1`
/// (no lazy binding: `ld.so`'s `_dl_fixup` patches the GOT without a lock,
/// by design, which DRD reports and its default `drd-ld` suppression hides).
pub const TOOLS: [(&str, &[&str]); 2] = [
    ("drd", &["--tool=drd", "--default-suppressions=no"]),
    ("helgrind", &["--tool=helgrind"]),
];
pub const THREADS: usize = 32;

pub fn run(workspace: &Path) -> Result<(), String> {
    step("the loader's first call on 32 threads under DRD and helgrind: 0 errors, the wrong twin caught");
    ensure_valgrind()?;
    let base = workspace.join("target/valgrind");
    let dir = base.join("run");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let sources = workspace.join("loader-model/valgrind");
    let fake = workspace.join("abi-proofs/tests/fixtures/fake_libcuda.c");
    cc(&[
        "-shared",
        "-fPIC",
        "-w",
        "-g",
        "-Wl,-soname,libcuda.so.1",
        "-o",
        &path(&dir.join("libcuda.so.1")),
        &path(&fake),
    ])?;
    let version = output(Command::new("valgrind").arg("--version"))?;
    let mut failures = Vec::new();
    for (name, flags) in [
        ("real", "--cfg cuda_mem_sys_valgrind"),
        (
            "twin",
            "--cfg cuda_mem_sys_valgrind --cfg cuda_mem_sys_valgrind_wrong_twin",
        ),
    ] {
        let lib = probe(workspace, &base, name, flags)?;
        let own = dir.join(name);
        std::fs::create_dir_all(&own).map_err(|e| e.to_string())?;
        std::fs::copy(&lib, own.join("libprobe.so")).map_err(|e| e.to_string())?;
        let program = own.join("first_call");
        cc(&[
            "-g",
            "-pthread",
            "-o",
            &path(&program),
            &path(&sources.join("first_call.c")),
            &format!("-L{}", path(&own)),
            "-lprobe",
            "-ldl",
            "-Wl,-rpath,$ORIGIN",
        ])?;
        for (tool, args) in TOOLS {
            let log = own.join(format!("{tool}.log"));
            let out = Command::new("valgrind")
                .args(args)
                .args(["--fair-sched=yes", "-s"])
                .arg(format!("--log-file={}", path(&log)))
                .arg(&program)
                .env("LD_LIBRARY_PATH", &dir)
                .env("LD_BIND_NOW", "1")
                .env_remove("CUDA_MEM_SYS_LIBCUDA")
                .env_remove("CUDA_MEM_SYS_LIBCUDART")
                .output()
                .map_err(|e| format!("valgrind: {e}"))?;
            let stdout = String::from_utf8_lossy(&out.stdout);
            let text =
                std::fs::read_to_string(&log).map_err(|e| format!("{}: {e}", log.display()))?;
            let all = format!("{THREADS} of {THREADS} threads answered");
            if !out.status.success() || !stdout.contains(&all) {
                return Err(format!(
                    "{name}: the program under {tool} failed ({}):\n{stdout}\n{text}",
                    out.status
                ));
            }
            let errors = error_count(&text)
                .ok_or_else(|| format!("{name}: no ERROR SUMMARY in {}:\n{text}", log.display()))?;
            print!(
                "{name}, {tool}: {errors} errors ({}); {stdout}",
                log.display()
            );
            match (name, errors) {
                ("real", 0) => {}
                ("real", n) => failures.push(format!(
                    "{tool} reports {n} errors on the first call of {THREADS} threads \
                     (see {}):\n{text}",
                    log.display()
                )),
                (_, 0) => failures.push(format!(
                    "the wrong twin (every atomic store told as Relaxed) was not caught: \
                     {tool} reports 0 errors (see {})",
                    log.display()
                )),
                _ => {}
            }
        }
    }
    if !failures.is_empty() {
        return Err(failures.join("\n"));
    }
    println!(
        "{}: {THREADS} threads' first calls, 0 errors under DRD and helgrind; each wrong twin \
         caught",
        version.trim()
    );
    discard(&base);
    Ok(())
}

/// valgrind, installed where missing (Debian/Ubuntu, as root).
fn ensure_valgrind() -> Result<(), String> {
    if Command::new("valgrind").arg("--version").output().is_err() {
        step("installing valgrind");
        run_cmd(Command::new("apt-get").args(["update", "-qq"]))?;
        run_cmd(
            Command::new("apt-get")
                .args(["install", "-y", "-qq", "valgrind"])
                .env("DEBIAN_FRONTEND", "noninteractive"),
        )?;
    }
    Ok(())
}

/// The cdylib `probe.rs` on the crate, built with `rustflags` in a target
/// folder of its own; its path.
fn probe(workspace: &Path, base: &Path, name: &str, rustflags: &str) -> Result<PathBuf, String> {
    let project = base.join("probe");
    std::fs::create_dir_all(&project).map_err(|e| e.to_string())?;
    let toml = format!(
        "[package]\nname = \"probe\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\
         [lib]\ncrate-type = [\"cdylib\"]\npath = {:?}\n\
         [dependencies]\ncuda-mem-sys = {{ path = {:?}, default-features = false, \
         features = [\"dynamic-loading\", \"export-c-names\"] }}\n\
         [workspace]\n",
        path(&workspace.join("loader-model/valgrind/probe.rs")),
        path(workspace),
    );
    std::fs::write(project.join("Cargo.toml"), toml).map_err(|e| e.to_string())?;
    let target = base.join(name);
    run_cmd(
        cargo_of(Command::new(env!("CARGO")), &project)
            .args(["build", "--quiet", "--offline", "--release"])
            .env("CARGO_TARGET_DIR", &target)
            .env("RUSTFLAGS", rustflags)
            .env_remove("CUDA_MEM_SYS_LIB_DIR"),
    )?;
    Ok(target.join("release/libprobe.so"))
}

/// `ERROR SUMMARY: N errors` in a valgrind log.
fn error_count(log: &str) -> Option<u64> {
    log.lines().rev().find_map(|l| {
        let rest = l.split("ERROR SUMMARY: ").nth(1)?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

fn cc(args: &[&str]) -> Result<(), String> {
    run_cmd(Command::new("cc").args(args))
}

fn output(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::error_count;

    /// The count is read from the summary line; a log without one is not 0.
    #[test]
    fn the_error_count_is_read_from_the_summary_and_never_assumed() {
        let log = "==1== Conflicting load\n==1== ERROR SUMMARY: 12 errors from 3 contexts \
                   (suppressed: 4 from 2)\n";
        assert_eq!(error_count(log), Some(12));
        assert_eq!(
            error_count("==1== ERROR SUMMARY: 0 errors from 0 contexts\n"),
            Some(0)
        );
        assert_eq!(error_count("==1== killed\n"), None);
    }
}
