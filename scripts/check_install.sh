#!/usr/bin/env bash
# The installed package as a user meets it: `cmake --install` into a temporary prefix, then the C and
# C++ examples built OUT OF TREE against that prefix, once through find_package(segmux) and once through
# pkg-config, each run on the fixture model and video; then the Python module from the prefix
# (tests/python/test_segmux.py: the same ids and masks as `segmux track`). A minute or two.
# Usage: scripts/check_install.sh [BUILD_DIR]   (default build/release, already built)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
src=$PWD
fixture=${SEGMUX_FIXTURES:-$src/../shared/fixtures}/sam31-tiny
export GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-1000}

work=$(mktemp -d "${TMPDIR:-/tmp}/segmux-install-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null

# Only the public API is installed as headers.
headers=$(cd "$prefix/include" && find . -type f | sort | tr '\n' ' ')
[ "$headers" = "./segmux/segmux.h ./segmux/segmux.hpp ./segmux/version.h " ] ||
  { echo "check_install: unexpected installed headers: $headers"; exit 1; }
lib=$(find "$prefix" -name 'libsegmux.so.*.*.*' | head -n1)
bash scripts/check_exports.sh "$lib" >/dev/null
pcdir=$(dirname "$(find "$prefix" -name segmux.pc | head -n1)")
[ "$("$prefix/bin/segmux" --version)" = "segmux $(PKG_CONFIG_PATH=$pcdir pkg-config --modversion segmux)" ] ||
  { echo "check_install: segmux --version and segmux.pc disagree"; exit 1; }

# The fixture checkpoint, compiled once into a cache shared by every run below.
model_args=(--checkpoint "$fixture/weights.safetensors" "$fixture/config.json"
            "$fixture/tokenizer/bpe_simple_vocab_16e6.txt.gz" "$fixture/video/frames" shape)
export XDG_CACHE_HOME=$work/cache

run_example() {  # NAME BINARY: runs it on the fixture and checks it tracked every frame
  local out
  out=$("$2" "${model_args[@]}")
  grep -q "^16 frames tracked$" <<<"$out" || { echo "check_install: $1 did not track the fixture:"; echo "$out"; exit 1; }
  echo "check_install: $1: $(grep -c '^frame ' <<<"$out") frames, $(tail -n1 <<<"$out")"
}

# 1. find_package(segmux), out of tree.
for lang in c cpp; do
  cmake -S "examples/$lang" -B "$work/ex-$lang" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$work/ex-$lang" >/dev/null
  run_example "find_package $lang" "$work/ex-$lang/track_$lang"
done

# 2. pkg-config.
export PKG_CONFIG_PATH=$pcdir
libdir=$(pkg-config --variable=libdir segmux)
# shellcheck disable=SC2046
cc -std=c99 -Wall -Wextra -Werror -pedantic examples/c/track.c $(pkg-config --cflags --libs segmux) \
   -Wl,-rpath,"$libdir" -o "$work/track_c_pc"
# shellcheck disable=SC2046
c++ -std=c++17 -Wall -Wextra -Werror examples/cpp/track.cpp $(pkg-config --cflags --libs segmux) \
    -Wl,-rpath,"$libdir" -o "$work/track_cpp_pc"
run_example "pkg-config c" "$work/track_c_pc"
run_example "pkg-config cpp" "$work/track_cpp_pc"

# 3. Python from the prefix (when the module is there) (no SEGMUX_LIBRARY: the module finds its libsegmux by itself), with
# Debian's python3 (a python3 earlier on PATH, pyenv or a venv, may lack numpy).
python=python3
[ -x /usr/bin/python3 ] && python=/usr/bin/python3
if [ -f "$src/tests/python/test_segmux.py" ]; then
  pydir=$(dirname "$(find "$prefix" -path '*/segmux/__init__.py' | head -n1)")
  PYTHONPATH=$(dirname "$pydir") SEGMUX_BIN=$prefix/bin/segmux SEGMUX_FIXTURES=$(dirname "$fixture") \
    SEGMUX_TEST_CACHE=$work/cache/segmux "$python" "$src/tests/python/test_segmux.py"
fi
echo "check_install: ok"
