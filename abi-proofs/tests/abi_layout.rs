//! The bindings' layout and constants, proven against the platform's C
//! compiler: for every struct, union, enum and typedef the crate exposes, its
//! size and alignment; for every field (nested anonymous members included) its
//! offset, size and alignment; for every bitfield the bytes it occupies; for
//! every constant its value. The Rust side is `size_of`, `align_of`,
//! `offset_of!` and the constants themselves (a table generated from the
//! bindings' text by `abi-proofs/build/layout_check.rs`); the C side is `sizeof`,
//! `_Alignof`, `offsetof` and the headers' own constants, compiled with the C
//! compiler against the headers the bindings were generated from. Every
//! difference is listed by name.
//!
//! Reported *ignored*, with the reason, where there is nothing to compare
//! against: the committed fallback bindings with no headers, or headers that
//! are not on this machine (a test binary copied elsewhere).
//!
//! `CUDA_MEM_SYS_ABI_DUMP=<file>` writes the summary and the Rust table there
//! (`cargo xtask abi` uses it for docs/abi-report.md and docs/release-changes.md).

mod layout_support;

use layout_support::{Comparison, Mismatch};
use libtest_mimic::{Arguments, Completion, Failed, Trial};
use std::fmt::Write as _;
use std::sync::OnceLock;

#[allow(dead_code, unused_imports, non_snake_case, clippy::all)]
mod table {
    include!(concat!(env!("OUT_DIR"), "/abi/layout_rust.rs"));
}

const C_SOURCE: &str = include_str!(concat!(env!("OUT_DIR"), "/abi/layout_check.c"));
const BINDINGS: &str = if cfg!(cuda_mem_sys_fallback) {
    "the committed fallback bindings"
} else {
    "the bindings generated at build time"
};

struct Run {
    cmp: Comparison,
    compiler: String,
    entries: Vec<table::Entry>,
}

/// `Err(reason)`: the check cannot run here (reported ignored).
fn run() -> &'static Result<Result<Run, String>, String> {
    static RUN: OnceLock<Result<Result<Run, String>, String>> = OnceLock::new();
    RUN.get_or_init(|| {
        // The headers the bindings were generated from (CUDA_MEM_SYS_TEST_INCLUDE_DIRS
        // overrides them on another machine).
        let include_dirs = test_support::include_dirs().map_err(|e| {
            format!("{e}; `cargo xtask abi fallback` checks the committed bindings")
        })?;
        if let Some(missing) = include_dirs.iter().find(|d| !d.is_dir()) {
            return Err(format!(
                "the headers the bindings were generated from are not on this machine ({})",
                missing.display()
            ));
        }
        // The one header bindgen read, as text (the tests may run elsewhere).
        let prelude = include_str!("../../wrapper.h");
        // Under the target folder: a Linux path, also for a test under Wine.
        let work = test_support::scratch_under_target("abi_layout");
        let work_dir = work.path().to_path_buf();
        if let Err(e) = test_support::host_output(
            std::process::Command::new(layout_support::compiler().path()).arg("--version"),
        ) {
            return Err(format!(
                "no C compiler to run ({}: {e})",
                layout_support::compiler().path().display()
            ));
        }
        let c = layout_support::run_c(&layout_support::CInput {
            include_dirs: &include_dirs,
            defines: &[],
            prelude,
            source: C_SOURCE,
            work_dir: &work_dir,
        });
        Ok(c.map(|c| {
            let entries = table::entries();
            let cmp = layout_support::compare(
                entries.iter().map(|e| (e.kind, e.key, e.values.as_str())),
                &c.lines,
            );
            Run {
                cmp,
                compiler: c.compiler,
                entries,
            }
        }))
    })
}

/// What a run counts, for its summary and its dump.
struct Counts {
    types: usize,
    records: usize,
    enums: usize,
    typedefs: usize,
    opaque: usize,
    nested: usize,
    fields: usize,
    offset_only: usize,
    bitfields: usize,
    constants: usize,
    uncompared: usize,
    rust_only: usize,
    mismatches: usize,
}

fn counts(run: &Run) -> Counts {
    let c = &run.cmp;
    Counts {
        types: c.count("type"),
        records: table::RECORDS.len(),
        enums: table::ENUMS.len(),
        typedefs: table::TYPEDEFS.len(),
        opaque: table::OPAQUE.len(),
        nested: table::NESTED.len(),
        fields: c.count("field"),
        offset_only: c.offset_only,
        bitfields: c.count("bits"),
        constants: c.count("const"),
        uncompared: table::UNCOMPARED.len(),
        rust_only: table::RUST_ONLY.len(),
        mismatches: c.mismatches.len(),
    }
}

fn summary(run: &Run) -> String {
    let version = run
        .cmp
        .cuda_version
        .map_or("?".into(), |v| format!("{}.{}", v / 1000, v % 1000 / 10));
    let Counts {
        types,
        records,
        enums,
        typedefs,
        opaque,
        nested,
        fields,
        offset_only,
        bitfields,
        constants,
        uncompared,
        rust_only,
        mismatches,
    } = counts(run);
    format!(
        "abi_layout: {BINDINGS}, CUDA {version} headers, C compiler {}:\n  \
         {types} types checked ({records} structs/unions, {enums} enums, {typedefs} typedefs; \
         {opaque} opaque types skipped: no layout; \
         {nested} nested types checked through their parents)\n  \
         {fields} fields checked ({offset_only} anonymous members by offset only), \
         {bitfields} bitfields, {constants} constants \
         ({uncompared} not comparable); {rust_only} Rust-only members (bitfield storage, padding)\n  \
         {mismatches} mismatches",
        run.compiler,
    )
}

fn dump(run: &Run, path: &str) -> std::io::Result<()> {
    let c = &run.cmp;
    let mut s = String::new();
    let _ = writeln!(s, "out_dir {}", env!("OUT_DIR"));
    let _ = writeln!(
        s,
        "bindings {}",
        if cfg!(cuda_mem_sys_fallback) {
            "fallback"
        } else {
            "generated"
        }
    );
    let _ = writeln!(s, "compiler {}", run.compiler);
    // What cuda-mem-sys's build did (`generated`, `committed-same-headers`, `committed`).
    let _ = writeln!(s, "crate_bindings {}", test_support::BINDINGS);
    let _ = writeln!(s, "cuda_version {}", c.cuda_version.unwrap_or(0));
    let n = counts(run);
    let _ = writeln!(
        s,
        "summary types={} records={} enums={} typedefs={} opaque={} nested={} fields={} offset_only={} \
         bitfields={} constants={} uncompared={} mismatches={}",
        n.types,
        n.records,
        n.enums,
        n.typedefs,
        n.opaque,
        n.nested,
        n.fields,
        n.offset_only,
        n.bitfields,
        n.constants,
        n.uncompared,
        n.mismatches
    );
    for m in &c.mismatches {
        let _ = writeln!(s, "mismatch {m}");
    }
    for e in &run.entries {
        let _ = writeln!(s, "{} {} {}", e.kind, e.key, e.values);
    }
    std::fs::write(path, s)
}

fn trial(name: &'static str, kind: &'static str) -> Trial {
    Trial::ignorable_test(name, move || match run() {
        Err(reason) => Ok(Completion::ignored_with(reason)),
        Ok(Err(e)) => Err(Failed::from(e)),
        Ok(Ok(run)) => {
            let bad: Vec<&Mismatch> = run.cmp.of_kind(kind);
            if bad.is_empty() {
                Ok(Completion::Completed)
            } else {
                let list: Vec<String> = bad.iter().map(|m| format!("  {m}")).collect();
                Err(format!(
                    "{} {name} differ between Rust and C:\n{}",
                    bad.len(),
                    list.join("\n")
                )
                .into())
            }
        }
    })
}

fn main() {
    let args = Arguments::from_args();
    if !args.list {
        if let Ok(Ok(run)) = run() {
            println!("{}", summary(run));
            if let Ok(path) = std::env::var("CUDA_MEM_SYS_ABI_DUMP") {
                if let Err(e) = dump(run, &path) {
                    eprintln!("abi_layout: writing {path}: {e}");
                    std::process::exit(1);
                }
            }
        }
    }
    let trials = vec![
        trial("types", "type"),
        trial("fields", "field"),
        trial("bitfields", "bits"),
        trial("constants", "const"),
    ];
    libtest_mimic::run(&args, trials).exit();
}
