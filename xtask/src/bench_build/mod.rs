//! `cargo xtask bench-build`: what a user's build costs. A one-line library
//! depending on this crate is built clean and again with nothing changed, for
//! (a) the CUDA 13.0 headers found, (a') other 13.0 headers found, (b) no
//! CUDA, (c) `default-features = false` with the headers found, beside a
//! one-line library depending on cudarc 0.19 (features `driver`, `runtime`,
//! `cuda-13000`) and the two floors of the `bindgen` feature (bindgen alone,
//! linked; linked and run with this crate's configuration), all in one run
//! on this machine; writes `docs/build-times.md`. The crate's build script
//! runs with `CUDA_MEM_SYS_BUILD_TIMINGS`: its steps (`build/timings.rs`)
//! are shown beside bindgen's own run, and the build-time budget is checked:
//! the build script that runs bindgen takes at most bindgen's own run (the
//! floor's build script) + [`budget::SCRIPT_BUDGET_S`], and the clean build with the
//! committed bindings' headers at most [`budget::CLEAN_BUDGET`] × the linked floor.

mod budget;
mod report;

use crate::cmd::write_file;
use crate::headers;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use budget::{budget, cpu_bound, over_budget, steps_table};
use report::{
    after_bindgen, build_script_run, median, median_after, median_steps, report_units,
    script_steps, AfterBindgen,
};

/// CPU seconds (user + system) of this process's waited-for children so far.
fn children_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at field 3.
    let after = stat.rsplit_once(')').map_or("", |(_, a)| a);
    let fields: Vec<&str> = after.split_whitespace().collect();
    // cutime, cstime are fields 16 and 17 (1-based), in clock ticks (100 Hz on Linux).
    let ticks = |i: usize| fields.get(i - 3).and_then(|f| f.parse::<f64>().ok());
    ticks(16).unwrap_or(0.0) / 100.0 + ticks(17).unwrap_or(0.0) / 100.0
}

/// (wall, CPU) seconds of `cmd`, and its stderr.
fn timed(cmd: &mut Command) -> Result<(f64, f64, String), String> {
    let cpu = children_cpu();
    let start = Instant::now();
    let out = cmd.output().map_err(|e| e.to_string())?;
    let wall = start.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err(format!("{cmd:?} failed:\n{stderr}"));
    }
    Ok((wall, children_cpu() - cpu, stderr))
}

struct Figures {
    clean_wall: f64,
    clean_cpu: f64,
    noop_wall: f64,
    /// The build script's own run in the clean build (`--timings`).
    script: Option<f64>,
    /// What the clean build did once bindgen had compiled (`--timings`).
    after_bindgen: Option<AfterBindgen>,
    /// Its steps (`CUDA_MEM_SYS_BUILD_TIMINGS`), each the median of the runs:
    /// (step, CPU s, wall s).
    steps: Vec<(String, Option<f64>, f64)>,
    /// Whether a no-op rebuild ran no build script (all runs).
    noop_fresh: bool,
}

/// Clean and no-op `cargo build` of `manifest`, each the median of `runs`.
fn measure(
    manifest: &Path,
    target: &Path,
    env: &[(&str, &Path)],
    package: &str,
    runs: usize,
) -> Result<Figures, String> {
    let (mut clean, mut cpu, mut noop, mut script) = (vec![], vec![], vec![], vec![]);
    let mut after = vec![];
    let mut steps: Vec<Vec<(String, Option<f64>, f64)>> = vec![];
    let mut noop_fresh = true;
    for _ in 0..runs {
        let _ = std::fs::remove_dir_all(target);
        let build = |extra: &str| {
            let mut c = Command::new(env!("CARGO"));
            c.args(["build", extra, "--manifest-path"])
                .arg(manifest)
                .env("CARGO_TARGET_DIR", target)
                // As cargo builds a crates.io dependency: it compiles path
                // dependencies (this crate here) incrementally, and registry
                // ones (cudarc here, this crate in a user's build) not.
                .env("CARGO_INCREMENTAL", "0");
            for var in generator::locate::ROOT_VARS {
                c.env_remove(var);
            }
            for (k, v) in env {
                c.env(k, v);
            }
            // The build script's steps (this crate's; others ignore it).
            c.env(generator::timings::VAR, "1");
            c
        };
        let (wall, c, _) = timed(&mut build("--timings"))?;
        clean.push(wall);
        cpu.push(c);
        let units = report_units(target);
        if let Some(s) = build_script_run(&units, package) {
            script.push(s);
        }
        after.extend(after_bindgen(&units));
        steps.push(script_steps(target, package));
        let (wall, _, stderr) = timed(&mut build("--verbose"))?;
        noop.push(wall);
        // Cargo names a build script's binary after its file: `build/main.rs`'s is
        // `build-script-main`, the users' `build.rs` `build-script-build`.
        noop_fresh &= !["build-script-build`", "build-script-main`"]
            .iter()
            .any(|run| stderr.contains(run));
    }
    Ok(Figures {
        clean_wall: median(clean),
        clean_cpu: median(cpu),
        noop_wall: median(noop),
        script: (!script.is_empty()).then(|| median(script)),
        after_bindgen: median_after(&after),
        steps: median_steps(&steps),
        noop_fresh,
    })
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

pub fn run(workspace: &Path, runs: usize) -> Result<(), String> {
    crate::cmd::ensure_libclang()?;
    let include = headers::fetch(workspace, generator::release::PINNED_RELEASE)?;
    let bench = workspace.join("target/bench");
    // A one-line library: `pub use` of `dependency`, or, with `build_rs`, a
    // library whose build script (that text) is all that uses it.
    let user = |name: &str, dependency: &str, build_rs: Option<&str>| -> Result<PathBuf, String> {
        let dir = bench.join(name);
        std::fs::create_dir_all(dir.join("src")).map_err(|e| e.to_string())?;
        let section = if build_rs.is_some() {
            "build-dependencies"
        } else {
            "dependencies"
        };
        write_file(
            &dir.join("Cargo.toml"),
            format!(
                "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n\
                 [{section}]\n{dependency}\n\n[workspace]\n"
            ),
        )?;
        let krate = dependency.split(' ').next().unwrap().replace('-', "_");
        let lib = match build_rs {
            Some(text) => {
                write_file(&dir.join("build.rs"), text)?;
                String::new()
            }
            None => format!("pub use {krate};\n"),
        };
        write_file(&dir.join("src/lib.rs"), &lib)?;
        Ok(dir.join("Cargo.toml"))
    };
    let path = format!("{:?}", workspace.display().to_string());
    let ours = user(
        "cuda-mem-sys-user",
        &format!("cuda-mem-sys = {{ path = {path} }}"),
        None,
    )?;
    let ours_min = user(
        "cuda-mem-sys-user-no-bindgen",
        &format!("cuda-mem-sys = {{ path = {path}, default-features = false }}"),
        None,
    )?;
    let cudarc = user(
        "cudarc-user",
        "cudarc = { version = \"0.19\", default-features = false, features = \
         [\"driver\", \"runtime\", \"cuda-13000\", \"dynamic-loading\", \"std\"] }",
        None,
    )?;
    // The floors of the default `bindgen` feature: bindgen as this crate asks
    // for it, compiled by a build script that only links it, and one that runs
    // it over the headers with this crate's configuration (its only one:
    // build/codegen/bindgen_config.rs) and writes the text, nothing more.
    let bindgen =
        "bindgen = { version = \"0.73\", default-features = false, features = [\"runtime\"] }";
    let bindgen_linked = user(
        "bindgen-linked-user",
        bindgen,
        Some("fn main() {\n    let _ = bindgen::Builder::default();\n}\n"),
    )?;
    let config = workspace.join("build/codegen/bindgen_config.rs");
    let bindgen_run = user(
        "bindgen-run-user",
        bindgen,
        Some(&format!(
            "#[path = {config:?}]\nmod bindgen_config;\n\n\
             fn main() {{\n    \
                 let crate_dir = std::path::PathBuf::from({path});\n    \
                 let include = std::path::PathBuf::from(std::env::var(\"CUDA_MEM_SYS_INCLUDE_DIR\").unwrap());\n    \
                 let out = std::path::PathBuf::from(std::env::var(\"OUT_DIR\").unwrap());\n    \
                 let text = bindgen_config::builder(\n        \
                     &crate_dir.join(\"wrapper.h\"),\n        \
                     &[include, crate_dir.clone()],\n        \
                     &[],\n        \
                     &out.join(\"static_wrappers\"),\n        \
                     true,\n    \
                 )\n    \
                 .generate()\n    \
                 .unwrap()\n    \
                 .to_string();\n    \
                 std::fs::write(out.join(\"bindings.rs\"), text).unwrap();\n\
             }}\n",
            config = config.display().to_string(),
        )),
    )?;
    // Fetch first, so the timings hold no downloads.
    for m in [&ours, &ours_min, &cudarc, &bindgen_linked, &bindgen_run] {
        crate::cmd::run_cmd(
            Command::new(env!("CARGO"))
                .arg("fetch")
                .arg("--manifest-path")
                .arg(m),
        )?;
    }
    let load_before = loadavg();
    let started = std::time::SystemTime::now();
    let headers = [(generator::locate::INCLUDE_DIR_VAR, include.as_path())];
    // Other 13.0 headers: the same with one byte more in cuda.h, so that the
    // committed bindings cannot stand in and bindgen runs.
    let changed = bench.join("headers-changed");
    let _ = std::fs::remove_dir_all(&changed);
    crate::cmd::run_cmd(Command::new("cp").arg("-r").arg(&include).arg(&changed))?;
    let mut cuda_h = std::fs::read(changed.join("cuda.h")).map_err(|e| e.to_string())?;
    cuda_h.push(b'\n');
    write_file(&changed.join("cuda.h"), &cuda_h)?;
    let other_headers = [(generator::locate::INCLUDE_DIR_VAR, changed.as_path())];
    let include_12_4 = headers::fetch(workspace, "12.4")?;
    let include_13_5 = headers::fetch(workspace, "13.5")?;
    let headers_12_4 = [(generator::locate::INCLUDE_DIR_VAR, include_12_4.as_path())];
    let headers_13_5 = [(generator::locate::INCLUDE_DIR_VAR, include_13_5.as_path())];
    let cases = [
        (
            "cuda-mem-sys, (a) the committed bindings' own CUDA 13.0 headers found (no bindgen run)",
            measure(&ours, &bench.join("t-a"), &headers, "cuda-mem-sys", runs)?,
        ),
        (
            "cuda-mem-sys, (a') other CUDA 13.0 headers found (bindgen runs)",
            measure(&ours, &bench.join("t-a2"), &other_headers, "cuda-mem-sys", runs)?,
        ),
        (
            "cuda-mem-sys, (b) no CUDA (committed bindings)",
            measure(&ours, &bench.join("t-b"), &[], "cuda-mem-sys", runs)?,
        ),
        (
            "cuda-mem-sys, (c) `default-features = false`, CUDA 13.0 headers found",
            measure(&ours_min, &bench.join("t-c"), &headers, "cuda-mem-sys", runs)?,
        ),
        (
            "cudarc 0.19 (`driver`, `runtime`, `cuda-13000`, dynamic loading)",
            measure(&cudarc, &bench.join("t-cudarc"), &[], "cudarc", runs)?,
        ),
        (
            "floor of (a), (b): bindgen 0.73 alone, linked by a build script that does nothing else",
            measure(&bindgen_linked, &bench.join("t-bindgen-linked"), &[], "bindgen-linked-user", runs)?,
        ),
        (
            "floor of (a'): bindgen 0.73 alone, run by a build script over (a')'s headers with this crate's configuration",
            measure(&bindgen_run, &bench.join("t-bindgen-run"), &other_headers, "bindgen-run-user", runs)?,
        ),
        (
            "cuda-mem-sys, (d) `default-features = false`, CUDA 12.4 headers found (12.4's committed bindings: five deltas applied)",
            measure(&ours_min, &bench.join("t-d"), &headers_12_4, "cuda-mem-sys", runs)?,
        ),
        (
            "cuda-mem-sys, (e) `default-features = false`, CUDA 13.5 headers found (13.5's committed bindings: five deltas applied)",
            measure(&ours_min, &bench.join("t-e"), &headers_13_5, "cuda-mem-sys", runs)?,
        ),
    ];
    let minutes = started.elapsed().map_or(0.0, |d| d.as_secs_f64() / 60.0);
    let load_after = loadavg();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cudarc_wall = cases[4].1.clean_wall;
    let mut rows = String::new();
    for (name, f) in &cases {
        rows.push_str(&format!(
            "| {name} | {:.1} s | {:.2}× | {:.1} s | {} | {:.2} s | {} |\n",
            f.clean_wall,
            f.clean_wall / cudarc_wall,
            f.clean_cpu,
            f.script.map_or("-".into(), |s| format!("{s:.1} s")),
            f.noop_wall,
            if f.noop_fresh { "none" } else { "**some**" },
        ));
    }
    let report = format!(
        "# Build times\n\n\
         Measured by `cargo xtask bench-build` in one run ({minutes:.0} minutes) on this \
         project's development machine ({cores} cores, shared: load average {load_before} \
         before, {load_after} after), debug profile. What is built is a one-line library \
         depending on the crate, as a user compiles it (not this workspace), the crate compiled as \
         cargo compiles a crates.io dependency (not incrementally: `CARGO_INCREMENTAL=0`, which \
         the path dependency here needs); each figure is the median of {runs} runs. Clean = an empty target folder (dependencies included, sources \
         already downloaded); no-op = `cargo build` again with nothing changed. CPU = user + \
         system seconds of the build, all processes. Build script = the run of the crate's \
         build script in the clean build (`cargo build --timings`).\n\n\
         | build | clean (wall) | × cudarc | clean (CPU) | build script | no-op rebuild | build scripts rerun by the no-op |\n\
         |---|---|---|---|---|---|---|\n{rows}\n\
         (a) compiles bindgen and syn but, the headers being byte for byte those of the \
         committed bindings (`src/generated/cuda-13.0.inputs`), takes those and runs no bindgen; \
         (a') compiles them and runs bindgen (and the C preprocessor) over headers that differ \
         by one byte; (b) compiles them but uses the committed bindings; (c) compiles neither, needs no \
         libclang, and asks the C compiler only for the headers' `CUDA_VERSION`; (d) and (e) \
         are (c) on other releases, each taking its committed bindings (CUDA 13.0's whole text \
         with the deltas towards it applied, `build/committed.rs`); cudarc ships \
         pregenerated bindings. The two floors are what the default `bindgen` feature costs by \
         itself, bindgen asked for as this crate asks for it: compiled and linked by a build \
         script that does nothing else (what (a) and (b) cannot go below), and also run by it \
         over (a')'s headers with this crate's configuration (`build/codegen/bindgen_config.rs`), \
         its text written and nothing more (what (a') and its build script cannot go below). \
         The difference is this crate's own share: its build script compiled and run (the \
         post-processing, the loader, the link step), the bindings compiled, `cc` and \
         `pkg-config`. On a machine this loaded, wall times vary by tens of percent \
         between runs; the CPU column moves less.\n"
    );
    let report = format!(
        "{report}\n## The build script's steps\n\n\
         What the crate's build script said of each of its steps in the clean builds of (a) and \
         (a') (`CUDA_MEM_SYS_BUILD_TIMINGS`, `build/timings.rs`; median of the runs): CPU = user \
         + system seconds of the script and of the C compiler runs it waited for, wall = its \
         own clock, beside bindgen's own run (the floor of (a')'s build script, as the table \
         above measures build scripts).\n\n{}\n## The budget\n\n{}",
        steps_table(&cases[0].1, &cases[1].1, &cases[6].1),
        budget(&cases[0].1, &cases[1].1, &cases[5].1, &cases[6].1),
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let report = [
        over_budget(&cases[0].1, &cases[5].1),
        cpu_bound(&cases[0].1, &cases[5].1, cores),
    ]
    .into_iter()
    .flatten()
    .fold(report, |report, why| report + &why);
    write_file(&workspace.join("docs/build-times.md"), &report)?;
    println!("{report}");
    Ok(())
}
