//! The loader table's type check (`Preprocessor::failing_asserts`,
//! `build/preprocess.rs`) reports exactly the `PFN_` typedefs whose
//! type is not the function's, under gcc and under clang, however many there
//! are (clang stops at 20 errors unless told otherwise), and a check that
//! does not compile is an error, never "nothing failed" (which would let the
//! loader ask the driver for a version of the wrong type).
//!
//! Runs the build machine's compilers over the CUDA headers the crate was
//! built with: the same code the build script runs.

use generator::preprocess;
use libtest_mimic::{Completion, Failed};
use std::path::PathBuf;

const HEAD: &str = "#include <cuda.h>\n#include <cudaTypedefs.h>\n";

/// (documented name, typedef, fits) in CUDA 13.0's headers (and every 13.x).
const PAIRS: [(&str, &str, bool); 6] = [
    ("cuMemAdvise", "PFN_cuMemAdvise_v12020", true),
    // CUDA 8's cuMemAdvise took a CUdevice where 12.2's takes a CUmemLocation.
    ("cuMemAdvise", "PFN_cuMemAdvise_v8000", false),
    // cuCtxGetDevice keeps CUDA 2's type; 13.0's cuCtxGetDevice_v2 takes a context too.
    ("cuCtxGetDevice", "PFN_cuCtxGetDevice_v2000", true),
    ("cuCtxGetDevice", "PFN_cuCtxGetDevice_v13000", false),
    ("cuMemAlloc", "PFN_cuMemAlloc_v3020", true),
    ("cuInit", "PFN_cuInit_v2000", true),
];

/// How many more wrong pairs are added: with the two above, more than
/// clang's default limit of 20 errors.
const FILLER: usize = 24;

fn source() -> (String, Vec<String>) {
    let mut src = String::new();
    let mut wrong = vec![];
    let mut assert = |name: &str, typedef: &str, label: String, fits: bool| {
        src.push_str(&format!(
            "_Static_assert(__builtin_types_compatible_p(__typeof__(&{name}), {typedef}), \"{label}\");\n"
        ));
        if !fits {
            wrong.push(label);
        }
    };
    for (name, typedef, fits) in PAIRS {
        assert(name, typedef, format!("{name} {typedef}"), fits);
    }
    for i in 0..FILLER {
        // cuInit(unsigned) is no cuMemAdvise.
        assert(
            "cuInit",
            "PFN_cuMemAdvise_v12020",
            format!("cuInit as cuMemAdvise {i}"),
            false,
        );
    }
    wrong.sort();
    (src, wrong)
}

/// The C compiler `which` ("gcc" or "clang") for the host, or why it is not here.
fn compiler(which: &str) -> Result<cc::Build, String> {
    let (target, host) = (test_support::TARGET, test_support::HOST);
    if target != host {
        return Err(format!(
            "the check runs the build machine's compilers ({host}); this test is built for {target}"
        ));
    }
    let path = match which {
        "gcc" => ["gcc"].iter().map(PathBuf::from).find(|p| on_path(p)),
        _ => ["/usr/lib/llvm-19/bin/clang", "clang-19", "clang"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file() || on_path(p)),
    }
    .ok_or_else(|| {
        format!("no {which} here (Debian: apt-get install {which}{})", {
            if which == "clang" {
                "-19"
            } else {
                ""
            }
        })
    })?;
    let mut b = cc::Build::new();
    b.target(target)
        .host(host)
        .opt_level(0)
        .cargo_metadata(false)
        .cargo_warnings(false)
        .warnings(false)
        .compiler(path);
    Ok(b)
}

fn on_path(p: &std::path::Path) -> bool {
    std::process::Command::new(p)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `failing_asserts` of `source` under compiler `which`, or why it cannot run here.
fn failing(which: &str, source: &str) -> Result<Result<Vec<String>, String>, String> {
    let dirs = test_support::include_dirs()?;
    let cc = compiler(which)?;
    let scratch = test_support::scratch(&format!("type-check-{which}"));
    let pp = preprocess::Preprocessor {
        cc,
        include_dirs: &dirs,
        defines: vec![],
        work_dir: scratch.path(),
    };
    Ok(pp.failing_asserts(HEAD, source).map(|mut v| {
        v.sort();
        v
    }))
}

fn wrong_versions_are_caught(which: &str) -> Result<Completion, Failed> {
    let (src, wrong) = source();
    let got = match failing(which, &src) {
        Ok(got) => got?,
        Err(why) => return Ok(Completion::ignored_with(why)),
    };
    if got != wrong {
        let missed: Vec<_> = wrong.iter().filter(|w| !got.contains(w)).collect();
        let extra: Vec<_> = got.iter().filter(|g| !wrong.contains(g)).collect();
        return Err(format!(
            "{which}: {} of {} wrong typedefs reported; missed {missed:?}; wrongly reported {extra:?}",
            got.len(),
            wrong.len()
        )
        .into());
    }
    println!(
        "{which}: all {} wrong typedefs reported (cuMemAdvise as CUDA 8's, cuCtxGetDevice as \
         CUDA 13's _v2, {FILLER} more), none of the {} right ones",
        got.len(),
        PAIRS.iter().filter(|p| p.2).count()
    );
    Ok(Completion::Completed)
}

fn a_check_that_does_not_compile_is_an_error(which: &str) -> Result<Completion, Failed> {
    // A typedef that does not exist: the compiler fails, but not on an assertion.
    let (src, _) = source();
    let broken = format!(
        "{src}_Static_assert(__builtin_types_compatible_p(__typeof__(&cuInit), \
         PFN_cuNoSuchFunction_v1), \"cuInit PFN_cuNoSuchFunction_v1\");\n"
    );
    match failing(which, &broken) {
        Err(why) => Ok(Completion::ignored_with(why)),
        Ok(Err(message)) if message.contains("PFN_cuNoSuchFunction_v1") => {
            println!("{which}: {}", message.lines().next().unwrap_or_default());
            Ok(Completion::Completed)
        }
        Ok(Err(message)) => {
            Err(format!("{which}: an error not naming the cause: {message}").into())
        }
        Ok(Ok(got)) => Err(format!(
            "{which}: a check that does not compile was taken as {} failed asserts",
            got.len()
        )
        .into()),
    }
}

fn main() {
    test_support::main(vec![
        ("gcc_reports_every_wrong_version", || {
            wrong_versions_are_caught("gcc")
        }),
        ("clang_reports_every_wrong_version", || {
            wrong_versions_are_caught("clang")
        }),
        ("gcc_a_check_that_does_not_compile_is_an_error", || {
            a_check_that_does_not_compile_is_an_error("gcc")
        }),
        ("clang_a_check_that_does_not_compile_is_an_error", || {
            a_check_that_does_not_compile_is_an_error("clang")
        }),
    ]);
}
