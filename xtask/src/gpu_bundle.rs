//! `cargo xtask gpu-bundle`: every test binary, built here against the CUDA
//! 13.0 headers (the GPU machine's toolkit and driver), in `.gpu-bundle/`
//! with `run.sh`, which runs them all and writes `summary.json`.

use crate::cmd::run_cmd;
use crate::headers;
use std::path::Path;
use std::process::Command;

/// The release the GPU machine's driver and toolkit implement.
const GPU_RELEASE: &str = "13.0";

/// Builds of the test suite that go to the GPU: (name suffix, cargo features,
/// test targets; empty for all). The feature builds only carry the tests
/// whose outcome the feature changes, to keep the bundle small.
const VARIANTS: [(&str, &str, &[&str]); 6] = [
    ("", "", &[]),
    // Run-time loading: the whole device suite through the loader, with the
    // static runtime and with libcudart.so loaded too.
    ("-loaded", "dynamic-loading", &[]),
    (
        "-loaded-dynamic-cudart",
        "dynamic-loading,dynamic-cudart",
        &[],
    ),
    (
        "-loaded-ptds",
        "dynamic-loading,per-thread-default-stream",
        &["abi_symbols", "device_smoke"],
    ),
    (
        "-ptds",
        "per-thread-default-stream",
        &["abi_symbols", "device_smoke"],
    ),
    (
        "-dynamic-cudart",
        "dynamic-cudart",
        &["abi_symbols", "device_smoke"],
    ),
];

/// The test targets that touch a GPU (the rest are checks against the C
/// compiler, which prove nothing more on the GPU machine).
pub const ON_GPU: [&str; 7] = [
    "abi_symbols",
    "device_smoke",
    "vmm",
    "unified_addressing",
    "stream_ordered_allocator",
    "tensor_map",
    "external_interop",
];

/// The target folder of every release's device build, here and in `gpu-bundle --matrix`.
pub fn device_target_dir(workspace: &Path) -> std::path::PathBuf {
    workspace.join("target/device-compile")
}

pub fn run(workspace: &Path) -> Result<(), String> {
    let include = headers::fetch(workspace, GPU_RELEASE)?;
    let bundle = workspace.join(".gpu-bundle");
    let _ = std::fs::remove_dir_all(&bundle);
    std::fs::create_dir_all(bundle.join("bin")).map_err(|e| e.to_string())?;
    for (suffix, features, tests) in VARIANTS {
        let target_dir = workspace
            .join("target/gpu-bundle")
            .join(format!("build{suffix}"));
        build_tests(
            workspace,
            &include,
            features,
            tests,
            &target_dir,
            &bundle,
            suffix,
        )?;
    }
    // The examples, built like the first variant's tests (run.sh runs them).
    crate::examples::bundle(
        workspace,
        &include,
        &workspace.join("target/gpu-bundle/build"),
        &bundle,
    )?;
    bench(workspace, &include, &bundle)?;
    // The symbol test preprocesses the same headers on the GPU machine.
    run_cmd(
        Command::new("cp")
            .arg("-r")
            .arg(&include)
            .arg(bundle.join("include")),
    )?;
    std::fs::write(bundle.join("run.sh"), RUN_SH).map_err(|e| e.to_string())?;
    std::fs::write(
        bundle.join("headers.txt"),
        format!(
            "CUDA {GPU_RELEASE} headers from {}\n",
            headers::wheel_names(workspace, GPU_RELEASE)
        ),
    )
    .map_err(|e| e.to_string())?;
    run_cmd(Command::new("chmod").arg("+x").arg(bundle.join("run.sh")))?;
    run_cmd(Command::new("du").arg("-sh").arg(&bundle))?;
    println!(
        "{}\nOn the GPU machine: .gpu-bundle/run.sh [--sanitize] [--api-errors] [test filter]  \
         (writes $OUT or .gpu-bundle/results; then `cargo xtask device-report <that folder>`)",
        bundle.display()
    );
    Ok(())
}

/// The release matrix: the builds each release gets, (name, cargo features,
/// test targets; empty for every device test of [`ON_GPU`]).
const MATRIX_BUILDS: [(&str, &str, &[&str]); 2] =
    [("linked", "", &[]), ("loaded", "dynamic-loading", &[])];

/// The per-thread-default-stream builds of the matrix, for the range's ends (`releases::ends`)
/// only: the binaries whose outcome the feature changes.
const PTDS_BUILDS: [(&str, &str, &[&str]); 2] = [
    (
        "linked-ptds",
        "per-thread-default-stream",
        &["abi_symbols", "device_smoke"],
    ),
    (
        "loaded-ptds",
        "dynamic-loading,per-thread-default-stream",
        &["abi_symbols", "device_smoke"],
    ),
];

/// What one call to the GPU machine may carry (64 MiB, with room for the
/// working tree that travels with it).
const PART_LIMIT: u64 = 56 << 20;

/// What one part may take to run: a call runs 10 minutes at most, with the
/// machine's start and the transfers around it.
const PART_SECONDS: u64 = 480;

/// Seconds a release's builds take on an H100 (runs 17-19): every binary
/// and example, 2 × (device tests without the soak tests, about 30 s;
/// examples, about 5 s) and the ptds builds a few seconds ...
const RELEASE_SECONDS: u64 = 80;
/// ... or, for each binary named (`<release>:<binary>,...`, the examples
/// counting as one), about 6 s in each of the two builds.
const NAMED_SECONDS: u64 = 12;

/// In `<release>:<binary>,...`, the examples.
const EXAMPLES: &str = "examples";

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
/// `--examples-only`: the examples alone (no per-thread-default-stream builds).
/// `<release>:<binary>,<binary>`: only those device-test binaries of that
/// release's linked and loaded builds, and the examples only if `examples`
/// is among them (a re-run of what changed since a release's full run, e.g.
/// `12.2:unified_addressing,abi_symbols`).
pub fn matrix(workspace: &Path, args: &[&str]) -> Result<(), String> {
    let examples_only = args.first() == Some(&"--examples-only");
    let args = if examples_only { &args[1..] } else { args };
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
        let builds = MATRIX_BUILDS.iter().chain(
            PTDS_BUILDS
                .iter()
                .filter(|_| crate::releases::ends().contains(release) && !examples_only),
        );
        for (build, features, tests) in builds {
            let Some((tests, build_tests_here, examples)) =
                plan_build(tests, subset_of(release), examples_only)
            else {
                continue;
            };
            let into = dir.join(build);
            std::fs::create_dir_all(into.join("bin")).map_err(|e| e.to_string())?;
            let target_dir = device_target_dir(workspace);
            if build_tests_here {
                build_tests(
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
                crate::examples::bundle_with(workspace, &include, features, &target_dir, &into)?;
            }
            std::fs::write(into.join("run.sh"), RUN_SH).map_err(|e| e.to_string())?;
            run_cmd(Command::new("chmod").arg("+x").arg(into.join("run.sh")))?;
            std::fs::write(
                into.join("headers.txt"),
                format!(
                    "CUDA {release} headers ({build}) from {}\n",
                    headers::wheel_names(workspace, release)
                ),
            )
            .map_err(|e| e.to_string())?;
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
         writes $OUT/<release>/<build>/summary.json; then `cargo xtask device-report --matrix <every $OUT>`"
    );
    Ok(())
}

/// `cargo test --no-run` of `tests` (every device test where empty) with
/// `features`, each test binary copied into `into/bin/<name><suffix>`.
fn build_tests(
    workspace: &Path,
    include: &Path,
    features: &str,
    tests: &[&str],
    target_dir: &Path,
    into: &Path,
    suffix: &str,
) -> Result<(), String> {
    let out = Command::new(env!("CARGO"))
        .current_dir(workspace)
        .args([
            "test",
            "--no-run",
            "--message-format=json-render-diagnostics",
        ])
        .args(
            if tests.is_empty() { &ON_GPU[..] } else { tests }
                .iter()
                .map(|t| format!("--test={t}")),
        )
        .args(["--package", "cuda-mem-sys", "--package", "abi-proofs"])
        .args(["--features", features])
        .env(crate::locate::INCLUDE_DIR_VAR, include)
        .env("CARGO_TARGET_DIR", target_dir)
        // No debug information (the symbol table stays: abi_symbols reads it).
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .env("CARGO_PROFILE_DEV_STRIP", "debuginfo")
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "building the device tests ({features:?}, {}) failed",
            include.display()
        ));
    }
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let (Some(exe), Some(name)) = (json_str(line, "executable"), json_str(line, "name")) else {
            continue;
        };
        if !line.contains("\"test\":true") || !ON_GPU.contains(&name) {
            continue;
        }
        let dest = into.join("bin").join(format!("{name}{suffix}"));
        std::fs::copy(exe, &dest).map_err(|e| format!("copying {exe}: {e}"))?;
    }
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
                .arg("matrix.sh")
                .args(part)
                .env("XZ_OPT", "-9 -T0"),
        )?;
        println!("part {}: CUDA {}", n + 1, part.join(" "));
    }
    Ok(())
}

/// Runs every `<release>/<build>/run.sh` beside it, each writing
/// `gpu-bundle --matrix`'s releases: every one (none named), or those named,
/// each with the binaries named after it (`<release>:<binary>,...`; none: all).
/// `gpu-bundle --matrix`'s arguments, checked before anything is made.
pub fn check_matrix_args(args: &[&str]) -> Result<(), String> {
    let args = match args.first() {
        Some(&"--examples-only") => &args[1..],
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
        if let Some(b) = bins.iter().find(|b| !ON_GPU.contains(b) && **b != EXAMPLES) {
            return Err(format!(
                "gpu-bundle --matrix: {b} is not a device-test binary ({}) or `{EXAMPLES}`",
                ON_GPU.join(", ")
            ));
        }
        out.push((r, bins));
    }
    Ok(out)
}

/// What one build of a release holds: its test binaries (`tests` of
/// [`MATRIX_BUILDS`] / [`PTDS_BUILDS`], empty for all), narrowed to those
/// `named`; whether to build them; whether the examples go with it. `None`:
/// nothing of this build was named.
fn plan_build<'a>(
    tests: &[&'a str],
    named: &[&'a str],
    examples_only: bool,
) -> Option<(Vec<&'a str>, bool, bool)> {
    let examples = tests.is_empty() && (named.is_empty() || named.contains(&EXAMPLES));
    let tests: Vec<&str> = match (tests.is_empty(), named.is_empty()) {
        (_, true) => tests.to_vec(),
        (true, false) => named.iter().copied().filter(|b| *b != EXAMPLES).collect(),
        (false, false) => tests
            .iter()
            .copied()
            .filter(|b| named.contains(b))
            .collect(),
    };
    let build_tests = !examples_only && (named.is_empty() || !tests.is_empty());
    (build_tests || examples).then_some((tests, build_tests, examples))
}

/// `$OUT/<release>/<build>/summary.json`. The one place that says which tests
/// run where: the soak tests (10 000 cycles each, most of the suite's time)
/// only in `SOAK_IN`; elsewhere libtest's `--skip` leaves them out (they are
/// then not counted). A 12.x release gets its wheel's `libcudart.so.12`.
const MATRIX_SH: &str = r#"#!/usr/bin/env bash
# matrix.sh [release/build ...]: every build of this part, or those named.
# Environment: OUT (results), SOAK_IN, MATRIX_SECONDS, GL_DIR.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/results}
# The soak tests, and the one release/build that runs them.
SOAK_TESTS="no_leak_over_10000_cycles rt_leak_10000_cycles drv_leak_10000_cycles"
SOAK_IN=${SOAK_IN:-13.0/linked}
builds=("$@")
if [ ${#builds[@]} = 0 ]; then
  for d in "$here"/*/*/run.sh; do builds+=("$(basename "$(dirname "$(dirname "$d")")")/$(basename "$(dirname "$d")")"); done
fi
# Vulkan loader packages carried in the repository's .gl/ (README, "GPU tests").
gl=${GL_DIR:-$PWD/.gl}
if [ -d "$gl" ] && ! ldconfig -p | grep -q libvulkan.so.1; then
  for f in "$gl"/*.deb; do dpkg -x "$f" /; done; ldconfig
fi
# No build starts after MATRIX_SECONDS (a call's limit is 10 minutes): those
# left are named, to run in another call (`matrix.sh <release>/<build> ...`).
deadline=${MATRIX_SECONDS:-520}
start=$(date +%s)
left=()
for rb in "${builds[@]}"; do
  if [ $(( $(date +%s) - start )) -ge "$deadline" ]; then left+=("$rb"); continue; fi
  r=${rb%/*}
  skip=()
  if [ "$rb" != "$SOAK_IN" ]; then for t in $SOAK_TESTS; do skip+=(--skip "$t"); done; fi
  lib=""
  [ -d "$here/$r/lib" ] && lib="$here/$r/lib"
  mkdir -p "$out/$rb"
  echo "==== $rb (soak tests: $([ ${#skip[@]} = 0 ] && echo run || echo skipped))" >&2
  t0=$(date +%s)
  OUT="$out/$rb" LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$here/$rb/run.sh" "${skip[@]}" >/dev/null
  printf '{"release": "%s", "build": "%s", "soak": %s, "seconds": %d}\n' "$r" "${rb#*/}" \
    "$([ ${#skip[@]} = 0 ] && echo true || echo false)" $(( $(date +%s) - t0 )) >"$out/$rb/matrix.json"
done
echo "matrix: $(( ${#builds[@]} - ${#left[@]} )) builds in $(( $(date +%s) - start )) s" >&2
if [ ${#left[@]} -gt 0 ]; then
  echo "not run (MATRIX_SECONDS=$deadline reached): ${left[*]}" | tee "$out/not-run.txt" >&2
fi
"#;

/// The call-cost benchmark (`bench/`), release builds: cuda-mem-sys linked,
/// cuda-mem-sys loaded, cudarc 0.19 loaded; `bench.sh` runs them interleaved.
fn bench(workspace: &Path, include: &Path, bundle: &Path) -> Result<(), String> {
    std::fs::create_dir_all(bundle.join("bench")).map_err(|e| e.to_string())?;
    for (name, features) in [("linked", ""), ("loaded", "loaded"), ("cudarc", "cudarc")] {
        let target_dir = workspace.join("target/gpu-bundle/bench");
        run_cmd(
            Command::new(env!("CARGO"))
                .current_dir(workspace)
                .args(["build", "--release", "--package", "cuda-mem-sys-bench"])
                .args(["--features", features])
                .env(crate::locate::INCLUDE_DIR_VAR, include)
                .env("CARGO_TARGET_DIR", &target_dir),
        )?;
        std::fs::copy(
            target_dir.join("release/cuda-mem-sys-bench"),
            bundle.join("bench").join(name),
        )
        .map_err(|e| e.to_string())?;
    }
    std::fs::write(bundle.join("bench.sh"), BENCH_SH).map_err(|e| e.to_string())?;
    run_cmd(Command::new("chmod").arg("+x").arg(bundle.join("bench.sh")))
}

/// Seven rounds of the three builds, their order rotated each round, pinned
/// to one core; the loaded build adds its same-process comparison. Prints
/// every figure and the median per (build, operation).
const BENCH_SH: &str = r#"#!/usr/bin/env bash
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/results}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
pin=""
command -v taskset >/dev/null && pin="taskset -c ${BENCH_CPU:-2}"
: >"$out/bench-raw.txt"
order=(linked loaded cudarc)
for round in 1 2 3 4 5 6 7; do
  for b in "${order[@]}"; do $pin "$here/bench/$b" >>"$out/bench-raw.txt"; done
  order=("${order[@]:1}" "${order[0]}")
done
python3 - "$out/bench-raw.txt" <<'PY' | tee "$out/bench.txt"
import sys, statistics, collections
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    who, op, ns = line.split()
    d[(op, who)].append(float(ns))
ops = sorted({op for op, _ in d}, key=lambda o: list(d).index((o, "cuda-mem-sys-linked")))
print("Separate processes (median of 7 rounds, order rotated, pinned):\n")
print("| operation | linked | loaded | loaded / linked | cudarc 0.19 loaded | loaded / cudarc |")
print("|---|---|---|---|---|---|")
for op in ops:
    m = {w: statistics.median(d[(op, w)]) for w in ("cuda-mem-sys-linked", "cuda-mem-sys-loaded", "cudarc-0.19-loaded")}
    print(f"| `{op}` | {m['cuda-mem-sys-linked']:.1f} | {m['cuda-mem-sys-loaded']:.1f} | {m['cuda-mem-sys-loaded']/m['cuda-mem-sys-linked']:.2f} | {m['cudarc-0.19-loaded']:.1f} | {m['cuda-mem-sys-loaded']/m['cudarc-0.19-loaded']:.2f} |")
print("\nOne process, interleaved (the loaded build; median of 7 x 5 rounds): the crate's call against the driver's own pointer called directly, as a linked call does:\n")
print("| operation | direct | crate call | crate / direct |")
print("|---|---|---|---|")
for op in ops:
    m = {w: statistics.median(d[(op, w)]) for w in ("same-process-direct", "same-process-crate")}
    print(f"| `{op}` | {m['same-process-direct']:.1f} | {m['same-process-crate']:.1f} | {m['same-process-crate']/m['same-process-direct']:.2f} |")
PY
"#;

/// The string value of `"key":"..."` in one line of cargo's JSON output.
pub fn json_str<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(&format!("\"{key}\":\""))? + key.len() + 4;
    let len = line[start..].find('"')?;
    Some(&line[start..start + len])
}

const RUN_SH: &str = r#"#!/usr/bin/env bash
# Runs every test binary of the bundle on a GPU machine (no Rust needed) and
# writes summary.json and one log per binary into $OUT (or results/ beside this).
#
#   run.sh [test filter]               the suite
#   run.sh --sanitize [test filter]    the suite, then compute-sanitizer: memcheck
#        (--leak-check full --report-api-errors no --target-processes all) over
#        each device binary, racecheck and synccheck over tensor_map, and the
#        self-test (a pool-IPC importer that deliberately keeps its import must
#        show up as leaked). Bar: 0 errors and 0 bytes leaked in every binary.
#   run.sh --api-errors [test filter]  memcheck with API errors reported: counts
#        the deliberate bad calls per binary ("Program hit" lines).
#   --skip-suite   with either: skip the plain run of the suite (already done).
#   SANITIZE_TIMEOUT  seconds per binary under a sanitizer (default 420).
#   SANITIZE_BINARIES the binaries run under memcheck (default: the device
#        suite); SANITIZE_EXTRAS=0 skips racecheck, synccheck and the self-test.
#        To stay under a time limit per command, split the work over calls and
#        give `cargo xtask device-report` every $OUT.
# The test filter goes to every binary (libtest arguments, e.g.
# `--skip no_leak_over_10000_cycles`).
# The figures for docs/device-results.md: `cargo xtask device-report <this $OUT>`.
set -u
sanitize=0; api_errors=0; suite=1
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize) sanitize=1; shift ;;
    --api-errors) api_errors=1; shift ;;
    --skip-suite) suite=0; shift ;;
    *) break ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/results}
mkdir -p "$out"
# Vulkan loader packages carried beside the bundle (see README, "GPU tests").
if [ -d "$here/../.gl" ] && ! ldconfig -p | grep -q libvulkan.so.1; then
  for f in "$here"/../.gl/*.deb; do dpkg -x "$f" /; done; ldconfig
fi
# Headless: the driver's GLX-based ICD manifest cannot create an instance
# without a display; its EGL library can (tests/external_interop.rs).
if [ -z "${VK_DRIVER_FILES:-}" ] && ldconfig -p | grep -q libEGL_nvidia.so.0; then
  printf '{"file_format_version":"1.0.1","ICD":{"library_path":"libEGL_nvidia.so.0","api_version":"1.4.312"}}' >/tmp/nvidia_egl_icd.json
  export VK_DRIVER_FILES=/tmp/nvidia_egl_icd.json
fi
export CUDA_MEM_SYS_TEST_INCLUDE_DIRS="$here/include"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
cs=${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}
st_limit=${SANITIZE_TIMEOUT:-420}
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
toolkit=$(/usr/local/cuda/bin/nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' | head -1)
# The binaries compute-sanitizer runs: the device suite, default build.
sanitized=${SANITIZE_BINARIES:-device_smoke vmm unified_addressing stream_ordered_allocator tensor_map external_interop}
extras=${SANITIZE_EXTRAS:-1}
# Sum of the numbers after `$2` on the lines of log $1 that contain it.
sum_after() { grep -o "$2 [0-9,]*" "$1" 2>/dev/null | tr -d , | awk '{s+=$NF} END {print s+0}'; }
{
  printf '{\n  "date": "%s",\n  "gpu": "%s",\n  "gpus": %s,\n  "toolkit": "%s",\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$gpu" "$ngpu" "$toolkit"
  printf '  "headers": "%s",\n  "binaries": {\n' "$(cat "$here/headers.txt" | tr -d '\n')"
  first=1
  for b in "$here"/bin/*; do
    [ $suite = 1 ] || break
    [ -e "$b" ] || continue
    n=$(basename "$b")
    start=$(date +%s)
    timeout 600 "$b" --test-threads=1 "$@" >"$out/$n.log" 2>&1
    rc=$?
    line=$(grep -E '^test result:' "$out/$n.log" | tail -1)
    p=$(echo "$line" | grep -o '[0-9]* passed' | grep -o '[0-9]*'); f=$(echo "$line" | grep -o '[0-9]* failed' | grep -o '[0-9]*')
    i=$(echo "$line" | grep -o '[0-9]* ignored' | grep -o '[0-9]*')
    [ $first = 1 ] || printf ',\n'; first=0
    printf '    "%s": {"exit": %d, "passed": %s, "failed": %s, "ignored": %s, "seconds": %d}' "$n" $rc "${p:-0}" "${f:-0}" "${i:-0}" $(( $(date +%s) - start ))
    echo "$n: exit $rc, ${line:-no result line}" >&2
  done
  printf '\n  }'
  # The examples (examples/*.rs): exit code and last line of each; 0 and a
  # line starting "OK:" when every check passed.
  printf ',\n  "examples": {\n'
  first=1
  for e in "$here"/examples/*; do
    [ $suite = 1 ] || break
    [ -e "$e" ] || continue
    n=$(basename "$e")
    (cd "$out" && timeout 300 "$e") >"$out/example-$n.log" 2>&1
    rc=$?
    last=$(tail -n 1 "$out/example-$n.log" | tr -d '\r' | sed 's/\\/\\\\/g; s/"/\\"/g; s/\t/ /g')
    [ $first = 1 ] || printf ',\n'; first=0
    printf '    "%s": {"exit": %d, "last": "%s"}' "$n" $rc "$last"
    echo "example $n: exit $rc, $last" >&2
  done
  printf '\n  }'
  # From here on every binary runs under a sanitizer (the process-death tests
  # then print their free-memory figures without asserting them).
  export CUDA_MEM_SYS_UNDER_SANITIZER=1
  if [ $sanitize = 1 ]; then
    printf ',\n  "sanitizer": {\n    "memcheck": {\n'
    first=1; total_e=0; total_l=0
    for n in $sanitized; do
      [ -x "$here/bin/$n" ] || continue
      log="$out/memcheck-$n.log"; start=$(date +%s)
      timeout "$st_limit" "$cs" --tool memcheck --leak-check full --report-api-errors no \
        --target-processes all "$here/bin/$n" --test-threads=1 "$@" >"$log" 2>&1
      rc=$?
      e=$(sum_after "$log" 'ERROR SUMMARY:'); l=$(sum_after "$log" 'LEAK SUMMARY:')
      total_e=$((total_e + e)); total_l=$((total_l + l))
      [ $first = 1 ] || printf ',\n'; first=0
      printf '      "%s": {"exit": %d, "errors": %d, "leaked_bytes": %d, "seconds": %d}' "$n" $rc "$e" "$l" $(( $(date +%s) - start ))
      echo "memcheck $n: exit $rc, $e errors, $l bytes leaked" >&2
    done
    printf '\n    },\n'
    st=0; verdict="self-test not run (SANITIZE_EXTRAS=0)"
    [ "$extras" = 1 ] && for tool in racecheck synccheck; do
      log="$out/$tool-tensor_map.log"
      timeout "$st_limit" "$cs" --tool $tool --target-processes all "$here/bin/tensor_map" --test-threads=1 "$@" >"$log" 2>&1
      rc=$?
      if [ $tool = racecheck ]; then
        e=$(grep -o 'RACECHECK SUMMARY: .*(\([0-9]*\) errors' "$log" | grep -o '([0-9]* errors' | tr -d '(' | awk '{s+=$1} END {print s+0}')
      else
        e=$(sum_after "$log" 'ERROR SUMMARY:')
      fi
      total_e=$((total_e + e))
      printf '    "%s_tensor_map": {"exit": %d, "errors": %d},\n' $tool $rc "$e"
      echo "$tool tensor_map: exit $rc, $e errors" >&2
    done
    # Self-test: the importer child keeps its 4 MiB import; memcheck must say so.
    if [ "$extras" = 1 ]; then
      log="$out/memcheck-selftest.log"
      CUDA_MEM_SYS_SELFTEST_LEAK_IMPORT=1 timeout "$st_limit" "$cs" --tool memcheck --leak-check full \
        --report-api-errors no --target-processes all "$here/bin/stream_ordered_allocator" \
        --test-threads=1 --exact rt_ipc_two_processes >"$log" 2>&1
      st=$(sum_after "$log" 'LEAK SUMMARY:')
      if [ "$st" -gt 0 ]; then verdict="self-test caught: $st bytes leaked"; else verdict="self-test MISSED the deliberate leak"; fi
      echo "$verdict" >&2
    fi
    if [ "$total_e" = 0 ] && [ "$total_l" = 0 ] && { [ "$st" -gt 0 ] || [ "$extras" != 1 ]; }; then
      bar=met; [ "$extras" = 1 ] || bar="met by these binaries (self-test in another run)"
    else bar=failed; fi
    printf '    "total_errors": %d,\n    "total_leaked_bytes": %d,\n    "self_test": "%s",\n    "bar": "%s"\n  }' \
      "$total_e" "$total_l" "$verdict" "$bar"
    echo "sanitizer bar (0 errors, 0 bytes leaked, self-test caught): $bar" >&2
  fi
  if [ $api_errors = 1 ]; then
    printf ',\n  "deliberate_bad_calls": {\n'
    first=1
    for n in $sanitized; do
      [ -x "$here/bin/$n" ] || continue
      log="$out/api-errors-$n.log"
      timeout "$st_limit" "$cs" --tool memcheck --report-api-errors explicit --target-processes all \
        "$here/bin/$n" --test-threads=1 "$@" >"$log" 2>&1
      hits=$(grep -c 'Program hit' "$log")
      [ $first = 1 ] || printf ',\n'; first=0
      printf '    "%s": %d' "$n" "$hits"
      echo "api errors $n: $hits deliberate bad calls" >&2
    done
    printf '\n  }'
  fi
  printf '\n}\n'
} >"$out/summary.json"
cat "$out/summary.json"
"#;

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
        // linked/loaded (every binary) narrowed to those named, no examples
        assert_eq!(
            plan_build(&[], &named[0].1, false),
            Some((vec!["unified_addressing", "abi_symbols"], true, false))
        );
        // ptds (abi_symbols, device_smoke): abi_symbols alone
        assert_eq!(
            plan_build(&["abi_symbols", "device_smoke"], &named[0].1, false),
            Some((vec!["abi_symbols"], true, false))
        );
        // a ptds build none of whose binaries is named: left out
        assert_eq!(
            plan_build(&["abi_symbols", "device_smoke"], &["vmm"], false),
            None
        );
        // `examples` named: the examples go with the named binaries
        assert_eq!(
            plan_build(&[], &["vmm", "examples"], false),
            Some((vec!["vmm"], true, true))
        );
        // none named: everything (empty = every binary), examples included
        assert_eq!(plan_build(&[], &[], false), Some((vec![], true, true)));
        // The wrong cases: a name that is no device binary, a release that is none.
        assert!(named_releases(&["12.2:vmmm"]).is_err());
        assert!(named_releases(&["12.7"]).is_err());
    }
}
