#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (build/fuzz; libraries instrumented for coverage, ASan+UBSan)
# and runs each for a bounded time on a seed corpus generated at run time. Exits non-zero on a crash.
#   FUZZ_SECONDS  seconds per run (default 25: the brief CI run)
#   FUZZ_JOBS     build parallelism (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${FUZZ_SECONDS:-25}
JOBS=${FUZZ_JOBS:-$(nproc)}
BUILD=build/fuzz

CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSEGMUX_FUZZ=ON \
  -DSEGMUX_TESTS=OFF -DSEGMUX_BENCH=OFF -DSEGMUX_WERROR=OFF \
  -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined" \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined" >/dev/null
cmake --build "$BUILD" --target fuzz_onnx_import fuzz_onnx_run fuzz_offline_model fuzz_media -j "$JOBS"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
status=0
run() {  # name target extra-env...
  local name=$1 target=$2
  shift 2
  local corpus="$WORK/$name"
  mkdir -p "$corpus" "$WORK/artifacts-$name"
  SEGMUX_FUZZ_WRITE_SEEDS="$corpus" "$BUILD/$target" >/dev/null 2>&1 || { echo "fuzz: seed generation for $name failed"; status=1; return; }
  echo "fuzz: $name for ${SECONDS_PER_RUN}s ($(ls "$corpus" | wc -l) seeds)"
  if ! env "$@" ASAN_OPTIONS=detect_leaks=0 "$BUILD/$target" -max_total_time="$SECONDS_PER_RUN" -rss_limit_mb=4096 \
       -timeout=20 -print_final_stats=1 -artifact_prefix="$WORK/artifacts-$name/" "$corpus" >"$WORK/$name.log" 2>&1; then
    echo "fuzz: $name FAILED; last lines of its log:"
    tail -40 "$WORK/$name.log"
    mkdir -p build/fuzz-artifacts && cp -r "$WORK/artifacts-$name" build/fuzz-artifacts/ 2>/dev/null || true
    status=1
  else
    grep -E "stat::number_of_executed_units|Done" "$WORK/$name.log" | tail -2
  fi
}
run onnx fuzz_onnx_import
run onnx-run fuzz_onnx_run
run smx-no-checksums fuzz_offline_model SEGMUX_FUZZ_NO_CHECKSUMS=1
run smx fuzz_offline_model SEGMUX_FUZZ_NO_CHECKSUMS=0
run media fuzz_media
exit $status
