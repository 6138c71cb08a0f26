//! `cargo xtask abi --target aarch64-pc-windows-msvc <release>...` (13.4 and
//! 13.5, `--all` both): the C-compiler proofs of Windows on Arm that need no
//! program run, since nothing here runs an aarch64 Windows binary.
//!
//! abi-proofs is checked (`cargo check --target aarch64-pc-windows-msvc`)
//! against the release's `win_arm64` headers: its build script writes the
//! same inputs as for every target (bindgen with clang in MSVC mode for
//! aarch64, the stand-in C library headers of `msvc/*.h`), and rustc
//! type-checks the tables the tests include. Then, each with its wrong twin:
//!
//! - layout and constant values: the layout check's C half
//!   (`layout_check.c`) with its `LC_*` macros made calls of constants,
//!   compiled by clang for the target to LLVM IR (`-S -emit-llvm -O0`): each
//!   call's arguments are C's `sizeof`, `_Alignof`, `offsetof` and constant
//!   values, as integers. From the Rust half (`layout_rust.rs`) each fact's
//!   Rust expression becomes `const _: () = assert!(<Rust> == <C>, ...)`,
//!   compiled by `rustc --target aarch64-pc-windows-msvc` against the
//!   crate's metadata: const evaluation for that target says every
//!   difference, named. Twin: a type's size and a constant's value changed by
//!   one: exactly those two named;
//! - field types (`field_types.c`, twin `field_types_wrong.c`, the four bugs
//!   `field_types_planted.txt` lists) and signatures (`signatures.c`, twin
//!   `signatures_wrong.c`: `cuMemAdvise` alone): the `_Static_assert` files
//!   the tests compile, here by clang for the target with `-fsyntax-only`;
//! - the constants check ([`constants`]): the headers' constants bound by
//!   name, newtype and associated constant, their C values asserted by rustc;
//!   twin: the planted copy's seven bugs;
//! - the bad-input fixture through the two layout halves (its bitfields
//!   aside): exactly its seven wrong items for this target named (`va_list`
//!   8 bytes, `long` 32 bits), so the numbers are the target's.
//!
//! Not run: the C programs and the test binaries (by value, symbols,
//! bitfields' bytes: none in 13.4 or 13.5; the command fails naming one).

mod constants;

use crate::cmd::{cargo, step, write_file};
use crate::headers;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const WINARM: &str = "aarch64-pc-windows-msvc";
const CLANG: &str = "/usr/lib/llvm-19/bin/clang";
const LAYOUT_MARKER: &str = "ABI-LAYOUT ";
const FIELD_MARKER: &str = "ABI-FIELD ";

/// `--all`: the releases with Windows on Arm wheels.
pub fn releases() -> Vec<String> {
    generator::committed::Family::Aarch64WindowsMsvc
        .releases()
        .map(str::to_string)
        .collect()
}

/// What one release's proofs counted.
#[derive(Default, Debug)]
struct Counts {
    types: usize,
    fields: usize,
    offset_only: usize,
    unchecked: usize,
    constants: usize,
    field_types: usize,
    signatures: usize,
    header_constants: usize,
    /// The headers' constants outside the generator's names (`NVCL_*`...): not required.
    outside: usize,
    constant_values: usize,
}

pub fn run(workspace: &Path, releases: &[String]) -> Result<(), String> {
    let started = std::time::Instant::now();
    let tools = toolchain(workspace)?;
    let mut failed = vec![];
    for release in releases {
        step(&format!("{WINARM}, CUDA {release}: compile-time proofs"));
        match release_proofs(workspace, &tools, release) {
            Ok(c) => println!(
                "{release}: layout: {} types, {} fields ({} offset only, {} with nothing to \
                 compare), {} constants asserted by rustc for {WINARM} with clang's numbers; \
                 constants: {} of the headers bound ({} outside the generator's names), {} \
                 values (crate-level and associated) asserted by rustc; {} field types, {} signatures asserted by clang \
                 for {WINARM}; 0 mismatches; every wrong twin named",
                c.types,
                c.fields,
                c.offset_only,
                c.unchecked,
                c.constants,
                c.header_constants,
                c.outside,
                c.constant_values,
                c.field_types,
                c.signatures
            ),
            Err(e) => {
                println!("{release}: FAILED\n{e}");
                failed.push(release.as_str());
            }
        }
    }
    println!("{WINARM}: {:.0} s in all", started.elapsed().as_secs_f64());
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{WINARM}: the proofs failed for {}",
            failed.join(", ")
        ))
    }
}

/// The stand-in C library headers and a clang for the target over them (as
/// `regen`'s environment), in `target/winarm-toolchain/`.
struct Tools {
    include: PathBuf,
    cc: PathBuf,
}

fn toolchain(workspace: &Path) -> Result<Tools, String> {
    crate::cmd::ensure_libclang()?;
    if !Path::new(CLANG).is_file() {
        return Err(format!("{CLANG} is missing (apt-get install clang-19)"));
    }
    let dir = workspace.join("target/winarm-toolchain");
    let include = dir.join("include");
    std::fs::create_dir_all(&include).map_err(|e| format!("{}: {e}", include.display()))?;
    for (name, text) in super::msvc::STAND_IN_HEADERS {
        write_file(&include.join(name), text)?;
    }
    let cc = dir.join(format!("clang-{WINARM}"));
    write_file(
        &cc,
        format!(
            "#!/bin/sh\nexec {CLANG} --target={WINARM} -isystem {} \"$@\"\n",
            include.display()
        ),
    )?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&cc, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", cc.display()))?;
    let have = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map_err(|e| format!("rustup: {e}"))?;
    if !String::from_utf8_lossy(&have.stdout).contains(WINARM) {
        crate::cmd::run_cmd(Command::new("rustup").args(["target", "add", WINARM]))?;
    }
    Ok(Tools { include, cc })
}

/// What `cargo check` of abi-proofs left: its inputs and the crate's metadata.
struct Built {
    abi_dir: PathBuf,
    rmeta: PathBuf,
}

fn release_proofs(workspace: &Path, tools: &Tools, release: &str) -> Result<Counts, String> {
    let include = headers::fetch_for(workspace, release, WINARM)?;
    let dirs = generator::locate::at_root(&include, "aarch64", format!("CUDA {release} headers"))
        .ok_or_else(|| format!("{} holds no cuda.h", include.display()))??
        .include_dirs;
    let target_dir = super::target_dir_for(workspace, release, WINARM);
    let built = check_abi_proofs(workspace, tools, &include, &target_dir)?;
    let scratch = target_dir.join("compile-time");
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let wrapper = read(&workspace.join("wrapper.h"))?;
    write_file(&scratch.join("lc_prelude.h"), &wrapper)?;
    write_file(&scratch.join("lc_names.h"), "")?;
    let clang = |args: &[&str]| {
        let mut cmd = Command::new(CLANG);
        cmd.arg(format!("--target={WINARM}"))
            .arg("-isystem")
            .arg(&tools.include)
            .arg(format!("-I{}", scratch.display()));
        for d in &dirs {
            cmd.arg(format!("-I{}", d.display()));
        }
        cmd.args([
            "-std=gnu11",
            "-w",
            "-ferror-limit=0",
            "-fno-caret-diagnostics",
        ])
        .args(args);
        cmd
    };
    let pre = output(
        clang(&["-E", "-dD"]).arg(scratch.join("lc_prelude.h")),
        "preprocessing wrapper.h",
    )?;
    if !pre.status.success() {
        return Err(format!(
            "preprocessing wrapper.h for {WINARM}:\n{}",
            String::from_utf8_lossy(&pre.stderr)
        ));
    }
    let preprocessed = String::from_utf8_lossy(&pre.stdout).into_owned();
    write_file(&scratch.join("lc_names.h"), names_header(&preprocessed))?;
    let mut counts = Counts::default();
    let mut problems = vec![];

    // Layout and constants: C's numbers from IR, asserted by rustc.
    let c_source = splice_layout_macros(&read(&built.abi_dir.join("layout_check.c"))?)?;
    let c_file = scratch.join("layout_facts.c");
    write_file(&c_file, &c_source)?;
    let ll = scratch.join("layout_facts.ll");
    let out = output(
        clang(&["-S", "-emit-llvm", "-O0", "-o"])
            .arg(&ll)
            .arg(&c_file),
        "compiling the layout facts",
    )?;
    if !out.status.success() {
        return Err(format!(
            "clang did not compile {}:\n{}",
            c_file.display(),
            head(&String::from_utf8_lossy(&out.stderr), 30)
        ));
    }
    let c_facts = ir_facts(&read(&ll)?)?;
    let mut bits = vec![];
    let rust_side = rust_facts(&read(&built.abi_dir.join("layout_rust.rs"))?, &mut bits)?;
    if !bits.is_empty() {
        return Err(format!(
            "bitfields, whose bytes only a run shows (none in 13.4 or 13.5): {bits:?}"
        ));
    }
    let (asserts, mismatched) = layout_asserts(&rust_side, &c_facts, &mut counts)?;
    problems.extend(mismatched);
    let rustc = |name: &str, text: &str, marker: &str| -> Result<Vec<String>, String> {
        let file = scratch.join(format!("{name}.rs"));
        write_file(&file, text)?;
        rustc_failures(&built.rmeta, &file, &scratch, marker)
    };
    let failed = rustc("layout_asserts", &asserts, LAYOUT_MARKER)?;
    problems.extend(failed.iter().map(|f| format!("layout: {f}")));
    let (twin, planted) = layout_twin(&asserts)?;
    let named: BTreeSet<String> = rustc("layout_asserts_wrong", &twin, LAYOUT_MARKER)?
        .iter()
        .map(|f| f.split_once(':').map_or(f.as_str(), |(k, _)| k).to_string())
        .collect();
    println!("layout twin: planted {planted:?}, named {named:?}");
    if named != planted {
        problems.push(format!(
            "layout: the wrong twin named {named:?} for the planted {planted:?}"
        ));
    }

    // The bad-input fixture (abi_bad_input's, its bitfields aside): the
    // numbers must be the target's (va_list 8 bytes, long 32 bits), not the
    // host's, which would name lc_long_st and not lc_target_st.
    let bad_dir = scratch.join("bad-input");
    std::fs::create_dir_all(&bad_dir).map_err(|e| format!("{}: {e}", bad_dir.display()))?;
    let fixture = workspace.join("abi-proofs/tests/abi_fixture");
    write_file(
        &bad_dir.join("lc_prelude.h"),
        format!("#include \"{}\"\n", fixture.join("bad.h").display()),
    )?;
    let bad_clang = |args: &[&str]| {
        let mut cmd = Command::new(CLANG);
        cmd.arg(format!("--target={WINARM}"))
            .arg("-isystem")
            .arg(&tools.include)
            .arg(format!("-I{}", bad_dir.display()))
            .args(["-std=gnu11", "-w"])
            .args(args);
        cmd
    };
    let pre = output(
        bad_clang(&["-E"]).arg(bad_dir.join("lc_prelude.h")),
        "preprocessing bad.h",
    )?;
    write_file(
        &bad_dir.join("lc_names.h"),
        names_header(&String::from_utf8_lossy(&pre.stdout)),
    )?;
    let c_file = bad_dir.join("bad_layout_facts.c");
    write_file(
        &c_file,
        splice_layout_macros(&read(&built.abi_dir.join("bad_layout_check.c"))?)?,
    )?;
    let ll = bad_dir.join("bad_layout_facts.ll");
    let out = output(
        bad_clang(&["-S", "-emit-llvm", "-O0", "-o"])
            .arg(&ll)
            .arg(&c_file),
        "compiling the bad input's facts",
    )?;
    if !out.status.success() {
        return Err(format!(
            "clang did not compile {}:\n{}",
            c_file.display(),
            head(&String::from_utf8_lossy(&out.stderr), 30)
        ));
    }
    let mut bits = vec![];
    let bad_rust = rust_facts(&read(&built.abi_dir.join("bad_layout.rs"))?, &mut bits)?;
    let bad_c: Vec<CFact> = ir_facts(&read(&ll)?)?
        .into_iter()
        .filter(|f| !(f.kind == "unsupported-bits" && bits.contains(&f.key)))
        .collect();
    let (mut bad_asserts, mismatched) = layout_asserts(&bad_rust, &bad_c, &mut Counts::default())?;
    bad_asserts.push_str(&format!(
        "#[allow(non_camel_case_types, dead_code)]\nmod fixture {{ include!({:?}); }}\n",
        fixture.join("bad.rs")
    ));
    let named: BTreeSet<String> = mismatched
        .iter()
        .chain(&rustc("bad_layout_asserts", &bad_asserts, LAYOUT_MARKER)?)
        .map(|f| f.split_once(':').map_or(f.as_str(), |(k, _)| k).to_string())
        .collect();
    let expected: BTreeSet<String> = [
        "type lc_packed_st",
        "field lc_packed_st.value",
        "const LC_WRONG",
        "const LC_ONLY_IN_RUST",
        "type lc_target_st",
        "field lc_target_st.args",
        "field lc_target_st.last",
    ]
    .map(String::from)
    .into();
    println!(
        "bad input: named {named:?} ({} bitfields not compared: {bits:?})",
        bits.len()
    );
    if named != expected {
        problems.push(format!(
            "bad input: named other than the expected {expected:?} (see above)"
        ));
    }

    // Constants: the headers' (-dD) against the table by name and type; the
    // values C's, from IR, asserted by rustc.
    let c_constants = constants::c_constants(&preprocessed, &dirs);
    let constants_check = |table: &str, prelude: &str, name: &str| {
        let (rust, types) = constants::rust_table(&read(&built.abi_dir.join(table))?)?;
        let (mut found, values) = constants::problems(&c_constants, &rust, &types);
        let c_file = scratch.join(format!("{name}.c"));
        write_file(&c_file, constants::c_values(&values))?;
        let ll = scratch.join(format!("{name}.ll"));
        let out = output(
            clang(&["-S", "-emit-llvm", "-O0", "-o"])
                .arg(&ll)
                .arg(&c_file),
            "compiling the constants' values",
        )?;
        if !out.status.success() {
            return Err(format!(
                "clang did not compile {}:\n{}",
                c_file.display(),
                head(&String::from_utf8_lossy(&out.stderr), 30)
            ));
        }
        let c_values = ir_facts(&read(&ll)?)?
            .into_iter()
            .map(|f| (f.key, (f.values[0], f.values[1])))
            .collect();
        let asserts = constants::rust_asserts(&values, &c_values, prelude)?;
        found.extend(rustc(name, &asserts, constants::MARKER)?);
        Ok::<_, String>((found, values.len()))
    };
    let (found, asserted) = constants_check("constants.rs", "", "constants_asserts")?;
    counts.header_constants = c_constants
        .iter()
        .filter(|k| constants::in_allowlist(&k.name))
        .count();
    counts.outside = c_constants.len() - counts.header_constants;
    counts.constant_values = asserted;
    problems.extend(found.iter().map(|f| format!("constant {f}")));
    if c_constants.len() < 550 {
        problems.push(format!(
            "only {} constants read from the headers",
            c_constants.len()
        ));
    }
    let planted_module = format!(
        "#[allow(dead_code, unused_imports, non_camel_case_types, non_upper_case_globals, \
         non_snake_case, clippy::all)]\nmod planted {{ include!({:?}); }}\n",
        built.abi_dir.join("constants_planted.rs")
    );
    let (found, _) = constants_check(
        "constants_planted_table.rs",
        &planted_module,
        "constants_asserts_wrong",
    )?;
    let planted: BTreeSet<String> = read(&built.abi_dir.join("constants_planted.txt"))?
        .lines()
        .filter_map(|l| l.split_once('\t').map(|(k, _)| k.to_string()))
        .collect();
    let named: BTreeSet<String> = found
        .iter()
        .map(|f| {
            f.split_once(": ")
                .map_or(f.as_str(), |(k, _)| k)
                .to_string()
        })
        .collect();
    println!("constants twin: planted {planted:?}, named {named:?}");
    if named != planted || planted.is_empty() {
        problems.push(format!(
            "constants: the wrong twin named {named:?} for the planted {planted:?}"
        ));
    }

    // Field types: the build's _Static_assert files, for the target.
    let judge = |file: &str, marker: &str| -> Result<Vec<String>, String> {
        static_failures(
            clang(&["-fsyntax-only"]).arg(built.abi_dir.join(file)),
            marker,
        )
    };
    let planted_list = read(&built.abi_dir.join("field_types_planted.txt"))?;
    counts.field_types = planted_list
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("checked "))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let failed = judge("field_types.c", FIELD_MARKER)?;
    problems.extend(failed.iter().map(|f| format!("field type: {f}")));
    if counts.field_types < 300 {
        problems.push(format!("only {} field types checked", counts.field_types));
    }
    let planted: BTreeSet<String> = planted_list
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once('\t').map(|(k, _)| k.to_string()))
        .collect();
    let named: BTreeSet<String> = judge("field_types_wrong.c", FIELD_MARKER)?
        .iter()
        .map(|f| f.split_once(':').map_or(f.as_str(), |(k, _)| k).to_string())
        .collect();
    println!("field-type twin: planted {planted:?}, named {named:?}");
    if named != planted || planted.is_empty() {
        problems.push(format!(
            "field types: the wrong twin named {named:?} for the planted {planted:?}"
        ));
    }

    // Signatures.
    let source = read(&built.abi_dir.join("signatures.c"))?;
    counts.signatures = source.matches("_Static_assert").count();
    let failed = judge("signatures.c", "signature of ")?;
    problems.extend(failed.iter().map(|f| format!("signature of {f}")));
    let summary = read(&built.abi_dir.join("signatures.txt"))?;
    problems.extend(
        summary
            .lines()
            .skip(1)
            .filter(|l| !l.is_empty())
            .map(|l| format!("signature not spellable in C: {l}")),
    );
    if counts.signatures < 500 {
        problems.push(format!("only {} signatures checked", counts.signatures));
    }
    let named = judge("signatures_wrong.c", "signature of ")?;
    println!("signature twin: planted [\"cuMemAdvise\"], named {named:?}");
    if named != ["cuMemAdvise"] {
        problems.push(format!(
            "signatures: the wrong twin named {named:?}, not cuMemAdvise alone"
        ));
    }
    if problems.is_empty() {
        Ok(counts)
    } else {
        Err(problems.join("\n"))
    }
}

/// `cargo check` of abi-proofs' compile-time tests for the target: its
/// build script writes the checks' inputs, rustc type-checks the tables.
fn check_abi_proofs(
    workspace: &Path,
    tools: &Tools,
    include: &Path,
    target_dir: &Path,
) -> Result<Built, String> {
    let under = WINARM.replace('-', "_");
    let mut cmd = cargo(workspace);
    cmd.args(["check", "-p", "abi-proofs", "--target", WINARM])
        .args(["--message-format", "json-render-diagnostics"]);
    for t in [
        "abi_layout",
        "abi_field_types",
        "abi_constants",
        "abi_signatures",
    ] {
        cmd.args(["--test", t]);
    }
    cmd.env(super::ALWAYS_GENERATE, "1")
        .env(generator::locate::INCLUDE_DIR_VAR, include)
        .env("CARGO_TARGET_DIR", target_dir)
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .env(format!("CC_{under}"), &tools.cc)
        .env(format!("AR_{under}"), "/usr/lib/llvm-19/bin/llvm-lib")
        .env(
            format!("BINDGEN_EXTRA_CLANG_ARGS_{under}"),
            format!("-isystem {}", tools.include.display()),
        )
        .stderr(std::process::Stdio::inherit());
    let out = cmd.output().map_err(|e| format!("cargo check: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo check of abi-proofs for {WINARM} failed ({})",
            out.status
        ));
    }
    let json = String::from_utf8_lossy(&out.stdout);
    let (mut abi_dir, mut rmeta) = (None, None);
    for line in json.lines() {
        let package = json_string(line, "package_id").unwrap_or_default();
        if line.contains("\"reason\":\"build-script-executed\"") && package.contains("/abi-proofs#")
        {
            abi_dir = json_string(line, "out_dir").map(|d| PathBuf::from(d).join("abi"));
        }
        if line.contains("\"reason\":\"compiler-artifact\"")
            && line.contains("\"name\":\"cuda_mem_sys\"")
        {
            rmeta = json_strings(line, "filenames")
                .into_iter()
                .find(|f| f.ends_with(".rmeta"))
                .map(PathBuf::from);
        }
    }
    Ok(Built {
        abi_dir: abi_dir.ok_or("cargo check reported no build script of abi-proofs")?,
        rmeta: rmeta.ok_or("cargo check reported no metadata of cuda-mem-sys")?,
    })
}

/// The string value of `"key":"..."` in a line of cargo's JSON (paths: no escapes).
fn json_string(line: &str, key: &str) -> Option<String> {
    let rest = line.split_once(&format!("\"{key}\":\""))?.1;
    Some(rest.split_once('"')?.0.to_string())
}

/// The strings of `"key":[...]`.
fn json_strings(line: &str, key: &str) -> Vec<String> {
    let Some((_, rest)) = line.split_once(&format!("\"{key}\":[")) else {
        return vec![];
    };
    let list = rest.split_once(']').map_or("", |(l, _)| l);
    list.split(',')
        .map(|s| s.trim().trim_matches('"').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The C half's macros, each a call whose arguments are the fact's numbers
/// (integer constant expressions: constants in the IR at `-O0`). The kind
/// says which arguments hold a value.
const C_MACROS: &str = r#"/* cargo xtask abi --target aarch64-pc-windows-msvc: the facts as calls, read from the IR. */
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
fn splice_layout_macros(source: &str) -> Result<String, String> {
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
struct CFact {
    kind: String,
    key: String,
    values: [u64; 3],
}

/// The `lc_fact` calls of the IR, their string arguments resolved.
fn ir_facts(ir: &str) -> Result<Vec<CFact>, String> {
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
fn unescape_ir(text: &str) -> String {
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
struct RustFact {
    kind: &'static str,
    key: String,
    ty: String,
    expr: String,
}

fn between<'a>(line: &'a str, from: &str, to: &str) -> Option<&'a str> {
    let rest = line.split_once(from)?.1;
    Some(rest.split_once(to)?.0)
}

/// The facts of `layout_rust.rs` (the lines `abi-proofs/build/layout_check.rs`
/// writes), each with the Rust expression its value comes from; the
/// bitfields' keys into `bits` (their bytes only a run shows).
fn rust_facts(table: &str, bits: &mut Vec<String>) -> Result<Vec<RustFact>, String> {
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

const RUST_PRELUDE: &str =
    "// Written by cargo xtask abi --target aarch64-pc-windows-msvc: each fact of\n\
// abi-proofs' layout table asserted with the C compiler's number for the target.\n\
#![allow(unused_unsafe, non_snake_case, clippy::all)]\n\
const fn offset<T, F>(p: *const T, f: *const F) -> usize {\n\
    unsafe { (f as *const u8).offset_from(p as *const u8) as usize }\n}\n\
const fn size_at<F>(_: *const F) -> usize { ::core::mem::size_of::<F>() }\n\
const fn align_at<F>(_: *const F) -> usize { ::core::mem::align_of::<F>() }\n";

/// The Rust file asserting each fact with C's numbers, and the facts that
/// have no counterpart on the other side.
fn layout_asserts(
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
fn layout_twin(asserts: &str) -> Result<(String, BTreeSet<String>), String> {
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
fn rustc_failures(
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

/// The failed `_Static_assert`s of a `-fsyntax-only` compile: the text after
/// `marker`; any other error fails.
fn static_failures(cmd: &mut Command, marker: &str) -> Result<Vec<String>, String> {
    let out = output(cmd, "clang")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut failed = vec![];
    let mut other = vec![];
    for line in stderr.lines().filter(|l| l.contains("error: ")) {
        match line.rsplit_once(marker) {
            Some((_, m)) if line.contains("static assert") => {
                failed.push(m.trim().trim_end_matches('"').replace("\\'", "'"))
            }
            _ => other.push(line),
        }
    }
    if !other.is_empty() || (!out.status.success() && failed.is_empty()) {
        return Err(format!(
            "clang did not compile for {WINARM} ({}): {cmd:?}\n{}",
            out.status,
            head(&stderr, 30)
        ));
    }
    Ok(failed)
}

fn output(cmd: &mut Command, what: &str) -> Result<std::process::Output, String> {
    cmd.output().map_err(|e| format!("{what}: {cmd:?}: {e}"))
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))
}

fn head(text: &str, n: usize) -> String {
    text.lines().take(n).collect::<Vec<_>>().join("\n")
}

/// `#define LC_ID_x 1` for every identifier of the preprocessed headers and
/// `LC_STRUCT_x`/`LC_UNION_x`/`LC_ENUM_x` for every tag: what
/// `abi-proofs/tests/layout_support`'s `names_header` writes for the tests.
fn names_header(preprocessed: &str) -> String {
    let mut words = vec![];
    for line in preprocessed
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
    {
        words.extend(c_tokens(line));
    }
    let mut ids = BTreeSet::new();
    let mut tags = BTreeSet::new();
    for (i, w) in words.iter().enumerate() {
        if w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            ids.insert(w.as_str());
        }
        let kind = match w.as_str() {
            "struct" => "STRUCT",
            "union" => "UNION",
            "enum" => "ENUM",
            _ => continue,
        };
        let mut j = i + 1;
        while let Some(a) = words.get(j) {
            let attribute = [
                "__attribute__",
                "__attribute",
                "__declspec",
                "_Alignas",
                "alignas",
            ]
            .contains(&a.as_str());
            if !attribute {
                break;
            }
            j += 1;
            if words.get(j).map(String::as_str) == Some("(") {
                let mut depth = 0;
                while let Some(t) = words.get(j) {
                    j += 1;
                    match t.as_str() {
                        "(" => depth += 1,
                        ")" => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        if let Some(tag) = words
            .get(j)
            .filter(|t| t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
        {
            tags.insert((kind, tag.as_str()));
        }
    }
    let mut h = String::from("/* Written by cargo xtask abi from the preprocessed headers. */\n");
    for id in ids {
        let _ = writeln!(h, "#define LC_ID_{id} 1");
    }
    for (kind, tag) in tags {
        let _ = writeln!(h, "#define LC_{kind}_{tag} 1");
    }
    h
}

/// Identifiers and punctuation of a line of C (numbers and literals
/// skipped): [`constants::tokens`], spelt as text.
fn c_tokens(text: &str) -> Vec<String> {
    constants::tokens(text)
        .into_iter()
        .filter_map(|t| match t {
            constants::Tok::Ident(s) => Some(s),
            constants::Tok::Punct(c) => Some(c.to_string()),
            constants::Tok::Number => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_windows_on_arm_releases_are_taken() {
        let parse = |args: &[&str]| super::super::parse(args).map(|(_, r, _)| r);
        assert_eq!(
            parse(&["--target", WINARM, "--all"]).unwrap(),
            ["13.4", "13.5"]
        );
        assert_eq!(parse(&["--target", WINARM, "13.5"]).unwrap(), ["13.5"]);
        let early = parse(&["--target", WINARM, "13.0"]).unwrap_err();
        assert!(early.contains("Windows on Arm starts at 13.4"), "{early}");
        let fallback = parse(&["--target", WINARM, "fallback"]).unwrap_err();
        assert!(fallback.contains("fallback is not proven"), "{fallback}");
    }

    #[test]
    fn the_ir_calls_are_read_as_facts() {
        let ir = "@.str = private unnamed_addr constant [5 x i8] c\"type\\00\", align 1\n\
                  @.str.1 = private unnamed_addr constant [4 x i8] c\"a.b\\00\", align 1\n\
                  \x20 call void @lc_fact(ptr noundef @.str, ptr noundef @.str.1, i64 noundef 16, \
                  i64 noundef 8, i64 noundef -1)\n\
                  declare void @lc_fact(ptr noundef, ptr noundef, i64 noundef, i64 noundef, i64 noundef)\n";
        let facts = ir_facts(ir).unwrap();
        assert_eq!(facts.len(), 1);
        assert_eq!(
            (facts[0].kind.as_str(), facts[0].key.as_str()),
            ("type", "a.b")
        );
        assert_eq!(facts[0].values, [16, 8, u64::MAX]);
        // Wrong twin: an argument that is not a constant.
        let bad = ir.replace("i64 noundef 16", "i64 noundef %5");
        assert!(ir_facts(&bad).unwrap_err().contains("not constant"));
    }

    #[test]
    fn the_rust_table_lines_become_asserts_with_c_numbers() {
        let table = "    let u = ::core::mem::MaybeUninit::<::k::S>::uninit();\n\
            out.push(Entry::new(\"type\", \"S\", format!(\"{} {}\", ::core::mem::size_of::<::k::S>(), ::core::mem::align_of::<::k::S>())));\n\
            field(out, \"S.a.b\", x, unsafe { ::core::ptr::addr_of!((*p).a.b) });\n\
            out.push(Entry::new(\"const\", \"P\", (::k::P as usize as i128).to_string()));\n";
        let mut bits = vec![];
        let rust = rust_facts(table, &mut bits).unwrap();
        assert!(bits.is_empty());
        assert_eq!(rust.len(), 3);
        assert_eq!(rust[1].expr, "a.b");
        assert!(rust[2].expr.contains("transmute"));
        let c = |kind: &str, key: &str, values| CFact {
            kind: kind.into(),
            key: key.into(),
            values,
        };
        let facts = [
            c("type", "S", [8, 4, 0]),
            c("field", "S.a.b", [4, 2, 2]),
            c("const", "P", [0, 1, 0]),
        ];
        let mut counts = Counts::default();
        let (text, problems) = layout_asserts(&rust, &facts, &mut counts).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        assert!(text.contains("size_of::<::k::S>() == 8 && ::core::mem::align_of::<::k::S>() == 4"));
        assert!(text.contains("offset(p, f) == 4 && size_at(f) == 2 && align_at(f) == 2"));
        // Wrong twins: a fact C lacks, one C says is not declared.
        let (_, problems) = layout_asserts(&rust, &facts[..2], &mut counts).unwrap();
        assert_eq!(problems, ["const P: not in the C half"]);
        let nodecl = [
            facts[0].clone(),
            facts[1].clone(),
            c("nodecl-const", "P", [0; 3]),
        ];
        let (_, problems) = layout_asserts(&rust, &nodecl, &mut counts).unwrap();
        assert_eq!(problems, ["const P: the headers do not declare it"]);
    }

    #[test]
    fn the_names_header_has_ids_and_tags() {
        let h = names_header(
            "# 1 \"x.h\"\ntypedef struct __declspec(align(8)) CUa_st { int x; } CUa;\n",
        );
        assert!(
            h.contains("#define LC_ID_CUa 1") && h.contains("#define LC_STRUCT_CUa_st 1"),
            "{h}"
        );
        assert!(!h.contains("LC_STRUCT_align"), "{h}");
    }
}
