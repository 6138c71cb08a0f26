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

use crate::cmd::{cargo, run_cmd, step};
use crate::headers;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const MSVC: &str = "x86_64-pc-windows-msvc";

const LLVM: &str = "/usr/lib/llvm-19/bin";
/// Where Debian's wine64 keeps its PE DLLs.
const WINE_DLLS: &str = "/usr/lib/x86_64-linux-gnu/wine/x86_64-windows";

/// The DLLs whose import libraries programs link: what Rust's standard
/// library and its dependencies name (`kernel32.lib` ...), the C runtime
/// (`ucrtbase.dll` as `msvcrt.lib`, the name `/defaultlib:msvcrt` asks for;
/// `vcruntime140.dll`), and what the crates of the tests name (cc's
/// `find-msvc-tools`: ole32, oleaut32).
const DLLS: [&str; 14] = [
    "kernel32",
    "ntdll",
    "ucrtbase",
    "vcruntime140",
    "advapi32",
    "userenv",
    "ws2_32",
    "bcrypt",
    "dbghelp",
    "ole32",
    "oleaut32",
    "shell32",
    "user32",
    "secur32",
];

/// Exports left out of the import libraries: the start-up code defines them
/// (`_fltused`, `__chkstk`: Wine's ntdll exports both; a program must not
/// import them).
const OWN_SYMBOLS: [&str; 2] = ["_fltused", "__chkstk"];

const START_C: &str = include_str!("msvc/start.c");
const HEADERS: [(&str, &str); 4] = [
    ("stdlib.h", include_str!("msvc/stdlib.h")),
    ("stdio.h", include_str!("msvc/stdio.h")),
    ("string.h", include_str!("msvc/string.h")),
    ("time.h", include_str!("msvc/time.h")),
];

/// The made toolchain (everything under `target/msvc-toolchain/`).
pub struct Toolchain {
    /// The C compiler: clang in MSVC mode with the stand-in headers, linking
    /// with lld-link against the import libraries and the start-up code.
    pub cc: PathBuf,
    /// The stand-in C library headers.
    pub include: PathBuf,
    /// The import libraries and `cuda_mem_sys_start.lib`.
    pub libs: PathBuf,
    /// `bcryptprimitives.dll` (WINEPATH): Wine 8 lacks it, Rust's std imports
    /// its `ProcessPrng`.
    pub dlls: PathBuf,
}

fn llvm(tool: &str) -> PathBuf {
    Path::new(LLVM).join(tool)
}

/// A stable 64-bit hash (FNV-1a) of the toolchain's inputs: a change remakes it.
fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for p in parts {
        for b in p.iter().chain(&[0xff]) {
            h ^= *b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
    }
    h
}

/// Installs what is missing (Debian packages, the Rust target) and makes the
/// toolchain, or reuses the one made from the same inputs.
pub fn toolchain(workspace: &Path) -> Result<Toolchain, String> {
    let tools = [
        "clang",
        "lld-link",
        "llvm-dlltool",
        "llvm-readobj",
        "llvm-lib",
    ];
    let missing = tools.iter().any(|t| !llvm(t).exists()) || !Path::new(WINE_DLLS).is_dir();
    if missing {
        step("installing clang-19 lld-19 llvm-19 wine64");
        run_cmd(Command::new("apt-get").args(["update", "-qq"]))?;
        run_cmd(
            Command::new("apt-get")
                .args([
                    "install", "-y", "-qq", "clang-19", "lld-19", "llvm-19", "wine64",
                ])
                .env("DEBIAN_FRONTEND", "noninteractive"),
        )?;
    }
    run_cmd(Command::new("rustup").args(["target", "add", MSVC]))?;

    let dir = workspace.join("target/msvc-toolchain");
    let tc = Toolchain {
        cc: dir.join("bin/clang-msvc"),
        include: dir.join("include"),
        libs: dir.join("lib"),
        dlls: dir.join("dll"),
    };
    // The inputs: this file and its sources, and the Wine DLLs (by size).
    let mut inputs: Vec<Vec<u8>> = vec![START_C.into(), include_str!("msvc.rs").into()];
    inputs.extend(HEADERS.iter().map(|(n, t)| format!("{n}{t}").into_bytes()));
    for d in DLLS {
        let len = std::fs::metadata(Path::new(WINE_DLLS).join(format!("{d}.dll")))
            .map_err(|e| format!("{WINE_DLLS}/{d}.dll: {e} (is wine64 installed?)"))?
            .len();
        inputs.push(format!("{d} {len}").into_bytes());
    }
    let stamp = format!(
        "{:016x}\n",
        fnv(&inputs.iter().map(Vec::as_slice).collect::<Vec<_>>())
    );
    let stamp_file = dir.join("stamp");
    if std::fs::read_to_string(&stamp_file).is_ok_and(|s| s == stamp) {
        return Ok(tc);
    }
    step("making the msvc toolchain in target/msvc-toolchain (import libraries of Wine's DLLs, start-up code)");
    let _ = std::fs::remove_dir_all(&dir);
    for d in [
        &tc.include,
        &tc.libs,
        &tc.dlls,
        &dir.join("bin"),
        &dir.join("obj"),
    ] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    for (name, text) in HEADERS {
        write(&tc.include.join(name), text)?;
    }
    for d in DLLS {
        import_library(&tc.libs, d)?;
    }
    // Rust's std imports ProcessPrng from bcryptprimitives.dll.
    write(
        &tc.libs.join("bcryptprimitives.def"),
        "LIBRARY bcryptprimitives.dll\nEXPORTS\n  ProcessPrng\n",
    )?;
    dlltool(&tc.libs, "bcryptprimitives", "bcryptprimitives")?;
    start_library(&dir, &tc.libs)?;
    write_compiler(&tc)?;
    bcryptprimitives_dll(&dir, &tc)?;
    write(&stamp_file, &stamp)?;
    Ok(tc)
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// `<lib>.def` from the exports of Wine's `<dll>.dll`, and its import
/// library (`ucrtbase` is written as `msvcrt.lib`).
fn import_library(libs: &Path, dll: &str) -> Result<(), String> {
    let path = Path::new(WINE_DLLS).join(format!("{dll}.dll"));
    let out = Command::new(llvm("llvm-readobj"))
        .arg("--coff-exports")
        .arg(&path)
        .output()
        .map_err(|e| format!("llvm-readobj: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "llvm-readobj --coff-exports {} failed: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut def = format!("LIBRARY {dll}.dll\nEXPORTS\n");
    let mut n = 0;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some(name) = line.trim().strip_prefix("Name: ") {
            let name = name.trim();
            if !name.is_empty() && !OWN_SYMBOLS.contains(&name) {
                def.push_str(&format!("  {name}\n"));
                n += 1;
            }
        }
    }
    if n == 0 {
        return Err(format!("{} exports nothing", path.display()));
    }
    let lib = if dll == "ucrtbase" { "msvcrt" } else { dll };
    write(&libs.join(format!("{lib}.def")), &def)?;
    dlltool(libs, lib, lib)
}

fn dlltool(libs: &Path, def: &str, lib: &str) -> Result<(), String> {
    run_cmd(
        Command::new(llvm("llvm-dlltool"))
            .args(["-m", "i386:x86-64", "-d"])
            .arg(libs.join(format!("{def}.def")))
            .arg("-l")
            .arg(libs.join(format!("{lib}.lib"))),
    )
}

/// `cuda_mem_sys_start.lib`: `start.c`'s shared part, program entry and DLL
/// entry, each an object of its own.
fn start_library(dir: &Path, libs: &Path) -> Result<(), String> {
    let src = dir.join("obj/start.c");
    write(&src, START_C)?;
    let mut objects = vec![];
    for (name, define) in [
        ("start", None),
        ("exe", Some("-DSTART_EXE")),
        ("dll", Some("-DSTART_DLL")),
    ] {
        let obj = dir.join(format!("obj/{name}.obj"));
        run_cmd(
            Command::new(llvm("clang"))
                .args([&format!("--target={MSVC}"), "-O2", "-c"])
                .args(define)
                .arg(&src)
                .arg("-o")
                .arg(&obj),
        )?;
        objects.push(obj);
    }
    run_cmd(
        Command::new(llvm("llvm-lib"))
            .arg(format!(
                "/out:{}",
                libs.join("cuda_mem_sys_start.lib").display()
            ))
            .args(&objects),
    )
}

/// The C compiler the build scripts, the tests and the fixtures run: clang
/// in MSVC mode with the stand-in headers; where it links, lld-link with the
/// import libraries and the start-up code, and none of Microsoft's default
/// libraries (`libcmt`, `oldnames`). Named `clang-...` so that cc takes it
/// for clang where it cannot ask it (a test under Wine).
fn write_compiler(tc: &Toolchain) -> Result<(), String> {
    let clang = llvm("clang");
    let script = format!(
        "#!/bin/sh\n\
         # Written by cargo xtask msvc: clang for {MSVC} with no file from Microsoft.\n\
         link=yes\n\
         for a in \"$@\"; do case \"$a\" in -c|-E|-S|-fsyntax-only|-M|-MM) link=no;; esac; done\n\
         if [ $link = yes ]; then\n\
         \x20 exec {clang} --target={MSVC} -isystem {inc} \"$@\" -fuse-ld=lld -nostdlib \
         -Wl,/libpath:{libs} -Wl,cuda_mem_sys_start.lib -Wl,msvcrt.lib -Wl,vcruntime140.lib \
         -Wl,kernel32.lib\n\
         fi\n\
         exec {clang} --target={MSVC} -isystem {inc} \"$@\"\n",
        clang = clang.display(),
        inc = tc.include.display(),
        libs = tc.libs.display(),
    );
    write(&tc.cc, &script)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&tc.cc, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", tc.cc.display()))
}

/// Wine 8.0 (Debian 12) has no `bcryptprimitives.dll`: a one-function DLL
/// over `advapi32`'s `RtlGenRandom` (`SystemFunction036`), made here.
fn bcryptprimitives_dll(dir: &Path, tc: &Toolchain) -> Result<(), String> {
    let src = dir.join("obj/bcryptprimitives.c");
    write(
        &src,
        "typedef unsigned char BOOLEAN;\n\
         __declspec(dllimport) BOOLEAN __stdcall SystemFunction036(void *buffer, unsigned long length);\n\
         __declspec(dllexport) int __stdcall ProcessPrng(unsigned char *data, unsigned long long len) {\n\
         \x20   while (len) {\n\
         \x20       unsigned long n = len > 0x10000 ? 0x10000 : (unsigned long)len;\n\
         \x20       if (!SystemFunction036(data, n)) return 0;\n\
         \x20       data += n; len -= n;\n\
         \x20   }\n\
         \x20   return 1;\n}\n",
    )?;
    run_cmd(
        Command::new(&tc.cc)
            .args(["-shared", "-O2", "-o"])
            .arg(tc.dlls.join("bcryptprimitives.dll"))
            .arg(&src)
            .arg("-Wl,advapi32.lib"),
    )
}

/// Makes a cargo command build for msvc with `tc` and run its programs
/// under wine (each variable only where the environment does not set it).
pub fn for_msvc(cmd: &mut Command, tc: &Toolchain) {
    let triple = MSVC.replace('-', "_");
    let var = |what: &str| format!("CARGO_TARGET_{}_{what}", triple.to_uppercase());
    cmd.args(["--target", MSVC]);
    let rustflags = format!(
        "-C link-arg=/libpath:{} -C link-arg=cuda_mem_sys_start.lib -C link-arg=vcruntime140.lib",
        tc.libs.display()
    );
    let cc = tc.cc.display().to_string();
    let ar = llvm("llvm-lib").display().to_string();
    let bindgen = format!("-isystem {}", tc.include.display());
    let wine_path = tc.dlls.display().to_string();
    for (name, value) in [
        (var("LINKER"), "rust-lld"),
        (var("RUSTFLAGS"), rustflags.as_str()),
        (var("RUNNER"), "wine"),
        (format!("CC_{triple}"), cc.as_str()),
        (format!("AR_{triple}"), ar.as_str()),
        (
            format!("BINDGEN_EXTRA_CLANG_ARGS_{triple}"),
            bindgen.as_str(),
        ),
        ("WINEDEBUG".to_string(), "-all"),
        ("WINEPATH".to_string(), wine_path.as_str()),
    ] {
        if std::env::var_os(&name).is_none() {
            cmd.env(name, value);
        }
    }
}

/// The releases of `cargo xtask msvc [<release>... | --all]`: the pinned one
/// unless told.
pub fn parse<'a>(args: &[&'a str]) -> Result<Vec<&'a str>, String> {
    match args {
        [] => Ok(vec![crate::release::PINNED_RELEASE]),
        ["--all"] => Ok(headers::RELEASES.to_vec()),
        named => match named.iter().find(|r| !headers::RELEASES.contains(r)) {
            Some(bad) => Err(format!(
                "msvc: {bad:?} is no release (known: {}), nor --all alone",
                headers::RELEASES.join(" ")
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
    let dir = crate::abi::target_dir_for(workspace, release, MSVC);
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
    for t in crate::abi::WINDOWS_ABI_TESTS {
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
    let check = ["check", "-p", "cuda-mem-sys", "--examples", "--tests"];
    timed(
        "every example and every test (device tests included) compiles, linked",
        cargo_in(&check, ""),
    )?;
    timed(
        "every example and every test compiles, dynamic-loading",
        cargo_in(&check, "dynamic-loading"),
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
    let wrap = ["check", "-p", "cuda-mem-wrap", "--all-targets"];
    timed(
        "the wrapper crate (wrap/) compiles, linked",
        cargo_in(&wrap, ""),
    )?;
    timed(
        "the wrapper crate compiles, dynamic-loading",
        cargo_in(&wrap, "dynamic-loading"),
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
    if release != crate::release::PINNED_RELEASE {
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
    let pinned = headers::fetch_for(workspace, crate::release::PINNED_RELEASE, MSVC)?;
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
    write(&dir.join("cudart.def"), &def)?;
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
/// [`crate::gpu_bundle::ON_GPU`] in `tests/`; `abi_symbols` is abi-proofs').
fn device_tests(workspace: &Path) -> Vec<&'static str> {
    crate::gpu_bundle::ON_GPU
        .into_iter()
        .filter(|t| workspace.join(format!("tests/{t}.rs")).is_file())
        .collect()
}

/// What each device test lists on Linux (`--list`, against the pinned
/// headers): the names the Windows run must report.
pub fn linux_lists(workspace: &Path) -> Result<Vec<(&'static str, Vec<String>)>, String> {
    let pinned = headers::fetch(workspace, crate::release::PINNED_RELEASE)?;
    let tests = device_tests(workspace);
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
            .env(crate::locate::INCLUDE_DIR_VAR, &pinned)
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
        let tests = device_tests(&crate::cmd::workspace());
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

    #[test]
    fn the_hash_sees_every_part() {
        assert_ne!(fnv(&[b"ab", b"c"]), fnv(&[b"a", b"bc"]));
        assert_eq!(fnv(&[b"x"]), fnv(&[b"x"]));
    }
}
