//! What a dependent sees: a crate that depends on cuda-mem-sys
//! (`tests/fixtures/dependent`, copied into a scratch folder) is built by a
//! nested `cargo check` in every mode, and its build script's
//! `DEP_CUDA_MEM_SYS_*` keys must tell one story (the contract: [`contract`]),
//! the values each mode must give, and `cuda_mem_sys::BUILD` must agree with
//! them (the dependent checks that while it compiles). Then what reruns the
//! build script: an unrelated `PATH` change does not, a changed
//! `CUDA_MEM_SYS_INCLUDE_DIR` does, and so does a `PATH` change where CUDA
//! was found through nvcc on `PATH`.
//!
//! The builds share one target folder (`target/dependent`) and run one at a
//! time; each has its own `TMPDIR`. They need the cached headers of 13.0 and
//! 12.9 (`target/cuda-headers`, `cargo xtask headers 13.0`, `... 12.9`), or
//! `CUDA_MEM_SYS_TEST_HEADERS` naming that folder; without them the tests
//! report themselves ignored.

use test_support as abi_support;

use abi_support::{scratch, Scratch};
use libtest_mimic::{Arguments, Completion, Failed, Trial};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The nested builds share a target folder: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

/// The keys always printed (`INCLUDE` is the one that may be absent).
const ALWAYS: [&str; 7] = [
    "VERSION_NUMBER",
    "BINDINGS",
    "FALLBACK",
    "FOUND_BY",
    "MODE",
    "PER_THREAD_DEFAULT_STREAM",
    "NOT_IN_HEADERS",
];

/// No line of generated bindings but a doc attribute is longer than this.
/// Each line holds one item's head, attribute, field, statement or array row;
/// the longest such line of 12.9's or 13.0's bindings is the
/// `flag_operators!` call naming every flag type (about 1.2 KB). 4 KiB
/// leaves room for later releases; the layout it replaces put the whole file
/// (3.4 MB) on one line, and one module's re-exports alone exceed 60 KB. A
/// doc attribute is one string literal (NVIDIA's text, up to about 23 KB)
/// and is left whole: no compiler note points into one.
const LONGEST_LINE: usize = 4096;

fn main() {
    let args = Arguments::from_args();
    let trials = vec![
        Trial::test("a_disagreeing_key_fails_the_contract", || {
            wrong_keys_are_caught().map_err(Failed::from)
        }),
        Trial::test("generated_bindings_come_one_item_a_line", || {
            line_check_catches_one_line().map_err(Failed::from)
        }),
        Trial::test("build_says_what_it_is_in_one_line", || {
            build_line().map_err(Failed::from)
        }),
        Trial::ignorable_test("every_mode_tells_one_story_in_metadata_and_build", || {
            guarded(every_mode)
        }),
        Trial::ignorable_test(
            "path_reruns_the_build_script_only_where_it_found_cuda",
            || guarded(reruns),
        ),
    ];
    libtest_mimic::run(&args, trials).exit();
}

fn guarded(f: fn(&Headers) -> Result<(), String>) -> Result<Completion, Failed> {
    let headers = match Headers::find() {
        Ok(h) => h,
        Err(why) => return Ok(Completion::Ignored { reason: Some(why) }),
    };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    f(&headers)
        .map(|()| Completion::Completed)
        .map_err(Failed::from)
}

/// The cached headers the modes build against.
struct Headers {
    v13_0: PathBuf,
    v12_9: PathBuf,
}

/// What the committed 13.0 bindings declare beyond 13.0.48's and 13.0.88's
/// headers (`build/release.rs`, `PATCH_DIFFERENCES`), as
/// `DEP_CUDA_MEM_SYS_NOT_IN_HEADERS` lists it.
const EARLIER_13_0: &str = "cudaEmulationMantissaControl_t,cudaEmulationSpecialValuesSupport_t,\
     CUDA_EMULATION_MANTISSA_CONTROL_DYNAMIC,CUDA_EMULATION_MANTISSA_CONTROL_FIXED,\
     CUDA_EMULATION_SPECIAL_VALUES_SUPPORT_DEFAULT,CUDA_EMULATION_SPECIAL_VALUES_SUPPORT_NONE,\
     CUDA_EMULATION_SPECIAL_VALUES_SUPPORT_INFINITY,CUDA_EMULATION_SPECIAL_VALUES_SUPPORT_NAN";

/// A copy of `v13_0` in `dir` whose `library_types.h` is 13.0.88's: the two
/// emulation enums 13.0.96 added taken out (their blocks and `typedef`
/// lines).
fn earlier_patch(v13_0: &Path, dir: &Path) -> Result<PathBuf, String> {
    let text = std::fs::read_to_string(v13_0.join("library_types.h"))
        .map_err(|e| format!("{}: {e}", v13_0.display()))?;
    let mut out = String::new();
    let mut skipping = false;
    for line in text.lines() {
        if line.starts_with("typedef enum cudaEmulationMantissaControl_t")
            || line.starts_with("typedef enum cudaEmulationSpecialValuesSupport_t")
        {
            // A block's head, or the C-only `typedef enum X X;` line.
            skipping = !line.ends_with(';');
            continue;
        }
        if skipping {
            skipping = !line.starts_with('}');
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    if out.contains("cudaEmulationMantissaControl_t") {
        return Err("library_types.h still names cudaEmulationMantissaControl_t".into());
    }
    let copy = dir.join("13.0-earlier-patch");
    copy_tree(v13_0, &copy).map_err(|e| format!("copying {}: {e}", v13_0.display()))?;
    std::fs::write(copy.join("library_types.h"), out).map_err(|e| e.to_string())?;
    Ok(copy)
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        if e.file_type()?.is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()))?;
        } else {
            std::fs::copy(e.path(), to.join(e.file_name()))?;
        }
    }
    Ok(())
}

impl Headers {
    fn find() -> Result<Headers, String> {
        let root = std::env::var_os("CUDA_MEM_SYS_TEST_HEADERS")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(MANIFEST).join("target/cuda-headers"));
        let h = Headers {
            v13_0: root.join("13.0/nvidia/cu13/include"),
            v12_9: root.join("12.9/nvidia/cuda_runtime/include"),
        };
        for (dir, release) in [(&h.v13_0, "13.0"), (&h.v12_9, "12.9")] {
            if !dir.join("cuda.h").is_file() {
                return Err(format!(
                    "needs the CUDA {release} headers in {}: `cargo xtask headers {release}`",
                    dir.display()
                ));
            }
        }
        Ok(h)
    }
}

/// Where CUDA would be found with no variable set, if anywhere: the no-CUDA
/// modes cannot be made there.
fn cuda_found_by_default() -> Option<String> {
    let nvcc = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).find(|d| d.join("nvcc").is_file()));
    if let Some(bin) = nvcc {
        return Some(format!("nvcc on PATH in {}", bin.display()));
    }
    ["/usr/local/cuda", "/opt/cuda"]
        .into_iter()
        .find(|r| Path::new(r).exists())
        .map(String::from)
}

/// The dependent, copied into a scratch folder (its `TMPDIR` beside it).
struct Dependent {
    dir: Scratch,
}

impl Dependent {
    fn new() -> Dependent {
        let dir = scratch("dependent");
        let fixture = Path::new(MANIFEST).join("tests/fixtures/dependent");
        let manifest = std::fs::read_to_string(fixture.join("Cargo.toml.in"))
            .unwrap()
            .replace("@CRATE@", &MANIFEST.replace('\\', "/"));
        std::fs::write(dir.path().join("Cargo.toml"), manifest).unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        for f in ["build.rs", "src/lib.rs"] {
            std::fs::copy(fixture.join(f), dir.path().join(f)).unwrap();
        }
        // The workspace's lock: the same versions, and no registry asked.
        std::fs::copy(
            Path::new(MANIFEST).join("Cargo.lock"),
            dir.path().join("Cargo.lock"),
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("tmp")).unwrap();
        Dependent { dir }
    }

    /// `cargo check` of the dependent with `args`, every CUDA variable unset
    /// but those of `env`; (success, stderr and stdout).
    fn check(&self, args: &[&str], env: &[(&str, OsString)]) -> (bool, String) {
        let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cmd.current_dir(self.dir.path())
            .args(["check", "--offline", "--message-format=json", "-v"])
            .args(args)
            .env(
                "CARGO_TARGET_DIR",
                Path::new(MANIFEST).join("target/dependent"),
            )
            .env("TMPDIR", self.dir.path().join("tmp"));
        for var in [
            "CUDA_MEM_SYS_INCLUDE_DIR",
            "CUDA_PATH",
            "CUDA_HOME",
            "CUDA_ROOT",
            "CUDA_TOOLKIT_ROOT_DIR",
            "CUDA_MEM_SYS_LIB_DIR",
            "CUDA_MEM_SYS_BUILD_TIMINGS",
            "FIXTURE_LIE",
        ] {
            cmd.env_remove(var);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("running cargo");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned()
                + &String::from_utf8_lossy(&out.stdout),
        )
    }
}

/// The `OUT_DIR` of `package`'s build script in a `--message-format=json` build's output.
fn out_dir_of(output: &str, package: &str) -> Result<PathBuf, String> {
    let id = format!("#{package}@");
    let line = output
        .lines()
        .find(|l| l.contains("\"reason\":\"build-script-executed\"") && l.contains(&id))
        .ok_or_else(|| format!("no build-script-executed message of {package} in:\n{output}"))?;
    let at = line.split("\"out_dir\":\"").nth(1).unwrap();
    Ok(at[..at.find('"').unwrap()].into())
}

/// The keys the dependent's build script read (its `OUT_DIR/keys.txt`).
fn keys_read(output: &str) -> Result<BTreeMap<String, String>, String> {
    let file = out_dir_of(output, "cuda-mem-sys-dependent")?.join("keys.txt");
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect())
}

/// Whether cuda-mem-sys's build set the `cuda_mem_sys_fallback` cfg (its
/// recorded output, beside its `OUT_DIR`).
fn fallback_cfg(output: &str) -> Result<bool, String> {
    let file = out_dir_of(output, "cuda-mem-sys")?.with_file_name("output");
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(text
        .lines()
        .any(|l| l == "cargo:rustc-cfg=cuda_mem_sys_fallback"))
}

/// `CUDA_VERSION` as an include folder's `cuda.h` defines it.
fn headers_release(include: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(include.join("cuda.h")).ok()?;
    text.lines().find_map(|l| {
        l.trim()
            .strip_prefix("#define CUDA_VERSION ")
            .and_then(|v| v.trim().parse().ok())
    })
}

/// The contract (issue 28) over the keys a dependent read, and the
/// `cuda_mem_sys_fallback` cfg of the same build.
fn contract(keys: &BTreeMap<String, String>, fallback_cfg: bool) -> Result<(), String> {
    let key = |k: &str| {
        keys.get(k)
            .map(String::as_str)
            .ok_or_else(|| format!("DEP_CUDA_MEM_SYS_{k} is absent: {keys:?}"))
    };
    for k in ALWAYS {
        key(k)?;
    }
    let version: u32 = key("VERSION_NUMBER")?
        .parse()
        .map_err(|_| format!("VERSION_NUMBER is not a number: {keys:?}"))?;
    let bindings = key("BINDINGS")?;
    if !["generated", "committed-same-headers", "committed"].contains(&bindings) {
        return Err(format!("BINDINGS={bindings} is none of its values"));
    }
    let fallback = match key("FALLBACK")? {
        "0" => false,
        "1" => true,
        other => return Err(format!("FALLBACK={other} is neither 0 nor 1")),
    };
    if fallback != (bindings == "committed") {
        return Err(format!(
            "FALLBACK={} but BINDINGS={bindings}",
            u8::from(fallback)
        ));
    }
    if fallback != fallback_cfg {
        return Err(format!(
            "FALLBACK={} but the cuda_mem_sys_fallback cfg is {}",
            u8::from(fallback),
            if fallback_cfg { "set" } else { "not set" }
        ));
    }
    if let Some(include) = keys.get("INCLUDE") {
        let dirs: Vec<PathBuf> = std::env::split_paths(include).collect();
        if let Some(missing) = dirs.iter().find(|d| !d.is_dir()) {
            return Err(format!("INCLUDE names {}, no folder", missing.display()));
        }
        let found = dirs.first().and_then(|d| headers_release(d));
        if found != Some(version) {
            return Err(format!(
                "INCLUDE={include} holds the headers of CUDA_VERSION {found:?}, but \
                 VERSION_NUMBER={version}: C compiled against INCLUDE would not match the \
                 Rust declarations"
            ));
        }
    }
    if key("FOUND_BY")?.is_empty() {
        return Err("FOUND_BY is empty (`none` says none was found)".into());
    }
    if keys.contains_key("INCLUDE") && key("FOUND_BY")? == "none" {
        return Err("INCLUDE is set but FOUND_BY=none".into());
    }
    let mode = key("MODE")?;
    if !["linked", "loaded-driver,static-runtime", "loaded"].contains(&mode) {
        return Err(format!("MODE={mode} is none of its values"));
    }
    if !["0", "1"].contains(&key("PER_THREAD_DEFAULT_STREAM")?) {
        return Err("PER_THREAD_DEFAULT_STREAM is neither 0 nor 1".into());
    }
    // Only committed bindings standing in for other headers can declare
    // what those headers lack.
    if !key("NOT_IN_HEADERS")?.is_empty() && !fallback {
        return Err(format!(
            "NOT_IN_HEADERS={} but BINDINGS={bindings}: only committed bindings standing in \
             can differ from the headers found",
            key("NOT_IN_HEADERS")?
        ));
    }
    Ok(())
}

/// What one mode must give.
struct Expected {
    version: &'static str,
    bindings: &'static str,
    include: bool,
    /// `FOUND_BY` starts with this (`none`: is `none`).
    found_by: &'static str,
    mode: &'static str,
    ptds: &'static str,
    /// `NOT_IN_HEADERS` (comma-separated; empty: none).
    not_in_headers: &'static str,
}

/// One build of the dependent: its features, the headers, what it must say.
struct Mode {
    name: &'static str,
    args: &'static [&'static str],
    headers: Option<PathBuf>,
    /// `CUDA_MEM_SYS_ALWAYS_GENERATE` set: generated even from the very
    /// headers of committed bindings.
    always_generate: bool,
    expected: Expected,
}

/// `earlier`: 13.0's headers as an earlier patch has them ([`earlier_patch`]).
fn modes(h: &Headers, earlier: &Path) -> Vec<Mode> {
    let by_var = "CUDA_MEM_SYS_INCLUDE_DIR=";
    // Without CUDA: the committed 13.0 bindings, no headers found.
    let no_cuda = |mode, ptds| Expected {
        version: "13000",
        bindings: "committed",
        include: false,
        found_by: "none",
        mode,
        ptds,
        not_in_headers: "",
    };
    vec![
        Mode {
            name: "no CUDA",
            args: &[],
            headers: None,
            always_generate: false,
            expected: no_cuda("linked", "0"),
        },
        Mode {
            name: "13.0 headers",
            args: &[],
            headers: Some(h.v13_0.clone()),
            always_generate: false,
            expected: Expected {
                version: "13000",
                bindings: "committed-same-headers",
                include: true,
                found_by: by_var,
                mode: "linked",
                ptds: "0",
                not_in_headers: "",
            },
        },
        Mode {
            name: "13.0 headers, default-features = false",
            args: &["--no-default-features"],
            headers: Some(h.v13_0.clone()),
            always_generate: false,
            expected: Expected {
                version: "13000",
                bindings: "committed-same-headers",
                include: true,
                found_by: by_var,
                mode: "linked",
                ptds: "0",
                not_in_headers: "",
            },
        },
        Mode {
            // 13.0.88's (the 13.0 toolkit's) headers lack two emulation
            // enums 13.0.96's have: the committed 13.0 bindings stand in and
            // name what they declare beyond them.
            name: "13.0 headers of an earlier patch, default-features = false",
            args: &["--no-default-features"],
            headers: Some(earlier.to_path_buf()),
            always_generate: false,
            expected: Expected {
                version: "13000",
                bindings: "committed",
                include: true,
                found_by: by_var,
                mode: "linked",
                ptds: "0",
                not_in_headers: EARLIER_13_0,
            },
        },
        Mode {
            name: "12.9 headers, default-features = false, dynamic-loading",
            args: &["--no-default-features", "--features", "dynamic-loading"],
            headers: Some(h.v12_9.clone()),
            always_generate: false,
            expected: Expected {
                // 12.9's own committed bindings, for its very headers.
                version: "12090",
                bindings: "committed-same-headers",
                include: true,
                found_by: by_var,
                // The runtime wheel's `lib/` beside its `include/` holds
                // the static runtime from 12.9.79 on: linked where found.
                mode: if h
                    .v12_9
                    .with_file_name("lib")
                    .join("libcudart_static.a")
                    .is_file()
                {
                    "loaded-driver,static-runtime"
                } else {
                    "loaded"
                },
                ptds: "0",
                not_in_headers: "",
            },
        },
        Mode {
            name: "12.9 headers, generated",
            args: &[],
            headers: Some(h.v12_9.clone()),
            always_generate: true,
            expected: Expected {
                version: "12090",
                bindings: "generated",
                include: true,
                found_by: by_var,
                mode: "linked",
                ptds: "0",
                not_in_headers: "",
            },
        },
        Mode {
            name: "no CUDA, dynamic-loading, per-thread-default-stream",
            args: &["--features", "dynamic-loading,per-thread-default-stream"],
            headers: None,
            always_generate: false,
            expected: no_cuda("loaded", "1"),
        },
    ]
}

fn every_mode(h: &Headers) -> Result<(), String> {
    let dep = Dependent::new();
    let by_default = cuda_found_by_default();
    let earlier = scratch("metadata-earlier-patch");
    for m in modes(h, &earlier_patch(&h.v13_0, earlier.path())?) {
        if m.headers.is_none() {
            if let Some(found) = &by_default {
                eprintln!(
                    "skipped mode {:?}: CUDA is found without a variable ({found})",
                    m.name
                );
                continue;
            }
        }
        let mut env: Vec<(&str, OsString)> = m
            .headers
            .iter()
            .map(|d| ("CUDA_MEM_SYS_INCLUDE_DIR", d.clone().into_os_string()))
            .collect();
        if m.always_generate {
            env.push(("CUDA_MEM_SYS_ALWAYS_GENERATE", "1".into()));
        }
        let (ok, out) = dep.check(m.args, &env);
        if !ok {
            return Err(format!(
                "mode {:?}: the dependent did not build:\n{out}",
                m.name
            ));
        }
        let keys = keys_read(&out)?;
        let fallback = fallback_cfg(&out)?;
        contract(&keys, fallback).map_err(|e| format!("mode {:?}: {e}", m.name))?;
        let e = &m.expected;
        let said = |k: &str| keys.get(k).map(String::as_str).unwrap_or("<absent>");
        let found_by_ok = if e.found_by == "none" {
            said("FOUND_BY") == "none"
        } else {
            said("FOUND_BY").starts_with(e.found_by)
        };
        if said("VERSION_NUMBER") != e.version
            || said("BINDINGS") != e.bindings
            || keys.contains_key("INCLUDE") != e.include
            || !found_by_ok
            || said("MODE") != e.mode
            || said("PER_THREAD_DEFAULT_STREAM") != e.ptds
            || said("NOT_IN_HEADERS") != e.not_in_headers
        {
            return Err(format!(
                "mode {:?}: the keys are {keys:?}; expected VERSION_NUMBER={}, BINDINGS={}, \
                 INCLUDE {}, FOUND_BY {}, MODE={}, PER_THREAD_DEFAULT_STREAM={}, \
                 NOT_IN_HEADERS={}",
                m.name,
                e.version,
                e.bindings,
                if e.include { "set" } else { "absent" },
                e.found_by,
                e.mode,
                e.ptds,
                e.not_in_headers
            ));
        }
        if e.bindings == "generated" {
            let file = out_dir_of(&out, "cuda-mem-sys")?.join("cuda_mem_sys.rs");
            let text =
                std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
            long_lines(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        }
        eprintln!("mode {:?}: {keys:?}", m.name);
    }

    // The deliberately wrong case of the dependent's own check: a value of
    // MODE that is not BUILD's must stop it compiling, naming the key.
    let (ok, out) = dep.check(&[], &[("FIXTURE_LIE", "MODE".into())]);
    if ok || !out.contains("BUILD.mode() disagrees with DEP_CUDA_MEM_SYS_MODE") {
        return Err(format!(
            "the dependent compiled, or failed otherwise, with a MODE that is not BUILD's:\n{out}"
        ));
    }
    Ok(())
}

/// `cuda_mem_sys::BUILD`'s `Display`: one line naming the release, the
/// bindings, how CUDA was found (or that it was not) and how each library is
/// reached, each as the fields say.
fn build_line() -> Result<(), String> {
    let b = cuda_mem_sys::BUILD;
    let line = b.to_string();
    let (major, minor) = b.release();
    let found = match b.found_by {
        Some(by) => format!("found by {by}"),
        None => "no CUDA found when built".into(),
    };
    let wanted = [
        format!("CUDA {major}.{minor} ({})", b.version_number),
        format!("bindings {}", b.bindings.as_str()),
        found,
        format!("driver {}", b.driver.as_str()),
        format!("runtime {}", b.runtime.as_str()),
    ];
    if line.contains('\n') || wanted.iter().any(|w| !line.contains(w.as_str())) {
        return Err(format!(
            "BUILD says {line:?}; wanted one line with {wanted:?}"
        ));
    }
    if b.version_number != cuda_mem_sys::CUDA_VERSION {
        return Err(format!(
            "BUILD.version_number {} but the bindings' CUDA_VERSION {}",
            b.version_number,
            cuda_mem_sys::CUDA_VERSION
        ));
    }
    eprintln!("BUILD: {line}");
    Ok(())
}

/// `Ok` where every line of `text` but a doc attribute is at most
/// [`LONGEST_LINE`] long, and a doc attribute's line holds that attribute alone.
fn long_lines(text: &str) -> Result<(), String> {
    for (n, line) in text.lines().enumerate() {
        let doc = line.starts_with("# [doc = \"") && line.ends_with("\"]");
        if doc && line.matches("# [doc").count() == 1 {
            continue;
        }
        if line.len() > LONGEST_LINE {
            return Err(format!(
                "line {} is {} characters long: {}…",
                n + 1,
                line.len(),
                &line[..line.floor_char_boundary_compat(120)]
            ));
        }
    }
    Ok(())
}

/// `str::floor_char_boundary` for the crate's Rust version.
trait FloorCharBoundary {
    fn floor_char_boundary_compat(&self, i: usize) -> usize;
}

impl FloorCharBoundary for str {
    fn floor_char_boundary_compat(&self, mut i: usize) -> usize {
        i = i.min(self.len());
        while !self.is_char_boundary(i) {
            i -= 1;
        }
        i
    }
}

/// The line check's own wrong cases: the bindings on one line, and a doc
/// attribute with an item after it on its line, are refused; the committed
/// bindings (pretty-printed) pass.
fn line_check_catches_one_line() -> Result<(), String> {
    let committed = Path::new(MANIFEST).join("src/generated/cuda-13.0.rs");
    let text = std::fs::read_to_string(&committed).map_err(|e| e.to_string())?;
    long_lines(&text).map_err(|e| format!("the committed bindings: {e}"))?;
    if long_lines(&text.replace('\n', " ")).is_ok() {
        return Err("the bindings on one line passed the line check".into());
    }
    let doc_then_item = format!("# [doc = \"{}\"] pub fn f () ;", "x".repeat(LONGEST_LINE));
    if long_lines(&doc_then_item).is_ok() {
        return Err("a doc attribute with an item on its line passed the line check".into());
    }
    Ok(())
}

/// The contract's own wrong cases, each a key that disagrees with the
/// rest; the deliberately right case, the same keys agreeing, passes.
fn wrong_keys_are_caught() -> Result<(), String> {
    let h = match Headers::find() {
        Ok(h) => h,
        // Only INCLUDE's case needs headers: make two fake include folders.
        Err(_) => {
            let d = scratch("metadata-fake-headers");
            let mk = |release: &str, v: u32| {
                let dir = d.path().join(release);
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join("cuda.h"), format!("#define CUDA_VERSION {v}\n")).unwrap();
                dir
            };
            let h = Headers {
                v13_0: mk("13.0", 13000),
                v12_9: mk("12.9", 12090),
            };
            let r = wrong_keys_with(&h);
            drop(d);
            return r;
        }
    };
    wrong_keys_with(&h)
}

fn wrong_keys_with(h: &Headers) -> Result<(), String> {
    let right: BTreeMap<String, String> = [
        ("VERSION_NUMBER", "13000".to_string()),
        ("BINDINGS", "committed".into()),
        ("FALLBACK", "1".into()),
        ("INCLUDE", h.v13_0.display().to_string()),
        (
            "FOUND_BY",
            format!("CUDA_MEM_SYS_INCLUDE_DIR={}", h.v13_0.display()),
        ),
        ("MODE", "linked".into()),
        ("PER_THREAD_DEFAULT_STREAM", "0".into()),
        ("NOT_IN_HEADERS", "".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    contract(&right, true).map_err(|e| format!("the agreeing keys were refused: {e}"))?;
    let with = |k: &str, v: Option<&str>| {
        let mut keys = right.clone();
        match v {
            Some(v) => keys.insert(k.to_string(), v.to_string()),
            None => keys.remove(k),
        };
        keys
    };
    let v12_9 = h.v12_9.display().to_string();
    let mut generated = with("NOT_IN_HEADERS", Some("cudaEmulationMantissaControl_t"));
    generated.insert("BINDINGS".into(), "generated".into());
    generated.insert("FALLBACK".into(), "0".into());
    let wrong: [(&str, BTreeMap<String, String>, bool); 9] = [
        (
            "INCLUDE naming 12.9 headers while VERSION_NUMBER is 13000",
            with("INCLUDE", Some(&v12_9)),
            true,
        ),
        (
            "FALLBACK=0 with BINDINGS=committed",
            with("FALLBACK", Some("0")),
            true,
        ),
        ("FALLBACK absent", with("FALLBACK", None), true),
        ("FALLBACK=1 without the cfg", right.clone(), false),
        ("FOUND_BY absent", with("FOUND_BY", None), true),
        (
            "MODE not one of its values",
            with("MODE", Some("static")),
            true,
        ),
        (
            "PER_THREAD_DEFAULT_STREAM not 0 or 1",
            with("PER_THREAD_DEFAULT_STREAM", Some("yes")),
            true,
        ),
        ("NOT_IN_HEADERS absent", with("NOT_IN_HEADERS", None), true),
        ("NOT_IN_HEADERS set on generated bindings", generated, false),
    ];
    for (what, keys, cfg) in wrong {
        if contract(&keys, cfg).is_ok() {
            return Err(format!("the contract check passed {what}"));
        }
    }
    Ok(())
}

/// Whether cuda-mem-sys's build script ran in a `cargo -v` build (its
/// `Running` line), or was fresh (no such line, and `Fresh cuda-mem-sys v`);
/// `None` where cargo said neither.
fn script_ran(out: &str) -> Option<bool> {
    let ran = out.lines().any(|l| {
        l.contains("Running `")
            && l.split("/build/cuda-mem-sys-").skip(1).any(|rest| {
                rest.split('/').next().is_some_and(|hash| {
                    hash.chars().all(|c| c.is_ascii_hexdigit())
                        && ["/build-script-build", "/build-script-main"]
                            .iter()
                            .any(|b| rest[hash.len()..].starts_with(b))
                })
            })
    });
    // The script's own compile may be fresh while its run is not: `Fresh`
    // counts only where no run was seen.
    let fresh = out.contains("Fresh cuda-mem-sys v");
    match (ran, fresh) {
        (true, _) => Some(true),
        (false, true) => Some(false),
        (false, false) => None,
    }
}

fn reruns(h: &Headers) -> Result<(), String> {
    let dep = Dependent::new();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let with_unrelated = |path: &OsString| {
        let mut dirs: Vec<PathBuf> = std::env::split_paths(path).collect();
        dirs.push(PathBuf::from("/nonexistent/unrelated-to-cuda"));
        std::env::join_paths(dirs).unwrap()
    };
    let build = |env: &[(&str, OsString)]| -> Result<Option<bool>, String> {
        let (ok, out) = dep.check(&[], env);
        if !ok {
            return Err(format!("the build failed:\n{out}"));
        }
        Ok(script_ran(&out))
    };
    let inc = ("CUDA_MEM_SYS_INCLUDE_DIR", h.v13_0.clone().into_os_string());
    build(&[inc.clone(), ("PATH", path.clone())])?;
    // An unrelated PATH change, CUDA found by a variable: nothing reruns.
    match build(&[inc.clone(), ("PATH", with_unrelated(&path))])? {
        Some(false) => {}
        other => {
            return Err(format!(
                "after an unrelated PATH change (CUDA found by CUDA_MEM_SYS_INCLUDE_DIR) the \
                 build script ran or cargo did not say (ran: {other:?})"
            ))
        }
    }
    // The deliberately wrong case: a changed CUDA_MEM_SYS_INCLUDE_DIR (the
    // same headers through a link) runs it.
    let other = scratch("metadata-other-include");
    let link = other.path().join("include");
    link_dir(&h.v13_0, &link)?;
    match build(&[
        ("CUDA_MEM_SYS_INCLUDE_DIR", link.clone().into_os_string()),
        ("PATH", with_unrelated(&path)),
    ])? {
        Some(true) => {}
        other => {
            return Err(format!(
                "a changed CUDA_MEM_SYS_INCLUDE_DIR did not run the build script (ran: {other:?})"
            ))
        }
    }
    // CUDA found through nvcc on PATH: a PATH change reruns.
    let toolkit = scratch("metadata-nvcc-toolkit");
    let bin = toolkit.path().join("bin");
    std::fs::create_dir_all(&bin).map_err(|e| e.to_string())?;
    std::fs::write(bin.join("nvcc"), "#!/bin/sh\nexit 1\n").map_err(|e| e.to_string())?;
    link_dir(&h.v13_0, &toolkit.path().join("include"))?;
    let mut dirs = vec![bin.clone()];
    dirs.extend(std::env::split_paths(&path));
    let nvcc_path = std::env::join_paths(dirs).unwrap();
    let (ok, out) = dep.check(&[], &[("PATH", nvcc_path.clone())]);
    let keys = keys_read(&out)?;
    let by = format!("nvcc on PATH in {}", bin.display());
    if !ok || keys.get("FOUND_BY") != Some(&by) {
        return Err(format!(
            "with nvcc on PATH CUDA was not found through it ({keys:?}):\n{out}"
        ));
    }
    match build(&[("PATH", with_unrelated(&nvcc_path))])? {
        Some(true) => Ok(()),
        other => Err(format!(
            "a PATH change did not run the build script where CUDA was found through nvcc on \
             PATH (ran: {other:?})"
        )),
    }
}

/// `link` stands for the folder `to` (a symbolic link; a copy where there are none).
fn link_dir(to: &Path, link: &Path) -> Result<(), String> {
    #[cfg(unix)]
    return std::os::unix::fs::symlink(to, link).map_err(|e| e.to_string());
    #[cfg(not(unix))]
    {
        let _ = (to, link);
        Err("needs symbolic links".into())
    }
}
