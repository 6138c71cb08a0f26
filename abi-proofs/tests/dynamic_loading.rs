//! Run-time loading (`--features dynamic-loading`), proven without a GPU:
//! the binary needs no CUDA library; the loader asks a fake driver (built
//! here from `tests/fixtures/fake_libcuda.c`) for exactly the (base name, ABI
//! version, flags) that C's types imply; answered functions are called
//! through; everything else returns the documented code; bad library files
//! and concurrent first calls neither crash nor panic. Each case runs in a
//! child process, since a process loads its driver once.
// The ABI tests' C harness, shared with the crate's tests/build_errors.rs.
#[path = "../../tests/abi_support/mod.rs"]
mod abi_support;

use libtest_mimic::{Completion, Failed};
use std::path::{Path, PathBuf};
use std::process::Command;

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
    let target = env!("CUDA_MEM_SYS_TARGET");
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
) -> Result<(abi_support::Scratch, PathBuf), Failed> {
    let dir = abi_support::scratch(name);
    let lib = dir.path().join("libcuda.so.1");
    let status = cc()
        .args(["-shared", "-fPIC", "-w", "-Wl,-soname,libcuda.so.1", "-o"])
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

fn fake_driver(defines: &[&str]) -> Result<(abi_support::Scratch, PathBuf), Failed> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_libcuda.c");
    shared_library("fake-driver", &src, defines)
}

/// Runs this binary as `role` with `CUDA_MEM_SYS_LIBCUDA` set to `driver`
/// (or unset); returns its stdout, failing if it did not exit 0.
fn child(role: &str, driver: Option<&Path>) -> Result<String, Failed> {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.env(ROLE, role);
    match driver {
        Some(d) => cmd.env("CUDA_MEM_SYS_LIBCUDA", d),
        None => cmd.env_remove("CUDA_MEM_SYS_LIBCUDA"),
    };
    let out = cmd.output().map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!(
            "child {role} exited with {}:\n{stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(stdout)
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
    let out = child("requests", Some(driver))?;
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

/// For each (documented name, base, version): does a `PFN_<base>_v<version>`
/// typedef (plain, `_ptds` or `_ptsz`) have the type C gives `&name`?
/// Returns the names for which none does.
fn c_disagrees(table: &[(String, String, u32)]) -> Result<Result<Vec<String>, String>, Failed> {
    let dirs = match abi_support::include_dirs() {
        Ok(d) => d,
        Err(reason) => return Ok(Err(reason)),
    };
    let dir = abi_support::scratch("loading-typedefs");
    let head = "#include <cuda.h>\n#include <cudaTypedefs.h>\n";
    let tu = dir.path().join("typedefs.c");
    std::fs::write(&tu, head).unwrap();
    let text = abi_support::c_compiler(&dirs)
        .file(&tu)
        .try_expand()
        .map_err(|e| format!("preprocessing cudaTypedefs.h: {e}"))?;
    let text = String::from_utf8_lossy(&text);
    let typedefs: std::collections::BTreeSet<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("PFN_"))
        .collect();
    let mut disagree = vec![];
    let mut src = String::from(head);
    for (name, base, version) in table {
        let fits: Vec<String> = ["", "_ptds", "_ptsz"]
            .iter()
            .map(|s| format!("PFN_{base}_v{version}{s}"))
            .filter(|t| typedefs.contains(t.as_str()))
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
    let out = abi_support::c_compiler(&dirs)
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
    let (_a, driver) = fake_driver(&[])?;
    let out = child("calls", Some(&driver))?;
    print!("{out}");
    expect_lines(
        &out,
        &[
            "cuDriverGetVersion 0 4242",
            "cuInit(7) 0",
            "cuInit(0) 1",
            "cuCtxGetDevice 0 77",
            "cuMemAdvise 500 500",
            "cuMemPrefetchBatchAsync 500",
            "function cuMemPrefetchBatchAsync Err(DriverTooOld)",
            "function cuMemAdvise Err(NotFound)",
            "function cuNoSuchFunction Err(UnknownName)",
            "proc_address_v2 true",
        ],
    )?;
    // A driver with only the old cuGetProcAddress cannot tell "too old".
    let (_b, old_driver) = fake_driver(&["-DFAKE_V1_ONLY"])?;
    let out = child("calls", Some(&old_driver))?;
    expect_lines(
        &out,
        &[
            "cuDriverGetVersion 0 4242",
            "function cuMemPrefetchBatchAsync Err(NotFound)",
            "proc_address_v2 false",
        ],
    )?;
    Ok(Completion::Completed)
}

fn bad_library_files_return_shared_object_init_failed() -> Result<Completion, Failed> {
    if let Some(c) = needs_feature() {
        return Ok(c);
    }
    let dir = abi_support::scratch("bad-drivers");
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
    expect_lines(&out, &["threads 16 agree 4242"])?;
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

#[cfg(feature = "dynamic-loading")]
mod roles {
    use cuda_mem_sys::loader;
    use cuda_mem_sys::*;
    use std::ffi::{c_char, c_int, c_ulonglong, CStr, CString};

    type Count = unsafe extern "C" fn() -> c_int;
    type Request = unsafe extern "C" fn(c_int, *mut c_int, *mut c_ulonglong) -> *const c_char;

    /// A function of the fake driver, from the already loaded library.
    fn fake<T: Copy>(name: &str) -> T {
        let file = CString::new(std::env::var("CUDA_MEM_SYS_LIBCUDA").unwrap()).unwrap();
        let h = unsafe { libc::dlopen(file.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        assert!(!h.is_null(), "the fake driver is not loaded");
        let name = CString::new(name).unwrap();
        let p = unsafe { libc::dlsym(h, name.as_ptr()) };
        assert!(!p.is_null());
        unsafe { std::mem::transmute_copy(&p) }
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
                println!("cuMemPrefetchBatchAsync {}", r.0);
                for n in ["cuMemPrefetchBatchAsync", "cuMemAdvise", "cuNoSuchFunction"] {
                    println!("function {n} {:?}", loader::function(n).map(|_| ()));
                }
                println!(
                    "proc_address_v2 {}",
                    loader::driver().map(|l| l.proc_address_v2).unwrap_or(false)
                );
            },
            "bad-driver" => unsafe {
                let a = cuInit(0);
                let b = cuInit(0);
                println!("cuInit {} {}", a.0, b.0);
                let loc: CUmemLocation = std::mem::zeroed();
                println!(
                    "cuMemAdvise {}",
                    cuMemAdvise(0, 0, CU_MEM_ADVISE_SET_READ_MOSTLY, loc).0
                );
                match loader::driver() {
                    Ok(l) => println!("driver Ok {}", l.file),
                    Err(e) => println!("driver Err {}: {}", e.tried, e.message),
                }
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

fn main() {
    #[cfg(feature = "dynamic-loading")]
    if let Ok(role) = std::env::var(ROLE) {
        roles::run(&role);
        return;
    }
    abi_support::main(vec![
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
    ]);
}
