//! Project tasks: `cargo xtask <command>`.

mod abi;
mod bench_build;
mod build_cost;
mod changes;
mod ci;
mod cmd;
#[allow(dead_code)]
#[path = "../../build/codegen/mod.rs"]
mod codegen;
mod device_compile;
mod device_report;
mod docs_rs;
mod examples;
mod gpu_bundle;
mod headers;
#[allow(dead_code)]
#[path = "../../build/locate.rs"]
mod locate;
// The generator's syn-free helpers, beside it (it reads them as `super::`).
#[allow(dead_code)]
#[path = "../../build/preprocess.rs"]
mod preprocess;
mod regen;
#[allow(dead_code)]
#[path = "../../build/release.rs"]
mod release;
// The build script's `CUDA_MEM_SYS_BUILD_TIMINGS` lines, read by bench-build.
#[allow(dead_code)] // what writes them serves the build script
#[path = "../../build/timings.rs"]
mod timings;

use cmd::workspace;
use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask <command>
  headers <version> [--target <triple>]
                         fetch CUDA <version>'s headers and libcudart (12.0 ... 13.5) into
                         target/cuda-headers/ and print the include directory; for another
                         target (aarch64-unknown-linux-gnu, x86_64-pc-windows-gnu) its wheels,
                         into target/cuda-headers/<triple>/<version>/
  demo                   install libclang if missing, fetch the CUDA 13.0 headers, build
                         and run examples/demo.rs
  ci                     the whole test suite as CI runs it (installs what it needs)
  ci --cross             only its aarch64 Linux (qemu) and Windows x86_64 (MinGW, wine) part
  msrv                   check the library with the toolchain of Cargo.toml's rust-version (no
                         CUDA, the 13.0 headers, no bindgen, a generating loaded build; a step of `ci`)
  examples               build every example and run each without a GPU, expecting its
                         documented `no GPU:` line and exit code (a step of `ci`)
  regen                  regenerate the committed fallback bindings (src/generated/) from the
                         pinned release's headers
  bench-build [--runs N] clean and no-op build times beside cudarc 0.19, the build script's
                         steps and the build-time budget's checks (docs/build-times.md;
                         median of N runs, 3 unless told)
  build-cost             CI's build-cost checks alone: no duplicated dependency, a
                         default-features = false dependent builds without libclang or bindgen
  gpu-bundle             build every test binary against the CUDA 13.0 headers into
                         .gpu-bundle/ with run.sh, for a GPU machine without Rust
  device-compile [--examples-only|--tests-only] (--all | --ci | <release>|unseen ...)
                         compile the device tests (cargo test --no-run) and the examples
                         against each release's headers, linked and with dynamic-loading;
                         `unseen`: headers claiming CUDA 13.7, a release the crate does not
                         know; --ci: 12.0 12.2 12.8 13.0 13.2 13.5 unseen (a step of `ci`)
  gpu-bundle --matrix [--examples-only] [<release>[:<binary>,...]...]
                         the release matrix: device tests and examples of every release
                         (or those named), linked and loaded (+ per-thread default stream
                         for 12.0 12.9 13.5), in .gpu-bundle-matrix/part-<n>.tar.xz files
                         that fit one GPU call each; matrix.sh runs a part. A release
                         named with binaries gets only those, no examples (a re-run)
  device-report <dir>... Markdown for docs/device-results.md from what run.sh wrote in <dir>s:
                         bad-input table, process-death figures, compute-sanitizer counts
  abi <version>...       build against each release's headers and check the bindings' layout and
                         constants against the C compiler (abi-proofs/tests/abi_layout.rs) and stable names
                         (tests/stable_names.rs); `fallback`: the committed bindings
  abi --all              every release 12.0 ... 13.5 and the fallback; writes docs/abi-report.md
  abi --target <triple> <version>... | --all
                         the same built for aarch64-unknown-linux-gnu (run under qemu-aarch64) or
                         x86_64-pc-windows-gnu (under wine); writes that target's section of
                         docs/abi-report.md (the releases run)
  changes                docs/release-changes.md: what changed between releases in the five groups
                         (from the bindings `abi --all` leaves in target/abi/)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["headers", release] => {
            headers::fetch(&workspace(), release).map(|dir| println!("{}", dir.display()))
        }
        ["headers", release, "--target", target] | ["headers", "--target", target, release] => {
            headers::fetch_for(&workspace(), release, target)
                .map(|dir| println!("{}", dir.display()))
        }
        ["demo"] => ci::demo(&workspace()),
        ["ci"] => ci::run(&workspace()),
        ["ci", "--cross"] => ci::cross(&workspace()),
        ["examples"] => ci::examples(&workspace()),
        ["msrv"] => ci::msrv_alone(&workspace()),
        ["regen"] => regen::run(&workspace()),
        ["bench-build"] => bench_build::run(&workspace(), 3),
        ["bench-build", "--runs", n] => match n.parse() {
            Ok(n) if n > 0 => bench_build::run(&workspace(), n),
            _ => Err(format!("--runs takes a number of runs above 0, not {n:?}")),
        },
        ["build-cost"] => build_cost::check(&workspace()),
        ["gpu-bundle"] => gpu_bundle::run(&workspace()),
        ["gpu-bundle", "--matrix", rest @ ..] => gpu_bundle::matrix(&workspace(), rest),
        ["device-compile", rest @ ..] => device_compile::run(&workspace(), rest),
        ["device-report", rest @ ..] => device_report::run(&workspace(), rest),
        ["abi", rest @ ..] => abi::run(&workspace(), rest),
        ["changes"] => changes::run(&workspace()),
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    /// The names a module's source reaches through `crate::` (`crate::a::f`,
    /// `use crate::{a, b::c}`): their first segments.
    fn crate_references(src: &str) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        let ident = |s: &str| -> String {
            s.trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        };
        for (i, _) in src.match_indices("crate::") {
            let rest = &src[i + "crate::".len()..];
            if let Some(list) = rest.strip_prefix('{') {
                let list = &list[..list.find('}').unwrap_or(list.len())];
                names.extend(list.split(',').map(ident).filter(|n| !n.is_empty()));
            } else {
                names.insert(ident(rest));
            }
        }
        names
    }

    /// A circle in `graph` (module → modules it imports), if there is one.
    fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
        fn visit(
            node: &str,
            graph: &BTreeMap<String, BTreeSet<String>>,
            path: &mut Vec<String>,
            done: &mut BTreeSet<String>,
        ) -> Option<Vec<String>> {
            if let Some(at) = path.iter().position(|n| n == node) {
                let mut c = path[at..].to_vec();
                c.push(node.to_string());
                return Some(c);
            }
            if !done.insert(node.to_string()) {
                return None;
            }
            path.push(node.to_string());
            for next in graph.get(node).into_iter().flatten() {
                if let Some(c) = visit(next, graph, path, done) {
                    return Some(c);
                }
            }
            path.pop();
            None
        }
        let mut done = BTreeSet::new();
        graph
            .keys()
            .find_map(|n| visit(n, graph, &mut vec![], &mut done))
    }

    /// Each file of xtask/src but main.rs, with the modules and other names it
    /// reaches through `crate::`.
    fn xtask_imports() -> (BTreeSet<String>, BTreeMap<String, BTreeSet<String>>) {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let main = std::fs::read_to_string(src.join("main.rs")).unwrap();
        // The modules main.rs declares (its own files and the generator's mounts).
        let modules: BTreeSet<String> = main
            .lines()
            .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
            .map(str::to_string)
            .collect();
        let mut graph = BTreeMap::new();
        for entry in std::fs::read_dir(&src).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            if name != "main" && path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                graph.insert(name, crate_references(&text));
            }
        }
        (modules, graph)
    }

    #[test]
    fn no_task_imports_from_main_and_the_tasks_import_no_circle() {
        let (modules, graph) = xtask_imports();
        assert!(
            modules.contains("cmd") && modules.contains("ci") && graph.contains_key("abi"),
            "the check does not see xtask's modules: {modules:?}"
        );
        for (module, names) in &graph {
            let up: Vec<&String> = names.iter().filter(|n| !modules.contains(*n)).collect();
            assert!(
                up.is_empty(),
                "{module}.rs imports {up:?} from main.rs (the plumbing lives in cmd.rs)"
            );
        }
        let graph: BTreeMap<String, BTreeSet<String>> = graph
            .into_iter()
            .map(|(m, names)| {
                (
                    m,
                    names.into_iter().filter(|n| modules.contains(n)).collect(),
                )
            })
            .collect();
        assert_eq!(circle(&graph), None, "xtask's modules import in a circle");
        // The build's mounted modules (`locate`, ...) are no tasks.
        let tasks: Vec<&String> = graph["cmd"]
            .iter()
            .filter(|n| graph.contains_key(*n))
            .collect();
        assert!(tasks.is_empty(), "cmd.rs imports tasks: {tasks:?}");
    }

    /// The deliberately wrong cases: an import back up and a circle are seen.
    #[test]
    fn the_import_check_sees_a_circle_and_an_import_from_main() {
        let refs = crate_references(
            "use crate::{ci, headers::fetch};\nfn f() { crate::run_cmd(x); crate::abi::run(); }",
        );
        let expected: BTreeSet<String> =
            ["abi", "ci", "headers", "run_cmd"].map(String::from).into();
        assert_eq!(refs, expected);
        let graph = |edges: &[(&str, &str)]| {
            let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for (a, b) in edges {
                g.entry(a.to_string()).or_default().insert(b.to_string());
            }
            g
        };
        assert_eq!(
            circle(&graph(&[("abi", "ci"), ("ci", "abi"), ("ci", "headers")])),
            Some(vec!["abi".into(), "ci".into(), "abi".into()])
        );
        assert_eq!(
            circle(&graph(&[("abi", "cmd"), ("ci", "abi"), ("ci", "cmd")])),
            None
        );
    }
}
