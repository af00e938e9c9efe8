#!/bin/bash
# slurm_cluster.sh DIR COMMAND...: runs COMMAND with a one-node Slurm cluster of this
# machine up, made of Debian's munged, slurmctld and slurmd, then stops it, whatever
# COMMAND did, and exits with COMMAND's status. Everything the daemons write (munge
# key and socket, slurm.conf, state, spool, logs, pid files) is under DIR, which must
# not exist or be empty; the ports are two free ones. COMMAND sees SLURM_CONF (so that
# sbatch, squeue and scontrol talk to this cluster) and SLURM_CLUSTER_DIR. Runs as
# root (the test runs as root, as CI does): the daemons run as root, and so do jobs.
# On a failure it prints what failed and the daemons' logs' last lines.
set -euo pipefail
export PATH=$PATH:/usr/sbin:/sbin   # the daemons, for a user whose PATH lacks them

dir=$1
shift
mkdir -p "$dir"
dir=$(realpath "$dir")
[ -z "$(ls -A "$dir")" ] || { echo "slurm_cluster: $dir is not empty" >&2; exit 2; }
mkdir -p "$dir"/{munge,state,spool,log,run}

fail() {
  echo "slurm_cluster: $*" >&2
  for log in "$dir"/log/*.log; do
    [ -e "$log" ] && { echo "--- last lines of $log" >&2; tail -n 15 "$log" >&2; }
  done
  exit 1
}

# Stops a daemon by the pid it wrote, TERM then KILL; waits until it is gone, so that
# nothing is left running when the test ends.
stop_daemon() {
  local pidfile=$1 pid
  [ -s "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  kill -TERM "$pid" 2> /dev/null || return 0
  for _ in $(seq 100); do
    kill -0 "$pid" 2> /dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2> /dev/null || true
}

# On any exit: end the jobs left (SIGKILL to all their processes, then cancel them)
# and wait until slurmd has reaped them (their processes would outlive it), then stop
# slurmd, slurmctld and munged in that order.
cleanup() {
  local status=$? jobs
  if [ -s "$dir/run/slurmctld.pid" ]; then
    jobs=$(timeout 10 squeue -h -o %i 2> /dev/null || true)
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086 # a list of job ids
      timeout 10 scancel --full --signal=KILL $jobs > /dev/null 2>&1 || true
      # shellcheck disable=SC2086
      timeout 10 scancel $jobs > /dev/null 2>&1 || true
      for _ in $(seq 60); do
        [ -z "$(timeout 10 squeue -h -o %i 2> /dev/null)" ] && break
        sleep 0.5
      done
    fi
  fi
  stop_daemon "$dir/run/slurmd.pid"
  stop_daemon "$dir/run/slurmctld.pid"
  stop_daemon "$dir/run/munged.pid"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Two ports that nothing listens on now: slurmctld's and slurmd's.
read -r ctld_port slurmd_port < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])')

# munge: a key of our own (not /etc/munge/munge.key) and a private socket, which
# slurm.conf names (AuthInfo), so that a munged the machine may run is left alone.
# munged checks that no one else can write the key or the directories it uses;
# --force accepts the test's temporary directories' parents as they are.
mungekey --create --keyfile="$dir/munge/munge.key" > /dev/null
chmod 0700 "$dir/munge"
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
  --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" \
  --seed-file="$dir/munge/munged.seed" 2> "$dir/log/munged.stderr" ||
  fail "munged did not start: $(cat "$dir/log/munged.stderr")"

# One node: this host, its cores and memory as slurmd -C sees them.
node=$(hostname -s)
hardware=$(slurmd -C | sed -n 's/^NodeName=[^ ]* //p' | sed 's/ *UpTime.*//')
[ -n "$hardware" ] || fail "slurmd -C said nothing about this machine"
# proctrack/linuxproc and task/none: no cgroups needed (a container may not delegate
# them); cons_tres hands out cores. JobRequeue=1: batch jobs may be requeued.
# cred_expire: a requeued job waits this long before it starts again (120 s by
# default, the rest of the test's time); sched_interval: the scheduler looks every
# 2 s (not 60) for a job that has become eligible. KillWait: seconds between the
# SIGTERM and the SIGKILL of a job that is cancelled, requeued or at its time limit
# (30 by default; here, a job left by a failed test ends sooner).
cat > "$dir/slurm.conf" << EOF
ClusterName=shardc-test
SlurmctldHost=$node
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=10
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=2
SwitchType=switch/none
MpiDefault=none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MailProg=/bin/true
JobRequeue=1
ReturnToService=2
KillWait=10
MinJobAge=600
NodeName=$node $hardware State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$dir/slurm.conf SLURM_CLUSTER_DIR=$dir

# -c: a fresh cluster, no state from before. Both fork once they are up.
slurmctld -c -f "$SLURM_CONF" 2> "$dir/log/slurmctld.stderr" ||
  fail "slurmctld did not start: $(cat "$dir/log/slurmctld.stderr")"
slurmd -f "$SLURM_CONF" 2> "$dir/log/slurmd.stderr" ||
  fail "slurmd did not start: $(cat "$dir/log/slurmd.stderr")"

# Ready when the node is idle (30 s at most).
for _ in $(seq 60); do
  state=$(sinfo -h -n "$node" -o %T 2> /dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.5
done
[ "$state" = idle ] || fail "node $node not idle after 30 s (state '$state')"

"$@"
