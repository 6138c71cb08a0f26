//! Every object-like macro of the CUDA headers is either provided by the
//! crate (as a constant, type, or function of the same name) or listed here
//! with the reason it has no Rust counterpart.

use libtest_mimic::{Completion, Failed};
use std::collections::{BTreeMap, BTreeSet};

const GENERATED: &str = include_str!(concat!(env!("OUT_DIR"), "/cuda_mem_sys.rs"));

/// Names the generated bindings define (parsed: the build script writes them
/// as compact tokens, the committed copies pretty-printed).
fn provided() -> BTreeSet<String> {
    let file = syn::parse_file(GENERATED).expect("the generated bindings parse");
    let mut names = BTreeSet::new();
    for item in &file.items {
        match item {
            syn::Item::Const(c) => {
                names.insert(c.ident.to_string());
            }
            syn::Item::Type(t) => {
                names.insert(t.ident.to_string());
            }
            syn::Item::Struct(s) => {
                names.insert(s.ident.to_string());
            }
            syn::Item::Union(u) => {
                names.insert(u.ident.to_string());
            }
            syn::Item::Use(u) if matches!(u.vis, syn::Visibility::Public(_)) => {
                if let syn::UseTree::Path(p) = &u.tree {
                    if let syn::UseTree::Rename(r) = &*p.tree {
                        names.insert(r.rename.to_string());
                    }
                }
            }
            syn::Item::ForeignMod(m) => {
                for f in &m.items {
                    if let syn::ForeignItem::Fn(f) = f {
                        names.insert(f.sig.ident.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    names
}

/// Why a macro has no Rust counterpart, or `None` if it should have one.
fn reason(name: &str, body: &str, unprovided: &BTreeMap<String, String>) -> Option<String> {
    let no_value = [
        "__attribute__",
        "_Pragma",
        "__location__",
        "__inline__",
        "__thread",
        "__declspec",
    ];
    if body.is_empty() {
        return Some(
            "expands to nothing: include guard, feature marker or calling convention".into(),
        );
    }
    if no_value.iter().any(|k| body.contains(k)) {
        return Some("a compiler attribute, pragma or storage keyword: no value".into());
    }
    if unprovided.contains_key(body) && body != name {
        return Some(format!("another name for `{body}`, which has no value"));
    }
    if name.starts_with("__") {
        return Some("reserved identifier, internal to the headers".into());
    }
    None
}

fn every_macro_is_provided_or_explained() -> Result<Completion, Failed> {
    let dirs = match test_support::include_dirs() {
        Ok(d) => d,
        Err(reason) => return Ok(Completion::ignored_with(reason)),
    };
    let dir = test_support::scratch("macros");
    let file = dir.path().join("macros.c");
    // The headers the bindings read (`wrapper.h`, the one list of them).
    std::fs::write(&file, include_str!("../wrapper.h")).unwrap();
    let out = test_support::c_compiler(&dirs)
        .file(&file)
        .flag("-dD")
        .try_expand()
        .map_err(|e| e.to_string())?;
    let out = String::from_utf8_lossy(&out);
    let mut from_cuda = false;
    let mut macros = BTreeMap::new();
    for line in out.lines() {
        if let Some(path) = line.strip_prefix("# ").and_then(|r| r.split('"').nth(1)) {
            from_cuda = dirs.iter().any(|d| path.starts_with(&*d.to_string_lossy()));
        } else if let Some(def) = line.strip_prefix("#define ").filter(|_| from_cuda) {
            let end = def
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(def.len());
            let (name, rest) = def.split_at(end);
            if !rest.starts_with('(') {
                macros.insert(name.to_string(), rest.trim().to_string());
            }
        }
    }
    let provided = provided();
    let unprovided: BTreeMap<String, String> = macros
        .iter()
        .filter(|(n, _)| !provided.contains(*n))
        .map(|(n, b)| (n.clone(), b.clone()))
        .collect();
    let mut unexplained = vec![];
    println!(
        "{} object-like macros; {} provided; not provided:",
        macros.len(),
        macros.len() - unprovided.len()
    );
    for (name, body) in &unprovided {
        match reason(name, body, &unprovided) {
            Some(r) => println!("  {name:55} {r}"),
            None => unexplained.push(format!("{name} = {body}")),
        }
    }
    if !unexplained.is_empty() {
        return Err(format!("macros neither provided nor explained: {unexplained:?}").into());
    }
    for must in [
        "CU_STREAM_LEGACY",
        "CU_STREAM_PER_THREAD",
        "cudaStreamLegacy",
        "cudaStreamPerThread",
        "CU_DEVICE_CPU",
        "CU_DEVICE_INVALID",
        "cudaCpuDeviceId",
        "cudaInvalidDeviceId",
        "CU_LAUNCH_PARAM_END",
        "CU_TRSF_READ_AS_INTEGER",
        "CUDA_ARRAY3D_SPARSE",
        "CUDA_VERSION",
    ] {
        if !provided.contains(must) {
            return Err(format!("{must} is not provided").into());
        }
    }
    Ok(Completion::Completed)
}

/// The values and types of the cast macros, as C gives them.
fn cast_macros_have_their_c_values() -> Result<Completion, Failed> {
    use cuda_mem_sys::*;
    let checks = [
        (CU_STREAM_LEGACY as usize, 1),
        (CU_STREAM_PER_THREAD as usize, 2),
        (cudaStreamLegacy as usize, 1),
        (cudaStreamPerThread as usize, 2),
        (CU_LAUNCH_PARAM_END as usize, 0),
        (CU_LAUNCH_PARAM_BUFFER_POINTER as usize, 1),
        (CU_LAUNCH_PARAM_BUFFER_SIZE as usize, 2),
    ];
    for (i, (got, want)) in checks.iter().enumerate() {
        if got != want {
            return Err(format!("cast macro #{i}: {got} != {want}").into());
        }
    }
    let (cpu, invalid): (CUdevice, CUdevice) = (CU_DEVICE_CPU, CU_DEVICE_INVALID);
    let (rcpu, rinvalid): (core::ffi::c_int, core::ffi::c_int) =
        (cudaCpuDeviceId, cudaInvalidDeviceId);
    if (cpu, invalid, rcpu, rinvalid) != (-1, -2, -1, -2) {
        return Err("device id macros differ from C".into());
    }
    let _: CUstream = CU_STREAM_PER_THREAD;
    let _: cudaStream_t = cudaStreamPerThread;
    Ok(Completion::Completed)
}

fn main() {
    test_support::main(test_support::checks![
        every_macro_is_provided_or_explained,
        cast_macros_have_their_c_values,
    ]);
}
