#!/usr/bin/env bash
# The test command: installs dependencies, builds Release with warnings as errors, runs every test,
# then rebuilds the unit tests under ASan+UBSan and runs them, then the bounded fuzz runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
JOBS=${JOBS:-$(nproc)}
# Short OpenMP spin: tests share the cores with each other and the build (see src/apps/main.cpp).
export GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-1000}
# ccache keyed on paths relative to the checkout, so a fresh clone reuses earlier builds.
export CCACHE_BASEDIR="$PWD"
# ...also for the -g builds (sanitizer, fuzz): without this ccache hashes the build folder into them.
export CCACHE_NOHASHDIR=1

cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DSEGMUX_WERROR=ON >/dev/null
cmake --build build/release -j "$JOBS"
# setup.sh must install everything the build used (a machine with more installed must not hide a gap).
bash scripts/check_packages.sh build/release
# THIRD_PARTY_NOTICES.md must list what the binaries really link.
bash scripts/third_party_notices.sh build/release --check
ctest --test-dir build/release --output-on-failure -j 1
# Formatting: every tracked C/C++ file as .clang-format says (prints the drifting files).
bash scripts/check_format.sh
# The installed package: C/C++ examples built out of tree (find_package and pkg-config), Python module.
bash scripts/check_install.sh build/release
# The README's main job as a new user runs it (setup done, the Release build shared: seconds), and what
# it promises in out/demo/.
bash scripts/demo.sh >/dev/null
for f in out/demo/tracks.json out/demo/overlay.mp4 out/demo/masks/00000.png; do
  [ -s "$f" ] || { echo "demo.sh: $f is missing or empty" >&2; exit 1; }
done
echo "demo: ok"

# The acceptance commands of issues 3 and 4 on the golden fixtures: every candidate (both weight files,
# our runtime and ONNX Runtime, the tokenizer), then the whole predictor against the official trace.
FIXTURES=${SEGMUX_FIXTURES:-../shared/fixtures}
build/release/segmux parity "$FIXTURES/sam31-tiny" | tail -n 40
build/release/segmux parity --video "$FIXTURES/sam31-tiny" --cache-dir build/release/parity-cache | tail -n 20
# The fixture sets made in-project from the official code (tools/fixtures): every candidate each holds
# (box exemplars, point prompts, memory encodings, image cases); the held-out videos run in ctest.
for set in sam31-tiny-prompts sam31-tiny-image; do
  build/release/segmux parity "tests/fixtures/$set" | tail -n 3
done

# Any x86-64: the fixtures at each lower kernel level (forced natively), then under emulated CPUs without
# AVX-512 (Haswell: AVX2) and without AVX (Nehalem: generic) with qemu-user, which also runs the kernels
# tests there. scripts/portable_check.sh without arguments is the full check (every parity backend).
for isa in avx2 generic; do
  SEGMUX_ISA=$isa build/release/segmux parity "$FIXTURES/sam31-tiny" --no-ort | tail -n 1
done
SKIP_BUILD=1 FIXTURES="$FIXTURES" \
  PARITY_ARGS="--no-ort --no-reference --weights $FIXTURES/sam31-tiny/weights.safetensors" \
  bash scripts/portable_check.sh Haswell Nehalem | tail -n 3

if [ "${SEGMUX_SKIP_SANITIZE:-0}" != 1 ]; then
  # -O1 -g1: the sanitizer build is for finding errors, not speed; this keeps its compile time (the
  # longest part of CI on 2 cores) down while ASan/UBSan reports still name functions and lines.
  cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" -DCMAKE_C_FLAGS="-O1 -g1" \
        -DSEGMUX_WERROR=ON -DSEGMUX_SANITIZE=ON -DSEGMUX_BENCH=OFF >/dev/null
  cmake --build build/asan -j "$JOBS"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 LSAN_OPTIONS=suppressions="$PWD/scripts/lsan.supp" \
    ctest --test-dir build/asan --output-on-failure -j 1 -L unit -LE slow
fi

if [ -x scripts/fuzz.sh ] && [ "${SEGMUX_SKIP_FUZZ:-0}" != 1 ]; then
  bash scripts/fuzz.sh
fi
