//! Which `cuMemAlloc_v2` a C library reaches when a Rust `cdylib` built on
//! the crate with `dynamic-loading` is in the process. The crate defines a
//! trampoline for every symbol the declarations link; exported under the C
//! names (the opt-in feature `export-c-names`), a cdylib exports them all,
//! and the dynamic linker may bind another library's `cuMemAlloc_v2` to the
//! cdylib's trampoline instead of `libcuda`'s function.
//!
//! The pieces, built here: the fake driver (`abi-proofs/tests/fixtures/fake_libcuda.c`
//! as `libcuda.so.1`: its own `cuMemAlloc_v2` writes `0x1111`, the one its
//! `cuGetProcAddress` hands a loader writes `0x2222`), a C library
//! `libcaller.so` that calls `cuMemAlloc_v2` and links `libcuda`, a cdylib
//! `libprobe.so` on the crate (cargo, no CUDA: the committed bindings), and
//! three C programs:
//!
//! - `links-libcuda`: links `libcuda`, `dlopen`s the cdylib `RTLD_GLOBAL`,
//!   then `libcaller.so`;
//! - `no-libcuda`: the same without linking `libcuda` (an interpreter
//!   loading extension modules);
//! - `links-cdylib`: links the cdylib, `libcuda` and `libcaller.so` (a C
//!   program using a Rust library).
//!
//! Linux (ELF) only.

use libtest_mimic::{Completion, Failed};
use std::path::{Path, PathBuf};
use std::process::Command;

fn cannot_run() -> Option<Completion> {
    if !cfg!(target_os = "linux") {
        return Some(Completion::ignored_with(
            "ELF symbol binding: Linux only (the crate exports names likewise on other targets)",
        ));
    }
    let (target, host) = (test_support::TARGET, test_support::HOST);
    if target != host {
        return Some(Completion::ignored_with(
            "builds a cdylib with cargo for the host: not a cross build",
        ));
    }
    None
}

fn cc(args: &[&str], dir: &Path) -> Result<(), Failed> {
    let out = Command::new("cc")
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cc: {e}"))?;
    test_support::succeeded(out, format_args!("cc {args:?}"))?;
    Ok(())
}

const MAIN_C: &str = r#"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
typedef int (*alloc_fn)(unsigned long long *);
int main(int argc, char **argv) {
    const char *scenario = argv[1];
    alloc_fn caller, rust;
#ifdef LINKS_CDYLIB
    extern int caller_alloc(unsigned long long *);
    extern int probe_rust_alloc(unsigned long long *);
    caller = caller_alloc;
    rust = probe_rust_alloc;
#else
    void *probe = dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL);
    if (!probe) { printf("dlopen %s: %s\n", argv[2], dlerror()); return 1; }
    void *lib = dlopen(argv[3], RTLD_NOW | RTLD_LOCAL);
    if (!lib) { printf("dlopen %s: %s\n", argv[3], dlerror()); return 1; }
    caller = (alloc_fn)dlsym(lib, "caller_alloc");
    rust = (alloc_fn)dlsym(probe, "probe_rust_alloc");
    if (!caller || !rust) { printf("dlsym failed\n"); return 1; }
#endif
    unsigned long long p = 0;
    int r = caller(&p);
    printf("%s: C library's cuMemAlloc_v2 returned %d, wrote 0x%llx\n", scenario, r, p);
    p = 0;
    r = rust(&p);
    printf("%s: the cdylib's Rust call returned %d, wrote 0x%llx\n", scenario, r, p);
    return 0;
}
"#;

const CALLER_C: &str = "int cuMemAlloc_v2(unsigned long long *dptr, unsigned long bytes);\n\
    int caller_alloc(unsigned long long *p) { return cuMemAlloc_v2(p, 1); }\n";

const PROBE_RS: &str = "#[no_mangle]\n\
    pub extern \"C\" fn probe_rust_alloc(p: *mut u64) -> i32 {\n\
    \x20   unsafe { cuda_mem_sys::cuMemAlloc_v2(p, 1).0 as i32 }\n}\n";

/// The cdylib on the crate with `features`, built by cargo in a target folder
/// of its own for those features (kept between runs, as
/// `tests/build_errors.rs` does; the two tests run in parallel); its path.
fn cdylib(features: &str) -> Result<PathBuf, Failed> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let base = manifest
        .join("target/exported-c-names")
        .join(features.replace(',', "-"));
    let project = base.join("probe");
    std::fs::create_dir_all(&project).map_err(|e| e.to_string())?;
    let toml = format!(
        "[package]\nname = \"probe\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\
         [lib]\ncrate-type = [\"cdylib\"]\npath = \"lib.rs\"\n\
         [dependencies]\ncuda-mem-sys = {{ path = {:?}, default-features = false, features = [{}] }}\n\
         [workspace]\n",
        manifest.display().to_string(),
        features
            .split(',')
            .map(|f| format!("{f:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    std::fs::write(project.join("Cargo.toml"), toml).map_err(|e| e.to_string())?;
    std::fs::write(project.join("lib.rs"), PROBE_RS).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(&project)
        .args(["build", "--quiet", "--offline"])
        .env("CARGO_TARGET_DIR", base.join("target"));
    for var in test_support::ROOT_VARS
        .iter()
        .chain(&["CUDA_MEM_SYS_LIB_DIR"])
    {
        cmd.env_remove(var);
    }
    let out = cmd.output().map_err(|e| format!("cargo: {e}"))?;
    test_support::succeeded(out, format_args!("building the cdylib ({features})"))?;
    Ok(base.join("target/debug/libprobe.so"))
}

/// The `cu*` names a shared library exports (`nm -D --defined-only`).
fn exported_cuda_names(lib: &Path) -> Result<Vec<String>, Failed> {
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(lib)
        .output()
        .map_err(|e| format!("nm: {e}"))?;
    if !out.status.success() {
        return Err(format!("nm -D {} failed", lib.display()).into());
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|n| n.starts_with("cu"))
        .map(str::to_string)
        .collect())
}

/// Builds the C pieces around the cdylib with `features` and runs the three
/// programs; their output, and the cdylib's exported `cu*` names.
fn run_programs(features: &str, env: &[(&str, &str)]) -> Result<(String, Vec<String>), Failed> {
    let probe = cdylib(features)?;
    let scratch = test_support::scratch("exported-c-names");
    let dir = scratch.path();
    let d = |f: &str| dir.join(f).display().to_string();
    let fake =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("abi-proofs/tests/fixtures/fake_libcuda.c");
    std::fs::copy(&probe, dir.join("libprobe.so")).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("main.c"), MAIN_C).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("caller.c"), CALLER_C).map_err(|e| e.to_string())?;
    cc(
        &[
            "-shared",
            "-fPIC",
            "-w",
            "-Wl,-soname,libcuda.so.1",
            "-o",
            "libcuda.so.1",
            &fake.display().to_string(),
        ],
        dir,
    )?;
    #[cfg(unix)]
    std::os::unix::fs::symlink("libcuda.so.1", dir.join("libcuda.so"))
        .map_err(|e| e.to_string())?;
    let rpath = "-Wl,-rpath,$ORIGIN,--disable-new-dtags";
    cc(
        &[
            "-shared",
            "-fPIC",
            "-o",
            "libcaller.so",
            "caller.c",
            "-L.",
            "-lcuda",
            rpath,
        ],
        dir,
    )?;
    cc(
        &[
            "-o",
            "links-libcuda",
            "main.c",
            "-L.",
            "-Wl,--no-as-needed",
            "-lcuda",
            "-ldl",
            rpath,
        ],
        dir,
    )?;
    cc(&["-o", "no-libcuda", "main.c", "-ldl", rpath], dir)?;
    cc(
        &[
            "-DLINKS_CDYLIB",
            "-o",
            "links-cdylib",
            "main.c",
            "-L.",
            "-Wl,--no-as-needed",
            "-lprobe",
            "-lcuda",
            "-lcaller",
            "-ldl",
            rpath,
        ],
        dir,
    )?;
    let mut text = String::new();
    for program in ["links-libcuda", "no-libcuda", "links-cdylib"] {
        let mut cmd = Command::new(dir.join(program));
        cmd.args([program, &d("libprobe.so"), &d("libcaller.so")])
            .env_remove("CUDA_MEM_SYS_LIBCUDA")
            .env_remove("LD_LIBRARY_PATH");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().map_err(|e| format!("{program}: {e}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(format!("{program} failed ({}):\n{stdout}", out.status).into());
        }
        text.push_str(&stdout);
    }
    Ok((text, exported_cuda_names(&dir.join("libprobe.so"))?))
}

fn expect(out: &str, lines: &[&str]) -> Result<(), Failed> {
    for l in lines {
        if !out.lines().any(|o| o == *l) {
            return Err(format!("expected the line {l:?} in:\n{out}").into());
        }
    }
    Ok(())
}

const DIRECT: &str = "returned 0, wrote 0x1111";
const LOADER: &str = "returned 0, wrote 0x2222";

fn by_default_a_cdylib_exports_no_cuda_name_and_other_libraries_reach_libcuda(
) -> Result<Completion, Failed> {
    if let Some(c) = cannot_run() {
        return Ok(c);
    }
    let (out, names) = run_programs("dynamic-loading", &[])?;
    print!("{out}");
    if !names.is_empty() {
        return Err(format!(
            "the cdylib exports {} CUDA names ({}, ...)",
            names.len(),
            names[..names.len().min(5)].join(", ")
        )
        .into());
    }
    let mut lines = vec![];
    for s in ["links-libcuda", "no-libcuda", "links-cdylib"] {
        lines.push(format!("{s}: C library's cuMemAlloc_v2 {DIRECT}"));
        // Rust code still calls through the loader, inlined.
        lines.push(format!("{s}: the cdylib's Rust call {LOADER}"));
    }
    expect(&out, &lines.iter().map(String::as_str).collect::<Vec<_>>())?;
    println!("the cdylib exports no cu* name; every C library's cuMemAlloc_v2 reached libcuda's");
    Ok(Completion::Completed)
}

fn with_export_c_names_a_cdylib_takes_over_other_libraries_cuda_calls() -> Result<Completion, Failed>
{
    if let Some(c) = cannot_run() {
        return Ok(c);
    }
    let (out, names) = run_programs("dynamic-loading,export-c-names", &[])?;
    print!("{out}");
    if !names.iter().any(|n| n == "cuMemAlloc_v2") {
        return Err(format!(
            "the cdylib does not export cuMemAlloc_v2 ({} cu* names)",
            names.len()
        )
        .into());
    }
    println!("the cdylib exports {} cu* names", names.len());
    expect(
        &out,
        &[
            // libcuda is in the global scope before the cdylib: its own function.
            &format!("links-libcuda: C library's cuMemAlloc_v2 {DIRECT}"),
            // The cdylib comes first: the trampoline, which asks the driver
            // through cuGetProcAddress.
            &format!("no-libcuda: C library's cuMemAlloc_v2 {LOADER}"),
            &format!("links-cdylib: C library's cuMemAlloc_v2 {LOADER}"),
            // Both ways: the cdylib's own first call goes to its trampoline by
            // that exported name, which libcuda, earlier in the global scope,
            // takes over: the loader is bypassed.
            &format!("links-libcuda: the cdylib's Rust call {DIRECT}"),
        ],
    )?;
    // The trampoline is the crate's loader: a driver it cannot load (the
    // variable naming a missing file) fails the C library's call with 303,
    // though the C library's own libcuda is loaded and works.
    let (out, _) = run_programs(
        "dynamic-loading,export-c-names",
        &[("CUDA_MEM_SYS_LIBCUDA", "/nonexistent/libcuda.so.1")],
    )?;
    print!("{out}");
    expect(
        &out,
        &[
            &format!("links-libcuda: C library's cuMemAlloc_v2 {DIRECT}"),
            "no-libcuda: C library's cuMemAlloc_v2 returned 303, wrote 0x0",
            "links-cdylib: C library's cuMemAlloc_v2 returned 303, wrote 0x0",
            // The cdylib's own call ignores the driver it was told to load.
            &format!("links-libcuda: the cdylib's Rust call {DIRECT}"),
        ],
    )?;
    Ok(Completion::Completed)
}

fn main() {
    test_support::main(test_support::checks![
        by_default_a_cdylib_exports_no_cuda_name_and_other_libraries_reach_libcuda,
        with_export_c_names_a_cdylib_takes_over_other_libraries_cuda_calls,
    ]);
}
