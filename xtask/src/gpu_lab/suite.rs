//! The device suite, listed once: every test binary and example that runs on
//! a GPU, with what the rest of the tooling needs to know of it (its package,
//! the GPUs its every test needs, whether the feature builds carry it, how
//! `run.sh --sanitize` treats it), and the soak tests.
//!
//! The bundle and the matrix build from it, `device-compile` and the MSVC
//! proof compile it, CI's examples step and `device-report` read it, and the
//! bundle's scripts get it as data: `suite.sh` ([`suite_sh`]), written beside
//! `run.sh` and `matrix.sh`, which source it (they name no binary themselves:
//! a unit test checks).

/// How `run.sh --sanitize` treats a binary.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sanitizer {
    /// memcheck with full leak checking (and, with `--api-errors`, the
    /// deliberate bad calls counted).
    Memcheck,
    /// memcheck, then racecheck and synccheck (the binary with kernels of
    /// its own that share memory between threads).
    MemcheckRacecheckSynccheck,
    /// Not run under the tool (it proves nothing more there).
    Not,
}

/// One device-test binary.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Binary {
    /// Its test target's name (`tests/<name>.rs` of its package).
    pub name: &'static str,
    /// Its package: `cuda-mem-sys`, `abi-proofs` or `cuda-mem-wrap`.
    pub package: &'static str,
    /// The GPUs its every test needs; with fewer, its multi-GPU tests report
    /// themselves ignored.
    pub gpus: u32,
    /// Whether the per-thread-default-stream and dynamic-cudart builds carry
    /// it (its outcome changes with those features).
    pub feature_builds: bool,
    /// How `run.sh --sanitize` treats it.
    pub sanitizer: Sanitizer,
}

const fn binary(name: &'static str, package: &'static str, gpus: u32) -> Binary {
    Binary {
        name,
        package,
        gpus,
        feature_builds: false,
        sanitizer: Sanitizer::Memcheck,
    }
}

/// The test binaries that touch a GPU, the crate's and abi-proofs' (the
/// other tests are checks against the C compiler, which prove nothing more
/// on a GPU machine).
pub const DEVICE_TESTS: [Binary; 9] = [
    Binary {
        feature_builds: true,
        sanitizer: Sanitizer::Not,
        ..binary("abi_symbols", "abi-proofs", 1)
    },
    Binary {
        feature_builds: true,
        ..binary("device_smoke", "cuda-mem-sys", 1)
    },
    binary("vmm", "cuda-mem-sys", 2),
    binary("unified_addressing", "cuda-mem-sys", 1),
    binary("stream_ordered_allocator", "cuda-mem-sys", 2),
    Binary {
        sanitizer: Sanitizer::MemcheckRacecheckSynccheck,
        ..binary("tensor_map", "cuda-mem-sys", 1)
    },
    binary("external_interop", "cuda-mem-sys", 1),
    binary("dma_buf", "cuda-mem-sys", 1),
    binary("graph_memory", "cuda-mem-sys", 2),
];

/// The wrapper crate's device tests (`wrap/tests/wrap_device.rs`), built in
/// the bundle's and the matrix's linked and loaded builds; `run.sh` runs
/// them with the rest.
pub const WRAPPER: Binary = Binary {
    sanitizer: Sanitizer::Not,
    ..binary("wrap_device", "cuda-mem-wrap", 1)
};

/// The names of [`DEVICE_TESTS`].
pub fn device_test_names() -> Vec<&'static str> {
    DEVICE_TESTS.iter().map(|b| b.name).collect()
}

/// The names of the binaries the feature builds carry.
pub fn feature_build_names() -> Vec<&'static str> {
    DEVICE_TESTS
        .iter()
        .filter(|b| b.feature_builds)
        .map(|b| b.name)
        .collect()
}

/// One example of `examples/`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Example {
    pub name: &'static str,
    /// Its exit code where there is no GPU: 77 ("cannot run here", as
    /// automake and meson read it) for the programs that check effects on a
    /// GPU; 0 for the demo, which also shows what it can without one.
    pub no_gpu_exit: i32,
}

const fn example(name: &'static str, no_gpu_exit: i32) -> Example {
    Example { name, no_gpu_exit }
}

/// Every example; CI runs each without a GPU, `run.sh` on one.
pub const EXAMPLES: [Example; 8] = [
    example("demo", 0),
    example("vmm", 77),
    example("vmm_ipc", 77),
    example("stream_ordered", 77),
    example("unified_addressing", 77),
    example("tensor_map", 77),
    example("external_resources", 77),
    example("graph_memory", 77),
];

/// The soak tests (10 000 cycles each, most of the suite's time): (binary,
/// test). The matrix runs them in [`SOAK_IN`] only.
pub const SOAK: [(&str, &str); 3] = [
    ("vmm", "no_leak_over_10000_cycles"),
    ("stream_ordered_allocator", "rt_leak_10000_cycles"),
    ("stream_ordered_allocator", "drv_leak_10000_cycles"),
];

/// The one release/build of the matrix that runs the soak tests.
pub const SOAK_IN: &str = "13.0/linked";

/// The sanitizer's self-test: (binary, test) of a pool-IPC importer that,
/// with `CUDA_MEM_SYS_SELFTEST_LEAK_IMPORT` set, deliberately keeps its
/// import; memcheck must report it leaked.
pub const SELF_TEST: (&str, &str) = ("stream_ordered_allocator", "rt_ipc_two_processes");

/// A named fault of compute-sanitizer (memcheck 2025.3.1), reproduced
/// without the crate by `tests/repro/<reproduction>.c` or `.cu`.
pub struct ToolFault {
    pub reproduction: &'static str,
    /// The test that meets it, in its binary (in every build of it).
    pub binary: &'static str,
    pub test: &'static str,
    /// How that test runs under memcheck: `one-gpu`, apart from its binary
    /// with `CUDA_VISIBLE_DEVICES=0`; `skip`, left out (its binary's other
    /// tests still run under the tool with every GPU visible).
    pub how: &'static str,
}

/// The named tool faults (`run.sh`, `TOOL_FAULTS`, says what each is).
pub const TOOL_FAULTS: [ToolFault; 2] = [
    // The tool crashes (SIGSEGV) with 4 GPUs visible; the test's pool is on
    // device 0 either way.
    ToolFault {
        reproduction: "pool_destroy_sanitizer_crash",
        binary: "stream_ordered_allocator",
        test: "pool_destroy_with_outstanding_allocation",
        how: "one-gpu",
    },
    // The tool does not know a graph allocation's mapping on a peer device
    // and reports the peer's reads of it as invalid (then aborts the kernel:
    // the context is lost for the later tests).
    ToolFault {
        reproduction: "graph_peer_read_memcheck",
        binary: "graph_memory",
        test: "memory_nodes_peer_access",
        how: "skip",
    },
];

/// `suite.sh`: the list as shell variables, for `run.sh` and `matrix.sh`.
pub fn suite_sh() -> String {
    let words = |names: Vec<&str>| names.join(" ");
    let sanitized = |pick: fn(Sanitizer) -> bool| {
        words(
            DEVICE_TESTS
                .iter()
                .filter(|b| pick(b.sanitizer))
                .map(|b| b.name)
                .collect(),
        )
    };
    let gpus: Vec<String> = DEVICE_TESTS
        .iter()
        .chain([&WRAPPER])
        .map(|b| format!("{}:{}", b.name, b.gpus))
        .collect();
    let gpus = gpus.join(" ");
    let faults: Vec<String> = TOOL_FAULTS
        .iter()
        .map(|f| format!("{} {}:{} {}", f.reproduction, f.binary, f.test, f.how))
        .collect();
    let (st_bin, st_test) = SELF_TEST;
    format!(
        "# The device suite (xtask/src/gpu_lab/suite.rs), written by `cargo xtask gpu-bundle`.\n\
         # The binaries memcheck runs over:\n\
         SUITE_MEMCHECK=\"{}\"\n\
         # ... and racecheck and synccheck too:\n\
         SUITE_RACECHECK=\"{}\"\n\
         # <binary>:<the GPUs its every test needs>:\n\
         SUITE_GPUS=\"{gpus}\"\n\
         # The soak tests, and the one release/build of the matrix that runs them:\n\
         SOAK_TESTS=\"{}\"\n\
         SOAK_IN_DEFAULT=\"{SOAK_IN}\"\n\
         # The sanitizer's self-test (<binary> <test>: it must show the deliberate leak):\n\
         SUITE_SELF_TEST=\"{st_bin} {st_test}\"\n\
         # The named tool faults, one a line: <reproduction> <binary>:<test> <how>\n\
         TOOL_FAULTS=\"{}\"\n",
        sanitized(|s| s != Sanitizer::Not),
        sanitized(|s| s == Sanitizer::MemcheckRacecheckSynccheck),
        words(SOAK.iter().map(|(_, t)| *t).collect()),
        faults.join("\n"),
    )
}

/// `suite.sh` in `into` (beside a `run.sh` or a `matrix.sh`).
pub fn write_suite_sh(into: &std::path::Path) -> Result<(), String> {
    std::fs::write(into.join("suite.sh"), suite_sh())
        .map_err(|e| format!("{}: {e}", into.join("suite.sh").display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The suite's names that a script spells out itself (it must read them
    /// from `suite.sh`): each binary or soak test named outside a comment.
    fn names_in_script(script: &str) -> Vec<&'static str> {
        let code: Vec<&str> = script
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .collect();
        let words: std::collections::BTreeSet<&str> = code
            .iter()
            .flat_map(|l| l.split(|c: char| !(c.is_alphanumeric() || c == '_')))
            .collect();
        DEVICE_TESTS
            .iter()
            .map(|b| b.name)
            .chain(SOAK.iter().map(|(_, t)| *t))
            .filter(|n| words.contains(n))
            .collect()
    }

    fn root() -> std::path::PathBuf {
        crate::cmd::workspace()
    }

    /// Every binary of the list is a test target of its package, every
    /// example a file of `examples/`, every soak test named in its binary's
    /// source.
    #[test]
    fn every_listed_binary_example_and_soak_test_exists() {
        for b in DEVICE_TESTS.iter().chain([&WRAPPER]) {
            let dir = match b.package {
                "cuda-mem-sys" => "tests",
                "abi-proofs" => "abi-proofs/tests",
                "cuda-mem-wrap" => "wrap/tests",
                other => panic!("{}: unknown package {other}", b.name),
            };
            let file = root().join(dir).join(format!("{}.rs", b.name));
            assert!(file.is_file(), "{}: no {}", b.name, file.display());
            assert!((1..=8).contains(&b.gpus), "{}: {} GPUs", b.name, b.gpus);
        }
        for e in EXAMPLES {
            let file = root().join(format!("examples/{}.rs", e.name));
            assert!(file.is_file(), "{}: no {}", e.name, file.display());
        }
        for (bin, test) in SOAK {
            let src = std::fs::read_to_string(root().join(format!("tests/{bin}.rs"))).unwrap();
            assert!(src.contains(test), "{bin}.rs has no {test}");
        }
    }

    /// The bundle's scripts read the list from `suite.sh` and spell out no
    /// name of it; the wrong twin: a script with its own list is caught.
    #[test]
    fn the_scripts_name_no_binary_and_read_suite_sh() {
        for script in [
            super::super::bundle::RUN_SH,
            super::super::matrix::MATRIX_SH,
        ] {
            assert_eq!(names_in_script(script), Vec::<&str>::new());
            assert!(script.contains("suite.sh"), "{script}");
        }
        let own_list = "# vmm is listed in comments freely\n\
                        sanitized=${SANITIZE_BINARIES:-device_smoke vmm tensor_map}\n\
                        SOAK_TESTS=\"no_leak_over_10000_cycles\"\n";
        assert_eq!(
            names_in_script(own_list),
            [
                "device_smoke",
                "vmm",
                "tensor_map",
                "no_leak_over_10000_cycles"
            ]
        );
    }

    #[test]
    fn suite_sh_lists_the_sanitized_binaries_and_the_soak_tests() {
        let sh = suite_sh();
        assert!(
            sh.contains(
                "SUITE_MEMCHECK=\"device_smoke vmm unified_addressing stream_ordered_allocator \
             tensor_map external_interop dma_buf graph_memory\""
            ),
            "{sh}"
        );
        assert!(sh.contains("SUITE_RACECHECK=\"tensor_map\""), "{sh}");
        assert!(sh.contains("vmm:2") && sh.contains("wrap_device:1"), "{sh}");
        assert!(sh.contains(
            "SOAK_TESTS=\"no_leak_over_10000_cycles rt_leak_10000_cycles drv_leak_10000_cycles\""
        ), "{sh}");
        assert_eq!(feature_build_names(), ["abi_symbols", "device_smoke"]);
    }
}
