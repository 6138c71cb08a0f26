//! Every constant the headers define, present in the bindings with C's value:
//! each enumerator of every enum and each object-like macro with a value
//! (a number in it, or another constant's name: `CUDA_VERSION`,
//! `CU_STREAM_LEGACY ((CUstream)0x1)`), read from the headers the bindings
//! were made from as the C preprocessor writes them (`-dD`). For each:
//!
//! - the crate-level constant of that name exists, and the C compiler
//!   asserts its value is Rust's (same sign, same bits; an address for a
//!   pointer);
//! - an enumerator's constant has its enum's newtype (the one named after
//!   the C tag, or typedef where the enum has no tag), and that newtype has
//!   it as an associated constant (`CUresult::CUDA_SUCCESS`), also with C's
//!   value.
//!
//! A constant missing from the bindings fails, named; `abi_layout` compares
//! the values of those present, this check also the associated ones and
//! what is absent. The wrong twin: the same table over a copy of the
//! bindings' types and constants with bugs planted
//! (`constant_table::planted_copy`), compiled in here as `planted`, must be
//! named for exactly those.

mod c_asserts;
mod layout_support;

use c_text::{c_constants, CConstant};
use libtest_mimic::{Completion, Failed};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::OnceLock;

/// A constant's value as rustc computes it.
#[derive(Clone, Copy, Debug)]
pub enum Value {
    Int(i128),
    Pointer(u128),
    /// A type with no integer value (none in these headers).
    Other,
}

/// One constant of the bindings (an associated one as `Type::NAME`).
pub struct Constant {
    pub name: &'static str,
    /// The struct or newtype its type names, through aliases.
    pub ty: &'static str,
    pub value: Value,
}

impl Constant {
    fn new(name: &'static str, ty: &'static str, value: Value) -> Self {
        Constant { name, ty, value }
    }
}

mod table {
    use super::{Constant, Value};
    include!(concat!(env!("OUT_DIR"), "/abi/constants.rs"));
}

#[allow(
    dead_code,
    unused_imports,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    clippy::all
)]
mod planted {
    include!(concat!(env!("OUT_DIR"), "/abi/constants_planted.rs"));
}

mod planted_table {
    use super::{Constant, Value};
    include!(concat!(env!("OUT_DIR"), "/abi/constants_planted_table.rs"));
}

const MARKER: &str = "ABI-CONST ";

/// The include folders and the headers' constants; `Ok(Err(reason))`:
/// nothing to read here (reported ignored); `Err`: reading them failed.
type Headers = Result<Result<(Vec<PathBuf>, Vec<CConstant>), String>, String>;

/// The headers' constants, once per run.
fn headers() -> &'static Headers {
    static H: OnceLock<Headers> = OnceLock::new();
    H.get_or_init(|| {
        let dirs = match c_asserts::include_dirs() {
            Ok(d) => d,
            Err(reason) => return Ok(Err(reason)),
        };
        let work = test_support::scratch_under_target("abi_constants_pp");
        let file = work.path().join("wrapper.h");
        std::fs::write(&file, include_str!("../../wrapper.h")).map_err(|e| e.to_string())?;
        let tool = layout_support::compiler();
        let mut cmd = tool.to_command();
        for d in &dirs {
            cmd.arg(format!("-I{}", d.display()));
        }
        cmd.args(["-E", "-dD"]).arg(&file);
        let out =
            test_support::host_output(&mut cmd).map_err(|e| format!("running {cmd:?}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "preprocessing the headers failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        Ok(Ok((dirs.clone(), c_constants(&text, &dirs))))
    })
}

/// What is wrong between the headers' constants and a table: each
/// problem `name: why`, from Rust's side and from the C compiler's asserts.
fn problems(
    dirs: &[PathBuf],
    c: &[CConstant],
    constants: &[Constant],
    types: &[(&str, &str)],
    scratch: &str,
) -> Result<(Vec<String>, usize), String> {
    let by_name: BTreeMap<&str, &Constant> = constants.iter().map(|k| (k.name, k)).collect();
    let types: BTreeMap<&str, &str> = types.iter().copied().collect();
    let mut found = vec![];
    let mut source = String::from(
        "/* Written by abi-proofs/tests/abi_constants.rs: each constant's Rust value, asserted. */\n\
         #include \"lc_prelude.h\"\n#include <stdint.h>\n\n",
    );
    let mut asserted = 0;
    let mut assert = |key: &str, c_name: &str, v: Value, source: &mut String| {
        let (test, said) = match v {
            Value::Int(n) => {
                let lit = if n < 0 {
                    format!("(unsigned long long)({n}LL)")
                } else {
                    format!("{n}ULL")
                };
                (
                    format!(
                        "(((({c_name}) < 0) == {}) && ((unsigned long long)({c_name}) == {lit}))",
                        i32::from(n < 0)
                    ),
                    n.to_string(),
                )
            }
            Value::Pointer(p) => (
                format!("((unsigned long long)(uintptr_t)({c_name}) == {p}ULL)"),
                format!("the address {p}"),
            ),
            Value::Other => return false,
        };
        asserted += 1;
        let _ = writeln!(
            source,
            "_Static_assert({test}, \"{MARKER}{key}: C's value is not Rust's {said}\");"
        );
        true
    };
    let no_value = |key: &str| format!("{key}: its Rust type has no integer or address to compare");
    for k in c.iter().filter(|k| in_allowlist(&k.name)) {
        let Some(rust) = by_name.get(k.name.as_str()) else {
            found.push(format!(
                "{}: missing from the bindings ({})",
                k.name, k.origin
            ));
            continue;
        };
        if !assert(&k.name, &k.name, rust.value, &mut source) {
            found.push(no_value(&k.name));
        }
        if k.origin.starts_with("enumerator") {
            // The newtype C's enum is in Rust (by its tag, else its typedef);
            // an anonymous enum has none: the constant's own type.
            let newtype = match k.enum_names.iter().find_map(|n| types.get(n.as_str())) {
                Some(t) => *t,
                None if k.enum_names.is_empty() => rust.ty,
                None => {
                    found.push(format!(
                        "{}: its enum {} has no type in the bindings",
                        k.name,
                        k.enum_names.join("/")
                    ));
                    continue;
                }
            };
            if rust.ty != newtype {
                found.push(format!(
                    "{}: of type {}, where C declares it in enum {} ({newtype})",
                    k.name,
                    rust.ty,
                    k.enum_names.join("/")
                ));
            }
            let key = format!("{newtype}::{}", k.name);
            match by_name.get(key.as_str()) {
                None => found.push(format!("{key}: missing from the bindings ({})", k.origin)),
                Some(a) => {
                    if !assert(&key, &k.name, a.value, &mut source) {
                        found.push(no_value(&key));
                    }
                }
            }
        }
    }
    let verdict = c_asserts::judge(
        dirs,
        scratch,
        include_str!("../../wrapper.h"),
        &source,
        MARKER,
    )?;
    found.extend(verdict.failed.into_iter().map(|m| m.replace("\\'", "'")));
    Ok((found, asserted))
}

fn name_of(problem: &str) -> &str {
    problem.split_once(": ").map_or(problem, |(k, _)| k)
}

/// The names the generator binds: bindgen's allowlist
/// (`build/codegen/bindgen_config.rs`: `(CU|cu|CUDA|cuda).*`). A constant
/// outside it (cuda.h's OpenCL interop enumerators, `NVCL_*`) is counted and
/// listed, not required.
fn in_allowlist(name: &str) -> bool {
    ["CU", "cu", "CUDA", "cuda"]
        .iter()
        .any(|p| name.starts_with(p))
}

fn every_c_constant_is_bound_with_its_value() -> Result<Completion, Failed> {
    let (dirs, c) = match headers() {
        Err(e) => return Err(e.clone().into()),
        Ok(Err(reason)) => return Ok(Completion::ignored_with(reason.clone())),
        Ok(Ok(h)) => h,
    };
    let enumerators = c.iter().filter(|k| k.origin.starts_with("enum")).count();
    let outside: Vec<&str> = c
        .iter()
        .filter(|k| !in_allowlist(&k.name))
        .map(|k| k.name.as_str())
        .collect();
    let (found, asserted) = problems(dirs, c, &table::constants(), table::TYPES, "abi_constants")?;
    println!(
        "constants: {} in the headers ({enumerators} enumerators, {} macros); {asserted} values \
         asserted by the C compiler (crate-level and associated); {} problems; {} outside the \
         generator's names (CU*, cu*, CUDA*, cuda*): {outside:?}",
        c.len(),
        c.len() - enumerators,
        found.len(),
        outside.len()
    );
    if !found.is_empty() {
        return Err(format!(
            "{} constants of the headers missing or different in the bindings:\n  {}",
            found.len(),
            found.join("\n  ")
        )
        .into());
    }
    if enumerators < 500 || c.len() - enumerators < 50 {
        return Err(format!("too few constants found in the headers: {}", c.len()).into());
    }
    Ok(Completion::Completed)
}

/// The planted bugs (dropped enumerator, macro, cast-macro and
/// macro-through-a-macro constants, a dropped and a wrong associated
/// constant, a wrong value, an enumerator given another enum's newtype) are
/// each named, and nothing else.
fn each_planted_constant_bug_is_named() -> Result<Completion, Failed> {
    let (dirs, c) = match headers() {
        Err(e) => return Err(e.clone().into()),
        Ok(Err(reason)) => return Ok(Completion::ignored_with(reason.clone())),
        Ok(Ok(h)) => h,
    };
    let (found, _) = problems(
        dirs,
        c,
        &planted_table::constants(),
        planted_table::TYPES,
        "abi_constants_planted",
    )?;
    let list = include_str!(concat!(env!("OUT_DIR"), "/abi/constants_planted.txt"));
    let planted: BTreeSet<&str> = list
        .lines()
        .filter_map(|l| l.split_once('\t').map(|(k, _)| k))
        .collect();
    let named: BTreeSet<&str> = found.iter().map(|p| name_of(p)).collect();
    println!("planted: {planted:?}\nnamed:\n  {}", found.join("\n  "));
    if named != planted {
        return Err(format!(
            "the check named {named:?} for the planted {planted:?}:\n  {}",
            found.join("\n  ")
        )
        .into());
    }
    Ok(Completion::Completed)
}

/// What `c_constants` counts, on a `-dD` text of its own: a macro with a
/// number, one through an enumerator, and macros through macros (two and
/// three deep, declared before and after the one they name) are constants;
/// a function-like macro, an empty one, a reserved name, a macro through a
/// name that is no constant, an `#undef`'d one and one outside the CUDA
/// folders are not.
fn a_macro_defined_through_another_macro_counts() -> Result<Completion, Failed> {
    let text = "\
# 1 \"/cuda/include/cuda.h\"
#define CU_DEEP (CU_THROUGH)
#define CU_AS_INT 0x00
#define CU_THROUGH ((void*)CU_AS_INT)
#define CU_DEEPER CU_DEEP
#define CU_BY_ENUM ((CUe)CU_E_ONE)
#define CU_CALL(x) (x + 1)
#define CU_EMPTY
#define _CU_RESERVED 1
#define CU_NOT_A_CONSTANT cuSomething
#define CU_GONE 7
#undef CU_GONE
typedef enum CUe_enum { CU_E_ONE = 1 } CUe;
# 1 \"/usr/include/stdint.h\"
#define CU_ELSEWHERE 3
";
    let found = c_constants(text, &[PathBuf::from("/cuda/include")]);
    let names: Vec<&str> = found.iter().map(|c| c.name.as_str()).collect();
    let want = [
        "CU_E_ONE",
        "CU_AS_INT",
        "CU_BY_ENUM",
        "CU_DEEP",
        "CU_DEEPER",
        "CU_THROUGH",
    ];
    if names != want {
        return Err(format!("counted {names:?}, not {want:?}").into());
    }
    // And in the headers: the launch parameters, constants only through
    // the `_AS_INT` macros they cast (162 macros at 13.0 with them).
    let (_, c) = match headers() {
        Err(e) => return Err(e.clone().into()),
        Ok(Err(reason)) => return Ok(Completion::ignored_with(reason.clone())),
        Ok(Ok(h)) => h,
    };
    let missing: Vec<&str> = [
        "CU_LAUNCH_PARAM_END",
        "CU_LAUNCH_PARAM_BUFFER_POINTER",
        "CU_LAUNCH_PARAM_BUFFER_SIZE",
    ]
    .into_iter()
    .filter(|n| {
        !c.iter()
            .any(|k| k.name == *n && k.origin.starts_with("#define"))
    })
    .collect();
    if !missing.is_empty() {
        return Err(format!("not counted as constants of the headers: {missing:?}").into());
    }
    Ok(Completion::Completed)
}

fn main() {
    test_support::main(test_support::checks![
        every_c_constant_is_bound_with_its_value,
        each_planted_constant_bug_is_named,
        a_macro_defined_through_another_macro_counts,
    ]);
}
