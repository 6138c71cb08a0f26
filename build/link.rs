//! Link directives: `libcuda` dynamically; `libcudart` statically (what nvcc
//! does) or, with the `dynamic-cudart` feature, dynamically. With
//! `dynamic-loading`, nothing CUDA is linked but `libcudart_static.a` where
//! it is found (and `dynamic-cudart` is off): the rest is loaded at run time.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `CUDA_ERROR_STUB_LIBRARY` / `cudaErrorStubLibrary`: what NVIDIA's stubs return.
const STUB_LIBRARY_ERROR: i32 = 34;

/// Places the system linker searches anyway; checked so that a driver
/// installed there is used rather than a stub.
const SYSTEM_LIB_DIRS: [&str; 5] = [
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/nvidia/lib64",
];

pub struct Plan<'a> {
    pub lib_dirs: &'a [PathBuf],
    pub dynamic_cudart: bool,
    pub out_dir: &'a Path,
    /// Driver and runtime symbols the bindings reference, for stubs.
    pub driver_symbols: &'a [String],
    pub runtime_symbols: &'a [String],
    pub runtime_soname_major: u32,
    /// `dynamic-loading`: load the driver (and a shared runtime) at run time.
    pub dynamic_loading: bool,
}

/// What the build links, for the cfgs `build.rs` sets.
pub struct Linked {
    /// The runtime is loaded at run time (`cuda_mem_sys_load_runtime`).
    pub runtime_loaded: bool,
}

fn find_in(dirs: &[PathBuf], file: &str) -> Option<PathBuf> {
    dirs.iter().find(|d| d.join(file).is_file()).cloned()
}

pub fn emit(plan: &Plan) -> Result<Linked, String> {
    if plan.dynamic_loading {
        return emit_loaded(plan);
    }
    let system: Vec<PathBuf> = SYSTEM_LIB_DIRS.iter().map(PathBuf::from).collect();

    // libcuda: the driver, the toolkit's stubs, or a stub made here.
    let libcuda = find_in(plan.lib_dirs, "libcuda.so").or_else(|| find_in(&system, "libcuda.so"));
    match libcuda {
        Some(dir) => println!("cargo:rustc-link-search=native={}", dir.display()),
        None => {
            let dir = stub(plan.out_dir, "cuda", 1, plan.driver_symbols)?;
            println!(
                "cargo:warning=no libcuda.so in {}: linked against a stub made in {} whose entry \
                 points return CUDA_ERROR_STUB_LIBRARY; programs load the driver's libcuda.so.1 at \
                 run time. Set CUDA_MEM_SYS_LIB_DIR to link a real one.",
                describe(plan.lib_dirs),
                dir.display()
            );
            println!("cargo:rustc-link-search=native={}", dir.display());
        }
    }
    println!("cargo:rustc-link-lib=dylib=cuda");

    // libcudart: static unless asked otherwise.
    let soname = format!("libcudart.so.{}", plan.runtime_soname_major);
    if !plan.dynamic_cudart {
        if let Some(dir) = find_in(plan.lib_dirs, "libcudart_static.a") {
            println!("cargo:rustc-link-search=native={}", dir.display());
            println!("cargo:rustc-link-lib=static=cudart_static");
            static_runtime_system_libs();
            return Ok(Linked {
                runtime_loaded: false,
            });
        }
    }
    let dir = match find_in(plan.lib_dirs, &soname) {
        Some(dir) => {
            if !plan.dynamic_cudart {
                println!(
                    "cargo:warning=no libcudart_static.a next to these headers (the 12.x wheels \
                     ship none): linked {soname} dynamically; it must be on the loader's path at run time"
                );
            }
            dir
        }
        None => {
            let dir = stub(
                plan.out_dir,
                "cudart",
                plan.runtime_soname_major,
                plan.runtime_symbols,
            )?;
            println!(
                "cargo:warning=no libcudart_static.a or {soname} in {}: linked against a stub made \
                 in {} whose entry points return cudaErrorStubLibrary. Set CUDA_MEM_SYS_LIB_DIR, or \
                 use `cargo xtask headers <version>`, which brings libcudart too.",
                describe(plan.lib_dirs),
                dir.display()
            );
            dir
        }
    };
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=dylib:+verbatim={soname}");
    Ok(Linked {
        runtime_loaded: false,
    })
}

/// What `libcudart_static.a` needs from the system.
fn static_runtime_system_libs() {
    for lib in ["dl", "rt", "pthread"] {
        println!("cargo:rustc-link-lib=dylib={lib}");
    }
}

/// `dynamic-loading`: no libcuda, no stub; the static runtime where found.
fn emit_loaded(plan: &Plan) -> Result<Linked, String> {
    // dlopen/dlsym (in libc itself from glibc 2.34; libdl before).
    println!("cargo:rustc-link-lib=dylib=dl");
    if !plan.dynamic_cudart {
        if let Some(dir) = find_in(plan.lib_dirs, "libcudart_static.a") {
            println!("cargo:rustc-link-search=native={}", dir.display());
            println!("cargo:rustc-link-lib=static=cudart_static");
            static_runtime_system_libs();
            return Ok(Linked {
                runtime_loaded: false,
            });
        }
        println!(
            "cargo:warning=dynamic-loading: no libcudart_static.a in {}: the runtime is loaded at              run time (libcudart.so.{}, or the file named by CUDA_MEM_SYS_LIBCUDART)",
            describe(plan.lib_dirs),
            plan.runtime_soname_major
        );
    }
    Ok(Linked {
        runtime_loaded: true,
    })
}

fn describe(dirs: &[PathBuf]) -> String {
    if dirs.is_empty() {
        return "(no CUDA library folder found)".into();
    }
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A shared library exporting every given symbol as a function returning the
/// stub-library error, the same contract as the toolkit's `stubs/libcuda.so`.
fn stub(out_dir: &Path, name: &str, major: u32, symbols: &[String]) -> Result<PathBuf, String> {
    let dir = out_dir.join("stubs");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut src = String::from("/* generated by cuda-mem-sys's build script */\n");
    for s in symbols {
        src.push_str(&format!(
            "int {s}(void) {{ return {STUB_LIBRARY_ERROR}; }}\n"
        ));
    }
    let c = dir.join(format!("lib{name}_stub.c"));
    std::fs::write(&c, src).map_err(|e| e.to_string())?;
    let soname = format!("lib{name}.so.{major}");
    let compiler = cc::Build::new()
        .cargo_metadata(false)
        .try_get_compiler()
        .map_err(|e| e.to_string())?;
    let status = Command::new(compiler.path())
        .args(["-shared", "-fPIC", "-O0", "-w", "-o"])
        .arg(dir.join(&soname))
        .arg(format!("-Wl,-soname,{soname}"))
        .arg(&c)
        .status()
        .map_err(|e| format!("running {}: {e}", compiler.path().display()))?;
    if !status.success() {
        return Err(format!("compiling the {name} stub library failed"));
    }
    let _ = std::fs::remove_file(dir.join(format!("lib{name}.so")));
    std::fs::copy(dir.join(&soname), dir.join(format!("lib{name}.so")))
        .map_err(|e| e.to_string())?;
    Ok(dir)
}
