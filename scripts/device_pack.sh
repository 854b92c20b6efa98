#!/usr/bin/env bash
# scripts/device_pack.sh [BUILD_DIR]: on the CPU machine, builds what travels to the GPU machine and packs
# it into .device/payload.tar.xz (.device/ is git-ignored: the device tool's `carry` takes it):
#   bin/segmux-device             the runtime + CUDA backend tool (no media, ONNX, ICU or HTTP)
#   bin/test_kernels_cuda_device  tests/kernels_cuda over the kernels layer alone
#   lib/                          the shared libraries they need that the device image lacks (libdnnl and
#                                 its libgomp/libOpenCL, zlib); never cuBLASLt or cuDNN, which the image's
#                                 nvidia-* wheels hold, nor glibc or libstdc++ (the image's are newer)
#   models/                       the tiny fixture model's candidates (tests/fixtures/sam31-tiny-image)
#                                 compiled here for the generic ISA, fp32 and bf16 (the text encoder in fp32
#                                 only: 13 MB of weights that xz cannot shrink, run once per prompt)
# Then scripts/device_check.sh runs on the GPU machine. Fails when the payload passes 34 MiB (the device
# tool carries at most 64 MiB with the working tree, about 30 MiB of which is the tree itself).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${1:-build/release}
out=.device
stage=$out/stage
fixture=tests/fixtures/sam31-tiny-image
candidates="text_encoder backbone detector interactive_decoder point_decoder propagation_decoder memory_encoder"

cmake --build "$build" --target segmux segmux-device test_kernels_cuda_device >/dev/null
rm -rf "$out"
mkdir -p "$stage/bin" "$stage/lib" "$stage/models" "$out/onnx"
cp "$build/segmux-device" "$build/test_kernels_cuda_device" "$stage/bin/"

for bin in "$stage"/bin/*; do
  ldd "$bin" | awk '/=>/ {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libcublas* | libcudnn* | libcuda.so* | libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | \
        ld-linux* | libstdc++.so* | libgcc_s.so*) ;;
      *) cp -L -n "$lib" "$stage/lib/" ;;
    esac
  done
done

for c in $candidates; do
  "$build/segmux" export-onnx --candidate "$c" --weights "$fixture/weights.safetensors" --config "$fixture/config.json" \
    -o "$out/onnx/$c.onnx" >/dev/null
  "$build/segmux" compile "$out/onnx/$c.onnx" --target generic -o "$stage/models/$c.smx" >/dev/null
  [ "$c" = text_encoder ] ||
    "$build/segmux" compile "$out/onnx/$c.onnx" --target generic --precision bf16 -o "$stage/models/$c.bf16.smx" >/dev/null
done
rm -rf "$out/onnx"

tar -cJf "$out/payload.tar.xz" -C "$stage" bin lib models
rm -rf "$stage"
bytes=$(stat -c %s "$out/payload.tar.xz")
echo "device_pack: $out/payload.tar.xz $((bytes / 1024)) KiB ($(tar -tJf "$out/payload.tar.xz" | grep -c -v '/$') files)"
if [ "$bytes" -gt $((34 * 1024 * 1024)) ]; then
  echo "device_pack: the payload passes 34 MiB: it would not travel with the working tree" >&2
  exit 1
fi
