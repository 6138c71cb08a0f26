//! `cargo xtask gpu-bundle`: every test binary, built here against the CUDA
//! 13.0 headers (the GPU machine's toolkit and driver), in `.gpu-bundle/`
//! with `run.sh`, which runs them all and writes `summary.json`.

use super::{build, suite};
use crate::cmd::run_cmd;
use crate::headers;
use std::path::Path;
use std::process::Command;

/// The release the GPU machine's driver and toolkit implement.
const GPU_RELEASE: &str = "13.0";

/// Builds of the test suite that go to the GPU: (name suffix, cargo features,
/// every device test or only those the feature builds carry, with the
/// wrapper's device tests too). The feature builds only carry the tests
/// whose outcome the feature changes, to keep the bundle small.
const VARIANTS: [(&str, &str, bool, bool); 6] = [
    ("", "", true, true),
    // Run-time loading: the whole device suite through the loader, with the
    // static runtime and with libcudart.so loaded too.
    ("-loaded", "dynamic-loading", true, true),
    (
        "-loaded-dynamic-cudart",
        "dynamic-loading,dynamic-cudart",
        true,
        false,
    ),
    (
        "-loaded-ptds",
        "dynamic-loading,per-thread-default-stream",
        false,
        false,
    ),
    ("-ptds", "per-thread-default-stream", false, false),
    ("-dynamic-cudart", "dynamic-cudart", false, false),
];

pub fn run(workspace: &Path) -> Result<(), String> {
    let include = headers::fetch(workspace, GPU_RELEASE)?;
    let bundle = workspace.join(".gpu-bundle");
    let _ = std::fs::remove_dir_all(&bundle);
    std::fs::create_dir_all(bundle.join("bin")).map_err(|e| e.to_string())?;
    let feature_builds = suite::feature_build_names();
    for (suffix, features, every, wrapper) in VARIANTS {
        let target_dir = workspace
            .join("target/gpu-bundle")
            .join(format!("build{suffix}"));
        let tests: &[&str] = if every { &[] } else { &feature_builds };
        build::tests(
            workspace,
            &include,
            features,
            tests,
            &target_dir,
            &bundle,
            suffix,
        )?;
        if wrapper {
            let name = format!("{}{suffix}", suite::WRAPPER.name);
            let dest = bundle.join("bin").join(name);
            build::wrapper(workspace, &include, features, &target_dir, &dest)?;
        }
    }
    // The examples, built like the first variant's tests (run.sh runs them).
    let target_dir = workspace.join("target/gpu-bundle/build");
    build::examples(workspace, &include, "", &target_dir, &bundle)?;
    bench(workspace, &include, &bundle)?;
    // The symbol test preprocesses the same headers on the GPU machine.
    run_cmd(
        Command::new("cp")
            .arg("-r")
            .arg(&include)
            .arg(bundle.join("include")),
    )?;
    write_run_sh(workspace, &bundle)?;
    write_headers_txt(workspace, &bundle, GPU_RELEASE, None)?;
    run_cmd(Command::new("du").arg("-sh").arg(&bundle))?;
    println!(
        "{}\nOn the GPU machine: .gpu-bundle/run.sh [--sanitize] [--api-errors] [test filter]  \
         (writes $OUT or .gpu-bundle/results; then `cargo xtask device-report <that folder>`, and record it in records/device-runs/)",
        bundle.display()
    );
    Ok(())
}

/// The call-cost benchmark (`bench/`), release builds: cuda-mem-sys linked,
/// cuda-mem-sys loaded, cudarc 0.19 loaded; `bench.sh` runs them interleaved.
fn bench(workspace: &Path, include: &Path, bundle: &Path) -> Result<(), String> {
    std::fs::create_dir_all(bundle.join("bench")).map_err(|e| e.to_string())?;
    for (name, features) in [("linked", ""), ("loaded", "loaded"), ("cudarc", "cudarc")] {
        let target_dir = workspace.join("target/gpu-bundle/bench");
        run_cmd(
            Command::new(env!("CARGO"))
                .current_dir(workspace)
                .args(["build", "--release", "--package", "cuda-mem-sys-bench"])
                .args(["--features", features])
                .env(generator::locate::INCLUDE_DIR_VAR, include)
                .env("CARGO_TARGET_DIR", &target_dir),
        )?;
        std::fs::copy(
            target_dir.join("release/cuda-mem-sys-bench"),
            bundle.join("bench").join(name),
        )
        .map_err(|e| e.to_string())?;
    }
    std::fs::write(bundle.join("bench.sh"), BENCH_SH).map_err(|e| e.to_string())?;
    run_cmd(Command::new("chmod").arg("+x").arg(bundle.join("bench.sh")))
}

/// Seven rounds of the three builds, their order rotated each round, pinned
/// to one core; the loaded build adds its same-process comparison. Prints
/// every figure and the median per (build, operation).
const BENCH_SH: &str = include_str!("scripts/bench.sh");

/// `headers.txt` in `into`: the CUDA `release` whose headers the bundle was
/// built with (and `build`, its build's name, where there are several), and the
/// wheels they came from.
pub fn write_headers_txt(
    workspace: &Path,
    into: &Path,
    release: &str,
    build: Option<&str>,
) -> Result<(), String> {
    let build = build.map(|b| format!(" ({b})")).unwrap_or_default();
    let wheels = headers::wheel_names(workspace, release);
    std::fs::write(
        into.join("headers.txt"),
        format!("CUDA {release} headers{build} from {wheels}\n"),
    )
    .map_err(|e| e.to_string())
}

/// `run.sh` of a bundle (`xtask/src/gpu_lab/scripts/run.sh`: how to call it is at its top).
pub const RUN_SH: &str = include_str!("scripts/run.sh");

/// `run.sh` and the suite's `suite.sh` in `into`, with the C and CUDA C reproductions of `tests/repro/` (and
/// the header they share) beside it in `repro/` (`run.sh --sanitize` compiles and
/// runs them there).
pub fn write_run_sh(workspace: &Path, into: &Path) -> Result<(), String> {
    std::fs::write(into.join("run.sh"), RUN_SH).map_err(|e| e.to_string())?;
    suite::write_suite_sh(into)?;
    run_cmd(Command::new("chmod").arg("+x").arg(into.join("run.sh")))?;
    let repro = workspace.join("tests/repro");
    std::fs::create_dir_all(into.join("repro")).map_err(|e| e.to_string())?;
    for e in std::fs::read_dir(&repro).map_err(|e| format!("{}: {e}", repro.display()))? {
        let path = e.map_err(|e| e.to_string())?.path();
        if path
            .extension()
            .is_some_and(|x| x == "c" || x == "cu" || x == "h")
        {
            std::fs::copy(&path, into.join("repro").join(path.file_name().unwrap()))
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::RUN_SH;
    use std::path::Path;
    use std::process::Command;

    fn script(path: &Path, text: &str) {
        std::fs::write(path, format!("#!/bin/sh\n{text}\n")).unwrap();
        let mut perm = std::fs::metadata(path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
        std::fs::set_permissions(path, perm).unwrap();
    }

    /// `run.sh --sanitize --skip-suite` over a fake bundle: test binaries
    /// that are shell scripts, a fake compute-sanitizer (it runs the program,
    /// sets `FAKE_TOOL`, reports 0 errors, 0 bytes leaked unless the
    /// self-test's variable is set, and exits with the program's code) and a
    /// fake nvcc (its pool "reproduction" exits `FAKE_REPRO_TOOL_EXIT` under
    /// the tool, `FAKE_REPRO_CONTROL_EXIT` under it with a control flag, 0
    /// without it; its graph peer-read one exits 77 with fewer than 2 GPUs,
    /// `FAKE_GRAPH_PLAIN_EXIT` without the tool, reports two invalid reads
    /// and exits 1 under it unless `FAKE_GRAPH_TOOL_CLEAN` is set, and with
    /// `--owner-reads` under it reports `FAKE_GRAPH_CONTROL_ERRORS` errors and
    /// exits `FAKE_GRAPH_CONTROL_EXIT`) and a fake nvidia-smi listing
    /// `FAKE_NGPU` GPUs (4 unless set). Returns summary.json and the logs'
    /// folder.
    fn sanitize(case: &str, env: &[(&str, &str)]) -> (String, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("run-sh-{}-{case}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for d in ["bin", "repro", "out", "tools"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        std::fs::write(dir.join("run.sh"), RUN_SH).unwrap();
        crate::gpu_lab::suite::write_suite_sh(&dir).unwrap();
        std::fs::write(dir.join("headers.txt"), "fake\n").unwrap();
        std::fs::write(dir.join("repro/pool_destroy_sanitizer_crash.c"), "").unwrap();
        std::fs::write(dir.join("repro/graph_peer_read_memcheck.cu"), "").unwrap();
        let bin = |n: &str, exit_var: &str| {
            script(
                &dir.join("bin").join(n),
                &format!(
                    "echo \"args: $* visible: ${{CUDA_VISIBLE_DEVICES:-all}} required: ${{CUDA_MEM_SYS_REQUIRE_GPUS:-unset}}\"\n\
                     [ -n \"$FAKE_TOOL\" ] && exit ${{{exit_var}:-0}}\nexit 0"
                ),
            )
        };
        bin("device_smoke", "FAKE_SMOKE_EXIT");
        bin("stream_ordered_allocator", "FAKE_SOA_EXIT");
        bin("tensor_map", "FAKE_TM_EXIT");
        bin("graph_memory", "FAKE_GM_EXIT");
        script(
            &dir.join("tools/compute-sanitizer"),
            "while [ $# -gt 0 ]; do case \"$1\" in --*) shift 2 ;; *) break ;; esac; done\n\
             FAKE_TOOL=1 \"$@\"; rc=$?\n\
             [ -n \"$CUDA_MEM_SYS_SELFTEST_LEAK_IMPORT\" ] && echo '========= LEAK SUMMARY: 4194304 bytes leaked in 1 allocations'\n\
             echo '========= ERROR SUMMARY: 0 errors'\nexit $rc",
        );
        script(
            &dir.join("tools/repro"),
            "case \"$0\" in *graph_peer_read_memcheck)\n\
             [ \"$FAKE_NGPU\" -lt 2 ] && exit 77\n\
             [ -z \"$FAKE_TOOL\" ] && exit ${FAKE_GRAPH_PLAIN_EXIT:-0}\n\
             if [ \"$1\" = --owner-reads ]; then\n\
             echo \"========= ERROR SUMMARY: ${FAKE_GRAPH_CONTROL_ERRORS:-0} errors\"\n\
             exit ${FAKE_GRAPH_CONTROL_EXIT:-0}\nfi\n\
             [ -n \"$FAKE_GRAPH_TOOL_CLEAN\" ] && exit 0\n\
             echo '========= Invalid __global__ read of size 4 bytes'\n\
             echo '========= Invalid __global__ read of size 4 bytes'\n\
             echo '========= ERROR SUMMARY: 2 errors'\nexit 1 ;;\nesac\n\
             if [ -n \"$FAKE_TOOL\" ]; then\n\
             case \"$*\" in *--no-*) exit ${FAKE_REPRO_CONTROL_EXIT:-0} ;; esac\n\
             exit ${FAKE_REPRO_TOOL_EXIT:-0}\nfi\nexit 0",
        );
        script(
            &dir.join("tools/nvcc"),
            &format!(
                "while [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; done\ncp {} \"$out\"",
                dir.join("tools/repro").display()
            ),
        );
        script(
            &dir.join("tools/nvidia-smi"),
            "i=0; while [ $i -lt $FAKE_NGPU ]; do echo \"GPU $i: Fake\"; i=$((i+1)); done",
        );
        let path = format!(
            "{}:{}",
            dir.join("tools").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let out = Command::new("bash")
            .arg(dir.join("run.sh"))
            .args(["--sanitize", "--skip-suite"])
            .env("OUT", dir.join("out"))
            .env("COMPUTE_SANITIZER", dir.join("tools/compute-sanitizer"))
            .env("NVCC", dir.join("tools/nvcc"))
            .env("PATH", path)
            .env("FAKE_NGPU", "4")
            .env_remove("CUDA_VISIBLE_DEVICES")
            .env_remove("CUDA_MEM_SYS_REQUIRE_GPUS")
            .env(
                "SANITIZE_BINARIES",
                "device_smoke stream_ordered_allocator tensor_map graph_memory",
            )
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let summary = std::fs::read_to_string(dir.join("out/summary.json")).unwrap();
        (summary, dir.join("out"))
    }

    fn bar(summary: &str) -> &str {
        let at = summary.find("\"bar\": \"").expect("a bar") + 8;
        &summary[at..at + summary[at..].find('"').unwrap()]
    }

    #[test]
    fn the_sanitizer_verdict_is_met_only_when_every_binary_exits_0() {
        // One GPU: the graph peer-read reproduction has no peer (exit 77).
        let (summary, logs) = sanitize("clean", &[("FAKE_NGPU", "1")]);
        assert_eq!(bar(&summary), "met", "{summary}");
        assert!(summary.contains("\"self_test\": \"self-test caught: 4194304 bytes leaked\""));
        assert!(
            summary.contains(
                "\"known_tool_faults\": {\n      \"pool_destroy_sanitizer_crash\": {\"gpus\": 1, \"plain\": 0, \"tool\": 0, \"tool-no-destroy\": 0"
            ),
            "{summary}"
        );
        assert!(
            summary.contains("\"graph_peer_read_memcheck\": {\"gpus\": 1, \"plain\": 77, \"skipped\": \"fewer than 2 GPUs\"}"),
            "{summary}"
        );
        // The test that crashes the tool with several GPUs: left out of its
        // binary's run and run alone with one GPU visible.
        let whole =
            std::fs::read_to_string(logs.join("memcheck-stream_ordered_allocator.log")).unwrap();
        assert!(
            whole.contains("--skip pool_destroy_with_outstanding_allocation visible: all"),
            "{whole}"
        );
        let alone = std::fs::read_to_string(logs.join(
            "memcheck-stream_ordered_allocator-pool_destroy_with_outstanding_allocation.log",
        ))
        .unwrap();
        assert!(
            alone.contains(
                "--exact pool_destroy_with_outstanding_allocation visible: 0 required: 1"
            ),
            "{alone}"
        );
        // Every GPU visible is required (docs/gpu-tests.md): 1 here.
        assert!(whole.contains("visible: all required: 1"), "{whole}");
        assert!(summary.contains("\"required_gpus\": \"1\""), "{summary}");
        assert!(summary.contains(
            "\"stream_ordered_allocator/pool_destroy_with_outstanding_allocation (CUDA_VISIBLE_DEVICES=0)\": {\"exit\": 0"
        ), "{summary}");
    }

    #[test]
    fn a_binary_that_exits_101_with_0_errors_fails_the_verdict() {
        let (summary, _) = sanitize("exit101", &[("FAKE_SOA_EXIT", "101")]);
        assert!(summary.contains("\"total_errors\": 0,"), "{summary}");
        assert!(summary.contains("\"total_leaked_bytes\": 0,"), "{summary}");
        assert!(
            bar(&summary).starts_with("failed: stream_ordered_allocator exited 101"),
            "{summary}"
        );
    }

    #[test]
    fn the_named_tool_crash_alone_is_named_not_passed() {
        let (summary, _) = sanitize("crash", &[("FAKE_REPRO_TOOL_EXIT", "139")]);
        assert!(
            bar(&summary).starts_with(
                "tool fault, named: pool_destroy_sanitizer_crash under memcheck (tool exit 139, driver-tool exit 139) with 4 GPUs visible; exits 0 without the tool; graph_peer_read_memcheck under memcheck"
            ),
            "{summary}"
        );
        // ... and with anything else wrong besides, failed.
        let (summary, _) = sanitize(
            "crash-and-exit",
            &[
                ("FAKE_REPRO_TOOL_EXIT", "139"),
                ("FAKE_NGPU", "1"),
                ("FAKE_TM_EXIT", "1"),
            ],
        );
        assert_eq!(bar(&summary), "failed: tensor_map exited 1; racecheck tensor_map exited 1; synccheck tensor_map exited 1", "{summary}");
        // A crash the controls show too is not the named one.
        let (summary, _) = sanitize(
            "crash-everywhere",
            &[
                ("FAKE_REPRO_TOOL_EXIT", "139"),
                ("FAKE_REPRO_CONTROL_EXIT", "139"),
            ],
        );
        assert!(
            bar(&summary)
                .starts_with("failed: pool_destroy_sanitizer_crash tool-no-destroy exited 139"),
            "{summary}"
        );
    }

    #[test]
    fn the_graph_peer_read_fault_alone_is_named_not_passed() {
        let (summary, logs) = sanitize("graph-fault", &[]);
        assert_eq!(
            bar(&summary),
            "tool fault, named: graph_peer_read_memcheck under memcheck (tool exit 1, \
             2 Invalid __global__ read reports of a peer's read) with 4 GPUs visible; exits 0 \
             without the tool, its control (the owner reads) clean under it",
            "{summary}"
        );
        assert!(
            summary.contains(
                "\"graph_peer_read_memcheck\": {\"gpus\": 4, \"plain\": 0, \"tool\": 1, \
                 \"tool_invalid_reads\": 2, \"tool-owner-reads\": 0, \"tool-owner-reads_errors\": 0}"
            ),
            "{summary}"
        );
        // Under the tool the peer-read tests are left out of their binary,
        // which still runs with every GPU visible, and not run apart.
        let whole = std::fs::read_to_string(logs.join("memcheck-graph_memory.log")).unwrap();
        assert!(
            whole.contains("--test-threads=1 --skip memory_nodes_peer_access visible: all"),
            "{whole}"
        );
        assert!(!summary.contains("graph_memory/"), "{summary}");
        // Its errors under the tool are the fault's, not the suite's.
        assert!(summary.contains("\"total_errors\": 0,"), "{summary}");
    }

    #[test]
    fn the_graph_peer_read_fault_fails_the_verdict_when_its_plain_run_or_control_fails() {
        for (case, env, why) in [
            (
                "graph-plain",
                ("FAKE_GRAPH_PLAIN_EXIT", "1"),
                "failed: graph_peer_read_memcheck plain exited 1",
            ),
            // 77 (no peer) with 2 GPUs or more is no skip.
            (
                "graph-plain-77",
                ("FAKE_GRAPH_PLAIN_EXIT", "77"),
                "failed: graph_peer_read_memcheck plain exited 77",
            ),
            (
                "graph-control-exit",
                ("FAKE_GRAPH_CONTROL_EXIT", "1"),
                "failed: graph_peer_read_memcheck tool-owner-reads exited 1 with 0 errors",
            ),
            (
                "graph-control-errors",
                ("FAKE_GRAPH_CONTROL_ERRORS", "3"),
                "failed: graph_peer_read_memcheck tool-owner-reads exited 0 with 3 errors",
            ),
            // A tool that reads it right: the left-out tests must come back.
            (
                "graph-tool-clean",
                ("FAKE_GRAPH_TOOL_CLEAN", "1"),
                "failed: graph_peer_read_memcheck no longer reproduces under memcheck \
                 (tool exit 0, no Invalid __global__ read): drop it from TOOL_FAULTS",
            ),
        ] {
            let (summary, _) = sanitize(case, &[env]);
            assert_eq!(bar(&summary), why, "{case}: {summary}");
        }
    }
}
