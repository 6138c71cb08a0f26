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
    /// The target's C compiler (for stubs).
    pub cc: &'a cc::Build,
    /// Driver and runtime symbols the bindings reference, for stubs.
    pub driver_symbols: &'a [String],
    pub runtime_symbols: &'a [String],
    pub runtime_soname_major: u32,
    /// `dynamic-loading`: load the driver (and a shared runtime) at run time.
    pub dynamic_loading: bool,
    /// The target's `CARGO_CFG_TARGET_OS` and `_ENV` (as `Config` read them).
    pub target_os: &'a str,
    pub target_env: &'a str,
    /// `CARGO_CFG_TARGET_ARCH` (Windows on Arm's import libraries lie in `lib\arm64`).
    pub target_arch: &'a str,
}

/// What the build links, for the cfgs `build/main.rs` sets.
pub struct Linked {
    /// The runtime is loaded at run time (`cuda_mem_sys_load_runtime`).
    pub runtime_loaded: bool,
}

/// The stub libraries being compiled ([`emit`]); [`Stubs::wait`] finishes them.
#[must_use = "the stubs must be waited for"]
pub struct Stubs(Vec<Stub>);

impl Stubs {
    /// Waits for each stub's compiler; an error if one failed.
    pub fn wait(self) -> Result<(), String> {
        for s in self.0 {
            s.wait()?;
        }
        Ok(())
    }
}

fn find_in(dirs: &[PathBuf], file: &str) -> Option<PathBuf> {
    dirs.iter().find(|d| d.join(file).is_file()).cloned()
}

/// The link directives, and the stub libraries it makes, their compilers
/// started: they compile side by side, and beside what the build script does
/// next, until [`Stubs::wait`].
pub fn emit(plan: &Plan) -> Result<(Linked, Stubs), String> {
    if plan.dynamic_loading {
        return Ok((emit_loaded(plan)?, Stubs(vec![])));
    }
    if plan.target_os == "windows" {
        emit_windows(plan)?;
        let linked = Linked {
            runtime_loaded: false,
        };
        return Ok((linked, Stubs(vec![])));
    }
    let mut stubs = vec![];
    match emit_linux(plan, &mut stubs) {
        Ok(linked) => Ok((linked, Stubs(stubs))),
        Err(e) => {
            // No compiler left running behind the error.
            let _ = Stubs(stubs).wait();
            Err(e)
        }
    }
}

/// Linux (and every target but Windows): libcuda, libcudart, the stubs
/// started in `stubs`.
fn emit_linux(plan: &Plan, stubs: &mut Vec<Stub>) -> Result<Linked, String> {
    let system: Vec<PathBuf> = SYSTEM_LIB_DIRS.iter().map(PathBuf::from).collect();

    // libcuda: the driver, the toolkit's stubs, or a stub made here.
    let libcuda = find_in(plan.lib_dirs, "libcuda.so").or_else(|| find_in(&system, "libcuda.so"));
    match libcuda {
        Some(dir) => println!("cargo:rustc-link-search=native={}", dir.display()),
        None => {
            stubs.push(stub(plan.out_dir, plan.cc, "cuda", 1, plan.driver_symbols)?);
            let dir = &stubs[stubs.len() - 1].dir;
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
            stubs.push(stub(
                plan.out_dir,
                plan.cc,
                "cudart",
                plan.runtime_soname_major,
                plan.runtime_symbols,
            )?);
            let dir = stubs[stubs.len() - 1].dir.clone();
            println!(
                "cargo:warning=no libcudart_static.a or {soname} in {}: linked against a stub made \
                 in {} whose entry points return cudaErrorStubLibrary. Set CUDA_MEM_SYS_LIB_DIR to \
                 the folder holding libcudart (a toolkit's lib64/, or the runtime wheel's lib/ \
                 beside its include/, e.g. …/site-packages/nvidia/cu13/lib).",
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
    // dlopen/dlsym (in libc itself from glibc 2.34; libdl before); Windows:
    // LoadLibraryW from kernel32, which every program links.
    let windows = plan.target_os == "windows";
    if !windows {
        println!("cargo:rustc-link-lib=dylib=dl");
    }
    // The static runtime: `libcudart_static.a` on Linux, `cudart_static.lib`
    // for MSVC; MinGW cannot link NVIDIA's MSVC archive, so it loads the DLL.
    let msvc = plan.target_env == "msvc";
    let (archive, dll) = if windows {
        (
            msvc.then_some("cudart_static.lib"),
            format!("cudart64_{}.dll", plan.runtime_soname_major),
        )
    } else {
        (
            Some("libcudart_static.a"),
            format!("libcudart.so.{}", plan.runtime_soname_major),
        )
    };
    if !plan.dynamic_cudart {
        if let Some(dir) = archive.and_then(|a| find_in(plan.lib_dirs, a)) {
            println!("cargo:rustc-link-search=native={}", dir.display());
            println!("cargo:rustc-link-lib=static=cudart_static");
            if !windows {
                static_runtime_system_libs();
            }
            return Ok(Linked {
                runtime_loaded: false,
            });
        }
        let why = match archive {
            Some(a) => format!("no {a} in {}", describe(plan.lib_dirs)),
            None => "MinGW cannot link NVIDIA's MSVC cudart_static.lib".to_string(),
        };
        println!(
            "cargo:warning=dynamic-loading: {why}: the runtime is loaded at run time ({dll}, or \
             the file named by CUDA_MEM_SYS_LIBCUDART)"
        );
    }
    Ok(Linked {
        runtime_loaded: true,
    })
}

/// Windows: link by import library, as NVIDIA's toolkit ships them in
/// `lib\x64\`: `cuda.lib` (the driver, `nvcuda.dll`) and the runtime, either
/// `cudart_static.lib` (MSVC; what nvcc does) or `cudart.lib`
/// (`cudart64_<major>.dll`). MinGW (`*-windows-gnu`) links MSVC import
/// libraries but not MSVC's static `cudart_static.lib`, so there the runtime
/// is always the DLL. Where an import library is missing, a MinGW build makes
/// a stub DLL and its import library (entry points return the stub-library
/// error, as on Linux); an MSVC build stops with an error. Never an ELF stub.
fn emit_windows(plan: &Plan) -> Result<(), String> {
    let gnu = plan.target_env == "gnu";
    let dll = format!("cudart64_{}.dll", plan.runtime_soname_major);
    let import = |lib: &str, dll: &str, symbols: &[String]| -> Result<(), String> {
        let dir = match find_in(plan.lib_dirs, &format!("{lib}.lib")) {
            Some(dir) => dir,
            None if gnu => {
                let dir = windows_stub(plan.out_dir, plan.cc, lib, dll, symbols)?;
                println!(
                    "cargo:warning=no {lib}.lib in {}: linked against a stub {dll} made in {} whose \
                     entry points return the stub-library error; programs load the real {dll} at \
                     run time. Set CUDA_PATH (or CUDA_MEM_SYS_LIB_DIR) to link NVIDIA's import library.",
                    describe(plan.lib_dirs),
                    dir.display()
                );
                dir
            }
            None => {
                return Err(format!(
                "no {lib}.lib in {}: set CUDA_PATH to a CUDA toolkit (it has lib\\{}\\{lib}.lib) \
                     or CUDA_MEM_SYS_LIB_DIR to the folder holding it",
                describe(plan.lib_dirs),
                super::locate::windows_lib_dir(plan.target_arch)
            ))
            }
        };
        println!("cargo:rustc-link-search=native={}", dir.display());
        Ok(())
    };
    import("cuda", "nvcuda.dll", plan.driver_symbols)?;
    println!("cargo:rustc-link-lib=dylib=cuda");
    if !gnu && !plan.dynamic_cudart {
        if let Some(dir) = find_in(plan.lib_dirs, "cudart_static.lib") {
            println!("cargo:rustc-link-search=native={}", dir.display());
            println!("cargo:rustc-link-lib=static=cudart_static");
            return Ok(());
        }
    }
    import("cudart", &dll, plan.runtime_symbols)?;
    println!("cargo:rustc-link-lib=dylib=cudart");
    Ok(())
}

/// A MinGW stub DLL named `dll` exporting every symbol, and its import
/// library `lib<lib>.dll.a`, which the linker's `-l<lib>` finds.
fn windows_stub(
    out_dir: &Path,
    cc: &cc::Build,
    lib: &str,
    dll: &str,
    symbols: &[String],
) -> Result<PathBuf, String> {
    let (dir, c) = stub_source(
        out_dir,
        &format!("{lib}_stub.c"),
        "__declspec(dllexport) ",
        symbols,
    )?;
    let compiler = cc.try_get_compiler().map_err(|e| e.to_string())?;
    let status = Command::new(compiler.path())
        .args(["-shared", "-O0", "-w", "-o"])
        .arg(dir.join(dll))
        .arg(format!(
            "-Wl,--out-implib,{}",
            dir.join(format!("lib{lib}.dll.a")).display()
        ))
        .arg(&c)
        .status()
        .map_err(|e| format!("running {}: {e}", compiler.path().display()))?;
    if !status.success() {
        return Err(format!("compiling the {dll} stub failed"));
    }
    Ok(dir)
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

/// A stub library being compiled ([`stub`]); [`Stub::wait`] finishes it.
struct Stub {
    /// The folder it is made in.
    dir: PathBuf,
    name: String,
    soname: String,
    compiler: std::process::Child,
}

impl Stub {
    /// Waits for the compiler; the library is then also `lib<name>.so`.
    fn wait(mut self) -> Result<(), String> {
        let status = self.compiler.wait().map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("compiling the {} stub library failed", self.name));
        }
        let dir = &self.dir;
        let _ = std::fs::remove_file(dir.join(format!("lib{}.so", self.name)));
        std::fs::copy(
            dir.join(&self.soname),
            dir.join(format!("lib{}.so", self.name)),
        )
        .map_err(|e| e.to_string())?;
        Ok(())
    }
}

/// The C source of a stub, `file` in `out_dir/stubs/` (returned with it):
/// each symbol a function returning the stub-library error, declared with
/// `export` (`__declspec(dllexport) ` for a DLL).
fn stub_source(
    out_dir: &Path,
    file: &str,
    export: &str,
    symbols: &[String],
) -> Result<(PathBuf, PathBuf), String> {
    let dir = out_dir.join("stubs");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut src = String::from("/* generated by cuda-mem-sys's build script */\n");
    for s in symbols {
        src.push_str(&format!(
            "{export}int {s}(void) {{ return {STUB_LIBRARY_ERROR}; }}\n"
        ));
    }
    let c = dir.join(file);
    std::fs::write(&c, src).map_err(|e| e.to_string())?;
    Ok((dir, c))
}

/// A shared library exporting every given symbol as a function returning the
/// stub-library error, the same contract as the toolkit's `stubs/libcuda.so`:
/// its compiler started (the build goes on beside it until [`Stub::wait`]).
fn stub(
    out_dir: &Path,
    cc: &cc::Build,
    name: &str,
    major: u32,
    symbols: &[String],
) -> Result<Stub, String> {
    let (dir, c) = stub_source(out_dir, &format!("lib{name}_stub.c"), "", symbols)?;
    let soname = format!("lib{name}.so.{major}");
    let compiler = cc.try_get_compiler().map_err(|e| e.to_string())?;
    let child = Command::new(compiler.path())
        .args(["-shared", "-fPIC", "-O0", "-w", "-o"])
        .arg(dir.join(&soname))
        .arg(format!("-Wl,-soname,{soname}"))
        .arg(&c)
        .spawn()
        .map_err(|e| format!("running {}: {e}", compiler.path().display()))?;
    Ok(Stub {
        dir,
        name: name.to_string(),
        soname,
        compiler: child,
    })
}
