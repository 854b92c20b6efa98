#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (build/fuzz; libraries instrumented for coverage, ASan+UBSan)
# and runs each on a seed corpus generated at run time (every target writes its own seeds when
# started with SEGMUX_FUZZ_WRITE_SEEDS=DIR). Exits non-zero on a crash, leak-free timeout or OOM.
#   scripts/fuzz.sh             brief run (CI): FUZZ_SECONDS per run
#   scripts/fuzz.sh --long      campaign: FUZZ_RUNS executions per target (default 10 000 000), with
#                               a summary table in build/fuzz-campaign.md (executions, time, corpus)
#   scripts/fuzz.sh [--long] NAME...   only the named runs (e.g. pickle safetensors)
#   FUZZ_SECONDS  seconds per brief run (default 10: 15 runs keep CI short)
#   FUZZ_RUNS     executions per target in --long mode (default 10000000)
#   FUZZ_MAX_SECONDS  --long mode: also stop a run after this many seconds (default 0: no limit), so
#                 that one slow target cannot take the whole campaign; the summary shows the count
#   FUZZ_SEED     brief runs: libFuzzer's seed (default 1), so CI walks the same mutations every time and
#                 fails on a regression, not on the luck of the draw; a longer local run with the same
#                 seed covers what CI will see. --long runs use a random seed (new ground each time).
#   FUZZ_JOBS     build parallelism (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
LONG=0
if [ "${1:-}" = "--long" ]; then
  LONG=1
  shift
fi
ONLY=("$@")
SECONDS_PER_RUN=${FUZZ_SECONDS:-10}
RUNS=${FUZZ_RUNS:-10000000}
JOBS=${FUZZ_JOBS:-$(nproc)}
BUILD=build/fuzz
FIXTURES=${SEGMUX_FIXTURES:-$PWD/../shared/fixtures}
VOCAB="$FIXTURES/sam31-tiny/tokenizer/bpe_simple_vocab_16e6.txt.gz"
[ -f "$VOCAB" ] || VOCAB=""  # the tokenizer target then uses its generated vocabulary

TARGETS=(fuzz_onnx_import fuzz_onnx_run fuzz_offline_model fuzz_media fuzz_pickle fuzz_pytorch_zip fuzz_safetensors fuzz_npy
  fuzz_config_json fuzz_tokenizer fuzz_vocabulary fuzz_requests fuzz_package_manifest fuzz_coco_rle)
CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSEGMUX_FUZZ=ON \
  -DSEGMUX_TESTS=OFF -DSEGMUX_BENCH=OFF -DSEGMUX_WERROR=OFF \
  -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined" \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined" >/dev/null
cmake --build "$BUILD" --target "${TARGETS[@]}" -j "$JOBS"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
SUMMARY=build/fuzz-campaign.md
if [ "$LONG" = 1 ]; then
  {
    echo "# Fuzz campaign $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo
    echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); FUZZ_RUNS=$RUNS, FUZZ_MAX_SECONDS=${FUZZ_MAX_SECONDS:-0}"
    echo
    echo "| run | executions | seconds | exec/s | corpus | load at end | result |"
    echo "|---|---|---|---|---|---|---|"
  } >"$SUMMARY"
fi
status=0
run() {  # name target extra-env...
  local name=$1 target=$2
  shift 2
  if [ ${#ONLY[@]} -gt 0 ] && [[ ! " ${ONLY[*]} " =~ " $name " ]]; then return; fi
  local corpus="$WORK/$name"
  mkdir -p "$corpus" "$WORK/artifacts-$name"
  SEGMUX_FUZZ_WRITE_SEEDS="$corpus" env "$@" "$BUILD/$target" >/dev/null 2>&1 || { echo "fuzz: seed generation for $name failed"; status=1; return; }
  local limit=(-max_total_time="$SECONDS_PER_RUN" -seed="${FUZZ_SEED:-1}")
  [ "$LONG" = 1 ] && limit=(-runs="$RUNS" -max_total_time="${FUZZ_MAX_SECONDS:-0}")
  echo "fuzz: $name, ${limit[0]#-} ($(ls "$corpus" | wc -l) seeds)"
  local start=$SECONDS result=ok
  if ! env "$@" ASAN_OPTIONS=detect_leaks=0 "$BUILD/$target" "${limit[@]}" -rss_limit_mb=4096 \
       -timeout=20 -print_final_stats=1 -artifact_prefix="$WORK/artifacts-$name/" "$corpus" >"$WORK/$name.log" 2>&1; then
    echo "fuzz: $name FAILED; last lines of its log:"
    tail -40 "$WORK/$name.log"
    mkdir -p build/fuzz-artifacts && cp -r "$WORK/artifacts-$name" build/fuzz-artifacts/ 2>/dev/null || true
    # A CI log is often all there is: print small crashing inputs so they can be replayed
    # (base64 -d > crash; build/fuzz/TARGET crash).
    for f in "$WORK/artifacts-$name"/*; do
      [ -f "$f" ] && [ "$(stat -c %s "$f")" -le 8192 ] || continue
      echo "fuzz: $name input $(basename "$f") (base64):"
      base64 -w 0 "$f"
      echo
    done
    status=1
    result=FAILED
  else
    grep -E "stat::number_of_executed_units|Done" "$WORK/$name.log" | tail -2
  fi
  if [ "$LONG" = 1 ]; then
    local execs
    execs=$(grep -oE "stat::number_of_executed_units: *[0-9]+" "$WORK/$name.log" | grep -oE "[0-9]+$" || echo "?")
    local secs=$((SECONDS - start)) rate="?"
    [[ "$execs" =~ ^[0-9]+$ ]] && [ "$secs" -gt 0 ] && rate=$((execs / secs))
    echo "| $name | $execs | $secs | $rate | $(ls "$corpus" | wc -l) files | $(cut -d' ' -f1 /proc/loadavg) | $result |" >>"$SUMMARY"
  fi
}
run onnx fuzz_onnx_import
run onnx-run fuzz_onnx_run
run smx-no-checksums fuzz_offline_model SEGMUX_FUZZ_NO_CHECKSUMS=1
run smx fuzz_offline_model SEGMUX_FUZZ_NO_CHECKSUMS=0
run media fuzz_media
run pickle fuzz_pickle
run pytorch-zip fuzz_pytorch_zip
run safetensors fuzz_safetensors
run npy fuzz_npy
run config-json fuzz_config_json
run tokenizer fuzz_tokenizer SEGMUX_FUZZ_VOCAB="$VOCAB"
run vocabulary fuzz_vocabulary
run requests fuzz_requests
run package-manifest fuzz_package_manifest
run coco-rle fuzz_coco_rle
[ "$LONG" = 1 ] && echo "fuzz: campaign summary in $SUMMARY"
exit $status
