#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: installs dependencies, builds Release (build/release, the
# same configuration scripts/test.sh uses, so the two share one build), generates a short synthetic
# video and tracks "shape" through it with the built-in tiny random-weight demo model.
# Everything lands in out/demo/ (the compiled demo model is cached in out/demo-cache/). Idempotent:
# a second run rebuilds nothing, regenerates nothing and reuses the compiled model.
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
VIDEO=out/sample.mp4
if [ ! -s "$VIDEO" ]; then
  echo "== generating the sample video ($VIDEO)"
  "$SEGMUX" sample-video "$VIDEO" --frames 20 --size 320x240
fi

echo "== segmux track $VIDEO --prompt shape --demo --out $OUT"
"$SEGMUX" track "$VIDEO" --prompt "shape" --demo --out "$OUT" --cache-dir out/demo-cache

cat <<EOF

Done. Outputs in $OUT/:
  masks/NNNNN.png   one 16-bit PNG per frame (0 = background, object id + 1 elsewhere)
  tracks.json       per frame: time, object ids, scores, boxes and COCO RLE masks (pycocotools' string form)
  overlay.mp4       the video with coloured masks, boxes and ids

IMPORTANT: the demo model has RANDOM WEIGHTS. It proves that the whole path runs (video decoding,
the five compiled SAM 3.1 candidates, the predictor, the outputs), nothing more: its masks are
meaningless, and with random weights the detector usually finds no object at all, so expect 0 objects
and an overlay that shows the plain video.

For real results use Meta's official checkpoint sam3.1_multiplex.pt, with the tokenizer vocabulary
bpe_simple_vocab_16e6.txt.gz beside it (or given with --vocab):

  $SEGMUX track video.mp4 --prompt "dog" --weights /path/to/sam3.1_multiplex.pt --out out/dog

The first run compiles the checkpoint (cached in ~/.cache/segmux, or --cache-dir); later runs start at once.
More: docs/track.md and '$SEGMUX track --help'.
EOF
