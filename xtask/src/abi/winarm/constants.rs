//! The constants check (`abi-proofs/tests/abi_constants.rs`) at compile
//! time: every constant the headers define for the target (each enumerator,
//! each object-like macro with a value, from clang's `-E -dD`, as the test
//! reads them) is a crate-level constant; an enumerator's constant has its
//! enum's newtype and is that newtype's associated constant. The values go
//! the other way from the test's: C's, read from the IR of calls
//! ([`super::ir_facts`]), asserted by rustc's const evaluation for the
//! target against the Rust table (`constants.rs`, and the planted copy
//! `constants_planted_table.rs` over `constants_planted.rs`: the wrong twin).

use std::collections::BTreeMap;
use std::fmt::Write as _;

pub const MARKER: &str = "ABI-CONST ";

pub use c_text::{c_constants, tokens, CConstant, Tok};

/// The names the generator binds (bindgen's allowlist `(CU|cu|CUDA|cuda).*`).
pub fn in_allowlist(name: &str) -> bool {
    ["CU", "cu", "CUDA", "cuda"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// A constant of the Rust table: its type's resolved name and how rustc
/// computes its value (`None`: no integer or address).
pub struct RustConstant {
    pub ty: String,
    pub value: Option<Value>,
}

pub enum Value {
    /// An `i128` expression.
    Int(String),
    /// A pointer expression, its address compared.
    Pointer(String),
}

/// The table's constants by name, and each type's resolved name.
pub type Table = (BTreeMap<String, RustConstant>, BTreeMap<String, String>);

/// The table's constants by name and its types (`constants.rs`'s lines).
pub fn rust_table(text: &str) -> Result<Table, String> {
    let mut constants = BTreeMap::new();
    let mut types = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("Constant::new(\"") {
            let bad = || format!("constants.rs: a line of another shape: {line}");
            let (name, rest) = rest.split_once("\", \"").ok_or_else(bad)?;
            let (ty, value) = rest.split_once("\", ").ok_or_else(bad)?;
            let value = if value == "Value::Other)," {
                None
            } else if let Some(e) = value
                .strip_suffix(")),")
                .and_then(|v| v.strip_prefix("Value::Int("))
            {
                Some(Value::Int(format!("({e})")))
            } else if let Some(e) = value
                .strip_suffix(")),")
                .and_then(|v| v.strip_prefix("Value::Pointer("))
            {
                let p = e.strip_suffix(" as usize as u128").ok_or_else(bad)?;
                Some(Value::Pointer(p.to_string()))
            } else {
                return Err(bad());
            };
            constants.insert(
                name.to_string(),
                RustConstant {
                    ty: ty.to_string(),
                    value,
                },
            );
        } else if let Some(rest) = line.strip_prefix("(\"") {
            if let Some((n, r)) = rest
                .strip_suffix("\"),")
                .and_then(|r| r.split_once("\", \""))
            {
                types.insert(n.to_string(), r.to_string());
            }
        }
    }
    if constants.is_empty() {
        return Err("constants.rs: no constant read".into());
    }
    Ok((constants, types))
}

/// One value to compare: the key (`NAME` or `Type::NAME`), the C
/// constant's name, the Rust expression.
pub struct ValueCheck<'a> {
    pub key: String,
    pub c_name: &'a str,
    pub rust: &'a Value,
}

/// What the headers' constants and a table disagree on by name and type
/// (each `key: why`), and the values left to compare.
pub fn problems<'a>(
    c: &'a [CConstant],
    constants: &'a BTreeMap<String, RustConstant>,
    types: &'a BTreeMap<String, String>,
) -> (Vec<String>, Vec<ValueCheck<'a>>) {
    let mut found = vec![];
    let mut values = vec![];
    let no_value = |key: &str| format!("{key}: its Rust type has no integer or address to compare");
    for k in c.iter().filter(|k| in_allowlist(&k.name)) {
        let Some(rust) = constants.get(&k.name) else {
            found.push(format!(
                "{}: missing from the bindings ({})",
                k.name, k.origin
            ));
            continue;
        };
        match &rust.value {
            Some(v) => values.push(ValueCheck {
                key: k.name.clone(),
                c_name: &k.name,
                rust: v,
            }),
            None => found.push(no_value(&k.name)),
        }
        if !k.origin.starts_with("enumerator") {
            continue;
        }
        let newtype = match k.enum_names.iter().find_map(|n| types.get(n)) {
            Some(t) => t.as_str(),
            None if k.enum_names.is_empty() => rust.ty.as_str(),
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
        match constants.get(&key) {
            None => found.push(format!("{key}: missing from the bindings ({})", k.origin)),
            Some(a) => match &a.value {
                Some(v) => values.push(ValueCheck {
                    key,
                    c_name: &k.name,
                    rust: v,
                }),
                None => found.push(no_value(&key)),
            },
        }
    }
    (found, values)
}

/// The C file whose `lc_fact` calls carry each constant's C value.
pub fn c_values(values: &[ValueCheck]) -> String {
    let mut c = String::from(
        "/* cargo xtask abi --target aarch64-pc-windows-msvc: the constants' C values as calls. */\n\
         #include \"lc_prelude.h\"\n#include <stdint.h>\n\
         void lc_fact(const char *kind, const char *key, unsigned long long a, unsigned long long b,\n\
         \x20            unsigned long long c);\nvoid lc_constants(void) {\n",
    );
    for v in values {
        let n = v.c_name;
        let _ = match v.rust {
            Value::Int(_) => writeln!(
                c,
                "  lc_fact(\"const\", \"{}\", ({n}) < 0, (unsigned long long)({n}), 0);",
                v.key
            ),
            Value::Pointer(_) => writeln!(
                c,
                "  lc_fact(\"const\", \"{}\", 0, (unsigned long long)(uintptr_t)({n}), 0);",
                v.key
            ),
        };
    }
    c.push_str("}\n");
    c
}

/// The Rust file asserting each value with C's (`c`: key → (negative, bits)).
pub fn rust_asserts(
    values: &[ValueCheck],
    c: &BTreeMap<String, (u64, u64)>,
    prelude: &str,
) -> Result<String, String> {
    let mut out = String::from(
        "// Written by cargo xtask abi --target aarch64-pc-windows-msvc: each constant's C value, asserted.\n\
         #![allow(unused_unsafe, clippy::all)]\n",
    );
    out.push_str(prelude);
    for v in values {
        let &(neg, bits) = c
            .get(&v.key)
            .ok_or_else(|| format!("{}: no C value read from the IR", v.key))?;
        let (expr, value) = match v.rust {
            Value::Int(e) => (
                e.clone(),
                if neg == 1 {
                    bits as i64 as i128
                } else {
                    bits as i128
                },
            ),
            Value::Pointer(p) => (
                format!("(unsafe {{ ::core::mem::transmute::<_, usize>({p}) }} as i128)"),
                bits as i128,
            ),
        };
        let _ = writeln!(
            out,
            "const _: () = assert!({expr} == {value}i128, \"{MARKER}{}: C's value is {value}, not Rust's\");",
            v.key
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn the_headers_constants_and_the_table_are_held_together() {
        let dirs = [PathBuf::from("/h")];
        let pp = "# 1 \"/h/cuda.h\"\n#define CU_X 3\n#define CU_F(a) a\n\
                  typedef enum CUe_enum { CU_A = 1, CU_B = (1 << 2) } CUe;\n";
        let c = c_constants(pp, &dirs);
        let names: Vec<&str> = c.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["CU_A", "CU_B", "CU_X"]);
        let table = "Constant::new(\"CU_A\", \"CUe_enum\", Value::Int(::k::CU_A.0 as i128)),\n\
                     Constant::new(\"CUe_enum::CU_A\", \"CUe_enum\", Value::Int(::k::CUe_enum::CU_A.0 as i128)),\n\
                     Constant::new(\"CU_B\", \"CUe_enum\", Value::Int(::k::CU_B.0 as i128)),\n\
                     Constant::new(\"CU_X\", \"u32\", Value::Int(::k::CU_X as i128)),\n\
                     (\"CUe_enum\", \"CUe_enum\"),\n(\"CUe\", \"CUe_enum\"),\n";
        let (constants, types) = rust_table(table).unwrap();
        let (found, values) = problems(&c, &constants, &types);
        // Wrong twin: CU_B's associated constant is missing.
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("CUe_enum::CU_B: missing"), "{found:?}");
        assert_eq!(values.len(), 4);
        let text = c_values(&values);
        assert!(
            text.contains("lc_fact(\"const\", \"CUe_enum::CU_A\", (CU_A) < 0"),
            "{text}"
        );
        let c_side: BTreeMap<String, (u64, u64)> =
            values.iter().map(|v| (v.key.clone(), (0, 1))).collect();
        let rust = rust_asserts(&values, &c_side, "").unwrap();
        assert!(
            rust.contains("assert!((::k::CU_X as i128) == 1i128"),
            "{rust}"
        );
    }
}
