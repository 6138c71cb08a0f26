//! `cargo xtask ci`: the whole test suite on a machine with nothing but the
//! Rust toolchain (what `.ci/run` calls), and `cargo xtask demo`.
//!
//! Installs libclang 19 where it is missing (Debian/Ubuntu, as root), fetches
//! the CUDA headers it needs from the Python package index, then runs every
//! check a machine without a GPU can run; device tests report ignored.
//!
//! The CI wing: each step that is more than a command line has its file
//! here ([`examples`](mod@examples), [`valgrind`], [`docs_rs`], [`wrap`], [`build_cost`]).

pub mod build_cost;
pub mod docs_rs;
pub mod examples;
pub mod fuzz_elf;
pub mod valgrind;
pub mod wrap;

use crate::cmd::{
    cargo, discard, ensure_libclang, install_toolchain, run_cmd, step, toolchain_cargo,
};
use crate::{headers, releases};
use std::path::Path;
use std::process::Command;

pub use crate::cmd::{ensure_clang, ensure_target, AARCH64, WINDOWS};

pub fn demo(workspace: &Path) -> Result<(), String> {
    ensure_libclang()?;
    let include = headers::fetch(workspace, generator::release::PINNED_RELEASE)?;
    run_cmd(
        cargo(workspace)
            .args(["run", "--quiet", "--example", "demo"])
            .env(generator::locate::INCLUDE_DIR_VAR, &include),
    )?;
    println!(
        "\n---- the same program, loading the driver at run time (--features dynamic-loading)"
    );
    run_cmd(
        cargo(workspace)
            .args(["run", "--quiet", "--example", "demo"])
            .args(["--features", "dynamic-loading"])
            .env(generator::locate::INCLUDE_DIR_VAR, &include),
    )
}

/// `cargo xtask examples`: the CI step for the examples alone.
pub fn examples(workspace: &Path) -> Result<(), String> {
    ensure_libclang()?;
    let pinned = headers::fetch(workspace, generator::release::PINNED_RELEASE)?;
    examples::check_without_gpu(workspace, &pinned, || cargo(workspace))
}

pub fn run(workspace: &Path) -> Result<(), String> {
    ensure_libclang()?;
    ensure_clang()?;
    let pinned = headers::fetch(workspace, generator::release::PINNED_RELEASE)?;
    // tests/metadata.rs builds a dependent on 12.9's headers too (ignored
    // without them).
    headers::fetch(workspace, "12.9")?;

    step("format and lints");
    run_cmd(cargo(workspace).args(["fmt", "--all", "--", "--check"]))?;
    run_cmd(
        cargo(workspace)
            .args([
                "clippy",
                "--all-targets",
                "--workspace",
                "--",
                "-D",
                "warnings",
            ])
            .env(generator::locate::INCLUDE_DIR_VAR, &pinned),
    )?;

    step("the whole suite against the CUDA 13.0 headers (device tests report ignored)");
    run_cmd(
        cargo(workspace)
            .args(["test", "--workspace"])
            .env(generator::locate::INCLUDE_DIR_VAR, &pinned),
    )?;
    // The nested builds of tests/build_errors.rs and tests/exported_c_names.rs.
    discard(&workspace.join("target/build-errors"));
    discard(&workspace.join("target/exported-c-names"));

    step("examples: each built, and run without a GPU (documented `no GPU:` line and exit code)");
    examples::check_without_gpu(workspace, &pinned, || cargo(workspace))?;

    step(&format!(
        "device tests and examples against CUDA {} and an unseen release, linked and loaded",
        releases::device_compiled().join(" ")
    ));
    let started = std::time::Instant::now();
    crate::gpu_lab::compile::run(workspace, &["--ci"])?;
    println!("({:.0} s)", started.elapsed().as_secs_f64());
    discard(&crate::gpu_lab::build::device_target_dir(workspace));

    step("per-thread default stream: symbols and signatures");
    run_cmd(
        cargo(workspace)
            .args(["test", "--features", "per-thread-default-stream"])
            .args([
                "--test",
                "abi_symbols",
                "--test",
                "abi_signatures",
                "--test",
                "fallback",
            ])
            .env(generator::locate::INCLUDE_DIR_VAR, &pinned),
    )?;

    step("dynamic libcudart: symbols resolve in libcudart.so");
    let lib = pinned.parent().unwrap().join("lib");
    run_cmd(
        cargo(workspace)
            .args([
                "test",
                "--features",
                "dynamic-cudart",
                "--test",
                "abi_symbols",
            ])
            .env(generator::locate::INCLUDE_DIR_VAR, &pinned)
            .env("LD_LIBRARY_PATH", &lib),
    )?;

    step("dynamic-loading: no CUDA NEEDED, the loader against a fake driver, documented codes");
    for features in [
        "dynamic-loading",
        "dynamic-loading,per-thread-default-stream",
        "dynamic-loading,dynamic-cudart",
    ] {
        run_cmd(
            cargo(workspace)
                .args(["test", "--features", features])
                // --lib: the loader's unit tests (the ELF reader), built only
                // with `dynamic-loading`; malformed_elf: the reader on
                // hand-made libraries glibc loads.
                .args([
                    "--lib",
                    "--test",
                    "dynamic_loading",
                    "--test",
                    "malformed_elf",
                    "--test",
                    "abi_symbols",
                ])
                .env(generator::locate::INCLUDE_DIR_VAR, &pinned),
        )?;
    }

    loom(workspace)?;
    valgrind::run(workspace)?;
    fuzz_elf::run(workspace, &[])?;

    step("no CUDA at all: the committed fallback bindings");
    run_cmd(
        cargo(workspace)
            .args(["test", "--test", "fallback", "--test", "device_smoke"])
            .env("CARGO_TARGET_DIR", workspace.join("target/fallback")),
    )?;
    run_cmd(
        cargo(workspace)
            .args([
                "test",
                "--features",
                "dynamic-loading",
                "--test",
                "dynamic_loading",
            ])
            .env("CARGO_TARGET_DIR", workspace.join("target/fallback")),
    )?;
    discard(&workspace.join("target/fallback"));

    step("build cost: one copy of each dependency; no bindgen, no libclang without the feature");
    build_cost::check(workspace)?;
    discard(&workspace.join("target/ci-duplicates"));
    discard(&workspace.join("target/ci-no-bindgen"));

    step("the crate as published: `cargo package` builds the packaged files, without CUDA and with the 13.0 headers");
    // A crates.io user builds only what `include` ships (no tests, no xtask):
    // first with no CUDA (the committed fallback), then with the headers of
    // the committed bindings and no libclang (they stand in, no bindgen run).
    run_cmd(cargo(workspace).args(["package", "--allow-dirty", "-p", "cuda-mem-sys"]))?;
    let no_libclang = workspace.join("target/no-libclang");
    std::fs::create_dir_all(&no_libclang).map_err(|e| e.to_string())?;
    let out = cargo(workspace)
        .args(["package", "--allow-dirty", "-p", "cuda-mem-sys", "-vv"])
        .env(generator::locate::INCLUDE_DIR_VAR, &pinned)
        .env("LIBCLANG_PATH", &no_libclang)
        .output()
        .map_err(|e| e.to_string())?;
    let log = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || !log.contains("cargo:bindings=committed-same-headers") {
        return Err(format!(
            "the packaged crate, with the 13.0 headers and no libclang, did not build from \
             the committed bindings for their very headers ({}):\n{log}",
            out.status
        ));
    }
    println!("the packaged crate took the committed bindings for their very headers");
    discard(&workspace.join("target/package"));

    wrap::run(workspace)?;

    msrv(workspace, &pinned)?;

    step("documentation");
    run_cmd(
        cargo(workspace)
            .args(["doc", "--no-deps", "-p", "cuda-mem-sys"])
            .env(generator::locate::INCLUDE_DIR_VAR, &pinned)
            .env("RUSTDOCFLAGS", "-D warnings"),
    )?;
    step("documentation as docs.rs builds it (nightly, --cfg docsrs): the loader module, the linked declarations and their links, feature badges only");
    docs_rs::check(workspace)?;

    // bindgen with libclang 22 (rust-bindgen #3383): the same bindings as 19's.
    crate::abi::libclang22::run(workspace, &[])?;

    // Beside the pinned release: the range's ends, generated and (no
    // bindgen) committed.
    for release in releases::ends() {
        step(&format!("CUDA {release}: ABI checks"));
        crate::abi::ci_release(workspace, release)?;
        step(&format!(
            "CUDA {release}: ABI checks of the committed bindings a build without bindgen compiles"
        ));
        crate::abi::ci_release_committed(workspace, release)?;
        discard(&crate::abi::target_dir(workspace, release));
    }

    step("the committed bindings: every release, target family and stream mode regenerated from the wheels' headers and compared, byte for byte");
    crate::regen::run(workspace, &["--check"])?;
    discard(&workspace.join("target/xtask-regen"));

    cross(workspace)
}

/// `cargo xtask msrv`: the CI step for the crate's `rust-version` alone.
/// The loader's synchronisation model-checked: `loader-model/` (the same
/// `src/loader/once.rs`) under `--cfg loom`, every model and its wrong twin,
/// in a target folder of its own (the flag rebuilds everything it touches).
/// Its models also run on real threads in the plain workspace tests.
pub fn loom(workspace: &Path) -> Result<(), String> {
    step("the loader's synchronisation under loom: every model, and each wrong twin caught");
    run_cmd(
        cargo(workspace)
            .args(["test", "-p", "loader-model", "--release"])
            .arg("--target-dir")
            .arg(workspace.join("target/loom"))
            .env("RUSTFLAGS", "--cfg loom")
            .env("LOOM_MAX_PREEMPTIONS", "3"),
    )
}

pub fn msrv_alone(workspace: &Path) -> Result<(), String> {
    ensure_libclang()?;
    let pinned = headers::fetch(workspace, generator::release::PINNED_RELEASE)?;
    msrv(workspace, &pinned)
}

/// The crate's `rust-version` (Cargo.toml) builds it: the library checked with
/// that toolchain (installed by rustup, minimal profile) without CUDA, with
/// the 13.0 headers, without `bindgen`, and with `dynamic-loading` and the
/// per-thread default stream, where bindgen runs and the loader is generated.
fn msrv(workspace: &Path, pinned: &Path) -> Result<(), String> {
    let manifest =
        std::fs::read_to_string(workspace.join("Cargo.toml")).map_err(|e| e.to_string())?;
    let version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .map(|v| v.trim().trim_matches('"').to_string())
        .ok_or("Cargo.toml has no rust-version")?;
    step(&format!(
        "rust-version {version}: the library builds with that toolchain"
    ));
    install_toolchain(&version)?;
    let cases: [(&str, &[&str], bool); 4] = [
        ("no CUDA", &[], false),
        ("the 13.0 headers", &[], true),
        ("without bindgen", &["--no-default-features"], true),
        (
            "dynamic-loading, per-thread default stream (bindgen runs)",
            &["--features", "dynamic-loading,per-thread-default-stream"],
            true,
        ),
    ];
    for (what, args, headers) in cases {
        println!("-- {what}");
        let mut c = toolchain_cargo(workspace, &version);
        c.args(["check", "-p", "cuda-mem-sys", "--lib"])
            .args(args)
            .env("CARGO_TARGET_DIR", workspace.join("target/msrv"));
        if headers {
            c.env(generator::locate::INCLUDE_DIR_VAR, pinned);
        }
        run_cmd(&mut c)?;
    }
    discard(&workspace.join("target/msrv"));
    Ok(())
}

/// The aarch64 Linux and Windows x86_64 (MinGW, MSVC) part of CI (`cargo xtask ci --cross` alone).
pub fn cross(workspace: &Path) -> Result<(), String> {
    ensure_libclang()?;
    ensure_target(AARCH64)?;
    for release in releases::ends_and_pinned() {
        let started = std::time::Instant::now();
        step(&format!(
            "{AARCH64}, CUDA {release}: ABI checks under qemu-aarch64{}",
            if release == generator::release::PINNED_RELEASE {
                " (with the bad-input fixture and the fallback comparison)"
            } else {
                ""
            }
        ));
        crate::abi::ci_release_for(workspace, release, AARCH64)?;
        println!("({:.0} s)", started.elapsed().as_secs_f64());
        if release != generator::release::PINNED_RELEASE {
            discard(&crate::abi::target_dir_for(workspace, release, AARCH64));
        }
    }
    let started = std::time::Instant::now();
    step(&format!(
        "{AARCH64}: the committed fallback bindings against the 13.0 aarch64 headers"
    ));
    crate::abi::run(workspace, &["--target", AARCH64, "fallback"])?;
    println!("({:.0} s)", started.elapsed().as_secs_f64());

    ensure_target(WINDOWS)?;
    let started = std::time::Instant::now();
    step(&format!("{WINDOWS}: cross-build of the crate and its ABI tests against the win_amd64 13.0 headers; run under wine"));
    windows(workspace)?;
    println!("({:.0} s)", started.elapsed().as_secs_f64());
    crate::abi::msvc::run(workspace, &[])
}

/// Windows x86_64 (MinGW): the crate and its ABI tests built against the
/// win_amd64 wheels' 13.0 headers and import libraries, linked, and run under
/// wine: layouts, constants and signatures (the C compiler they start is the
/// Linux MinGW one, see `test-support`'s `host_output`), the bad-input
/// fixture, stable names and the committed bindings' comparison.
fn windows(workspace: &Path) -> Result<(), String> {
    let include = headers::fetch_for(workspace, generator::release::PINNED_RELEASE, WINDOWS)?;
    let dir = crate::abi::target_dir_for(workspace, generator::release::PINNED_RELEASE, WINDOWS);
    // cargo `args` for the target, against those headers, in its own folder.
    let windows_cargo = |args: &[&str]| -> Result<Command, String> {
        let mut cmd = cargo(workspace);
        cmd.args(args);
        crate::abi::for_target(&mut cmd, workspace, WINDOWS)?;
        cmd.env(generator::locate::INCLUDE_DIR_VAR, &include)
            .env("CARGO_PROFILE_DEV_DEBUG", "0")
            .env("CARGO_TARGET_DIR", &dir);
        Ok(cmd)
    };
    let mut tests = vec!["test"];
    for t in crate::abi::WINDOWS_ABI_TESTS {
        tests.extend(["--test", t]);
    }
    run_cmd(&mut windows_cargo(&tests)?)?;

    // The run-time loader's Windows half (LoadLibraryExW, GetProcAddress): the
    // demo built with `dynamic-loading` starts under wine, where there is no
    // nvcuda.dll, and reports that through the loader's API.
    let out = windows_cargo(&[
        "run",
        "--quiet",
        "--example",
        "demo",
        "--features",
        "dynamic-loading",
    ])?
    .stderr(std::process::Stdio::inherit())
    .output()
    .map_err(|e| format!("cargo run --example demo: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    let what = examples::verdict(
        "demo (windows, dynamic-loading)",
        0,
        out.status.code(),
        &stdout,
    )?;
    // Each file tried with its own reason (`LoadError::attempts`).
    let expected =
        "no driver: nvcuda.dll: LoadLibraryExW failed with Windows error 126 (nvcuda.dll)";
    if !stdout.contains(expected) {
        return Err(format!(
            "the loaded demo under wine did not say {expected:?}"
        ));
    }
    println!("demo (windows, dynamic-loading): {what}; the loader reported the missing nvcuda.dll");

    // Where the loader looks for its DLLs: a planted nvcuda.dll in the
    // working folder or beside the program is not loaded, a variable holding
    // a non-ASCII path loads that file (tests/windows_dll_search.rs).
    let started = std::time::Instant::now();
    run_cmd(&mut windows_cargo(&[
        "test",
        "--features",
        "dynamic-loading",
        "--test",
        "windows_dll_search",
    ])?)?;
    println!(
        "windows_dll_search under wine: {:.0} s",
        started.elapsed().as_secs_f64()
    );

    // Every example and every test compiles for Windows, and the device
    // tests run under wine with the runtime DLL loaded: the names Linux
    // lists, every test ignored with its reason (as for msvc).
    let cargo_in = |args: &[&str], features: &str| -> Result<Command, String> {
        let mut cmd = cargo(workspace);
        cmd.args(args);
        if !features.is_empty() {
            cmd.args(["--features", features]);
        }
        crate::abi::for_target(&mut cmd, workspace, WINDOWS)?;
        cmd.env(generator::locate::INCLUDE_DIR_VAR, &include)
            .env("CARGO_PROFILE_DEV_DEBUG", "0")
            .env("CARGO_TARGET_DIR", &dir);
        Ok(cmd)
    };
    let started = std::time::Instant::now();
    step(&format!("{WINDOWS}: every example and every test compiles"));
    run_cmd(&mut cargo_in(
        &["check", "-p", "cuda-mem-sys", "--examples", "--tests"],
        "",
    )?)?;
    println!("({:.0} s)", started.elapsed().as_secs_f64());
    let loaded = "dynamic-loading,dynamic-cudart";
    run_cmd(&mut cargo_in(
        &["test", "-p", "cuda-mem-sys", "--test", "os_helpers"],
        loaded,
    )?)?;
    let linux_lists = crate::abi::msvc::linux_lists(workspace)?;
    crate::abi::msvc::device_tests_under_wine(
        &format!("{WINDOWS}, CUDA 13.0"),
        &linux_lists,
        |args| cargo_in(args, loaded).expect("the target was set up above"),
    )
}
