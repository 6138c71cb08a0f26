//! `cargo xtask bench-build`: clean-build and no-op-rebuild wall times of this
//! crate (headers found, and fallback) beside cudarc 0.19 (features `driver`,
//! `runtime`, `cuda-13000`), measured in one run on this machine; writes
//! `docs/build-times.md`.

use crate::headers;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const RUNS: usize = 3;

fn timed(cmd: &mut Command) -> Result<f64, String> {
    let start = Instant::now();
    let out = cmd.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(start.elapsed().as_secs_f64())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// (clean, no-op) median wall seconds of `cargo build` of `manifest`.
fn measure(manifest: &Path, target: &Path, env: &[(&str, &Path)]) -> Result<(f64, f64), String> {
    let (mut clean, mut noop) = (vec![], vec![]);
    for _ in 0..RUNS {
        let _ = std::fs::remove_dir_all(target);
        let build = || {
            let mut c = Command::new(env!("CARGO"));
            c.args(["build", "--quiet", "--manifest-path"])
                .arg(manifest)
                .env("CARGO_TARGET_DIR", target);
            for var in crate::locate::ROOT_VARS {
                c.env_remove(var);
            }
            for (k, v) in env {
                c.env(k, v);
            }
            c
        };
        clean.push(timed(&mut build())?);
        noop.push(timed(&mut build())?);
    }
    Ok((median(clean), median(noop)))
}

pub fn run(workspace: &Path) -> Result<(), String> {
    crate::ci::ensure_libclang()?;
    let include = headers::fetch(workspace, "13.0")?;
    let bench = workspace.join("target/bench");
    let cudarc = bench.join("cudarc-user");
    std::fs::create_dir_all(cudarc.join("src")).map_err(|e| e.to_string())?;
    std::fs::write(
        cudarc.join("Cargo.toml"),
        "[package]\nname = \"cudarc-user\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[dependencies]\n\
         cudarc = { version = \"0.19\", default-features = false, features = [\"driver\", \"runtime\", \"cuda-13000\", \"dynamic-loading\", \"std\"] }\n\n[workspace]\n",
    )
    .map_err(|e| e.to_string())?;
    std::fs::write(cudarc.join("src/lib.rs"), "pub use cudarc;\n").map_err(|e| e.to_string())?;
    // Fetch first, so the timings hold no downloads.
    crate::run_cmd(
        Command::new(env!("CARGO"))
            .arg("fetch")
            .arg("--manifest-path")
            .arg(cudarc.join("Cargo.toml")),
    )?;
    let ours = workspace.join("Cargo.toml");
    let with_headers = measure(
        &ours,
        &bench.join("t-headers"),
        &[("CUDA_MEM_SYS_INCLUDE_DIR", &include)],
    )?;
    let fallback = measure(&ours, &bench.join("t-fallback"), &[])?;
    let theirs = measure(&cudarc.join("Cargo.toml"), &bench.join("t-cudarc"), &[])?;
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let report = format!(
        "# Build times\n\n\
         Measured by `cargo xtask bench-build` in one run, on this project's development machine \
         ({cores} cores), debug profile, each figure the median of {RUNS} runs; clean = empty target \
         folder (dependencies included, sources already downloaded), no-op = `cargo build` again \
         with nothing changed.\n\n\
         | build | clean | no-op rebuild |\n|---|---|---|\n\
         | cuda-mem-sys, bindgen over the CUDA 13.0 headers | {:.1} s | {:.2} s |\n\
         | cuda-mem-sys, no CUDA (committed fallback) | {:.1} s | {:.2} s |\n\
         | cudarc 0.19 (`driver`, `runtime`, `cuda-13000`, dynamic loading) | {:.1} s | {:.2} s |\n\n\
         cuda-mem-sys compiles bindgen and runs it (and the C preprocessor) at build time; cudarc \
         ships pregenerated bindings. The no-op rebuild reruns no build script \
         (`rerun-if-changed` names only `wrapper.h` and the headers read).\n",
        with_headers.0, with_headers.1, fallback.0, fallback.1, theirs.0, theirs.1
    );
    std::fs::write(workspace.join("docs/build-times.md"), &report).map_err(|e| e.to_string())?;
    println!("{report}");
    Ok(())
}
