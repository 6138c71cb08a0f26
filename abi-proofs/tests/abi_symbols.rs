//! Every function the crate declares links the symbol a C program calls for
//! the same name with the same headers.
//!
//! The C side: the preprocessor stringizes each name after expansion
//! (`cuMemAdvise` → `"cuMemAdvise_v2"`). The Rust side: the address each item
//! resolved to at load time. They must be the same function: the address of
//! the C symbol (dlsym, or the executable's own symbol table for the static
//! libcudart) equals the Rust item's. In CI the driver is the build's stub
//! library, which exports every name as a distinct function; on a GPU machine
//! it is the real `libcuda.so.1`.
//!
//! With `dynamic-loading` the Rust side is the address the loader resolved
//! (`cuda_mem_sys::loader::function`): through `cuGetProcAddress` with the
//! generated (base name, ABI version) for the driver, `dlsym` for a loaded
//! runtime; it must be the very function C calls. Without a driver to load
//! (CI) that check reports itself ignored.

use libtest_mimic::{Completion, Failed};
use std::collections::{BTreeMap, HashMap};
use std::ffi::{CStr, CString};

fn functions() -> Vec<(&'static str, usize)> {
    include!(concat!(env!("OUT_DIR"), "/abi/functions.rs"))
}

/// The address a call of `name` reaches: the item itself, or under
/// `dynamic-loading` the function its trampoline calls.
#[cfg(not(feature = "dynamic-loading"))]
fn called(pairs: Vec<(&'static str, usize)>) -> Result<Vec<(&'static str, usize)>, String> {
    Ok(pairs)
}

#[cfg(feature = "dynamic-loading")]
fn called(pairs: Vec<(&'static str, usize)>) -> Result<Vec<(&'static str, usize)>, String> {
    use cuda_mem_sys::loader::{self, Resolved};
    if let Err(e) = loader::driver() {
        return Err(format!(
            "dynamic-loading: no driver to load ({}: {})",
            e.tried, e.message
        ));
    }
    let mut out = vec![];
    let mut missing = vec![];
    let mut too_new = vec![];
    for (name, item) in pairs {
        match loader::function(name) {
            Ok(Resolved::Loaded(p)) => out.push((name, p as usize)),
            Ok(Resolved::Linked) => out.push((name, item)),
            // A `static inline` function's copy is compiled into the crate.
            Err(loader::Unavailable::UnknownName) => out.push((name, item)),
            // Headers newer than the driver (13.5 headers on a 13.0 driver):
            // the driver has no such function to compare with; the loader
            // says so (`tests/dynamic_loading.rs` proves the classification).
            Err(loader::Unavailable::DriverTooOld) => too_new.push(name),
            // The test fails on these below: C's symbol exists, the loader found none.
            Err(why) => {
                missing.push(format!("{name}: {why:?}"));
                out.push((name, 0));
            }
        }
    }
    if !missing.is_empty() {
        println!("not resolved by the loader: {}", missing.join(", "));
    }
    if !too_new.is_empty() {
        println!(
            "newer than this driver (DriverTooOld), not checked: {}: {}",
            too_new.len(),
            too_new.join(", ")
        );
    }
    Ok(out)
}

/// Handles of the libraries the loader opened (`RTLD_LOCAL`: not in dlsym's
/// default scope).
fn loaded_handles() -> Vec<*mut libc::c_void> {
    #[cfg(feature = "dynamic-loading")]
    {
        let mut v = vec![];
        for lib in [
            cuda_mem_sys::loader::driver(),
            cuda_mem_sys::loader::runtime(),
        ]
        .into_iter()
        .flatten()
        {
            let Ok(file) = CString::new(lib.file) else {
                continue;
            };
            let h = unsafe { libc::dlopen(file.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
            if !h.is_null() {
                v.push(h);
            }
        }
        v
    }
    #[cfg(not(feature = "dynamic-loading"))]
    vec![]
}

/// Documented name → the symbol C resolves it to.
fn c_symbols(names: &[&str]) -> Result<Result<HashMap<String, String>, String>, Failed> {
    let dirs = match test_support::include_dirs() {
        Ok(d) => d,
        Err(reason) => return Ok(Err(reason)),
    };
    // The headers the bindings read (`wrapper.h`, the one list of them).
    let mut src = format!(
        "{}\n#define CMS_STR2(x) #x\n#define CMS_STR(x) CMS_STR2(x)\ncms_begin\n",
        include_str!("../../wrapper.h")
    );
    for n in names {
        src.push_str(&format!("\"{n}\" CMS_STR({n})\n"));
    }
    let dir = test_support::scratch("symbols");
    let file = dir.path().join("names.c");
    std::fs::write(&file, src).unwrap();
    let out = test_support::c_compiler(&dirs)
        .file(&file)
        .try_expand()
        .map_err(|e| format!("preprocessing: {e}"))?;
    let out = String::from_utf8_lossy(&out);
    let body = out.split("cms_begin").nth(1).ok_or("marker lost")?;
    let mut map = HashMap::new();
    for line in body.lines() {
        let mut parts = line.split('"').filter(|p| !p.trim().is_empty());
        if let (Some(name), Some(symbol)) = (parts.next(), parts.next()) {
            map.insert(name.to_string(), symbol.to_string());
        }
    }
    Ok(Ok(map))
}

/// Where a symbol is: its address and the object that defines it.
fn resolve(symbol: &str, exe: &ExeSymbols) -> Option<(usize, String)> {
    // A `static inline` function of the headers: C inlines it, the crate links
    // the out-of-line copy its build compiled from the same header.
    if let Some(a) = exe.address(&format!("{symbol}__extern")) {
        return Some((
            a,
            "the test executable (static inline, compiled from the header)".into(),
        ));
    }
    let c = CString::new(symbol).ok()?;
    for h in std::iter::once(libc::RTLD_DEFAULT).chain(loaded_handles()) {
        let addr = unsafe { libc::dlsym(h, c.as_ptr()) } as usize;
        if addr != 0 {
            return Some((addr, object_of(addr)));
        }
    }
    exe.address(symbol)
        .map(|a| (a, "the test executable (static libcudart)".into()))
}

fn object_of(addr: usize) -> String {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    if unsafe { libc::dladdr(addr as *const _, &mut info) } == 0 || info.dli_fname.is_null() {
        return "?".into();
    }
    unsafe { CStr::from_ptr(info.dli_fname) }
        .to_string_lossy()
        .into_owned()
}

/// The executable's own defined function symbols (from `.symtab`), for
/// functions linked statically that no dynamic table lists.
struct ExeSymbols {
    base: usize,
    /// `None`: the file has no `.symtab` (stripped).
    symbols: Option<HashMap<String, usize>>,
}

impl ExeSymbols {
    fn load() -> ExeSymbols {
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        unsafe { libc::dladdr(functions as *const () as *const _, &mut info) };
        let base = info.dli_fbase as usize;
        let data = std::fs::read("/proc/self/exe").unwrap_or_default();
        ExeSymbols {
            base,
            symbols: elf_function_symbols(&data),
        }
    }

    fn address(&self, symbol: &str) -> Option<usize> {
        self.symbols.as_ref()?.get(symbol).map(|v| self.base + v)
    }
}

/// Defined symbols of an ELF64 little-endian file's `.symtab`: name → value;
/// `None` if it has no `.symtab` (a stripped file) or is not such a file.
fn elf_function_symbols(d: &[u8]) -> Option<HashMap<String, usize>> {
    let u16_at = |o: usize| u16::from_le_bytes(d[o..o + 2].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(d[o..o + 4].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(d[o..o + 8].try_into().unwrap()) as usize;
    let mut out = HashMap::new();
    let mut has_symtab = false;
    if d.len() < 64 || &d[..4] != b"\x7fELF" || d[4] != 2 || d[5] != 1 {
        return None;
    }
    let (shoff, shentsize, shnum) = (u64_at(0x28), u16_at(0x3a), u16_at(0x3c));
    let section = |i: usize| shoff + i * shentsize;
    for i in 0..shnum {
        let sh = section(i);
        if u32_at(sh + 4) != 2 {
            continue; // SHT_SYMTAB
        }
        has_symtab = true;
        let (off, size, link, entsize) = (
            u64_at(sh + 0x18),
            u64_at(sh + 0x20),
            u32_at(sh + 0x28),
            u64_at(sh + 0x38),
        );
        let strtab = u64_at(section(link) + 0x18);
        for s in (off..off + size).step_by(entsize.max(24)) {
            let (name, info, shndx, value) = (u32_at(s), d[s + 4], u16_at(s + 6), u64_at(s + 8));
            if shndx == 0 || info & 0xf != 2 {
                continue; // undefined, or not STT_FUNC
            }
            let start = strtab + name;
            let end = d[start..]
                .iter()
                .position(|&b| b == 0)
                .map_or(start, |e| start + e);
            out.entry(String::from_utf8_lossy(&d[start..end]).into_owned())
                .or_insert(value);
        }
    }
    has_symtab.then_some(out)
}

/// Checks (documented name, Rust item address) pairs; returns the mismatches
/// and, per defining object, how many matched.
fn check(
    pairs: &[(&str, usize)],
    expected: &HashMap<String, String>,
    exe: &ExeSymbols,
) -> (Vec<String>, BTreeMap<String, usize>) {
    let mut mismatches = vec![];
    let mut by_object = BTreeMap::new();
    for &(name, addr) in pairs {
        let Some(symbol) = expected.get(name) else {
            mismatches.push(format!("{name}: the C preprocessor gave no symbol"));
            continue;
        };
        match resolve(symbol, exe) {
            Some((a, object)) if a == addr => *by_object.entry(object).or_insert(0) += 1,
            Some((a, object)) => mismatches.push(format!(
                "{name}: C calls {symbol} at {a:#x} in {object}; the Rust item is at {addr:#x} ({})",
                object_of(addr)
            )),
            None => mismatches.push(format!("{name}: C calls {symbol}, which no loaded object defines")),
        }
    }
    (mismatches, by_object)
}

/// Where the executable has no symbol table (`strip`), the statically linked
/// functions (libcudart_static) cannot be found: one plain message saying so,
/// instead of one "no loaded object defines" per function. Where every
/// function resolved anyway (the 12.x wheels ship no libcudart_static.a: the
/// build links libcudart.so.12, which dlsym finds), there is no verdict.
fn stripped_verdict(exe: &ExeSymbols, mismatches: &[String]) -> Option<String> {
    let unresolved = mismatches
        .iter()
        .filter(|m| m.ends_with("which no loaded object defines"))
        .count();
    if exe.symbols.is_some() || unresolved == 0 {
        return None;
    }
    let others: Vec<&String> = mismatches
        .iter()
        .filter(|m| !m.ends_with("which no loaded object defines"))
        .collect();
    Some(format!(
        "cannot read this executable's symbol table: {} has no .symtab (it was stripped), and \
         the functions linked statically (libcudart_static) can only be found there. {unresolved} \
         functions could not be resolved for that reason. Run an unstripped build of this test \
         (`strip` removes .symtab; `cargo xtask gpu-bundle` keeps it).{}",
        std::env::current_exe().map_or("the executable".into(), |p| p.display().to_string()),
        if others.is_empty() {
            String::new()
        } else {
            format!(
                " Other mismatches:\n{}",
                others
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        }
    ))
}

/// A stripped copy of this executable has no symbol table, and the check
/// then says so plainly instead of listing every static-runtime function.
fn a_stripped_executable_is_named() -> Result<Completion, Failed> {
    let dir = test_support::scratch("stripped");
    let copy = dir.path().join("stripped");
    std::fs::copy("/proc/self/exe", &copy)?;
    // The target's own binutils first: under qemu-user this test is an
    // aarch64 program, and the host's `strip` does not read aarch64 ELF.
    let tools = [
        format!("{}-linux-gnu-strip", std::env::consts::ARCH),
        "strip".to_string(),
    ];
    let mut tried = Vec::new();
    for tool in &tools {
        match std::process::Command::new(tool).arg(&copy).status() {
            Ok(s) if s.success() => break,
            Ok(s) => tried.push(format!("{tool}: {s}")),
            Err(e) => tried.push(format!("{tool}: {e}")),
        }
    }
    if tried.len() == tools.len() {
        let spawned = tried.iter().any(|t| !t.contains("No such file"));
        let message = format!(
            "no strip could strip {} ({})",
            copy.display(),
            tried.join("; ")
        );
        return if spawned {
            Err(message.into())
        } else {
            Ok(Completion::ignored_with(message))
        };
    }
    let own = elf_function_symbols(&std::fs::read("/proc/self/exe")?);
    if own.is_none() {
        return Err("this test executable itself has no .symtab".into());
    }
    let stripped = ExeSymbols {
        base: 0,
        symbols: elf_function_symbols(&std::fs::read(&copy)?),
    };
    if stripped.symbols.is_some() {
        return Err("a stripped copy still reads as having a .symtab".into());
    }
    let mismatches = vec![
        "cudaDeviceReset: C calls cudaDeviceReset, which no loaded object defines".to_string(),
        "cudaMallocAsync: C calls cudaMallocAsync, which no loaded object defines".to_string(),
    ];
    let plain = stripped_verdict(&stripped, &mismatches).ok_or("no verdict for a stripped file")?;
    if !plain.contains("no .symtab")
        || !plain.contains("2 functions")
        || plain.contains("cudaDeviceReset")
    {
        return Err(format!("the stripped verdict is not plain: {plain}").into());
    }
    let unstripped = ExeSymbols {
        base: 0,
        symbols: own,
    };
    if stripped_verdict(&unstripped, &mismatches).is_some() {
        return Err("an unstripped executable was called stripped".into());
    }
    // A shared runtime (the 12.x wheels): nothing left unresolved, no verdict.
    let resolved_elsewhere = vec![
        "cuMemAdvise: C calls cuMemAdvise_v2 at 0x1 in libcuda.so.1; the Rust item is at 0x2 (?)"
            .to_string(),
    ];
    if stripped_verdict(&stripped, &resolved_elsewhere).is_some()
        || stripped_verdict(&stripped, &[]).is_some()
    {
        return Err(
            "a stripped executable whose functions all resolved was given the verdict".into(),
        );
    }
    println!("caught: {plain}");
    Ok(Completion::Completed)
}

fn every_function_links_the_symbol_c_calls() -> Result<Completion, Failed> {
    let table = functions();
    let names: Vec<&str> = table.iter().map(|f| f.0).collect();
    let expected = match c_symbols(&names)? {
        Ok(e) => e,
        Err(reason) => return Ok(Completion::ignored_with(reason)),
    };
    let renamed = names
        .iter()
        .filter(|n| expected.get(**n).is_some_and(|s| s != *n))
        .count();
    let table = match called(table) {
        Ok(t) => t,
        Err(reason) => return test_support::ignored_unless_required(reason),
    };
    let exe = ExeSymbols::load();
    let (mismatches, by_object) = check(&table, &expected, &exe);
    if let Some(plain) = stripped_verdict(&exe, &mismatches) {
        return Err(plain.into());
    }
    println!(
        "symbols: {} functions checked ({renamed} whose documented name C renames), {} mismatched{}{}",
        table.len(),
        mismatches.len(),
        if cfg!(feature = "per-thread-default-stream") { ", per-thread default stream" } else { "" },
        if cfg!(feature = "dynamic-loading") { ", loaded at run time" } else { "" }
    );
    for (object, n) in &by_object {
        println!("  {n:5} resolved in {object}");
    }
    if !mismatches.is_empty() {
        return Err(mismatches.join("\n").into());
    }
    Ok(Completion::Completed)
}

/// The names the wrong-mapping check can use, each with the unsuffixed symbol
/// a binding that ignored the header's `#define` would link and the crate's
/// item: `cuMemAdvise` (renamed to `cuMemAdvise_v2` from CUDA 13.0, where
/// the unsuffixed symbol takes a `CUdevice`), else `cuMemAlloc` (renamed to
/// `cuMemAlloc_v2` on every release). The headers decide which applies.
fn renamed_candidates() -> [(&'static str, &'static CStr, usize, usize); 2] {
    #[cfg(not(feature = "dynamic-loading"))]
    let unsuffixed = (
        cuMemAdvise_linked_to_the_unsuffixed_symbol as *const () as usize,
        cuMemAlloc_linked_to_the_unsuffixed_symbol as *const () as usize,
    );
    // Under dynamic-loading the wrong address is the loaded driver's.
    #[cfg(feature = "dynamic-loading")]
    let unsuffixed = (0, 0);
    [
        (
            "cuMemAdvise",
            c"cuMemAdvise",
            unsuffixed.0,
            cuda_mem_sys::cuMemAdvise as *const () as usize,
        ),
        (
            "cuMemAlloc",
            c"cuMemAlloc",
            unsuffixed.1,
            cuda_mem_sys::cuMemAlloc as *const () as usize,
        ),
    ]
}

#[cfg(not(feature = "dynamic-loading"))]
extern "C" {
    // What a binding that ignores the header's `#define` would link: the old,
    // unsuffixed symbols that libcuda still exports.
    #[link_name = "cuMemAdvise"]
    fn cuMemAdvise_linked_to_the_unsuffixed_symbol();
    #[link_name = "cuMemAlloc"]
    fn cuMemAlloc_linked_to_the_unsuffixed_symbol();
}

/// The check must catch an alias that points at the wrong symbol.
fn a_wrong_mapping_is_caught() -> Result<Completion, Failed> {
    let candidates = renamed_candidates();
    let names: Vec<&str> = candidates.iter().map(|c| c.0).collect();
    let expected = match c_symbols(&names)? {
        Ok(e) => e,
        Err(reason) => return Ok(Completion::ignored_with(reason)),
    };
    let Some(&(name, c_name, _unsuffixed, item)) = candidates
        .iter()
        .find(|c| expected.get(c.0).is_some_and(|s| s != c.0))
    else {
        return Err(format!(
            "neither {names:?} is renamed by the CUDA {} headers: no wrong symbol to catch",
            cuda_mem_sys::CUDA_VERSION
        )
        .into());
    };
    println!("{name}: C calls {}", expected[name]);
    let exe = ExeSymbols::load();
    #[cfg(not(feature = "dynamic-loading"))]
    let (wrong_address, _) = (_unsuffixed, c_name);
    // A loader that looked the name up by `dlsym(name)`.
    #[cfg(feature = "dynamic-loading")]
    let wrong_address = match called(vec![("cuInit", 0)]) {
        Err(reason) => return test_support::ignored_unless_required(reason),
        Ok(_) => loaded_handles()
            .into_iter()
            .map(|h| unsafe { libc::dlsym(h, c_name.as_ptr()) } as usize)
            .find(|&a| a != 0)
            .ok_or(format!("the loaded driver exports no {name}"))?,
    };
    let wrong = [(name, wrong_address)];
    let (mismatches, _) = check(&wrong, &expected, &exe);
    if mismatches.len() != 1 {
        return Err(format!("a Rust item linked to the unsuffixed {name} was not reported").into());
    }
    println!("caught: {}", mismatches[0]);
    let right = called(vec![(name, item)])?;
    let (mismatches, _) = check(&right, &expected, &exe);
    if !mismatches.is_empty() {
        return Err(format!("the crate's own {name} was reported: {mismatches:?}").into());
    }
    Ok(Completion::Completed)
}

fn main() {
    test_support::main(test_support::checks![
        every_function_links_the_symbol_c_calls,
        a_wrong_mapping_is_caught,
        a_stripped_executable_is_named,
    ]);
}
