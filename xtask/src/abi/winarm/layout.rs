//! Layout and constant values for Windows on Arm: C's facts read from the
//! LLVM IR of the layout check's C half (its `LC_*` macros made calls), the
//! Rust half's facts made `const` assertions with C's numbers, which
//! `rustc --target aarch64-pc-windows-msvc` evaluates; and the twin.

use super::*;

/// The C half's macros, each a call whose arguments are the fact's numbers
/// (integer constant expressions: constants in the IR at `-O0`). The kind
/// says which arguments hold a value.
pub(super) const C_MACROS: &str = r#"/* cargo xtask abi --target aarch64-pc-windows-msvc: the facts as calls, read from the IR. */
void lc_fact(const char *kind, const char *key, unsigned long long a, unsigned long long b,
             unsigned long long c);
#define LC_TYPE(key, T) lc_fact("type", key, sizeof(T), _Alignof(T), 0)
#define LC_FIELD(key, T, d) lc_fact("field", key, offsetof(T, d), sizeof(((T *)0)->d), \
  _Alignof(__typeof__(((T *)0)->d)))
#define LC_FLEX(key, T, d) lc_fact("field-flex", key, offsetof(T, d), 0, \
  _Alignof(__typeof__(((T *)0)->d[0])))
#define LC_ANON(key, T, first) lc_fact("field-anon", key, offsetof(T, first), 0, 0)
#define LC_UNCHECKED(key) lc_fact("field-unchecked", key, 0, 0, 0)
#define LC_NODECL(kind, key) lc_fact("nodecl-" kind, key, 0, 0, 0)
#define LC_INT(key, v) lc_fact("const", key, (v) < 0, (unsigned long long)(v), 0)
#define LC_PTR(key, v) lc_fact("const", key, 0, (unsigned long long)(uintptr_t)(v), 0)
#define LC_BYTES(key, v) lc_fact("unsupported-bytes", key, 0, 0, 0)
#define LC_BITS(key, T, d, all_ones, has_value) lc_fact("unsupported-bits", key, 0, 0, 0)
"#;

/// `layout_check.c` with its printing macros and `lc_bytes` replaced by [`C_MACROS`].
pub(super) fn splice_layout_macros(source: &str) -> Result<String, String> {
    let start = source.find("#define LC_TYPE(");
    let end = source
        .find("static void lc_bytes(")
        .and_then(|i| source[i..].find("\n}\n").map(|j| i + j + 3));
    match (start, end) {
        (Some(s), Some(e)) if s < e => Ok(format!("{}{C_MACROS}{}", &source[..s], &source[e..])),
        _ => Err(
            "layout_check.c: its LC_* macros and lc_bytes were not found (abi-proofs/build/\
             layout_check.rs's C prelude changed)"
                .into(),
        ),
    }
}

/// One fact: `kind` (type, field, field-flex, ..., const), key, numbers.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct CFact {
    pub(super) kind: String,
    pub(super) key: String,
    pub(super) values: [u64; 3],
}

/// The `lc_fact` calls of the IR, their string arguments resolved.
pub(super) fn ir_facts(ir: &str) -> Result<Vec<CFact>, String> {
    let mut strings = BTreeMap::new();
    for line in ir.lines() {
        // `@.str.N = private unnamed_addr constant [...] c"..."`; MSVC's
        // mangling: `@"??_C@..." = linkonce_odr dso_local unnamed_addr constant ...`.
        let Some((name, rest)) = line
            .split_once(" = ")
            .filter(|(n, r)| n.starts_with('@') && r.contains("unnamed_addr constant ["))
        else {
            continue;
        };
        let Some(text) = rest.split_once("c\"").and_then(|(_, t)| t.rsplit_once('"')) else {
            continue;
        };
        strings.insert(name.trim().to_string(), unescape_ir(text.0));
    }
    let mut facts = vec![];
    for line in ir.lines() {
        let Some((_, args)) = line.split_once("@lc_fact(") else {
            continue;
        };
        if line.trim_start().starts_with("declare") {
            continue;
        }
        let args = args.rsplit_once(')').map_or(args, |(a, _)| a);
        let last: Vec<&str> = args
            .split(", ")
            .map(|a| a.rsplit(' ').next().unwrap_or(""))
            .collect();
        let bad = || format!("lc_fact call with arguments not constant: {line}");
        let [kind, key, a, b, c] = last[..] else {
            return Err(bad());
        };
        let s = |n: &str| strings.get(n).cloned().ok_or_else(bad);
        let n = |v: &str| v.parse::<i64>().map(|v| v as u64).map_err(|_| bad());
        facts.push(CFact {
            kind: s(kind)?,
            key: s(key)?,
            values: [n(a)?, n(b)?, n(c)?],
        });
    }
    if facts.is_empty() {
        return Err("the IR holds no lc_fact call".into());
    }
    Ok(facts)
}

/// An IR string's text: `\XX` hex escapes, the final NUL dropped.
pub(super) fn unescape_ir(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 <= b.len() {
            if let Ok(v) = u8::from_str_radix(&text[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    if out.last() == Some(&0) {
        out.pop();
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One fact of the Rust half: kind (type, field, const), key, and what
/// rustc evaluates (the type, the field's place below `(*p)` and its
/// parent's type, the constant's value as `i128`).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct RustFact {
    pub(super) kind: &'static str,
    pub(super) key: String,
    pub(super) ty: String,
    pub(super) expr: String,
}

pub(super) fn between<'a>(line: &'a str, from: &str, to: &str) -> Option<&'a str> {
    let rest = line.split_once(from)?.1;
    Some(rest.split_once(to)?.0)
}

/// The facts of `layout_rust.rs` (the lines `abi-proofs/build/layout_check.rs`
/// writes), each with the Rust expression its value comes from; the
/// bitfields' keys into `bits` (their bytes only a run shows).
pub(super) fn rust_facts(table: &str, bits: &mut Vec<String>) -> Result<Vec<RustFact>, String> {
    let mut facts = vec![];
    let mut parent = String::new();
    for line in table.lines() {
        let line = line.trim();
        if let Some(t) = between(line, "let u = ::core::mem::MaybeUninit::<", ">::uninit();") {
            parent = t.to_string();
        } else if let Some(key) = between(line, "Entry::new(\"type\", \"", "\"") {
            let ty = between(
                line,
                "::core::mem::size_of::<",
                ">(), ::core::mem::align_of::<",
            )
            .ok_or_else(|| format!("layout_rust.rs: a type line of another shape: {line}"))?;
            facts.push(RustFact {
                kind: "type",
                key: key.to_string(),
                ty: ty.to_string(),
                expr: String::new(),
            });
        } else if let Some(key) = between(line, "field(out, \"", "\"") {
            let place = line
                .rsplit_once("::core::ptr::addr_of!((*p).")
                .and_then(|(_, r)| r.strip_suffix(") });"))
                .ok_or_else(|| format!("layout_rust.rs: a field line of another shape: {line}"))?;
            facts.push(RustFact {
                kind: "field",
                key: key.to_string(),
                ty: parent.clone(),
                expr: place.to_string(),
            });
        } else if let Some(key) = between(line, "Entry::new(\"const\", \"", "\"") {
            let expr = between(line, &format!("\"{key}\", "), ".to_string()));")
                .ok_or_else(|| format!("layout_rust.rs: {key}: a constant of no integer value"))?;
            // A pointer's address: `as usize` is no const operation, a transmute is.
            let expr = match expr
                .strip_prefix('(')
                .and_then(|e| e.strip_suffix(" as usize as i128)"))
            {
                Some(ptr) => {
                    format!("(unsafe {{ ::core::mem::transmute::<_, usize>({ptr}) }} as i128)")
                }
                None => expr.to_string(),
            };
            facts.push(RustFact {
                kind: "const",
                key: key.to_string(),
                ty: String::new(),
                expr,
            });
        } else if let Some(key) = between(line, "Entry::new(\"bits\", \"", "\"") {
            bits.push(key.to_string());
        }
    }
    Ok(facts)
}

pub(super) const RUST_PRELUDE: &str =
    "// Written by cargo xtask abi --target aarch64-pc-windows-msvc: each fact of\n\
// abi-proofs' layout table asserted with the C compiler's number for the target.\n\
#![allow(unused_unsafe, non_snake_case, clippy::all)]\n\
const fn offset<T, F>(p: *const T, f: *const F) -> usize {\n\
    unsafe { (f as *const u8).offset_from(p as *const u8) as usize }\n}\n\
pub(super) const fn size_at<F>(_: *const F) -> usize { ::core::mem::size_of::<F>() }\n\
pub(super) const fn align_at<F>(_: *const F) -> usize { ::core::mem::align_of::<F>() }\n";

/// The Rust file asserting each fact with C's numbers, and the facts that
/// have no counterpart on the other side.
pub(super) fn layout_asserts(
    rust: &[RustFact],
    c: &[CFact],
    counts: &mut Counts,
) -> Result<(String, Vec<String>), String> {
    let by_key: BTreeMap<(&str, &str), &CFact> = c
        .iter()
        .map(|f| {
            let kind = if f.kind.starts_with("field") {
                "field"
            } else if let Some(k) = f.kind.strip_prefix("nodecl-") {
                k
            } else {
                f.kind.as_str()
            };
            ((kind, f.key.as_str()), f)
        })
        .collect();
    let mut out = String::from(RUST_PRELUDE);
    let mut problems = vec![];
    let mut seen = BTreeSet::new();
    for r in rust {
        seen.insert((r.kind, r.key.as_str()));
        let Some(f) = by_key.get(&(r.kind, r.key.as_str())) else {
            problems.push(format!("{} {}: not in the C half", r.kind, r.key));
            continue;
        };
        if f.kind.starts_with("nodecl") {
            problems.push(format!(
                "{} {}: the headers do not declare it",
                r.kind, r.key
            ));
            continue;
        }
        if f.kind.starts_with("unsupported") {
            return Err(format!("{}: {}, which only a run shows", f.key, f.kind));
        }
        let [a, b, v] = f.values;
        let msg = |said: String| format!("\"{LAYOUT_MARKER}{} {}: C says {said}\"", r.kind, r.key);
        match f.kind.as_str() {
            "type" => {
                counts.types += 1;
                let _ = writeln!(
                    out,
                    "const _: () = assert!(::core::mem::size_of::<{t}>() == {a} && \
                     ::core::mem::align_of::<{t}>() == {b}, {});",
                    msg(format!("size {a} align {b}")),
                    t = r.ty
                );
            }
            "const" => {
                counts.constants += 1;
                let value = if a == 1 { b as i64 as i128 } else { b as i128 };
                let _ = writeln!(
                    out,
                    "const _: () = assert!({} == {value}i128, {});",
                    r.expr,
                    msg(value.to_string())
                );
            }
            "field-unchecked" => counts.unchecked += 1,
            kind => {
                counts.fields += 1;
                let mut test = vec![format!("offset(p, f) == {a}")];
                let mut said = format!("offset {a}");
                if kind == "field" {
                    test.push(format!("size_at(f) == {b}"));
                    let _ = write!(said, " size {b}");
                }
                if kind == "field" || kind == "field-flex" {
                    test.push(format!("align_at(f) == {v}"));
                    let _ = write!(said, " align {v}");
                }
                if kind == "field-anon" {
                    counts.offset_only += 1;
                }
                let _ = writeln!(
                    out,
                    "const _: () = {{ let u = ::core::mem::MaybeUninit::<{t}>::uninit(); \
                     let p = u.as_ptr(); let f = unsafe {{ ::core::ptr::addr_of!((*p).{place}) }}; \
                     assert!({}, {}); }};",
                    test.join(" && "),
                    msg(said),
                    t = r.ty,
                    place = r.expr
                );
            }
        }
    }
    for f in c {
        let kind = if f.kind.starts_with("field") {
            "field"
        } else {
            f.kind.trim_start_matches("nodecl-")
        };
        if !seen.contains(&(kind, f.key.as_str())) {
            problems.push(format!("{kind} {}: in the C half, not in Rust's", f.key));
        }
    }
    Ok((out, problems))
}

/// The wrong twin: the asserts with `CUmemLocation_st`'s size and
/// `CUDA_VERSION`'s value one more than C says; the keys planted.
pub(super) fn layout_twin(asserts: &str) -> Result<(String, BTreeSet<String>), String> {
    let mut planted = BTreeSet::new();
    let mut out = String::new();
    for line in asserts.lines() {
        let mut line = line.to_string();
        for (key, from, to) in [
            ("type CUmemLocation_st", "CUmemLocation_st>() == ", " &&"),
            ("const CUDA_VERSION", " == ", "i128"),
        ] {
            if !line.contains(&format!("\"{LAYOUT_MARKER}{key}:")) {
                continue;
            }
            let (head, rest) = line.split_once(from).ok_or("layout twin: no number")?;
            let (n, tail) = rest.split_once(to).ok_or("layout twin: no number")?;
            let n: i128 = n.parse().map_err(|_| format!("layout twin: {n}"))?;
            line = format!("{head}{from}{}{to}{tail}", n + 1);
            planted.insert(key.to_string());
        }
        out.push_str(&line);
        out.push('\n');
    }
    if planted.len() != 2 {
        return Err(format!("layout twin: planted only {planted:?}"));
    }
    Ok((out, planted))
}

/// Compiles `file` (metadata only: const evaluation, no code) for the
/// target against the crate's metadata; the failed asserts' text after the
/// marker. Any other error fails: a file that does not compile proves nothing.
pub(super) fn rustc_failures(
    rmeta: &Path,
    file: &Path,
    scratch: &Path,
    marker: &str,
) -> Result<Vec<String>, String> {
    let deps = rmeta.parent().unwrap();
    let mut cmd = Command::new(std::env::var_os("RUSTC").unwrap_or("rustc".into()));
    cmd.args([
        "--edition",
        "2021",
        "--crate-type",
        "lib",
        "--emit",
        "metadata",
    ])
    .args(["--target", WINARM, "--cap-lints", "allow"])
    .arg("--extern")
    .arg(format!("cuda_mem_sys={}", rmeta.display()))
    .arg("-L")
    .arg(format!("dependency={}", deps.display()))
    .arg("--out-dir")
    .arg(scratch)
    .arg(file);
    let out = output(&mut cmd, "rustc")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut failed = vec![];
    let mut other = vec![];
    for line in stderr.lines().filter(|l| l.starts_with("error")) {
        match line.split_once(marker) {
            Some((_, m)) => failed.push(m.trim().to_string()),
            None if line.starts_with("error: aborting due to") => {}
            None => other.push(line),
        }
    }
    if !other.is_empty() || (!out.status.success() && failed.is_empty()) {
        return Err(format!(
            "rustc did not compile {} for {WINARM} ({}):\n{}",
            file.display(),
            out.status,
            head(&stderr, 30)
        ));
    }
    Ok(failed)
}
