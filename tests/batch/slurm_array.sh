#!/usr/bin/env bash
# `segmux batch` on a real one-node Slurm cluster (ctest batch_slurm; docs/scale.md). Starts munged,
# slurmctld and slurmd inside a network namespace of its own (tests/batch/slurm_cluster.sh), submits
# deploy/slurm/segmux-batch.sbatch as a job array over a deployment package of the fixtures' tiny model
# and a manifest of 7 videos (generated GIFs and the fixture frames), and checks after each run: every
# video done exactly once, its masks byte-equal to a plain `segmux track`, nothing left in staging.
# Faults: (1) SIGKILL of the worker mid-video: the task requeues itself and finishes; (2) the node marked
# DOWN mid-run: Slurm requeues the tasks; (3) SIGUSR1 to the batch shell (the time-limit warning): the
# task requeues itself and finishes; (4) scancel: no process left, no partial output.
# Stops every daemon it started, by pid. Exit 77 (skipped) without root or the Slurm packages.
# Environment: SEGMUX (the binary), SEGMUX_FIXTURES; SEGMUX_SLURM_KEEP=1 keeps the work folder.
set -Eeuo pipefail
SEGMUX=${SEGMUX:?set SEGMUX to the segmux binary}
FIX=${SEGMUX_FIXTURES:?set SEGMUX_FIXTURES}/sam31-tiny
SRC=$(cd "$(dirname "$0")/../.." && pwd)
SBATCH_SCRIPT=$SRC/deploy/slurm/segmux-batch.sbatch

skip() {
  echo "SKIP: $*"
  exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root (a network namespace, slurmd as root)"
for c in ip nsenter munged slurmctld slurmd sbatch scontrol squeue scancel python3; do
  command -v "$c" >/dev/null || skip "$c is not installed (scripts/setup.sh installs the Slurm packages)"
done
[ -d /sys/fs/cgroup ] || skip "no /sys/fs/cgroup: slurmd 22.05 does not start without a cgroup file system"

W=$(mktemp -d /tmp/segmux-slurm-test.XXXXXX)
R=$W/cluster
NS=segmux-slurm-$$
export SEGMUX
# shellcheck source=tests/batch/slurm_cluster.sh
source "$SRC/tests/batch/slurm_cluster.sh"

log() { echo "[$(date -u +%T)] $*"; }
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
now() { date +%s.%N; }
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(now)"; }

# Our segmux processes (their command line names this test's folder), for the fault injection and the
# orphan check; never a broad kill.
our_segmux_pids() { pgrep -f -- "segmux batch $W/" || true; }

finish() {
  local rc=$?
  if [ -n "${X:-}" ] && [ -S "$R/munge/munge.sock" ]; then
    for j in $($X squeue -h -o %A 2>/dev/null); do $X scancel "$j" 2>/dev/null || true; done
  fi
  for pid in $(our_segmux_pids); do kill -KILL "$pid" 2>/dev/null || true; done
  cluster_down
  if [ $rc -ne 0 ]; then
    echo "--- logs (the test failed, rc=$rc) ---" >&2
    for f in "$W"/logs*/*.log "$R"/log/slurmctld.log "$R"/log/slurmd.log; do
      [ -f "$f" ] && { echo "== $f" >&2; tail -n 30 "$f" >&2; }
    done
  fi
  if [ "${SEGMUX_SLURM_KEEP:-0}" = 1 ]; then echo "kept $W"; else rm -rf "$W"; fi
  exit $rc
}
trap finish EXIT
trap 'echo "FAIL: line $LINENO: $BASH_COMMAND exited $?" >&2' ERR

T_ALL=$(now)
# --- Data: a deployment package, 7 videos, the manifest, and plain `segmux track` outputs to compare.
log "deployment package of the tiny fixture model"
t=$(now)
"$SEGMUX" deploy "$FIX/weights.safetensors" --config "$FIX/config.json" \
  --vocab "$FIX/tokenizer/bpe_simple_vocab_16e6.txt.gz" -o "$W/pkg" --no-ort >"$W/deploy.log" 2>&1 ||
  fail "segmux deploy: $(tail -n 5 "$W/deploy.log")"
FIG_DEPLOY=$(since "$t")
mkdir -p "$W/videos"
LONG_FRAMES=${SEGMUX_SLURM_LONG_FRAMES:-40}
"$SEGMUX" sample-video "$W/videos/long.gif" --frames "$LONG_FRAMES" --size 64x48 >/dev/null 2>&1
for n in 5 6 7 8 9; do "$SEGMUX" sample-video "$W/videos/clip$n.gif" --frames $n --size 64x48 >/dev/null 2>&1; done
{
  echo "# the long video first: manifest item 0 is shard 0's first video whatever the array size"
  echo "videos/long.gif"
  for n in 5 6 7 8 9; do echo "videos/clip$n.gif"; done
  echo "{\"id\": \"fixture\", \"path\": \"$FIX/video/frames\", \"max_frames\": 6}"
} >"$W/videos.txt"
IDS="long clip5 clip6 clip7 clip8 clip9 fixture"
OPTS=(--prompt shape --overlay none --threads 1)
log "reference outputs: plain segmux track of every video"
t=$(now)
for id in $IDS; do
  input=$W/videos/$id.gif extra=()
  [ "$id" = fixture ] && input=$FIX/video/frames extra=(--max-frames 6)
  "$SEGMUX" track "$input" --model "$W/pkg" "${OPTS[@]}" "${extra[@]}" --out "$W/ref/$id" --quiet ||
    fail "segmux track $id"
done
FIG_TRACK=$(since "$t")

# --- The cluster.
t=$(now)
cluster_up || fail "the cluster did not start"
FIG_UP=$(since "$t")
log "cluster up in $FIG_UP s (node $H, $(nproc) CPUs)"

submit() {  # submit OUT LOGDIR ARRAY: starts `sbatch --wait` in the background; sets JOB and WAITPID
  mkdir -p "$2"
  $X sbatch --parsable --wait --array="$3" --cpus-per-task=1 --mem=512 --chdir="$W" --output="$2/%A_%a.log" \
    "$SBATCH_SCRIPT" "$W/pkg" "$W/videos.txt" "$1" "${OPTS[@]}" >"$2/sbatch.out" 2>"$2/sbatch.err" &
  WAITPID=$!
  JOB=
  for _ in $(seq 100); do
    JOB=$(head -n 1 "$2/sbatch.out" 2>/dev/null | tr -d '[:space:]') || true  # not written yet
    [ -n "$JOB" ] && break
    sleep 0.1
  done
  [ -n "$JOB" ] || fail "sbatch did not answer: $(cat "$2/sbatch.err")"
}

# The pid of the segmux process of array task $1 of job $JOB once its log shows frame >= 10 of the long
# video (waits up to 120 s).
worker_mid_long_video() {
  local logf=$2/${JOB}_$1.log pid
  for _ in $(seq 1200); do
    if grep -q "^video 1/[0-9]* long:" "$logf" 2>/dev/null && grep -q "^frame [0-9]* (10/" "$logf" 2>/dev/null; then
      for pid in $(our_segmux_pids); do
        if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "SLURM_ARRAY_JOB_ID=$JOB" &&
          tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "SLURM_ARRAY_TASK_ID=$1"; then
          echo "$pid"
          return 0
        fi
      done
    fi
    sleep 0.1
  done
  return 1
}

wait_job() {  # waits for `sbatch --wait` (and the queue to empty), at most $1 seconds
  local limit=$1 start
  start=$(date +%s)
  while kill -0 "$WAITPID" 2>/dev/null; do
    [ $(($(date +%s) - start)) -lt "$limit" ] || fail "job $JOB did not finish in $limit s: $($X squeue -h)"
    sleep 0.2
  done
  SBATCH_RC=0
  wait "$WAITPID" || SBATCH_RC=$?
  while [ -n "$($X squeue -h -j "$JOB" 2>/dev/null)" ]; do
    [ $(($(date +%s) - start)) -lt "$limit" ] || fail "job $JOB still queued after $limit s"
    sleep 0.2
  done
}

restarts_of() { $X scontrol show job "${JOB}_$1" | grep -o 'Restarts=[0-9]*' | cut -d= -f2; }

# Every video done exactly once, equal to the plain `segmux track`, nothing in staging or failed.
check_outputs() {
  local out=$1 logs=$2 id n
  [ ! -e "$out/.staging" ] || fail "$out/.staging left behind: $(ls -A "$out/.staging")"
  [ -z "$(ls -A "$out/.failed")" ] || fail "failed videos: $(ls "$out/.failed")"
  n=$(find "$out" -mindepth 1 -maxdepth 1 -type d ! -name '.*' | wc -l)
  [ "$n" -eq 7 ] || fail "$out holds $n video folders, not 7"
  for id in $IDS; do
    [ -d "$out/$id" ] || fail "$id not done in $out"
    n=$(cat "$logs"/*.log | grep -c "^done $id:" || true)
    [ "$n" -eq 1 ] || fail "$id was finished $n times (logs in $logs)"
    diff -r "$W/ref/$id/masks" "$out/$id/masks" >/dev/null || fail "$id: masks differ from segmux track"
    python3 - "$W/ref/$id/tracks.json" "$out/$id/tracks.json" <<'PY' || fail "$id: tracks.json frames differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
sys.exit(0 if a["frames"] == b["frames"] else 1)
PY
  done
}

# Frames per second over the whole manifest: the sum of every shard's frames / the run's wall time.
frames_of() { python3 -c "import json,glob,sys; print(sum(json.load(open(f))['frames'] for f in glob.glob(sys.argv[1]+'/.summary/*.json')))" "$1"; }

# --- 1. A 3-task array; the worker of task 0 is SIGKILLed mid-video.
log "run 1: --array=0-2, SIGKILL of task 0's worker mid-video"
t=$(now)
submit "$W/out1" "$W/logs1" 0-2
pid=$(worker_mid_long_video 0 "$W/logs1") || fail "task 0 never reached frame 10 of the long video"
kill -KILL "$pid"
log "killed worker $pid at $(grep -c '^frame ' "$W/logs1/${JOB}_0.log") progress lines"
wait_job 300
[ "$SBATCH_RC" -eq 0 ] || fail "run 1: sbatch --wait exited $SBATCH_RC"
[ "$(restarts_of 0)" -ge 1 ] || fail "run 1: task 0 was not requeued"
grep -q "requeueing job" "$W/logs1/${JOB}_0.log" || fail "run 1: the script did not requeue task 0"
check_outputs "$W/out1" "$W/logs1"
FIG_RUN1=$(since "$t") FRAMES1=$(frames_of "$W/out1")
log "run 1 ok in $FIG_RUN1 s"

# --- 2. A 2-task array; the node is marked DOWN while task 0 is mid-video.
log "run 2: --array=0-1, node DOWN mid-run"
t=$(now)
submit "$W/out2" "$W/logs2" 0-1
worker_mid_long_video 0 "$W/logs2" >/dev/null || fail "task 0 never reached frame 10 of the long video"
$X scontrol update NodeName="$H" State=DOWN Reason=segmux-ci-fault
sleep 1
$X scontrol update NodeName="$H" State=RESUME 2>/dev/null || true  # ReturnToService=2 may have done it
wait_job 300
[ "$SBATCH_RC" -eq 0 ] || fail "run 2: sbatch --wait exited $SBATCH_RC"
[ "$(restarts_of 0)" -ge 1 ] || fail "run 2: task 0 was not requeued after the node went down"
check_outputs "$W/out2" "$W/logs2"
FIG_RUN2=$(since "$t") FRAMES2=$(frames_of "$W/out2")
log "run 2 ok in $FIG_RUN2 s"

# --- 3. The time-limit warning (the script's `--signal=B:USR1@120`), sent by hand mid-video: segmux stops,
# the script requeues the task, the rerun finishes.
log "run 3: SIGUSR1 to the batch shells mid-video (as before a time limit)"
t=$(now)
submit "$W/out3" "$W/logs3" 0-1
worker_mid_long_video 0 "$W/logs3" >/dev/null || fail "task 0 never reached frame 10 of the long video"
$X scancel --signal=USR1 --batch "$JOB"
wait_job 300
[ "$SBATCH_RC" -eq 0 ] || fail "run 3: sbatch --wait exited $SBATCH_RC"
grep -q "segmux exited 75 after SIGUSR1" "$W/logs3/${JOB}_0.log" || fail "run 3: segmux did not stop on SIGUSR1"
[ "$(restarts_of 0)" -ge 1 ] || fail "run 3: task 0 was not requeued after SIGUSR1"
check_outputs "$W/out3" "$W/logs3"
FIG_RUN3=$(since "$t")
log "run 3 ok in $FIG_RUN3 s"

# --- 4. scancel mid-video: no process left, no partial output, nothing in staging.
log "run 4: scancel mid-video"
t=$(now)
submit "$W/out4" "$W/logs4" 0-1
worker_mid_long_video 0 "$W/logs4" >/dev/null || fail "task 0 never reached frame 10 of the long video"
$X scancel "$JOB"
wait_job 120
for _ in $(seq 150); do [ -z "$(our_segmux_pids)" ] && break; sleep 0.1; done
[ -z "$(our_segmux_pids)" ] || fail "run 4: segmux processes left after scancel: $(our_segmux_pids)"
[ ! -e "$W/out4/long" ] || fail "run 4: the cancelled video has outputs"
[ ! -e "$W/out4/.staging" ] || [ -z "$(ls -A "$W/out4/.staging")" ] || fail "run 4: staging left after scancel"
grep -q "segmux exited 75 after SIGTERM" "$W/logs4/${JOB}_0.log" || fail "run 4: segmux did not stop on SIGTERM"
[ "$(restarts_of 0)" = 0 ] || fail "run 4: the cancelled task was requeued"
FIG_RUN4=$(since "$t")
log "run 4 ok in $FIG_RUN4 s"

cluster_down
FIG_ALL=$(since "$T_ALL")
echo "FIGURES: deploy ${FIG_DEPLOY}s, 7 plain tracks ${FIG_TRACK}s, cluster up ${FIG_UP}s," \
  "run1 (3 tasks, SIGKILL+requeue) ${FIG_RUN1}s ${FRAMES1} frames, run2 (2 tasks, node DOWN) ${FIG_RUN2}s" \
  "${FRAMES2} frames, run3 (SIGUSR1 + requeue) ${FIG_RUN3}s, run4 (scancel) ${FIG_RUN4}s, total ${FIG_ALL}s"
echo "PASS"
