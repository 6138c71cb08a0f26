//! `cargo xtask msvc [<release>... | --all]`: `x86_64-pc-windows-msvc`
//! proven on this Linux machine with no file from Microsoft.
//!
//! - bindgen and the C side run as clang in MSVC mode (clang's GNU-style
//!   driver with `--target=x86_64-pc-windows-msvc`, so `-dD` and the error
//!   limit work), with stand-in C library headers (`msvc/*.h`: `stdlib.h` is
//!   `stddef.h` for the CUDA headers; `stdio.h` and the rest declare what the
//!   tests' C programs call in Wine's `ucrtbase.dll`);
//! - programs and DLLs link with `rust-lld`/`lld-link` against import
//!   libraries that `llvm-dlltool` makes from Wine's own DLLs (their exports
//!   listed by `llvm-readobj --coff-exports`), plus `msvc/start.c`, the
//!   start-up code Microsoft's static CRT would add (entry points, TLS
//!   directory, `__chkstk`);
//! - they run under `wine`.
//!
//! For each release (the pinned 13.0 unless told): the layout, signature,
//! bad-input, stable-name and fallback checks, the loader's DLL search (the
//! static runtime, and the runtime DLL with `dynamic-cudart`), a compile
//! (`cargo check`: NVIDIA's `cudart_static.lib` needs Microsoft's static CRT
//! to link) of every example and every test, device tests included, and of
//! the wrapper crate (`wrap/`), linked and with `dynamic-loading`. With the
//! runtime DLL (`dynamic-loading,dynamic-cudart`, which links without
//! Microsoft's CRT) the device tests run under Wine, where there is no
//! driver: each must list the same names as on Linux and report every test
//! ignored with its reason (the POSIX-descriptor ones: Unix only), none
//! passed empty; the tests' OS helpers and the wrapper's tests run too.
//!
//! The tools, headers, import libraries and start-up code are made once into
//! `target/msvc-toolchain/` (remade when their sources change).

mod tools;

use crate::cmd::{cargo, run_cmd, step, write_file};
use crate::headers;
use std::path::{Path, PathBuf};
use std::process::Command;
/// The stand-in C library headers clang in MSVC mode reads (`regen` uses them too).
pub use tools::HEADERS as STAND_IN_HEADERS;
pub use tools::MSVC;
use tools::{dlltool, for_msvc, llvm, toolchain, Toolchain};

/// The releases of `cargo xtask msvc [<release>... | --all]`: the pinned one
/// unless told.
pub fn parse<'a>(args: &[&'a str]) -> Result<Vec<&'a str>, String> {
    match args {
        [] => Ok(vec![generator::release::PINNED_RELEASE]),
        ["--all"] => Ok(crate::releases::ALL.to_vec()),
        named => match named.iter().find(|r| !crate::releases::ALL.contains(r)) {
            Some(bad) => Err(format!(
                "msvc: {bad:?} is no release (known: {}), nor --all alone",
                crate::releases::ALL.join(" ")
            )),
            None => Ok(named.to_vec()),
        },
    }
}

/// `cargo xtask msvc [<release>... | --all]`.
pub fn run(workspace: &Path, args: &[&str]) -> Result<(), String> {
    let releases = parse(args)?;
    crate::cmd::ensure_libclang()?;
    let started = std::time::Instant::now();
    let tc = toolchain(workspace)?;
    println!("(toolchain: {:.0} s)", started.elapsed().as_secs_f64());
    let linux_lists = linux_lists(workspace)?;
    for release in releases {
        release_checks(workspace, &tc, release, &linux_lists)?;
    }
    println!("{MSVC}: {:.0} s in all", started.elapsed().as_secs_f64());
    Ok(())
}

/// One release's checks, in `target/abi/x86_64-pc-windows-msvc/<release>/`.
fn release_checks(
    workspace: &Path,
    tc: &Toolchain,
    release: &str,
    linux_lists: &[(&str, Vec<String>)],
) -> Result<(), String> {
    let include = headers::fetch_for(workspace, release, MSVC)?;
    let dir = super::target_dir_for(workspace, release, MSVC);
    let lib_dir = cuda_libraries(workspace, tc, release, &include)?;
    let cargo_in = |args: &[&str], features: &str| {
        let mut cmd = cargo(workspace);
        cmd.args(args);
        if !features.is_empty() {
            cmd.args(["--features", features]);
        }
        for_msvc(&mut cmd, tc);
        cmd.env("CUDA_MEM_SYS_INCLUDE_DIR", &include)
            .env("CARGO_TARGET_DIR", &dir)
            .env("CARGO_PROFILE_DEV_DEBUG", "0");
        if let Some(lib_dir) = &lib_dir {
            cmd.env("CUDA_MEM_SYS_LIB_DIR", lib_dir);
        }
        cmd
    };
    let timed = |title: &str, mut cmd: Command| -> Result<(), String> {
        step(&format!("{MSVC}, CUDA {release}: {title}"));
        let t = std::time::Instant::now();
        run_cmd(&mut cmd)?;
        println!("({:.0} s)", t.elapsed().as_secs_f64());
        Ok(())
    };
    let mut abi = vec!["test"];
    for t in super::WINDOWS_ABI_TESTS {
        abi.extend(["--test", t]);
    }
    step(&format!(
        "{MSVC}, CUDA {release}: layouts and constants, signatures, bad input, stable names, \
         one enum type on every target, the committed bindings (under wine)"
    ));
    let t = std::time::Instant::now();
    let out = cargo_in(&abi, "")
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cargo test: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    if !out.status.success() {
        return Err(format!(
            "{MSVC}, CUDA {release}: the ABI checks failed ({})",
            out.status
        ));
    }
    let ignored = unexpected_ignores(&stdout, release);
    if !ignored.is_empty() {
        return Err(format!(
            "{MSVC}, CUDA {release}: checks reported ignored, which must run here:\n{}",
            ignored.join("\n")
        ));
    }
    println!("({:.0} s)", t.elapsed().as_secs_f64());
    let search = ["test", "--test", "windows_dll_search"];
    if lib_dir.is_none() {
        timed(
            "the loader's DLL search, the static runtime linked (under wine)",
            cargo_in(&search, "dynamic-loading"),
        )?;
    } else {
        println!("(no cudart_static.lib in the {release} wheels: the DLL search with the static runtime is not run)");
    }
    timed(
        "the loader's DLL search, the runtime DLL loaded (under wine)",
        cargo_in(&search, "dynamic-loading,dynamic-cudart"),
    )?;
    // `cargo check` of `args`, linked and with `dynamic-loading`.
    let compiles = |what: &str, args: &[&str]| -> Result<(), String> {
        timed(&format!("{what} compiles, linked"), cargo_in(args, ""))?;
        timed(
            &format!("{what} compiles, dynamic-loading"),
            cargo_in(args, "dynamic-loading"),
        )
    };
    compiles(
        "every example and every test (device tests included)",
        &["check", "-p", "cuda-mem-sys", "--examples", "--tests"],
    )?;
    let loaded = "dynamic-loading,dynamic-cudart";
    timed(
        "the device tests' OS helpers and the process-death plumbing, the runtime DLL loaded (under wine)",
        cargo_in(
            &[
                "test",
                "-p",
                "cuda-mem-sys",
                "--test",
                "os_helpers",
                "--test",
                "process_death_plumbing",
            ],
            loaded,
        ),
    )?;
    device_tests_under_wine(&format!("{MSVC}, CUDA {release}"), linux_lists, |args| {
        cargo_in(args, loaded)
    })?;
    compiles(
        "the wrapper crate (wrap/)",
        &["check", "-p", "cuda-mem-wrap", "--all-targets"],
    )?;
    // Its tests link with the runtime DLL's import library (the static
    // runtime needs Microsoft's CRT): its host test runs, its device tests
    // report ignored for want of nvcuda.dll.
    timed(
        "the wrapper crate's tests, dynamic-loading with the runtime DLL (under wine)",
        cargo_in(
            &["test", "-p", "cuda-mem-wrap", "--tests"],
            "dynamic-loading,cuda-mem-sys/dynamic-cudart",
        ),
    )?;
    Ok(())
}

/// The tests of the ABI step that said `ignored` where they must run: all
/// but the fallback build's own test and, for another release than the
/// pinned one, the committed bindings' comparison (the headers it needs
/// are 13.0's). A check that cannot find its headers under Wine reports
/// ignored, and would otherwise pass the step.
fn unexpected_ignores(stdout: &str, release: &str) -> Vec<String> {
    let mut allowed = vec!["a_build_without_cuda_uses_the_fallback"];
    if release != generator::release::PINNED_RELEASE {
        allowed.push("committed_bindings_match_the_pinned_headers");
    }
    outcomes(stdout)
        .into_iter()
        .filter(|(name, outcome)| {
            outcome.starts_with("ignored") && !allowed.contains(&name.as_str())
        })
        .map(|(name, outcome)| format!("{name} ... {outcome}"))
        .collect()
}

/// Where the release's win_amd64 wheels hold no import libraries (the 12.x
/// ones ship `cudart64_12.dll` alone), a folder with `cudart.lib` made by
/// llvm-dlltool from that DLL's exports and the pinned release's `cuda.lib`
/// (`nvcuda.dll` keeps its name and its older exports in every driver; the
/// checks call no driver function); `None` where the wheels have their own.
fn cuda_libraries(
    workspace: &Path,
    tc: &Toolchain,
    release: &str,
    include: &Path,
) -> Result<Option<PathBuf>, String> {
    let root = include.parent().unwrap();
    if root.join("lib/x64/cuda.lib").is_file() {
        return Ok(None);
    }
    let dir = tc.libs.join(format!("cuda-{release}"));
    if dir.join("cuda.lib").is_file() && dir.join("cudart.lib").is_file() {
        return Ok(Some(dir));
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let pinned = headers::fetch_for(workspace, generator::release::PINNED_RELEASE, MSVC)?;
    let cuda = pinned.parent().unwrap().join("lib/x64/cuda.lib");
    std::fs::copy(&cuda, dir.join("cuda.lib")).map_err(|e| format!("{}: {e}", cuda.display()))?;
    let dll = find_cudart(&root.join("bin"))
        .ok_or_else(|| format!("no cudart64_*.dll under {}", root.join("bin").display()))?;
    let name = dll.file_stem().unwrap().to_string_lossy().into_owned();
    let out = Command::new(llvm("llvm-readobj"))
        .arg("--coff-exports")
        .arg(&dll)
        .output()
        .map_err(|e| format!("llvm-readobj: {e}"))?;
    let mut def = format!("LIBRARY {name}.dll\nEXPORTS\n");
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some(n) = line.trim().strip_prefix("Name: ").filter(|n| !n.is_empty()) {
            def.push_str(&format!("  {n}\n"));
        }
    }
    write_file(&dir.join("cudart.def"), &def)?;
    dlltool(&dir, "cudart", "cudart")?;
    Ok(Some(dir))
}

fn find_cudart(dir: &Path) -> Option<PathBuf> {
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        let name = p.file_name()?.to_string_lossy().into_owned();
        if p.is_dir() {
            if let Some(f) = find_cudart(&p) {
                return Some(f);
            }
        } else if name.starts_with("cudart64_") && name.ends_with(".dll") {
            return Some(p);
        }
    }
    None
}

/// The device tests of `linux_lists` run under Wine, where there is no
/// driver, by `cargo_in` (a `cargo` for the Windows target with the runtime
/// DLL loaded): each binary must report the names Linux lists, every test
/// ignored with its reason ([`judge_device_run`]). `what` names the target
/// and release in the step's title.
pub fn device_tests_under_wine(
    what: &str,
    linux_lists: &[(&str, Vec<String>)],
    cargo_in: impl Fn(&[&str]) -> Command,
) -> Result<(), String> {
    step(&format!(
        "{what}: the device tests under wine, no driver: the names Linux lists, \
         every test ignored with its reason"
    ));
    let t = std::time::Instant::now();
    let mut problems = vec![];
    for (test, linux) in linux_lists {
        let out = cargo_in(&["test", "-p", "cuda-mem-sys", "--test", test])
            .stderr(std::process::Stdio::inherit())
            .output()
            .map_err(|e| format!("cargo test --test {test}: {e}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let ran = outcomes(&stdout);
        let unix_only = ran.iter().filter(|(_, r)| r.contains("Unix only")).count();
        println!(
            "{test}: {} tests, {} ignored ({unix_only} Unix only) ({})",
            ran.len(),
            ran.iter().filter(|(_, r)| r.starts_with("ignored")).count(),
            out.status
        );
        if !out.status.success() {
            problems.push(format!("{test}: {}\n{stdout}", out.status));
        }
        problems.extend(judge_device_run(test, linux, &ran));
    }
    if !problems.is_empty() {
        return Err(format!(
            "{what}: the device tests under wine:\n{}",
            problems.join("\n")
        ));
    }
    println!("({:.0} s)", t.elapsed().as_secs_f64());
    Ok(())
}

/// The test targets of cuda-mem-sys that need a GPU (those of
/// [`crate::gpu_lab::suite::DEVICE_TESTS`] of the crate's package).
fn device_tests() -> Vec<&'static str> {
    crate::gpu_lab::suite::DEVICE_TESTS
        .iter()
        .filter(|t| t.package == "cuda-mem-sys")
        .map(|t| t.name)
        .collect()
}

/// What each device test lists on Linux (`--list`, against the pinned
/// headers): the names the Windows run must report.
pub fn linux_lists(workspace: &Path) -> Result<Vec<(&'static str, Vec<String>)>, String> {
    let pinned = headers::fetch(workspace, generator::release::PINNED_RELEASE)?;
    let tests = device_tests();
    step("the device tests' names on Linux (--list, the pinned headers)");
    let mut lists = vec![];
    for test in tests {
        let out = cargo(workspace)
            .args([
                "test",
                "-q",
                "-p",
                "cuda-mem-sys",
                "--test",
                test,
                "--",
                "--list",
            ])
            .env(generator::locate::INCLUDE_DIR_VAR, &pinned)
            .stderr(std::process::Stdio::inherit())
            .output()
            .map_err(|e| format!("cargo test --test {test} -- --list: {e}"))?;
        let names = listed(&String::from_utf8_lossy(&out.stdout));
        if !out.status.success() || names.is_empty() {
            return Err(format!(
                "{test} -- --list on Linux: exit {}, {} names",
                out.status,
                names.len()
            ));
        }
        println!("{test}: {} tests", names.len());
        lists.push((test, names));
    }
    Ok(lists)
}

/// The names of a `--list` output (`<name>: test` lines).
fn listed(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(str::to_string)
        .collect()
}

/// Each `test <name> ... <outcome>` line of a run: the name and the outcome
/// (`ok`, `FAILED`, `ignored (<reason>)`).
fn outcomes(stdout: &str) -> Vec<(String, String)> {
    stdout
        .lines()
        .filter_map(|l| {
            let (name, outcome) = l.strip_prefix("test ")?.split_once(" ... ")?;
            Some((name.trim().to_string(), outcome.trim().to_string()))
        })
        .collect()
}

/// What is wrong with a device-test binary's run under Wine, where there is
/// no driver: a name Linux lists that it did not report, one it reported
/// that Linux does not list, a test that did not report ignored (a device
/// test passing with no GPU passed empty), an ignored one with no reason.
fn judge_device_run(test: &str, linux: &[String], ran: &[(String, String)]) -> Vec<String> {
    let mut problems = vec![];
    for name in linux {
        if !ran.iter().any(|(n, _)| n == name) {
            problems.push(format!(
                "{test}: {name} is listed on Linux but was not run on Windows"
            ));
        }
    }
    for (name, outcome) in ran {
        if !linux.contains(name) {
            problems.push(format!(
                "{test}: {name} ran on Windows but is not listed on Linux"
            ));
        }
        if !outcome.starts_with("ignored (") {
            problems.push(format!(
                "{test}: {name} said {outcome:?} with no driver, not ignored with a reason"
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_tests_are_cuda_mem_sys_own() {
        let tests = device_tests();
        assert!(
            tests.contains(&"vmm") && tests.contains(&"external_interop"),
            "{tests:?}"
        );
        assert!(!tests.contains(&"abi_symbols"));
    }

    #[test]
    fn a_device_run_under_wine_must_list_linux_names_all_ignored() {
        let linux = ["a".to_string(), "b".to_string()];
        let ignored = |n: &str| (n.to_string(), "ignored (no usable CUDA driver)".to_string());
        let out = "test a ... ignored (no usable CUDA driver)\n\
                   test b ... ignored (Unix only: POSIX descriptors)\n\
                   test result: ok. 0 passed; 0 failed; 2 ignored\n";
        assert!(judge_device_run("t", &linux, &outcomes(out)).is_empty());
        assert_eq!(listed("a: test\nb: test\n\n2 tests, 0 benchmarks\n"), linux);
        // Wrong twins: a test left out on Windows, one Linux lacks, one that
        // passed with no driver, one ignored without a reason.
        let missing = judge_device_run("t", &linux, &[ignored("a")]);
        assert!(
            missing[0].contains("b is listed on Linux but was not run"),
            "{missing:?}"
        );
        let extra = judge_device_run("t", &linux, &[ignored("a"), ignored("b"), ignored("c")]);
        assert!(
            extra[0].contains("c ran on Windows but is not listed"),
            "{extra:?}"
        );
        let passed = judge_device_run("t", &linux, &[ignored("a"), ("b".into(), "ok".into())]);
        assert!(passed[0].contains("b said \"ok\""), "{passed:?}");
        let bare = judge_device_run("t", &linux, &[ignored("a"), ("b".into(), "ignored".into())]);
        assert_eq!(bare.len(), 1, "{bare:?}");
    }

    #[test]
    fn an_ignored_check_fails_the_step_but_the_fallback_builds_own() {
        let out = "test types     ... ignored (the headers ... are not on this machine)\n\
                   test fields    ... ok\n\
                   test a_build_without_cuda_uses_the_fallback          ... ignored (this build found CUDA headers)\n\
                   test committed_bindings_match_the_pinned_headers     ... ignored (built against 12.0)\n";
        assert_eq!(
            unexpected_ignores(out, "12.0"),
            ["types ... ignored (the headers ... are not on this machine)"]
        );
        assert_eq!(unexpected_ignores(out, "13.0").len(), 2);
        assert!(unexpected_ignores("test fields ... ok\n", "13.0").is_empty());
    }
}
