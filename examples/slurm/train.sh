# train.sh: what every examples/slurm/*.sbatch script shares; it sources this file
# after setting `root` (the repository), `name` (the executable's), `model` and
# `rules` (paths in the repository) and `flags` (an array: the run's flags), with the
# job's arguments ("$@", more flags) still its own. It runs in the batch
# shell, the process that `#SBATCH --signal=B:USR1@...` signals.
#
#   first start: compile MODEL with RULES into the job's folder, train from step 0
#   USR1 (Slurm's early warning before the time limit): the ranks checkpoint the last
#     completed step and stop; the job requeues itself
#   requeued start: the same executable, --resume from the job's newest checkpoint
#   TERM (scancel, preemption): the ranks checkpoint and stop; no requeue
#
# Environment: SHARDC, the compiler (default: $SHARDC_ROOT/build/bin/shardc); SHARDC_FLAGS, more
# compiler flags (e.g. "--set depth=2048"); SHARDC_RUNS, where each job's folder goes
# (default: runs/ in the folder sbatch ran in).
set -euo pipefail

shardc=${SHARDC:-$root/build/bin/shardc}
# The job's folder: the job id stays the same across requeues, so every start of this
# job finds its executable and checkpoints here. It must be on a file system the
# job's first node sees on every start (rank 0 writes the checkpoints).
job=${SHARDC_RUNS:-$SLURM_SUBMIT_DIR/runs}/$SLURM_JOB_NAME-$SLURM_JOB_ID
start=${SLURM_RESTART_COUNT:-0}   # 0, then 1, 2, ... after each requeue
mkdir -p "$job/checkpoints"
echo "$(date -Is) job $SLURM_JOB_ID, start $start: $SLURM_NTASKS tasks on $SLURM_JOB_NODELIST"

# Compile on the first start only: a requeued job resumes with the executable that
# wrote its checkpoints, whatever happened to the compiler or the model since.
exe=$job/$name
if [ ! -x "$exe" ]; then
  # shellcheck disable=SC2086 # SHARDC_FLAGS is a list of words
  (cd "$root" && "$shardc" "$model" --rules "$rules" ${SHARDC_FLAGS:-} -o "$exe")
fi

# A job requeued after it finished (a node failure at its end) has nothing to do.
if [ -e "$job/done" ]; then
  echo "$(date -Is) the run had finished: nothing to do"
  exit 0
fi

# Resume from the newest checkpoint when an earlier start left one.
resume=()
if compgen -G "$job/checkpoints/ckpt-*.safetensors" > /dev/null; then
  resume=(--resume "$job/checkpoints")
fi

# USR1 (to this shell alone): USR1 goes on to the ranks themselves, not to mpirun,
# which forwards signals late or kills the ranks 1 s later (OpenMPI's
# odls_base_sigkill_timeout). USR1 is the runtime's early warning (its default
# --checkpoint-signal): a rank finishes the step in progress, however long, rather than
# abandoning it as on SIGTERM. Only this node's ranks, mpirun's children whose command
# line starts with the executable (on several nodes mpirun has an srun child too, and
# a rank's process name is "exe", not the executable's), get it: the ranks
# agree on a stop every step, so all of them stop after the same step, write its
# checkpoint and exit 138. Once only: the runtime ends a rank at once on a second
# signal from the same sender, maybe mid-checkpoint.
# TERM (scancel, preemption, the time limit reached): Slurm sends it to every process
# of the job, the ranks too, so nothing is forwarded; no requeue then.
signals=0
requeue=
stop() {
  signals=$((signals + 1))
  echo "$(date -Is) $1: the ranks checkpoint their last step and stop"
  if [ "$1" = TERM ]; then
    requeue=no
  elif [ "$signals" = 1 ]; then
    requeue=yes
    pkill -USR1 -P "$mpirun" -f "^$exe" || true
  fi
}
trap 'stop USR1' USR1
trap 'stop TERM' TERM

# mpirun takes the ranks and hosts from the allocation (OpenMPI's ras/plm slurm):
# --ntasks ranks, no -np or hostfile. In the background, so that the traps run at
# once (bash runs a trap only between commands; `wait` returns for it).
# odls_base_sigkill_timeout: when mpirun itself gets the SIGTERM (scancel and
# preemption signal every process of the job), it kills the ranks this long after
# it, not 1 s: time for their checkpoint (Slurm's KillWait, 30 s by default, bounds
# it anyway). Its cost: once a rank has exited non-zero, as a stopped one does (138),
# mpirun takes twice this long to end.
mpirun --mca odls_base_sigkill_timeout 30 \
  "$exe" "${flags[@]}" --checkpoint-dir "$job/checkpoints" "${resume[@]}" \
  --metrics "$job/metrics-$start.jsonl" "$@" &
mpirun=$!

# Wait for mpirun to end; a trapped signal ends `wait` early. After USR1, wait for
# this node's ranks instead (rank 0 among them, which writes the checkpoint), then end
# mpirun: after a rank's non-zero exit it would sit out twice its sigkill timeout,
# and where Slurm tracks processes without cgroups (proctrack/linuxproc) it would
# outlive the requeue. The other nodes' ranks stopped after the same step; their
# daemons (an srun job step) end with the requeue.
while :; do
  seen=$signals
  status=0
  wait "$mpirun" || status=$?
  [ "$signals" = "$seen" ] && break
  if [ "$requeue" = yes ]; then
    while pgrep -P "$mpirun" -f "^$exe" > /dev/null; do sleep 1; done
    kill -KILL "$mpirun" 2> /dev/null || true
    wait "$mpirun" 2> /dev/null || true   # (no "Killed" line in the output)
    status=stopped
    break
  fi
done
echo "$(date -Is) training ended ($status); newest checkpoint:" \
  "$(cd "$job/checkpoints" && ls -t ckpt-*.safetensors 2> /dev/null | head -1)"

# After the early warning: back into the queue. Slurm ends this start and, after
# AuthInfo's cred_expire (120 s by default), runs the job again: same id,
# SLURM_RESTART_COUNT one more, resuming from the checkpoint just written.
if [ "$requeue" = yes ]; then
  echo "$(date -Is) requeueing job $SLURM_JOB_ID"
  scontrol requeue "$SLURM_JOB_ID"
  exit 0
fi
[ "$status" != 0 ] || touch "$job/done"
exit "$status"
