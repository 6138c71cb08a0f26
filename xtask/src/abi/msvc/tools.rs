//! The msvc toolchain `cargo xtask msvc` builds with, made from Linux's
//! tools and Wine's DLLs into `target/msvc-toolchain/` ([`toolchain`]), and
//! how a cargo command uses it ([`for_msvc`]).

use crate::cmd::{run_cmd, step, write_file};
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

const START_C: &str = include_str!("start.c");
pub const HEADERS: [(&str, &str); 4] = [
    ("stdlib.h", include_str!("stdlib.h")),
    ("stdio.h", include_str!("stdio.h")),
    ("string.h", include_str!("string.h")),
    ("time.h", include_str!("time.h")),
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
    /// cargo's runner: `wine`, once more where wine itself died of a signal
    /// ([`crate::cmd::wine_runner`]).
    pub runner: PathBuf,
}

pub fn llvm(tool: &str) -> PathBuf {
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
        runner: crate::cmd::wine_runner(workspace)?,
    };
    // The inputs: this file and its sources, and the Wine DLLs (by size).
    let mut inputs: Vec<Vec<u8>> = vec![START_C.into(), include_str!("tools.rs").into()];
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
        write_file(&tc.include.join(name), text)?;
    }
    for d in DLLS {
        import_library(&tc.libs, d)?;
    }
    // Rust's std imports ProcessPrng from bcryptprimitives.dll.
    write_file(
        &tc.libs.join("bcryptprimitives.def"),
        "LIBRARY bcryptprimitives.dll\nEXPORTS\n  ProcessPrng\n",
    )?;
    dlltool(&tc.libs, "bcryptprimitives", "bcryptprimitives")?;
    start_library(&dir, &tc.libs)?;
    write_compiler(&tc)?;
    bcryptprimitives_dll(&dir, &tc)?;
    write_file(&stamp_file, &stamp)?;
    Ok(tc)
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
    write_file(&libs.join(format!("{lib}.def")), &def)?;
    dlltool(libs, lib, lib)
}

pub fn dlltool(libs: &Path, def: &str, lib: &str) -> Result<(), String> {
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
    write_file(&src, START_C)?;
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
    write_file(&tc.cc, &script)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&tc.cc, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", tc.cc.display()))
}

/// Wine 8.0 (Debian 12) has no `bcryptprimitives.dll`: a one-function DLL
/// over `advapi32`'s `RtlGenRandom` (`SystemFunction036`), made here.
fn bcryptprimitives_dll(dir: &Path, tc: &Toolchain) -> Result<(), String> {
    let src = dir.join("obj/bcryptprimitives.c");
    write_file(
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
    let runner = tc.runner.display().to_string();
    for (name, value) in [
        (var("LINKER"), "rust-lld"),
        (var("RUSTFLAGS"), rustflags.as_str()),
        (var("RUNNER"), runner.as_str()),
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

#[cfg(test)]
mod tests {
    use super::fnv;

    #[test]
    fn the_hash_sees_every_part() {
        assert_ne!(fnv(&[b"ab", b"c"]), fnv(&[b"a", b"bc"]));
        assert_eq!(fnv(&[b"x"]), fnv(&[b"x"]));
    }
}
