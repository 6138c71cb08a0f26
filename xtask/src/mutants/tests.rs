use super::*;

/// A mutant of each kind of file runs the groups that compile it; the
/// wrong cases: a loader mutant never runs the generator's tests, a
/// mutant outside once.rs never runs loom, the baseline runs all.
#[test]
fn each_file_is_tested_by_the_groups_that_compile_it() {
    let names = |c: &[&str]| -> Vec<&str> {
        let c: Vec<String> = c.iter().map(|s| s.to_string()).collect();
        groups_for(&c, &FILES).iter().map(|g| g.name).collect()
    };
    assert_eq!(
        names(&["src/loader/once.rs"]),
        ["loader", "loader-cudart", "models", "loom"]
    );
    assert_eq!(
        names(&["src/loader/library.rs"]),
        ["loader", "loader-cudart"]
    );
    assert_eq!(
        names(&["src/loader/slots.rs"]),
        ["loader", "loader-cudart", "c-names"]
    );
    assert_eq!(
        names(&["build/codegen/loader.rs"]),
        [
            "loader",
            "loader-cudart",
            "c-names",
            "generator",
            "proofs",
            "crate"
        ]
    );
    assert_eq!(
        names(&["build/codegen/postprocess.rs"]),
        ["generator", "proofs", "crate"]
    );
    // The proofs' own code: each file against the tests that use it.
    assert_eq!(names(&["test-support/src/require.rs"]), ["test-support"]);
    assert_eq!(
        names(&["test-support/src/lib.rs"]),
        ["test-support", "proofs-own"]
    );
    assert_eq!(names(&["abi-proofs/build/by_value.rs"]), ["proofs-own"]);
    assert_eq!(
        names(&["abi-proofs/build/layout_check/field_types.rs"]),
        ["proofs-own"]
    );
    assert_eq!(
        names(&["abi-proofs/tests/abi_constants.rs"]),
        ["constants-check"]
    );
    assert_eq!(names(&["tests/docs_agree.rs"]), ["docs"]);
    // abi-proofs' build script writes the files its tests read: cleaned
    // before each mutant, so that a script that writes nothing fails.
    let own = GROUPS.iter().find(|g| g.name == "proofs-own").unwrap();
    assert_eq!(own.clean, ["abi-proofs"]);
    assert_eq!(names(&[]).len(), GROUPS.len());
    // The baseline of a run over the loader alone, or once.rs alone.
    let base =
        |globs: &[&str]| -> Vec<&str> { groups_for(&[], globs).iter().map(|g| g.name).collect() };
    assert_eq!(
        base(&["src/loader/**"]),
        ["loader", "loader-cudart", "models", "loom", "c-names"]
    );
    assert_eq!(
        base(&["src/loader/once.rs"]),
        ["loader", "loader-cudart", "models", "loom"]
    );
    assert_eq!(
        base(&["**/build/codegen/postprocess.rs"]),
        ["generator", "proofs", "crate"]
    );
    // abi-proofs' build script through its package, as cargo-mutants names it.
    assert_eq!(base(&["abi-proofs/build-as-lib/**"]), ["proofs-own"]);
    assert_eq!(
        base(&["abi-proofs/build-as-lib/../build/by_value.rs"]),
        ["proofs-own"]
    );
    assert_eq!(base(&["test-support/**"]), ["test-support", "proofs-own"]);
}

/// The mutant's one file is found in every mutated folder and file,
/// the proofs' own among them; a file outside them is not looked at.
#[test]
fn the_changed_file_is_found_where_mutants_are_made() {
    let root = std::env::temp_dir().join(format!("xtask-changed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let (tree, original) = (root.join("tree"), root.join("original"));
    let files = [
        "src/loader/once.rs",
        "test-support/src/require.rs",
        "abi-proofs/build/layout_check/field_types.rs",
        "abi-proofs/tests/abi_constants.rs",
        "tests/docs_agree.rs",
        "tests/vmm.rs",
    ];
    for dir in [&tree, &original] {
        for f in files {
            std::fs::create_dir_all(dir.join(f).parent().unwrap()).unwrap();
            std::fs::write(dir.join(f), "fn a() {}\n").unwrap();
        }
    }
    assert!(changed_files(&tree, &original).is_empty());
    for f in &files[1..] {
        std::fs::write(tree.join(f), "fn a() { () }\n").unwrap();
    }
    let found = changed_files(&tree, &original);
    std::fs::remove_dir_all(&root).unwrap();
    assert_eq!(
        found,
        [
            "abi-proofs/build/layout_check/field_types.rs",
            "abi-proofs/tests/abi_constants.rs",
            "test-support/src/require.rs",
            "tests/docs_agree.rs",
        ]
    );
}

#[test]
fn shards_and_timeouts_are_checked() {
    let a = parse(&[
        "--shard",
        "2/8",
        "--timeout",
        "300",
        "--file",
        "src/loader/once.rs",
    ])
    .unwrap();
    assert_eq!(a.shard, Some((2, 8)));
    assert_eq!(a.timeout, 300);
    assert_eq!(a.files, ["src/loader/once.rs"]);
    assert!(!a.iterate);
    assert!(parse(&["--iterate", "--timeout", "90"]).unwrap().iterate);
    assert_eq!(
        parse(&["--groups", "generator,proofs"]).unwrap().groups,
        ["generator", "proofs"]
    );
    // Only the groups named run, none added; unnamed, every one.
    let named = |only: &str| -> Vec<&str> {
        let c = ["build/codegen/loader.rs".to_string()];
        only_named(groups_for(&c, &FILES), only)
            .iter()
            .map(|g| g.name)
            .collect()
    };
    assert_eq!(named("generator"), ["generator"]);
    assert_eq!(named("generator loom"), ["generator"]);
    assert_eq!(named("").len(), 6);
    for bad in [
        &["--shard", "8/8"][..],
        &["--shard", "1"],
        &["--shard", "0/0"],
        &["--timeout", "0"],
        &["--timeout"],
        &["--summary"],
        &["--groups", "generator,nonsense"],
        &["--groups"],
        &["--nonsense"],
    ] {
        assert!(parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn the_summary_counts_each_outcome_per_file() {
    let dir = std::env::temp_dir().join(format!("xtask-mutants-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("caught.txt"),
        "src/loader/once.rs:1:1: a\nsrc/loader/once.rs:2:1: b\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("missed.txt"),
        "generator/../build/codegen/docs.rs:3:1: c\n",
    )
    .unwrap();
    std::fs::write(dir.join("timeout.txt"), "src/loader/once.rs:4:1: d\n").unwrap();
    std::fs::write(
        dir.join("unviable.txt"),
        "abi-proofs/build-as-lib/../build/by_value.rs:5:1: f\n",
    )
    .unwrap();
    // An --iterate run's skipped mutants (caught or unviable before) are
    // counted apart, not as caught.
    std::fs::write(
        dir.join("previously_caught.txt"),
        "src/loader/once.rs:5:1: e\n",
    )
    .unwrap();
    let t = summary(&[&dir.to_string_lossy()]).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        t.contains("| `src/loader/once.rs` | 4 | 2 | 0 | 0 | 1 | 1 | 67 % |"),
        "{t}"
    );
    assert!(
        t.contains("| `build/codegen/docs.rs` | 1 | 0 | 1 | 0 | 0 | 0 | 0 % |"),
        "{t}"
    );
    assert!(t.contains("missed: build/codegen/docs.rs:3:1: c"), "{t}");
    assert!(
        t.contains("| `abi-proofs/build/by_value.rs` | 1 | 0 | 0 | 1 | 0 | 0 | - |"),
        "{t}"
    );
}
