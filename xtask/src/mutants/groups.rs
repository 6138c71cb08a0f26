//! What is mutated ([`FILES`]) and which tests see each file ([`GROUPS`]): the
//! one list of the groups, each with the packages and features that compile
//! its files.

/// The files mutated unless `--file` names others (cargo-mutants' globs;
/// `build/`'s files are the `generator` package's, which cargo-mutants
/// names `generator/../build/...`: `**/build/...` matches them).
pub const FILES: [&str; 7] = [
    "src/loader/**",
    "**/build/**",
    "test-support/**",
    // abi-proofs' build script, as the `abi-proofs-build` package compiles
    // it (cargo-mutants mutates no build script; it names these files
    // `abi-proofs/build-as-lib/../build/...`).
    "abi-proofs/build-as-lib/**",
    "abi-proofs/tests/abi_constants.rs",
    "tests/docs_agree.rs",
    // The C-text reader the constants check and the Windows on Arm proofs share.
    "c-text/**",
];

/// A path as cargo-mutants names it, from the workspace root: the
/// generator's and abi-proofs' build-script packages' `../` taken out.
pub(super) fn normal(path: &str) -> String {
    path.replace("generator/../", "")
        .replace("abi-proofs/build-as-lib/../", "abi-proofs/")
        .replace("abi-proofs/build-as-lib/", "abi-proofs/build/")
}

/// Where a mutant's one changed file is looked for ([`changed_files`]):
/// the folders and files of [`FILES`].
pub(super) const MUTATED: [&str; 7] = [
    "src/loader",
    "build",
    "test-support/src",
    "abi-proofs/build",
    "abi-proofs/tests/abi_constants.rs",
    "tests/docs_agree.rs",
    "c-text/src",
];
/// The globs of the run, for the baseline's groups.
pub(super) const FILES_VAR: &str = "CUDA_MEM_SYS_MUTANTS_FILES";
/// `--groups`: the only groups run (names, space-separated); unset, all.
pub(super) const GROUPS_VAR: &str = "CUDA_MEM_SYS_MUTANTS_GROUPS";

/// One group of tests: the files whose mutants it sees (path prefixes,
/// from the workspace root), and its `cargo test` arguments.
pub struct Group {
    pub name: &'static str,
    pub files: &'static [&'static str],
    pub args: &'static [&'static str],
    /// Built and run under `--cfg loom`, in a target folder of its own.
    pub loom: bool,
    /// Packages whose build outputs are removed (`cargo clean -p`) before
    /// each mutant is built: a build script that, mutated, writes nothing
    /// would otherwise leave the last build's files for the tests to read
    /// (abi-proofs' generated halves), and its mutant would pass.
    pub clean: &'static [&'static str],
}

/// Every test that needs no GPU and compiles a mutated file, in the order
/// run (the first failure ends a mutant's run: caught). Not here: the
/// device tests (they need a GPU; here each reports itself ignored) and
/// the tests of the test kit and the documents (`pair_loop`, `os_helpers`,
/// `process_death_plumbing`, `quoted_paths`, `package`), which compile
/// neither the loader's nor the generator's code into what they check.
pub const GROUPS: [Group; 12] = [
    Group {
        name: "loader",
        files: &["src/loader/", "build/codegen/loader.rs"],
        args: &[
            "-p",
            "cuda-mem-sys",
            "-p",
            "abi-proofs",
            "--features",
            "abi-proofs/dynamic-loading",
            "--lib",
            "--test",
            "dynamic_loading",
            "--test",
            "abi_symbols",
        ],
        loom: false,
        clean: &[],
    },
    // The runtime loaded at run time (CI's `dynamic-loading,dynamic-cudart`):
    // the static runtime of the group above never loads one.
    Group {
        name: "loader-cudart",
        files: &["src/loader/", "build/codegen/loader.rs"],
        args: &[
            "-p",
            "cuda-mem-sys",
            "-p",
            "abi-proofs",
            "--features",
            "abi-proofs/dynamic-loading,abi-proofs/dynamic-cudart",
            "--lib",
            "--test",
            "dynamic_loading",
        ],
        loom: false,
        clean: &[],
    },
    Group {
        name: "models",
        files: &["src/loader/once.rs"],
        args: &["-p", "loader-model"],
        loom: false,
        clean: &[],
    },
    Group {
        name: "loom",
        files: &["src/loader/once.rs"],
        args: &["-p", "loader-model", "--release"],
        loom: true,
        clean: &[],
    },
    Group {
        name: "c-names",
        files: &["src/loader/slots.rs", "build/codegen/loader.rs"],
        args: &[
            "-p",
            "cuda-mem-sys",
            "--features",
            "dynamic-loading",
            "--test",
            "exported_c_names",
        ],
        loom: false,
        clean: &[],
    },
    Group {
        name: "generator",
        files: &["build/"],
        args: &["-p", "generator"],
        loom: false,
        clean: &[],
    },
    Group {
        name: "proofs",
        files: &["build/"],
        args: &["-p", "abi-proofs", "--features", "dynamic-loading"],
        loom: false,
        clean: &[],
    },
    Group {
        name: "crate",
        files: &["build/"],
        args: &[
            "-p",
            "cuda-mem-sys",
            "--test",
            "build_errors",
            "--test",
            "metadata",
            "--test",
            "macros",
            "--test",
            "entry_points",
            "--test",
            "stable_names",
            "--test",
            "nvidia_text",
            "--test",
            "ignored_reasons",
        ],
        loom: false,
        clean: &[],
    },
    // The proofs' own code, each against the tests that use it.
    // test-support's requirement of GPUs: its unit tests, `required_gpus`.
    Group {
        name: "test-support",
        files: &["test-support/"],
        args: &[
            "-p",
            "test-support",
            "-p",
            "cuda-mem-sys",
            "--lib",
            "--test",
            "required_gpus",
        ],
        loom: false,
        clean: &[],
    },
    // abi-proofs' build script (the C and Rust halves it generates) and
    // test-support's C compiler, headers and scratch folders: every ABI
    // proof (default features; the generated bindings).
    Group {
        name: "proofs-own",
        files: &["abi-proofs/build/", "test-support/src/lib.rs"],
        args: &[
            "-p",
            "abi-proofs",
            "--test",
            "abi_layout",
            "--test",
            "abi_field_types",
            "--test",
            "abi_constants",
            "--test",
            "abi_by_value",
            "--test",
            "abi_signatures",
            "--test",
            "abi_bad_input",
        ],
        loom: false,
        clean: &["abi-proofs"],
    },
    Group {
        name: "constants-check",
        files: &["abi-proofs/tests/abi_constants.rs", "c-text/src/"],
        args: &["-p", "abi-proofs", "--test", "abi_constants"],
        loom: false,
        clean: &[],
    },
    Group {
        name: "docs",
        files: &["tests/docs_agree.rs"],
        args: &["-p", "cuda-mem-sys", "--test", "docs_agree"],
        loom: false,
        clean: &[],
    },
];

/// The groups that see a mutant of `changed`; for the baseline (nothing
/// changed), the groups that see any file of the run's `globs`.
pub fn groups_for(changed: &[String], globs: &[&str]) -> Vec<&'static Group> {
    // A glob's literal start: `**/build/codegen/*.rs` -> `build/codegen/`.
    let starts: Vec<String> = globs
        .iter()
        .map(|g| {
            let g = normal(g.trim_start_matches("**/"));
            g[..g.find('*').unwrap_or(g.len())].to_string()
        })
        .collect();
    GROUPS
        .iter()
        .filter(|g| {
            if changed.is_empty() {
                starts.iter().any(|s| {
                    g.files
                        .iter()
                        .any(|f| f.starts_with(s.as_str()) || s.starts_with(f))
                })
            } else {
                changed
                    .iter()
                    .any(|c| g.files.iter().any(|f| c.starts_with(f)))
            }
        })
        .collect()
}

/// `groups` less those `only` (names, space-separated) leaves out; an
/// empty `only` leaves every one.
pub fn only_named(groups: Vec<&'static Group>, only: &str) -> Vec<&'static Group> {
    if only.trim().is_empty() {
        return groups;
    }
    groups
        .into_iter()
        .filter(|g| only.split(' ').any(|n| n == g.name))
        .collect()
}
