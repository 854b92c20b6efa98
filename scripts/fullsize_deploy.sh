#!/usr/bin/env bash
# A full-size deployment package, built once (issue 10): `segmux deploy` on the official full-size
# configuration (random weights with the official keys), then `segmux verify-package` on the moved
# package; sizes and times go to docs/deploy-fullsize.md (atomically). Run by scripts/fullsize_check.sh
# with DEPLOY=1, or alone. NOT in CI: ~3.4 GB checkpoint + ~10 GB package, many minutes on two cores.
#
# Environment:
#   BUILD_DIR    build folder (default build/release; the segmux target must be built)
#   CHECKPOINT   reuse (or create and keep) this full-size checkpoint instead of a temporary one
#   WORK_DIR     where the package is made and moved (default: a temporary folder, removed at the end)
#   THREADS      threads (default: nproc)
#   REFERENCE    verification reference (default onnxruntime: the reference kernels take hours at full size)
#   PRECISIONS, TARGETS   as segmux deploy --precision / --target (default fp32 / native)
#   TOTAL_TIMEOUT_S  limit for the deploy (default 5400)
#   VERIFY_TIMEOUT_S limit for verify-package (default 5400)
#   DOC          output document (default docs/deploy-fullsize.md)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build/release}
THREADS=${THREADS:-$(nproc)}
REFERENCE=${REFERENCE:-onnxruntime}
DOC=${DOC:-docs/deploy-fullsize.md}
export GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-1000}
segmux="$PWD/$BUILD_DIR/segmux"
work=${WORK_DIR:-$(mktemp -d)}
mkdir -p "$work"
[ -z "${WORK_DIR:-}" ] && trap 'rm -rf "$work"' EXIT
ckpt=${CHECKPOINT:-$work/sam31_fullsize_random.pt}
if [ ! -f "$ckpt" ]; then
  echo "writing a full-size random checkpoint to $ckpt"
  "$segmux" make-checkpoint --random --config full -o "$ckpt"
fi
vocab_dir=$(dirname "$ckpt")
vocab=$vocab_dir/bpe_simple_vocab_16e6.txt.gz
[ -f "$vocab" ] || vocab=../shared/fixtures/sam31-tiny/tokenizer/bpe_simple_vocab_16e6.txt.gz
rm -rf "$work/made" "$work/moved"
mkdir -p "$work/made"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date -u '+%Y-%m-%d %H:%M UTC')
t0=$(date +%s)
status=0
timeout --signal=TERM "${TOTAL_TIMEOUT_S:-5400}" "$segmux" deploy "$ckpt" -o "$work/made/pkg" --vocab "$vocab" \
  --precision "${PRECISIONS:-fp32}" --target "${TARGETS:-native}" --reference "$REFERENCE" --threads "$THREADS" ||
  status=$?
deploy_s=$(($(date +%s) - t0))
vstatus=-
verify_s=-
if [ "$status" = 0 ]; then
  mv "$work/made" "$work/moved"
  t0=$(date +%s)
  vstatus=0
  timeout --signal=TERM "${VERIFY_TIMEOUT_S:-5400}" "$segmux" verify-package "$work/moved/pkg" --threads "$THREADS" \
    >"$work/verify.txt" 2>&1 || vstatus=$?
  verify_s=$(($(date +%s) - t0))
fi
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
tmp_doc="$DOC.tmp.$$"
{
  echo "# Full-size deployment package (issue 10)"
  echo
  echo "\`segmux deploy\` on the FULL official configuration (random weights with the official keys), the"
  echo "package moved, then \`segmux verify-package\`. Regenerate with \`scripts/fullsize_deploy.sh\` (or"
  echo "\`DEPLOY=1 scripts/fullsize_check.sh\`). Not in CI."
  echo
  echo "- run: $start, $(nproc) cores, $THREADS threads; load average before: $load_before, after: $load_after"
  echo "- checkpoint: $(stat -c %s "$ckpt") bytes; verification reference: $REFERENCE"
  echo "- deploy: exit $status in $deploy_s s (124: stopped by TOTAL_TIMEOUT_S); verify-package of the moved"
  echo "  package: exit $vstatus in $verify_s s (124: stopped by VERIFY_TIMEOUT_S)"
  if [ "$status" = 0 ]; then
    echo "- package: $(du -sb "$work/moved/pkg" | cut -f1) bytes in $(find "$work/moved/pkg" -type f | wc -l) files"
    echo
    echo "| file | bytes |"
    echo "| --- | --- |"
    (cd "$work/moved/pkg" && find . -type f -printf '%P %s\n' | sort | awk '{print "| " $1 " | " $2 " |"}')
    echo
    echo "## report.md of the package (timings per stage, verification, compiler command lines)"
    echo
    sed 's/^#/##/' "$work/moved/pkg/report.md"
    echo
    echo "## verify-package"
    echo
    echo '```'
    tail -3 "$work/verify.txt"
    echo '```'
  fi
} >"$tmp_doc"
mv "$tmp_doc" "$DOC"
echo "wrote $DOC"
[ "$status" = 0 ] && [ "$vstatus" = 0 ]
