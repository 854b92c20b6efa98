#!/usr/bin/env bash
# Installs everything segmux needs to build and test, from Debian apt and (test-only ONNX Runtime) npm.
# Idempotent: a second run installs nothing new.
set -euo pipefail
cd "$(dirname "$0")/.."

# fonts-dejavu-core: the overlay labels' font (found at run time; a bitmap font otherwise).
# python3 + python3-numpy: the Python module's test (tests/python, scripts/check_install.sh); a test
# decodes tracks.json's COCO RLE with an independent decoder in Python.
# python3-pip python3-setuptools python3-wheel python3-venv: `pip install .` (pyproject.toml, setup.py),
# checked offline by scripts/check_install.sh (a wheel built with Debian's tools, installed in a venv).
# libcpp-httplib-dev: segmux serve's HTTP server; its pkg-config file requires openssl and libbrotli*
# (libssl-dev, libbrotli-dev; zlib1g-dev is listed already). chromium: the serve page's browser test.
# haproxy: the load balancer in front of segmux serve replicas in tests/serve/test_haproxy.py (deploy/haproxy).
# qemu-user: scripts/portable_check.sh runs segmux on emulated CPUs without AVX-512 / AVX.
# ocl-icd-opencl-dev: only a Recommends of libdnnl-dev, but its CMake config (dnnl-config.cmake) requires
# OpenCL headers and libOpenCL to configure at all.
# slurmctld slurmd slurm-client munge: the `segmux batch` test on a one-node Slurm cluster
# (tests/batch/slurm_array.sh; it starts the daemons itself, in a network namespace).
# clang-format: scripts/check_format.sh (the formatting check of scripts/test.sh).
APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config clang libclang-rt-14-dev
  libdnnl-dev ocl-icd-opencl-dev libonnx-dev libonnx-testdata protobuf-compiler libprotobuf-dev
  nlohmann-json3-dev libcli11-dev zlib1g-dev libxxhash-dev libpng-dev libgif-dev libicu-dev
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libavfilter-dev libfreetype-dev fonts-dejavu-core
  libavdevice-dev  # live input from capture devices (v4l2, lavfi): src/pipeline/media/live_stream.h
  python3 python3-numpy python3-pip python3-setuptools python3-wheel python3-venv libcpp-httplib-dev libssl-dev libbrotli-dev chromium
  libgtest-dev libgmock-dev libbenchmark-dev
  qemu-user haproxy clang-format
  slurmctld slurmd slurm-client munge
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
# node/npm may come from outside Debian's packages (they do on our machines); apt only if absent.
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ONNX Runtime 1.30 (CPU library) and C API headers, test-only, into third_party/ort. The headers come
# from the Unity plugin package, a large download: no leaner npm package has them and Debian 12 has no
# ONNX Runtime (docs/deploy.md, "ONNX Runtime is optional").
ORT_DIR=third_party/ort
if [ ! -f "$ORT_DIR/.complete" ]; then
  mkdir -p "$ORT_DIR"
  [ -f "$ORT_DIR/package.json" ] || echo '{"name":"segmux-ort","private":true}' > "$ORT_DIR/package.json"
  (cd "$ORT_DIR" && ONNXRUNTIME_NODE_INSTALL=skip npm install --silent --no-audit --no-fund \
      onnxruntime-node@1.30.0 com.github.asus4.onnxruntime@0.4.9)
  lib=$(find "$ORT_DIR/node_modules/onnxruntime-node" -path '*linux/x64*' -name 'libonnxruntime.so.1*' | head -n1)
  hdr=$(find "$ORT_DIR/node_modules/com.github.asus4.onnxruntime" -name 'onnxruntime_c_api.h' | head -n1)
  if [ -z "$lib" ] || [ -z "$hdr" ]; then
    echo "setup: ONNX Runtime library or headers not found in the npm packages" >&2
    exit 1
  fi
  mkdir -p "$ORT_DIR/include" "$ORT_DIR/lib"
  cp "$(dirname "$hdr")"/*.h "$ORT_DIR/include/"
  cp "$lib" "$ORT_DIR/lib/"
  ln -sf "$(basename "$lib")" "$ORT_DIR/lib/libonnxruntime.so"
  touch "$ORT_DIR/.complete"
fi
echo "setup: ok"
