//! Project tasks: `cargo xtask <command>`.

//!
//! The tasks stand in wings, each a folder: [`gpu_lab`] (what runs on GPUs
//! and the report of its runs), [`abi`] (the C-compiler proofs), [`ci`] (the
//! CI steps), [`bench_build`] (the build-time measurements). Beside them the
//! plumbing every task shares ([`cmd`], [`headers`], [`releases`]) and the
//! one-file tasks ([`changes`], [`regen`]). A wing imports the plumbing,
//! other wings below it and the `generator` package; nothing imports from
//! this file (a unit test checks).

mod abi;
mod bench_build;
mod changes;
mod ci;
mod cmd;
mod gpu_lab;
mod headers;
mod mutants;
mod patches;
mod regen;
mod releases;

use abi::{libclang22, msvc};
use ci::{build_cost, fuzz_elf, valgrind, wrap};
use cmd::workspace;
use std::process::ExitCode;

/// Every command, one line each: (synopsis, what it does). `help` prints
/// them; an unknown word prints them and fails.
const COMMANDS: [(&str, &str); 27] = [
    ("help, -h, --help", "this list"),
    ("headers <release> [--target <triple>]", "fetch a release's headers and libcudart (pip wheels) into target/cuda-headers/, print the include folder"),
    ("demo", "install libclang if missing, fetch the pinned headers, build and run examples/demo.rs"),
    ("ci", "the whole test suite as CI runs it (installs what it needs)"),
    ("ci --cross", "only CI's aarch64 Linux (qemu) and Windows x86_64 (MinGW, wine) part"),
    ("loom", "model-check the loader's synchronisation (loader-model/, src/loader/once.rs) with loom (a step of `ci`)"),
    ("valgrind", "the loader's first call on 32 threads under valgrind's DRD and helgrind, 0 errors, and its wrong twin caught (a step of `ci`)"),
    ("fuzz-elf [--seconds N]", "the loader's ELF reader (src/loader/elf/): its unit tests in a release build, then libFuzzer for N s (60; a step of `ci`)"),
    ("msrv", "check the library with Cargo.toml's rust-version toolchain (a step of `ci`)"),
    ("examples", "build every example and run each without a GPU, expecting its `no GPU:` line (a step of `ci`)"),
    ("regen [--check | --reuse] [<release>...]", "regenerate the committed bindings (src/generated/) of every release, target family and stream mode from the wheels' headers; --check compares instead, byte for byte; --reuse rewrites them from the last run's texts"),
    ("patches", "every patch version of each release from the package index, generated and compared with the committed bindings: docs/patch-versions.md"),
    ("regen-variant <release> <triple> plain|ptds <include> <out>", "one variant's texts into <out> (what regen starts, once per variant)"),
    ("bench-build [--runs N]", "clean and no-op build times beside cudarc, the build script's steps, the budget's checks (docs/build-times.md)"),
    ("build-cost", "CI's build-cost checks: no duplicated dependency, no bindgen or libclang without the feature"),
    ("gpu-bundle", "build every device test against the pinned headers into .gpu-bundle/ with run.sh"),
    ("gpu-bundle --matrix [--examples-only] [--no-bindgen] [<release>[:<binary>,...]...]", "the release matrix's device tests and examples, in parts for one GPU call each"),
    ("device-compile [--examples-only|--tests-only] (--all | --ci | <release>|unseen ...)", "compile the device tests and examples against releases' headers, linked and loaded"),
    ("device-report [--check | <dir>...]", "docs/device-results.md's table from records/device-runs/ (with dirs: a run's bad-input, process-death and sanitizer Markdown)"),
    ("abi <release>... | --all", "check the bindings' layout and constants against the C compiler per release (`fallback`: the committed bindings); --all writes docs/abi-report.md"),
    ("abi --target <triple> (<release>... | --all)", "the same for aarch64-unknown-linux-gnu (qemu) or x86_64-pc-windows-gnu (wine); aarch64-pc-windows-msvc (13.4, 13.5): compile-time proofs only"),
    ("msvc [<release>... | --all]", "x86_64-pc-windows-msvc with no file from Microsoft (clang in MSVC mode, lld-link, Wine's DLLs, wine): ABI checks, DLL search, every example and test compiled, the device tests run (each ignored, Linux's names), the wrapper (13.0 unless told; a step of `ci --cross`)"),
    ("libclang22 [<release>...]", "the bindings generated with libclang 22 against libclang 19's, item by item (installs libclang-22-dev if missing; CI's ABI releases unless told; a step of `ci`)"),
    ("changes", "docs/release-changes.md: what changed between releases in the five groups"),
    ("mutants [--shard k/n] [--file <glob>]... [--timeout <s>] [--no-baseline] [--iterate] [--groups <a,b>] [--in-diff <file>] [--list] | --summary <dir>...", "cargo-mutants (installed if missing) over src/loader/ and build/, each mutant against the tests without a GPU that compile it, in shards (k from 0), a timeout per mutant; --groups: only those (cheap ones first, then --iterate for the rest); --in-diff: only the lines a diff adds or changes; --summary: the per-file table (docs/mutation-testing.md)"),
    ("wrap-check", "the wrapper crate (wrap/) against 12.0 12.9 13.0 13.5 and an unseen release, linked and loaded, and from the packaged .crate (a step of `ci`)"),
    ("(any command) -h | --help", "this list, nothing run"),
];

/// The list `help` prints.
fn usage() -> String {
    let mut text = String::from("usage: cargo xtask <command>\n");
    for (synopsis, what) in COMMANDS {
        text.push_str(&format!("  {synopsis:<40} {what}\n"));
    }
    text
}

/// A command with its arguments, checked: nothing has been made yet.
#[derive(Debug, PartialEq)]
enum Task<'a> {
    Help,
    Headers {
        release: &'a str,
        target: &'a str,
    },
    Demo,
    Ci,
    CiCross,
    Examples,
    Msrv,
    Loom,
    Valgrind,
    FuzzElf(&'a [&'a str]),
    Regen(&'a [&'a str]),
    RegenVariant(&'a [&'a str]),
    Patches,
    BenchBuild(usize),
    BuildCost,
    GpuBundle,
    GpuMatrix(&'a [&'a str]),
    DeviceCompile(&'a [&'a str]),
    DeviceReport(&'a [&'a str]),
    Abi(&'a [&'a str]),
    Msvc(&'a [&'a str]),
    Changes,
    WrapCheck,
    Libclang22(&'a [&'a str]),
    /// The child `libclang22` starts: (include folder, output file).
    LibclangBindings(&'a str, &'a str),
    Mutants(&'a [&'a str]),
}

/// Why the words are no task: an unknown command (the usage follows), or
/// a known one's arguments that are wrong.
#[derive(Debug, PartialEq)]
enum BadArgs {
    Unknown,
    Wrong(String),
}

/// The words after `cargo xtask`, checked (releases, targets, numbers)
/// before anything is created.
fn parse<'a>(args: &'a [&'a str]) -> Result<Task<'a>, BadArgs> {
    if args.is_empty() {
        return Err(BadArgs::Unknown);
    }
    if args.iter().any(|a| ["help", "-h", "--help"].contains(a)) {
        return Ok(Task::Help);
    }
    let wrong = BadArgs::Wrong;
    Ok(match args {
        ["headers", release] => Task::Headers {
            release,
            target: headers::HOST_TARGET,
        },
        ["headers", release, "--target", target] | ["headers", "--target", target, release] => {
            Task::Headers { release, target }
        }
        ["headers", ..] => {
            return Err(wrong(
                "headers takes one release and at most `--target <triple>`".into(),
            ))
        }
        ["demo"] => Task::Demo,
        ["ci"] => Task::Ci,
        ["ci", "--cross"] => Task::CiCross,
        ["examples"] => Task::Examples,
        ["msrv"] => Task::Msrv,
        ["loom"] => Task::Loom,
        ["valgrind"] => Task::Valgrind,
        ["fuzz-elf", rest @ ..] => Task::FuzzElf(rest),
        ["regen", rest @ ..] => Task::Regen(rest),
        ["regen-variant", rest @ ..] => Task::RegenVariant(rest),
        ["patches"] => Task::Patches,
        ["bench-build"] => Task::BenchBuild(3),
        ["bench-build", "--runs", n] => match n.parse() {
            Ok(n) if n > 0 => Task::BenchBuild(n),
            _ => {
                return Err(wrong(format!(
                    "--runs takes a number of runs above 0, not {n:?}"
                )))
            }
        },
        ["build-cost"] => Task::BuildCost,
        ["gpu-bundle"] => Task::GpuBundle,
        ["gpu-bundle", "--matrix", rest @ ..] => Task::GpuMatrix(rest),
        ["device-compile", rest @ ..] => Task::DeviceCompile(rest),
        ["device-report", rest @ ..] => Task::DeviceReport(rest),
        ["abi", rest @ ..] => Task::Abi(rest),
        ["msvc", rest @ ..] => Task::Msvc(rest),
        ["changes"] => Task::Changes,
        ["wrap-check"] => Task::WrapCheck,
        ["libclang22", rest @ ..] => Task::Libclang22(rest),
        ["libclang-bindings", include, out] => Task::LibclangBindings(include, out),
        ["mutants", rest @ ..] => Task::Mutants(rest),
        _ => return Err(BadArgs::Unknown),
    })
    .and_then(|task| check(&task).map(|()| task).map_err(wrong))
}

/// The arguments a task reads before it starts, checked here.
fn check(task: &Task) -> Result<(), String> {
    match task {
        Task::Headers { release, target } => headers::check(release, target),
        Task::DeviceCompile(rest) => gpu_lab::compile::parse(rest).map(drop),
        Task::GpuMatrix(rest) => gpu_lab::matrix::check_matrix_args(rest),
        Task::Abi(rest) => abi::parse(rest).map(drop),
        Task::Msvc(rest) => msvc::parse(rest).map(drop),
        Task::Libclang22(rest) => libclang22::parse(rest).map(drop),
        Task::FuzzElf(rest) => fuzz_elf::parse(rest).map(drop),
        Task::Mutants(rest) => mutants::parse(rest).map(drop),
        Task::Regen(rest) => regen::parse(rest).map(drop),
        _ => Ok(()),
    }
}

fn run(task: Task) -> Result<(), String> {
    match task {
        Task::Help => {
            print!("{}", usage());
            Ok(())
        }
        Task::Headers { release, target } => headers::fetch_for(&workspace(), release, target)
            .map(|dir| println!("{}", dir.display())),
        Task::Demo => ci::demo(&workspace()),
        Task::Ci => {
            let r = ci::run(&workspace());
            print!("\n{}", cmd::step_times());
            r
        }
        Task::CiCross => ci::cross(&workspace()),
        Task::Examples => ci::examples(&workspace()),
        Task::Msrv => ci::msrv_alone(&workspace()),
        Task::Loom => ci::loom(&workspace()),
        Task::Valgrind => valgrind::run(&workspace()),
        Task::FuzzElf(rest) => fuzz_elf::run(&workspace(), rest),
        Task::Regen(rest) => regen::run(&workspace(), rest),
        Task::RegenVariant(rest) => regen::variant(&workspace(), rest),
        Task::Patches => patches::run(&workspace()),
        Task::BenchBuild(runs) => bench_build::run(&workspace(), runs),
        Task::BuildCost => build_cost::check(&workspace()),
        Task::GpuBundle => gpu_lab::bundle::run(&workspace()),
        Task::GpuMatrix(rest) => gpu_lab::matrix::matrix(&workspace(), rest),
        Task::DeviceCompile(rest) => gpu_lab::compile::run(&workspace(), rest),
        Task::DeviceReport(rest) => gpu_lab::report::run(&workspace(), rest),
        Task::Abi(rest) => abi::run(&workspace(), rest),
        Task::Msvc(rest) => msvc::run(&workspace(), rest),
        Task::Changes => changes::run(&workspace()),
        Task::WrapCheck => wrap::run(&workspace()),
        Task::Libclang22(rest) => libclang22::run(&workspace(), rest),
        Task::LibclangBindings(include, out) => libclang22::child(include, out),
        Task::Mutants(rest) => mutants::run(&workspace(), rest),
    }
}

fn main() -> ExitCode {
    // cargo-mutants' `cargo`, in `cargo xtask mutants`.
    if let Some(code) = mutants::as_cargo() {
        return code;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match parse(&args) {
        Ok(task) => run(task),
        Err(BadArgs::Unknown) => Err(usage()),
        Err(BadArgs::Wrong(why)) => Err(format!("{why}\n(`cargo xtask help` lists the commands)")),
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

    /// The top-level modules main.rs declares (the wings, the plumbing, the
    /// one-file tasks), and for each the others its files reach through
    /// `crate::` (a wing's files reach each other through `super::`).
    fn xtask_imports() -> (BTreeSet<String>, BTreeMap<String, BTreeSet<String>>) {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let main = std::fs::read_to_string(src.join("main.rs")).unwrap();
        let modules: BTreeSet<String> = main
            .lines()
            .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
            .map(str::to_string)
            .collect();
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut folders = vec![src.clone()];
        while let Some(dir) = folders.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    folders.push(path);
                    continue;
                }
                if path.extension() != Some("rs".as_ref()) || path == src.join("main.rs") {
                    continue;
                }
                let top = path
                    .strip_prefix(&src)
                    .unwrap()
                    .components()
                    .next()
                    .unwrap();
                let top = std::path::Path::new(top.as_os_str());
                let top = top.file_stem().unwrap().to_string_lossy().into_owned();
                let text = std::fs::read_to_string(&path).unwrap();
                let names = graph.entry(top.clone()).or_default();
                names.extend(crate_references(&text).into_iter().filter(|n| *n != top));
            }
        }
        (modules, graph)
    }

    #[test]
    fn no_task_imports_from_main_and_the_wings_import_no_circle() {
        let (modules, graph) = xtask_imports();
        assert!(
            ["cmd", "ci", "abi", "gpu_lab"]
                .iter()
                .all(|m| modules.contains(*m) && graph.contains_key(*m)),
            "the check does not see xtask's modules: {modules:?}"
        );
        for (module, names) in &graph {
            let up: Vec<&String> = names.iter().filter(|n| !modules.contains(*n)).collect();
            assert!(
                up.is_empty(),
                "{module} imports {up:?} from main.rs (the plumbing lives in cmd.rs, \
                 the generator's modules come from the `generator` package)"
            );
        }
        assert_eq!(circle(&graph), None, "xtask's modules import in a circle");
        assert!(
            graph["cmd"].is_empty(),
            "cmd.rs imports tasks: {:?}",
            graph["cmd"]
        );
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

    use super::{parse, usage, BadArgs, Task, COMMANDS};

    #[test]
    fn help_in_each_spelling_is_the_list() {
        for word in ["help", "-h", "--help"] {
            assert_eq!(parse(&[word]), Ok(Task::Help), "{word}");
        }
        // After a command, too: nothing of that command runs.
        assert_eq!(parse(&["headers", "--help"]), Ok(Task::Help));
        assert_eq!(parse(&["abi", "-h"]), Ok(Task::Help));
        let text = usage();
        assert_eq!(text.lines().count(), COMMANDS.len() + 1, "{text}");
    }

    /// Each command of the list is one the parser knows (its first word,
    /// with arguments where it needs some).
    #[test]
    fn every_listed_command_is_known_and_every_known_one_listed() {
        let examples: [&[&str]; 26] = [
            &["headers", "13.0"],
            &["demo"],
            &["ci"],
            &["ci", "--cross"],
            &["msrv"],
            &["examples"],
            &["regen"],
            &["regen", "--check", "12.4"],
            &["patches"],
            &[
                "regen-variant",
                "13.0",
                "x86_64-unknown-linux-gnu",
                "plain",
                "i",
                "o",
            ],
            &["bench-build", "--runs", "2"],
            &["build-cost"],
            &["gpu-bundle"],
            &["gpu-bundle", "--matrix", "13.0"],
            &["device-compile", "--ci"],
            &["device-report", "x"],
            &["abi", "13.0"],
            &["abi", "--target", "aarch64-unknown-linux-gnu", "--all"],
            &["changes"],
            &["wrap-check"],
            &["msvc", "12.0", "13.5"],
            &["loom"],
            &["valgrind"],
            &["libclang22", "13.0"],
            &["fuzz-elf", "--seconds", "5"],
            &["mutants", "--shard", "0/4"],
        ];
        for args in examples {
            assert!(parse(args).is_ok(), "{args:?}: {:?}", parse(args));
            let listed = COMMANDS
                .iter()
                .any(|(synopsis, _)| synopsis.split(' ').next() == Some(args[0]));
            assert!(listed, "{} is not in the list", args[0]);
        }
        for (synopsis, _) in COMMANDS {
            let word = synopsis.split([' ', ',']).next().unwrap();
            let known =
                word == "help" || word == "(any" || examples.iter().any(|args| args[0] == word);
            assert!(known, "{synopsis}: listed but never parsed here");
        }
    }

    /// The deliberately wrong cases: an unknown word, and bad arguments of
    /// known commands, are refused by the parser, before anything exists.
    #[test]
    fn unknown_words_and_bad_arguments_are_refused_before_anything_runs() {
        assert_eq!(parse(&[]), Err(BadArgs::Unknown));
        assert_eq!(parse(&["nonsense"]), Err(BadArgs::Unknown));
        assert_eq!(parse(&["ci", "--crosss"]), Err(BadArgs::Unknown));
        for args in [
            &["headers", "12.7"][..],
            &["headers", "--target", "13.0"],
            &["libclang22", "12.7"],
            &["headers", "13.0", "--target", "riscv64gc-unknown-linux-gnu"],
            &["headers", "13.0", "14.0"],
            &["bench-build", "--runs", "0"],
            &["device-compile", "12.7"],
            &["gpu-bundle", "--matrix", "11.8"],
            &["abi", "12.7"],
            &["abi", "--target", "mips-unknown-linux-gnu", "13.0"],
            &["abi"],
            &["msvc", "12.7"],
            &["msvc", "--all", "13.0"],
            &["fuzz-elf", "--seconds", "0"],
            &["fuzz-elf", "--minutes", "1"],
        ] {
            assert!(
                matches!(parse(args), Err(BadArgs::Wrong(_))),
                "{args:?}: {:?}",
                parse(args)
            );
        }
    }

    /// `headers` with a bad release makes no folder for it, even when
    /// called past the parser (the fetch checks first); the right case, a
    /// known release, is accepted by the same check.
    #[test]
    fn a_bad_release_is_refused_before_its_folder_exists() {
        let workspace = std::env::temp_dir().join(format!("xtask-headers-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&workspace);
        std::fs::create_dir_all(&workspace).unwrap();
        for release in ["--help", "12.7", "../escape"] {
            let err = crate::headers::fetch_for(&workspace, release, crate::headers::HOST_TARGET)
                .unwrap_err();
            assert!(err.contains(release), "{err}");
        }
        let made: Vec<_> = std::fs::read_dir(&workspace).unwrap().collect();
        std::fs::remove_dir_all(&workspace).unwrap();
        assert!(made.is_empty(), "folders were made: {made:?}");
        assert_eq!(
            crate::headers::check("13.0", crate::headers::HOST_TARGET),
            Ok(())
        );
    }
}
