//! Run-time loading (`--features dynamic-loading`), proven without a GPU:
//! the binary needs no CUDA library; the loader asks a fake driver (built
//! here from `tests/fixtures/fake_libcuda.c`) for exactly the (base name, ABI
//! version, flags) that C's types imply; answered functions are called
//! through; everything else returns the documented code; bad library files
//! and concurrent first calls neither crash nor panic; the fake answers
//! `cuGetProcAddress` as NVIDIA's driver does (compared with the installed
//! driver where there is one), and the loader tells a driver too old for a
//! function, a missing function and a table asking too low a version apart;
//! one driver per process, secure processes, the environment read at start,
//! no hang on re-entrancy or fork, the runtime's major. Each case runs in a
//! child process (bounded by a timeout), since a process loads its driver
//! once.

use libtest_mimic::{Completion, Failed};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROLE: &str = "CUDA_MEM_SYS_LOADING_ROLE";

fn functions() -> Vec<(&'static str, usize)> {
    include!(concat!(env!("OUT_DIR"), "/abi/functions.rs"))
}

fn needs_feature() -> Option<Completion> {
    (!cfg!(feature = "dynamic-loading"))
        .then(|| Completion::ignored_with("needs --features dynamic-loading"))
}

/// The `NEEDED` entries of an ELF file (`readelf -d`).
fn needed(file: &Path) -> Result<Vec<String>, Failed> {
    let out = Command::new("readelf")
        .arg("-d")
        .arg(file)
        .output()
        .map_err(|e| format!("readelf: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| l.split('[').nth(1)?.split(']').next().map(str::to_string))
        .collect())
}

fn cuda_needed(list: &[String]) -> Vec<&String> {
    list.iter()
        .filter(|n| n.starts_with("libcuda.") || n.starts_with("libcudart."))
        .collect()
}

/// The C compiler for the test's target.
fn cc() -> Command {
    let target = test_support::TARGET;
    let compiler = cc::Build::new()
        .target(target)
        .host(target)
        .opt_level(0)
        .cargo_metadata(false)
        .try_get_compiler()
        .expect("a C compiler");
    compiler.to_command()
}

/// Builds a shared library `libcuda.so.1` from `source` with `defines` into a scratch folder.
fn shared_library(
    name: &str,
    source: &Path,
    defines: &[&str],
) -> Result<(test_support::Scratch, PathBuf), Failed> {
    shared_library_named(name, source, defines, "libcuda.so.1")
}

/// The same, named (file and `SONAME`) `soname`.
fn shared_library_named(
    name: &str,
    source: &Path,
    defines: &[&str],
    soname: &str,
) -> Result<(test_support::Scratch, PathBuf), Failed> {
    shared_library_with(name, source, defines, soname, Some(soname))
}

/// The same, as the file `file`, with the `SONAME` `soname` (or none).
fn shared_library_with(
    name: &str,
    source: &Path,
    defines: &[&str],
    file: &str,
    soname: Option<&str>,
) -> Result<(test_support::Scratch, PathBuf), Failed> {
    let dir = test_support::scratch(name);
    let lib = dir.path().join(file);
    let status = cc()
        .args(["-shared", "-fPIC", "-w"])
        .args(soname.map(|s| format!("-Wl,-soname,{s}")))
        .arg("-o")
        .arg(&lib)
        .args(defines)
        .arg(source)
        .status()
        .map_err(|e| format!("cc: {e}"))?;
    if !status.success() {
        return Err(format!("compiling {} failed", source.display()).into());
    }
    Ok((dir, lib))
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A fake `libcudart.so.<major>` (`tests/fixtures/fake_libcudart.c`).
fn fake_runtime() -> Result<(test_support::Scratch, PathBuf), Failed> {
    let soname = format!("libcudart.so.{}", cuda_mem_sys::CUDA_VERSION / 1000);
    shared_library_named("fake-runtime", &fixture("fake_libcudart.c"), &[], &soname)
}

fn fake_driver(defines: &[&str]) -> Result<(test_support::Scratch, PathBuf), Failed> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_libcuda.c");
    shared_library("fake-driver", &src, defines)
}

/// Runs this binary as `role` with `CUDA_MEM_SYS_LIBCUDA` set to `driver`
/// (or unset); returns its stdout, failing if it did not exit 0.
fn child(role: &str, driver: Option<&Path>) -> Result<String, Failed> {
    let mut env: Vec<(&str, &OsStr)> = vec![];
    if let Some(d) = driver {
        env.push(("CUDA_MEM_SYS_LIBCUDA", d.as_os_str()));
    }
    child_with(role, &env)
}

/// How long a child may run: a hang fails the test instead of stalling it.
const CHILD_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs this binary as `role` with exactly the loader's and the fakes'
/// variables in `env` (all others of theirs removed); its stdout, failing if
/// it did not exit 0 within `CHILD_TIMEOUT`.
fn child_with(role: &str, env: &[(&str, &OsStr)]) -> Result<String, Failed> {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    child_command(&mut cmd, role, env);
    run_bounded(cmd, role)
}

fn child_command(cmd: &mut Command, role: &str, env: &[(&str, &OsStr)]) {
    cmd.env(ROLE, role);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("CUDA_MEM_SYS_LIB") || k.starts_with("FAKE_") {
            cmd.env_remove(k);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
}

/// Runs `cmd` (stdout and stderr captured), killed after `CHILD_TIMEOUT`.
fn run_bounded(mut cmd: Command, role: &str) -> Result<String, Failed> {
    use std::io::Read;
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut c = cmd.spawn().map_err(|e| e.to_string())?;
    let mut out = c.stdout.take().unwrap();
    let mut err = c.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = vec![];
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = vec![];
        let _ = err.read_to_end(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = c.try_wait().map_err(|e| e.to_string())? {
            break Some(st);
        }
        if start.elapsed() > CHILD_TIMEOUT {
            let _ = c.kill();
            let _ = c.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = String::from_utf8_lossy(&reader.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
    match status {
        None => Err(format!(
            "child {role} still ran after {CHILD_TIMEOUT:?} (a hang), killed:\n{stdout}{stderr}"
        )
        .into()),
        Some(st) if !st.success() => {
            Err(format!("child {role} exited with {st}:\n{stdout}{stderr}").into())
        }
        Some(_) => Ok(stdout),
    }
}

fn a_loaded_binary_needs_no_cuda_library() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let own = needed(&std::env::current_exe().unwrap())?;
    if own.is_empty() {
        return Err("readelf listed no NEEDED entry at all (is readelf installed?)".into());
    }
    let cuda = cuda_needed(&own);
    if !cuda.is_empty() {
        return Err(format!("the test binary needs {cuda:?}").into());
    }
    println!("NEEDED: {}", own.join(", "));
    // The deliberately wrong case: a program linked with -lcuda is caught.
    let (_scratch, lib) = fake_driver(&[])?;
    let dir = lib.parent().unwrap();
    std::fs::copy(&lib, dir.join("libcuda.so")).map_err(|e| e.to_string())?;
    let main_c = dir.join("main.c");
    std::fs::write(
        &main_c,
        "int cuInit(unsigned); int main(void) { return cuInit(0); }\n",
    )
    .unwrap();
    let exe = dir.join("linked");
    let status = cc()
        .arg("-o")
        .arg(&exe)
        .arg(&main_c)
        .arg(format!("-L{}", dir.display()))
        .arg("-lcuda")
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err("linking the wrong case failed".into());
    }
    if cuda_needed(&needed(&exe)?).is_empty() {
        return Err("a program linked with -lcuda was not caught".into());
    }
    Ok(Completion::Completed)
}

/// `(documented name, base, version, flags)` per driver name: what the fake
/// was asked when the loader resolved that name's slot.
fn requests(driver: &Path) -> Result<Vec<(String, String, u32, u64)>, Failed> {
    // A driver of the headers' release: no function is too new for it.
    let version = cuda_mem_sys::CUDA_VERSION.to_string();
    let out = child_with(
        "requests",
        &[
            ("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str()),
            ("FAKE_DRIVER_VERSION", OsStr::new(&version)),
        ],
    )?;
    let mut by_slot = std::collections::HashMap::new();
    let mut asked_twice = vec![];
    for l in out.lines().filter_map(|l| l.strip_prefix("request ")) {
        let v: Vec<&str> = l.split(' ').collect();
        if let [slot, base, version, flags] = v[..] {
            let r = (
                base.to_string(),
                version.parse::<u32>()?,
                flags.parse::<u64>()?,
            );
            if by_slot.insert(slot.to_string(), r).is_some() {
                asked_twice.push(slot.to_string());
            }
        }
    }
    if !asked_twice.is_empty() {
        return Err(format!("slots asked more than once: {asked_twice:?}").into());
    }
    let mut out_rows = vec![];
    for l in out.lines().filter_map(|l| l.strip_prefix("name ")) {
        if let Some((name, slot)) = l.split_once(' ') {
            let (b, v, f) = by_slot
                .get(slot)
                .ok_or_else(|| format!("{name}: the loader asked nothing for it"))?;
            out_rows.push((name.to_string(), b.clone(), *v, *f));
        }
    }
    Ok(out_rows)
}

/// The headers the bindings read (`wrapper.h`) and the `PFN_*` typedefs:
/// `cudaTypedefs.h`, and the profiler's where its header is there (what the
/// generator's loader table reads, `build/codegen/loader.rs`).
const TYPEDEFS_HEAD: &str = concat!(
    include_str!("../../wrapper.h"),
    "\n#include <cudaTypedefs.h>\n",
    "#if __has_include(<cudaProfiler.h>) && __has_include(<cudaProfilerTypedefs.h>)\n",
    "#include <cudaProfilerTypedefs.h>\n#endif\n"
);

/// The `PFN_*` typedefs of the headers' `cudaTypedefs.h` (and the profiler's).
fn typedef_names(dirs: &[PathBuf]) -> Result<std::collections::BTreeSet<String>, Failed> {
    let dir = test_support::scratch("loading-typedef-names");
    let tu = dir.path().join("typedefs.c");
    std::fs::write(&tu, TYPEDEFS_HEAD).unwrap();
    let text = test_support::c_compiler(dirs)
        .file(&tu)
        .try_expand()
        .map_err(|e| format!("preprocessing cudaTypedefs.h: {e}"))?;
    Ok(String::from_utf8_lossy(&text)
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("PFN_"))
        .map(str::to_string)
        .collect())
}

/// Each driver function's introduction, as the driver knows it: the oldest
/// `PFN_<base>_v<version>` (plain, `_ptds`, `_ptsz`) of `cudaTypedefs.h`.
fn introductions() -> Result<Result<std::collections::BTreeMap<String, u32>, String>, Failed> {
    let dirs = match test_support::include_dirs() {
        Ok(d) => d,
        Err(reason) => return Ok(Err(reason)),
    };
    let mut first = std::collections::BTreeMap::new();
    for t in typedef_names(&dirs)? {
        let Some(rest) = t.strip_prefix("PFN_") else {
            continue;
        };
        let rest = rest
            .strip_suffix("_ptds")
            .or_else(|| rest.strip_suffix("_ptsz"))
            .unwrap_or(rest);
        let Some((base, v)) = rest.rsplit_once("_v") else {
            continue;
        };
        if let Ok(v) = v.parse::<u32>() {
            let e = first.entry(base.to_string()).or_insert(v);
            *e = (*e).min(v);
        }
    }
    Ok(Ok(first))
}

/// Writes `FAKE_INTRODUCED`'s file.
fn introduced_file(
    dir: &Path,
    list: &std::collections::BTreeMap<String, u32>,
) -> Result<PathBuf, Failed> {
    let file = dir.join("introduced.txt");
    let text: String = list.iter().map(|(b, v)| format!("{b} {v}\n")).collect();
    std::fs::write(&file, text).map_err(|e| e.to_string())?;
    Ok(file)
}

/// For each (documented name, base, version): does a `PFN_<base>_v<version>`
/// typedef (plain, `_ptds` or `_ptsz`) have the type C gives `&name`?
/// Returns the names for which none does.
fn c_disagrees(table: &[(String, String, u32)]) -> Result<Result<Vec<String>, String>, Failed> {
    let dirs = match test_support::include_dirs() {
        Ok(d) => d,
        Err(reason) => return Ok(Err(reason)),
    };
    let dir = test_support::scratch("loading-typedefs");
    let head = TYPEDEFS_HEAD;
    let typedefs = typedef_names(&dirs)?;
    let mut disagree = vec![];
    let mut src = String::from(head);
    for (name, base, version) in table {
        let fits: Vec<String> = ["", "_ptds", "_ptsz"]
            .iter()
            .map(|s| format!("PFN_{base}_v{version}{s}"))
            .filter(|t| typedefs.contains(t))
            .map(|t| format!("__builtin_types_compatible_p(__typeof__(&{name}), {t})"))
            .collect();
        if fits.is_empty() {
            disagree.push(name.clone());
        } else {
            src.push_str(&format!(
                "_Static_assert({}, \"{name}\");\n",
                fits.join(" || ")
            ));
        }
    }
    let file = dir.path().join("check.c");
    std::fs::write(&file, src).unwrap();
    let out = test_support::c_compiler(&dirs)
        .get_compiler()
        .to_command()
        .args(["-fsyntax-only", "-fmax-errors=0"])
        .arg(&file)
        .output()
        .map_err(|e| e.to_string())?;
    disagree.extend(
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.contains("static assertion failed"))
            .filter_map(|l| l.split('"').nth(1).map(str::to_string)),
    );
    Ok(Ok(disagree))
}

fn the_loader_asks_for_the_versions_c_implies() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let (_scratch, driver) = fake_driver(&[])?;
    let asked = requests(&driver)?;
    let flags = if cfg!(feature = "per-thread-default-stream") {
        2
    } else {
        0
    };
    let wrong_flags: Vec<_> = asked.iter().filter(|r| r.3 != flags).collect();
    if !wrong_flags.is_empty() {
        return Err(format!("flags other than {flags}: {wrong_flags:?}").into());
    }
    // Functions the headers define `static inline` are compiled into the
    // crate (per-thread default stream: cuGetProcAddress*), not loaded.
    let (names, inline): (Vec<&str>, Vec<&str>) = functions()
        .into_iter()
        .map(|f| f.0)
        .filter(|n| !n.starts_with("cuda"))
        .partition(|n| loaded_name(n));
    if !inline.is_empty() {
        println!("compiled into the crate (static inline): {inline:?}");
    }
    if asked.len() != names.len() {
        let got: Vec<&str> = asked.iter().map(|r| r.0.as_str()).collect();
        let missing: Vec<_> = names.iter().filter(|n| !got.contains(n)).collect();
        return Err(format!(
            "{} driver names, {} asked of cuGetProcAddress; not asked: {missing:?}",
            names.len(),
            asked.len()
        )
        .into());
    }
    let table: Vec<(String, String, u32)> = asked
        .iter()
        .map(|(n, b, v, _)| (n.clone(), b.clone(), *v))
        .collect();
    let disagree = match c_disagrees(&table)? {
        Ok(d) => d,
        Err(reason) => return Ok(Completion::ignored_with(reason)),
    };
    if !disagree.is_empty() {
        return Err(format!("asked for a version whose type is not C's: {disagree:?}").into());
    }
    for (n, b, v, _) in asked.iter().filter(|r| {
        [
            "cuMemAdvise",
            "cuCtxGetDevice",
            "cuCtxSynchronize",
            "cuStreamGetCtx",
            "cuGraphInstantiate",
        ]
        .contains(&r.0.as_str())
    }) {
        println!("asked: {n} as ({b}, {v}, flags {flags})");
    }
    println!(
        "{} driver names asked with the version C's types imply",
        asked.len()
    );
    // The deliberately wrong table: every name with the headers' CUDA_VERSION.
    let wrong: Vec<(String, String, u32)> = names
        .iter()
        .map(|n| (n.to_string(), n.to_string(), cuda_mem_sys::CUDA_VERSION))
        .collect();
    let caught = c_disagrees(&wrong)?.map_err(|e| e.to_string())?;
    for must in [
        "cuCtxGetDevice",
        "cuCtxSynchronize",
        "cuStreamGetCtx",
        "cuGraphInstantiate",
    ] {
        if cuda_mem_sys::CUDA_VERSION >= 13000 && !caught.iter().any(|c| c == must) {
            return Err(format!("the wrong table's {must} was not caught").into());
        }
    }
    println!(
        "the CUDA_VERSION-for-all table is caught for {} names",
        caught.len()
    );
    Ok(Completion::Completed)
}

#[cfg(feature = "dynamic-loading")]
fn loaded_name(name: &str) -> bool {
    cuda_mem_sys::loader_table::NAMES
        .binary_search_by(|(n, _, _)| (*n).cmp(name))
        .is_ok()
}

#[cfg(not(feature = "dynamic-loading"))]
fn loaded_name(_: &str) -> bool {
    true
}

fn expect_lines(out: &str, lines: &[&str]) -> Result<(), Failed> {
    for l in lines {
        if !out.lines().any(|o| o == *l) {
            return Err(format!("expected the line {l:?} in:\n{out}").into());
        }
    }
    Ok(())
}

fn answered_functions_are_called_and_the_rest_return_documented_codes() -> Result<Completion, Failed>
{
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    // A 12.8 driver under the 13.0 headers: cuMemPrefetchBatchAsync (13.0)
    // is too new for it, and not even asked for.
    let (_a, driver) = fake_driver(&[])?;
    let out = child_with(
        "calls",
        &[
            ("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str()),
            ("FAKE_DRIVER_VERSION", OsStr::new("12080")),
        ],
    )?;
    print!("{out}");
    expect_lines(
        &out,
        &[
            "cuDriverGetVersion 0 12080",
            "cuInit(7) 0",
            "cuInit(0) 1",
            "cuCtxGetDevice 0 77",
            "cuMemAdvise 500 500",
            "cuMemPrefetchBatchAsync 801 asked 0",
            "function cuMemPrefetchBatchAsync Err(DriverTooOld)",
            "function cuMemAdvise Err(NotFound)",
            "function cuCtxGetDevice Ok",
            "function cuNoSuchFunction Err(UnknownName)",
            "proc_address_v2 true",
            "version Some(12080)",
        ],
    )?;
    // A driver with only the old cuGetProcAddress: "too old" by its version.
    let (_b, old_driver) = fake_driver(&["-DFAKE_V1_ONLY"])?;
    let out = child_with(
        "calls",
        &[
            ("CUDA_MEM_SYS_LIBCUDA", old_driver.as_os_str()),
            ("FAKE_DRIVER_VERSION", OsStr::new("12080")),
        ],
    )?;
    expect_lines(
        &out,
        &[
            "cuDriverGetVersion 0 12080",
            "function cuMemPrefetchBatchAsync Err(DriverTooOld)",
            "function cuMemAdvise Err(NotFound)",
            "proc_address_v2 false",
        ],
    )?;
    // cuDriverGetVersion failing: the lookup's CUDA_ERROR_INVALID_VALUE says it.
    let out = child_with(
        "calls",
        &[
            ("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str()),
            ("FAKE_DRIVER_VERSION", OsStr::new("12080")),
            ("FAKE_NO_DRIVER_VERSION", OsStr::new("1")),
        ],
    )?;
    expect_lines(
        &out,
        &[
            "version None",
            "cuMemPrefetchBatchAsync 801 asked 1",
            "function cuMemPrefetchBatchAsync Err(DriverTooOld)",
            "function cuMemAdvise Err(NotFound)",
        ],
    )?;
    // A 13.0 driver has it.
    let out = child_with(
        "calls",
        &[
            ("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str()),
            ("FAKE_DRIVER_VERSION", OsStr::new("13000")),
        ],
    )?;
    expect_lines(
        &out,
        &[
            "cuMemPrefetchBatchAsync 0 asked 1",
            "function cuMemPrefetchBatchAsync Ok",
        ],
    )?;
    Ok(Completion::Completed)
}

/// The questions asked of a driver's `cuGetProcAddress_v2` (and `v1`) by the
/// role `answers`, `D` standing for the driver's own version, and the answers
/// NVIDIA's driver 580.159.04 (CUDA 13.0) gave: `r` the result, `status` the
/// query result (`-` untouched), `pfn` null, set or untouched (`-`).
const REAL_ANSWERS: &[&str] = &[
    "v2 cuInit D+10: r=1 status=- pfn=-",
    "v2 cuInit 1000: r=0 status=2 pfn=null",
    "v2 cuInit 2000: r=0 status=0 pfn=set",
    "v2 cuMemAdvise 2000: r=0 status=2 pfn=null",
    "v2 cuMemAdvise 12020: r=0 status=0 pfn=set",
    "v2 cuNoSuchFunction D: r=0 status=1 pfn=null",
    "v2 cuNoSuchFunction D+10: r=1 status=- pfn=-",
    "v1 cuInit D+10: r=1 pfn=-",
    "v1 cuInit 1000: r=500 pfn=-",
    "v1 cuInit 2000: r=0 pfn=set",
    "v1 cuNoSuchFunction D: r=500 pfn=-",
];

fn answers_differ(out: &str) -> Vec<String> {
    REAL_ANSWERS
        .iter()
        .filter(|a| !out.lines().any(|l| l == **a))
        .map(|a| a.to_string())
        .collect()
}

fn the_fake_driver_answers_as_nvidias_does() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let list = match introductions()? {
        Ok(l) => l,
        Err(reason) => return Ok(Completion::ignored_with(reason)),
    };
    let (scratch, driver) = fake_driver(&[])?;
    let file = introduced_file(scratch.path(), &list)?;
    let env = |d: &Path| {
        vec![
            ("CUDA_MEM_SYS_LIBCUDA", d.as_os_str().to_owned()),
            ("FAKE_INTRODUCED", file.as_os_str().to_owned()),
        ]
    };
    let run = |d: &Path| -> Result<String, Failed> {
        let env = env(d);
        let env: Vec<(&str, &OsStr)> = env.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
        child_with("answers", &env)
    };
    let out = run(&driver)?;
    print!("{out}");
    let differ = answers_differ(&out);
    if !differ.is_empty() {
        return Err(format!("the fake does not answer as NVIDIA's driver: {differ:?}").into());
    }
    // The deliberately wrong twin: the fake's old misreading (a version
    // above the driver's answered "version not sufficient") is caught.
    let (_w, wrong) = fake_driver(&["-DFAKE_MISREADING"])?;
    let differ = answers_differ(&run(&wrong)?);
    if differ.is_empty() {
        return Err("the misreading fake was not caught".into());
    }
    println!("the misreading fake differs in: {differ:?}");
    Ok(Completion::Completed)
}

fn the_installed_driver_answers_as_the_fake_does() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let out = child_with("answers", &[])?;
    if out.lines().any(|l| l.starts_with("no driver")) {
        return Ok(Completion::ignored_with(
            "no CUDA driver is installed here (libcuda.so.1 does not load)",
        ));
    }
    print!("{out}");
    let differ = answers_differ(&out);
    if !differ.is_empty() {
        return Err(format!(
            "the installed driver does not answer as recorded (and as the fake does): {differ:?}"
        )
        .into());
    }
    Ok(Completion::Completed)
}

/// `(name, Debug of loader::function)` for every driver name asked by
/// version, against the fake knowing `list`'s introductions.
fn classify(
    list: &std::collections::BTreeMap<String, u32>,
) -> Result<Vec<(String, String)>, Failed> {
    let (scratch, driver) = fake_driver(&[])?;
    let file = introduced_file(scratch.path(), list)?;
    let version = cuda_mem_sys::CUDA_VERSION.to_string();
    let out = child_with(
        "classify",
        &[
            ("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str()),
            ("FAKE_INTRODUCED", file.as_os_str()),
            ("FAKE_DRIVER_VERSION", OsStr::new(&version)),
        ],
    )?;
    Ok(classes(&out).into_iter().map(|(n, _, c)| (n, c)).collect())
}

/// The `class <name> <version> <Debug of loader::function>` lines.
fn classes(out: &str) -> Vec<(String, u32, String)> {
    out.lines()
        .filter_map(|l| l.strip_prefix("class "))
        .filter_map(|l| {
            let mut w = l.splitn(3, ' ');
            Some((
                w.next()?.to_string(),
                w.next()?.parse().ok()?,
                w.next()?.to_string(),
            ))
        })
        .collect()
}

/// On the GPU machine: against the installed driver, every function whose
/// table version is above `cuDriverGetVersion` is `DriverTooOld` (801), none
/// at or below it is, and none is `VersionBelowIntroduction` (a table bug).
/// Built with newer headers than the driver (13.5 headers on a 13.0 driver:
/// `cuGraphGetId`, `cuFuncGetParamCount`, ...) it proves the too-old case on
/// the real driver.
fn the_installed_driver_tells_too_old_from_missing() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let out = child_with("classify", &[])?;
    if out.lines().any(|l| l.starts_with("no driver")) {
        return Ok(Completion::ignored_with(
            "no CUDA driver is installed here (libcuda.so.1 does not load)",
        ));
    }
    let d: u32 = out
        .lines()
        .find_map(|l| l.strip_prefix("driver version Some("))
        .and_then(|v| v.strip_suffix(')'))
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("the driver's version is unknown:\n{out}"))?;
    let all = classes(&out);
    let mut wrong = vec![];
    let mut too_new = vec![];
    let mut missing = vec![];
    for (name, v, c) in &all {
        let too_old = c == "Err(DriverTooOld)";
        if c == "Err(VersionBelowIntroduction)" || too_old != (*v > d) {
            wrong.push(format!("{name} ({v}): {c}"));
        } else if too_old {
            too_new.push(format!("{name} ({v})"));
        } else if c != "Ok" {
            missing.push(format!("{name} ({v}): {c}"));
        }
    }
    println!("driver {d}; {} driver names asked by version", all.len());
    println!("too new for this driver (DriverTooOld, 801): {too_new:?}");
    println!("not found at a version not above the driver's: {missing:?}");
    if !wrong.is_empty() {
        return Err(format!("misclassified against driver {d}: {wrong:?}").into());
    }
    Ok(Completion::Completed)
}

fn no_table_version_is_below_its_functions_introduction() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let list = match introductions()? {
        Ok(l) => l,
        Err(reason) => return Ok(Completion::ignored_with(reason)),
    };
    let classes = classify(&list)?;
    if classes.is_empty() {
        return Err("no driver name was classified".into());
    }
    let wrong: Vec<_> = classes.iter().filter(|(_, c)| c != "Ok").collect();
    if !wrong.is_empty() {
        return Err(format!(
            "against a driver of the headers' release knowing every typedef's introduction, \
             these are not Ok (VersionBelowIntroduction: the table asks too low): {wrong:?}"
        )
        .into());
    }
    println!(
        "{} driver names asked by version: all at or above their introduction",
        classes.len()
    );
    // The deliberately wrong twin: a function introduced later than the
    // table's version (cuMemAdvise at 12030, the table asking 12020) is caught.
    let mut later = list.clone();
    later.insert("cuMemAdvise".to_string(), 12030);
    let caught: Vec<_> = classify(&later)?
        .into_iter()
        .filter(|(_, c)| c != "Ok")
        .collect();
    let expected = ["cuMemAdvise", "cuMemAdvise_v2"];
    if caught.is_empty()
        || caught
            .iter()
            .any(|(n, c)| !expected.contains(&n.as_str()) || c != "Err(VersionBelowIntroduction)")
    {
        return Err(
            format!("the late-introduced cuMemAdvise was not caught alone: {caught:?}").into(),
        );
    }
    println!("the table-too-low twin is caught: {caught:?}");
    Ok(Completion::Completed)
}

fn bad_library_files_return_shared_object_init_failed() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let dir = test_support::scratch("bad-drivers");
    let text = dir.path().join("not-a-library.so");
    std::fs::write(&text, "this is not an ELF file\n").unwrap();
    let plain_c = dir.path().join("plain.c");
    std::fs::write(&plain_c, "int not_cuda(void) { return 0; }\n").unwrap();
    let (_plain_scratch, plain) = shared_library("plain-library", &plain_c, &[])?;
    for (case, file) in [
        ("a missing file", dir.path().join("no-such-libcuda.so.1")),
        ("a file that is not a shared library", text),
        ("a library without cuGetProcAddress", plain),
    ] {
        let out = child("bad-driver", Some(&file))?;
        expect_lines(&out, &["cuInit 303 303", "cuMemAdvise 303"])?;
        let why = out
            .lines()
            .find_map(|l| l.strip_prefix("driver Err "))
            .ok_or_else(|| format!("{case}: no load error reported:\n{out}"))?;
        if !case.contains("cuGetProcAddress") && !why.contains("CUDA_MEM_SYS_LIBCUDA names") {
            return Err(format!("{case}: the message does not name the variable: {why}").into());
        }
        println!("{case}: CUDA_ERROR_SHARED_OBJECT_INIT_FAILED; loader says: {why}");
    }
    Ok(Completion::Completed)
}

fn concurrent_first_calls_resolve_once_and_agree() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let (_scratch, driver) = fake_driver(&[])?;
    let out = child("threads", Some(&driver))?;
    expect_lines(&out, &["threads 16 agree 13000"])?;
    print!("{out}");
    Ok(Completion::Completed)
}

fn without_a_driver_every_call_returns_the_documented_code() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let out = child("no-driver", None)?;
    print!("{out}");
    if out.lines().any(|l| l == "a driver is installed") {
        return Ok(Completion::ignored_with(
            "a CUDA driver is installed here (libcuda.so.1 loads)",
        ));
    }
    expect_lines(&out, &["cuInit 303", "cuMemAdvise 303"])?;
    // The static runtime reports the missing driver itself; a loaded runtime
    // that is absent too is a missing library.
    if !out
        .lines()
        .any(|l| l == "cudaGetDeviceCount 35 static" || l == "cudaGetDeviceCount 303 loaded")
    {
        return Err("the runtime's code without a driver is not the documented one".into());
    }
    Ok(Completion::Completed)
}

fn the_static_runtime_uses_the_named_driver() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    // A fake driver would crash NVIDIA's runtime, so the runtime is not
    // called: the test asks the dynamic loader what the runtime's own
    // dlopen("libcuda.so.1") would get.
    let (_scratch, driver) = fake_driver(&[])?;
    let out = child("static-runtime", Some(&driver))?;
    print!("{out}");
    if out.lines().any(|l| l == "runtime loaded") {
        return Ok(Completion::ignored_with(
            "the runtime is loaded, not linked statically",
        ));
    }
    expect_lines(
        &out,
        &["libcuda.so.1 at start-up is the named driver: true"],
    )?;
    Ok(Completion::Completed)
}

/// A scratch folder with a fake `libcuda.so.1`, for `LD_LIBRARY_PATH`: what
/// a fall-back to the usual names would load.
fn default_driver_folder() -> Result<(test_support::Scratch, PathBuf), Failed> {
    fake_driver(&[])
}

fn the_environment_is_read_at_program_start() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    if !cfg!(target_os = "linux") {
        return Ok(Completion::ignored_with(
            "read at program start on Linux only (elsewhere at first use)",
        ));
    }
    let (_s, driver) = fake_driver(&[])?;
    // Set at start, removed by main before the first use: still used.
    let out = child_with(
        "env-changed",
        &[("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str())],
    )?;
    print!("{out}");
    let named = format!("driver Ok {}", driver.display());
    expect_lines(&out, &[named.as_str(), "driver variable Used"])?;
    // The twin: unset at start, set by main before the first use: not used.
    let out = child_with("env-set-late", &[("FAKE_LATE", driver.as_os_str())])?;
    print!("{out}");
    expect_lines(&out, &["driver variable Unset"])?;
    if out.contains(&named) {
        return Err(format!("a value set after start was used:\n{out}").into());
    }
    Ok(Completion::Completed)
}

fn a_value_too_long_or_naming_nothing_is_303_naming_the_variable() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    // A loadable libcuda.so.1 on LD_LIBRARY_PATH: a silent fall-back to the
    // usual names would load it.
    let (_d, default) = default_driver_folder()?;
    let folder = default.parent().unwrap().as_os_str().to_owned();
    let ld = OsStr::new("LD_LIBRARY_PATH");
    let run = |value: &OsStr| -> Result<String, Failed> {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        child_command(
            &mut cmd,
            "bad-driver",
            &[
                ("CUDA_MEM_SYS_LIBCUDA", value),
                ("FAKE_DRIVER_VERSION", OsStr::new("13000")),
            ],
        );
        cmd.env(ld, &folder);
        run_bounded(cmd, "bad-driver")
    };
    // The twin: unset, the fall-back loads the fake (cuInit(0) answers 1).
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    child_command(&mut cmd, "bad-driver", &[]);
    cmd.env(ld, &folder);
    let out = run_bounded(cmd, "bad-driver")?;
    expect_lines(&out, &["cuInit 1 1"])?;
    for (case, len, says) in [
        (
            "4096 bytes",
            4096,
            "CUDA_MEM_SYS_LIBCUDA is 4096 bytes long",
        ),
        (
            "5000 bytes",
            5000,
            "CUDA_MEM_SYS_LIBCUDA is 5000 bytes long",
        ),
        (
            "4095 bytes (fits)",
            4095,
            "CUDA_MEM_SYS_LIBCUDA names no loadable library",
        ),
    ] {
        let value = format!("/{}", "a".repeat(len - 1));
        let out = run(OsStr::new(&value))?;
        expect_lines(&out, &["cuInit 303 303"])?;
        let why = out
            .lines()
            .find_map(|l| l.strip_prefix("driver Err "))
            .ok_or_else(|| format!("{case}: no load error reported:\n{out}"))?;
        if !why.contains(says) {
            return Err(format!("{case}: expected {says:?} in {why:?}").into());
        }
        println!("{case}: 303; {}", &why[why.len().saturating_sub(120)..]);
    }
    let out = run(OsStr::new("no-such-driver-file.so"))?;
    expect_lines(&out, &["cuInit 303 303"])?;
    if !out.contains("CUDA_MEM_SYS_LIBCUDA names no loadable library") {
        return Err(format!("a value naming no file: {out}").into());
    }
    Ok(Completion::Completed)
}

fn a_call_back_into_the_crate_while_loading_returns_303_at_once() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    // Found as libcuda.so.1 on LD_LIBRARY_PATH, loaded at the first call
    // (with the variable set and the static runtime it would load at start,
    // before the program can tell the fake where to call back).
    let (_s, driver) = fake_driver(&[])?;
    let folder = driver.parent().unwrap().as_os_str();
    for at in ["constructor", "lookup"] {
        let out = child_with(
            "reentrant",
            &[
                ("LD_LIBRARY_PATH", folder),
                ("FAKE_CALLBACK_AT", OsStr::new(at)),
            ],
        )?;
        println!("called back from the fake's {at}:\n{out}");
        expect_lines(
            &out,
            &[
                "callback cuInit(0) 303",
                "cuInit(7) 0",
                "cuInit(0) 1",
                "function cuInit Ok",
            ],
        )?;
    }
    Ok(Completion::Completed)
}

fn a_child_forked_while_another_thread_loads_does_not_hang() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let (s, driver) = fake_driver(&[])?;
    let hold = hold_dir(&s)?;
    // On LD_LIBRARY_PATH: loaded at the first call, not at start.
    let out = child_with(
        "fork",
        &[
            ("LD_LIBRARY_PATH", driver.parent().unwrap().as_os_str()),
            ("FAKE_HOLD", hold.as_os_str()),
        ],
    )?;
    print!("{out}");
    // Fix 4 of issue 30: the child's driver() says what the load tries
    // (it said nothing).
    expect_lines(
        &out,
        &[
            "child cuInit(0) 303",
            "child driver tried libcuda.so.1, libcuda.so",
            "parent cuInit(7) 0",
        ],
    )?;
    // Item 1 of issue 35: the load a fork left held says so. The twin: the
    // re-entrancy reason (the other load that cannot be waited for) fails
    // the same check.
    // Said by the fork generation, not by the liveness check, whose own
    // reason (the owner gone) names fork handlers too: the twins below.
    let says_fork =
        |message: &str| message.contains("the process was forked while another thread was loading");
    let message = out
        .lines()
        .find_map(|l| l.strip_prefix("child driver message "))
        .ok_or_else(|| format!("the child's driver() gave no message:\n{out}"))?;
    if !says_fork(message) {
        return Err(
            format!("the child's driver() does not say a fork holds the load: {message}").into(),
        );
    }
    let reentrant = "the library is being loaded by this very thread: its own code called back \
                     into cuda-mem-sys while it loaded";
    if says_fork(reentrant) {
        return Err("the check does not tell a fork from re-entrancy".into());
    }
    let owner_gone = "the thread that was loading the library no longer exists (it ended inside \
                      the load, or this process was made by clone(2) or _Fork(), which run no \
                      fork handlers, while it loaded); that load cannot finish in this process";
    if says_fork(owner_gone) {
        return Err("the check does not tell a fork from an owner gone".into());
    }
    Ok(Completion::Completed)
}

fn threads_waiting_for_a_load_do_not_burn_the_cpu() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let (s, driver) = fake_driver(&[])?;
    let hold = hold_dir(&s)?;
    // Held in the lookup the load makes (cuDriverGetVersion's), outside
    // dlopen: a thread started while dlopen runs would wait in glibc's lock.
    let out = child_with(
        "waiters",
        &[
            ("LD_LIBRARY_PATH", driver.parent().unwrap().as_os_str()),
            ("FAKE_HOLD", hold.as_os_str()),
            ("FAKE_HOLD_AT", OsStr::new("lookup")),
        ],
    )?;
    print!("{out}");
    expect_lines(&out, &["waiters 4 agree 0", "loader cuInit(7) 0"])?;
    let cpu: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("cpu ms while 4 threads waited 1000 ms: "))
        .and_then(|v| v.parse().ok())
        .ok_or("no CPU time reported")?;
    // Spinning (or only yielding) would take about a core per waiter.
    if cpu > 300 {
        return Err(format!("4 waiting threads used {cpu} ms of CPU in 1000 ms").into());
    }
    Ok(Completion::Completed)
}

/// Fix 1 of issue 30: a named driver is loaded before the runtime's load is
/// claimed, so the two loads never wait on each other. Thread A loads the
/// driver, which holds in its first lookup; thread B makes the first runtime
/// call and waits for the driver; then the driver's own code (on A) calls
/// the runtime. That call must return 303 at once (the driver it needs is
/// being loaded by this very thread), and B must still get its answer once
/// the driver is loaded: the twin that an over-eager fix (303 for any wait)
/// fails. Before the fix B held the runtime's load while it waited and A
/// waited for it: a deadlock, which the role reports after 10 s.
fn the_driver_and_runtime_loads_never_wait_on_each_other() -> Result<Completion, Failed> {
    if let Some(c) = needs_loaded_runtime_build()? {
        return Ok(c);
    }
    let (s, driver) = fake_driver(&[])?;
    let (_r, runtime) = fake_runtime()?;
    let hold = hold_dir(&s)?;
    let out = child_with(
        "lock-order",
        &[
            ("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str()),
            ("CUDA_MEM_SYS_LIBCUDART", runtime.as_os_str()),
            ("FAKE_HOLD", hold.as_os_str()),
            ("FAKE_HOLD_AT", OsStr::new("lookup")),
            ("FAKE_CALLBACK_AT", OsStr::new("lookup")),
        ],
    )?;
    print!("{out}");
    // Fix 4 too: driver(), asked from inside the driver's load, says what
    // that load tries and that the variable was used.
    let tried = format!("callback driver tried {}", driver.display());
    expect_lines(
        &out,
        &[
            "B waited for the driver: true",
            "callback cudaGetDeviceCount 303",
            "B cudaGetDeviceCount 0",
            "loader cuInit(7) 0",
            "callback driver variable Used",
            tried.as_str(),
        ],
    )?;
    Ok(Completion::Completed)
}

/// Fix 2 of issue 30: in a child forked while another thread loaded the named
/// driver, a runtime call returns 303 too (before the fix it loaded the
/// runtime and returned 0, the runtime binding a driver whose constructor
/// never finished in the child). The twin: the parent's same call, once the
/// driver is loaded, returns 0. The child's `driver()` says what was tried
/// and that the variable was used (fix 4; it said `Unset` with nothing tried).
fn a_child_forked_while_the_driver_loads_gets_303_from_the_runtime() -> Result<Completion, Failed> {
    if let Some(c) = needs_loaded_runtime_build()? {
        return Ok(c);
    }
    let (s, driver) = fake_driver(&[])?;
    let (_r, runtime) = fake_runtime()?;
    let hold = hold_dir(&s)?;
    let out = child_with(
        "fork-runtime",
        &[
            ("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str()),
            ("CUDA_MEM_SYS_LIBCUDART", runtime.as_os_str()),
            ("FAKE_HOLD", hold.as_os_str()),
        ],
    )?;
    print!("{out}");
    let tried = format!("child driver tried {}", driver.display());
    expect_lines(
        &out,
        &[
            "child cudaGetDeviceCount 303",
            "child cuInit(0) 303",
            "child driver variable Used",
            tried.as_str(),
            "parent cuInit(7) 0",
            "parent cudaGetDeviceCount 0",
        ],
    )?;
    Ok(Completion::Completed)
}

/// `None` where the test can run here (Linux, as root); otherwise it
/// reports itself ignored with the reason.
fn linux_as_root(not_linux: &'static str, not_root: &'static str) -> Option<Completion> {
    if !cfg!(target_os = "linux") {
        return Some(Completion::ignored_with(not_linux));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    (unsafe { libc::geteuid() } != 0).then(|| Completion::ignored_with(not_root))
}

/// Issue 35: the thread loading the driver ends inside the load (the
/// fake's constructor calls back, and the call back ends the thread with
/// the raw `exit` system call, as a thread killed in a constructor ends:
/// nothing unwinds, the load never finishes). A later call on another
/// thread must get 303 at once, and `driver()` must say that the loading
/// thread is gone, where it waited forever. The twin: the same constructor
/// without the ending; the later call gets the driver's answer (a loader
/// that gave up on every wait fails it).
fn a_load_whose_thread_ended_gives_303_not_a_hang() -> Result<Completion, Failed> {
    if let Some(c) = linux_only("tgkill and the raw exit system call are Linux's") {
        return Ok(c);
    }
    let (_s, driver) = fake_driver(&[])?;
    let folder = driver.parent().unwrap().as_os_str();
    for (ends, expect) in [
        ("1", ["loader thread gone: true", "later cuInit(7) 303"]),
        ("0", ["loader thread gone: false", "later cuInit(7) 0"]),
    ] {
        let out = child_with(
            "owner-ends",
            &[
                ("LD_LIBRARY_PATH", folder),
                ("FAKE_CALLBACK_AT", OsStr::new("constructor")),
                ("OWNER_ENDS", OsStr::new(ends)),
            ],
        )?;
        println!("OWNER_ENDS={ends}:\n{out}");
        expect_lines(&out, &expect)?;
        if ends == "1" {
            expect_lines(&out, &[&format!("later driver message {}", OWNER_GONE)])?;
        }
    }
    Ok(Completion::Completed)
}

/// What `driver()` says where the loading thread is gone (`once.rs`).
const OWNER_GONE: &str = "the thread that was loading the library no longer exists (it ended \
     inside the load, or this process was made by clone(2) or _Fork(), which run no fork \
     handlers, while it loaded); that load cannot finish in this process";

/// Issue 35: the loading thread ends inside the load, and a later thread
/// gets its thread id (a PID namespace of this test's own, whose last id
/// is set back through `ns_last_pid`). It must be told that the loading
/// thread is gone (303), not `Reentrant` ("being loaded by this very
/// thread"), which it was told when the id decided who the owner is. The
/// twin is `a_call_back_into_the_crate_while_loading_returns_303_at_once`:
/// the loading thread itself, calling back, is told it is reentrant.
/// Needs root (`unshare(CLONE_NEWPID)`, `ns_last_pid`).
fn a_thread_reusing_a_dead_owners_id_is_not_told_reentrant() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    if let Some(c) = linux_as_root(
        "PID namespaces are Linux's",
        "needs root: unshare(CLONE_NEWPID) and ns_last_pid give a later thread the dead one's id",
    ) {
        return Ok(c);
    }
    let (_s, driver) = fake_driver(&[])?;
    // At once, and with the loading thread slow to end (300 ms): the later
    // thread must be made only once the loading one ended, whatever the
    // timing (the wait once asked `/proc`, of another PID namespace, and
    // went on at once: the flaky hang, which the slow end made certain).
    for after_ms in ["0", "300"] {
        let out = child_with(
            "tid-reuse",
            &[
                ("LD_LIBRARY_PATH", driver.parent().unwrap().as_os_str()),
                ("FAKE_CALLBACK_AT", OsStr::new("constructor")),
                ("OWNER_ENDS", OsStr::new("1")),
                ("OWNER_ENDS_AFTER_MS", OsStr::new(after_ms)),
            ],
        )?;
        println!("the loading thread ends after {after_ms} ms:\n{out}");
        if out.contains("unshare refused") {
            return Ok(Completion::ignored_with(
                "unshare(CLONE_NEWPID) refused here",
            ));
        }
        expect_lines(
            &out,
            &[
                "later thread has the dead loader's id: true",
                "later cuInit(7) 303",
                &format!("later driver message {OWNER_GONE}"),
            ],
        )?;
    }
    Ok(Completion::Completed)
}

/// Issue 35: a child made by a raw `clone(2)` (and by glibc's `_Fork()`,
/// where there is one) while another thread loads runs no fork handler, so
/// its fork generation is its parent's: it waited forever for the loading
/// thread, which it does not have. It must get 303 at once, saying the
/// loading thread is gone. The twin: a child of `fork()` (handlers run) is
/// told it was forked, and the parent's own call, which does wait, gets
/// the driver's answer.
fn a_child_made_without_fork_handlers_gets_303_not_a_hang() -> Result<Completion, Failed> {
    if let Some(c) = linux_only("clone(2) and tgkill are Linux's") {
        return Ok(c);
    }
    let (s, driver) = fake_driver(&[])?;
    let hold = hold_dir(&s)?;
    let out = child_with(
        "raw-fork",
        &[
            ("LD_LIBRARY_PATH", driver.parent().unwrap().as_os_str()),
            ("FAKE_HOLD", hold.as_os_str()),
        ],
    )?;
    print!("{out}");
    let gone = format!("clone child driver message {OWNER_GONE}");
    let mut lines = vec![
        "clone child cuInit(0) 303",
        gone.as_str(),
        "fork child cuInit(0) 303",
        "fork child driver message the process was forked while another thread was loading \
         the library; that load cannot finish in this process",
        "parent cuInit(7) 0",
    ];
    let gone_fork = format!("_Fork child driver message {OWNER_GONE}");
    if !out.contains("no _Fork here") {
        lines.extend(["_Fork child cuInit(0) 303", gone_fork.as_str()]);
    }
    expect_lines(&out, &lines)?;
    if out.contains("hung") {
        return Err("a child hung".into());
    }
    Ok(Completion::Completed)
}

/// Issue 35: two threads' first calls race, and the driver answers the
/// second lookup otherwise ("not found") after the first found the
/// function (`FAKE_FLAKY`). The slot keeps the first answer: both callers,
/// `function()` afterwards and the call itself agree, where the second
/// store replaced the address with "not found". That the driver was
/// really asked twice, and answered "not found" the second time, is
/// checked too (without the race the test would prove nothing); the wrong
/// twin, an unconditional store, is loader-model's
/// `wrong_twin_an_unconditional_store_overwrites_the_first_answer`.
fn a_second_differing_lookup_cannot_replace_a_resolved_function() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let (_s, driver) = fake_driver(&[])?;
    let out = child_with(
        "flaky",
        &[
            ("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str()),
            ("FAKE_FLAKY", OsStr::new("cuCtxGetDevice")),
        ],
    )?;
    print!("{out}");
    expect_lines(
        &out,
        &[
            "lookups of cuCtxGetDevice 2",
            "first calls agree: true",
            "function cuCtxGetDevice Ok",
            "function agrees with the first calls: true",
        ],
    )?;
    Ok(Completion::Completed)
}

/// `None` where the test can run here (Linux); otherwise it reports itself
/// ignored with the reason.
fn linux_only(not_linux: &'static str) -> Option<Completion> {
    if let Some(c) = needs_feature() {
        return Some(c);
    }
    (!cfg!(target_os = "linux")).then(|| Completion::ignored_with(not_linux))
}

/// Fix 3 of issue 30: a program running as PID 1 (a container without an
/// init) forks into a new PID namespace while another thread loads the
/// driver: the child is PID 1 too, on thread 1, and took the loading thread
/// for a sibling of its own, waiting forever. It must get 303 at once. The
/// twin: a real sibling thread of the loading one, calling meanwhile, waits
/// and gets the driver's answer (a fix that gives up on every wait fails
/// it). Needs root (`unshare(CLONE_NEWPID)`).
fn a_pid_1_child_in_a_new_pid_namespace_does_not_hang() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    if let Some(c) = linux_as_root(
        "PID namespaces are Linux's",
        "needs root: unshare(CLONE_NEWPID) makes the PID-1 processes",
    ) {
        return Ok(c);
    }
    let (s, driver) = fake_driver(&[])?;
    let hold = hold_dir(&s)?;
    let out = child_with(
        "pid-namespace",
        &[
            ("LD_LIBRARY_PATH", driver.parent().unwrap().as_os_str()),
            ("FAKE_HOLD", hold.as_os_str()),
        ],
    )?;
    print!("{out}");
    if let Some(why) = out
        .lines()
        .find_map(|l| l.strip_prefix("unshare refused: "))
    {
        return Ok(Completion::ignored_with(format!(
            "unshare(CLONE_NEWPID) refused here ({why})"
        )));
    }
    expect_lines(
        &out,
        &[
            "pid 1 forks while its thread loads",
            "grandchild pid 1 cuInit(0) 303",
            "sibling waited: true",
            "sibling cuInit(7) 0",
            "loader cuInit(7) 0",
        ],
    )?;
    Ok(Completion::Completed)
}

/// Fix 4 of issue 30: `driver()` asked while the load cannot be waited for
/// (from the driver's own code while it loads) says what the load tries, not
/// nothing. The twin: the same question once loaded is answered `Ok`.
fn driver_says_what_it_tries_while_it_cannot_be_waited_for() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let (_s, driver) = fake_driver(&[])?;
    let folder = driver.parent().unwrap().as_os_str();
    let out = child_with(
        "reentrant-driver",
        &[
            ("LD_LIBRARY_PATH", folder),
            ("FAKE_CALLBACK_AT", OsStr::new("lookup")),
        ],
    )?;
    print!("{out}");
    expect_lines(
        &out,
        &[
            "callback driver Err",
            "callback driver tried libcuda.so.1, libcuda.so",
            "callback driver variable Unset",
            "after driver Ok libcuda.so.1",
        ],
    )?;
    Ok(Completion::Completed)
}

/// Fix 5 of issue 30: a missing path that is not UTF-8 keeps the system's
/// reason ("No such file or directory") and the path whole (each invalid
/// byte as U+FFFD) in `tried` and the message; both were cut at the first
/// invalid byte. The twin: the same bytes naming a real driver load it (the
/// path is opened as given, not as the text shown).
fn a_missing_path_that_is_not_utf8_keeps_its_reason() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let (s, driver) = fake_driver(&[])?;
        let dir = s.path().join(OsStr::from_bytes(b"caf\xe9-\xff"));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let shown = format!("{}/caf\u{FFFD}-\u{FFFD}", s.path().display());
        let missing = dir.join("libcuda.so.1");
        let out = child("bad-driver", Some(&missing))?;
        print!("{out}");
        expect_lines(&out, &["cuInit 303 303"])?;
        let why = out
            .lines()
            .find_map(|l| l.strip_prefix("driver Err "))
            .ok_or_else(|| format!("no load error reported:\n{out}"))?;
        let tried = format!("{shown}/libcuda.so.1: ");
        if !why.starts_with(&tried) {
            return Err(format!("`tried` is not the whole path {shown:?}: {why}").into());
        }
        if !why.ends_with("No such file or directory") {
            return Err(format!("the system's reason is lost: {why}").into());
        }
        if why.matches(&format!("{shown}/libcuda.so.1")).count() != 2 {
            return Err(format!("the message does not name the whole path: {why}").into());
        }
        let present = dir.join("libcuda.so.1");
        std::fs::copy(&driver, &present).map_err(|e| e.to_string())?;
        let out = child("bad-driver", Some(&present))?;
        print!("{out}");
        let loaded = format!("driver Ok {shown}/libcuda.so.1");
        expect_lines(&out, &["cuInit 1 1", loaded.as_str()])?;
        Ok(Completion::Completed)
    }
    #[cfg(not(unix))]
    Ok(Completion::ignored_with("a path of bytes is Unix's"))
}

/// Item 6 of issue 30: a slot holds a state (1 to 4) or an address, so a
/// driver answering success with a "function" at 1 to 4 was read as a state
/// (303, 801, ... while `driver()` said `Ok`), and one at 5 to 4095 was
/// called. Any address below 4096 (the first page, never mapped) is now
/// `NotFound` (500). The twin: the same fake answering a real address is
/// called.
fn a_function_address_below_4096_is_not_found() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let (_s, driver) = fake_driver(&[])?;
    let run = |low: Option<&str>| {
        let mut env: Vec<(&str, &OsStr)> = vec![("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str())];
        if let Some(l) = low {
            env.push(("FAKE_LOW_POINTER", OsStr::new(l)));
        }
        child_with("low-pointer", &env)
    };
    for low in ["1", "2", "3", "4", "5", "4095"] {
        let out = run(Some(low))?;
        print!("address {low}:\n{out}");
        expect_lines(
            &out,
            &[
                "cuCtxGetDevice 500",
                "function cuCtxGetDevice Err(NotFound)",
                "driver Ok",
            ],
        )?;
    }
    let out = run(None)?;
    print!("a real address:\n{out}");
    expect_lines(&out, &["cuCtxGetDevice 0", "function cuCtxGetDevice Ok"])?;
    Ok(Completion::Completed)
}

/// Item 7 of issue 30: NVIDIA's stub library (the toolkit's `stubs/`, whose
/// every function answers `CUDA_ERROR_STUB_LIBRARY`) is told, and reported
/// as a linked build reports it: every driver call returns 34 and
/// `driver()` says why. It is told by `cuGetProcAddress`'s answer, or (a stub
/// whose lookup says "not found") by its exported `cuDriverGetVersion`; named
/// by the variable, and found as `libcuda.so` by the fall-back where no
/// `libcuda.so.1` is installed. The twin: the fake driver in the same places
/// is taken (`cuInit(0)` answers its 1).
fn the_toolkits_stub_library_is_told_and_every_call_returns_34() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let stub_c = fixture("fake_stub_libcuda.c");
    let expect_stub = |out: &str, path: &Path| -> Result<(), Failed> {
        expect_lines(
            out,
            &[
                "cuInit 34 34",
                "cuMemAdvise 34",
                "function cuInit Err(StubLibrary)",
            ],
        )?;
        let why = out
            .lines()
            .find_map(|l| l.strip_prefix("driver Err "))
            .ok_or_else(|| format!("driver() is not an error:\n{out}"))?;
        if !why.contains("NVIDIA's stub libcuda") || !why.contains("CUDA_ERROR_STUB_LIBRARY (34)") {
            return Err(format!("driver() does not say it is the stub: {why}").into());
        }
        names_the_stub(why, path)
    };
    // Item 4 of issue 35: the stub's file is named. The twin: the message
    // before (no file) fails the same check.
    let before = "libcuda.so.1, libcuda.so: the library is NVIDIA's stub libcuda (the toolkit's \
                  stubs/ folder, for linking only): every driver call returns \
                  CUDA_ERROR_STUB_LIBRARY (34); install the NVIDIA driver, or take the stubs \
                  folder off the library path";
    if names_the_stub(before, Path::new("/usr/local/cuda/lib64/stubs/libcuda.so")).is_ok() {
        return Err("the check takes a message that names no file".into());
    }
    for defines in [&[][..], &["-DSTUB_NOT_FOUND"][..]] {
        let (_s, stub) = shared_library("stub-driver", &stub_c, defines)?;
        let out = child("bad-driver", Some(&stub))?;
        print!("the stub {defines:?}, named:\n{out}");
        expect_stub(&out, &stub)?;
    }
    let (_d, driver) = fake_driver(&[])?;
    let out = child("bad-driver", Some(&driver))?;
    expect_lines(&out, &["cuInit 1 1", "function cuInit Ok"])?;
    // The fall-back: only a libcuda.so (SONAME libcuda.so.1) on the path.
    let fall_back = |source: &Path| -> Result<Option<(String, PathBuf)>, Failed> {
        let (s, _) = shared_library_named("stub-fall-back", source, &[], "libcuda.so.1")?;
        let dir = s.path().join("stubs");
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        std::fs::rename(s.path().join("libcuda.so.1"), dir.join("libcuda.so"))
            .map_err(|e| e.to_string())?;
        let out = child_with("bad-driver", &[("LD_LIBRARY_PATH", dir.as_os_str())])?;
        Ok((!out.lines().any(|l| l == "driver Ok libcuda.so.1"))
            .then_some((out, dir.join("libcuda.so"))))
    };
    match fall_back(&stub_c)? {
        None => println!("a libcuda.so.1 is installed: the fall-back to libcuda.so is not reached"),
        Some((out, stub)) => {
            print!("the stub as libcuda.so:\n{out}");
            expect_stub(&out, &stub)?;
            let (out, _) = fall_back(&fixture("fake_libcuda.c"))?.unwrap_or_default();
            expect_lines(&out, &["cuInit 1 1", "driver Ok libcuda.so"])?;
        }
    }
    Ok(Completion::Completed)
}

/// Item 8 of issue 30: a driver loaded by any name but `libcuda.so.1` must
/// have the `SONAME` `libcuda.so.1`, or the runtime's own
/// dlopen("libcuda.so.1") loads a second driver; one without it is refused
/// (303, `driver()` says its `SONAME`). The twin: the same fake with
/// `SONAME libcuda.so.1` is taken.
fn a_driver_without_soname_libcuda_so_1_is_refused() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    if !cfg!(target_os = "linux") {
        return Ok(Completion::ignored_with("read with dlinfo on Linux"));
    }
    let src = fixture("fake_libcuda.c");
    for (case, soname, says) in [
        (
            "another SONAME",
            Some("libcuda-other.so.1"),
            "the library's SONAME is libcuda-other.so.1, not libcuda.so.1",
        ),
        (
            "no SONAME",
            None,
            "the library has no SONAME, not libcuda.so.1",
        ),
    ] {
        let (_s, lib) = shared_library_with("soname", &src, &[], "libcuda.so.1", soname)?;
        let out = child("bad-driver", Some(&lib))?;
        print!("{case}:\n{out}");
        expect_lines(&out, &["cuInit 303 303"])?;
        let why = out
            .lines()
            .find_map(|l| l.strip_prefix("driver Err "))
            .ok_or_else(|| format!("{case}: not refused:\n{out}"))?;
        if !why.contains(says) {
            return Err(format!("{case}: expected {says:?} in {why:?}").into());
        }
    }
    let (_s, lib) = shared_library_with("soname", &src, &[], "libcuda-x.so", Some("libcuda.so.1"))?;
    let out = child("bad-driver", Some(&lib))?;
    print!("SONAME libcuda.so.1:\n{out}");
    let taken = format!("driver Ok {}", lib.display());
    expect_lines(&out, &["cuInit 1 1", taken.as_str()])?;
    Ok(Completion::Completed)
}

/// Whether a stub message names the stub's file `path`.
fn names_the_stub(why: &str, path: &Path) -> Result<(), Failed> {
    let path = path.display().to_string();
    if !why.contains(&format!("NVIDIA's stub libcuda, {path} ")) {
        return Err(format!("driver() does not name the stub's file {path}: {why}").into());
    }
    Ok(())
}

/// The load error `out` (the role `bad-driver`) reports, after the usual
/// names tried (`libcuda.so.1, libcuda.so: `).
fn usual_load_error(out: &str) -> Result<&str, String> {
    let why = out
        .lines()
        .find_map(|l| l.strip_prefix("driver Err "))
        .ok_or_else(|| format!("no load error reported:\n{out}"))?;
    why.strip_prefix("libcuda.so.1, libcuda.so: ")
        .ok_or_else(|| format!("`tried` is not the usual names: {why}"))
}

/// Whether `out` (the role `bad-driver`, `libcuda.so.1` on the library path
/// broken, no `libcuda.so`) reports `cause` for `libcuda.so.1`: the message
/// leads with it, and the attempts give `libcuda.so.1` its own reason (a
/// file that exists: not `missing`) and `libcuda.so` its "no such file".
fn reports_the_real_cause(out: &str, cause: &str) -> Result<(), String> {
    let message = usual_load_error(out)?;
    let lead = message.split("; ").next().unwrap_or_default();
    if !lead.starts_with("libcuda.so.1: ") || !lead.contains(cause) {
        return Err(format!(
            "the message does not lead with libcuda.so.1's own reason ({cause}): {message}"
        ));
    }
    let attempt = out
        .lines()
        .find_map(|l| l.strip_prefix("driver attempt libcuda.so.1 missing false: "))
        .ok_or_else(|| format!("libcuda.so.1 is not an attempt that exists and failed:\n{out}"))?;
    if !attempt.contains(cause) {
        return Err(format!(
            "libcuda.so.1's own reason is not {cause}: {attempt}"
        ));
    }
    if !out
        .lines()
        .any(|l| l.starts_with("driver attempt libcuda.so missing true: "))
    {
        return Err(format!("the fall-back's own reason is lost:\n{out}"));
    }
    if !out.lines().any(|l| l == "driver most telling libcuda.so.1") {
        return Err(format!(
            "the most telling attempt is not libcuda.so.1:\n{out}"
        ));
    }
    Ok(())
}

/// Item 1 of issue 35: a `libcuda.so.1` on the library path that exists but
/// cannot be loaded (a `NEEDED` library missing; a text file) is reported
/// with its own reason, first, and not only with the fall-back's "no such
/// file". The wrong twin: the report as it was (the fall-back's reason
/// alone) fails the same check.
fn a_broken_libcuda_so_1_is_reported_with_its_own_reason() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    if !cfg!(target_os = "linux") {
        return Ok(Completion::ignored_with(
            "the usual names and dlerror's text are Linux's",
        ));
    }
    let old = "driver Err libcuda.so.1, libcuda.so: libcuda.so: cannot open shared object \
               file: No such file or directory\ndriver variable Unset";
    if reports_the_real_cause(old, "libcuda-mem-sys-absent.so").is_ok() {
        return Err("the check takes the fall-back's reason alone".into());
    }
    // A libcuda.so.1 that needs a library no longer there.
    let dir = test_support::scratch("needs-absent");
    let absent_c = dir.path().join("absent.c");
    std::fs::write(&absent_c, "int absent(void) { return 0; }\n").map_err(|e| e.to_string())?;
    let (_a, absent) = shared_library_named("absent", &absent_c, &[], "libcuda-mem-sys-absent.so")?;
    let link = format!("-L{}", absent.parent().unwrap().display());
    let (_n, needs) = shared_library(
        "needs-absent",
        &fixture("fake_libcuda.c"),
        &["-Wl,--no-as-needed", &link, "-lcuda-mem-sys-absent"],
    )?;
    if !needed(&needs)?
        .iter()
        .any(|n| n == "libcuda-mem-sys-absent.so")
    {
        return Err("the fake driver was built without its NEEDED entry".into());
    }
    std::fs::remove_file(&absent).map_err(|e| e.to_string())?;
    // A libcuda.so.1 that is a text file (longer than an ELF header).
    let text = dir.path().join("text");
    std::fs::create_dir_all(&text).map_err(|e| e.to_string())?;
    std::fs::write(
        text.join("libcuda.so.1"),
        "not a library: a half-mounted driver left this text where libcuda.so.1 should be\n",
    )
    .map_err(|e| e.to_string())?;
    for (case, folder, cause) in [
        (
            "a NEEDED library missing",
            needs.parent().unwrap(),
            "libcuda-mem-sys-absent.so: cannot open shared object file",
        ),
        ("a text file", text.as_path(), "invalid ELF header"),
    ] {
        let out = child_with("bad-driver", &[("LD_LIBRARY_PATH", folder.as_os_str())])?;
        print!("{case}:\n{out}");
        if out.lines().any(|l| l.starts_with("driver Ok")) {
            return Ok(Completion::ignored_with(
                "a CUDA driver is installed here: the fall-back libcuda.so loads it",
            ));
        }
        expect_lines(&out, &["cuInit 303 303"])?;
        reports_the_real_cause(&out, cause).map_err(|e| format!("{case}: {e}"))?;
    }
    Ok(Completion::Completed)
}

/// Item 4 of issue 35: with the static runtime, `CUDA_MEM_SYS_LIBCUDART`
/// is reported not used (no runtime file is tried), not `Used`; a loaded
/// runtime reports it `Used`. The twin: unset, it is `Unset` either way.
fn the_static_runtime_reports_its_variable_not_used() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let dir = test_support::scratch("runtime-variable");
    let file = dir.path().join("libcudart-named.so");
    let set = child_with(
        "runtime-variable",
        &[("CUDA_MEM_SYS_LIBCUDART", file.as_os_str())],
    )?;
    let unset = child_with("runtime-variable", &[])?;
    print!("set:\n{set}unset:\n{unset}");
    let statically = unset
        .lines()
        .any(|l| l.starts_with("runtime Ok libcudart_static.a"));
    let (when_set, when_unset) = if statically {
        (
            "runtime Ok libcudart_static.a variable NotUsedByStaticRuntime",
            "runtime Ok libcudart_static.a variable Unset",
        )
    } else {
        ("runtime Err variable Used", "variable Unset")
    };
    if !set.lines().any(|l| l == when_set) {
        return Err(format!("expected {when_set:?}:\n{set}").into());
    }
    if !unset.lines().any(|l| l.ends_with(when_unset)) {
        return Err(format!("expected {when_unset:?}:\n{unset}").into());
    }
    Ok(Completion::Completed)
}

/// Whether the runtime is loaded, asked of a child without any library (the
/// roles that hold a load must not load the runtime to ask it).
/// `None` where a case needing the feature and a runtime loaded at run time
/// can run in this build; otherwise it reports itself ignored with the reason.
fn needs_loaded_runtime_build() -> Result<Option<Completion>, Failed> {
    match needs_feature() {
        Some(c) => Ok(Some(c)),
        None => runtime_is_linked(),
    }
}

/// The folder in the fake driver's scratch `s` where it holds (`FAKE_HOLD`).
fn hold_dir(s: &test_support::Scratch) -> Result<PathBuf, Failed> {
    let hold = s.path().join("hold");
    std::fs::create_dir_all(&hold).map_err(|e| e.to_string())?;
    Ok(hold)
}

fn runtime_is_linked() -> Result<Option<Completion>, Failed> {
    Ok(needs_loaded_runtime(&child_with("runtime-mode", &[])?))
}

fn needs_loaded_runtime(out: &str) -> Option<Completion> {
    out.lines().any(|l| l == "runtime linked").then(|| {
        Completion::ignored_with(
            "the runtime is linked statically (build with dynamic-cudart to load it)",
        )
    })
}

fn the_loaded_runtime_uses_the_named_driver() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let (_d, driver) = fake_driver(&[])?;
    let (_r, runtime) = fake_runtime()?;
    let out = child_with(
        "runtime-driver",
        &[
            ("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str()),
            ("CUDA_MEM_SYS_LIBCUDART", runtime.as_os_str()),
        ],
    )?;
    if let Some(c) = needs_loaded_runtime(&out) {
        return Ok(c);
    }
    print!("{out}");
    let opened = format!("the runtime opened {}", driver.display());
    expect_lines(
        &out,
        &["cudaGetDeviceCount 0 3", opened.as_str(), "cuInit(7) 0"],
    )?;
    Ok(Completion::Completed)
}

fn a_runtime_of_another_major_is_refused() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let (_r, runtime) = fake_runtime()?;
    let headers = cuda_mem_sys::CUDA_VERSION;
    let other = if headers / 1000 == 12 { 13000 } else { 12080 };
    let release = |v: u32| format!("{}.{}", v / 1000, v % 1000 / 10);
    let run = |v: u32| {
        let v = v.to_string();
        child_with(
            "runtime-version",
            &[
                ("CUDA_MEM_SYS_LIBCUDART", runtime.as_os_str()),
                ("FAKE_RUNTIME_VERSION", OsStr::new(&v)),
            ],
        )
    };
    let out = run(other)?;
    if let Some(c) = needs_loaded_runtime(&out) {
        return Ok(c);
    }
    print!("{out}");
    expect_lines(&out, &["cudaGetDeviceCount 303"])?;
    let why = out
        .lines()
        .find_map(|l| l.strip_prefix("runtime Err "))
        .ok_or("no load error reported")?;
    for v in [release(other), release(headers)] {
        if !why.contains(&format!("CUDA {v}'s")) {
            return Err(format!("the message does not name {v}: {why}").into());
        }
    }
    // The twin: the headers' own major is taken, and called (the fake
    // answers 35 where it finds no libcuda.so.1, 0 where a driver is installed).
    let own = headers / 1000 * 1000 + 10;
    let out = run(own)?;
    let taken = format!("runtime Ok {} Some({own})", runtime.display());
    expect_lines(&out, &[taken.as_str()])?;
    if !out
        .lines()
        .any(|l| l == "cudaGetDeviceCount 35" || l == "cudaGetDeviceCount 0")
    {
        return Err(format!("the runtime of the headers' major was not called:\n{out}").into());
    }
    Ok(Completion::Completed)
}

fn a_secure_process_ignores_the_variables() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    if let Some(c) = linux_as_root(
        "getauxval(AT_SECURE) is Linux's",
        "needs root: it makes a setuid-root copy of this test and runs it as nobody",
    ) {
        return Ok(c);
    }
    if Command::new("setpriv").arg("--help").output().is_err() {
        return Ok(Completion::ignored_with("needs setpriv (util-linux)"));
    }
    use std::os::unix::fs::PermissionsExt;
    let scratch = test_support::scratch("secure");
    let dir = scratch.path();
    let set_mode = |p: &Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
            .map_err(|e| format!("chmod {}: {e}", p.display()))
    };
    set_mode(dir, 0o755)?;
    let markers = dir.join("markers");
    std::fs::create_dir_all(&markers).map_err(|e| e.to_string())?;
    set_mode(&markers, 0o777)?;
    let marker = markers.join("loaded");
    let define = format!("-DMARKER=\"{}\"", marker.display());
    let (_m, library) = shared_library(
        "marker-library",
        &fixture("marker_library.c"),
        &[define.as_str()],
    )?;
    set_mode(library.parent().unwrap(), 0o755)?;
    set_mode(&library, 0o755)?;
    let copy = dir.join("dynamic_loading_copy");
    std::fs::copy(std::env::current_exe().unwrap(), &copy).map_err(|e| e.to_string())?;
    let run = |mode: u32| -> Result<String, Failed> {
        let _ = std::fs::remove_file(&marker);
        set_mode(&copy, mode)?;
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(&copy);
        child_command(
            &mut cmd,
            "secure",
            &[
                ("CUDA_MEM_SYS_LIBCUDA", library.as_os_str()),
                ("CUDA_MEM_SYS_LIBCUDART", library.as_os_str()),
            ],
        );
        run_bounded(cmd, "secure")
    };
    // The twin first: not setuid, the variable is used and the marker appears.
    let out = run(0o755)?;
    print!("not setuid:\n{out}");
    expect_lines(&out, &["secure false", "driver variable Used"])?;
    if !marker.exists() {
        return Err("the marker library was loaded, yet left no marker".into());
    }
    // Setuid root, run by nobody: a secure process.
    let out = run(0o4755)?;
    print!("setuid root, run by nobody:\n{out}");
    if out.lines().any(|l| l == "secure false") {
        return Ok(Completion::ignored_with(
            "the setuid bit takes no effect here (nosuid mount or no_new_privs)",
        ));
    }
    expect_lines(
        &out,
        &[
            "secure true",
            "driver variable IgnoredInSecureProcess",
            "runtime variable IgnoredInSecureProcess",
        ],
    )?;
    if marker.exists() {
        return Err("a secure process loaded the library the variable names".into());
    }
    Ok(Completion::Completed)
}

/// Whether `out` (the role `bad-driver`, no `libcuda.so.1` on the library
/// path and a `libcuda.so` there that exists but cannot be loaded) leads
/// with the fall-back's own reason `cause`: the second file tried, the
/// first that exists. The message's first reason is `libcuda.so`'s, and
/// `Attempts::most_telling` names it; `libcuda.so.1` keeps its "no such
/// file", after it.
fn leads_with_the_fall_back(out: &str, cause: &str) -> Result<(), String> {
    let message = usual_load_error(out)?;
    let mut reasons = message.split("; ");
    let lead = reasons.next().unwrap_or_default();
    if !lead.starts_with("libcuda.so: ") || !lead.contains(cause) {
        return Err(format!(
            "the message does not lead with libcuda.so's own reason ({cause}), the most \
             telling, but with the first file tried: {message}"
        ));
    }
    if !reasons.any(|r| r.starts_with("libcuda.so.1: ") && r.contains("No such file")) {
        return Err(format!(
            "libcuda.so.1's \"no such file\" is lost: {message}"
        ));
    }
    if !out.lines().any(|l| l == "driver most telling libcuda.so") {
        return Err(format!(
            "Attempts::most_telling is not libcuda.so, the file that exists:\n{out}"
        ));
    }
    if !out
        .lines()
        .any(|l| l.starts_with("driver attempt libcuda.so missing false: ") && l.contains(cause))
    {
        return Err(format!("libcuda.so's own reason is not {cause}:\n{out}"));
    }
    Ok(())
}

/// Issue 41: "the most telling reason first" means the first file that
/// exists and failed, not the first file tried. With no `libcuda.so.1` and
/// a `libcuda.so` that is a text file, the message leads with
/// `libcuda.so`'s "invalid ELF header", and `Attempts::most_telling` is
/// `libcuda.so`. (`a_broken_libcuda_so_1_is_reported_with_its_own_reason`
/// breaks the first file tried, where both rules agree.) The wrong twin:
/// the report that leads with the first file tried fails the same check.
fn a_later_file_that_exists_and_failed_leads_the_message() -> Result<Completion, Failed> {
    if let Some(c) = linux_only("the usual names and dlerror's text are Linux's") {
        return Ok(c);
    }
    let first_tried_first = "driver Err libcuda.so.1, libcuda.so: libcuda.so.1: cannot open \
        shared object file: No such file or directory; libcuda.so: /tmp/x/libcuda.so: invalid \
        ELF header\ndriver attempt libcuda.so.1 missing true: libcuda.so.1: cannot open shared \
        object file: No such file or directory\ndriver attempt libcuda.so missing false: \
        /tmp/x/libcuda.so: invalid ELF header\ndriver most telling libcuda.so.1";
    if leads_with_the_fall_back(first_tried_first, "invalid ELF header").is_ok() {
        return Err("the check takes a message that leads with the first file tried".into());
    }
    let dir = test_support::scratch("fall-back-text");
    std::fs::write(
        dir.path().join("libcuda.so"),
        "not a library: the fall-back name holds this text, and no libcuda.so.1 is here\n",
    )
    .map_err(|e| e.to_string())?;
    let out = child_with("bad-driver", &[("LD_LIBRARY_PATH", dir.path().as_os_str())])?;
    print!("no libcuda.so.1, libcuda.so a text file:\n{out}");
    if out.lines().any(|l| l.starts_with("driver Ok")) {
        return Ok(Completion::ignored_with(
            "a CUDA driver is installed here: libcuda.so.1 loads it",
        ));
    }
    // Both usual names tried (issue 41: `Attempts::len`, `is_empty`).
    expect_lines(&out, &["cuInit 303 303", "driver attempts 2 empty false"])?;
    leads_with_the_fall_back(&out, "invalid ELF header")?;
    Ok(Completion::Completed)
}

/// Issue 41: each of the loader's tells of NVIDIA's stub library alone
/// makes it the stub (`the_toolkits_stub_library_is_told_and_every_call_returns_34`
/// builds stubs that the exported `cuDriverGetVersion` tells as well, so
/// either of the other tells could go unseen): `cuGetProcAddress`'s own
/// answer 34, with no `cuDriverGetVersion` exported; a `cuGetProcAddress`
/// that hands out functions, whose `cuDriverGetVersion` answers 34. Each
/// is refused as the stub (every call 34, `driver()` naming its file). The
/// wrong twin: the same library whose functions answer 0 is taken.
fn each_of_the_stubs_answers_alone_tells_the_stub() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let stub_c = fixture("fake_stub_libcuda.c");
    for (case, defines) in [
        (
            "the lookup's answer 34 alone",
            &["-DSTUB_NO_EXPORTED_VERSION"][..],
        ),
        (
            "the version call's answer 34 alone",
            &["-DSTUB_GIVES_POINTERS", "-DSTUB_NO_EXPORTED_VERSION"][..],
        ),
    ] {
        let (_s, stub) = shared_library("stub-alone", &stub_c, defines)?;
        let out = child("bad-driver", Some(&stub))?;
        print!("{case}:\n{out}");
        expect_lines(
            &out,
            &[
                "cuInit 34 34",
                "cuMemAdvise 34",
                "function cuInit Err(StubLibrary)",
            ],
        )
        .map_err(|e| {
            format!(
                "{case}: not told as the stub: {}",
                e.message().unwrap_or("")
            )
        })?;
        let why = out
            .lines()
            .find_map(|l| l.strip_prefix("driver Err "))
            .ok_or_else(|| format!("{case}: driver() is not an error:\n{out}"))?;
        if !why.contains("NVIDIA's stub libcuda") {
            return Err(format!("{case}: driver() does not say it is the stub: {why}").into());
        }
        names_the_stub(why, &stub)?;
        // The refusal is the file's own reason: an attempt that exists.
        let attempt = format!(
            "driver attempt {} missing false: the library is NVIDIA's stub libcuda",
            stub.display()
        );
        if !out.lines().any(|l| l.starts_with(&attempt)) {
            return Err(
                format!("{case}: the stub is not an attempt with its reason:\n{out}").into(),
            );
        }
    }
    let twin = [
        "-DSTUB_GIVES_POINTERS",
        "-DSTUB_NO_EXPORTED_VERSION",
        "-DSTUB_ANSWER=0",
    ];
    let (_s, lib) = shared_library("stub-alone-twin", &stub_c, &twin)?;
    let out = child("bad-driver", Some(&lib))?;
    print!("the same library answering 0:\n{out}");
    let taken = format!("driver Ok {}", lib.display());
    expect_lines(&out, &["cuInit 0 0", "function cuInit Ok", taken.as_str()])?;
    Ok(Completion::Completed)
}

/// A value too long names the loader's limit: "more than the loader's
/// 4095" (a path buffer of 4096 bytes, its NUL included). The wrong twin: a
/// message naming another limit fails the same check.
fn a_value_too_long_names_the_loaders_limit() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let says = "CUDA_MEM_SYS_LIBCUDA is 5000 bytes long, more than the loader's 4095: nothing \
                is loaded";
    let names_the_limit = |out: &str| out.lines().any(|l| l.contains(says));
    if names_the_limit(&format!("driver Err {}", says.replace("4095", "4097"))) {
        return Err("the check takes another limit".into());
    }
    // What was tried is the variable, by its name alone (its value is not
    // used); the wrong twin, the name with the NUL the loader reads it by.
    let tried_the_variable = |out: &str| {
        out.lines()
            .any(|l| l.starts_with("driver Err CUDA_MEM_SYS_LIBCUDA: "))
    };
    if tried_the_variable("driver Err CUDA_MEM_SYS_LIBCUDA\0: x") {
        return Err("the check takes the name with its NUL".into());
    }
    let value = "/".repeat(5000);
    let out = child("bad-driver", Some(Path::new(&value)))?;
    if !names_the_limit(&out) {
        return Err(format!("the message does not name the limit 4095:\n{out}").into());
    }
    if !tried_the_variable(&out) {
        return Err(format!("`tried` is not the variable's name:\n{out:?}").into());
    }
    Ok(Completion::Completed)
}

/// With a loaded runtime (`dynamic-cudart`), a driver that
/// `CUDA_MEM_SYS_LIBCUDA` names and that did not load keeps the runtime
/// from loading (its own dlopen("libcuda.so.1") would open another
/// driver): `runtime()` says so. The wrong twin: the same with a named
/// driver that loads, the runtime loads.
fn a_named_driver_that_did_not_load_keeps_the_runtime_out() -> Result<Completion, Failed> {
    if let Some(c) = needs_loaded_runtime_build()? {
        return Ok(c);
    }
    let (_r, runtime) = fake_runtime()?;
    let dir = test_support::scratch("named-driver-missing");
    let missing = dir.path().join("libcuda-not-here.so.1");
    let out = child_with(
        "runtime-after-driver",
        &[
            ("CUDA_MEM_SYS_LIBCUDA", missing.as_os_str()),
            ("CUDA_MEM_SYS_LIBCUDART", runtime.as_os_str()),
        ],
    )?;
    print!("a named driver that did not load:\n{out}");
    let says = "runtime message not loaded: CUDA_MEM_SYS_LIBCUDA names a driver that did not load";
    if !out.lines().any(|l| l.starts_with(says)) || !out.lines().any(|l| l == "runtime Err") {
        return Err(format!("the runtime was not kept out:\n{out}").into());
    }
    let (_d, driver) = fake_driver(&[])?;
    let out = child_with(
        "runtime-after-driver",
        &[
            ("CUDA_MEM_SYS_LIBCUDA", driver.as_os_str()),
            ("CUDA_MEM_SYS_LIBCUDART", runtime.as_os_str()),
        ],
    )?;
    print!("a named driver that loads:\n{out}");
    let taken = format!("runtime Ok {}", runtime.display());
    expect_lines(&out, &[taken.as_str()])?;
    Ok(Completion::Completed)
}

#[cfg(feature = "dynamic-loading")]
mod roles {
    use cuda_mem_sys::loader;
    use cuda_mem_sys::*;
    use std::ffi::{c_char, c_int, c_ulonglong, c_void, CStr, CString};
    use std::path::PathBuf;
    use std::time::{Duration, Instant};

    type Count = unsafe extern "C" fn() -> c_int;
    type Request = unsafe extern "C" fn(c_int, *mut c_int, *mut c_ulonglong) -> *const c_char;

    /// A function of the fake driver, from the already loaded library.
    pub(crate) fn fake<T: Copy>(name: &str) -> T {
        // The variable's file, else the one the usual name found.
        let file = std::env::var("CUDA_MEM_SYS_LIBCUDA").unwrap_or("libcuda.so.1".into());
        let file = CString::new(file).unwrap();
        let h = unsafe { libc::dlopen(file.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        assert!(!h.is_null(), "the fake driver is not loaded");
        let name = CString::new(name).unwrap();
        let p = unsafe { libc::dlsym(h, name.as_ptr()) };
        assert!(!p.is_null());
        unsafe { std::mem::transmute_copy(&p) }
    }

    fn class(r: Result<loader::Resolved, loader::Unavailable>) -> String {
        match r {
            Ok(_) => "Ok".to_string(),
            Err(e) => format!("Err({e:?})"),
        }
    }

    pub(crate) fn report_driver() {
        match loader::driver() {
            Ok(l) => {
                println!("driver Ok {}", l.file);
                println!("driver variable {:?}", l.variable);
            }
            Err(e) => {
                println!("driver Err {}: {}", e.tried, e.message);
                println!("driver variable {:?}", e.variable);
                for a in e.attempts.iter() {
                    println!(
                        "driver attempt {} missing {}: {}",
                        a.file, a.missing, a.reason
                    );
                }
                if let Some(a) = e.attempts.most_telling() {
                    println!("driver most telling {}", a.file);
                }
                println!(
                    "driver attempts {} empty {}",
                    e.attempts.len(),
                    e.attempts.is_empty()
                );
            }
        }
    }

    fn runtime_linked() -> bool {
        let linked = loader::runtime().map(|l| l.file) == Ok("libcudart_static.a");
        if linked {
            println!("runtime linked");
        }
        linked
    }

    /// Calls back into the crate from the fake driver (`FAKE_CALLBACK`).
    extern "C" fn callback() -> c_int {
        unsafe { cuInit(0).0 as c_int }
    }

    /// The questions of `REAL_ANSWERS`, asked of the driver directly.
    unsafe fn answers() {
        type V2 =
            unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64, *mut c_int) -> c_int;
        type V1 = unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64) -> c_int;
        type Version = unsafe extern "C" fn(*mut c_int) -> c_int;
        let file = std::env::var("CUDA_MEM_SYS_LIBCUDA").unwrap_or("libcuda.so.1".into());
        let file = CString::new(file).unwrap();
        let h = libc::dlopen(file.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        if h.is_null() {
            println!("no driver");
            return;
        }
        let sym = |n: &CStr| libc::dlsym(h, n.as_ptr());
        let (v2, v1, version) = (
            sym(c"cuGetProcAddress_v2"),
            sym(c"cuGetProcAddress"),
            sym(c"cuDriverGetVersion"),
        );
        assert!(!v2.is_null() && !v1.is_null() && !version.is_null());
        let v2: V2 = std::mem::transmute(v2);
        let v1: V1 = std::mem::transmute(v1);
        let version: Version = std::mem::transmute(version);
        let mut d = 0;
        assert_eq!(version(&mut d), 0);
        println!("driver version {d}");
        let untouched = 1usize as *mut c_void;
        let pfn = |p: *mut c_void| match p {
            p if p.is_null() => "null",
            p if p == untouched => "-",
            _ => "set",
        };
        for (api, name, v) in [
            ("v2", "cuInit", "D+10"),
            ("v2", "cuInit", "1000"),
            ("v2", "cuInit", "2000"),
            ("v2", "cuMemAdvise", "2000"),
            ("v2", "cuMemAdvise", "12020"),
            ("v2", "cuNoSuchFunction", "D"),
            ("v2", "cuNoSuchFunction", "D+10"),
            ("v1", "cuInit", "D+10"),
            ("v1", "cuInit", "1000"),
            ("v1", "cuInit", "2000"),
            ("v1", "cuNoSuchFunction", "D"),
        ] {
            let asked = match v {
                "D" => d,
                "D+10" => d + 10,
                n => n.parse().unwrap(),
            };
            let c_name = CString::new(name).unwrap();
            let mut p = untouched;
            if api == "v2" {
                let mut status: c_int = -1;
                let r = v2(c_name.as_ptr(), &mut p, asked, 0, &mut status);
                let status = if status == -1 {
                    "-".to_string()
                } else {
                    status.to_string()
                };
                println!("v2 {name} {v}: r={r} status={status} pfn={}", pfn(p));
            } else {
                let r = v1(c_name.as_ptr(), &mut p, asked, 0);
                println!("v1 {name} {v}: r={r} pfn={}", pfn(p));
            }
        }
    }

    /// Process CPU time (user and system), in milliseconds.
    fn cpu_ms() -> u64 {
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
        let ms = |t: libc::timeval| t.tv_sec as u64 * 1000 + t.tv_usec as u64 / 1000;
        ms(u.ru_utime) + ms(u.ru_stime)
    }

    /// Waits (30 s at most) until the fake driver holds in its constructor.
    fn until_held(hold: &std::path::Path) {
        let start = Instant::now();
        while !hold.join("holding").exists() {
            if start.elapsed() > Duration::from_secs(30) {
                println!("the fake never held");
                std::process::exit(1);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// A thread loads the fake driver, which holds in its constructor
    /// (`FAKE_HOLD`); four others call the crate meanwhile and wait; the
    /// process's CPU time over a second of that is reported.
    fn wait_while_loading() {
        let hold = PathBuf::from(std::env::var_os("FAKE_HOLD").unwrap());
        static GO: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        // Started before the load, released while it holds.
        let waiters: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    while !GO.load(std::sync::atomic::Ordering::Acquire) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    unsafe { cuInit(7).0 }
                })
            })
            .collect();
        let loader_thread = std::thread::spawn(|| unsafe { cuInit(7).0 });
        until_held(&hold);
        GO.store(true, std::sync::atomic::Ordering::Release);
        std::thread::sleep(Duration::from_millis(100));
        let before = cpu_ms();
        std::thread::sleep(Duration::from_millis(1000));
        let used = cpu_ms() - before;
        std::fs::write(hold.join("release"), "").unwrap();
        let got: Vec<u32> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
        println!("cpu ms while 4 threads waited 1000 ms: {used}");
        if got.iter().all(|&r| r == got[0]) {
            println!("waiters {} agree {}", got.len(), got[0]);
        } else {
            println!("waiters disagree {got:?}");
        }
        println!("loader cuInit(7) {}", loader_thread.join().unwrap());
    }

    /// A thread loads the fake driver, which holds in its constructor
    /// (`FAKE_HOLD`); meanwhile this thread forks, and the child calls the
    /// crate, which must answer (303), not wait for a thread it lacks.
    fn fork_while_loading() {
        let hold = PathBuf::from(std::env::var_os("FAKE_HOLD").unwrap());
        let loader_thread = std::thread::spawn(|| unsafe { cuInit(7).0 });
        until_held(&hold);
        // SAFETY: the child calls the crate (atomics and system calls, no
        // lock) and writes with write(2) before _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let r = unsafe { cuInit(0).0 };
            let mut line = format!("child cuInit(0) {r}\n");
            if let Err(e) = loader::driver() {
                line += &format!("child driver tried {}\n", e.tried);
                line += &format!("child driver message {}\n", e.message);
            }
            unsafe {
                libc::write(1, line.as_ptr().cast(), line.len());
                libc::_exit(0);
            }
        }
        // The child gets 10 s, then is killed (a hang).
        let mut status = 0;
        let start = Instant::now();
        loop {
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if r == pid {
                break;
            }
            if start.elapsed() > Duration::from_secs(10) {
                unsafe { libc::kill(pid, libc::SIGKILL) };
                unsafe { libc::waitpid(pid, &mut status, 0) };
                println!("child hung: killed");
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        std::fs::write(hold.join("release"), "").unwrap();
        println!("parent cuInit(7) {}", loader_thread.join().unwrap());
    }

    fn report(label: &str, r: Result<loader::Loaded, loader::LoadError>) {
        match r {
            Ok(l) => println!("{label} Ok {}", l.file),
            Err(e) => {
                println!("{label} Err");
                println!("{label} tried {}", e.tried);
                println!("{label} message {}", e.message);
                println!("{label} variable {:?}", e.variable);
            }
        }
    }

    /// Called back from the driver's first lookup: a runtime call, and
    /// `driver()`, from inside the driver's load.
    extern "C" fn runtime_callback() -> c_int {
        report("callback driver", loader::driver());
        let mut n = 0;
        unsafe { cudaGetDeviceCount(&mut n).0 as c_int }
    }

    /// Called back from the driver's first lookup: `driver()` from inside
    /// the driver's load.
    extern "C" fn driver_callback() -> c_int {
        report("callback driver", loader::driver());
        0
    }

    /// Joins `h`, or exits (a deadlock) after 10 s.
    fn join_within<T: Send + 'static>(what: &str, h: std::thread::JoinHandle<T>) -> T {
        let start = Instant::now();
        while !h.is_finished() {
            if start.elapsed() > Duration::from_secs(10) {
                println!("{what} still waits after 10 s: a deadlock");
                std::process::exit(1);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        h.join().unwrap()
    }

    /// Issue 30, fix 1: see `the_driver_and_runtime_loads_never_wait_on_each_other`.
    fn lock_order() {
        let hold = PathBuf::from(std::env::var_os("FAKE_HOLD").unwrap());
        std::env::set_var(
            "FAKE_CALLBACK",
            format!("{:x}", runtime_callback as *const () as usize),
        );
        let a = std::thread::spawn(|| unsafe { cuInit(7).0 });
        until_held(&hold);
        let b = std::thread::spawn(|| {
            let mut n = 0;
            unsafe { cudaGetDeviceCount(&mut n).0 }
        });
        std::thread::sleep(Duration::from_millis(300));
        println!("B waited for the driver: {}", !b.is_finished());
        std::fs::write(hold.join("release"), "").unwrap();
        let a = join_within("A (the driver's load)", a);
        let b = join_within("B (the first runtime call)", b);
        let result: Count = fake("fake_callback_result");
        println!("callback cudaGetDeviceCount {}", unsafe { result() });
        println!("B cudaGetDeviceCount {b}");
        println!("loader cuInit(7) {a}");
    }

    /// Waits (`secs` at most) for the child `pid`, killing it after.
    fn wait_child(pid: libc::pid_t, what: &str, secs: u64) {
        let mut status = 0;
        let start = Instant::now();
        loop {
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if r == pid {
                break;
            }
            if start.elapsed() > Duration::from_secs(secs) {
                unsafe { libc::kill(pid, libc::SIGKILL) };
                unsafe { libc::waitpid(pid, &mut status, 0) };
                println!("{what} hung: killed");
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Writes `text` to stdout with write(2) (a forked child).
    fn write_out(text: &str) {
        unsafe { libc::write(1, text.as_ptr().cast(), text.len()) };
    }

    /// Issue 30, fix 2: see `a_child_forked_while_the_driver_loads_gets_303_from_the_runtime`.
    fn fork_runtime() {
        let hold = PathBuf::from(std::env::var_os("FAKE_HOLD").unwrap());
        let loader_thread = std::thread::spawn(|| unsafe { cuInit(7).0 });
        until_held(&hold);
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let mut n = 0;
            let r = unsafe { cudaGetDeviceCount(&mut n).0 };
            let d = unsafe { cuInit(0).0 };
            let mut text = format!("child cudaGetDeviceCount {r}\nchild cuInit(0) {d}\n");
            match loader::driver() {
                Ok(l) => text += &format!("child driver Ok {}\n", l.file),
                Err(e) => {
                    text += &format!("child driver tried {}\n", e.tried);
                    text += &format!("child driver variable {:?}\n", e.variable);
                }
            }
            write_out(&text);
            unsafe { libc::_exit(0) };
        }
        wait_child(pid, "child", 10);
        std::fs::write(hold.join("release"), "").unwrap();
        println!("parent cuInit(7) {}", loader_thread.join().unwrap());
        let mut n = 0;
        println!("parent cudaGetDeviceCount {}", unsafe {
            cudaGetDeviceCount(&mut n).0
        });
    }

    /// Issue 30, fix 3: see `a_pid_1_child_in_a_new_pid_namespace_does_not_hang`.
    fn pid_namespace() {
        // This process is single-threaded here; its child in a new PID
        // namespace is that namespace's PID 1.
        if unsafe { libc::unshare(libc::CLONE_NEWPID) } != 0 {
            println!("unshare refused: {}", std::io::Error::last_os_error());
            return;
        }
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            pid_1();
            unsafe { libc::_exit(0) };
        }
        wait_child(pid, "pid 1", 40);
    }

    /// PID 1: a thread loads the fake driver (held in its constructor), a
    /// sibling thread calls meanwhile, and PID 1 forks into a new PID
    /// namespace: the grandchild is PID 1 too, on thread 1.
    fn pid_1() {
        let hold = PathBuf::from(std::env::var_os("FAKE_HOLD").unwrap());
        let loader_thread = std::thread::spawn(|| unsafe { cuInit(7).0 });
        until_held(&hold);
        let sibling = std::thread::spawn(|| unsafe { cuInit(7).0 });
        if unsafe { libc::getpid() } == 1 {
            println!("pid 1 forks while its thread loads");
        }
        if unsafe { libc::unshare(libc::CLONE_NEWPID) } != 0 {
            println!("unshare refused: {}", std::io::Error::last_os_error());
        } else {
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                let me = unsafe { libc::getpid() };
                let r = unsafe { cuInit(0).0 };
                write_out(&format!("grandchild pid {me} cuInit(0) {r}\n"));
                unsafe { libc::_exit(0) };
            }
            wait_child(pid, "grandchild", 10);
        }
        std::thread::sleep(Duration::from_millis(100));
        println!("sibling waited: {}", !sibling.is_finished());
        std::fs::write(hold.join("release"), "").unwrap();
        println!("sibling cuInit(7) {}", join_within("the sibling", sibling));
        println!(
            "loader cuInit(7) {}",
            join_within("the loader", loader_thread)
        );
    }

    fn gettid() -> i32 {
        unsafe { libc::syscall(libc::SYS_gettid) as i32 }
    }

    /// The thread loading the driver (its id), for `end_loader_thread`.
    static LOADER_TID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

    /// Called back from the fake's constructor: with `OWNER_ENDS=1`, on the
    /// loading thread, ends that thread at once (the raw `exit` system
    /// call: nothing unwinds, no handler runs, the load never finishes).
    extern "C" fn end_loader_thread() -> c_int {
        if std::env::var_os("OWNER_ENDS").is_some_and(|v| v == "1")
            && gettid() == LOADER_TID.load(std::sync::atomic::Ordering::SeqCst)
        {
            // `OWNER_ENDS_AFTER_MS`: a loading thread slow to end.
            if let Some(ms) = std::env::var("OWNER_ENDS_AFTER_MS")
                .ok()
                .and_then(|v| v.parse().ok())
            {
                std::thread::sleep(Duration::from_millis(ms));
            }
            unsafe { libc::syscall(libc::SYS_exit, 0) };
        }
        0
    }

    /// Whether this process still has the thread `tid`, an id of the
    /// caller's PID namespace: `tgkill(getpid(), tid, 0)`. Not
    /// `/proc/self/task/<tid>`: `/proc` gives the ids of the namespace it
    /// was mounted for, the outer one in `tid_reuse` (a PID namespace of its
    /// own, the same `/proc`), where that path never exists; the wait
    /// ended at once, the later thread could be made while the loading one
    /// still ran, took another id, and hung on glibc's loader lock that the
    /// ended thread holds (the flaky "later thread still waits after 10 s";
    /// a loading thread made to end 300 ms late reproduced it each time).
    fn thread_alive(tid: i32) -> bool {
        // SAFETY: signal 0 is only checked, never sent.
        unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, 0) == 0 }
    }

    /// Starts a thread that loads the driver (ended inside the load with
    /// `OWNER_ENDS=1`); returns once it ended (`true`) or finished.
    fn load_on_a_thread_that_may_end() -> (i32, bool) {
        std::env::set_var(
            "FAKE_CALLBACK",
            format!("{:x}", end_loader_thread as *const () as usize),
        );
        let loader_thread = std::thread::spawn(|| {
            LOADER_TID.store(gettid(), std::sync::atomic::Ordering::SeqCst);
            unsafe { cuInit(7).0 }
        });
        let start = Instant::now();
        let tid = loop {
            let t = LOADER_TID.load(std::sync::atomic::Ordering::SeqCst);
            if t != 0 {
                break t;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        while thread_alive(tid) && !loader_thread.is_finished() {
            if start.elapsed() > Duration::from_secs(10) {
                println!("the loading thread neither ended nor finished");
                std::process::exit(1);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let gone = !loader_thread.is_finished();
        (tid, gone)
    }

    pub(crate) fn report_later(r: c_int) {
        println!("later cuInit(7) {r}");
        match loader::driver() {
            Ok(l) => println!("later driver Ok {}", l.file),
            Err(e) => println!("later driver message {}", e.message),
        }
    }

    /// Issue 35: see `a_load_whose_thread_ended_gives_303_not_a_hang`.
    fn owner_ends() {
        let (_, gone) = load_on_a_thread_that_may_end();
        println!("loader thread gone: {gone}");
        report_later(unsafe { cuInit(7).0 } as c_int);
        // The ended thread holds the system loader's lock: no exit handlers.
        unsafe { libc::_exit(0) };
    }

    /// Issue 35: see `a_thread_reusing_a_dead_owners_id_is_not_told_reentrant`.
    fn tid_reuse() {
        if unsafe { libc::unshare(libc::CLONE_NEWPID) } != 0 {
            println!("unshare refused: {}", std::io::Error::last_os_error());
            return;
        }
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // PID 1 of a namespace of its own: ids are given in order.
            let (tid, gone) = load_on_a_thread_that_may_end();
            println!("loader thread gone: {gone}");
            // The next thread gets the ended one's id.
            let set = std::fs::write("/proc/sys/kernel/ns_last_pid", format!("{}", tid - 1));
            println!("ns_last_pid set: {}", set.is_ok());
            let later = std::thread::spawn(|| (gettid(), unsafe { cuInit(7).0 } as c_int));
            let (later_tid, r) = join_within("the later thread", later);
            println!(
                "later thread has the dead loader's id: {}",
                later_tid == tid
            );
            report_later(r);
            unsafe { libc::_exit(0) };
        }
        wait_child(pid, "the namespace's PID 1", 40);
    }

    /// A fixed buffer to format into without allocating (a child made by
    /// clone(2) or _Fork(), where another thread may have held malloc's
    /// lock).
    struct Line {
        bytes: [u8; 1024],
        len: usize,
    }

    impl std::fmt::Write for Line {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            let n = s.len().min(self.bytes.len() - self.len);
            self.bytes[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
            self.len += n;
            Ok(())
        }
    }

    /// In a child: its call, what `driver()` says, then `_exit`.
    fn child_says(who: &str) -> ! {
        use std::fmt::Write;
        let mut line = Line {
            bytes: [0; 1024],
            len: 0,
        };
        let r = unsafe { cuInit(0).0 };
        let _ = writeln!(line, "{who} cuInit(0) {r}");
        if let Err(e) = loader::driver() {
            let _ = writeln!(line, "{who} driver message {}", e.message);
        }
        unsafe {
            libc::write(1, line.bytes.as_ptr().cast(), line.len);
            libc::_exit(0)
        }
    }

    /// Issue 35: see `a_child_made_without_fork_handlers_gets_303_not_a_hang`.
    fn raw_fork() {
        let hold = PathBuf::from(std::env::var_os("FAKE_HOLD").unwrap());
        // glibc's _Fork() (2.34 and later): fork without the handlers.
        // Looked up first: dlsym waits for the load's loader lock.
        let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"_Fork".as_ptr()) };
        let loader_thread = std::thread::spawn(|| unsafe { cuInit(7).0 });
        until_held(&hold);
        // A raw clone(2): a new process, no fork handler run.
        let pid = unsafe {
            libc::syscall(
                libc::SYS_clone,
                libc::SIGCHLD as libc::c_long,
                0 as libc::c_long,
                0 as libc::c_long,
                0 as libc::c_long,
                0 as libc::c_long,
            )
        } as libc::pid_t;
        if pid == 0 {
            child_says("clone child");
        }
        wait_child(pid, "clone child", 10);
        if f.is_null() {
            println!("no _Fork here");
        } else {
            let fork_without_handlers: unsafe extern "C" fn() -> libc::pid_t =
                unsafe { std::mem::transmute(f) };
            let pid = unsafe { fork_without_handlers() };
            if pid == 0 {
                child_says("_Fork child");
            }
            wait_child(pid, "_Fork child", 10);
        }
        // The twin: fork() runs the handlers.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            child_says("fork child");
        }
        wait_child(pid, "fork child", 10);
        std::fs::write(hold.join("release"), "").unwrap();
        println!("parent cuInit(7) {}", loader_thread.join().unwrap());
    }

    /// Issue 35: see `a_second_differing_lookup_cannot_replace_a_resolved_function`.
    fn flaky() {
        let _ = loader::driver();
        // Each first call's answer, the address as a number (Send).
        let answer = |r: Result<loader::Resolved, loader::Unavailable>| match r {
            Ok(loader::Resolved::Loaded(p)) => Ok(p as usize),
            Ok(loader::Resolved::Linked) => Ok(0),
            Err(e) => Err(e),
        };
        let first = || std::thread::spawn(move || answer(loader::function("cuCtxGetDevice")));
        let (a, b) = (first(), first());
        let a = join_within("the first call A", a);
        let b = join_within("the first call B", b);
        println!("A {a:?}, B {b:?}");
        println!("first calls agree: {}", a == b);
        let now = loader::function("cuCtxGetDevice");
        println!("function cuCtxGetDevice {}", class(now));
        println!("function agrees with the first calls: {}", answer(now) == a);
        let count: Count = fake("fake_request_count");
        let request: Request = fake("fake_request");
        let n = (0..unsafe { count() })
            .filter(|&i| {
                let (mut v, mut f) = (0, 0);
                let name = unsafe { CStr::from_ptr(request(i, &mut v, &mut f)) };
                name.to_bytes() == b"cuCtxGetDevice"
            })
            .count();
        println!("lookups of cuCtxGetDevice {n}");
    }

    pub fn run(role: &str) {
        match role {
            "requests" => {
                // Loads the named driver (at start-up already where the runtime is static).
                let _ = loader::driver();
                let count: Count = fake("fake_request_count");
                let request: Request = fake("fake_request");
                let driver_names = cuda_mem_sys::loader_table::NAMES
                    .iter()
                    .filter(|(_, api, _)| *api == loader::Api::Driver);
                for (name, _, slot) in driver_names {
                    let before = unsafe { count() };
                    let _ = loader::function(name);
                    let after = unsafe { count() };
                    for i in before..after {
                        let (mut v, mut f) = (0, 0);
                        let base = unsafe { CStr::from_ptr(request(i, &mut v, &mut f)) };
                        println!("request {slot} {} {v} {f}", base.to_string_lossy());
                    }
                    println!("name {name} {slot}");
                }
            }
            "calls" => unsafe {
                let mut v = 0;
                let r = cuDriverGetVersion(&mut v);
                println!("cuDriverGetVersion {} {v}", r.0);
                println!("cuInit(7) {}", cuInit(7).0);
                println!("cuInit(0) {}", cuInit(0).0);
                let mut d = 0;
                let r = cuCtxGetDevice(&mut d);
                println!("cuCtxGetDevice {} {d}", r.0);
                let loc: CUmemLocation = std::mem::zeroed();
                let a = cuMemAdvise(0, 0, CU_MEM_ADVISE_SET_READ_MOSTLY, loc);
                let b = cuMemAdvise(0, 0, CU_MEM_ADVISE_SET_READ_MOSTLY, loc);
                println!("cuMemAdvise {} {}", a.0, b.0);
                let count: Count = fake("fake_request_count");
                let before = count();
                let r = cuMemPrefetchBatchAsync(
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    0,
                    0,
                    std::ptr::null_mut(),
                );
                println!("cuMemPrefetchBatchAsync {} asked {}", r.0, count() - before);
                for n in [
                    "cuMemPrefetchBatchAsync",
                    "cuMemAdvise",
                    "cuCtxGetDevice",
                    "cuNoSuchFunction",
                ] {
                    println!("function {n} {}", class(loader::function(n)));
                }
                let d = loader::driver();
                println!(
                    "proc_address_v2 {}",
                    d.map(|l| l.proc_address_v2).unwrap_or(false)
                );
                println!("version {:?}", d.ok().and_then(|l| l.version));
            },
            "classify" => {
                match loader::driver() {
                    Ok(l) => println!("driver version {:?}", l.version),
                    Err(e) => println!("no driver: {}", e.message),
                }
                for (name, api, slot) in cuda_mem_sys::loader_table::NAMES {
                    if *api == loader::Api::Driver
                        && cuda_mem_sys::loader_table::DRIVER[*slot].version != 0
                    {
                        let version = cuda_mem_sys::loader_table::DRIVER[*slot].version;
                        println!("class {name} {version} {}", class(loader::function(name)));
                    }
                }
            }
            "answers" => unsafe { answers() },
            "env-changed" => {
                std::env::remove_var("CUDA_MEM_SYS_LIBCUDA");
                report_driver();
            }
            "env-set-late" => {
                std::env::set_var(
                    "CUDA_MEM_SYS_LIBCUDA",
                    std::env::var_os("FAKE_LATE").unwrap(),
                );
                report_driver();
            }
            "reentrant" => unsafe {
                std::env::set_var(
                    "FAKE_CALLBACK",
                    format!("{:x}", callback as *const () as usize),
                );
                let r = cuInit(7);
                let result: Count = fake("fake_callback_result");
                println!("callback cuInit(0) {}", result());
                println!("cuInit(7) {}", r.0);
                println!("cuInit(0) {}", cuInit(0).0);
                println!("function cuInit {}", class(loader::function("cuInit")));
            },
            "fork" => fork_while_loading(),
            "runtime-mode" => {
                runtime_linked();
            }
            "runtime-after-driver" => {
                let _ = loader::driver();
                report("runtime", loader::runtime());
            }
            "lock-order" => lock_order(),
            "low-pointer" => unsafe {
                let mut d = 0;
                println!("cuCtxGetDevice {}", cuCtxGetDevice(&mut d).0);
                let f = loader::function("cuCtxGetDevice");
                println!("function cuCtxGetDevice {}", class(f));
                if loader::driver().is_ok() {
                    println!("driver Ok");
                }
            },
            "fork-runtime" => fork_runtime(),
            "pid-namespace" => pid_namespace(),
            "owner-ends" => owner_ends(),
            "tid-reuse" => tid_reuse(),
            "raw-fork" => raw_fork(),
            "flaky" => flaky(),
            "reentrant-driver" => {
                std::env::set_var(
                    "FAKE_CALLBACK",
                    format!("{:x}", driver_callback as *const () as usize),
                );
                report("first", loader::driver());
                report("after driver", loader::driver());
            }
            "waiters" => wait_while_loading(),
            "runtime-driver" => unsafe {
                if runtime_linked() {
                    return;
                }
                // The runtime's first call, before any of the driver's.
                let mut n = 0;
                let r = cudaGetDeviceCount(&mut n);
                println!("cudaGetDeviceCount {} {n}", r.0);
                let file = CString::new(std::env::var("CUDA_MEM_SYS_LIBCUDART").unwrap()).unwrap();
                let h = libc::dlopen(file.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
                assert!(!h.is_null(), "the fake runtime is not loaded");
                let f = libc::dlsym(h, c"fake_runtime_driver".as_ptr());
                assert!(!f.is_null());
                let f: unsafe extern "C" fn() -> *const c_char = std::mem::transmute(f);
                println!(
                    "the runtime opened {}",
                    CStr::from_ptr(f()).to_string_lossy()
                );
                println!("cuInit(7) {}", cuInit(7).0);
            },
            "runtime-version" => unsafe {
                if runtime_linked() {
                    return;
                }
                let mut n = 0;
                println!("cudaGetDeviceCount {}", cudaGetDeviceCount(&mut n).0);
                match loader::runtime() {
                    Ok(l) => println!("runtime Ok {} {:?}", l.file, l.version),
                    Err(e) => println!("runtime Err {}: {}", e.tried, e.message),
                }
            },
            "runtime-variable" => match loader::runtime() {
                Ok(l) => println!("runtime Ok {} variable {:?}", l.file, l.variable),
                Err(e) => println!("runtime Err variable {:?}", e.variable),
            },
            "secure" => {
                println!(
                    "secure {}",
                    unsafe { libc::getauxval(libc::AT_SECURE) } != 0
                );
                report_driver();
                match loader::runtime() {
                    Ok(l) => println!("runtime variable {:?}", l.variable),
                    Err(e) => println!("runtime variable {:?}", e.variable),
                }
            }
            "bad-driver" => unsafe {
                let a = cuInit(0);
                let b = cuInit(0);
                println!("cuInit {} {}", a.0, b.0);
                println!("function cuInit {}", class(loader::function("cuInit")));
                let loc: CUmemLocation = std::mem::zeroed();
                println!(
                    "cuMemAdvise {}",
                    cuMemAdvise(0, 0, CU_MEM_ADVISE_SET_READ_MOSTLY, loc).0
                );
                report_driver();
            },
            "threads" => {
                let barrier = std::sync::Barrier::new(16);
                let got: Vec<i32> = std::thread::scope(|s| {
                    let hs: Vec<_> = (0..16)
                        .map(|_| {
                            s.spawn(|| {
                                barrier.wait();
                                let mut v = 0;
                                let r = unsafe { cuDriverGetVersion(&mut v) };
                                if r == CUDA_SUCCESS {
                                    v
                                } else {
                                    -(r.0 as i32)
                                }
                            })
                        })
                        .collect();
                    hs.into_iter().map(|h| h.join().unwrap()).collect()
                });
                if got.iter().all(|&v| v == got[0]) {
                    println!("threads {} agree {}", got.len(), got[0]);
                } else {
                    println!("threads disagree {got:?}");
                }
            }
            "no-driver" => unsafe {
                if loader::driver().is_ok() {
                    println!("a driver is installed");
                    return;
                }
                println!("cuInit {}", cuInit(0).0);
                let loc: CUmemLocation = std::mem::zeroed();
                println!(
                    "cuMemAdvise {}",
                    cuMemAdvise(0, 0, CU_MEM_ADVISE_SET_READ_MOSTLY, loc).0
                );
                let mut n = 0;
                let r = cudaGetDeviceCount(&mut n);
                let mode = match loader::runtime() {
                    Ok(l) if l.file == "libcudart_static.a" => "static",
                    _ => "loaded",
                };
                println!("cudaGetDeviceCount {} {mode}", r.0);
            },
            "static-runtime" => unsafe {
                if loader::runtime().map(|l| l.file) != Ok("libcudart_static.a") {
                    println!("runtime loaded");
                    return;
                }
                // What libcudart_static.a's own dlopen("libcuda.so.1") gets,
                // asked before any call of the crate: the start-up preload.
                let soname =
                    libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
                let file = CString::new(std::env::var("CUDA_MEM_SYS_LIBCUDA").unwrap()).unwrap();
                let named = libc::dlopen(file.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
                println!(
                    "libcuda.so.1 at start-up is the named driver: {}",
                    !soname.is_null() && soname == named
                );
            },
            other => {
                eprintln!("unknown role {other}");
                std::process::exit(2);
            }
        }
    }
}

/// Drivers built to break the loader (zombie owners, forced unwinds, re-entry
/// through getenv and lookups, a second libcuda.so.1, refused libraries).
// In `dynamic_loading/`: an inline module of that name finds them by name
// (no path attribute); they see this file's items through it.
mod dynamic_loading {
    use super::*;
    pub(crate) mod hostile_drivers;
    #[cfg(unix)]
    pub(crate) mod nothing_blocks;
    pub(crate) mod public_answers;
}
#[cfg(unix)]
use dynamic_loading::nothing_blocks;
use dynamic_loading::{hostile_drivers, public_answers};

fn main() {
    #[cfg(feature = "dynamic-loading")]
    if let Ok(role) = std::env::var(ROLE) {
        if !hostile_drivers::run_role(&role) && !public_answers::run_role(&role) {
            roles::run(&role);
        }
        return;
    }
    test_support::main(vec![
        #[cfg(unix)]
        (
            "a_named_path_that_is_not_a_regular_file_is_refused_with_its_type",
            nothing_blocks::a_named_path_that_is_not_a_regular_file_is_refused_with_its_type,
        ),
        #[cfg(unix)]
        (
            "a_fifo_named_libcuda_so_1_on_the_library_path_does_not_hold_a_named_driver",
            nothing_blocks::a_fifo_named_libcuda_so_1_on_the_library_path_does_not_hold_a_named_driver,
        ),
        #[cfg(unix)]
        (
            "a_libcuda_so_1_in_another_link_namespace_is_refused_naming_both",
            nothing_blocks::a_libcuda_so_1_in_another_link_namespace_is_refused_naming_both,
        ),
        #[cfg(unix)]
        (
            "a_named_driver_whose_soname_cannot_be_read_is_refused",
            nothing_blocks::a_named_driver_whose_soname_cannot_be_read_is_refused,
        ),
        #[cfg(unix)]
        (
            "a_zombie_owner_is_told_in_a_pid_namespace_with_the_hosts_proc",
            nothing_blocks::a_zombie_owner_is_told_in_a_pid_namespace_with_the_hosts_proc,
        ),
        #[cfg(unix)]
        (
            "the_lookup_bound_holds_with_no_thread_key_left",
            nothing_blocks::the_lookup_bound_holds_with_no_thread_key_left,
        ),
        (
            "a_zombie_main_thread_that_was_loading_gives_303_not_a_hang",
            hostile_drivers::a_zombie_main_thread_that_was_loading_gives_303_not_a_hang,
        ),
        (
            "a_forced_unwind_in_the_constructor_is_told_as_the_thread_ending",
            hostile_drivers::a_forced_unwind_in_the_constructor_is_told_as_the_thread_ending,
        ),
        (
            "a_getenv_calling_back_while_the_environment_is_read_leaves_no_failed_load",
            hostile_drivers::a_getenv_calling_back_while_the_environment_is_read_leaves_no_failed_load,
        ),
        (
            "a_named_driver_beside_another_loaded_libcuda_so_1_is_refused_naming_both",
            hostile_drivers::a_named_driver_beside_another_loaded_libcuda_so_1_is_refused_naming_both,
        ),
        (
            "a_lookup_calling_back_every_time_is_bounded_not_a_stack_overflow",
            hostile_drivers::a_lookup_calling_back_every_time_is_bounded_not_a_stack_overflow,
        ),
        (
            "a_refused_library_stays_loaded_its_signal_handler_runs",
            hostile_drivers::a_refused_library_stays_loaded_its_signal_handler_runs,
        ),
        (
            "the_exported_cudrivergetversion_answer_is_kept",
            hostile_drivers::the_exported_cudrivergetversion_answer_is_kept,
        ),
        (
            "function_and_load_all_answer_what_was_loaded",
            public_answers::function_and_load_all_answer_what_was_loaded,
        ),
        (
            "a_missing_runtimes_error_string_is_the_loaders_sentence",
            public_answers::a_missing_runtimes_error_string_is_the_loaders_sentence,
        ),
        (
            "a_version_lookup_below_its_introduction_falls_back_to_the_export",
            public_answers::a_version_lookup_below_its_introduction_falls_back_to_the_export,
        ),
        (
            "a_failed_version_call_is_no_answer_though_it_wrote_one",
            public_answers::a_failed_version_call_is_no_answer_though_it_wrote_one,
        ),
        (
            "a_function_below_its_introduction_stays_unavailable_when_asked_again",
            public_answers::a_function_below_its_introduction_stays_unavailable_when_asked_again,
        ),
        (
            "a_loaded_binary_needs_no_cuda_library",
            a_loaded_binary_needs_no_cuda_library,
        ),
        (
            "the_loader_asks_for_the_versions_c_implies",
            the_loader_asks_for_the_versions_c_implies,
        ),
        (
            "answered_functions_are_called_and_the_rest_return_documented_codes",
            answered_functions_are_called_and_the_rest_return_documented_codes,
        ),
        (
            "bad_library_files_return_shared_object_init_failed",
            bad_library_files_return_shared_object_init_failed,
        ),
        (
            "concurrent_first_calls_resolve_once_and_agree",
            concurrent_first_calls_resolve_once_and_agree,
        ),
        (
            "without_a_driver_every_call_returns_the_documented_code",
            without_a_driver_every_call_returns_the_documented_code,
        ),
        (
            "the_static_runtime_uses_the_named_driver",
            the_static_runtime_uses_the_named_driver,
        ),
        (
            "the_fake_driver_answers_as_nvidias_does",
            the_fake_driver_answers_as_nvidias_does,
        ),
        (
            "the_installed_driver_answers_as_the_fake_does",
            the_installed_driver_answers_as_the_fake_does,
        ),
        (
            "the_installed_driver_tells_too_old_from_missing",
            the_installed_driver_tells_too_old_from_missing,
        ),
        (
            "no_table_version_is_below_its_functions_introduction",
            no_table_version_is_below_its_functions_introduction,
        ),
        (
            "the_environment_is_read_at_program_start",
            the_environment_is_read_at_program_start,
        ),
        (
            "a_value_too_long_or_naming_nothing_is_303_naming_the_variable",
            a_value_too_long_or_naming_nothing_is_303_naming_the_variable,
        ),
        (
            "a_call_back_into_the_crate_while_loading_returns_303_at_once",
            a_call_back_into_the_crate_while_loading_returns_303_at_once,
        ),
        (
            "a_child_forked_while_another_thread_loads_does_not_hang",
            a_child_forked_while_another_thread_loads_does_not_hang,
        ),
        (
            "threads_waiting_for_a_load_do_not_burn_the_cpu",
            threads_waiting_for_a_load_do_not_burn_the_cpu,
        ),
        (
            "the_driver_and_runtime_loads_never_wait_on_each_other",
            the_driver_and_runtime_loads_never_wait_on_each_other,
        ),
        (
            "a_child_forked_while_the_driver_loads_gets_303_from_the_runtime",
            a_child_forked_while_the_driver_loads_gets_303_from_the_runtime,
        ),
        (
            "a_load_whose_thread_ended_gives_303_not_a_hang",
            a_load_whose_thread_ended_gives_303_not_a_hang,
        ),
        (
            "a_thread_reusing_a_dead_owners_id_is_not_told_reentrant",
            a_thread_reusing_a_dead_owners_id_is_not_told_reentrant,
        ),
        (
            "a_child_made_without_fork_handlers_gets_303_not_a_hang",
            a_child_made_without_fork_handlers_gets_303_not_a_hang,
        ),
        (
            "a_second_differing_lookup_cannot_replace_a_resolved_function",
            a_second_differing_lookup_cannot_replace_a_resolved_function,
        ),
        (
            "a_pid_1_child_in_a_new_pid_namespace_does_not_hang",
            a_pid_1_child_in_a_new_pid_namespace_does_not_hang,
        ),
        (
            "driver_says_what_it_tries_while_it_cannot_be_waited_for",
            driver_says_what_it_tries_while_it_cannot_be_waited_for,
        ),
        (
            "a_missing_path_that_is_not_utf8_keeps_its_reason",
            a_missing_path_that_is_not_utf8_keeps_its_reason,
        ),
        (
            "a_function_address_below_4096_is_not_found",
            a_function_address_below_4096_is_not_found,
        ),
        (
            "the_toolkits_stub_library_is_told_and_every_call_returns_34",
            the_toolkits_stub_library_is_told_and_every_call_returns_34,
        ),
        (
            "a_driver_without_soname_libcuda_so_1_is_refused",
            a_driver_without_soname_libcuda_so_1_is_refused,
        ),
        (
            "the_loaded_runtime_uses_the_named_driver",
            the_loaded_runtime_uses_the_named_driver,
        ),
        (
            "a_runtime_of_another_major_is_refused",
            a_runtime_of_another_major_is_refused,
        ),
        (
            "a_secure_process_ignores_the_variables",
            a_secure_process_ignores_the_variables,
        ),
        (
            "a_broken_libcuda_so_1_is_reported_with_its_own_reason",
            a_broken_libcuda_so_1_is_reported_with_its_own_reason,
        ),
        (
            "the_static_runtime_reports_its_variable_not_used",
            the_static_runtime_reports_its_variable_not_used,
        ),
        (
            "a_later_file_that_exists_and_failed_leads_the_message",
            a_later_file_that_exists_and_failed_leads_the_message,
        ),
        (
            "each_of_the_stubs_answers_alone_tells_the_stub",
            each_of_the_stubs_answers_alone_tells_the_stub,
        ),
        (
            "a_value_too_long_names_the_loaders_limit",
            a_value_too_long_names_the_loaders_limit,
        ),
        (
            "a_named_driver_that_did_not_load_keeps_the_runtime_out",
            a_named_driver_that_did_not_load_keeps_the_runtime_out,
        ),
    ]);
}
