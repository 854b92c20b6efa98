#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: installs dependencies, builds Release (build/release, the
# same configuration scripts/test.sh uses, so the two share one build), then
# tracks "shape" through the committed fixture video with the committed tiny fixture model (a test
# model whose outputs equal the official code's, not SAM 3.1's trained weights); without the fixtures,
# a generated video with the built-in random-weight demo model. Everything lands in out/demo/ (the
# compiled model is cached in out/demo-cache/). Idempotent: a second run rebuilds nothing and reuses
# the compiled model.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
JOBS=${JOBS:-$(nproc)}

echo "== building segmux (Release, build/release)"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DSEGMUX_WERROR=ON >/dev/null
cmake --build build/release --target segmux -j "$JOBS"
SEGMUX=build/release/segmux

OUT=out/demo
mkdir -p out
# The committed fixture model and video (../shared/fixtures beside the clone, as in CI): a TINY TEST
# MODEL, random-initialised and calibrated on this video, whose outputs equal the official SAM 3.1
# code's (the golden fixtures prove it), not SAM 3.1's trained weights. Without the fixtures the demo
# falls back to the built-in random-weight model on a generated video.
FIXTURES=${SEGMUX_FIXTURES:-../shared/fixtures}
TINY=$FIXTURES/sam31-tiny
if [ -f "$TINY/weights.safetensors" ] && [ -d "$TINY/video/frames" ]; then
  echo "== segmux track $TINY/video/frames --prompt shape (tiny fixture model) --out $OUT"
  "$SEGMUX" track "$TINY/video/frames" --prompt "shape" --weights "$TINY/weights.safetensors" \
    --config "$TINY/config.json" --vocab "$TINY/tokenizer/bpe_simple_vocab_16e6.txt.gz" \
    --cache-dir out/demo-cache --out "$OUT"
  MODEL_NOTE="The model is sam31-tiny, a TINY TEST MODEL (random-initialised, a few output layers calibrated
on this synthetic video) whose outputs equal Meta's official SAM 3.1 code on the same weights (the
golden fixtures in $TINY prove it). It is NOT SAM 3.1's trained weights: the ids and masks moving
through $OUT/overlay.mp4 show the machinery working, not what SAM 3.1 sees."
else
  echo "== no fixtures at $TINY (set SEGMUX_FIXTURES): falling back to the built-in random-weight demo model"
  VIDEO=out/sample.mp4
  if [ ! -s "$VIDEO" ]; then
    echo "== generating the sample video ($VIDEO)"
    "$SEGMUX" sample-video "$VIDEO" --frames 20 --size 320x240
  fi
  echo "== segmux track $VIDEO --prompt shape --demo --out $OUT"
  "$SEGMUX" track "$VIDEO" --prompt "shape" --demo --out "$OUT" --cache-dir out/demo-cache
  MODEL_NOTE="IMPORTANT: the built-in demo model has RANDOM WEIGHTS. It proves that the whole path runs (video
decoding, the compiled SAM 3.1 candidates, the predictor, the outputs), nothing more: its masks are
meaningless, and with random weights the detector usually finds no object at all, so expect 0 objects."
fi

cat <<EOF

Done. Outputs in $OUT/:
  masks/NNNNN.png   one 16-bit PNG per frame (0 = background, object id + 1 elsewhere)
  tracks.json       per frame: time, object ids, prompts, scores, boxes and COCO RLE masks (pycocotools' string form)
  overlay.mp4       the video with coloured masks, boxes and ids

$MODEL_NOTE

For real results use Meta's official checkpoint sam3.1_multiplex.pt, with the tokenizer vocabulary
bpe_simple_vocab_16e6.txt.gz beside it (or given with --vocab):

  $SEGMUX track video.mp4 --prompt "dog" --weights /path/to/sam3.1_multiplex.pt --out out/dog

The first run compiles the checkpoint (cached in ~/.cache/segmux, or --cache-dir); later runs start at once.
More: docs/track.md and '$SEGMUX track --help'.
EOF
