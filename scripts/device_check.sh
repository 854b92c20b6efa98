#!/usr/bin/env bash
# scripts/device_check.sh [RESULTS_DIR]: the one command the GPU machine runs (<= 5 minutes, so that a
# rerun fits the lease), from the repository root, with .device/ carried (scripts/device_pack.sh made it):
#   device tool: run with carry [".device"] and command
#     bash scripts/device_check.sh "$OUT"
# Steps: versions and the card; measured ceilings (bf16/TF32/fp32 GEMM, device copy); the CUDA kernel
# tests; compute-sanitizer memcheck on them where the runtime allows it (Firecracker); every packed
# candidate on the GPU against the CPU executor on the same inputs (fp32 exact, TF32, bf16); a table last.
# Full logs and JSON under RESULTS_DIR ($OUT on the device machine). Exit 1 if a step failed.
# Then every compiled file at full size on a random checkpoint made there (fp32, TF32, bf16), each against
# one CPU run. Not yet here (docs/cuda.md): parity against the fixtures' official tensors on the device,
# video parity, the tracked-frame benchmark (bench-frame), and the official code as the peer.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
results=${1:-${OUT:-/tmp/segmux-device-results}}
mkdir -p "$results"
exec > >(tee "$results/log.txt") 2>&1
t0=$SECONDS
failed=0
step() { echo "== $1 ($((SECONDS - t0)) s)"; }

step env
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv || failed=1
uname -r  # Firecracker kernels end in -fc-...: ncu and compute-sanitizer work there, not under gVisor
# cuBLASLt and cuDNN come from the image's PyTorch wheels (nvidia/<lib>/lib), never from the payload.
cudalibs=$(python3 -c 'import glob, os, nvidia
print(":".join(sorted({os.path.dirname(p) for d in nvidia.__path__ for p in glob.glob(d + "/*/lib/lib*.so*")})))')
stage=/tmp/segmux-device
rm -rf "$stage" && mkdir -p "$stage" && tar -xJf .device/payload.tar.xz -C "$stage" || exit 1
# Only our binaries see the carried libraries (python3 keeps the image's own).
sd=(env LD_LIBRARY_PATH="$stage/lib:$cudalibs" "$stage/bin/segmux-device")
tk=(env LD_LIBRARY_PATH="$stage/lib:$cudalibs" "$stage/bin/test_kernels_cuda_device")

step versions
timeout 30 "${sd[@]}" versions || failed=1

step ceilings
timeout 90 "${sd[@]}" ceilings --json "$results/ceilings.json" || failed=1

step kernels
timeout 120 "${tk[@]}" --gtest_output="xml:$results/kernels.xml" || failed=1
case "$(uname -r)" in
  *fc*)
    step memcheck
    timeout 90 env LD_LIBRARY_PATH="$stage/lib:$cudalibs" compute-sanitizer --tool memcheck \
      "$stage/bin/test_kernels_cuda_device" --gtest_filter='CudaElementwise.*:CudaMovement.*:CudaAttention.*' |
      tail -n 5
    ;;
esac

step candidates
for m in "$stage"/models/*.smx; do
  name=$(basename "$m" .smx)
  modes="fp32"
  case "$name" in *.bf16) modes="bf16" ;; *) modes="fp32 tf32" ;; esac
  for mode in $modes; do
    flag=""
    [ "$mode" = tf32 ] && flag="--tf32"
    # shellcheck disable=SC2086  # $flag is empty or one word
    timeout 60 "${sd[@]}" run "$m" --compare-cpu $flag --json "$results/${name%.bf16}.$mode.json" ||
      { echo "   ($name $mode failed)"; failed=1; }
  done
done

step fullsize  # a random full-size checkpoint made here, every compiled file, GPU vs one CPU run
for mode in fp32 tf32 bf16; do
  case "$mode" in tf32) flags="--tf32" ;; bf16) flags="--precision bf16" ;; *) flags="" ;; esac
  # shellcheck disable=SC2086  # $flags is zero to two words
  timeout 120 "${sd[@]}" fullsize $flags --compare-cpu --iters 10 --json "$results/fullsize.$mode.json" ||
    { echo "   (fullsize $mode failed)"; failed=1; }
done

step table
python3 - "$results" <<'PY'
import glob, json, os, sys
r = sys.argv[1]
c = json.load(open(os.path.join(r, "ceilings.json"))) if os.path.exists(os.path.join(r, "ceilings.json")) else {}
print("ceilings: bf16 %s, tf32 %s, fp32 %s TFLOP/s; copy %s TB/s" % tuple(
    ("%.1f" % c[k]) if k in c else "-" for k in ("bf16_gemm_tflops", "tf32_gemm_tflops", "fp32_gemm_tflops", "copy_tbps")))
print("%-22s %-5s %10s %12s %10s  %s" % ("candidate", "mode", "median ms", "worst cos", "worst rel", "fp32 target cos >= 0.99999"))
rows = []
for f in sorted(glob.glob(os.path.join(r, "*.*.json"))):
    cand, mode = os.path.basename(f)[:-5].rsplit(".", 1)
    j = json.load(open(f))
    if isinstance(j, list):  # fullsize: one entry per compiled file
        rows += [("full:" + e.get("candidate", "?"), mode, e) for e in j]
    else:
        rows.append((cand, mode, j))
for cand, mode, j in rows:
    if "error" in j:
        print("%-22s %-5s  FAILED: %s" % (cand, mode, j["error"][:200]))
        continue
    outs = j.get("outputs", {}).values()
    cos = min((o["cos"] for o in outs), default=float("nan"))
    rel = max((o["rel"] for o in j.get("outputs", {}).values()), default=float("nan"))
    verdict = ("PASS" if cos >= 0.99999 else "MISS") if mode == "fp32" else "(measured)"
    if not all(o.get("finite", False) for o in j.get("outputs", {}).values()):
        verdict = "NOT FINITE"
    print("%-22s %-5s %10.3f %12.7f %10.3g  %s" % (cand, mode, j.get("median_ms", float("nan")), cos, rel, verdict))
PY
echo "device_check: $((SECONDS - t0)) s, $([ $failed = 0 ] && echo 'every step ran' || echo 'SOME STEP FAILED (log above)')"
exit $failed
