#!/usr/bin/env bash
# The full-size check (issue 3 item 6): builds Release and runs `segmux fullsize-check`, which builds,
# compiles and runs once every SAM 3.1 candidate at the official full-size configuration with random
# weights, then writes the results to docs/fullsize-check.md (atomically).
#
# NOT run in CI: it writes a 3.4 GB checkpoint, needs ~10+ GB of memory and takes many minutes on two
# cores. Run it by hand after changes to the model builders, the compiler passes or the memory planner.
#
# Environment:
#   BUILD_DIR     build folder (default build/release, configured as scripts/test.sh does)
#   CHECKPOINT    reuse (or create and keep) this full-size checkpoint instead of a temporary one
#   CANDIDATES    space-separated candidate list (default: cheapest first, the ViT backbone last)
#   TIMEOUT_S     per-candidate time limit in seconds (default 1800)
#   THREADS       executor threads (default: nproc)
#   DOC           output document (default docs/fullsize-check.md)
#   TOTAL_TIMEOUT_S  limit for the whole run (default none); the rows finished by then are kept
#   SKIP_BUILD=1  use the binary already in BUILD_DIR
#   DEPLOY=1      then build a full-size deployment package too (scripts/fullsize_deploy.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build/release}
DOC=${DOC:-docs/fullsize-check.md}
TIMEOUT_S=${TIMEOUT_S:-1800}
THREADS=${THREADS:-$(nproc)}
CANDIDATES=${CANDIDATES:-"text_encoder detector memory_encoder memory_encoder:image_size_masks interactive_decoder propagation_decoder backbone"}
export GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-1000}
export CCACHE_BASEDIR="$PWD"

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSEGMUX_WERROR=ON >/dev/null
  cmake --build "$BUILD_DIR" --target segmux -j "$(nproc)"
fi

args=(fullsize-check --threads "$THREADS" --timeout-s "$TIMEOUT_S")
[ -n "${CHECKPOINT:-}" ] && args+=(--checkpoint "$CHECKPOINT")
for c in $CANDIDATES; do args+=(--candidate "$c"); done

tmp_table=$(mktemp)
tmp_doc="$DOC.tmp.$$"
trap 'rm -f "$tmp_table" "$tmp_doc"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date -u '+%Y-%m-%d %H:%M UTC')
status=0
limit=()
[ -n "${TOTAL_TIMEOUT_S:-}" ] && limit=(timeout --signal=TERM "$TOTAL_TIMEOUT_S")
"${limit[@]}" "$BUILD_DIR/segmux" "${args[@]}" --markdown "$tmp_table" || status=$?
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

{
  echo "# Full-size check (issue 3 item 6)"
  echo
  echo "Every SAM 3.1 deployment candidate built at the FULL official configuration (\`sam31::default_config()\`)"
  echo "from a random-weight checkpoint with exactly the official 1,623 keys, compiled (\`compile_graph\`), its"
  echo "executor created and run ONCE on random inputs of the contract's shapes and dtypes. Each candidate runs"
  echo "in its own child process, so its peak RSS (VmHWM) is its own. Weights are mmapped, so the peak includes"
  echo "the checkpoint pages the candidate touched."
  echo
  echo "**Not run in CI**: it writes a 3.4 GB checkpoint, needs ~10+ GB of memory and takes many minutes on"
  echo "two cores. Regenerate with \`scripts/fullsize_check.sh\` (or \`segmux fullsize-check --help\`)."
  echo
  echo "- run: $start, $(nproc) cores, $THREADS executor threads, per-candidate limit ${TIMEOUT_S} s"
  echo "- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/{print $2}') GiB"
  echo "- load average (1/5/15 min) before: $load_before, after: $load_after (the machine is shared; timings are"
  echo "  indicative only)"
  echo "- exit status of \`segmux fullsize-check\`: $status (124: stopped by TOTAL_TIMEOUT_S=${TOTAL_TIMEOUT_S:-none};"
  echo "  candidates missing from the table did not run)"
  echo
  echo "Columns: seconds of each stage (executor = kernel creation, weight prepacking and arena touch); peak"
  echo "resident memory (VmHWM) after each stage; anonymous vs file-backed (mmapped checkpoint) RSS at the end;"
  echo "the arena the memory planner chose; prepacked weight bytes; output shapes. status ok = ran, every"
  echo "output value finite."
  echo
  cat "$tmp_table"
} >"$tmp_doc"
mv "$tmp_doc" "$DOC"
echo "wrote $DOC"
if [ "${DEPLOY:-0}" = 1 ]; then
  BUILD_DIR="$BUILD_DIR" THREADS="$THREADS" CHECKPOINT="${CHECKPOINT:-}" bash scripts/fullsize_deploy.sh || status=$?
fi
exit "$status"
