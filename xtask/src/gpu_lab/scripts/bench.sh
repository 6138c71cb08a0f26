#!/usr/bin/env bash
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/results}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
pin=""
command -v taskset >/dev/null && pin="taskset -c ${BENCH_CPU:-2}"
: >"$out/bench-raw.txt"
order=(linked loaded cudarc)
for round in 1 2 3 4 5 6 7; do
  for b in "${order[@]}"; do $pin "$here/bench/$b" >>"$out/bench-raw.txt"; done
  order=("${order[@]:1}" "${order[0]}")
done
python3 - "$out/bench-raw.txt" <<'PY' | tee "$out/bench.txt"
import sys, statistics, collections
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    who, op, ns = line.split()
    d[(op, who)].append(float(ns))
ops = sorted({op for op, _ in d}, key=lambda o: list(d).index((o, "cuda-mem-sys-linked")))
print("Separate processes (median of 7 rounds, order rotated, pinned):\n")
print("| operation | linked | loaded | loaded / linked | cudarc 0.19 loaded | loaded / cudarc |")
print("|---|---|---|---|---|---|")
for op in ops:
    m = {w: statistics.median(d[(op, w)]) for w in ("cuda-mem-sys-linked", "cuda-mem-sys-loaded", "cudarc-0.19-loaded")}
    print(f"| `{op}` | {m['cuda-mem-sys-linked']:.1f} | {m['cuda-mem-sys-loaded']:.1f} | {m['cuda-mem-sys-loaded']/m['cuda-mem-sys-linked']:.2f} | {m['cudarc-0.19-loaded']:.1f} | {m['cuda-mem-sys-loaded']/m['cudarc-0.19-loaded']:.2f} |")
print("\nOne process, interleaved (the loaded build; median of 7 x 5 rounds): the crate's call against the driver's own pointer called directly, as a linked call does:\n")
print("| operation | direct | crate call | crate / direct |")
print("|---|---|---|---|")
for op in ops:
    m = {w: statistics.median(d[(op, w)]) for w in ("same-process-direct", "same-process-crate")}
    print(f"| `{op}` | {m['same-process-direct']:.1f} | {m['same-process-crate']:.1f} | {m['same-process-crate']/m['same-process-direct']:.2f} |")
PY
