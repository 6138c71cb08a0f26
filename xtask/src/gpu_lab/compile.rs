//! `cargo xtask device-compile`: the device tests and the examples compiled
//! against the headers of a release, in the linked and the dynamic-loading
//! builds (`cargo test --no-run` of the device tests, `cargo build
//! --examples`). What CI does for `releases::device_compiled` and the unseen-release
//! fixture; `--all` does every release 12.0 to 13.5 and the fixture.
//!
//! The release-dependent forms live in the programs themselves (the build's
//! `cuda_NNNNN` cfgs); this only builds them.

use crate::{headers, releases};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The fixture's name on the command line: headers claiming a release this
/// crate does not know (`releases::unseen_version`).
pub const UNSEEN: &str = "unseen";

/// The builds: (name, cargo features).
pub const BUILDS: [(&str, &str); 2] = [("linked", ""), ("loaded", "dynamic-loading")];

/// What to compile.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Parts {
    /// The device tests and the examples.
    All,
    /// The examples alone (`--examples-only`).
    Examples,
    /// The device tests alone (`--tests-only`).
    Tests,
}

pub fn run(workspace: &Path, args: &[&str]) -> Result<(), String> {
    let (parts, releases) = parse(args)?;
    crate::cmd::ensure_libclang()?;
    compile(workspace, &releases, parts)
}

/// The command line: `[--examples-only|--tests-only] (--all | --ci | <release>|unseen ...)`.
pub fn parse(args: &[&str]) -> Result<(Parts, Vec<String>), String> {
    let mut parts = Parts::All;
    let mut releases = vec![];
    for a in args {
        match *a {
            "--examples-only" => parts = Parts::Examples,
            "--tests-only" => parts = Parts::Tests,
            "--all" => releases.extend(
                releases::ALL
                    .iter()
                    .map(|r| r.to_string())
                    .chain([UNSEEN.to_string()]),
            ),
            "--ci" => releases.extend(
                releases::device_compiled()
                    .iter()
                    .map(|r| r.to_string())
                    .chain([UNSEEN.to_string()]),
            ),
            r if r == UNSEEN || releases::ALL.contains(&r) => releases.push(r.to_string()),
            other => {
                return Err(format!(
                    "device-compile: {other:?} is no release (known: {} {UNSEEN}), --all, --ci, \
                     --examples-only or --tests-only",
                    releases::ALL.join(" ")
                ))
            }
        }
    }
    if releases.is_empty() {
        return Err("device-compile: name the releases, --all or --ci".into());
    }
    Ok((parts, releases))
}

/// The include directory of a release, or of the unseen-release fixture.
pub fn include_for(workspace: &Path, release: &str) -> Result<PathBuf, String> {
    if release == UNSEEN {
        unseen_fixture(workspace)
    } else {
        headers::fetch(workspace, release)
    }
}

/// The unseen-release fixture: the newest release's headers (13.5) with
/// `CUDA_VERSION` and `CUDART_VERSION` set to `releases::unseen_version`,
/// in `target/unseen-<version>/nvidia/cu13/include`, its `lib/` the newest
/// release's (the static runtime the linked build takes). Remade when missing.
pub fn unseen_fixture(workspace: &Path) -> Result<PathBuf, String> {
    let base = headers::fetch(workspace, releases::newest())?;
    let version = releases::unseen_version();
    let root = workspace
        .join("target")
        .join(format!("unseen-{version}/nvidia/cu13"));
    let include = root.join("include");
    if include.join("cuda.h").is_file() {
        return Ok(include);
    }
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    crate::cmd::run_cmd(Command::new("cp").arg("-r").arg(&base).arg(&include))?;
    let lib = root.join("lib");
    std::os::unix::fs::symlink(base.parent().unwrap().join("lib"), &lib)
        .map_err(|e| format!("{}: {e}", lib.display()))?;
    for (file, name) in [
        ("cuda.h", "CUDA_VERSION"),
        ("cuda_runtime_api.h", "CUDART_VERSION"),
    ] {
        let path = include.join(file);
        let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
        let new = set_version(&text, name, version)
            .ok_or_else(|| format!("{}: no `#define {name}`", path.display()))?;
        std::fs::write(&path, new).map_err(|e| e.to_string())?;
    }
    Ok(include)
}

/// `text` with the value of `#define <name> <number>` replaced by `version`.
pub fn set_version(text: &str, name: &str, version: u32) -> Option<String> {
    let mut found = false;
    let out: Vec<String> = text
        .lines()
        .map(|l| {
            let mut words = l.split_whitespace();
            if words.next() == Some("#define")
                && words.next() == Some(name)
                && words.next().is_some_and(|v| v.parse::<u32>().is_ok())
                && words.next().is_none()
            {
                found = true;
                format!("#define {name} {version}")
            } else {
                l.to_string()
            }
        })
        .collect();
    found.then(|| out.join("\n") + "\n")
}

/// One `cargo` command of the compile: tests or examples, one release and build.
fn command(workspace: &Path, include: &Path, features: &str, parts: Parts) -> Command {
    let mut cmd = crate::cmd::cargo(workspace);
    match parts {
        Parts::Tests => {
            cmd.args(["test", "--no-run"]);
            for t in super::suite::DEVICE_TESTS {
                cmd.args(["--test", t.name]);
            }
            // abi_symbols is abi-proofs' (the ABI proofs' own package).
            cmd.args(["--package", "abi-proofs"]);
        }
        _ => {
            cmd.args(["build", "--examples"]);
        }
    }
    cmd.args(["--package", "cuda-mem-sys", "--features", features])
        .env(generator::locate::INCLUDE_DIR_VAR, include)
        // One folder for every release: the dependencies build once, the
        // crate once per (release, build).
        .env(
            "CARGO_TARGET_DIR",
            super::build::device_target_dir(workspace),
        )
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        // As `gpu-bundle --matrix` builds (the same folder, one build for both).
        .env("CARGO_PROFILE_DEV_STRIP", "debuginfo");
    cmd
}

/// Compiles `parts` for every release in both builds; every case runs, then
/// a table of the outcomes; an error if any failed.
pub fn compile(workspace: &Path, releases: &[String], parts: Parts) -> Result<(), String> {
    let started = Instant::now();
    let mut rows = vec![];
    let mut failed = vec![];
    for release in releases {
        let include = include_for(workspace, release)?;
        for (build, features) in BUILDS {
            for part in match parts {
                Parts::All => vec![Parts::Tests, Parts::Examples],
                p => vec![p],
            } {
                let what = if part == Parts::Tests {
                    "device tests"
                } else {
                    "examples"
                };
                println!("\n---- CUDA {release}, {build}: {what}");
                let t = Instant::now();
                let ok = command(workspace, &include, features, part)
                    .status()
                    .map_err(|e| e.to_string())?
                    .success();
                let secs = t.elapsed().as_secs_f64();
                rows.push(format!(
                    "| {release} | {build} | {what} | {} | {secs:.0} s |",
                    if ok { "compiles" } else { "FAILED" }
                ));
                if !ok {
                    failed.push(format!("CUDA {release} {build} {what}"));
                }
            }
        }
    }
    println!("\n| release | build | what | result | time |\n|---|---|---|---|---|");
    for r in &rows {
        println!("{r}");
    }
    println!("({:.0} s in all)", started.elapsed().as_secs_f64());
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("did not compile: {}", failed.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_version_replaces_exactly_the_define() {
        let h = "/* CUDA_VERSION 13050 */\n#define CUDA_VERSION 13050\n#define CUDA_VERSION_X 1\n";
        let out = set_version(h, "CUDA_VERSION", 13070).unwrap();
        assert_eq!(
            out,
            "/* CUDA_VERSION 13050 */\n#define CUDA_VERSION 13070\n#define CUDA_VERSION_X 1\n"
        );
        // A header without the define is refused, not silently left as is.
        assert_eq!(
            set_version("#define CUDART_VERSION 1\n", "CUDA_VERSION", 1),
            None
        );
    }

    #[test]
    fn the_command_line_names_releases_or_is_refused() {
        let (parts, r) = parse(&["--examples-only", "12.0", "unseen"]).unwrap();
        assert_eq!(parts, Parts::Examples);
        assert_eq!(r, ["12.0", "unseen"]);
        assert_eq!(
            parse(&["--ci"]).unwrap().1.len(),
            releases::device_compiled().len() + 1
        );
        assert_eq!(parse(&["--all"]).unwrap().1.len(), releases::ALL.len() + 1);
        assert!(parse(&["12.7"]).is_err());
        assert!(parse(&["--examples-only"]).is_err());
    }
}
