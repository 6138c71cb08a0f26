//! What the loader's public functions answer, read back against what was
//! loaded (issue 41's mutation run on `src/loader/mod.rs` and
//! `src/loader/library.rs` found these unread): `function` of a runtime
//! name (linked with the static runtime, loaded with `dynamic-cudart`),
//! `load_all`'s counts, a missing runtime's `cudaGetErrorString`, and the
//! version calls' answers: a `cuDriverGetVersion` lookup refused as below
//! its introduction, a version call that fails having written a version.
//! Each case in a child process, each with its wrong twin.

use super::{
    child_with, expect_lines, fake_driver, fake_runtime, needs_feature, needs_loaded_runtime,
    runtime_is_linked,
};
use libtest_mimic::{Completion, Failed};
use std::ffi::OsStr;

/// What the fake runtime's `cudaRuntimeGetVersion` says: a release of the
/// headers' major (the fake's default, 13000, is another major under 12.x
/// headers, where the runtime would be refused for that).
fn own_major() -> String {
    (cuda_mem_sys::CUDA_VERSION / 1000 * 1000 + 10).to_string()
}

/// The loader's answers as the role `public-answers` prints them, judged:
/// `function("cudaGetDeviceCount")` is `Linked` with the static runtime and
/// `Loaded` with the runtime loaded; `load_all`'s counts are the driver's
/// and the runtime's functions `function` finds (each slot once), and
/// there is more than one of each.
fn judge_public_answers(out: &str, runtime_loaded: bool) -> Result<(), String> {
    let field = |key: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(str::trim)
            .ok_or_else(|| format!("no line {key:?}:\n{out}"))
    };
    let function = field("function cudaGetDeviceCount ")?;
    let want = if runtime_loaded { "Loaded" } else { "Linked" };
    if function != want {
        return Err(format!(
            "function(\"cudaGetDeviceCount\") is {function}, where the runtime {} says {want}",
            if runtime_loaded {
                "loaded at run time"
            } else {
                "linked statically"
            }
        ));
    }
    let load_all = field("load_all ")?;
    let found = field("found by function ")?;
    if load_all != found {
        return Err(format!(
            "load_all says (driver, runtime) {load_all}; function finds {found}"
        ));
    }
    let counts: Vec<usize> = found.split(' ').filter_map(|n| n.parse().ok()).collect();
    if counts.len() != 2 || counts.iter().any(|&n| n < 2) {
        return Err(format!(
            "function finds {found}: the fakes answer more than one function each"
        ));
    }
    Ok(())
}

/// Issue 41 (mutants of `function`'s runtime guard and of `load_all`):
/// the loader's answers agree with what was loaded, with the static
/// runtime or the fake runtime loaded. The wrong twins: `load_all`
/// answering (1, 1), and a runtime name said `Loaded` in a static build,
/// each fail the judge.
pub fn function_and_load_all_answer_what_was_loaded() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let twin = "function cudaGetDeviceCount Linked\nload_all 1 1\nfound by function 300 500\n";
    if judge_public_answers(twin, false).is_ok() {
        return Err("the judge takes load_all (1, 1) where function finds (300, 500)".into());
    }
    let twin = "function cudaGetDeviceCount Loaded\nload_all 300 500\nfound by function 300 500\n";
    if judge_public_answers(twin, false).is_ok() {
        return Err("the judge takes a runtime name Loaded with the static runtime".into());
    }
    let (_d, driver) = fake_driver(&[])?;
    let (_r, runtime) = fake_runtime()?;
    let out = child_with(
        "public-answers",
        &[
            ("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str()),
            ("CUDA_MEM_SYS_LIBCUDART", runtime.as_os_str()),
            ("FAKE_RUNTIME_VERSION", OsStr::new(&own_major())),
        ],
    )?;
    print!("{out}");
    let runtime_loaded = needs_loaded_runtime(&out).is_none();
    judge_public_answers(&out, runtime_loaded)?;
    Ok(Completion::Completed)
}

/// Issue 41 (the mutant of `Missing for *const c_char`): with the runtime
/// loaded at run time and `CUDA_MEM_SYS_LIBCUDART` naming no file,
/// `cudaGetErrorString` returns the loader's sentence (never a null
/// pointer), and so does `cudaGetErrorName`. The twin: with the fake
/// runtime named, neither is the sentence (the fake has no such function:
/// "lacks this function", another sentence).
pub fn a_missing_runtimes_error_string_is_the_loaders_sentence() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let (_d, driver) = fake_driver(&[])?;
    let dir = test_support::scratch("runtime-not-here");
    let missing = dir.path().join("libcudart-not-here.so.13");
    let out = child_with(
        "runtime-error-string",
        &[
            ("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str()),
            ("CUDA_MEM_SYS_LIBCUDART", missing.as_os_str()),
        ],
    )?;
    if let Some(c) = needs_loaded_runtime(&out) {
        return Ok(c);
    }
    print!("the runtime named is missing:\n{out}");
    let sentence = "cuda-mem-sys: the CUDA runtime library could not be loaded";
    expect_lines(
        &out,
        &[
            &format!("cudaGetErrorString {sentence}"),
            &format!("cudaGetErrorName {sentence}"),
        ],
    )?;
    let (_r, runtime) = fake_runtime()?;
    let out = child_with(
        "runtime-error-string",
        &[
            ("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str()),
            ("CUDA_MEM_SYS_LIBCUDART", runtime.as_os_str()),
            ("FAKE_RUNTIME_VERSION", OsStr::new(&own_major())),
        ],
    )?;
    print!("the fake runtime named:\n{out}");
    let lacks = "cuda-mem-sys: the CUDA runtime library lacks this function";
    expect_lines(&out, &[&format!("cudaGetErrorString {lacks}")])?;
    Ok(Completion::Completed)
}

/// Issue 41 (the mutant `f > LAST_STATE` → `>=` of `open_driver`): a
/// driver whose `cuGetProcAddress` answers `VERSION_NOT_SUFFICIENT` for
/// `cuDriverGetVersion` at 2020 (introduced later, by `FAKE_INTRODUCED`)
/// gives the loader its "below the introduction" state, not a function:
/// the loader asks the exported `cuDriverGetVersion` instead and takes its
/// answer (13000), calling nothing at the state's value (the mutant calls
/// address 4, and the child dies). The twin: the same driver asked at its
/// introduction gives the version through the lookup; the export is not
/// called.
pub fn a_version_lookup_below_its_introduction_falls_back_to_the_export(
) -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let (d, driver) = fake_driver(&[])?;
    let introduced = d.path().join("introduced.txt");
    std::fs::write(&introduced, "cuDriverGetVersion 3000\n").map_err(|e| e.to_string())?;
    let loaded = format!("driver Ok {}", driver.display());
    for (later, exported) in [(true, "exported calls 1"), (false, "exported calls 0")] {
        let mut env: Vec<(&str, &OsStr)> = vec![("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str())];
        if later {
            env.push(("FAKE_INTRODUCED", introduced.as_os_str()));
        }
        let out = child_with("driver-version", &env)?;
        println!("cuDriverGetVersion introduced after 2020: {later}\n{out}");
        expect_lines(
            &out,
            &[loaded.as_str(), "driver version Some(13000)", exported],
        )?;
    }
    Ok(Completion::Completed)
}

/// Issue 41 (the mutants `&&` → `||` of `open_driver` and `||` → `&&` of
/// `open_runtime`): a version call that fails is not an answer, even where
/// it wrote a version. The driver whose `cuDriverGetVersion` fails having
/// written 13000 loads with no version known (`None`); the runtime whose
/// `cudaRuntimeGetVersion` fails having written 13000, the headers' major,
/// is refused as no runtime (with the runtime loaded at run time; the
/// static runtime's half is then the driver's alone). The twins: the same
/// calls succeeding give `Some(13000)`, and the runtime is taken.
pub fn a_failed_version_call_is_no_answer_though_it_wrote_one() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let (d, driver) = fake_driver(&[])?;
    // Asked through cuGetProcAddress, and (introduced after the version the
    // loader asks) through the exported symbol.
    let introduced = d.path().join("introduced.txt");
    std::fs::write(&introduced, "cuDriverGetVersion 3000\n").map_err(|e| e.to_string())?;
    let loaded = format!("driver Ok {}", driver.display());
    for export in [false, true] {
        for (fails, version) in [
            (true, "driver version None"),
            (false, "driver version Some(13000)"),
        ] {
            let mut env: Vec<(&str, &OsStr)> = vec![("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str())];
            if fails {
                env.push(("FAKE_DRIVER_VERSION_FAILS_WRITING", OsStr::new("1")));
            }
            if export {
                env.push(("FAKE_INTRODUCED", introduced.as_os_str()));
            }
            let out = child_with("driver-version", &env)?;
            println!(
                "cuDriverGetVersion fails having written 13000: {fails}, asked by its \
                 export: {export}\n{out}"
            );
            let calls = if export {
                "exported calls 1"
            } else {
                "exported calls 0"
            };
            expect_lines(&out, &[loaded.as_str(), version, calls])?;
        }
    }
    if runtime_is_linked()?.is_some() {
        println!("the runtime is linked statically: no runtime file is asked its version");
        return Ok(Completion::Completed);
    }
    let (_r, runtime) = fake_runtime()?;
    let taken = format!("runtime Ok {}", runtime.display());
    let own = own_major();
    for fails in [true, false] {
        let mut env: Vec<(&str, &OsStr)> = vec![
            ("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str()),
            ("CUDA_MEM_SYS_LIBCUDART", runtime.as_os_str()),
            ("FAKE_RUNTIME_VERSION", OsStr::new(&own)),
        ];
        if fails {
            env.push(("FAKE_RUNTIME_VERSION_FAILS", OsStr::new("1")));
        }
        let out = child_with("runtime-after-driver", &env)?;
        println!("cudaRuntimeGetVersion fails having written 13000: {fails}\n{out}");
        if fails {
            expect_lines(&out, &["runtime Err"])?;
            if !out.contains("cudaRuntimeGetVersion is missing or failed") {
                return Err(format!("the runtime is not refused as no runtime:\n{out}").into());
            }
        } else {
            expect_lines(&out, &[taken.as_str()])?;
        }
    }
    Ok(Completion::Completed)
}

/// Issue 41 (the mutants `>` → `>=` of `slots.rs`'s fast paths,
/// `driver_fn` and `driver_ready`): a function whose slot holds the last
/// state, "asked below its introduction", stays unavailable when asked and
/// called again: the fast path takes only addresses above the states (the
/// mutant returns the state, 4, as an address, and the second call jumps
/// there). The fake driver introduces `cuCtxGetDevice` just after the
/// version the table asks (`FAKE_INTRODUCED`). The twin: without it, the
/// function is found both times and called (the fake writes its device).
pub fn a_function_below_its_introduction_stays_unavailable_when_asked_again(
) -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let asked =
        table_version("cuCtxGetDevice").ok_or("cuCtxGetDevice is not in the loader's table")?;
    let (d, driver) = fake_driver(&[])?;
    let introduced = d.path().join("introduced.txt");
    std::fs::write(&introduced, format!("cuCtxGetDevice {}\n", asked + 10))
        .map_err(|e| e.to_string())?;
    let own = cuda_mem_sys::CUDA_VERSION.max(asked).to_string();
    for below in [true, false] {
        let mut env: Vec<(&str, &OsStr)> = vec![
            ("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str()),
            ("FAKE_DRIVER_VERSION", OsStr::new(&own)),
        ];
        if below {
            env.push(("FAKE_INTRODUCED", introduced.as_os_str()));
        }
        let out = child_with("asked-twice", &env)?;
        println!("cuCtxGetDevice introduced after the version asked ({asked}): {below}\n{out}");
        let (function, call) = if below {
            ("function Err(VersionBelowIntroduction)", "call 999 0")
        } else {
            ("function Loaded", "call 0 ")
        };
        for round in ["first", "second"] {
            let f = format!("{round} {function}");
            if !out.lines().any(|l| l == f) {
                return Err(format!("no line {f:?}:\n{out}").into());
            }
            let c = format!("{round} {call}");
            if !out.lines().any(|l| l.starts_with(&c)) {
                return Err(format!("no line starting {c:?}:\n{out}").into());
            }
        }
    }
    Ok(Completion::Completed)
}

/// The ABI version the loader's table asks `name` at (the table exists
/// with `dynamic-loading` only; without it the tests above return first).
#[cfg(feature = "dynamic-loading")]
fn table_version(name: &str) -> Option<u32> {
    use cuda_mem_sys::loader_table::{DRIVER, NAMES};
    NAMES
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, _, slot)| DRIVER[*slot].version)
}

#[cfg(not(feature = "dynamic-loading"))]
fn table_version(_: &str) -> Option<u32> {
    None
}

/// Runs `role` where it is one of this file's, and says whether it was.
#[cfg(feature = "dynamic-loading")]
pub fn run_role(role: &str) -> bool {
    roles::run(role)
}

#[cfg(feature = "dynamic-loading")]
mod roles {
    use cuda_mem_sys::loader::{self, Api, Resolved};
    use cuda_mem_sys::loader_table::NAMES;
    use cuda_mem_sys::*;
    use std::collections::BTreeSet;
    use std::ffi::CStr;

    fn class(r: Result<Resolved, loader::Unavailable>) -> String {
        match r {
            Ok(Resolved::Linked) => "Linked".into(),
            Ok(Resolved::Loaded(p)) if !p.is_null() => "Loaded".into(),
            Ok(Resolved::Loaded(_)) => "Loaded at null".into(),
            Err(e) => format!("Err({e:?})"),
        }
    }

    fn public_answers() {
        if loader::runtime().map(|l| l.file) == Ok("libcudart_static.a") {
            println!("runtime linked");
        }
        println!(
            "function cudaGetDeviceCount {}",
            class(loader::function("cudaGetDeviceCount"))
        );
        let (d, r) = loader::load_all();
        println!("load_all {d} {r}");
        // Each slot once: a documented name and the symbol it links share one.
        let found = |api: Api| {
            NAMES
                .iter()
                .filter(|(_, a, _)| *a == api)
                .filter(|(name, _, _)| loader::function(name).is_ok())
                .map(|(_, _, slot)| *slot)
                .collect::<BTreeSet<_>>()
                .len()
        };
        println!(
            "found by function {} {}",
            found(Api::Driver),
            found(Api::Runtime)
        );
    }

    fn error_strings() {
        if loader::runtime().map(|l| l.file) == Ok("libcudart_static.a") {
            println!("runtime linked");
            return;
        }
        // SAFETY: each returns a pointer to a NUL-terminated string, or null (checked).
        let text = |p: *const std::ffi::c_char| {
            if p.is_null() {
                "(null)".to_string()
            } else {
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            }
        };
        println!(
            "cudaGetErrorString {}",
            text(unsafe { cudaGetErrorString(cudaSuccess) })
        );
        println!(
            "cudaGetErrorName {}",
            text(unsafe { cudaGetErrorName(cudaSuccess) })
        );
    }

    fn driver_version() {
        match loader::driver() {
            Ok(l) => {
                println!("driver Ok {}", l.file);
                println!("driver version {:?}", l.version);
                let calls: unsafe extern "C" fn() -> std::ffi::c_int =
                    crate::roles::fake("fake_exported_calls");
                println!("exported calls {}", unsafe { calls() });
            }
            Err(e) => println!("driver Err {}", e.message),
        }
    }

    /// `cuCtxGetDevice` asked of the loader and called, twice each.
    fn asked_twice() {
        for round in ["first", "second"] {
            let f = loader::function("cuCtxGetDevice");
            println!("{round} function {}", class(f));
            let mut d = 0;
            let r = unsafe { cuCtxGetDevice(&mut d) };
            println!("{round} call {} {d}", r.0);
        }
    }

    pub fn run(role: &str) -> bool {
        match role {
            "asked-twice" => asked_twice(),
            "public-answers" => public_answers(),
            "runtime-error-string" => error_strings(),
            "driver-version" => driver_version(),
            _ => return false,
        }
        true
    }
}
