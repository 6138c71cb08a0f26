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
mod layout;
mod names;
#[cfg(test)]
mod tests;

use layout::*;
use names::*;

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
