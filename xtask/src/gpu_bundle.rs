//! `cargo xtask gpu-bundle`: every test binary, built here against the CUDA
//! 13.0 headers (the GPU machine's toolkit and driver), in `.gpu-bundle/`
//! with `run.sh`, which runs them all and writes `summary.json`.

use crate::{headers, run_cmd};
use std::path::Path;
use std::process::Command;

/// The release the GPU machine's driver and toolkit implement.
const GPU_RELEASE: &str = "13.0";

/// Builds of the test suite that go to the GPU: (name suffix, cargo features,
/// test targets; empty for all). The feature builds only carry the tests
/// whose outcome the feature changes, to keep the bundle small.
const VARIANTS: [(&str, &str, &[&str]); 3] = [
    ("", "", &[]),
    (
        "-ptds",
        "per-thread-default-stream",
        &["abi_symbols", "device_smoke"],
    ),
    (
        "-dynamic-cudart",
        "dynamic-cudart",
        &["abi_symbols", "device_smoke"],
    ),
];

/// The test targets that touch a GPU (the rest are checks against the C
/// compiler, which prove nothing more on the GPU machine).
const ON_GPU: [&str; 7] = [
    "abi_symbols",
    "device_smoke",
    "vmm",
    "unified_addressing",
    "stream_ordered_allocator",
    "tensor_map",
    "external_interop",
];

pub fn run(workspace: &Path) -> Result<(), String> {
    let include = headers::fetch(workspace, GPU_RELEASE)?;
    let bundle = workspace.join(".gpu-bundle");
    let _ = std::fs::remove_dir_all(&bundle);
    std::fs::create_dir_all(bundle.join("bin")).map_err(|e| e.to_string())?;
    for (suffix, features, tests) in VARIANTS {
        let target_dir = workspace
            .join("target/gpu-bundle")
            .join(format!("build{suffix}"));
        let out = Command::new(env!("CARGO"))
            .current_dir(workspace)
            .args([
                "test",
                "--no-run",
                "--message-format=json-render-diagnostics",
            ])
            .args(if tests.is_empty() {
                vec!["--tests".to_string()]
            } else {
                tests.iter().map(|t| format!("--test={t}")).collect()
            })
            .args(["--package", "cuda-mem-sys", "--features", features])
            .env("CUDA_MEM_SYS_INCLUDE_DIR", &include)
            .env("CARGO_TARGET_DIR", &target_dir)
            .env("CARGO_PROFILE_DEV_DEBUG", "0")
            .env("CARGO_PROFILE_DEV_STRIP", "debuginfo")
            .stderr(std::process::Stdio::inherit())
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!("building the tests{suffix} failed"));
        }
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let (Some(exe), Some(name)) = (json_str(line, "executable"), json_str(line, "name"))
            else {
                continue;
            };
            if !line.contains("\"test\":true") || !ON_GPU.contains(&name) {
                continue;
            }
            let dest = bundle.join("bin").join(format!("{name}{suffix}"));
            std::fs::copy(exe, &dest).map_err(|e| format!("copying {exe}: {e}"))?;
        }
    }
    // The examples, built like the first variant's tests (run.sh runs them).
    crate::examples::bundle(
        workspace,
        &include,
        &workspace.join("target/gpu-bundle/build"),
        &bundle,
    )?;
    // The symbol test preprocesses the same headers on the GPU machine.
    run_cmd(
        Command::new("cp")
            .arg("-r")
            .arg(&include)
            .arg(bundle.join("include")),
    )?;
    std::fs::write(bundle.join("run.sh"), RUN_SH).map_err(|e| e.to_string())?;
    std::fs::write(
        bundle.join("headers.txt"),
        format!(
            "CUDA {GPU_RELEASE} headers from {}\n",
            headers::wheel_names(workspace, GPU_RELEASE)
        ),
    )
    .map_err(|e| e.to_string())?;
    run_cmd(Command::new("chmod").arg("+x").arg(bundle.join("run.sh")))?;
    run_cmd(Command::new("du").arg("-sh").arg(&bundle))?;
    println!(
        "{}\nOn the GPU machine: .gpu-bundle/run.sh [test filter]  (writes $OUT or .gpu-bundle/results)",
        bundle.display()
    );
    Ok(())
}

/// The string value of `"key":"..."` in one line of cargo's JSON output.
fn json_str<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(&format!("\"{key}\":\""))? + key.len() + 4;
    let len = line[start..].find('"')?;
    Some(&line[start..start + len])
}

const RUN_SH: &str = r#"#!/usr/bin/env bash
# Runs every test binary of the bundle on a GPU machine (no Rust needed) and
# writes summary.json and one log per binary into $OUT (or results/ beside this).
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/results}
mkdir -p "$out"
# Vulkan loader packages carried beside the bundle (see README, "GPU tests").
if [ -d "$here/../.gl" ] && ! ldconfig -p | grep -q libvulkan.so.1; then
  for f in "$here"/../.gl/*.deb; do dpkg -x "$f" /; done; ldconfig
fi
# Headless: the driver's GLX-based ICD manifest cannot create an instance
# without a display; its EGL library can (tests/external_interop.rs).
if [ -z "${VK_DRIVER_FILES:-}" ] && ldconfig -p | grep -q libEGL_nvidia.so.0; then
  printf '{"file_format_version":"1.0.1","ICD":{"library_path":"libEGL_nvidia.so.0","api_version":"1.4.312"}}' >/tmp/nvidia_egl_icd.json
  export VK_DRIVER_FILES=/tmp/nvidia_egl_icd.json
fi
export CUDA_MEM_SYS_TEST_INCLUDE_DIRS="$here/include"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
toolkit=$(/usr/local/cuda/bin/nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' | head -1)
{
  printf '{\n  "date": "%s",\n  "gpu": "%s",\n  "gpus": %s,\n  "toolkit": "%s",\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$gpu" "$ngpu" "$toolkit"
  printf '  "headers": "%s",\n  "binaries": {\n' "$(cat "$here/headers.txt" | tr -d '\n')"
  first=1
  for b in "$here"/bin/*; do
    n=$(basename "$b")
    timeout 600 "$b" --test-threads=1 "$@" >"$out/$n.log" 2>&1
    rc=$?
    line=$(grep -E '^test result:' "$out/$n.log" | tail -1)
    p=$(echo "$line" | grep -o '[0-9]* passed' | grep -o '[0-9]*'); f=$(echo "$line" | grep -o '[0-9]* failed' | grep -o '[0-9]*')
    i=$(echo "$line" | grep -o '[0-9]* ignored' | grep -o '[0-9]*')
    [ $first = 1 ] || printf ',\n'; first=0
    printf '    "%s": {"exit": %d, "passed": %s, "failed": %s, "ignored": %s}' "$n" $rc "${p:-0}" "${f:-0}" "${i:-0}"
    echo "$n: exit $rc, ${line:-no result line}" >&2
  done
  # The examples (examples/*.rs): exit code and last line of each; 0 and a
  # line starting "OK:" when every check passed.
  printf '\n  },\n  "examples": {\n'
  first=1
  for e in "$here"/examples/*; do
    [ -e "$e" ] || continue
    n=$(basename "$e")
    (cd "$out" && timeout 300 "$e") >"$out/example-$n.log" 2>&1
    rc=$?
    last=$(tail -n 1 "$out/example-$n.log" | tr -d '\r' | sed 's/\\/\\\\/g; s/"/\\"/g; s/\t/ /g')
    [ $first = 1 ] || printf ',\n'; first=0
    printf '    "%s": {"exit": %d, "last": "%s"}' "$n" $rc "$last"
    echo "example $n: exit $rc, $last" >&2
  done
  printf '\n  }\n}\n'
} >"$out/summary.json"
cat "$out/summary.json"
"#;
