# shellcheck shell=bash
# A one-node Slurm cluster (munged, slurmctld, slurmd) for tests, inside a network namespace of its own
# that holds only a loopback: sourced by tests/batch/slurm_array.sh. Everything lives under $R; nothing
# under /etc/slurm, /etc/munge or /run is touched except the namespace handle /run/netns/$NS.
# docs/scale.md and /work/shared/docs/scale-out-notes.md say why each setting is there.
#
#   R=/tmp/x NS=name; source slurm_cluster.sh; cluster_up; $X sbatch ...; cluster_down
# Clients run as `$X sbatch ...` (SLURM_CONF exported). cluster_down stops the daemons by their pids.

cluster_pids=()

cluster_up() {
  mkdir -p "$R"/{etc,munge,state,spool,log}
  chmod 711 "$R/munge"  # munged refuses a socket folder others cannot reach
  ip netns add "$NS"
  cluster_netns=1
  ip netns exec "$NS" ip link set lo up
  # Only the network namespace: `ip netns exec` also remounts /sys, which hides the cgroup tree slurmd
  # initialises even with proctrack/linuxproc.
  X="nsenter --net=/run/netns/$NS"
  dd if=/dev/urandom of="$R/munge/munge.key" bs=1 count=1024 status=none
  chmod 400 "$R/munge/munge.key"
  $X munged --foreground --force --socket="$R/munge/munge.sock" --key-file="$R/munge/munge.key" \
    --pid-file="$R/munge/munged.pid" --log-file="$R/log/munged.log" --seed-file="$R/munge/munged.seed" \
    >"$R/log/munged.out" 2>&1 &
  cluster_pids+=($!)
  for _ in $(seq 100); do [ -S "$R/munge/munge.sock" ] && break; sleep 0.1; done
  H=$(hostname -s)
  cat >"$R/etc/slurm.conf" <<CONF
ClusterName=segmuxci
SlurmctldHost=$H(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
# cred_expire is also how long a requeued job waits before it may start again (default 120 s)
AuthInfo=socket=$R/munge/munge.sock,cred_expire=10
CredType=cred/munge
StateSaveLocation=$R/state
SlurmdSpoolDir=$R/spool
SlurmctldPidFile=$R/slurmctld.pid
SlurmdPidFile=$R/slurmd.pid
SlurmctldLogFile=$R/log/slurmctld.log
SlurmdLogFile=$R/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$R/log/jobcomp.txt
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=none
# Slurm resolves with AF_INET + AI_ADDRCONFIG otherwise, which fails where only a loopback exists
CommunicationParameters=EnableIPv6
ReturnToService=2
JobRequeue=1
MinJobAge=300
KillWait=5
# the scheduler loops every second, so a requeued job starts as soon as cred_expire allows
SchedulerParameters=batch_sched_delay=0,sched_min_interval=100000,sched_interval=1,bf_interval=1
NodeName=$H NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=4096 State=UNKNOWN
PartitionName=batch Nodes=$H Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$R/etc/slurm.conf
  # -D: in the foreground (no double fork), so $! is the daemon and the test stops it by that pid.
  $X slurmctld -D -i >"$R/log/slurmctld.out" 2>&1 &
  cluster_pids+=($!)
  $X slurmd -D >"$R/log/slurmd.out" 2>&1 &
  cluster_pids+=($!)
  for _ in $(seq 300); do
    $X sinfo -h -o %T 2>/dev/null | grep -q idle && return 0
    sleep 0.1
  done
  echo "slurm_cluster: the node did not become idle in 30 s" >&2
  return 1
}

# Stops every daemon this file started, by pid (slurmd, then slurmctld, then munged), and removes the
# namespace.
cluster_down() {
  local k pid
  for ((k = ${#cluster_pids[@]} - 1; k >= 0; k--)); do
    pid=${cluster_pids[k]}
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  cluster_pids=()
  if [ -n "${cluster_netns:-}" ]; then ip netns del "$NS" 2>/dev/null || true; fi
  cluster_netns=
}
