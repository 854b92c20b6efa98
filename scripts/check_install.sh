#!/usr/bin/env bash
# The installed package as a user meets it: `cmake --install` into a temporary prefix, then the C and
# C++ examples built OUT OF TREE against that prefix, once through find_package(segmux) and once through
# pkg-config, each run on the fixture model and video; then the Python module from the prefix
# (tests/python/test_segmux.py: the same ids and masks as `segmux track`); then `pip install` as a user
# does it: a wheel built from the source tree with Debian's setuptools/wheel (offline, no build
# isolation, reusing BUILD_DIR through SEGMUX_BUILD_DIR: no second build), installed into a fresh venv
# that takes numpy from Debian's python3-numpy, then imported with no environment variable. A few minutes.
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

# The fixture checkpoint, compiled once into a cache shared by every run below; its config.json as the
# flat model config the library reads.
"$prefix/bin/segmux" fixture-config "$fixture/config.json" -o "$work/model_config.json" >/dev/null
model_args=(--checkpoint "$fixture/weights.safetensors" "$work/model_config.json"
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

# The image API through the installed package: objects of the fixture's first frame, each with its prompt.
out=$("$work/ex-c/segment_c" --checkpoint "$fixture/weights.safetensors" "$work/model_config.json" \
      "$fixture/tokenizer/bpe_simple_vocab_16e6.txt.gz" "$fixture/video/frames/00000.png" shape)
grep -q '^object 0: prompt "shape"' <<<"$out" && ! grep -q '^0 objects$' <<<"$out" ||
  { echo "check_install: segment_c found nothing:"; echo "$out"; exit 1; }
echo "check_install: find_package c segment: $(tail -n1 <<<"$out")"

# The C++ image predictor through the installed package: the official notebook's clicks (a point, its
# best candidate's low-res logits fed back with a second point) against the official goldens.
sam1=$src/tests/fixtures/sam31-tiny-sam1
"$prefix/bin/segmux" fixture-config "$sam1/config.json" -o "$work/sam1_model_config.json" >/dev/null
out=$("$work/ex-cpp/predict_image_cpp" --checkpoint "$sam1/weights.safetensors" "$work/sam1_model_config.json" \
      "$sam1/tokenizer/bpe_simple_vocab_16e6.txt.gz" "$sam1/images/frame00.png" 163,79 150,60)
compare=$(cat <<'PY'
import json, re, sys
cases = {c["name"]: c for c in json.load(open(sys.argv[1]))["cases"]}
text = sys.stdin.read()
got = [(float(s), int(a)) for s, a in re.findall(r"score (\S+) area (\d+)", text)]
want = [(s, a) for c in ("frame00_point_multimask", "frame00_refine_mask_input")
        for s, a in zip(cases[c]["scores"], cases[c]["mask_areas"])]
# The C API test's score tolerance; areas within the parity tests' mask IoU of 0.999.
ok = len(got) == len(want) and all(abs(g[0] - w[0]) < 2e-4 and abs(g[1] - w[1]) <= 1e-3 * max(g[1], w[1])
                                   for g, w in zip(got, want))
sys.exit(0 if ok and "picked candidate 2" in text else 1)
PY
)
/usr/bin/python3 -c "$compare" "$sam1/cases.json" <<<"$out" ||
  { echo "check_install: predict_image_cpp differs from the official predictor:"; echo "$out"; exit 1; }
echo "check_install: find_package cpp image predictor: $(tail -n1 <<<"$out")"

# 2. pkg-config.
export PKG_CONFIG_PATH=$pcdir
libdir=$(pkg-config --variable=libdir segmux)
# shellcheck disable=SC2046
cc -std=c99 -Wall -Wextra -Werror -pedantic examples/c/track.c $(pkg-config --cflags --libs segmux) \
   -Wl,-rpath,"$libdir" -o "$work/track_c_pc"
# shellcheck disable=SC2046
c++ -std=c++17 -Wall -Wextra -Werror examples/cpp/track.cpp $(pkg-config --cflags --libs segmux) \
    -Wl,-rpath,"$libdir" -o "$work/track_cpp_pc"
# shellcheck disable=SC2046
c++ -std=c++17 -Wall -Wextra -Werror examples/cpp/predict_image.cpp $(pkg-config --cflags --libs segmux) \
    -Wl,-rpath,"$libdir" -o "$work/predict_image_cpp_pc"
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
# 4. pip install from the source tree (pyproject.toml + setup.py), offline. The venv sees Debian's
# site-packages for numpy only (--system-site-packages; pip installs numpy from PyPI where it can reach
# it); segmux itself comes from the wheel.
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import setuptools, wheel, pip, venv" 2>/dev/null; then
  SEGMUX_BUILD_DIR=$(cd "$build" && pwd) timeout 900 /usr/bin/python3 -m pip wheel --no-build-isolation --no-index \
    --no-deps -q -w "$work/wheel" "$src"
  wheel=$(find "$work/wheel" -name 'segmux-*.whl' | head -n1)
  [ -n "$wheel" ] || { echo "check_install: pip wheel made no segmux wheel"; exit 1; }
  /usr/bin/python3 -c 'import sys, zipfile; n = zipfile.ZipFile(sys.argv[1]).namelist(); print(n)
sys.exit(not any(x.startswith("segmux/libsegmux.so.") for x in n))' "$wheel" >/dev/null ||
    { echo "check_install: the wheel lacks segmux/libsegmux.so.*"; exit 1; }
  /usr/bin/python3 -m venv --system-site-packages "$work/venv"
  "$work/venv/bin/python" -m pip install -q --no-index "$wheel"
  # No PYTHONPATH, SEGMUX_LIBRARY or LD_LIBRARY_PATH, and not from the source tree: the module and its
  # library come from the venv.
  got=$(cd "$work" && env -u PYTHONPATH -u SEGMUX_LIBRARY -u LD_LIBRARY_PATH "$work/venv/bin/python" -c \
    'import segmux, segmux._capi as c; print(segmux.__version__, segmux.__file__, c._library_path())')
  read -r version module library <<<"$got"
  [ "$version" = "$("$prefix/bin/segmux" --version | cut -d' ' -f2)" ] && [[ "$module" == "$work/venv/"* ]] &&
    [[ "$library" == "$work/venv/"*"/segmux/libsegmux.so."* ]] ||
    { echo "check_install: the pip-installed module is not self-contained: $got"; exit 1; }
  (cd "$work" && env -u PYTHONPATH -u SEGMUX_LIBRARY -u LD_LIBRARY_PATH SEGMUX_BIN=$prefix/bin/segmux \
     SEGMUX_FIXTURES=$(dirname "$fixture") SEGMUX_TEST_CACHE=$work/cache/segmux \
     "$work/venv/bin/python" "$src/tests/python/test_segmux.py" TrackParity.test_same_ids_and_masks_as_segmux_track)
  echo "check_install: pip: $(basename "$wheel") installed in a fresh venv, imported with no environment variable"
else
  echo "check_install: pip install not checked: /usr/bin/python3 lacks setuptools, wheel, pip or venv (scripts/setup.sh)"
  exit 1
fi
echo "check_install: ok"
