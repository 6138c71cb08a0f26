//! No group of the headers is left unread by accident. `wrapper.h` is the one
//! list of the headers the bindings read (its `#include` lines) and of those
//! they leave out, each with its reason (its `not read: <header>: <reason>`
//! lines). Against the headers of the build, every header that
//!
//! - a C program including `cuda.h` and `cuda_runtime.h` reads (the C
//!   preprocessor's `-M`), or
//! - documents a driver or runtime API group (a `\defgroup CUDA_...` or
//!   `\defgroup CUDART_...` comment; the device math groups `CUDA_MATH_*`
//!   are another reference's)
//!
//! is read by `wrapper.h` or listed with a reason, and no header listed as
//! left out is read. And what those headers add is in the bindings.

use libtest_mimic::{Completion, Failed};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

const WRAPPER: &str = include_str!("../wrapper.h");

/// The `not read: <header>: <reason>` lines of `wrapper.h`.
fn not_read(wrapper: &str) -> BTreeMap<String, String> {
    wrapper
        .lines()
        .filter_map(|l| l.split_once("not read: "))
        .filter_map(|(_, rest)| rest.split_once(": "))
        .map(|(h, why)| (h.trim().to_string(), why.trim().to_string()))
        .collect()
}

/// The CUDA headers (relative to their include folder) the C preprocessor
/// reads for `source`.
fn read_by(source: &str, dirs: &[PathBuf], name: &str) -> Result<BTreeSet<String>, String> {
    let scratch = test_support::scratch(name);
    let file = scratch.path().join("headers.c");
    std::fs::write(&file, source).map_err(|e| e.to_string())?;
    let out = test_support::c_compiler(dirs)
        .file(&file)
        .flag("-M")
        .try_expand()
        .map_err(|e| format!("preprocessing {source:?}: {e}"))?;
    let out = String::from_utf8_lossy(&out);
    let mut found = BTreeSet::new();
    for word in out.split_whitespace().filter(|w| *w != "\\") {
        let path = PathBuf::from(word);
        for d in dirs {
            if let Ok(rel) = path.strip_prefix(d) {
                found.insert(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    Ok(found)
}

/// The headers of the include folders that document a driver or runtime API
/// group, with the groups' ids.
fn group_headers(dirs: &[PathBuf]) -> Result<BTreeMap<String, Vec<String>>, String> {
    let mut found = BTreeMap::new();
    for d in dirs {
        let entries = std::fs::read_dir(d).map_err(|e| format!("{}: {e}", d.display()))?;
        for e in entries.filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".h") {
                continue;
            }
            let Ok(text) = std::fs::read(e.path()) else {
                continue;
            };
            let text = String::from_utf8_lossy(&text);
            let groups: Vec<String> = text
                .split("\\defgroup ")
                .skip(1)
                .filter_map(|g| g.split_whitespace().next())
                .filter(|id| {
                    (id.starts_with("CUDA_") || id.starts_with("CUDART"))
                        && !id.starts_with("CUDA_MATH")
                })
                .map(str::to_string)
                .collect();
            if !groups.is_empty() {
                found.insert(name, groups);
            }
        }
    }
    Ok(found)
}

/// What is wrong with `wrapper` against the headers in `dirs`: each header
/// neither read nor listed with a reason, each listed one that is read.
fn coverage(wrapper: &str, dirs: &[PathBuf], name: &str) -> Result<Vec<String>, String> {
    let read = read_by(wrapper, dirs, name)?;
    let program = read_by(
        "#include <cuda.h>\n#include <cuda_runtime.h>\n",
        dirs,
        &format!("{name}-program"),
    )?;
    let groups = group_headers(dirs)?;
    let listed = not_read(wrapper);
    let mut wrong = vec![];
    let wanted: BTreeSet<&String> = program.iter().chain(groups.keys()).collect();
    for h in wanted {
        if !read.contains(h) && !listed.contains_key(h) {
            let why = match groups.get(h) {
                Some(g) => format!("documents {}", g.join(", ")),
                None => "a C program including cuda.h and cuda_runtime.h reads it".into(),
            };
            wrong.push(format!(
                "{h}: not read by wrapper.h, and not listed there as `not read: {h}: <reason>` ({why})"
            ));
        }
    }
    for h in listed.keys().filter(|h| read.contains(*h)) {
        wrong.push(format!("{h}: listed as not read, but wrapper.h reads it"));
    }
    Ok(wrong)
}

fn every_header_is_read_or_left_out_with_a_reason() -> Result<Completion, Failed> {
    let dirs = match test_support::include_dirs() {
        Ok(d) => d,
        Err(reason) => return Ok(Completion::ignored_with(reason)),
    };
    let wrong = coverage(WRAPPER, &dirs, "coverage")?;
    if !wrong.is_empty() {
        return Err(format!("headers left unread: {}", wrong.join("; ")).into());
    }
    let listed = not_read(WRAPPER);
    if listed.len() < 5 || listed.values().any(|why| why.len() < 10) {
        return Err(format!("wrapper.h's `not read:` lines did not parse: {listed:?}").into());
    }
    Ok(Completion::Completed)
}

/// The wrong twins: `wrapper.h` with one of its headers taken out fails the
/// check, naming that header; so does a header left out that it reads.
fn a_header_taken_out_of_the_list_is_named() -> Result<Completion, Failed> {
    let dirs = match test_support::include_dirs() {
        Ok(d) => d,
        Err(reason) => return Ok(Completion::ignored_with(reason)),
    };
    let mut tried = 0;
    for header in ["library_types.h", "cudaProfiler.h", "cuda_profiler_api.h"] {
        if !dirs.iter().any(|d| d.join(header).is_file()) {
            continue;
        }
        let line = format!("#include <{header}>\n");
        if !WRAPPER.contains(&line) {
            return Err(format!("wrapper.h has no `{}`", line.trim()).into());
        }
        let wrong = coverage(&WRAPPER.replace(&line, ""), &dirs, "coverage-twin")?;
        if !wrong.iter().any(|w| w.starts_with(&format!("{header}:"))) {
            return Err(format!("wrapper.h without {header} went unnoticed: {wrong:?}").into());
        }
        tried += 1;
    }
    if tried == 0 {
        return Err("none of the twins' headers is in these headers".into());
    }
    let planted = WRAPPER.replace(" */", " * not read: driver_types.h: planted\n */");
    let wrong = coverage(&planted, &dirs, "coverage-twin")?;
    if !wrong.iter().any(|w| w.starts_with("driver_types.h:")) {
        return Err(format!("a listed header that is read went unnoticed: {wrong:?}").into());
    }
    Ok(Completion::Completed)
}

const GENERATED: &str = include_str!(concat!(env!("OUT_DIR"), "/cuda_mem_sys.rs"));

/// The items of the headers `wrapper.h` reads beside `cuda.h` and
/// `cuda_runtime_api.h`, each with the header that declares it: expected in
/// the bindings wherever that header (in `dirs`) declares it.
const ITEMS: [(&str, &str); 11] = [
    ("cudaProfiler.h", "fn cuProfilerInitialize"),
    ("cudaProfiler.h", "fn cuProfilerStart"),
    ("cudaProfiler.h", "fn cuProfilerStop"),
    ("cudaProfiler.h", "CUoutput_mode"),
    ("cuda_profiler_api.h", "fn cudaProfilerStart"),
    ("cuda_profiler_api.h", "fn cudaProfilerStop"),
    ("library_types.h", "cudaDataType_t"),
    ("library_types.h", "cudaDataType"),
    ("library_types.h", "cudaEmulationStrategy_t"),
    ("library_types.h", "cudaEmulationMantissaControl_t"),
    ("library_types.h", "cudaEmulationSpecialValuesSupport_t"),
];

/// The [`ITEMS`] the headers in `dirs` declare and `bindings` lacks.
fn missing_items(bindings: &str, dirs: &[PathBuf]) -> Vec<String> {
    let mut missing = vec![];
    for (header, item) in ITEMS {
        let name = item.trim_start_matches("fn ");
        let declared = dirs.iter().any(|d| {
            std::fs::read_to_string(d.join(header)).is_ok_and(|text| {
                text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .any(|w| w == name)
            })
        });
        let present = bindings
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| w == name)
            && (!item.starts_with("fn ") || bindings.contains(item));
        if declared && !present {
            missing.push(format!("{name} ({header})"));
        }
    }
    missing
}

/// The profiler's functions and `library_types.h`'s types are in the
/// bindings of these headers wherever the headers declare them (the
/// emulation enums from 13.0; the profiler headers where installed).
fn the_profiler_and_library_types_are_declared() -> Result<Completion, Failed> {
    let dirs = match test_support::include_dirs() {
        Ok(d) => d,
        Err(reason) => return Ok(Completion::ignored_with(reason)),
    };
    let missing = missing_items(GENERATED, &dirs);
    if !missing.is_empty() {
        return Err(format!("the headers declare, the bindings lack: {missing:?}").into());
    }
    if !dirs.iter().any(|d| d.join("cudaProfiler.h").is_file()) {
        return Ok(Completion::ignored_with(
            "the types are declared; these headers hold no cudaProfiler.h (no profiler package)",
        ));
    }
    Ok(Completion::Completed)
}

/// The wrong twin: bindings without `cuProfilerStop` are caught, naming it.
fn a_missing_profiler_function_is_named() -> Result<Completion, Failed> {
    let dirs = match test_support::include_dirs() {
        Ok(d) => d,
        Err(reason) => return Ok(Completion::ignored_with(reason)),
    };
    if !dirs.iter().any(|d| d.join("cudaProfiler.h").is_file()) {
        return Ok(Completion::ignored_with(
            "these headers hold no cudaProfiler.h",
        ));
    }
    let planted = GENERATED.replace("cuProfilerStop", "cuProfilerStopped");
    let missing = missing_items(&planted, &dirs);
    if missing != ["cuProfilerStop (cudaProfiler.h)"] {
        return Err(format!("bindings without cuProfilerStop: {missing:?}").into());
    }
    Ok(Completion::Completed)
}

fn main() {
    test_support::main(test_support::checks![
        every_header_is_read_or_left_out_with_a_reason,
        a_header_taken_out_of_the_list_is_named,
        the_profiler_and_library_types_are_declared,
        a_missing_profiler_function_is_named,
    ]);
}
