//! Windows (`--features dynamic-loading`): where the loader looks for its DLLs.
//! A `nvcuda.dll` planted in the working folder or beside the program is not
//! loaded (the driver comes from `System32` only); the runtime
//! (`cudart64_<major>.dll`) is taken from beside the program, never from the
//! working folder (for MSVC without `dynamic-cudart` NVIDIA's
//! `cudart_static.lib` is linked instead, and no runtime DLL loads); a `CUDA_MEM_SYS_LIBCUDA` naming a path outside the ANSI
//! code page loads that file. The planted DLLs are the fake driver of
//! `abi-proofs/tests/fixtures/fake_libcuda.c`, built with the target's C compiler.
//!
//! Each case runs in a child process (a process loads its driver once), with
//! a deliberately wrong control: a plain `LoadLibraryW("nvcuda.dll")` in the
//! same place must load the planted file, or the plant proves nothing.
//! CI runs this under Wine (`cargo xtask ci --cross` for MinGW, `cargo xtask
//! msvc` for MSVC); elsewhere it reports ignored.

use libtest_mimic::{Completion, Failed};
#[cfg(windows)]
use std::path::{Path, PathBuf};

#[cfg(windows)]
const ROLE: &str = "CUDA_MEM_SYS_DLL_SEARCH_ROLE";

/// Why this cannot run here, if it cannot.
fn cannot_run() -> Option<Completion> {
    if !cfg!(windows) {
        return Some(Completion::ignored_with(
            "Windows only (CI: x86_64-pc-windows-gnu under Wine, `cargo xtask ci --cross`)",
        ));
    }
    if !cfg!(feature = "dynamic-loading") {
        return Some(Completion::ignored_with("needs --features dynamic-loading"));
    }
    None
}

/// The runtime's file name for these headers.
#[cfg(windows)]
fn runtime_dll() -> String {
    format!("cudart64_{}.dll", cuda_mem_sys::CUDA_VERSION / 1000)
}

/// A Linux path as Windows (Wine's `Z:` drive) names it; a Windows path as is.
#[cfg(windows)]
fn windows_path(p: &Path) -> PathBuf {
    let s = p.to_string_lossy();
    if s.starts_with('/') {
        PathBuf::from(format!("Z:{}", s.replace('/', "\\")))
    } else {
        p.to_path_buf()
    }
}

/// The fake driver, built as a DLL at `dll` (a path on the build machine).
#[cfg(windows)]
fn fake_dll(dll: &Path) -> Result<(), Failed> {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("abi-proofs/tests/fixtures/fake_libcuda.c");
    let compiler = test_support::TARGET_CC.unwrap_or("x86_64-w64-mingw32-gcc");
    let mut cmd = std::process::Command::new(compiler);
    cmd.args(["-shared", "-w", "-o"]).arg(dll).arg(&src);
    let out = test_support::host_output(&mut cmd).map_err(|e| format!("{compiler}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "building the fake nvcuda.dll failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(())
}

/// Runs `program` as `role` in `cwd` with `env`; its stdout, failing if it did not exit 0.
#[cfg(windows)]
fn child(program: &Path, role: &str, cwd: &Path, env: &[(&str, &Path)]) -> Result<String, Failed> {
    let mut cmd = std::process::Command::new(program);
    cmd.env(ROLE, role)
        .env_remove("CUDA_MEM_SYS_LIBCUDA")
        .env_remove("CUDA_MEM_SYS_LIBCUDART")
        .current_dir(windows_path(cwd));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("{}: {e}", program.display()))?;
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

#[cfg(windows)]
fn expect_lines(what: &str, out: &str, lines: &[&str]) -> Result<(), Failed> {
    for l in lines {
        if !out.lines().any(|o| o == *l) {
            return Err(format!("{what}: expected the line {l:?} in:\n{out}").into());
        }
    }
    Ok(())
}

#[cfg(windows)]
fn a_planted_nvcuda_dll_in_the_working_folder_is_not_loaded() -> Result<Completion, Failed> {
    let dir = test_support::scratch_under_target("planted-cwd");
    fake_dll(&dir.path().join("nvcuda.dll"))?;
    std::fs::copy(
        dir.path().join("nvcuda.dll"),
        dir.path().join(runtime_dll()),
    )
    .map_err(|e| e.to_string())?;
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    // The control: the plain search (LoadLibraryW) takes the planted file.
    let plain = child(&me, "plain", dir.path(), &[])?;
    expect_lines(
        "plain LoadLibraryW in the working folder",
        &plain,
        &["plain nvcuda.dll is the planted one: true"],
    )?;
    let out = child(&me, "search", dir.path(), &[])?;
    print!("{out}");
    expect_lines(
        "the loader, working folder",
        &out,
        &[
            "planted nvcuda.dll loaded: false",
            "planted runtime loaded: false",
        ],
    )?;
    Ok(Completion::Completed)
}

#[cfg(windows)]
fn a_planted_nvcuda_dll_beside_the_program_is_not_loaded_the_runtime_there_is(
) -> Result<Completion, Failed> {
    let app = test_support::scratch_under_target("planted-app");
    let elsewhere = test_support::scratch_under_target("planted-app-cwd");
    fake_dll(&app.path().join("nvcuda.dll"))?;
    std::fs::copy(
        app.path().join("nvcuda.dll"),
        app.path().join(runtime_dll()),
    )
    .map_err(|e| e.to_string())?;
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let copy = windows_path(&app.path().join("dll_search.exe"));
    std::fs::copy(&me, &copy).map_err(|e| format!("copying the test program: {e}"))?;
    let plain = child(&copy, "plain", elsewhere.path(), &[])?;
    expect_lines(
        "plain LoadLibraryW beside the program",
        &plain,
        &["plain nvcuda.dll is the planted one: true"],
    )?;
    let out = child(&copy, "search", elsewhere.path(), &[])?;
    print!("{out}");
    // MSVC links NVIDIA's cudart_static.lib (unless dynamic-cudart): no
    // runtime DLL is loaded then, not even a planted one beside the program.
    let static_runtime = cfg!(target_env = "msvc") && !cfg!(feature = "dynamic-cudart");
    let expected: &[&str] = if static_runtime {
        &[
            "planted nvcuda.dll loaded: false",
            "runtime Ok cudart_static.lib",
            "planted runtime loaded: false",
        ]
    } else {
        &[
            "planted nvcuda.dll loaded: false",
            // The application's folder is where a program ships the runtime.
            "planted runtime loaded: true",
        ]
    };
    expect_lines("the loader, beside the program", &out, expected)?;
    Ok(Completion::Completed)
}

#[cfg(windows)]
fn a_variable_holding_a_non_ascii_path_loads_that_file() -> Result<Completion, Failed> {
    let base = test_support::scratch_under_target("non-ascii");
    // Greek and CJK: outside every single-byte ANSI code page.
    let dir = base.path().join("λ-漢字-ü");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let dll = dir.join("fake-nvcuda.dll");
    fake_dll(&dll)?;
    let dll = windows_path(&dll);
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    // A version no real driver reports: the call reached this fake.
    let version = Path::new("4242");
    let out = child(
        &me,
        "named",
        base.path(),
        &[
            ("CUDA_MEM_SYS_LIBCUDA", &dll),
            ("FAKE_DRIVER_VERSION", version),
        ],
    )?;
    print!("{out}");
    // The loader names the file it loaded, non-ASCII characters intact.
    let loaded = format!("driver Ok {}", dll.display());
    expect_lines(
        "CUDA_MEM_SYS_LIBCUDA with a non-ASCII path",
        &out,
        &[&loaded, "cuDriverGetVersion 0 4242"],
    )?;
    // A missing file: the error names the path as it was set.
    let missing = windows_path(&dir.join("no-such-nvcuda.dll"));
    let out = child(
        &me,
        "named",
        base.path(),
        &[("CUDA_MEM_SYS_LIBCUDA", &missing)],
    )?;
    print!("{out}");
    let tried = format!("driver Err tried {}", missing.display());
    expect_lines(
        "CUDA_MEM_SYS_LIBCUDA with a missing non-ASCII path",
        &out,
        &[&tried, "cuDriverGetVersion 303 0"],
    )?;
    Ok(Completion::Completed)
}

#[cfg(all(windows, feature = "dynamic-loading"))]
mod roles {
    use cuda_mem_sys::loader;
    use std::ffi::c_void;

    #[link(name = "kernel32")]
    extern "system" {
        fn LoadLibraryW(name: *const u16) -> *mut c_void;
        fn GetModuleHandleW(name: *const u16) -> *mut c_void;
        fn GetProcAddress(module: *mut c_void, name: *const u8) -> *mut c_void;
    }

    fn wide(s: &str) -> Vec<u16> {
        s.encode_utf16().chain([0]).collect()
    }

    /// Whether a module of that name is loaded and is the fake (it exports
    /// `fake_request_count`, which no real driver or runtime does).
    fn fake_loaded(name: &str) -> bool {
        let h = unsafe { GetModuleHandleW(wide(name).as_ptr()) };
        !h.is_null()
            && !unsafe { GetProcAddress(h, c"fake_request_count".as_ptr().cast()) }.is_null()
    }

    pub fn run(role: &str) {
        match role {
            "plain" => {
                let h = unsafe { LoadLibraryW(wide("nvcuda.dll").as_ptr()) };
                println!(
                    "plain nvcuda.dll is the planted one: {}",
                    !h.is_null() && fake_loaded("nvcuda.dll")
                );
            }
            "search" => {
                match loader::driver() {
                    Ok(l) => println!("driver Ok {}", l.file),
                    Err(e) => println!("driver Err {}: {}", e.tried, e.message),
                }
                println!("planted nvcuda.dll loaded: {}", fake_loaded("nvcuda.dll"));
                match loader::runtime() {
                    Ok(l) => println!("runtime Ok {}", l.file),
                    Err(e) => println!("runtime Err {}: {}", e.tried, e.message),
                }
                println!(
                    "planted runtime loaded: {}",
                    fake_loaded(&super::runtime_dll())
                );
            }
            "named" => {
                match loader::driver() {
                    Ok(l) => println!("driver Ok {}", l.file),
                    Err(e) => {
                        println!("driver Err tried {}", e.tried);
                        println!("driver Err message {}", e.message);
                    }
                }
                let mut v = 0;
                let r = unsafe { cuda_mem_sys::cuDriverGetVersion(&mut v) };
                println!("cuDriverGetVersion {} {v}", r.0);
            }
            other => {
                eprintln!("unknown role {other}");
                std::process::exit(2);
            }
        }
    }
}

/// `(name, check)`: the check where it can run, else ignored with the reason.
macro_rules! check {
    ($name:ident) => {
        (stringify!($name), || -> Result<Completion, Failed> {
            if let Some(c) = cannot_run() {
                return Ok(c);
            }
            #[cfg(windows)]
            return $name();
            #[cfg(not(windows))]
            unreachable!()
        })
    };
}

fn main() {
    #[cfg(all(windows, feature = "dynamic-loading"))]
    if let Ok(role) = std::env::var(ROLE) {
        roles::run(&role);
        return;
    }
    test_support::main(vec![
        check!(a_planted_nvcuda_dll_in_the_working_folder_is_not_loaded),
        check!(a_planted_nvcuda_dll_beside_the_program_is_not_loaded_the_runtime_there_is),
        check!(a_variable_holding_a_non_ascii_path_loads_that_file),
    ]);
}
