//! `cargo xtask gpu-bundle --matrix`: every release's device tests and
//! examples, built here against that release's headers, packed into parts
//! that each run in one call of the GPU machine (`matrix.sh`).

use super::build::{self, device_target_dir};
use super::bundle::{write_headers_txt, write_run_sh};
use super::suite;
use crate::cmd::run_cmd;
use crate::headers;
use std::path::Path;
use std::process::Command;

/// The release matrix: the builds each release gets, (name, cargo features,
/// every device test of [`suite::DEVICE_TESTS`] or only those the feature
/// builds carry).
const MATRIX_BUILDS: [(&str, &str, bool); 2] =
    [("linked", "", true), ("loaded", "dynamic-loading", true)];

/// The per-thread-default-stream builds of the matrix, for the range's ends (`releases::ends`)
/// only: the binaries whose outcome the feature changes.
const PTDS_BUILDS: [(&str, &str, bool); 2] = [
    ("linked-ptds", "per-thread-default-stream", false),
    (
        "loaded-ptds",
        "dynamic-loading,per-thread-default-stream",
        false,
    ),
];

/// What one call to the GPU machine may carry (64 MiB, with room for the
/// working tree that travels with it: about 16 MB with the committed
/// bindings of every release).
const PART_LIMIT: u64 = 44 << 20;

/// What one part may take to run: a call runs 10 minutes at most, with the
/// machine's start and the transfers around it.
const PART_SECONDS: u64 = 480;

/// Seconds a release's builds take on an H100 (runs 17-19): every binary
/// and example, 2 × (device tests without the soak tests, about 30 s;
/// examples, about 5 s), the ptds builds and the wrapper's device tests a
/// few seconds each ...
const RELEASE_SECONDS: u64 = 90;
/// ... or, for each binary named (`<release>:<binary>,...`, the examples
/// counting as one), about 6 s in each of the two builds.
const NAMED_SECONDS: u64 = 12;

/// In `<release>:<binary>,...`, the examples.
const EXAMPLES: &str = "examples";

/// In `<release>:<binary>,...`, the wrapper crate's device tests
/// (`wrap/tests/wrap_device.rs`), built in the linked and loaded builds.
const WRAPPER: &str = suite::WRAPPER.name;

/// `cargo xtask gpu-bundle --matrix [<release>...]`: for each release (every
/// one 12.0 to 13.5 by default) and build, the device test binaries and the
/// examples built against that release's headers, in
/// `.gpu-bundle-matrix/<release>/<build>/` (each a bundle of its own with
/// `run.sh`), the release's headers in `<release>/include/` (the symbol test
/// preprocesses them there) and, for 12.x, the wheel's `libcudart.so.12` in
/// `<release>/lib/` (a 12.x wheel has no static runtime, and the GPU machine
/// only CUDA 13's). Then packed, whole releases at a time, into
/// `part-<n>.tar.xz` files of at most [`PART_LIMIT`], each with `matrix.sh`,
/// which runs every build it holds (`matrix.sh` says which tests run where).
///
/// The linked and loaded builds also hold the wrapper crate's device tests
/// (`wrap_device`), built against the same headers.
///
/// `--examples-only`: the examples alone (no per-thread-default-stream builds).
/// `--no-bindgen` (after it, if both): every build with `--no-default-features`,
/// as a library following the README builds (the committed bindings; no
/// per-thread-default-stream builds).
/// `<release>:<binary>,<binary>`: only those device-test binaries of that
/// release's linked and loaded builds, the examples only if `examples` is
/// among them and the wrapper's only if `wrap_device` is (a re-run of what
/// changed since a release's full run, e.g.
/// `12.2:unified_addressing,abi_symbols`).
pub fn matrix(workspace: &Path, args: &[&str]) -> Result<(), String> {
    let examples_only = args.first() == Some(&"--examples-only");
    let args = if examples_only { &args[1..] } else { args };
    let no_bindgen = args.first() == Some(&"--no-bindgen");
    let args = if no_bindgen {
        build::without_bindgen();
        &args[1..]
    } else {
        args
    };
    let subsets = named_releases(args)?;
    let releases: Vec<&str> = subsets.iter().map(|(r, _)| *r).collect();
    let subset_of = |r: &str| -> &[&str] {
        subsets
            .iter()
            .find(|(s, _)| *s == r)
            .map_or(&[][..], |(_, b)| &b[..])
    };
    crate::cmd::ensure_libclang()?;
    let root = workspace.join(".gpu-bundle-matrix");
    let _ = std::fs::remove_dir_all(&root);
    let started = std::time::Instant::now();
    for release in &releases {
        let include = headers::fetch(workspace, release)?;
        let dir = root.join("tree").join(release);
        let builds = MATRIX_BUILDS.iter().chain(PTDS_BUILDS.iter().filter(|_| {
            crate::releases::ends().contains(release) && !examples_only && !no_bindgen
        }));
        let feature_builds = suite::feature_build_names();
        for (build, features, every) in builds {
            let tests: &[&str] = if *every { &[] } else { &feature_builds };
            let Some(Plan {
                tests,
                build_tests: build_tests_here,
                examples,
                wrapper,
            }) = plan_build(tests, subset_of(release), examples_only)
            else {
                continue;
            };
            let into = dir.join(build);
            std::fs::create_dir_all(into.join("bin")).map_err(|e| e.to_string())?;
            let target_dir = device_target_dir(workspace);
            if build_tests_here {
                build::tests(
                    workspace,
                    &include,
                    features,
                    &tests,
                    &target_dir,
                    &into,
                    "",
                )?;
            }
            if examples {
                build::examples(workspace, &include, features, &target_dir, &into)?;
            }
            if wrapper {
                build::wrapper(
                    workspace,
                    &include,
                    features,
                    &target_dir,
                    &into.join("bin").join(WRAPPER),
                )?;
            }
            write_run_sh(workspace, &into)?;
            write_headers_txt(workspace, &into, release, Some(build))?;
            std::os::unix::fs::symlink("../include", into.join("include"))
                .map_err(|e| e.to_string())?;
        }
        run_cmd(
            Command::new("cp")
                .arg("-r")
                .arg(&include)
                .arg(dir.join("include")),
        )?;
        if release.starts_with("12.") {
            // `cuda_runtime_api.h` includes `crt/host_defines.h`, which the
            // 12.x wheels keep beside the runtime's, in the nvcc wheel's
            // include folder (abi_symbols preprocesses the headers there:
            // run 18 failed without it).
            let crt = include
                .parent()
                .unwrap()
                .parent()
                .unwrap()
                .join("cuda_nvcc/include/crt");
            if crt.is_dir() {
                run_cmd(
                    Command::new("cp")
                        .arg("-r")
                        .arg(&crt)
                        .arg(dir.join("include/crt")),
                )?;
            }
            std::fs::create_dir_all(dir.join("lib")).map_err(|e| e.to_string())?;
            let so = include.parent().unwrap().join("lib/libcudart.so.12");
            std::fs::copy(&so, dir.join("lib/libcudart.so.12"))
                .map_err(|e| format!("{}: {e}", so.display()))?;
        }
        println!(
            "CUDA {release}: built ({:.0} s so far)",
            started.elapsed().as_secs_f64()
        );
    }
    std::fs::write(root.join("tree/matrix.sh"), MATRIX_SH).map_err(|e| e.to_string())?;
    suite::write_suite_sh(&root.join("tree"))?;
    run_cmd(
        Command::new("chmod")
            .arg("+x")
            .arg(root.join("tree/matrix.sh")),
    )?;
    let seconds: Vec<u64> = releases
        .iter()
        .map(|r| match subset_of(r).len() as u64 {
            0 => RELEASE_SECONDS,
            n => (n * NAMED_SECONDS).min(RELEASE_SECONDS),
        })
        .collect();
    pack(&root, &releases, &seconds)?;
    run_cmd(Command::new("du").arg("-sh").arg(root.join("tree")))?;
    run_cmd(
        Command::new("sh")
            .arg("-c")
            .arg(format!("ls -l {}/part-*.tar.xz", root.display())),
    )?;
    println!(
        "On the GPU machine, one call per part (carry .gpu-bundle-matrix/part-<n>.tar.xz):\n  \
         mkdir -p /tmp/m && tar xJf .gpu-bundle-matrix/part-<n>.tar.xz -C /tmp/m && /tmp/m/matrix.sh\n\
         writes $OUT/<release>/<build>/summary.json; then record it in records/device-runs/ (docs/gpu-tests.md) and run `cargo xtask device-report`"
    );
    Ok(())
}

/// Releases as (name, bytes as xz packs them (measured: each release's
/// folder packed alone), seconds they take to run), grouped greedily, in
/// release order, into parts of at most `limit` bytes and `most` seconds.
pub fn group_parts(
    sizes: &[(String, u64, u64)],
    limit: u64,
    most: u64,
) -> Result<Vec<Vec<String>>, String> {
    let mut parts: Vec<(Vec<String>, u64, u64)> = vec![];
    for (name, size, secs) in sizes {
        if *size > limit {
            return Err(format!(
                "{name} alone packs to {size} bytes, over the {limit} a call carries"
            ));
        }
        match parts.last_mut() {
            Some((names, total, time)) if *total + size <= limit && *time + secs <= most => {
                names.push(name.clone());
                *total += size;
                *time += secs;
            }
            _ => parts.push((vec![name.clone()], *size, *secs)),
        }
    }
    Ok(parts.into_iter().map(|(n, _, _)| n).collect())
}

/// Packs `tree/<release>` folders into `part-<n>.tar.xz` files under `root`.
fn pack(root: &Path, releases: &[&str], seconds: &[u64]) -> Result<(), String> {
    let tree = root.join("tree");
    let mut sizes = vec![];
    for (r, secs) in releases.iter().zip(seconds) {
        let one = root.join(format!("one-{r}.tar.xz"));
        run_cmd(
            Command::new("tar")
                .arg("-C")
                .arg(&tree)
                .args(["-cJf"])
                .arg(&one)
                .arg(r)
                .env("XZ_OPT", "-9 -T0"),
        )?;
        let size = std::fs::metadata(&one).map_err(|e| e.to_string())?.len();
        let _ = std::fs::remove_file(&one);
        println!("CUDA {r}: {:.1} MiB packed", size as f64 / (1 << 20) as f64);
        sizes.push((r.to_string(), size, *secs));
    }
    for (n, part) in group_parts(&sizes, PART_LIMIT, PART_SECONDS)?
        .iter()
        .enumerate()
    {
        let file = root.join(format!("part-{}.tar.xz", n + 1));
        run_cmd(
            Command::new("tar")
                .arg("-C")
                .arg(&tree)
                .args(["-cJf"])
                .arg(&file)
                .args(["matrix.sh", "suite.sh"])
                .args(part)
                .env("XZ_OPT", "-9 -T0"),
        )?;
        println!("part {}: CUDA {}", n + 1, part.join(" "));
    }
    Ok(())
}

/// `gpu-bundle --matrix`'s arguments, checked before anything is made.
pub fn check_matrix_args(args: &[&str]) -> Result<(), String> {
    let args = match args.first() {
        Some(&"--examples-only") => &args[1..],
        _ => args,
    };
    let args = match args.first() {
        Some(&"--no-bindgen") => &args[1..],
        _ => args,
    };
    named_releases(args).map(drop)
}

fn named_releases<'a>(args: &[&'a str]) -> Result<Vec<(&'a str, Vec<&'a str>)>, String> {
    if args.is_empty() {
        return Ok(crate::releases::ALL.iter().map(|r| (*r, vec![])).collect());
    }
    let mut out = vec![];
    for a in args {
        let (r, bins) = match a.split_once(':') {
            Some((r, bins)) => (r, bins.split(',').collect::<Vec<_>>()),
            None => (*a, vec![]),
        };
        if !crate::releases::ALL.contains(&r) {
            return Err(format!("gpu-bundle --matrix: no release {r}"));
        }
        if let Some(b) = bins
            .iter()
            .find(|b| !suite::device_test_names().contains(b) && **b != EXAMPLES && **b != WRAPPER)
        {
            return Err(format!(
                "gpu-bundle --matrix: {b} is not a device-test binary ({}), `{WRAPPER}` or `{EXAMPLES}`",
                suite::device_test_names().join(", ")
            ));
        }
        out.push((r, bins));
    }
    Ok(out)
}

/// What one build of a release holds.
#[derive(Debug, PartialEq)]
struct Plan<'a> {
    /// Its test binaries (`tests` of [`MATRIX_BUILDS`] / [`PTDS_BUILDS`],
    /// empty for all), narrowed to those named.
    tests: Vec<&'a str>,
    /// Whether to build them.
    build_tests: bool,
    /// Whether the examples go with it.
    examples: bool,
    /// Whether the wrapper's device tests go with it.
    wrapper: bool,
}

/// The [`Plan`] of one build of a release, from the names given for it
/// (`named`, empty for everything). `None`: nothing of this build was named.
fn plan_build<'a>(tests: &[&'a str], named: &[&'a str], examples_only: bool) -> Option<Plan<'a>> {
    // Only the linked and loaded builds (every binary: `tests` empty) get the
    // examples and the wrapper.
    let every = tests.is_empty();
    let examples = every && (named.is_empty() || named.contains(&EXAMPLES));
    let wrapper = every && !examples_only && (named.is_empty() || named.contains(&WRAPPER));
    let tests: Vec<&str> = match (every, named.is_empty()) {
        (_, true) => tests.to_vec(),
        (true, false) => named
            .iter()
            .copied()
            .filter(|b| *b != EXAMPLES && *b != WRAPPER)
            .collect(),
        (false, false) => tests
            .iter()
            .copied()
            .filter(|b| named.contains(b))
            .collect(),
    };
    let build_tests = !examples_only && (named.is_empty() || !tests.is_empty());
    (build_tests || examples || wrapper).then_some(Plan {
        tests,
        build_tests,
        examples,
        wrapper,
    })
}

/// Runs every `<release>/<build>/run.sh` beside it, each writing
/// `$OUT/<release>/<build>/summary.json`: the soak tests (10 000 cycles
/// each, most of the suite's time) only in [`suite::SOAK_IN`] (read from
/// `suite.sh`); elsewhere libtest's `--skip` leaves them out (they are then
/// not counted). A 12.x release gets its wheel's `libcudart.so.12`.
pub const MATRIX_SH: &str = include_str!("scripts/matrix.sh");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_are_packed_in_order_into_parts_under_the_limit() {
        let sizes: Vec<(String, u64, u64)> = [
            ("12.0", 30, 80),
            ("12.1", 20, 80),
            ("12.2", 15, 15),
            ("12.3", 50, 80),
        ]
        .iter()
        .map(|(r, s, t)| (r.to_string(), *s, *t))
        .collect();
        assert_eq!(
            group_parts(&sizes, 60, 1000).unwrap(),
            [vec!["12.0", "12.1"], vec!["12.2"], vec!["12.3"]]
        );
        // At most `most` seconds a part, whatever their size: a subset
        // release (15 s) still fits where a whole one (80 s) does not.
        assert_eq!(
            group_parts(&sizes, 1000, 175).unwrap(),
            [vec!["12.0", "12.1", "12.2"], vec!["12.3"]]
        );
        assert_eq!(
            group_parts(&sizes, 1000, 170).unwrap(),
            [vec!["12.0", "12.1"], vec!["12.2", "12.3"]]
        );
        // A release that alone exceeds what one call carries is refused.
        assert!(group_parts(&sizes, 40, 1000).is_err());
    }

    #[test]
    fn a_release_named_with_binaries_gets_only_those() {
        let named = named_releases(&["12.2:unified_addressing,abi_symbols", "12.4"]).unwrap();
        assert_eq!(
            named[0],
            ("12.2", vec!["unified_addressing", "abi_symbols"])
        );
        assert_eq!(named[1], ("12.4", vec![]));
        let plan = |tests, build_tests, examples, wrapper| {
            Some(Plan {
                tests,
                build_tests,
                examples,
                wrapper,
            })
        };
        // linked/loaded (every binary) narrowed to those named, no examples, no wrapper
        assert_eq!(
            plan_build(&[], &named[0].1, false),
            plan(
                vec!["unified_addressing", "abi_symbols"],
                true,
                false,
                false
            )
        );
        // ptds (abi_symbols, device_smoke): abi_symbols alone
        assert_eq!(
            plan_build(&["abi_symbols", "device_smoke"], &named[0].1, false),
            plan(vec!["abi_symbols"], true, false, false)
        );
        // a ptds build none of whose binaries is named: left out
        assert_eq!(
            plan_build(&["abi_symbols", "device_smoke"], &["vmm"], false),
            None
        );
        // `examples` named: the examples go with the named binaries
        assert_eq!(
            plan_build(&[], &["vmm", "examples"], false),
            plan(vec!["vmm"], true, true, false)
        );
        // none named: everything (empty = every binary), examples and wrapper included
        assert_eq!(plan_build(&[], &[], false), plan(vec![], true, true, true));
        // the wrapper alone: no crate test binary built, and never in a ptds build
        assert_eq!(
            plan_build(&[], &["wrap_device"], false),
            plan(vec![], false, false, true)
        );
        assert_eq!(
            plan_build(&["abi_symbols", "device_smoke"], &["wrap_device"], false),
            None
        );
        assert!(named_releases(&["12.2:dma_buf,wrap_device"]).is_ok());
        // --examples-only: the examples, nothing else
        assert_eq!(plan_build(&[], &[], true), plan(vec![], false, true, false));
        // The wrong cases: a name that is no device binary, a release that is none.
        assert!(named_releases(&["12.2:vmmm"]).is_err());
        assert!(named_releases(&["12.7"]).is_err());
    }
}
