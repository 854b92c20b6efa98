#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (build/fuzz; libraries instrumented for coverage, ASan+UBSan)
# and runs each on its committed corpus (fuzz/corpus/RUN/) plus the seeds generated at run time (every
# target writes its own seeds when started with SEGMUX_FUZZ_WRITE_SEEDS=DIR). Exits non-zero on a
# crash, leak-free timeout or OOM.
#   scripts/fuzz.sh             brief run (CI): FUZZ_SECONDS per run; reads the committed corpus, writes
#                               nothing into the repository
#   scripts/fuzz.sh --long      campaign: FUZZ_RUNS executions per target (default 10 000 000), with
#                               a summary table in build/fuzz-campaign.md (executions, time, corpus);
#                               afterwards each run's corpus is merged into fuzz/corpus/RUN/ (only inputs
#                               that add coverage beyond the generated seeds, within FUZZ_CORPUS_KIB),
#                               its counts are added to fuzz/ledger.tsv and the ledger table in
#                               docs/fuzzing.md is rewritten: commit the three
#   scripts/fuzz.sh [--long] NAME...   only the named runs (e.g. pickle safetensors), building only their targets
#   scripts/fuzz.sh --ledger    only rewrite docs/fuzzing.md's ledger table from fuzz/ledger.tsv
#   FUZZ_SECONDS  seconds per brief run (default 10: 17 runs keep CI short)
#   FUZZ_RUNS     executions per target in --long mode (default 10000000)
#   FUZZ_MAX_SECONDS  --long mode: also stop a run after this many seconds (default 0: no limit), so
#                 that one slow target cannot take the whole campaign; the summary shows the count
#   FUZZ_SEED     brief runs: libFuzzer's seed (default 1), so CI walks the same mutations every time and
#                 fails on a regression, not on the luck of the draw; a longer local run with the same
#                 seed covers what CI will see. --long runs use a random seed (new ground each time).
#   FUZZ_CORPUS_KIB  --long mode: the most a run's committed corpus may hold (default 512 KiB, so the
#                 17 runs stay under 9 MiB); past it the largest inputs are dropped
#   FUZZ_JOBS     build parallelism (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
CORPORA=fuzz/corpus    # committed, one folder per run
LEDGER=fuzz/ledger.tsv # committed: what every --long run has done so far
DOC=docs/fuzzing.md
CORPUS_KIB=${FUZZ_CORPUS_KIB:-512}
RUN_NAMES=(onnx onnx-run smx-no-checksums smx media pickle pytorch-zip safetensors npy config-json tokenizer
  vocabulary requests package-manifest coco-rle eval-json label-png)

# The ledger as a Markdown table, with the rate and what 1 M executions would still take.
ledger_table() {
  echo "| run | executions | campaigns | fuzzing time | exec/s | edges (cov) | features (ft) | corpus | crashes | last run | to 1 M |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  awk -F'\t' 'NR > 1 {
    rate = $4 > 0 ? int($2 / $4) : 0
    left = 1000000 - $2
    hours = rate > 0 ? left / rate / 3600 : -1
    todo = left <= 0 ? "reached" : (hours < 0 ? "?" : (hours < 1 ? sprintf("%.0f min more", hours * 60 + 0.5) : sprintf("%.1f h more", hours)))
    printf "| %s | %.0f | %d | %.0f min | %.0f | %d | %d | %d files, %d KiB | %d | %s | %s |\n",
      $1, $2, $3, $4 / 60, rate, $5, $6, $7, $8, $9, $10, todo
  }' "$LEDGER"
}

# Rewrites the generated section of docs/fuzzing.md (between the two markers) from the ledger.
write_ledger_doc() {
  [ -f "$LEDGER" ] || return 0
  local table tmp="$DOC.tmp.$$"
  table=$(ledger_table)
  awk -v table="$table" '
    /^<!-- ledger: begin/ { print; print table; skip = 1; next }
    /^<!-- ledger: end/ { skip = 0 }
    !skip { print }' "$DOC" >"$tmp"
  mv "$tmp" "$DOC"
}

# ledger_add RUN EXECUTIONS SECONDS COV FT FILES KIB CRASHES: adds one campaign's counts to RUN's row.
ledger_add() {
  local tmp="$LEDGER.tmp.$$"
  [ -f "$LEDGER" ] || printf 'run\texecutions\tcampaigns\tseconds\tcov\tft\tcorpus_files\tcorpus_kib\tcrashes\tlast_run\n' >"$LEDGER"
  awk -F'\t' -v OFS='\t' -v run="$1" -v ex="$2" -v sec="$3" -v cov="$4" -v ft="$5" -v files="$6" -v kib="$7" \
    -v crashes="$8" -v day="$(date -u +%F)" '
    function row(e, c, s, k) { printf "%s\t%.0f\t%d\t%.0f\t%d\t%d\t%d\t%d\t%d\t%s\n", run, e, c, s, cov, ft, files, kib, k, day }
    NR == 1 { print; next }
    $1 == run { row($2 + ex, $3 + 1, $4 + sec, $9 + crashes); done = 1; next }
    { print }
    END { if (!done) row(ex, 1, sec, crashes) }' "$LEDGER" >"$tmp"
  mv "$tmp" "$LEDGER"
}

if [ "${1:-}" = "--ledger" ]; then
  write_ledger_doc
  exit 0
fi
LONG=0
if [ "${1:-}" = "--long" ]; then
  LONG=1
  shift
fi
ONLY=("$@")
for name in "${ONLY[@]}"; do
  [[ " ${RUN_NAMES[*]} " =~ " $name " ]] || { echo "fuzz: no run named '$name' (runs: ${RUN_NAMES[*]})" >&2; exit 2; }
done
SECONDS_PER_RUN=${FUZZ_SECONDS:-10}
RUNS=${FUZZ_RUNS:-10000000}
JOBS=${FUZZ_JOBS:-$(nproc)}
BUILD=build/fuzz
FIXTURES=${SEGMUX_FIXTURES:-$PWD/../shared/fixtures}
VOCAB="$FIXTURES/sam31-tiny/tokenizer/bpe_simple_vocab_16e6.txt.gz"
[ -f "$VOCAB" ] || VOCAB=""  # the tokenizer target then uses its generated vocabulary

TARGETS=(fuzz_onnx_import fuzz_onnx_run fuzz_offline_model fuzz_media fuzz_pickle fuzz_pytorch_zip fuzz_safetensors fuzz_npy
  fuzz_config_json fuzz_tokenizer fuzz_vocabulary fuzz_requests fuzz_package_manifest fuzz_coco_rle
  fuzz_eval_json fuzz_label_png)
# No CUDA backend here: it parses nothing untrusted, and nvcc would get the fuzzer's clang flags.
CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSEGMUX_FUZZ=ON -DSEGMUX_CUDA=OFF \
  -DSEGMUX_TESTS=OFF -DSEGMUX_BENCH=OFF -DSEGMUX_WERROR=OFF \
  -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined" \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined" >/dev/null
if [ ${#ONLY[@]} -gt 0 ]; then  # named runs build only their targets (their `run NAME TARGET` lines below)
  TARGETS=()
  for name in "${ONLY[@]}"; do TARGETS+=("$(awk -v n="$name" '$1 == "run" && $2 == n { print $3 }' "$0")"); done
fi
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
    echo "| run | executions | seconds | exec/s | edges | features | corpus (committed) | load at end | result |"
    echo "|---|---|---|---|---|---|---|---|---|"
  } >"$SUMMARY"
fi
status=0

# The longest input a run makes: its largest generated seed, at least libFuzzer's default 4096 bytes.
# Mutations and merges stay within it (merged inputs are cut to it), so every committed input is
# bounded by the seeds, not by how long a campaign ran.
max_len_of() {
  local largest
  largest=$(find "$1" -type f -printf '%s\n' | sort -n | tail -1)
  echo $((${largest:-0} > 4096 ? largest : 4096))
}

# merge_corpus NAME TARGET MAX_LEN ENV...: replaces fuzz/corpus/NAME with the inputs of the old
# committed corpus and of this run that add coverage beyond the generated seeds (libFuzzer's
# -merge=1 into a folder that starts with the seeds; the seeds are then taken out again, every run
# regenerates them), smallest first, and drops the largest inputs past FUZZ_CORPUS_KIB.
merge_corpus() {
  local name=$1 target=$2 max_len=$3
  shift 3
  local into="$WORK/merged-$name" committed="$CORPORA/$name"
  rm -rf "$into" && cp -r "$WORK/seeds-$name" "$into"
  mkdir -p "$committed"
  if ! env "$@" ASAN_OPTIONS=detect_leaks=0 "$BUILD/$target" -merge=1 -max_len="$max_len" -rss_limit_mb=4096 \
       -timeout=20 "$into" "$committed" "$WORK/$name" >"$WORK/merge-$name.log" 2>&1; then
    echo "fuzz: $name: merge failed, committed corpus unchanged; last lines:"
    tail -5 "$WORK/merge-$name.log"
    return 0
  fi
  (cd "$WORK/seeds-$name" && find . -type f -printf '%P\0') | (cd "$into" && xargs -0 -r rm -f --)
  local total=0 dropped=0 size file
  while read -r size file; do
    if [ $((total + size)) -gt $((CORPUS_KIB * 1024)) ]; then
      rm -f "$into/$file"
      dropped=$((dropped + 1))
    else
      total=$((total + size))
    fi
  done < <(find "$into" -type f -printf '%s %P\n' | sort -n)
  [ "$dropped" = 0 ] || echo "fuzz: $name: $dropped inputs past the ${CORPUS_KIB} KiB corpus budget dropped"
  rm -rf "$committed.old" && mv "$committed" "$committed.old" && mv "$into" "$committed" && rm -rf "$committed.old"
}

run() {  # name target extra-env...
  local name=$1 target=$2
  shift 2
  if [ ${#ONLY[@]} -gt 0 ] && [[ ! " ${ONLY[*]} " =~ " $name " ]]; then return; fi
  local corpus="$WORK/$name" committed="$CORPORA/$name"
  mkdir -p "$corpus" "$WORK/artifacts-$name" "$WORK/seeds-$name"
  SEGMUX_FUZZ_WRITE_SEEDS="$WORK/seeds-$name" env "$@" "$BUILD/$target" >/dev/null 2>&1 || { echo "fuzz: seed generation for $name failed"; status=1; return; }
  cp -r "$WORK/seeds-$name/." "$corpus/"
  local max_len
  max_len=$(max_len_of "$WORK/seeds-$name")
  # New inputs go to the first folder (the run's scratch copy), never into the committed corpus.
  local dirs=("$corpus")
  [ -d "$committed" ] && dirs+=("$committed")
  local limit=(-max_total_time="$SECONDS_PER_RUN" -seed="${FUZZ_SEED:-1}")
  [ "$LONG" = 1 ] && limit=(-runs="$RUNS" -max_total_time="${FUZZ_MAX_SECONDS:-0}")
  echo "fuzz: $name, ${limit[0]#-} ($(ls "$corpus" | wc -l) seeds, $(ls "$committed" 2>/dev/null | wc -l) committed inputs, max_len $max_len)"
  local start=$SECONDS result=ok
  if ! env "$@" ASAN_OPTIONS=detect_leaks=0 "$BUILD/$target" "${limit[@]}" -max_len="$max_len" -rss_limit_mb=4096 \
       -timeout=20 -print_final_stats=1 -artifact_prefix="$WORK/artifacts-$name/" "${dirs[@]}" >"$WORK/$name.log" 2>&1; then
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
    local secs=$((SECONDS - start)) execs cov ft crashes rate="?"
    execs=$(grep -oE "stat::number_of_executed_units: *[0-9]+" "$WORK/$name.log" | grep -oE "[0-9]+$" | tail -1 || true)
    cov=$(grep -oE " cov: [0-9]+" "$WORK/$name.log" | grep -oE "[0-9]+" | tail -1 || true)
    ft=$(grep -oE " ft: [0-9]+" "$WORK/$name.log" | grep -oE "[0-9]+" | tail -1 || true)
    crashes=$(find "$WORK/artifacts-$name" -type f | wc -l)
    [ "$secs" -gt 0 ] && [ -n "$execs" ] && rate=$((execs / secs))
    merge_corpus "$name" "$target" "$max_len" "$@"
    local files kib
    files=$(find "$committed" -type f | wc -l)
    kib=$(find "$committed" -type f -printf '%s\n' | awk '{ s += $1 } END { print int((s + 1023) / 1024) }')
    ledger_add "$name" "${execs:-0}" "$secs" "${cov:-0}" "${ft:-0}" "$files" "$kib" "$crashes"
    echo "| $name | ${execs:-?} | $secs | $rate | ${cov:-?} | ${ft:-?} | $files files, $kib KiB | $(cut -d' ' -f1 /proc/loadavg) | $result |" >>"$SUMMARY"
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
run eval-json fuzz_eval_json
run label-png fuzz_label_png
if [ "$LONG" = 1 ]; then
  write_ledger_doc
  echo "fuzz: campaign summary in $SUMMARY; ledger $LEDGER, corpora $CORPORA/, table in $DOC: commit them"
fi
exit $status
