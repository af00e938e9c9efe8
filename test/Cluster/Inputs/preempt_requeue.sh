#!/bin/bash
# preempt_requeue.sh SCRIPT STEPS AFTER [TRAINING FLAGS...]: in a Slurm cluster
# (slurm_cluster.sh), submits the sbatch SCRIPT from the current folder to train STEPS
# steps, waits until the job's first start has logged AFTER steps, sends the job's
# batch shell the early warning (scancel --signal=USR1 --batch) and waits until the
# job has requeued itself (Restarts=1) and completed. Prints the job's final
# JobState, Restarts and ExitCode; the job's folder is runs/ here. Every wait has a
# timeout; a failure says what it waited for and shows the job's output.
set -euo pipefail
script=$1 steps=$2 after=$3
shift 3

job_field() { scontrol show job "$id" | grep -o "$1=[^ ]*" | head -1 | cut -d= -f2; }
fail() {
  echo "preempt_requeue: $*" >&2
  scontrol show job "$id" >&2 || true
  for out in ./*.out; do [ -e "$out" ] && { echo "--- $out" >&2; cat "$out" >&2; }; done
  exit 1
}

# --overcommit: the ranks outnumber this machine's cores (2 in CI); Slurm gives the
# job one core and lets it start --ntasks of them.
id=$(sbatch --parsable --overcommit "$script" --steps "$steps" "$@")
echo "submitted job $id"

# The first start's metrics file: a line per step.
metrics() { ls runs/*/metrics-"$1".jsonl 2> /dev/null | head -1 || true; }
for _ in $(seq 240); do
  file=$(metrics 0)
  [ -n "$file" ] && [ "$(wc -l < "$file")" -ge "$after" ] && break
  state=$(job_field JobState)
  case $state in PENDING | CONFIGURING | RUNNING) ;; *) fail "job ended ($state) before $after steps" ;; esac
  sleep 0.5
done
[ -n "$file" ] && [ "$(wc -l < "$file")" -ge "$after" ] || fail "no $after steps logged after 120 s"
[ "$(job_field JobState)" = RUNNING ] || fail "job not running at the signal"

scancel --signal=USR1 --batch "$id"
echo "sent USR1 to the batch shell of job $id"

# Requeued: Restarts=1 (set when scontrol requeue ran), then a second start runs.
for _ in $(seq 120); do
  [ "$(job_field Restarts)" = 1 ] && break
  sleep 0.5
done
[ "$(job_field Restarts)" = 1 ] || fail "not requeued 60 s after the signal"
echo "job $id requeued"

# Ends: the second start finishes the run (60 s for the requeue delay, cred_expire,
# and the rest of the steps).
for _ in $(seq 180); do
  state=$(job_field JobState)
  case $state in
    COMPLETED) break ;;
    PENDING | CONFIGURING | RUNNING | COMPLETING | REQUEUED) sleep 1 ;;
    *) fail "job ended $state" ;;
  esac
done
[ "$state" = COMPLETED ] || fail "job not completed 180 s after its requeue (state $state)"
echo "JobState=$state Restarts=$(job_field Restarts) ExitCode=$(job_field ExitCode)"
