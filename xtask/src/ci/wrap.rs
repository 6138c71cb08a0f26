//! `cargo xtask wrap-check`: the wrapper crate (`wrap/`, cuda-mem-wrap) as
//! the crate's dependents see it. Three parts:
//!
//! 1. **The matrix**: its library and tests checked against CUDA 12.0, 12.9,
//!    13.0, 13.5 and the unseen-release fixture (headers claiming 13.7),
//!    linked and loaded (`dynamic-loading`), with cuda-mem-sys's default
//!    features and with none (`--no-default-features`: the wrapper depends
//!    on it with `default-features = false` and forwards `bindgen`). Every
//!    known release builds without `bindgen` from its committed bindings;
//!    where no committed bindings are of the headers' release (the unseen
//!    fixture, no `bindgen`, linked) the build must stop with cuda-mem-sys's
//!    named error, which is asserted, not skipped.
//! 2. **The recipe**: the wrapper's build script, run alone, derives the
//!    cfgs of a release (12.9: `cuda_12020` and not `cuda_13020`) and stops
//!    with a named error when `DEP_CUDA_MEM_SYS_VERSION_NUMBER` is missing or
//!    no number.
//! 3. **The package**: `cargo package -p cuda-mem-sys`, the `.crate`
//!    unpacked, and the wrapper built in a scratch workspace with a path
//!    dependency onto the unpacked folder, as a crates.io user builds it (no
//!    tests/, no xtask/ there): no CUDA, then the 13.0 headers. Its wrong
//!    twin: the same package without `src/generated/cuda-13.0.symbols` must
//!    fail to build, naming that file. Then a new program on the package
//!    with `default-features = false` and libclang made unusable, on each
//!    release of `releases::without_libclang`, linked and loaded: its
//!    `CUDA_VERSION` must be the headers' and `BUILD` must say committed
//!    (the wrong twin: the pinned release's version asserted on other
//!    headers fails to compile). The `.crate`'s size is read: at most
//!    [`MAX_PACKAGE`].
//!
//! Everything shares one target folder, `target/wrap-check` (the
//! dependencies build once; cuda-mem-sys once per case). The GPU lab builds
//! the wrapper's device tests (`crate::gpu_lab::build::wrapper`).

use crate::cmd::{cargo, run_cmd, step};
use crate::gpu_lab::compile::{include_for, UNSEEN};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

/// The release of the committed bindings a build without CUDA takes.
const PINNED: &str = generator::release::PINNED_RELEASE;

/// The part of cuda-mem-sys's named error for headers of a release with no
/// committed bindings, linked, without `bindgen` (build/bindings.rs,
/// `without_generator`).
const REFUSAL: &str = "and this build has no `bindgen` feature";

/// The packaged `.crate`'s size limit, compressed (issue goal: 3 MiB; the
/// registry refuses 10,485,760 bytes).
pub const MAX_PACKAGE: u64 = 3 * 1024 * 1024;

/// The file the wrong twin's package lacks, and what its error must name.
const MISSING: &str = "src/generated/cuda-13.0.symbols";

pub fn target_dir(workspace: &Path) -> PathBuf {
    workspace.join("target/wrap-check")
}

/// One case of the matrix.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Case<'a> {
    pub release: &'a str,
    pub loaded: bool,
    pub default_features: bool,
}

impl Case<'_> {
    /// Whether cuda-mem-sys must refuse the build: no `bindgen`, linked,
    /// headers of a release it has no committed bindings of.
    pub fn refused(&self) -> bool {
        !self.default_features && !self.loaded && self.release == UNSEEN
    }

    /// `linked` or `loaded`.
    fn build(&self) -> &'static str {
        ["linked", "loaded"][usize::from(self.loaded)]
    }

    fn describe(&self) -> String {
        format!(
            "CUDA {}, {}, {}",
            self.release,
            self.build(),
            ["default-features = false", "default features"][usize::from(self.default_features)]
        )
    }
}

/// Every case, in the order they run.
pub fn cases() -> Vec<Case<'static>> {
    let mut cases = vec![];
    // The range's ends, the pinned release, then the unseen-release fixture.
    let releases = crate::releases::ends_and_pinned()
        .into_iter()
        .chain([UNSEEN]);
    for release in releases {
        for loaded in [false, true] {
            for default_features in [true, false] {
                cases.push(Case {
                    release,
                    loaded,
                    default_features,
                });
            }
        }
    }
    cases
}

pub fn run(workspace: &Path) -> Result<(), String> {
    crate::cmd::ensure_libclang()?;
    let started = Instant::now();
    step("the wrapper crate (wrap/) against 12.0 12.9 13.0 13.5 and an unseen release: linked and loaded, default features and none");
    matrix(workspace)?;
    step("the wrapper's build script: the cfgs of a release, a named error without the key");
    build_script(workspace)?;
    step("the wrapper built from the packaged crate (the unpacked .crate), without CUDA and with the 13.0 headers");
    packaged(workspace)?;
    println!("(wrap-check: {:.0} s)", started.elapsed().as_secs_f64());
    crate::cmd::discard(&target_dir(workspace));
    Ok(())
}

/// Output of a command, both streams, and whether it succeeded.
fn output(cmd: &mut Command) -> Result<(bool, String), String> {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    let text = String::from_utf8_lossy(&stdout) + String::from_utf8_lossy(&stderr);
    Ok((status.success(), text.into_owned()))
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Whether a case's outcome is the expected one: built, or refused with
/// cuda-mem-sys's named error (and nothing else).
pub fn verdict(case: &Case, ok: bool, log: &str) -> Result<&'static str, String> {
    match (case.refused(), ok) {
        (false, true) => Ok("builds"),
        (true, false) if log.contains(REFUSAL) && log.contains("cuda-mem-sys: ") => {
            Ok("refused by name, as designed")
        }
        (true, true) => Err(format!(
            "{}: built, but the committed bindings linked against another release must be \
             refused",
            case.describe()
        )),
        (true, false) => Err(format!(
            "{}: failed without cuda-mem-sys's named refusal ({REFUSAL:?}):\n{}",
            case.describe(),
            tail(log, 40)
        )),
        (false, false) => Err(format!("{}: failed:\n{}", case.describe(), tail(log, 40))),
    }
}

fn matrix(workspace: &Path) -> Result<(), String> {
    let mut rows = vec![];
    let mut failed = vec![];
    for case in cases() {
        let include = include_for(workspace, case.release)?;
        let mut cmd = cargo(workspace);
        cmd.args(["check", "-p", "cuda-mem-wrap", "--lib", "--tests"]);
        if !case.default_features {
            cmd.arg("--no-default-features");
        }
        if case.loaded {
            cmd.args(["--features", "dynamic-loading"]);
        }
        cmd.env("CUDA_MEM_SYS_INCLUDE_DIR", &include)
            .env("CARGO_TARGET_DIR", target_dir(workspace));
        let t = Instant::now();
        let (ok, log) = output(&mut cmd)?;
        let secs = t.elapsed().as_secs_f64();
        let result = verdict(&case, ok, &log);
        println!(
            "{}: {} ({secs:.0} s)",
            case.describe(),
            result.as_ref().map_or("FAILED", |v| v)
        );
        rows.push(format!(
            "| {} | {} | {} | {} | {secs:.0} s |",
            case.release,
            case.build(),
            ["none", "default"][usize::from(case.default_features)],
            result.as_ref().map_or("FAILED", |v| v)
        ));
        if let Err(e) = result {
            failed.push(e);
        }
    }
    println!(
        "\n| release | build | cuda-mem-sys features | result | time |\n|---|---|---|---|---|"
    );
    for r in &rows {
        println!("{r}");
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("\n\n"))
    }
}

/// The wrapper's compiled build script (the newest, of those the matrix built).
fn build_script_binary(workspace: &Path) -> Result<PathBuf, String> {
    let dir = target_dir(workspace).join("debug/build");
    std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("cuda-mem-wrap-")
        })
        .map(|e| e.path().join("build-script-build"))
        .filter(|p| p.is_file())
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .ok_or_else(|| format!("no build script of cuda-mem-wrap under {}", dir.display()))
}

/// The wrapper's build script run with `DEP_CUDA_MEM_SYS_VERSION_NUMBER`
/// set to `value` (unset: `None`): (succeeded, the cfgs it set, its output).
fn run_build_script(
    script: &Path,
    value: Option<&str>,
) -> Result<(bool, Vec<String>, String), String> {
    let mut cmd = Command::new(script);
    cmd.env_remove("DEP_CUDA_MEM_SYS_VERSION_NUMBER");
    if let Some(v) = value {
        cmd.env("DEP_CUDA_MEM_SYS_VERSION_NUMBER", v);
    }
    let (ok, log) = output(&mut cmd)?;
    let cfgs = log
        .lines()
        .filter_map(|l| l.strip_prefix("cargo::rustc-cfg="))
        .map(str::to_string)
        .collect();
    Ok((ok, cfgs, log))
}

fn build_script(workspace: &Path) -> Result<(), String> {
    let script = build_script_binary(workspace)?;
    // The cfgs of a release: each "at least" cfg up to it, none above.
    for (value, want) in [
        ("12000", &[][..]),
        ("12090", &["cuda_12020"][..]),
        ("13020", &["cuda_12020", "cuda_13020"][..]),
        ("13070", &["cuda_12020", "cuda_13020", "cuda_13030"][..]),
    ] {
        let (ok, cfgs, log) = run_build_script(&script, Some(value))?;
        if !ok || cfgs != want {
            return Err(format!(
                "the wrapper's build script with {value}: cfgs {cfgs:?}, expected {want:?}:\n{log}"
            ));
        }
        println!(
            "{value}: {}",
            if want.is_empty() {
                "no cfg".into()
            } else {
                want.join(" ")
            }
        );
    }
    // The wrong cases: the key missing, or not a number.
    for (value, says) in [
        (None, "DEP_CUDA_MEM_SYS_VERSION_NUMBER is not set"),
        (
            Some("12.9"),
            "DEP_CUDA_MEM_SYS_VERSION_NUMBER is \"12.9\", not a CUDA_VERSION number",
        ),
    ] {
        let (ok, _, log) = run_build_script(&script, value)?;
        if ok || !log.contains(says) || log.contains("panicked") {
            return Err(format!(
                "the wrapper's build script with the key {value:?} did not stop with {says:?}:\n{log}"
            ));
        }
        let line = log.lines().find(|l| l.starts_with("cuda-mem-wrap: "));
        println!("{value:?}: refused: {}", line.unwrap_or_default());
    }
    Ok(())
}

/// The wrapper's manifest with its cuda-mem-sys dependency pointed at
/// `crate_dir`, as the root of a workspace of its own.
pub fn scratch_manifest(manifest: &str, crate_dir: &Path) -> Result<String, String> {
    let from = "cuda-mem-sys = { path = \"..\",";
    if manifest.matches(from).count() != 1 {
        return Err(format!("wrap/Cargo.toml has no one line starting {from:?}"));
    }
    let to = format!(
        "cuda-mem-sys = {{ path = {:?},",
        crate_dir.display().to_string()
    );
    Ok(manifest.replace(from, &to) + "\n[workspace]\n")
}

/// A scratch workspace `dir` holding a copy of the wrapper whose cuda-mem-sys
/// is `crate_dir`, with the workspace's lock file (the same dependency versions).
fn scratch(workspace: &Path, dir: &Path, crate_dir: &Path) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let wrap = workspace.join("wrap");
    for part in ["build.rs", "src", "tests"] {
        run_cmd(Command::new("cp").arg("-r").arg(wrap.join(part)).arg(dir))?;
    }
    let manifest = std::fs::read_to_string(wrap.join("Cargo.toml")).map_err(|e| e.to_string())?;
    std::fs::write(
        dir.join("Cargo.toml"),
        scratch_manifest(&manifest, crate_dir)?,
    )
    .map_err(|e| e.to_string())?;
    std::fs::copy(workspace.join("Cargo.lock"), dir.join("Cargo.lock"))
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// `cargo test --lib --tests` of the scratch wrapper in `dir` (its tests run:
/// they report ignored without a GPU), with `include` as the CUDA headers.
fn build_scratch(
    workspace: &Path,
    dir: &Path,
    include: Option<&Path>,
) -> Result<(bool, String), String> {
    let mut cmd = cargo(dir);
    cmd.args(["test", "--lib", "--tests"])
        .env("CARGO_TARGET_DIR", target_dir(workspace));
    if let Some(include) = include {
        cmd.env("CUDA_MEM_SYS_INCLUDE_DIR", include);
    }
    output(&mut cmd)
}

fn packaged(workspace: &Path) -> Result<(), String> {
    let target = target_dir(workspace);
    run_cmd(
        cargo(workspace)
            .args([
                "package",
                "-p",
                "cuda-mem-sys",
                "--allow-dirty",
                "--no-verify",
                "--quiet",
            ])
            .env("CARGO_TARGET_DIR", &target),
    )?;
    let package = target.join("package");
    let dot_crate = std::fs::read_dir(&package)
        .map_err(|e| format!("{}: {e}", package.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("cuda-mem-sys-") && name.ends_with(".crate")
        })
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .ok_or("cargo package left no cuda-mem-sys-*.crate")?;
    let root = target.join("packaged");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    run_cmd(
        Command::new("tar")
            .arg("xzf")
            .arg(&dot_crate)
            .arg("-C")
            .arg(&root),
    )?;
    let stem = dot_crate
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let unpacked = root.join(&stem);
    for absent in ["tests", "xtask", "abi-proofs", "wrap"] {
        if unpacked.join(absent).exists() {
            return Err(format!(
                "the package {stem} holds {absent}/, which is not published"
            ));
        }
    }
    println!(
        "{} unpacked into {}",
        dot_crate.display(),
        unpacked.display()
    );

    let user = root.join("user");
    scratch(workspace, &user, &unpacked)?;
    let pinned = include_for(workspace, PINNED)?;
    for (what, include) in [
        ("no CUDA", None),
        ("the 13.0 headers", Some(pinned.as_path())),
    ] {
        let t = Instant::now();
        let (ok, log) = build_scratch(workspace, &user, include)?;
        let ignored = log.lines().filter(|l| l.contains("... ignored")).count();
        if !ok || ignored == 0 {
            return Err(format!(
                "the wrapper against the packaged crate, {what}: {}:\n{}",
                if ok {
                    "no test reported ignored"
                } else {
                    "failed"
                },
                tail(&log, 40)
            ));
        }
        println!(
            "{what}: the wrapper's lib and tests build against {stem}, {ignored} device tests \
             report ignored ({:.0} s)",
            t.elapsed().as_secs_f64()
        );
    }

    // The wrong twin: a package that lacks a file the build needs.
    let broken = root.join(format!("{stem}-without-symbols"));
    run_cmd(Command::new("cp").arg("-r").arg(&unpacked).arg(&broken))?;
    std::fs::remove_file(broken.join(MISSING)).map_err(|e| format!("{MISSING}: {e}"))?;
    let user = root.join("user-without-symbols");
    scratch(workspace, &user, &broken)?;
    let (ok, log) = build_scratch(workspace, &user, None)?;
    let file = Path::new(MISSING).file_name().unwrap().to_string_lossy();
    // cuda-mem-sys's own error line names the file (its rerun-if-changed
    // lines name it too, whatever happens).
    let named = log
        .lines()
        .any(|l| l.contains("cuda-mem-sys: ") && l.contains(file.as_ref()));
    if ok || !named {
        return Err(format!(
            "the wrapper against a package without {MISSING} {}:\n{}",
            if ok {
                "built"
            } else {
                "failed without naming it"
            },
            tail(&log, 40)
        ));
    }
    println!("wrong twin: a package without {MISSING} fails to build, naming it");

    let size = std::fs::metadata(&dot_crate)
        .map_err(|e| e.to_string())?
        .len();
    if size > MAX_PACKAGE {
        return Err(format!(
            "{} is {size} bytes compressed, over the {MAX_PACKAGE} the package may take",
            dot_crate.display()
        ));
    }
    println!(
        "{stem}.crate: {size} bytes compressed ({:.2} MiB; at most {:.0} MiB)",
        size as f64 / 1048576.0,
        MAX_PACKAGE as f64 / 1048576.0
    );
    without_libclang(workspace, &root, &unpacked)
}

/// `main.rs` of the program a crates.io user writes: its `CUDA_VERSION`
/// and `BUILD` asserted at compile time (`EXPECT_CUDA_VERSION`), printed
/// when run.
const USER_MAIN: &str = r#"const WANT: &str = env!("EXPECT_CUDA_VERSION");
const fn parse(s: &str) -> u32 {
    let (b, mut i, mut n) = (s.as_bytes(), 0, 0);
    while i < b.len() {
        n = n * 10 + (b[i] - b'0') as u32;
        i += 1;
    }
    n
}
const _: () = assert!(cuda_mem_sys::CUDA_VERSION == parse(WANT), "CUDA_VERSION is not the headers'");
const _: () = assert!(
    matches!(
        cuda_mem_sys::BUILD.bindings,
        cuda_mem_sys::Bindings::Committed | cuda_mem_sys::Bindings::CommittedSameHeaders
    ),
    "BUILD does not say committed"
);
fn main() {
    println!("CUDA_VERSION {} {:?}", cuda_mem_sys::CUDA_VERSION, cuda_mem_sys::BUILD.bindings);
}
"#;

/// A new program on the unpacked package with `default-features = false`,
/// libclang unusable (`LIBCLANG_PATH` an empty folder), on each release of
/// [`crate::releases::without_libclang`]: linked (built: the assertions are
/// compile-time) and loaded (built and run). Its wrong twin: the pinned
/// release's version expected on 12.4's headers does not compile.
fn without_libclang(workspace: &Path, root: &Path, unpacked: &Path) -> Result<(), String> {
    let user = root.join("user-no-libclang");
    let _ = std::fs::remove_dir_all(&user);
    std::fs::create_dir_all(user.join("src")).map_err(|e| e.to_string())?;
    crate::cmd::write_file(
        &user.join("Cargo.toml"),
        format!(
            "[package]\nname = \"user\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n\
             [dependencies]\ncuda-mem-sys = {{ path = {:?}, default-features = false }}\n\n\
             [features]\nloaded = [\"cuda-mem-sys/dynamic-loading\"]\n\n[workspace]\n",
            unpacked.display().to_string()
        ),
    )?;
    crate::cmd::write_file(&user.join("src/main.rs"), USER_MAIN)?;
    std::fs::copy(workspace.join("Cargo.lock"), user.join("Cargo.lock"))
        .map_err(|e| e.to_string())?;
    let no_libclang = root.join("no-libclang");
    std::fs::create_dir_all(&no_libclang).map_err(|e| e.to_string())?;
    let build = |release: &str, want: u32, loaded: bool| -> Result<(bool, String), String> {
        let include = include_for(workspace, release)?;
        let mut cmd = cargo(&user);
        cmd.args([if loaded { "run" } else { "build" }, "--quiet"]);
        if loaded {
            cmd.args(["--features", "loaded"]);
        }
        cmd.env("CUDA_MEM_SYS_INCLUDE_DIR", &include)
            .env("LIBCLANG_PATH", &no_libclang)
            .env("EXPECT_CUDA_VERSION", want.to_string())
            .env(
                "CARGO_TARGET_DIR",
                target_dir(workspace).join("no-libclang"),
            );
        output(&mut cmd)
    };
    for release in crate::releases::without_libclang() {
        let want = generator::release::cuda_version(release).unwrap_or_default();
        for loaded in [false, true] {
            let t = Instant::now();
            let (ok, log) = build(release, want, loaded)?;
            let said = format!("CUDA_VERSION {want} Committed");
            if !ok || (loaded && !log.contains(&said)) {
                return Err(format!(
                    "a program on the packaged crate, default-features = false, no libclang, \
                     CUDA {release} headers, {}: {}:\n{}",
                    ["linked", "loaded"][usize::from(loaded)],
                    if ok {
                        "it did not print the headers' version as committed"
                    } else {
                        "failed"
                    },
                    tail(&log, 30)
                ));
            }
            println!(
                "CUDA {release}, {}: CUDA_VERSION {want}, committed bindings, no libclang ({:.0} s)",
                ["linked", "loaded"][usize::from(loaded)],
                t.elapsed().as_secs_f64()
            );
        }
    }
    // The wrong twin: the pinned release's version asserted on 12.4's headers.
    let pinned = generator::release::cuda_version(PINNED).unwrap_or_default();
    let (ok, log) = build("12.4", pinned, false)?;
    if ok || !log.contains("CUDA_VERSION is not the headers'") {
        return Err(format!(
            "wrong twin: {pinned} asserted on 12.4's headers {}:\n{}",
            if ok { "compiled" } else { "failed otherwise" },
            tail(&log, 30)
        ));
    }
    println!("wrong twin: {pinned} asserted on CUDA 12.4's headers fails to compile");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_matrix_expects_the_refusal_exactly_where_the_committed_bindings_would_link_another_release(
    ) {
        let cases = cases();
        assert_eq!(cases.len(), 20);
        let refused: Vec<&str> = cases
            .iter()
            .filter(|c| c.refused())
            .map(|c| c.release)
            .collect();
        assert_eq!(refused, [UNSEEN]);
        // The verdicts: the refusal by name passes; a refused case that
        // builds, a refusal without the name, or a failure elsewhere does not.
        let refused = Case {
            release: UNSEEN,
            loaded: false,
            default_features: false,
        };
        let log = format!("error: failed to run custom build command\n\ncuda-mem-sys: the CUDA headers in /x are release 13.7 (CUDA_VERSION 13070), which this crate has no committed bindings of (it has 12.0 to 13.5 for x86_64-linux), {REFUSAL}. ...");
        assert!(verdict(&refused, false, &log).is_ok());
        assert!(verdict(&refused, true, "").is_err());
        assert!(verdict(&refused, false, "error[E0308]: mismatched types").is_err());
        let builds = Case {
            release: "12.9",
            loaded: true,
            default_features: false,
        };
        assert!(verdict(&builds, true, "").is_ok());
        assert!(verdict(&builds, false, &log).is_err());
    }

    #[test]
    fn the_scratch_manifest_points_at_the_unpacked_crate_or_is_refused() {
        let manifest =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../wrap/Cargo.toml"))
                .unwrap();
        let out = scratch_manifest(&manifest, Path::new("/tmp/u/cuda-mem-sys-0.1.0")).unwrap();
        assert!(out.contains("cuda-mem-sys = { path = \"/tmp/u/cuda-mem-sys-0.1.0\","));
        assert!(!out.contains("path = \"..\""));
        assert!(out.ends_with("[workspace]\n"));
        // A manifest whose dependency line moved is refused, not built against the workspace's crate.
        assert!(
            scratch_manifest("[dependencies]\ncuda-mem-sys = \"0.1\"\n", Path::new("/x")).is_err()
        );
    }
}
