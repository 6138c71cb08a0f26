//! The loader's `SONAME` reading (`src/loader/elf/`) on hand-made ELF
//! shared libraries that glibc loads without complaint, end to end: each
//! file is written here byte by byte (no code, no symbols: a dynamic
//! section, a string table and the program headers), `dlopen`ed by a child
//! process to show glibc takes it, then named in `CUDA_MEM_SYS_LIBCUDA` by
//! a path whose file name is not `libcuda.so.1`, so the loader reads its
//! `SONAME` from the mapping before anything else. A `SONAME` read as
//! `libcuda.so.1` lets the load go on to the next check, which refuses the
//! file for exporting no `cuGetProcAddress`; a malformed form is refused
//! with its reason. Each test's wrong twin is the loader before the reader
//! (`a27a7da`): it says "no SONAME" or "no loaded object", or, in a debug
//! build such as this one, aborts ("unsafe precondition(s) violated") where
//! it made a slice of unaligned or unbounded memory.

use libtest_mimic::{Completion, Failed};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROLE: &str = "CUDA_MEM_SYS_MALFORMED_ELF_ROLE";

/// What the loader says once the `SONAME` was read as `libcuda.so.1`.
const PAST_THE_SONAME: &str =
    "the library exports neither cuGetProcAddress_v2 nor cuGetProcAddress";
/// What it says of a dynamic section it refuses, before the reason.
const UNREADABLE: &str = "the library's dynamic section cannot be read (";

/// A hand-made `ET_DYN` object, laid out from offset 0 with each virtual
/// address equal to its file offset: the ELF header, the program headers
/// at `phoff`, the dynamic section, the string table.
struct Elf {
    phoff: usize,
    /// Readable `PT_LOAD` segments before the one mapping the file (16 make
    /// 17 in all), each a page apart.
    extra_loads: usize,
    /// Added to the dynamic section's 8-aligned offset (4: 4 mod 8).
    dynamic_skew: usize,
    /// `PT_DYNAMIC`'s `p_memsz`; `None`: the section's size.
    dynamic_memsz: Option<u64>,
    soname: &'static str,
    /// `PT_DYNAMIC` (and the segment) writable: glibc then adds the load
    /// bias to `DT_STRTAB` in place; read-only, it does not (glibc 2.35 on).
    writable: bool,
    /// `DT_STRSZ`; `None`: the string table's size.
    strsz: Option<u64>,
}

impl Elf {
    fn library() -> Elf {
        Elf {
            phoff: 64,
            extra_loads: 0,
            dynamic_skew: 0,
            dynamic_memsz: None,
            soname: "libcuda.so.1",
            writable: false,
            strsz: None,
        }
    }

    fn bytes(&self) -> Vec<u8> {
        const PT_LOAD: u32 = 1;
        const PT_DYNAMIC: u32 = 2;
        const PT_GNU_STACK: u32 = 0x6474_e551;
        const PF_W: u32 = 2;
        const PF_R: u32 = 4;
        let machine: u16 = if cfg!(target_arch = "aarch64") {
            183
        } else {
            62
        };
        let phnum = self.extra_loads + 3;
        let dynamic = (self.phoff + phnum * 56).next_multiple_of(8) + self.dynamic_skew;
        let mut strings = vec![0u8];
        strings.extend(self.soname.as_bytes());
        strings.push(0);
        // DT_STRTAB, DT_STRSZ, DT_SONAME first (a p_memsz of 16 covers only
        // DT_STRTAB), then what glibc needs to look a symbol up: a symbol
        // table of one null symbol and a hash table of one empty bucket.
        const DT_STRTAB: u64 = 5;
        const DT_SYMTAB: u64 = 6;
        const DT_HASH: u64 = 4;
        let entries: [(u64, u64); 7] = [
            (DT_STRTAB, 0),
            (10, self.strsz.unwrap_or(strings.len() as u64)),
            (14, 1),
            (DT_SYMTAB, 0),
            (11, 24),
            (DT_HASH, 0),
            (0, 0),
        ];
        let symtab = (dynamic + entries.len() * 16).next_multiple_of(8);
        let hash = symtab + 24;
        let strtab = hash + 16;
        let len = strtab + strings.len();
        let mut f = vec![0u8; len];
        let put = |f: &mut Vec<u8>, at: usize, b: &[u8]| f[at..at + b.len()].copy_from_slice(b);
        // The ELF header.
        put(&mut f, 0, b"\x7fELF\x02\x01\x01");
        put(&mut f, 16, &3u16.to_le_bytes()); // ET_DYN
        put(&mut f, 18, &machine.to_le_bytes());
        put(&mut f, 20, &1u32.to_le_bytes());
        put(&mut f, 32, &(self.phoff as u64).to_le_bytes());
        put(&mut f, 52, &64u16.to_le_bytes());
        put(&mut f, 54, &56u16.to_le_bytes());
        put(&mut f, 56, &(phnum as u16).to_le_bytes());
        // (type, flags, offset and address, file and memory size, align)
        let rw = if self.writable { PF_R | PF_W } else { PF_R };
        let mut headers = vec![(PT_LOAD, rw, 0u64, len as u64, len as u64, 0x1000u64)];
        for i in 1..=self.extra_loads as u64 {
            headers.push((PT_LOAD, PF_R, i * 0x1000, 0x10, 0x10, 0x1000));
        }
        let size = (entries.len() * 16) as u64;
        let memsz = self.dynamic_memsz.unwrap_or(size);
        headers.push((PT_DYNAMIC, rw, dynamic as u64, size, memsz, 8));
        headers.push((PT_GNU_STACK, PF_R | PF_W, 0, 0, 0, 16));
        for (i, &(kind, flags, at, filesz, memsz, align)) in headers.iter().enumerate() {
            let h = self.phoff + i * 56;
            // An extra segment maps the file's first bytes at its own page.
            let offset = if kind == PT_LOAD { 0 } else { at };
            put(&mut f, h, &kind.to_le_bytes());
            put(&mut f, h + 4, &flags.to_le_bytes());
            put(&mut f, h + 8, &offset.to_le_bytes());
            put(&mut f, h + 16, &at.to_le_bytes());
            put(&mut f, h + 24, &at.to_le_bytes());
            put(&mut f, h + 32, &filesz.to_le_bytes());
            put(&mut f, h + 40, &memsz.to_le_bytes());
            put(&mut f, h + 48, &align.to_le_bytes());
        }
        for (i, (tag, value)) in entries.into_iter().enumerate() {
            let value = match tag {
                DT_STRTAB => strtab as u64,
                DT_SYMTAB => symtab as u64,
                DT_HASH => hash as u64,
                _ => value,
            };
            put(&mut f, dynamic + i * 16, &tag.to_le_bytes());
            put(&mut f, dynamic + i * 16 + 8, &value.to_le_bytes());
        }
        // nbucket 1, nchain 1, bucket[0] and chain[0] the null symbol.
        put(&mut f, hash, &[1, 0, 0, 0, 1, 0, 0, 0]);
        put(&mut f, strtab, &strings);
        f
    }
}

/// The loader's answer for `elf`, written as `libcuda-malformed.so` and
/// named in `CUDA_MEM_SYS_LIBCUDA`: the child's `driver Err` message, after
/// checking that glibc itself loads the file.
fn loader_says(elf: &Elf) -> Result<String, Failed> {
    let dir = test_support::scratch("malformed-elf");
    let file = dir.path().join("libcuda-malformed.so");
    std::fs::write(&file, elf.bytes()).map_err(|e| e.to_string())?;
    let out = child(&file)?;
    print!("{out}");
    if !out.lines().any(|l| l == "glibc loads it") {
        return Err(format!("glibc does not load the hand-made file:\n{out}").into());
    }
    let why = out
        .lines()
        .find_map(|l| l.strip_prefix("driver Err "))
        .ok_or_else(|| format!("the loader took a file with no code:\n{out}"))?;
    Ok(why.to_string())
}

/// Runs this binary as the child, bounded: a hang or an abort fails.
fn child(file: &Path) -> Result<String, Failed> {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.env(ROLE, "driver").env("CUDA_MEM_SYS_LIBCUDA", file);
    cmd.env_remove("CUDA_MEM_SYS_LIBCUDART");
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut c = cmd.spawn().map_err(|e| e.to_string())?;
    let start = Instant::now();
    while c.try_wait().map_err(|e| e.to_string())?.is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = c.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = c.wait_with_output().map_err(|e| e.to_string())?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("the child exited with {}:\n{text}", out.status).into());
    }
    Ok(text)
}

fn needs_loader() -> Option<Completion> {
    if !cfg!(feature = "dynamic-loading") {
        return Some(Completion::ignored_with("needs --features dynamic-loading"));
    }
    if !cfg!(all(target_os = "linux", target_env = "gnu")) || !cfg!(target_pointer_width = "64") {
        return Some(Completion::ignored_with("hand-made ELF64 files for glibc"));
    }
    None
}

/// The `SONAME` was read as `libcuda.so.1`: the load went past that check.
fn read_as_libcuda(why: &str) -> Result<(), Failed> {
    if why.contains(PAST_THE_SONAME) && !why.contains("SONAME") && !why.contains(UNREADABLE) {
        Ok(())
    } else {
        Err(format!("the SONAME was not read as libcuda.so.1: {why}").into())
    }
}

/// Refused with `reason` (the reader's text for the form).
fn refused_with(why: &str, reason: &str) -> Result<(), Failed> {
    if why.contains(&format!("{UNREADABLE}{reason})")) {
        Ok(())
    } else {
        Err(format!("not refused with {reason:?}: {why}").into())
    }
}

fn a_hand_made_library_gives_its_soname() -> Result<Completion, Failed> {
    if let Some(c) = needs_loader() {
        return Ok(c);
    }
    // Read-only (DT_STRTAB as written) and writable (relocated by glibc).
    read_as_libcuda(&loader_says(&Elf::library())?)?;
    read_as_libcuda(&loader_says(&Elf {
        writable: true,
        ..Elf::library()
    })?)?;
    // Twin: another SONAME is read, and refused by name.
    let other = loader_says(&Elf {
        soname: "libother.so.1",
        ..Elf::library()
    })?;
    if read_as_libcuda(&other).is_ok() || !other.contains("SONAME is libother.so.1") {
        return Err(format!("another SONAME was not told: {other}").into());
    }
    Ok(Completion::Completed)
}

fn a_short_p_memsz_is_read_on_to_dt_null() -> Result<Completion, Failed> {
    if let Some(c) = needs_loader() {
        return Ok(c);
    }
    // 16 bytes: DT_STRTAB alone. The old loader: "the library has no SONAME".
    read_as_libcuda(&loader_says(&Elf {
        dynamic_memsz: Some(16),
        ..Elf::library()
    })?)?;
    Ok(Completion::Completed)
}

fn seventeen_load_segments_are_read() -> Result<Completion, Failed> {
    if let Some(c) = needs_loader() {
        return Ok(c);
    }
    // The old loader: "no loaded object has this dynamic section".
    read_as_libcuda(&loader_says(&Elf {
        extra_loads: 16,
        ..Elf::library()
    })?)?;
    Ok(Completion::Completed)
}

fn a_dynamic_section_4_mod_8_is_refused_with_its_reason() -> Result<Completion, Failed> {
    if let Some(c) = needs_loader() {
        return Ok(c);
    }
    let why = loader_says(&Elf {
        dynamic_skew: 4,
        ..Elf::library()
    })?;
    refused_with(&why, "PT_DYNAMIC is not aligned to the word")?;
    Ok(Completion::Completed)
}

fn program_headers_at_an_odd_offset_are_refused_with_their_reason() -> Result<Completion, Failed> {
    if let Some(c) = needs_loader() {
        return Ok(c);
    }
    let why = loader_says(&Elf {
        phoff: 65,
        ..Elf::library()
    })?;
    refused_with(
        &why,
        "the program headers are not aligned to the word (e_phoff)",
    )?;
    Ok(Completion::Completed)
}

fn a_p_memsz_of_2_pow_63_is_refused_with_its_reason() -> Result<Completion, Failed> {
    if let Some(c) = needs_loader() {
        return Ok(c);
    }
    let why = loader_says(&Elf {
        dynamic_memsz: Some(1 << 63),
        ..Elf::library()
    })?;
    refused_with(
        &why,
        "PT_DYNAMIC's p_memsz runs past the PT_LOAD segment holding it",
    )?;
    Ok(Completion::Completed)
}

fn a_dt_strsz_of_2_pow_62_or_0_is_read_as_glibc_reads_it() -> Result<Completion, Failed> {
    if let Some(c) = needs_loader() {
        return Ok(c);
    }
    // glibc reads the SONAME to its NUL, not bounded by DT_STRSZ. The
    // loader of before: "DT_STRTAB lies outside the library's mapped
    // segments" (2^62: the table starts inside) and "DT_SONAME lies past
    // the string table" (0: the name inside).
    for strsz in [1u64 << 62, 0] {
        read_as_libcuda(&loader_says(&Elf {
            strsz: Some(strsz),
            ..Elf::library()
        })?)?;
    }
    Ok(Completion::Completed)
}

#[cfg(feature = "dynamic-loading")]
fn role(role: &str) {
    assert_eq!(role, "driver");
    let file = std::env::var_os("CUDA_MEM_SYS_LIBCUDA").unwrap();
    let c = std::ffi::CString::new(file.into_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path; the file has no code to run.
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if h.is_null() {
        // SAFETY: dlerror's text, read at once.
        let e = unsafe { std::ffi::CStr::from_ptr(libc::dlerror()) };
        println!("glibc refuses it: {}", e.to_string_lossy());
    } else {
        println!("glibc loads it");
    }
    match cuda_mem_sys::loader::driver() {
        Ok(l) => println!("driver Ok {}", l.file),
        Err(e) => println!("driver Err {}: {}", e.tried, e.message),
    }
}

fn main() {
    #[cfg(feature = "dynamic-loading")]
    if let Ok(r) = std::env::var(ROLE) {
        role(&r);
        return;
    }
    test_support::main(test_support::checks![
        a_hand_made_library_gives_its_soname,
        a_short_p_memsz_is_read_on_to_dt_null,
        seventeen_load_segments_are_read,
        a_dynamic_section_4_mod_8_is_refused_with_its_reason,
        program_headers_at_an_odd_offset_are_refused_with_their_reason,
        a_p_memsz_of_2_pow_63_is_refused_with_its_reason,
        a_dt_strsz_of_2_pow_62_or_0_is_read_as_glibc_reads_it,
    ]);
}
