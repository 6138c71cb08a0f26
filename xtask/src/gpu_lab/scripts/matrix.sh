#!/usr/bin/env bash
# matrix.sh [release/build ...]: every build of this part, or those named.
# Environment: OUT (results), SOAK_IN, MATRIX_SECONDS, GL_DIR,
# CUDA_MEM_SYS_REQUIRE_GPUS (default: the GPUs visible).
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/results}
# Every GPU visible must run the tests (docs/gpu-tests.md): the machine's
# count (nvidia-smi), or CUDA_VISIBLE_DEVICES's, unless the caller set it.
if [ -z "${CUDA_MEM_SYS_REQUIRE_GPUS+set}" ]; then
  ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
  if [ -n "${CUDA_VISIBLE_DEVICES+set}" ]; then ngpu=$(printf '%s' "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .); fi
  export CUDA_MEM_SYS_REQUIRE_GPUS=$ngpu
fi
# The soak tests (SOAK_TESTS), and the one release/build that runs them
# (the suite's list, xtask/src/gpu_lab/suite.rs).
. "$here/suite.sh"
SOAK_IN=${SOAK_IN:-$SOAK_IN_DEFAULT}
builds=("$@")
if [ ${#builds[@]} = 0 ]; then
  for d in "$here"/*/*/run.sh; do builds+=("$(basename "$(dirname "$(dirname "$d")")")/$(basename "$(dirname "$d")")"); done
fi
# Vulkan loader packages carried in the repository's .gl/ (README, "GPU tests").
gl=${GL_DIR:-$PWD/.gl}
if [ -d "$gl" ] && ! ldconfig -p | grep -q libvulkan.so.1; then
  for f in "$gl"/*.deb; do dpkg -x "$f" /; done; ldconfig
fi
# No build starts after MATRIX_SECONDS (a call's limit is 10 minutes): those
# left are named, to run in another call (`matrix.sh <release>/<build> ...`).
deadline=${MATRIX_SECONDS:-520}
start=$(date +%s)
left=()
for rb in "${builds[@]}"; do
  if [ $(( $(date +%s) - start )) -ge "$deadline" ]; then left+=("$rb"); continue; fi
  r=${rb%/*}
  skip=()
  if [ "$rb" != "$SOAK_IN" ]; then for t in $SOAK_TESTS; do skip+=(--skip "$t"); done; fi
  lib=""
  [ -d "$here/$r/lib" ] && lib="$here/$r/lib"
  mkdir -p "$out/$rb"
  echo "==== $rb (soak tests: $([ ${#skip[@]} = 0 ] && echo run || echo skipped))" >&2
  t0=$(date +%s)
  OUT="$out/$rb" LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$here/$rb/run.sh" "${skip[@]}" >/dev/null
  printf '{"release": "%s", "build": "%s", "soak": %s, "seconds": %d}\n' "$r" "${rb#*/}" \
    "$([ ${#skip[@]} = 0 ] && echo true || echo false)" $(( $(date +%s) - t0 )) >"$out/$rb/matrix.json"
done
echo "matrix: $(( ${#builds[@]} - ${#left[@]} )) builds in $(( $(date +%s) - start )) s" >&2
if [ ${#left[@]} -gt 0 ]; then
  echo "not run (MATRIX_SECONDS=$deadline reached): ${left[*]}" | tee "$out/not-run.txt" >&2
fi
