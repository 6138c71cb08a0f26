//! `cargo xtask libclang22`: the bindings bindgen makes with libclang 22 equal
//! those it makes with libclang 19 (CI's), for the releases of CI's ABI
//! matrix. libclang 22 changed how it reports some declarations, and
//! bindgen releases before the fix for it (rust-bindgen #3383, #3264)
//! silently dropped struct fields there, leaving `_address: u8`: a crate
//! built on a distribution whose default libclang is 22 would get such
//! bindings with no error.
//!
//! bindgen loads libclang once per process, so each generation runs in a
//! child process of this program (`libclang-bindings`) with `LIBCLANG_PATH`
//! at one version's folder; the child says which libclang it loaded. The
//! two outputs are compared item by item: an item only one side has, or
//! that differs, is named, as is a difference in documentation alone (the
//! headers' comments as each libclang extracts them). Any difference fails
//! the step.

use crate::cmd::{run_cmd, step};
use crate::headers;
use generator::{codegen, locate};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const LIBCLANG_19: &str = "/usr/lib/llvm-19/lib";
const LIBCLANG_22: &str = "/usr/lib/llvm-22/lib";

/// libclang 22, installed where missing (Debian/Ubuntu, as root).
fn ensure_libclang22() -> Result<(), String> {
    let dir = Path::new(LIBCLANG_22);
    if !dir.join("libclang.so").exists() && !dir.join("libclang-22.so").exists() {
        step("installing libclang-22-dev");
        run_cmd(Command::new("apt-get").args(["update", "-qq"]))?;
        run_cmd(Command::new("apt-get").args(["install", "-y", "-qq", "libclang-22-dev"]))?;
    }
    Ok(())
}

/// `libclang22`'s releases, checked: CI's ABI releases unless named.
pub fn parse<'a>(args: &[&'a str]) -> Result<Vec<&'a str>, String> {
    if args.is_empty() {
        return Ok(crate::releases::ends_and_pinned());
    }
    for a in args {
        headers::check(a, headers::HOST_TARGET).map_err(|e| format!("libclang22: {e}"))?;
    }
    Ok(args.to_vec())
}

/// `cargo xtask libclang22 [<release>...]`.
pub fn run(workspace: &Path, args: &[&str]) -> Result<(), String> {
    let releases = parse(args)?;
    crate::cmd::ensure_libclang()?;
    ensure_libclang22()?;
    let started = std::time::Instant::now();
    let mut problems = vec![];
    for release in releases {
        step(&format!(
            "CUDA {release}: the bindings from libclang 22 against libclang 19's"
        ));
        let include = headers::fetch(workspace, release)?;
        let dir = workspace.join(format!("target/libclang22/{release}"));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        // Both generations at once (one libclang each, a process each).
        let t = std::time::Instant::now();
        let mut children = vec![];
        for (lib, version) in [(LIBCLANG_19, 19), (LIBCLANG_22, 22)] {
            let out = dir.join(format!("bindings-{version}.rs"));
            let child = Command::new(std::env::current_exe().map_err(|e| e.to_string())?)
                .args(["libclang-bindings"])
                .arg(&include)
                .arg(&out)
                .env("LIBCLANG_PATH", lib)
                .current_dir(workspace)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .map_err(|e| format!("starting the generator child: {e}"))?;
            children.push((lib, version, out, child));
        }
        let mut texts = vec![];
        for (lib, version, out, child) in children {
            let child = child
                .wait_with_output()
                .map_err(|e| format!("the generator child: {e}"))?;
            let said = String::from_utf8_lossy(&child.stdout).trim().to_string();
            if !child.status.success() {
                return Err(format!(
                    "CUDA {release}, LIBCLANG_PATH={lib}: the generator failed ({}):\n{said}\n{}",
                    child.status,
                    String::from_utf8_lossy(&child.stderr)
                ));
            }
            println!("{said}");
            let want = format!("clang version {version}.");
            if !said.contains(&want) {
                return Err(format!(
                    "LIBCLANG_PATH={lib} loaded another libclang: {said:?} (wanted {want})"
                ));
            }
            texts.push(std::fs::read_to_string(&out).map_err(|e| e.to_string())?);
        }
        println!("(both generated in {:.1} s)", t.elapsed().as_secs_f64());
        // Byte-identical needs no parse.
        if texts[0] == texts[1] {
            println!(
                "CUDA {release}: identical ({} bytes, {} lines)",
                texts[0].len(),
                texts[0].lines().count()
            );
            continue;
        }
        let diffs = compare(&texts[0], &texts[1])?;
        if diffs.is_empty() {
            println!("CUDA {release}: the same items (the text differs in layout only)");
        } else {
            println!("CUDA {release}: {} items differ", diffs.len());
            for d in &diffs {
                println!("  {d}");
            }
            problems.push(format!("CUDA {release}: {}", diffs.join("; ")));
        }
    }
    println!(
        "(libclang 22 against 19: {:.0} s)",
        started.elapsed().as_secs_f64()
    );
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the bindings differ between libclang 19 and 22:\n{}",
            problems.join("\n")
        ))
    }
}

/// The child: the crate's generator over `include`, written to `out`;
/// prints the libclang bindgen loaded.
pub fn child(include: &str, out: &str) -> Result<(), String> {
    let include = PathBuf::from(include);
    let workspace = crate::cmd::workspace();
    let cuda = locate::at_root(&include, std::env::consts::ARCH, "headers".into())
        .ok_or("the headers hold no cuda.h")??;
    let work_dir = Path::new(out).with_extension("work");
    std::fs::create_dir_all(&work_dir).map_err(|e| e.to_string())?;
    let generated = codegen::generate(&codegen::Input {
        include_dirs: &cuda.include_dirs,
        crate_dir: &workspace,
        work_dir: &work_dir,
        cc: generator::tools::host_cc(),
        per_thread_default_stream: false,
        // What a user's build writes: NVIDIA's comments as libclang reads them.
        docs: codegen::Docs::Headers,
        lap: &|_| {},
    })?;
    std::fs::write(out, generator::tools::pretty(&generated)).map_err(|e| format!("{out}: {e}"))?;
    println!("{}", bindgen::clang_version().full);
    Ok(())
}

/// Each item's key (kind and name, in file order where a name repeats)
/// mapped to its tokens, with and without its documentation.
fn items(text: &str) -> Result<BTreeMap<String, (String, String)>, String> {
    let file = syn::parse_file(text).map_err(|e| format!("parsing the bindings: {e}"))?;
    let mut out = BTreeMap::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut add = |key: String, item: &syn::Item, out: &mut BTreeMap<String, (String, String)>| {
        let n = seen.entry(key.clone()).or_default();
        *n += 1;
        let key = if *n > 1 { format!("{key} #{n}") } else { key };
        let mut bare = item.clone();
        strip_docs(&mut bare);
        out.insert(
            key,
            (
                quote::quote!(#item).to_string(),
                quote::quote!(#bare).to_string(),
            ),
        );
    };
    walk(&file.items, "", &mut |key, item| add(key, item, &mut out));
    Ok(out)
}

fn walk(items: &[syn::Item], module: &str, f: &mut dyn FnMut(String, &syn::Item)) {
    for item in items {
        let name = |kind: &str, ident: &dyn std::fmt::Display| format!("{kind} {module}{ident}");
        match item {
            syn::Item::Mod(m) => match &m.content {
                Some((_, inner)) => walk(inner, &format!("{module}{}::", m.ident), f),
                None => f(name("mod", &m.ident), item),
            },
            // One key per function of an extern block.
            syn::Item::ForeignMod(fm) => {
                for fi in &fm.items {
                    let mut one = fm.clone();
                    one.items = vec![fi.clone()];
                    let key = match fi {
                        syn::ForeignItem::Fn(x) => name("fn", &x.sig.ident),
                        syn::ForeignItem::Static(x) => name("static", &x.ident),
                        _ => name("foreign", &"?"),
                    };
                    f(key, &syn::Item::ForeignMod(one));
                }
            }
            syn::Item::Struct(x) => f(name("struct", &x.ident), item),
            syn::Item::Union(x) => f(name("union", &x.ident), item),
            syn::Item::Enum(x) => f(name("enum", &x.ident), item),
            syn::Item::Type(x) => f(name("type", &x.ident), item),
            syn::Item::Const(x) => f(name("const", &x.ident), item),
            syn::Item::Static(x) => f(name("static", &x.ident), item),
            syn::Item::Fn(x) => f(name("fn", &x.sig.ident), item),
            syn::Item::Impl(x) => {
                let ty = &x.self_ty;
                let tr = x
                    .trait_
                    .as_ref()
                    .map(|(_, p)| quote::quote!(#p).to_string());
                let key = format!(
                    "impl {}{}",
                    tr.map(|t| format!("{t} for ")).unwrap_or_default(),
                    quote::quote!(#ty)
                );
                f(name("", &key).trim().to_string(), item)
            }
            syn::Item::Use(x) => f(name("use", &quote::quote!(#x).to_string()), item),
            other => f(name("item", &quote::quote!(#other).to_string()), item),
        }
    }
}

/// Removes `#[doc]` attributes at every depth (items, fields, variants,
/// foreign functions, impl items).
fn strip_docs(item: &mut syn::Item) {
    use syn::visit_mut::VisitMut;
    struct Strip;
    impl VisitMut for Strip {
        fn visit_attributes_mut(&mut self, attrs: &mut Vec<syn::Attribute>) {
            attrs.retain(|a| !a.path().is_ident("doc"));
        }
    }
    Strip.visit_item_mut(item);
}

/// Every difference between libclang 19's bindings (`a`) and 22's (`b`).
pub fn compare(a: &str, b: &str) -> Result<Vec<String>, String> {
    let (a, b) = (items(a)?, items(b)?);
    let mut diffs = vec![];
    for (key, (full, bare)) in &a {
        match b.get(key) {
            None => diffs.push(format!("{key}: libclang 19 only")),
            Some((_, bare22)) if bare22 != bare => diffs.push(format!(
                "{key}: differs: 19 `{}` / 22 `{}`",
                short(bare),
                short(bare22)
            )),
            Some((full22, _)) if full22 != full => {
                diffs.push(format!("{key}: documentation differs"))
            }
            _ => {}
        }
    }
    for key in b.keys().filter(|k| !a.contains_key(*k)) {
        diffs.push(format!("{key}: libclang 22 only"));
    }
    Ok(diffs)
}

fn short(s: &str) -> String {
    if s.chars().count() > 300 {
        s.chars().take(300).chain("...".chars()).collect()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::compare;

    /// The wrong twin: libclang 22's known failure, a struct whose fields
    /// are dropped for `_address: u8`, and a field documented otherwise.
    #[test]
    fn a_dropped_field_and_a_doc_change_are_named() {
        let a = "#[repr(C)] pub struct CUmemLocation_st { pub type_: u32, pub id: i32 }\n\
                 pub struct B { #[doc = \" x\"] pub x: u8 }\npub const C: u32 = 1;\n";
        let b = "#[repr(C)] pub struct CUmemLocation_st { pub _address: u8 }\n\
                 pub struct B { #[doc = \" y\"] pub x: u8 }\npub const C: u32 = 1;\n";
        let d = compare(a, b).unwrap();
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d[0].starts_with("struct B: documentation differs"), "{d:?}");
        assert!(
            d[1].starts_with("struct CUmemLocation_st: differs") && d[1].contains("_address"),
            "{d:?}"
        );
        assert!(compare(a, a).unwrap().is_empty());
        let gone = compare(a, "pub const C: u32 = 1;").unwrap();
        assert!(
            gone.iter().any(|g| g == "struct B: libclang 19 only"),
            "{gone:?}"
        );
    }
}
