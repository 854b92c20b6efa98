#!/usr/bin/env bash
# Whole-frame benchmark at full size (issues 9, 26): `segmux bench-frame` for N = 16, 32, 64 tracked objects in
# fp32 and bf16 on a random full-size checkpoint, the fp32/bf16 peaks of this machine measured in the
# same run (bench_matmul, right before and right after each configuration: the virtual machine's speed
# drifts over minutes), and the floor each frame would have at those peaks (FLOP estimate of the
# compiled candidates, `segmux inspect`; and that of the work the frame does, without the padded memory
# slots whose keys the attention skips). Writes docs/performance.md (atomically).
#
# NOT run in CI: the checkpoint is 3.4 GB, each configuration needs ~10 GiB and several minutes per
# frame on two cores. The machine may be shared: the load average is recorded with every figure.
#
# Environment:
#   BUILD_DIR     build folder (default build/release)
#   CHECKPOINT    full-size checkpoint (default /tmp/segmux-fullsize.pt, created by make-checkpoint if absent)
#   CONFIG        model config (default: full size; a smaller one makes a quick trial of the script)
#   CACHE_DIR     compiled-candidate cache (default: a fresh one in the run's temporary folder, so that
#                 the first run of each precision times the compile and the later ones a cached start)
#   OBJECTS       object counts (default "16 32 64": 1, 2 and 4 multiplex buckets at full size);
#                 PRECISIONS (default "fp32 bf16")
#   FRAMES        timed frames per configuration (default 3; medians);  WARMUP (default: fill the memory bank)
#   THREADS       threads (default: nproc)
#   PEER          "ort" (default): the fp32 run with PEER_OBJECTS objects also times ONNX Runtime on the
#                 same candidate calls (bench-frame --peer ort; skipped with a note where it is not
#                 available); "" to skip
#   PEER_OBJECTS  object count of the peer run (default: the smallest of OBJECTS; the other counts
#                 change only the propagation decoder's and memory encoder's calls)
#   DOC           output document (default docs/performance.md)
#   SKIP_BUILD=1  use the binaries already in BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build/release}
CHECKPOINT=${CHECKPOINT:-/tmp/segmux-fullsize.pt}
OBJECTS=${OBJECTS:-"16 32 64"}
PRECISIONS=${PRECISIONS:-"fp32 bf16"}
FRAMES=${FRAMES:-3}
THREADS=${THREADS:-$(nproc)}
PEER=${PEER-ort}
PEER_OBJECTS=${PEER_OBJECTS:-$(echo $OBJECTS | tr ' ' '\n' | sort -n | head -1)}
DOC=${DOC:-docs/performance.md}
export GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-1000}
export CCACHE_BASEDIR="$PWD"

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSEGMUX_WERROR=ON >/dev/null
  cmake --build "$BUILD_DIR" --target segmux bench_matmul -j "$(nproc)"
fi
S="$BUILD_DIR/segmux"
[ -f "$CHECKPOINT" ] || "$S" make-checkpoint --random --config "${CONFIG:-full}" -o "$CHECKPOINT"
VOCAB=${VOCAB:-}
if [ -z "$VOCAB" ]; then
  VOCAB=$(ls ../shared/fixtures/sam31-tiny/tokenizer/bpe_simple_vocab_16e6.txt.gz 2>/dev/null || true)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common=(--weights "$CHECKPOINT" --threads "$THREADS" --frames "$FRAMES")
[ -n "$VOCAB" ] && common+=(--vocab "$VOCAB")
common+=(--cache-dir "${CACHE_DIR:-$work/cache}")
[ -n "${CONFIG:-}" ] && common+=(--config "$CONFIG")
[ -n "${WARMUP:-}" ] && common+=(--warmup "$WARMUP")

start=$(date -u '+%Y-%m-%d %H:%M UTC')
"$BUILD_DIR/bench_matmul" "$THREADS" 1024 >"$work/peaks.txt" 2>&1 || true
for p in $PRECISIONS; do
  for n in $OBJECTS; do
    echo "bench-frame: $n object(s), $p (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    peer=()
    [ "$p" = fp32 ] && [ -n "$PEER" ] && [ "$n" = "$PEER_OBJECTS" ] && peer=(--peer "$PEER")
    "$BUILD_DIR/bench_matmul" "$THREADS" 64 >"$work/peaks_before_${p}_${n}.txt" 2>&1 || true
    "$S" bench-frame "${common[@]}" --objects "$n" --precision "$p" "${peer[@]}" --json >"$work/frame_${p}_${n}.json" ||
      echo "{\"error\": \"bench-frame exited with $?\"}" >"$work/frame_${p}_${n}.json"
    "$BUILD_DIR/bench_matmul" "$THREADS" 64 >"$work/peaks_after_${p}_${n}.txt" 2>&1 || true
  done
done
# FLOP estimate of the four per-frame candidates, from the compiled files the runs used.
for p in $PRECISIONS; do
  dir=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("model_dir",""))' \
    "$work/frame_${p}_$(echo $OBJECTS | cut -d' ' -f1).json" 2>/dev/null || true)
  [ -n "$dir" ] && [ -f "$dir/model.json" ] && cp "$dir/model.json" "$work/model_$p.json"
  for c in backbone detector propagation_decoder memory_encoder; do
    if [ -n "$dir" ] && [ -f "$dir/$c.smx" ]; then "$S" inspect "$dir/$c.smx" --json >"$work/inspect_${p}_$c.json" || true; fi
  done
done

cpuinfo() { grep -m1 "^$1[[:space:]]*:" /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'; }
cpu="$(cpuinfo 'model name'), family $(cpuinfo 'cpu family') model $(cpuinfo model)"
python3 - "$work" "$start" "$THREADS" "$DOC.tmp.$$" "$CHECKPOINT" "$cpu" "$DOC" <<'PY'
import json, os, re, sys, glob
work, start, threads, out, ckpt, cpu, doc = sys.argv[1:8]
def read_peaks(path):
    try: m = re.search(r"f32 FMA ([\d.]+) GFLOP/s, bf16 dot ([\d.]+) GFLOP/s", open(path).read())
    except OSError: m = None
    return {"fp32": float(m.group(1)), "bf16": float(m.group(2))} if m else {}
peak = read_peaks(os.path.join(work, "peaks.txt"))
cands = ["backbone", "detector", "propagation_decoder", "memory_encoder"]
def load(p):
    try: return json.load(open(p))
    except Exception: return {}
def padded_slot_flops(p):
    # bench-frame's state holds one conditioning frame, so max_cond_frames_in_attn - 1 of the propagation
    # decoder's memory slots stay padding (a -1e30 key bias) in every frame: the attention kernels skip
    # those keys (their weights are exactly 0), the compiled graph's estimate counts them. Per call:
    # mem_attn_layers cross-attentions of 4 * Lq * Lk * d_model FLOPs (QK^T and PV), Lq = the image tokens.
    c = load(os.path.join(work, f"model_{p}.json")).get("config", {})
    try:
        lq = (c["image_size"] // c["patch_size"]) ** 2
        return c["mem_attn_layers"] * 4 * lq * (c["max_cond_frames_in_attn"] - 1) * lq * c["d_model"]
    except (KeyError, TypeError):
        return None
flops = {}
for p in ("fp32", "bf16"):
    f = {c: load(os.path.join(work, f"inspect_{p}_{c}.json")).get("flops") for c in cands}
    if all(v for v in f.values()): flops[p] = f
L = []
L.append("# Performance at full size (issues 9, 26)")
L.append("")
L.append("Regenerated by `scripts/bench_fullsize.sh`: `segmux bench-frame` (one steady-state tracked frame of the")
L.append("product backend, N objects added through the mask-input path in one tracker state, 16 per multiplex")
L.append("bucket at full size, so 32 and 64 objects run 2 and 4 buckets; the memory bank")
L.append("filled by warm-up frames, medians of the timed frames) on a random full-size checkpoint, in fp32 and bf16,")
L.append("beside the floor each frame would have at this machine's peaks measured in the same run (`bench_matmul`:")
L.append("FMA / bf16-dot peak) for the FLOP estimate of the compiled candidates (`segmux inspect`).")
L.append("")
L.append(f"- run: {start}, {os.cpu_count()} cores ({cpu}), {threads} threads, checkpoint `{ckpt}`")
L.append("- bf16 accuracy: the official code run in bf16 against fp32 and ours against both, and why `track`")
L.append("  defaults to fp32: `docs/bf16.md` (`scripts/bf16_study.sh`)")
ck = os.path.getsize(ckpt) / 2**30 if os.path.exists(ckpt) else 0
L.append(f"- bounds of issue 26.4: compile <= 60 s (open s of a precision's first run, on an empty cache),")
L.append(f"  cached start <= 3 s (open s of the later runs), peak RSS <= checkpoint ({ck:.2f} GiB) + 1.5 GiB = {ck + 1.5:.2f} GiB")
if peak: L.append(f"- measured peaks at the start: fp32 {peak['fp32']:.0f} GFLOP/s, bf16 {peak['bf16']:.0f} GFLOP/s (the virtual machine's "
                 "host decides them: compare the floor columns, not seconds from another day); each row's floor takes "
                 "the mean of the peaks measured right before and right after that row (the peaks column)")
for p, f in flops.items():
    L.append(f"- FLOP estimate per frame ({p} compile): " + ", ".join(f"{c} {v/1e12:.3f} T" for c, v in f.items())
             + f"; total {sum(f.values())/1e12:.2f} TFLOP")
L.append("")
L.append("| precision | objects | backbone s | detector s | propagation s | memory enc. s | whole frame s | peaks before / after GFLOP/s | floor s | floor / frame | work floor / frame | open s | peak RSS GiB | load avg before / after |")
L.append("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|")
def order(path):
    p, n = os.path.basename(path)[6:-5].split("_")
    return (p != "fp32", int(n))
for path in sorted(glob.glob(os.path.join(work, "frame_*.json")), key=order):
    j = load(path)
    p, n = os.path.basename(path)[6:-5].split("_")
    if "candidates" not in j:
        L.append(f"| {p} | {n} | {j.get('error', 'no result')} | | | | | | | | | | | |")
        continue
    c = j["candidates"]
    floor, share, work_share, peaks_cell = "", "", "", ""
    before, after = (read_peaks(os.path.join(work, f"peaks_{w}_{p}_{n}.txt")) for w in ("before", "after"))
    row_peak = [x[p] for x in (before, after) if p in x] or ([peak[p]] if p in peak else [])
    if row_peak: peaks_cell = " / ".join(f"{x:.0f}" for x in row_peak)
    if p in flops and row_peak:
        # Above multiplex_count objects, the tracker candidates run once per bucket.
        per_bucket = ("propagation_decoder", "memory_encoder")
        b = j.get("buckets", 1)
        at = sum(row_peak) / len(row_peak) * 1e9
        total = sum(v * (b if k in per_bucket else 1) for k, v in flops[p].items())
        floor, share = f"{total / at:.1f}", f"{100 * total / at / j['total_seconds']:.0f} %"
        padded = padded_slot_flops(p)
        if padded is not None: work_share = f"{100 * (total - b * padded) / at / j['total_seconds']:.0f} %"
    la = lambda v: " ".join(f"{x:.1f}" for x in v)
    L.append(f"| {p} | {n} | " + " | ".join(f"{c[k]:.2f}" for k in cands) +
             f" | {j['total_seconds']:.2f} | {peaks_cell} | {floor} | {share} | {work_share} | {j.get('open_seconds', 0):.1f} | {j['peak_rss_bytes']/2**30:.2f} | {la(j['load_average_before'])} / {la(j['load_average_after'])} |")
L.append("")
L.append("floor = the FLOP estimate at the measured peak of the precision (fp32 FMA, bf16 dot; the mean of the row's")
L.append("two measurements), the propagation decoder and memory encoder counted once per multiplex bucket (16 objects")
L.append("per bucket at full size); floor / frame = the share of that peak the whole frame reaches. work floor / frame:")
L.append("the same without the FLOPs of the propagation decoder's padded memory slots. bench-frame's tracker state has")
L.append("one conditioning frame, as a video prompted on one frame does, so max_cond_frames_in_attn - 1 of the slots")
L.append("reserved for conditioning frames stay empty; the attention skips their keys (exactly zero weights), so the")
L.append("frame does that much less work than the compiled estimate counts.")
pad = {p: padded_slot_flops(p) for p in flops}
if any(v for v in pad.values()):
    L.append("Padded-slot FLOPs per propagation call: " + ", ".join(f"{p} {v/1e12:.3f} T" for p, v in pad.items() if v) + ".")
L.append("")
# bf16 against fp32 per candidate, same object count, same run.
both = []
for n in sorted({os.path.basename(q)[6:-5].split("_")[1] for q in glob.glob(os.path.join(work, "frame_*.json"))}, key=int):
    a, b = load(os.path.join(work, f"frame_fp32_{n}.json")), load(os.path.join(work, f"frame_bf16_{n}.json"))
    if "candidates" in a and "candidates" in b:
        both.append(f"| {n} | " + " | ".join(f"{a['candidates'][k] / max(b['candidates'][k], 1e-12):.2f}x" for k in cands) +
                    f" | {a['total_seconds'] / max(b['total_seconds'], 1e-12):.2f}x |")
if both:
    L.append("bf16 speed-up over fp32 (fp32 seconds / bf16 seconds, same run):")
    L.append("")
    L.append("| objects | " + " | ".join(cands) + " | whole frame |")
    L.append("|---:|" + "---:|" * (len(cands) + 1))
    L.extend(both)
    L.append("")
# ONNX Runtime on the same candidate calls (fp32 runs with --peer ort): ratio = segmux / ort.
peer_rows = []
for path in sorted(glob.glob(os.path.join(work, "frame_fp32_*.json")), key=order):
    j = load(path)
    if "peer" not in j: continue
    n = os.path.basename(path)[6:-5].split("_")[1]
    cells = []
    for k in cands:
        r = j["peer"]["candidates"].get(k, {})
        if "peer_seconds" in r: cells.append(f"{r['segmux_seconds']:.3f} / {r['peer_seconds']:.3f} / {r['ratio']:.2f}")
        else: cells.append(f"{r.get('segmux_seconds', 0):.3f} / not run: {r.get('error', 'not called')}")
    peer_rows.append(f"| {n} | " + " | ".join(cells) + " |")
if peer_rows:
    L.append("ONNX Runtime on the same candidate calls of the last timed frame (fp32, `bench-frame --peer ort`;")
    L.append("seconds segmux / ONNX Runtime / ratio segmux/ort, below 1 = segmux faster; medians):")
    L.append("")
    L.append("| objects | " + " | ".join(cands) + " |")
    L.append("|---:|" + "---|" * len(cands))
    L.extend(peer_rows)
    L.append("")
L.append("Earlier measurements, per change and per candidate (profiles, start-up, memory): `docs/performance-history.md`.")
# What the document holds after the marker is written by hand and kept across regenerations.
marker = "<!-- generated above; kept below -->"
old = open(doc).read() if os.path.exists(doc) else ""
L.append("")
L.append(marker)
L.append("")
L.append(old.split(marker, 1)[1].lstrip("\n") if marker in old else "")
open(out, "w").write("\n".join(L).rstrip("\n") + "\n")
PY
mv "$DOC.tmp.$$" "$DOC"
echo "wrote $DOC" >&2
