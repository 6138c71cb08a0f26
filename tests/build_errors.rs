//! Bad build input gets an error naming the problem and the fix, never a
//! bindgen panic: the build script is run (through cargo, in a target folder
//! of its own) against deliberately broken setups.

use std::path::Path;
use std::process::Command;
use test_support::{scratch, Scratch};

/// A scratch include folder holding `files` (path, contents); removed on drop.
fn include_dir(name: &str, files: &[(&str, &str)]) -> Scratch {
    let d = scratch(&format!("build-errors-{name}"));
    for (f, text) in files {
        let path = d.path().join(f);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    d
}

/// `cargo build` of this crate with `env` set (and every CUDA variable unset);
/// returns (success, stderr).
fn build_with(env: &[(&str, &Path)]) -> (bool, String) {
    build_with_args(&[], env)
}

/// [`build_with`] with more arguments for cargo (`--no-default-features`).
fn build_with_args(args: &[&str], env: &[(&str, &Path)]) -> (bool, String) {
    let mut all = vec!["--quiet"];
    all.extend(args);
    build_command(&all, env)
}

/// `cargo build <args>` of this crate's library with `env` set (and every
/// CUDA variable unset); returns (success, stderr and then stdout: with `-vv`
/// the build script's own lines, `[cuda-mem-sys ...] cargo:...`, are there).
fn build_command(args: &[&str], env: &[(&str, &Path)]) -> (bool, String) {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(manifest)
        .args(["build", "-p", "cuda-mem-sys", "--lib"])
        .args(args)
        .env("CARGO_TARGET_DIR", manifest.join("target/build-errors"))
        // A temporary folder of these builds' own: nothing another program
        // left in the system's is seen.
        .env("TMPDIR", own_tmpdir());
    for var in test_support::ROOT_VARS {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("running cargo");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout),
    )
}

/// `target/build-errors/tmp`: the `TMPDIR` of the builds these tests run.
fn own_tmpdir() -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/build-errors/tmp");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// [`include_dir`], the folder laid out as NVIDIA's wheels lay theirs
/// (`<scratch>/nvidia/cuda_runtime/include`): where a sibling package is
/// searched for `crt/`, only this test's own folder is.
fn wheel_include_dir(name: &str, files: &[(&str, &str)]) -> (Scratch, std::path::PathBuf) {
    let nested: Vec<(String, &str)> = files
        .iter()
        .map(|(f, t)| (format!("nvidia/cuda_runtime/include/{f}"), *t))
        .collect();
    let nested: Vec<(&str, &str)> = nested.iter().map(|(f, t)| (f.as_str(), *t)).collect();
    let d = include_dir(name, &nested);
    let include = d.path().join("nvidia/cuda_runtime/include");
    std::fs::create_dir_all(&include).unwrap();
    (d, include)
}

fn assert_clean_error(stderr: &str, expected: &[&str]) {
    assert!(
        !stderr.contains("panicked"),
        "the build script panicked:\n{stderr}"
    );
    for e in expected {
        assert!(
            stderr.contains(e),
            "expected {e:?} in the build error:\n{stderr}"
        );
    }
}

fn an_include_dir_without_cuda_h_is_named() {
    let empty = include_dir("empty", &[]);
    let (ok, stderr) = build_with(&[(test_support::INCLUDE_DIR_VAR, empty.path())]);
    assert!(!ok);
    assert_clean_error(
        &stderr,
        &[
            "CUDA_MEM_SYS_INCLUDE_DIR=",
            "holds no cuda.h",
            "pip install nvidia-cuda-runtime==13.0.* nvidia-cuda-crt==13.0.*",
        ],
    );
    assert!(!stderr.contains("xtask"), "a command users lack:\n{stderr}");
}

fn a_cuda_path_that_points_nowhere_is_named() {
    let (ok, stderr) = build_with(&[("CUDA_PATH", Path::new("/nonexistent/cuda"))]);
    assert!(!ok);
    assert_clean_error(&stderr, &["CUDA_PATH=/nonexistent/cuda points nowhere"]);
}

fn headers_older_than_12_0_are_refused() {
    let old = include_dir(
        "old",
        &[
            ("cuda.h", "#define CUDA_VERSION 11080\n"),
            ("cuda_runtime_api.h", ""),
            ("crt/host_defines.h", ""),
        ],
    );
    let (ok, stderr) = build_with(&[(test_support::INCLUDE_DIR_VAR, old.path())]);
    assert!(!ok);
    assert_clean_error(&stderr, &["release 11.8", "needs 12.0 or newer"]);
}

/// An include folder whose `cuda.h` says `CUDA_VERSION` is `version` (and
/// nothing else: enough for the release check, which comes first).
fn fake_headers(version: u32) -> Scratch {
    include_dir(
        &format!("fake-{version}"),
        &[
            ("cuda.h", &format!("#define CUDA_VERSION {version}\n")),
            ("cuda_runtime_api.h", ""),
            ("crt/host_defines.h", ""),
        ],
    )
}

/// `CUDA_VERSION` of a release this crate has no committed bindings of (two
/// minors past the newest it knows, as xtask's unseen-release fixture).
const UNSEEN: u32 = 13070;

fn missing_libclang_is_named_with_the_package_to_install() {
    // Headers of a release with no committed bindings: only bindgen could serve them.
    let include = fake_headers(UNSEEN);
    let no_libclang = scratch("no-libclang");
    let (ok, stderr) = build_with(&[
        (test_support::INCLUDE_DIR_VAR, include.path()),
        ("LIBCLANG_PATH", no_libclang.path()),
    ]);
    assert!(!ok);
    assert_clean_error(
        &stderr,
        &[
            "libclang was not found",
            "libclang-19-dev",
            "release 13.7",
            "`dynamic-loading`",
        ],
    );
}

/// The lines the build scripts under `target/build-errors/` printed, each build's own.
fn build_outputs() -> Vec<String> {
    let build = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/build-errors/debug/build");
    std::fs::read_dir(&build)
        .unwrap()
        .filter_map(|d| std::fs::read_to_string(d.ok()?.path().join("output")).ok())
        .collect()
}

fn missing_libclang_with_headers_of_a_committed_release_uses_its_committed_bindings() {
    // 12.9, not the pinned release: every release's bindings are committed.
    // The wrong twin, the pinned release's bindings, would say 13000.
    for version in [12090, 13000] {
        let include = fake_headers(version);
        let no_libclang = scratch("no-libclang");
        let (ok, stderr) = build_with(&[
            (test_support::INCLUDE_DIR_VAR, include.path()),
            ("LIBCLANG_PATH", no_libclang.path()),
        ]);
        assert!(ok, "the build failed:\n{stderr}");
        // `--quiet` hides the warning: read it from the build script's recorded output.
        let said = build_outputs().iter().any(|out| {
            out.lines().any(|l| {
                l.starts_with("cargo:warning=libclang was not found")
                    && l.contains(&*include.path().to_string_lossy())
                    && l.contains("bindings committed for it")
            }) && out.contains("cargo:rustc-cfg=cuda_mem_sys_fallback")
                && out.contains(&format!("cargo:version_number={version}\n"))
        });
        assert!(
            said,
            "no build used the committed bindings of {version} and said so"
        );
    }
}

fn without_bindgen_headers_of_a_committed_release_declare_that_release() {
    // Every known release builds without bindgen, linked, from its own
    // committed bindings: `CUDA_VERSION` is the headers'.
    let include = fake_headers(12040);
    let (ok, out) = build_command(
        &["-vv", "--no-default-features"],
        &[(test_support::INCLUDE_DIR_VAR, include.path())],
    );
    assert!(
        ok,
        "the build with 12.4 headers and no bindgen failed:\n{out}"
    );
    assert!(
        out.contains("cargo:version_number=12040\n") && out.contains("cargo:bindings=committed\n"),
        "the build did not take 12.4's committed bindings:\n{out}"
    );
}

fn without_bindgen_headers_of_an_unseen_release_are_refused_naming_the_fixes() {
    let include = fake_headers(UNSEEN);
    let (ok, stderr) = build_with_args(
        &["--no-default-features"],
        &[(test_support::INCLUDE_DIR_VAR, include.path())],
    );
    assert!(!ok);
    assert_clean_error(
        &stderr,
        &[
            "release 13.7",
            "no committed bindings",
            "no `bindgen` feature",
            "turn on the `bindgen` feature",
            "`dynamic-loading`",
        ],
    );
}

fn without_bindgen_dynamic_loading_takes_an_unseen_release_as_the_newest_below_and_links_nothing_of_it(
) {
    // The fix the refusal above names: with `dynamic-loading` the newest
    // committed bindings below serve (13.5), and that release's libraries
    // (here a static runtime beside its headers) are not linked: every
    // function is looked up at run time.
    let libs = include_dir("other-release-libs", &[("libcudart_static.a", "!<arch>\n")]);
    let build = |version: u32| {
        let include = fake_headers(version);
        build_command(
            &[
                "-vv",
                "--no-default-features",
                "--features",
                "dynamic-loading",
            ],
            &[
                (test_support::INCLUDE_DIR_VAR, include.path()),
                ("CUDA_MEM_SYS_LIB_DIR", libs.path()),
            ],
        )
    };
    let (ok, out) = build(UNSEEN);
    assert!(
        ok,
        "the build with 13.7 headers and dynamic-loading failed:\n{out}"
    );
    assert!(
        out.contains("are release 13.7, which this crate has no committed bindings of; those of CUDA 13.5 are used")
            && out.contains("cargo:version_number=13050\n")
            && out.contains("cargo:mode=loaded\n"),
        "the build did not say it took the 13.5 bindings and loads both libraries:\n{out}"
    );
    assert!(
        !out.contains("rustc-link-lib=static=cudart_static"),
        "the 13.7 static runtime was linked behind 13.5 declarations:\n{out}"
    );

    // The deliberately wrong case: headers of a committed release, whose
    // static runtime (the same folder) is linked.
    let (ok, out) = build(13000);
    assert!(ok, "the build with 13.0 headers failed:\n{out}");
    assert!(
        out.contains("rustc-link-lib=static=cudart_static"),
        "the check above cannot see a linked static runtime:\n{out}"
    );
}

fn without_bindgen_headers_of_the_committed_release_build_without_libclang() {
    let include = fake_headers(13000);
    let no_libclang = scratch("no-libclang");
    let (ok, stderr) = build_with_args(
        &["--no-default-features"],
        &[
            (test_support::INCLUDE_DIR_VAR, include.path()),
            ("LIBCLANG_PATH", no_libclang.path()),
        ],
    );
    assert!(ok, "the build failed:\n{stderr}");
}

fn an_include_dir_without_cuda_runtime_api_h_is_named() {
    // A stray tree's runtime header beside it is not taken either.
    let (_d, dir) = wheel_include_dir("no-runtime", &[("cuda.h", "#define CUDA_VERSION 13000\n")]);
    let (ok, stderr) = build_with(&[(test_support::INCLUDE_DIR_VAR, &dir)]);
    assert!(!ok);
    assert_clean_error(
        &stderr,
        &[
            "holds cuda.h but not cuda_runtime_api.h",
            "the header set is incomplete",
            "…/site-packages/nvidia/cu13/include",
        ],
    );
    assert!(
        !stderr.contains("ToolExecError"),
        "the raw preprocessor failure leaked out:\n{stderr}"
    );
}

fn an_include_dir_without_crt_host_defines_h_is_named() {
    let (_d, dir) = wheel_include_dir(
        "no-crt",
        &[
            ("cuda.h", "#define CUDA_VERSION 13000\n"),
            ("cuda_runtime_api.h", "#include \"crt/host_defines.h\"\n"),
        ],
    );
    let (ok, stderr) = build_with(&[(test_support::INCLUDE_DIR_VAR, &dir)]);
    assert!(!ok);
    assert_clean_error(
        &stderr,
        &[
            "no crt/host_defines.h",
            "nvidia-cuda-crt",
            "pip install nvidia-cuda-runtime==13.0.* nvidia-cuda-crt==13.0.*",
        ],
    );
    assert!(
        !stderr.contains("ToolExecError"),
        "the raw preprocessor failure leaked out:\n{stderr}"
    );
}

/// A stray CUDA tree two levels above the include folder (not NVIDIA's
/// wheel layout), with its own `cuda_runtime_api.h` and `crt/`, is named by
/// the build, not mixed into it (`generator/tests/finding_cuda.rs` has each case).
/// The deliberately right case: without the stray tree, the same folder is
/// refused only as incomplete.
fn a_stray_cuda_tree_two_levels_up_is_named_by_the_build() {
    let root = include_dir(
        "stray",
        &[
            ("mine/include/cuda.h", "#define CUDA_VERSION 13000\n"),
            (
                "mine/include/cuda_runtime_api.h",
                "#include \"crt/host_defines.h\"\n",
            ),
            ("stray/include/cuda.h", "#define CUDA_VERSION 12090\n"),
            ("stray/include/cuda_runtime_api.h", ""),
            ("stray/include/crt/host_defines.h", ""),
        ],
    );
    let mine = root.path().join("mine/include");
    let (ok, stderr) = build_with(&[(test_support::INCLUDE_DIR_VAR, &mine)]);
    assert!(!ok, "the build took the stray tree:\n{stderr}");
    assert_clean_error(
        &stderr,
        &[
            "is not in the layout of NVIDIA's wheels",
            "(a stray CUDA tree)",
        ],
    );
    std::fs::remove_dir_all(root.path().join("stray")).unwrap();
    let (ok, stderr) = build_with(&[(test_support::INCLUDE_DIR_VAR, &mine)]);
    assert!(!ok);
    assert!(
        !stderr.contains("a stray CUDA tree") && stderr.contains("no crt/host_defines.h"),
        "{stderr}"
    );
}

fn a_cuda_h_that_does_not_preprocess_is_named() {
    let dir = include_dir(
        "broken",
        &[
            ("cuda.h", "#if\n#define CUDA_VERSION 13000\n"),
            ("cuda_runtime_api.h", ""),
            ("crt/host_defines.h", ""),
        ],
    );
    let (ok, stderr) = build_with(&[(test_support::INCLUDE_DIR_VAR, dir.path())]);
    assert!(!ok);
    let cuda_h = dir.path().join("cuda.h");
    assert_clean_error(
        &stderr,
        &[
            &format!("{} does not preprocess", cuda_h.display()),
            "pip install nvidia-cuda-runtime==13.0.* nvidia-cuda-crt==13.0.*",
        ],
    );
}

/// The scratch folders these tests make are gone once the guard is dropped,
/// also when the test panics while holding it.
fn scratch_folders_are_removed_even_when_a_test_panics() {
    let mut seen = None;
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let d = include_dir("panics", &[("cuda.h", "x")]);
        seen = Some(d.path().to_path_buf());
        assert!(d.path().join("cuda.h").is_file());
        panic!("deliberately");
    }));
    assert!(r.is_err());
    let seen = seen.unwrap();
    assert!(!seen.exists(), "{} survived the panic", seen.display());
}

/// Copies the folder `from` into `to` (both exist; `to` is empty).
fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The include folder of the headers the crate was built with, where they
/// are those of the committed bindings (its `DEP_CUDA_MEM_SYS_BINDINGS` is
/// `committed-same-headers`); `None` elsewhere.
fn committed_headers() -> Option<std::path::PathBuf> {
    if test_support::BINDINGS != "committed-same-headers" {
        return None;
    }
    test_support::include_dirs().ok()?.into_iter().next()
}

/// A copy of `include` with one byte more in `cuda.h`: other headers of the
/// same release, for which the committed bindings cannot stand in.
fn changed_headers(include: &Path, name: &str) -> Scratch {
    let changed = scratch(name);
    copy_tree(include, changed.path());
    let cuda_h = changed.path().join("cuda.h");
    let mut text = std::fs::read(&cuda_h).unwrap();
    text.extend_from_slice(b"\n");
    std::fs::write(&cuda_h, text).unwrap();
    changed
}

/// The headers the committed bindings were generated from stand in for a
/// bindgen run (the build needs no libclang and says so in its metadata);
/// the same headers with one byte changed do not (the build looks for
/// libclang, and without it falls back with its warning).
fn the_committed_bindings_stand_in_for_their_very_headers_only() {
    let include = committed_headers().expect("the committed bindings' headers");
    let no_libclang = scratch("no-libclang");
    let (ok, stderr) = build_command(
        &["-vv"],
        &[
            (test_support::INCLUDE_DIR_VAR, &include),
            ("LIBCLANG_PATH", no_libclang.path()),
        ],
    );
    assert!(ok, "the build with the very headers failed:\n{stderr}");
    assert!(
        stderr.contains("cargo:bindings=committed-same-headers"),
        "the build with the very headers did not take the committed bindings:\n{stderr}"
    );
    assert!(
        !stderr.contains("libclang was not found")
            && !stderr.contains("cargo:rustc-cfg=cuda_mem_sys_fallback"),
        "the build with the very headers looked for libclang or fell back:\n{stderr}"
    );

    // The deliberately wrong case: one byte more in cuda.h.
    let changed = changed_headers(&include, "changed-headers");
    let (ok, stderr) = build_command(
        &["-vv"],
        &[
            (test_support::INCLUDE_DIR_VAR, changed.path()),
            ("LIBCLANG_PATH", no_libclang.path()),
        ],
    );
    assert!(ok, "the build with a changed cuda.h failed:\n{stderr}");
    assert!(
        !stderr.contains("cargo:bindings=committed-same-headers"),
        "a changed cuda.h still counted as the committed bindings' headers:\n{stderr}"
    );
    assert!(
        stderr.contains("libclang was not found")
            && stderr.contains("cargo:rustc-cfg=cuda_mem_sys_fallback"),
        "a changed cuda.h did not lead to bindgen (here: its fallback without libclang):\n{stderr}"
    );
}

/// `CUDA_MEM_SYS_BUILD_TIMINGS=1` makes the build script say each step's
/// cost, one `cargo:warning` each and the total last, in the form `cargo xtask
/// bench-build` reads; unset or `0` (the wrong case), it says none.
fn build_timings_are_said_only_when_asked() {
    let include = committed_headers().expect("the committed bindings' headers");
    let timings = |value: &str| -> Vec<String> {
        let value = Path::new(value);
        let (ok, out) = build_command(
            &["-vv"],
            &[
                (test_support::INCLUDE_DIR_VAR, &include),
                ("CUDA_MEM_SYS_BUILD_TIMINGS", value),
            ],
        );
        assert!(ok, "the build failed:\n{out}");
        out.lines()
            .filter_map(|l| {
                l.split_once("cargo:warning=timing ")
                    .map(|(_, t)| t.to_string())
            })
            .collect()
    };
    let said = timings("1");
    let steps: Vec<&str> = said
        .iter()
        .map(|l| l.rsplit_once(": ").expect("step: figures").0)
        .collect();
    assert_eq!(
        steps,
        [
            "locate CUDA",
            "choose the bindings",
            "committed bindings",
            "find the C compiler",
            "link",
            "the stubs compiled",
            "total"
        ],
        "{said:?}"
    );
    for l in &said {
        let figures = l.rsplit_once(": ").unwrap().1;
        let (cpu, wall) = figures
            .strip_suffix(" s wall")
            .and_then(|f| f.split_once(" s CPU, "))
            .unwrap_or_else(|| panic!("not `<cpu> s CPU, <wall> s wall`: {l}"));
        assert!(cpu.parse::<f64>().is_ok() || cpu == "?", "{l}");
        assert!(wall.parse::<f64>().is_ok_and(|w| w >= 0.0), "{l}");
    }
    // The variable reruns the build script: `0` says nothing.
    assert_eq!(timings("0"), Vec::<String>::new());
}

/// The `OUT_DIR` of `package`'s build script in a `--message-format=json` build's output.
fn out_dir_of(output: &str, package: &str) -> std::path::PathBuf {
    // The package id names the package after `#`, or (a package named as its
    // folder) ends its path with that name.
    let ids = [format!("#{package}@"), format!("/{package}#")];
    let line = output
        .lines()
        .find(|l| {
            l.contains("\"reason\":\"build-script-executed\"")
                && ids.iter().any(|id| l.contains(id.as_str()))
        })
        .unwrap_or_else(|| panic!("no build-script-executed message of {package} in:\n{output}"));
    let at = line.split("\"out_dir\":\"").nth(1).unwrap();
    at[..at.find('"').unwrap()].into()
}

/// A dependent's build (bindgen running: headers that are not the committed
/// bindings' own) makes none of the ABI proofs' inputs: their generators run
/// in abi-proofs' build script, which makes them all (the deliberately wrong
/// case: were the check blind, it would count none there either).
fn only_the_abi_proofs_build_makes_the_abi_test_inputs() {
    let include = committed_headers().expect("the committed bindings' headers");
    // Headers other than the committed ones': bindgen runs.
    let changed = changed_headers(&include, "abi-inputs-headers");
    let env = [(test_support::INCLUDE_DIR_VAR, changed.path())];
    let (ok, output) = build_command(&["--message-format=json", "-p", "abi-proofs"], &env);
    assert!(ok, "the build failed:\n{output}");
    assert!(
        !output.contains("cuda_mem_sys_fallback"),
        "the build did not generate (is libclang installed?):\n{output}"
    );
    let abi_inputs = |package: &str| {
        let abi = out_dir_of(&output, package).join("abi");
        [
            "functions.rs",
            "layout_check.c",
            "layout_rust.rs",
            "signatures.c",
        ]
        .iter()
        .filter(|f| abi.join(f).is_file())
        .count()
    };
    assert_eq!(
        abi_inputs("cuda-mem-sys"),
        0,
        "cuda-mem-sys's build (a dependent's) made ABI test inputs"
    );
    assert_eq!(
        abi_inputs("abi-proofs"),
        4,
        "abi-proofs' build did not make the ABI test inputs"
    );
}

/// The build script run outside cargo (by hand, or by a tool that sets too
/// little) names the variable it misses, or the one that is not text, and
/// exits with an error: no panic. The deliberately right case: with the four
/// variables it reads set, the same binary runs to its end.
fn a_build_script_run_without_cargos_variables_names_the_missing_one() {
    let (ok, out) = build_with_args(&["--no-default-features"], &[]);
    assert!(ok, "the build failed:\n{out}");
    let build = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/build-errors/debug/build");
    let script = std::fs::read_dir(&build)
        .unwrap()
        .filter_map(|d| Some(d.ok()?.path().join("build-script-main")))
        .find(|p| p.is_file() && p.to_string_lossy().contains("cuda-mem-sys-"))
        .unwrap_or_else(|| panic!("no cuda-mem-sys build script in {}", build.display()));
    let out_dir = scratch("build-script-by-hand");
    let run = |unset: &str, set: &[(&str, std::ffi::OsString)]| {
        let mut cmd = Command::new(&script);
        cmd.env_clear()
            .env("CARGO_MANIFEST_DIR", env!("CARGO_MANIFEST_DIR"))
            .env("OUT_DIR", out_dir.path())
            .env("TARGET", test_support::TARGET)
            .env("HOST", test_support::HOST)
            // Nothing searched, nothing linked: the run ends after the bindings.
            .env("DOCS_RS", "1")
            .env_remove(unset);
        for (k, v) in set {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("running the build script");
        let text = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        (out.status.code(), text)
    };
    for var in ["OUT_DIR", "CARGO_MANIFEST_DIR", "TARGET", "HOST"] {
        let (code, text) = run(var, &[]);
        assert_eq!(code, Some(1), "without {var}:\n{text}");
        assert_clean_error(&text, &[&format!("cuda-mem-sys: {var} is not set")]);
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        let not_text = std::ffi::OsString::from_vec(b"x86_64-\xff-linux".to_vec());
        let (code, text) = run("", &[("TARGET", not_text)]);
        assert_eq!(code, Some(1), "with a TARGET that is not UTF-8:\n{text}");
        assert_clean_error(&text, &["cuda-mem-sys: TARGET is not UTF-8"]);
    }
    let (code, text) = run("", &[]);
    assert_eq!(code, Some(0), "with every variable set:\n{text}");
    assert!(
        text.contains("cargo:version_number=13000") && !text.contains("is not set"),
        "with every variable set the script did not run to its end:\n{text}"
    );
}

/// The ABI proofs hold for the bindings cuda-mem-sys compiled only where
/// abi-proofs' build made the same choice: built with fewer features than
/// cuda-mem-sys got (here `dynamic-loading`, asked for cuda-mem-sys alone),
/// it refuses, naming both; the deliberately right case, the feature given to
/// abi-proofs (which forwards it), builds.
fn abi_proofs_built_otherwise_than_cuda_mem_sys_are_refused() {
    let (ok, out) = build_with_args(
        &[
            "-p",
            "abi-proofs",
            "--features",
            "cuda-mem-sys/dynamic-loading",
        ],
        &[],
    );
    assert!(
        !ok,
        "abi-proofs built against a cuda-mem-sys it does not describe:\n{out}"
    );
    assert_clean_error(
        &out,
        &[
            "abi-proofs: cuda-mem-sys was built otherwise than these proofs assume",
            "cuda-mem-sys loaded, not those, no headers found; here linked,",
        ],
    );
    let (ok, out) = build_with_args(
        &[
            "-p",
            "abi-proofs",
            "--features",
            "abi-proofs/dynamic-loading",
        ],
        &[],
    );
    assert!(ok, "abi-proofs with the feature forwarded failed:\n{out}");
}

/// abi-proofs' build script, built by a cargo build of abi-proofs (no CUDA):
/// the binary, to be run by hand with metadata of the test's choosing.
fn abi_proofs_build_script() -> std::path::PathBuf {
    let (ok, out) = build_with_args(&["-p", "abi-proofs"], &[]);
    assert!(ok, "the build of abi-proofs failed:\n{out}");
    let build = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/build-errors/debug/build");
    // The one just built: other builds (other features) left theirs beside it.
    std::fs::read_dir(&build)
        .unwrap()
        .filter_map(|d| Some(d.ok()?.path().join("build-script-main")))
        .filter(|p| p.is_file() && p.to_string_lossy().contains("abi-proofs-"))
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .unwrap_or_else(|| panic!("no abi-proofs build script in {}", build.display()))
}

/// abi-proofs' build script run by hand with cuda-mem-sys's metadata
/// `keys` (`DEP_CUDA_MEM_SYS_<key>`) and no feature: (exit code, output).
fn run_abi_proofs_build_script(
    script: &Path,
    keys: &[(&str, &std::ffi::OsStr)],
) -> (Option<i32>, String) {
    let out_dir = scratch("abi-proofs-by-hand");
    let mut cmd = Command::new(script);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.starts_with("DEP_") || k.starts_with("CARGO_FEATURE_") {
            cmd.env_remove(&*k);
        }
    }
    cmd.env(
        "CARGO_MANIFEST_DIR",
        Path::new(env!("CARGO_MANIFEST_DIR")).join("abi-proofs"),
    )
    .env("OUT_DIR", out_dir.path())
    .env("TARGET", test_support::TARGET)
    .env("HOST", test_support::HOST)
    .env("OPT_LEVEL", "0")
    .env("DEBUG", "false");
    for (k, v) in keys {
        cmd.env(format!("DEP_CUDA_MEM_SYS_{k}"), v);
    }
    let out = cmd.output().expect("running abi-proofs' build script");
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    (out.status.code(), text)
}

/// abi-proofs takes cuda-mem-sys's decisions from its metadata and refuses
/// metadata that disagrees with itself (`FALLBACK` against `BINDINGS`), a key
/// cuda-mem-sys always prints that is missing, and a per-thread default
/// stream abi-proofs was not built for, each named; the deliberately right
/// case, the committed bindings' keys in agreement, runs to its end.
fn abi_proofs_refuse_metadata_that_disagrees_with_itself_or_their_features() {
    use std::ffi::OsStr;
    let script = abi_proofs_build_script();
    let right = [
        ("VERSION_NUMBER", OsStr::new("13000")),
        ("BINDINGS", OsStr::new("committed")),
        ("FALLBACK", OsStr::new("1")),
        ("MODE", OsStr::new("linked")),
        ("PER_THREAD_DEFAULT_STREAM", OsStr::new("0")),
    ];
    let with = |key: &str, value: Option<&'static str>| {
        let mut keys: Vec<(&str, &OsStr)> =
            right.iter().filter(|(k, _)| *k != key).copied().collect();
        if let Some(v) = value {
            keys.push((key, OsStr::new(v)));
        }
        run_abi_proofs_build_script(&script, &keys)
    };
    let (code, text) = with("FALLBACK", Some("0"));
    assert_eq!(code, Some(1), "FALLBACK=0 with BINDINGS=committed:\n{text}");
    assert_clean_error(
        &text,
        &[
            "abi-proofs: cuda-mem-sys's metadata disagrees with itself: \
           DEP_CUDA_MEM_SYS_FALLBACK=0 but DEP_CUDA_MEM_SYS_BINDINGS=committed",
        ],
    );
    let (code, text) = with("BINDINGS", None);
    assert_eq!(code, Some(1), "without BINDINGS:\n{text}");
    assert_clean_error(&text, &["abi-proofs: DEP_CUDA_MEM_SYS_BINDINGS is not set"]);
    let (code, text) = with("PER_THREAD_DEFAULT_STREAM", Some("1"));
    assert_eq!(code, Some(1), "a per-thread default stream:\n{text}");
    assert_clean_error(
        &text,
        &[
            "cuda-mem-sys was built otherwise than these proofs assume: per-thread default \
           stream on there, off here",
        ],
    );
    let (code, text) = run_abi_proofs_build_script(&script, &right);
    assert_eq!(code, Some(0), "with agreeing keys:\n{text}");
    assert!(
        text.contains("cargo:rustc-cfg=cuda_mem_sys_fallback"),
        "the committed bindings' keys did not give the fallback cfg:\n{text}"
    );
}

/// `INCLUDE` and `VERSION_NUMBER` must describe one release: abi-proofs,
/// generating from `INCLUDE` (the committed bindings' 13.0 headers), refuses
/// a `VERSION_NUMBER` of 12.9, naming both; the deliberately right case,
/// 13000, generates and runs to its end.
fn abi_proofs_refuse_headers_of_another_release_than_version_number() {
    use std::ffi::OsStr;
    let include = committed_headers().expect("the committed bindings' headers");
    let script = abi_proofs_build_script();
    let keys = |version: &'static str| {
        [
            ("VERSION_NUMBER", OsStr::new(version)),
            ("BINDINGS", OsStr::new("generated")),
            ("FALLBACK", OsStr::new("0")),
            ("MODE", OsStr::new("linked")),
            ("PER_THREAD_DEFAULT_STREAM", OsStr::new("0")),
            ("INCLUDE", include.as_os_str()),
        ]
    };
    let (code, text) = run_abi_proofs_build_script(&script, &keys("12090"));
    assert_eq!(
        code,
        Some(1),
        "13.0 headers with VERSION_NUMBER=12090:\n{text}"
    );
    assert_clean_error(
        &text,
        &[
            "abi-proofs: cuda-mem-sys's metadata disagrees with itself: \
           DEP_CUDA_MEM_SYS_INCLUDE holds headers of CUDA_VERSION 13000, \
           DEP_CUDA_MEM_SYS_VERSION_NUMBER says 12090",
        ],
    );
    let (code, text) = run_abi_proofs_build_script(&script, &keys("13000"));
    assert_eq!(
        code,
        Some(0),
        "13.0 headers with VERSION_NUMBER=13000:\n{text}"
    );
    assert!(
        !text.contains("cargo:rustc-cfg=cuda_mem_sys_fallback"),
        "generated bindings gave the fallback cfg:\n{text}"
    );
}

/// A CUDA variable that is set but not valid UTF-8 is named as such; it is
/// not taken as unset (which would build against something else, or the
/// fallback, without a word).
#[cfg(unix)]
fn a_cuda_variable_that_is_not_utf8_is_named_not_taken_as_unset() {
    use std::os::unix::ffi::OsStrExt;
    let not_utf8 = Path::new(std::ffi::OsStr::from_bytes(b"/tmp/cuda-\xff-not-utf8"));
    for var in [
        test_support::INCLUDE_DIR_VAR,
        "CUDA_PATH",
        "CUDA_MEM_SYS_LIB_DIR",
    ] {
        // Cargo does not see a change of a variable to a value that is not
        // UTF-8 (its fingerprint reads it as text), so a build script that
        // ran before is not run again: a fresh LIBCLANG_PATH (never reached:
        // the search fails first) makes it run.
        let rerun = scratch("not-utf8-rerun");
        let (ok, stderr) = build_with(&[(var, not_utf8), ("LIBCLANG_PATH", rerun.path())]);
        assert!(
            !ok,
            "{var} not valid UTF-8: the build succeeded (taken as unset):\n{stderr}"
        );
        assert_clean_error(
            &stderr,
            &[&format!(
                "{var} is set but is not valid UTF-8 (/tmp/cuda-\u{fffd}-not-utf8)"
            )],
        );
    }
}

/// The tests by name (a macro: each test is named once); those that need
/// the committed bindings' headers report themselves ignored, with the
/// reason, where the crate was built with others.
fn main() {
    use libtest_mimic::{Arguments, Completion, Trial};
    macro_rules! test {
        ($f:ident) => {
            Trial::test(stringify!($f), || {
                $f();
                Ok(())
            })
        };
    }
    macro_rules! with_committed_headers {
        ($f:ident, $why:expr) => {
            Trial::ignorable_test(stringify!($f), || {
                if committed_headers().is_none() {
                    return Ok(Completion::ignored_with($why));
                }
                $f();
                Ok(Completion::Completed)
            })
        };
    }
    const COMMITTED: &str =
        "needs the headers of the committed bindings: `cargo xtask headers 13.0`";
    #[allow(unused_mut)]
    let mut trials = vec![
        test!(an_include_dir_without_cuda_h_is_named),
        test!(a_cuda_path_that_points_nowhere_is_named),
        test!(headers_older_than_12_0_are_refused),
        test!(missing_libclang_is_named_with_the_package_to_install),
        test!(missing_libclang_with_headers_of_a_committed_release_uses_its_committed_bindings),
        test!(without_bindgen_headers_of_a_committed_release_declare_that_release),
        test!(without_bindgen_headers_of_an_unseen_release_are_refused_naming_the_fixes),
        test!(without_bindgen_dynamic_loading_takes_an_unseen_release_as_the_newest_below_and_links_nothing_of_it),
        test!(without_bindgen_headers_of_the_committed_release_build_without_libclang),
        test!(an_include_dir_without_cuda_runtime_api_h_is_named),
        test!(an_include_dir_without_crt_host_defines_h_is_named),
        test!(a_stray_cuda_tree_two_levels_up_is_named_by_the_build),
        test!(a_cuda_h_that_does_not_preprocess_is_named),
        test!(scratch_folders_are_removed_even_when_a_test_panics),
        with_committed_headers!(the_committed_bindings_stand_in_for_their_very_headers_only, COMMITTED),
        with_committed_headers!(build_timings_are_said_only_when_asked, COMMITTED),
        with_committed_headers!(
            only_the_abi_proofs_build_makes_the_abi_test_inputs,
            "needs CUDA 13.0 headers and libclang: `cargo xtask headers 13.0`"
        ),
        test!(a_build_script_run_without_cargos_variables_names_the_missing_one),
        test!(abi_proofs_built_otherwise_than_cuda_mem_sys_are_refused),
        test!(abi_proofs_refuse_metadata_that_disagrees_with_itself_or_their_features),
        with_committed_headers!(
            abi_proofs_refuse_headers_of_another_release_than_version_number,
            "needs CUDA 13.0 headers and libclang: `cargo xtask headers 13.0`"
        ),
    ];
    #[cfg(unix)]
    trials.push(test!(
        a_cuda_variable_that_is_not_utf8_is_named_not_taken_as_unset
    ));
    libtest_mimic::run(&Arguments::from_args(), trials).exit();
}
