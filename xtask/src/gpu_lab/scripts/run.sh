#!/usr/bin/env bash
# Runs every test binary of the bundle on a GPU machine (no Rust needed) and
# writes summary.json and one log per binary into $OUT (or results/ beside this).
#
#   run.sh [test filter]               the suite
#   run.sh --sanitize [test filter]    the suite, then compute-sanitizer: memcheck
#        (--leak-check full --report-api-errors no --target-processes all) over
#        each device binary, racecheck and synccheck over tensor_map, and the
#        self-test (a pool-IPC importer that deliberately keeps its import must
#        show up as leaked), and the named tool faults' reproductions
#        (TOOL_FAULTS; repro/, compiled here with nvcc), with and without
#        memcheck. Verdict ("bar"): "met" when every binary exits 0 under the
#        tool with 0 errors and 0 bytes leaked and the self-test is caught;
#        "tool fault, named: ..." when that holds and only reproductions show
#        the tool's faults (each exits 0 without the tool, and its controls
#        are clean under it); else "failed: <why>" (a non-zero exit fails it,
#        whatever the counts).
#   run.sh --api-errors [test filter]  memcheck with API errors reported: counts
#        the deliberate bad calls per binary ("Program hit" lines).
#   --skip-suite   with either: skip the plain run of the suite (already done).
#   SANITIZE_TIMEOUT  seconds per binary under a sanitizer (default 420).
#   SANITIZE_BINARIES the binaries run under memcheck (default: the device
#        suite); SANITIZE_EXTRAS=0 skips racecheck, synccheck, the self-test
#        and the reproduction. NVCC: the compiler (default the toolkit's).
#        To stay under a time limit per command, split the work over calls and
#        give `cargo xtask device-report` every $OUT.
# CUDA_MEM_SYS_REQUIRE_GPUS: the GPUs the tests must see (default: the GPUs
#        visible, as counted above); fewer, or no usable driver, fails them.
# The test filter goes to every binary (libtest arguments, e.g.
# `--skip no_leak_over_10000_cycles`).
# The figures for docs/device-results.md: `cargo xtask device-report <this $OUT>`.
set -u
sanitize=0; api_errors=0; suite=1
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize) sanitize=1; shift ;;
    --api-errors) api_errors=1; shift ;;
    --skip-suite) suite=0; shift ;;
    *) break ;;
  esac
done
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
cs=${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}
st_limit=${SANITIZE_TIMEOUT:-420}
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
# The GPUs the tests see: CUDA_VISIBLE_DEVICES, where set, narrows the
# machine's (nvidia-smi lists them all); "visible" records it as given.
visible=${CUDA_VISIBLE_DEVICES-all}
if [ "$visible" != all ]; then ngpu=$(printf '%s' "$visible" | tr ',' '\n' | grep -c .); fi
# Every GPU the tests see must be usable: no usable driver, no device or
# fewer devices than this fails the device tests instead of reporting them
# ignored (docs/gpu-tests.md). Set by the caller, it stays as given.
export CUDA_MEM_SYS_REQUIRE_GPUS=${CUDA_MEM_SYS_REQUIRE_GPUS-$ngpu}
toolkit=$(/usr/local/cuda/bin/nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' | head -1)
# The suite's list (xtask/src/gpu_lab/suite.rs): SUITE_MEMCHECK,
# SUITE_RACECHECK, SUITE_SELF_TEST, TOOL_FAULTS.
. "$here/suite.sh"
# The binaries compute-sanitizer runs: the device suite, default build.
sanitized=${SANITIZE_BINARIES:-$SUITE_MEMCHECK}
extras=${SANITIZE_EXTRAS:-1}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
# The named faults of compute-sanitizer memcheck 2025.3.1 (TOOL_FAULTS, from
# suite.sh), one a line:
#   <reproduction (repro/<it>.c or .cu)> <binary>:<test (libtest filter)> <how>
# where <how> is how that test runs under memcheck: one-gpu, apart from its
# binary with CUDA_VISIBLE_DEVICES=0; skip, left out (its binary's other
# tests still run under the tool with every GPU visible).
# Sum of the numbers after `$2` on the lines of log $1 that contain it.
sum_after() { grep -o "$2 [0-9,]*" "$1" 2>/dev/null | tr -d , | awk '{s+=$NF} END {print s+0}'; }
{
  printf '{\n  "date": "%s",\n  "gpu": "%s",\n  "gpus": %s,\n  "visible_devices": "%s",\n  "required_gpus": "%s",\n  "toolkit": "%s",\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$gpu" "$ngpu" "$visible" "$CUDA_MEM_SYS_REQUIRE_GPUS" "$toolkit"
  printf '  "headers": "%s",\n  "binaries": {\n' "$(cat "$here/headers.txt" | tr -d '\n')"
  first=1
  for b in "$here"/bin/*; do
    [ $suite = 1 ] || break
    [ -e "$b" ] || continue
    n=$(basename "$b")
    start=$(date +%s)
    timeout 600 "$b" --test-threads=1 "$@" >"$out/$n.log" 2>&1
    rc=$?
    line=$(grep -E '^test result:' "$out/$n.log" | tail -1)
    p=$(echo "$line" | grep -o '[0-9]* passed' | grep -o '[0-9]*'); f=$(echo "$line" | grep -o '[0-9]* failed' | grep -o '[0-9]*')
    i=$(echo "$line" | grep -o '[0-9]* ignored' | grep -o '[0-9]*')
    [ $first = 1 ] || printf ',\n'; first=0
    printf '    "%s": {"exit": %d, "passed": %s, "failed": %s, "ignored": %s, "seconds": %d}' "$n" $rc "${p:-0}" "${f:-0}" "${i:-0}" $(( $(date +%s) - start ))
    echo "$n: exit $rc, ${line:-no result line}" >&2
  done
  printf '\n  }'
  # The examples (examples/*.rs): exit code and last line of each; 0 and a
  # line starting "OK:" when every check passed.
  printf ',\n  "examples": {\n'
  first=1
  for e in "$here"/examples/*; do
    [ $suite = 1 ] || break
    [ -e "$e" ] || continue
    n=$(basename "$e")
    (cd "$out" && timeout 300 "$e") >"$out/example-$n.log" 2>&1
    rc=$?
    last=$(tail -n 1 "$out/example-$n.log" | tr -d '\r' | sed 's/\\/\\\\/g; s/"/\\"/g; s/\t/ /g')
    [ $first = 1 ] || printf ',\n'; first=0
    printf '    "%s": {"exit": %d, "last": "%s"}' "$n" $rc "$last"
    echo "example $n: exit $rc, $last" >&2
  done
  printf '\n  }'
  # From here on every binary runs under a sanitizer (the process-death tests
  # then print their free-memory figures without asserting them).
  export CUDA_MEM_SYS_UNDER_SANITIZER=1
  if [ $sanitize = 1 ]; then
    printf ',\n  "sanitizer": {\n    "memcheck": {\n'
    first=1; total_e=0; total_l=0; why=""
    # One memcheck run: name, log, then the command; its line of summary.json.
    memcheck() {
      local n=$1 log=$2 start rc e l; shift 2; start=$(date +%s)
      timeout "$st_limit" "$cs" --tool memcheck --leak-check full --report-api-errors no \
        --target-processes all "$@" >"$log" 2>&1
      rc=$?
      e=$(sum_after "$log" 'ERROR SUMMARY:'); l=$(sum_after "$log" 'LEAK SUMMARY:')
      total_e=$((total_e + e)); total_l=$((total_l + l))
      [ $rc = 0 ] || why="$why${why:+; }$n exited $rc"
      [ $first = 1 ] || printf ',\n'; first=0
      printf '      "%s": {"exit": %d, "errors": %d, "leaked_bytes": %d, "seconds": %d}' "$n" $rc "$e" "$l" $(( $(date +%s) - start ))
      echo "memcheck $n: exit $rc, $e errors, $l bytes leaked" >&2
    }
    for n in $sanitized; do
      [ -x "$here/bin/$n" ] || continue
      skip=(); alone=()
      while read -r _ bt how; do
        # The fault's binary in every build of it (`vmm-loaded` is `vmm`).
        [ "${bt%%:*}" = "${n%%-*}" ] || continue
        skip+=(--skip "${bt#*:}")
        [ "$how" = one-gpu ] && alone+=("${bt#*:}")
      done <<<"$TOOL_FAULTS"
      memcheck "$n" "$out/memcheck-$n.log" "$here/bin/$n" --test-threads=1 "${skip[@]}" "$@"
      for t in "${alone[@]}"; do
        CUDA_VISIBLE_DEVICES=0 CUDA_MEM_SYS_REQUIRE_GPUS=1 memcheck "$n/$t (CUDA_VISIBLE_DEVICES=0)" \
          "$out/memcheck-$n-$t.log" "$here/bin/$n" --test-threads=1 --exact "$t"
      done
    done
    printf '\n    },\n'
    [ "$total_e" = 0 ] || why="$why${why:+; }$total_e errors"
    [ "$total_l" = 0 ] || why="$why${why:+; }$total_l bytes leaked"
    st=0; verdict="self-test not run (SANITIZE_EXTRAS=0)"
    [ "$extras" = 1 ] && for rb in $SUITE_RACECHECK; do for tool in racecheck synccheck; do
      log="$out/$tool-$rb.log"
      timeout "$st_limit" "$cs" --tool $tool --target-processes all "$here/bin/$rb" --test-threads=1 "$@" >"$log" 2>&1
      rc=$?
      if [ $tool = racecheck ]; then
        e=$(grep -o 'RACECHECK SUMMARY: .*(\([0-9]*\) errors' "$log" | grep -o '([0-9]* errors' | tr -d '(' | awk '{s+=$1} END {print s+0}')
      else
        e=$(sum_after "$log" 'ERROR SUMMARY:')
      fi
      total_e=$((total_e + e))
      [ $rc = 0 ] || why="$why${why:+; }$tool $rb exited $rc"
      [ "$e" = 0 ] || why="$why${why:+; }$tool $rb: $e errors"
      printf '    "%s_%s": {"exit": %d, "errors": %d},\n' $tool "$rb" $rc "$e"
      echo "$tool $rb: exit $rc, $e errors" >&2
    done; done
    # Self-test: the importer child keeps its 4 MiB import; memcheck must say so.
    if [ "$extras" = 1 ]; then
      log="$out/memcheck-selftest.log"
      CUDA_MEM_SYS_SELFTEST_LEAK_IMPORT=1 timeout "$st_limit" "$cs" --tool memcheck --leak-check full \
        --report-api-errors no --target-processes all "$here/bin/${SUITE_SELF_TEST% *}" \
        --test-threads=1 --exact "${SUITE_SELF_TEST#* }" >"$log" 2>&1
      st=$(sum_after "$log" 'LEAK SUMMARY:')
      if [ "$st" -gt 0 ]; then verdict="self-test caught: $st bytes leaked"; else
        verdict="self-test MISSED the deliberate leak"; why="$why${why:+; }self-test missed"; fi
      echo "$verdict" >&2
    fi
    # The named tool faults, reproduced without the crate. One run of
    # reproduction $r: its label (those with "tool" in it run under memcheck),
    # then its arguments; sets rc and e (its errors), prints its field and
    # appends its output to $log.
    repro() {
      local label=$1 tool=(); shift
      case $label in *tool*) tool=("$cs" --tool memcheck --leak-check full --report-api-errors no) ;; esac
      timeout "$st_limit" "${tool[@]}" "$out/$r" "$@" </dev/null >"$out/repro-run.log" 2>&1
      rc=$?
      e=$(sum_after "$out/repro-run.log" 'ERROR SUMMARY:')
      { echo "== $label"; cat "$out/repro-run.log"; } >>"$log"
      printf ', "%s": %d' "$label" $rc
      echo "repro $r $label: exit $rc, $e errors" >&2
    }
    faults=""
    if [ "$extras" = 1 ]; then
      printf '    "known_tool_faults": {'
      sep=""
      while read -r r _ _; do
        log="$out/repro-$r.log"; src="$here/repro/$r.cu"; [ -e "$src" ] || src="$here/repro/$r.c"
        printf '%s\n      "%s": {"gpus": %s' "$sep" $r "$ngpu"; sep=,
        if ! "$nvcc" -o "$out/$r" "$src" -lcuda >"$log" 2>&1; then
          why="$why${why:+; }$r did not compile (see repro-$r.log)"
          printf ', "compiled": false}'
          continue
        fi
        case $r in
          pool_destroy_sanitizer_crash)
            # Plain (must exit 0), under memcheck, and under memcheck without
            # the destroy or the final allocation (controls: must exit 0, or
            # the crash is not the one named); runtime and driver API.
            crash=""
            for run in plain tool tool-no-destroy tool-no-final-allocation driver-plain driver-tool; do
              args=()
              case $run in *no-destroy) args=(--no-destroy) ;; *no-final-allocation) args=(--no-final-allocation) ;; esac
              case $run in driver-*) args+=(driver) ;; esac
              repro $run "${args[@]}"
              case $run in
                *plain|*-no-*) [ $rc = 0 ] || why="$why${why:+; }$r $run exited $rc" ;;
                *) [ $rc = 0 ] || crash="$crash${crash:+, }$run exit $rc" ;;
              esac
            done
            [ -z "$crash" ] || faults="$faults${faults:+; }$r under memcheck ($crash) with $ngpu GPUs visible; exits 0 without the tool" ;;
          graph_peer_read_memcheck)
            # Plain (must exit 0 with 2 GPUs or more: 77 is fewer than 2),
            # under memcheck (the fault: its invalid-read reports), and the
            # control under memcheck, the owner reading (must exit 0, 0 errors).
            repro plain
            if [ $rc = 77 ] && [ "$ngpu" -lt 2 ]; then
              printf ', "skipped": "fewer than 2 GPUs"}'; continue
            fi
            [ $rc = 0 ] || why="$why${why:+; }$r plain exited $rc"
            repro tool
            reads=$(grep -c 'Invalid __global__ read' "$out/repro-run.log")
            printf ', "tool_invalid_reads": %d' "$reads"
            if [ "$reads" -gt 0 ]; then
              faults="$faults${faults:+; }$r under memcheck (tool exit $rc, $reads Invalid __global__ read reports of a peer's read) with $ngpu GPUs visible; exits 0 without the tool, its control (the owner reads) clean under it"
            else
              why="$why${why:+; }$r no longer reproduces under memcheck (tool exit $rc, no Invalid __global__ read): drop it from TOOL_FAULTS"
            fi
            repro tool-owner-reads --owner-reads
            printf ', "tool-owner-reads_errors": %d' "$e"
            [ $rc = 0 ] && [ "$e" = 0 ] || why="$why${why:+; }$r tool-owner-reads exited $rc with $e errors" ;;
        esac
        printf '}'
      done <<<"$TOOL_FAULTS"
      rm -f "$out/repro-run.log"
      printf '\n    },\n'
    fi
    if [ -n "$why" ]; then bar="failed: $why"
    elif [ -n "$faults" ]; then bar="tool fault, named: $faults"
    else bar=met; [ "$extras" = 1 ] || bar="met by these binaries (self-test and reproduction in another run)"; fi
    printf '    "total_errors": %d,\n    "total_leaked_bytes": %d,\n    "self_test": "%s",\n    "bar": "%s"\n  }' \
      "$total_e" "$total_l" "$verdict" "$bar"
    echo "sanitizer verdict: $bar" >&2
  fi
  if [ $api_errors = 1 ]; then
    printf ',\n  "deliberate_bad_calls": {\n'
    first=1
    for n in $sanitized; do
      [ -x "$here/bin/$n" ] || continue
      log="$out/api-errors-$n.log"
      timeout "$st_limit" "$cs" --tool memcheck --report-api-errors explicit --target-processes all \
        "$here/bin/$n" --test-threads=1 "$@" >"$log" 2>&1
      hits=$(grep -c 'Program hit' "$log")
      [ $first = 1 ] || printf ',\n'; first=0
      printf '    "%s": %d' "$n" "$hits"
      echo "api errors $n: $hits deliberate bad calls" >&2
    done
    printf '\n  }'
  fi
  printf '\n}\n'
} >"$out/summary.json"
cat "$out/summary.json"
