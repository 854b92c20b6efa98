#!/usr/bin/env bash
# segmux on CPUs without AVX-512, by emulation (qemu-user, scripts/setup.sh installs it): the kernels
# tests (every ISA level the emulated CPU has, see tests/kernels_cpu) and `segmux parity` on the tiny
# fixtures, under `qemu-x86_64 -cpu Haswell` (AVX2, no AVX-512) and `-cpu Nehalem` (SSE4.2, no AVX).
# Each step checks that the emulated CPU really ran our code: the kernels tests print the level they
# detected, and segmux, asked for SEGMUX_ISA=avx512, must warn that the CPU lacks it.
# Usage: scripts/portable_check.sh [CPU...]  (default: Haswell Nehalem)
# Env: BUILD_DIR (build/release), FIXTURES (../shared/fixtures), PARITY_ARGS (extra `segmux parity`
# options, e.g. "--candidate text_encoder" for a shorter run), SKIP_BUILD=1 (use the built binaries).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build/release}
FIXTURES=${FIXTURES:-../shared/fixtures}
read -r -a parity_args <<< "${PARITY_ARGS:-}"
cpus=("$@")
[ ${#cpus[@]} -gt 0 ] || cpus=(Haswell Nehalem)
command -v qemu-x86_64 >/dev/null || { echo "portable_check: qemu-x86_64 missing (apt-get install qemu-user)" >&2; exit 1; }

# With GOMP_SPINCOUNT set, segmux's main() does not re-execute itself through /proc/self/exe (under
# qemu-user that exec would start the binary natively, outside the emulator); a short spin also keeps
# emulated idle OpenMP threads from burning the host.
export GOMP_SPINCOUNT=1000
unset OMP_WAIT_POLICY SEGMUX_ISA
export XDG_CACHE_HOME
XDG_CACHE_HOME=$(mktemp -d)  # compiled-candidate cache of this run only (entries name their ISA)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$XDG_CACHE_HOME"' EXIT

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD" --target segmux test_kernels_cpu test_kernels_reference
fi

# The level our dispatcher should find on each emulated CPU model.
expected_level() {
  case $1 in
    Skylake-Server* | Cascadelake* | Cooperlake* | Icelake-Server* | SapphireRapids*) echo avx512 ;;
    Haswell* | Broadwell* | Skylake-Client* | EPYC*) echo avx2 ;;
    *) echo generic ;;
  esac
}

quiet() { grep -v "TCG doesn't support requested feature" || true; }
# Step timing: wall seconds, and the CPU seconds of the finished children (the machine may be busy).
cpu_mark() {
  times > "$tmp/times"
  CPU=$(tail -n 1 "$tmp/times" | awk '{ split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.0f", u[1]*60+u[2]+s[1]*60+s[2] }')
}
start_step() {
  cpu_mark
  T0=$(date +%s) C0=$CPU
}
step_time() {  # sets STEP
  cpu_mark
  STEP="$(($(date +%s) - T0))s wall/$((CPU - C0))s cpu"
}
summary=()

for cpu in "${cpus[@]}"; do
  level=$(expected_level "$cpu")
  emu=(qemu-x86_64 -cpu "$cpu")
  echo "== qemu-x86_64 -cpu $cpu (expected kernel level: $level)"

  start_step
  "${emu[@]}" "$BUILD/test_kernels_cpu" --gtest_brief=1 2>&1 | quiet | tee "$tmp/cpu.log" | tail -n 3
  grep -q "cpu $level, active $level" "$tmp/cpu.log" || {
    echo "portable_check: test_kernels_cpu did not report level $level: not run by the emulated $cpu?" >&2
    exit 1
  }
  step_time
  t_cpu=$STEP

  start_step
  "${emu[@]}" "$BUILD/test_kernels_reference" --gtest_brief=1 2>&1 | quiet | tail -n 2
  step_time
  t_ref=$STEP

  # The commands that died with SIGILL before run-time dispatch, on the tiny backbone.
  start_step
  m=$tmp/$cpu
  "${emu[@]}" "$BUILD/segmux" export-onnx --candidate backbone --weights "$FIXTURES/sam31-tiny/weights.safetensors" \
    --config "$FIXTURES/sam31-tiny/config.json" -o "$m.onnx" 2>&1 | quiet > /dev/null
  for target in generic native; do
    want=generic
    [ "$target:$level" = native:avx512 ] && want=x86-64-avx512
    "${emu[@]}" "$BUILD/segmux" compile "$m.onnx" -o "$m-$target.smx" --target "$target" 2>&1 | quiet > /dev/null
    "${emu[@]}" "$BUILD/segmux" inspect "$m-$target.smx" > "$tmp/inspect" 2>&1
    grep -q "target ISA $want," "$tmp/inspect" || {
      echo "portable_check: compile --target $target under -cpu $cpu did not give a $want model" >&2
      exit 1
    }
  done
  "${emu[@]}" "$BUILD/segmux" run "$m-native.smx" --random --output "$m-opt.safetensors" 2>&1 | quiet > /dev/null
  "${emu[@]}" "$BUILD/segmux" run "$m.onnx" --random --reference --output "$m-ref.safetensors" 2>&1 | quiet > /dev/null
  step_time
  t_cmds=$STEP

  start_step
  rc=0
  SEGMUX_ISA=avx512 "${emu[@]}" "$BUILD/segmux" parity "$FIXTURES/sam31-tiny" "${parity_args[@]}" \
    > "$tmp/parity.out" 2> "$tmp/parity.err" || rc=$?
  tail -n 3 "$tmp/parity.out"
  if [ $rc -ne 0 ]; then
    grep -E "fail|error" "$tmp/parity.out" | head -n 20 || true
    quiet < "$tmp/parity.err" | tail -n 20 >&2
    echo "portable_check: segmux parity failed under -cpu $cpu (exit $rc)" >&2
    exit 1
  fi
  # (A CPU with AVX-512 cannot be told apart from the host this way.)
  [ "$level" = avx512 ] || grep -q "more than this CPU supports; using $level" "$tmp/parity.err" || {
    quiet < "$tmp/parity.err" | tail -n 20 >&2
    echo "portable_check: segmux did not find level $level: not run by the emulated $cpu?" >&2
    exit 1
  }
  step_time
  t_parity=$STEP
  summary+=("$cpu ($level): test_kernels_cpu $t_cpu, test_kernels_reference $t_ref, commands $t_cmds, parity $t_parity")
done

echo "== portable_check: ok"
printf '%s\n' "${summary[@]}"
