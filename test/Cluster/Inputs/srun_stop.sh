#!/bin/bash
# srun_stop.sh EXE AFTER: in a Slurm cluster (slurm_cluster.sh), submits a batch job
# that starts EXE's 8 ranks with `srun --mpi=pmix` (no mpirun) to train until stopped,
# with checkpoints in ck/ and metrics in m.jsonl; once AFTER steps are logged, sends
# the job step SIGTERM as scancel does at a preemption (`scancel --signal=TERM`: srun
# and the tasks), and waits for the job to end. Prints the job's end and srun's status;
# the job's output is job.out. Every wait has a timeout.
set -euo pipefail
exe=$1 after=$2
cat > job.sbatch <<SCRIPT
#!/bin/bash
#SBATCH --ntasks=8
#SBATCH --output=job.out
srun --mpi=pmix $exe --synthetic --steps 100000000 --checkpoint-dir ck --metrics m.jsonl --log-interval 5
echo "srun exit \$?"
SCRIPT
job_field() { scontrol show job "$id" | grep -o "$1=[^ ]*" | head -1 | cut -d= -f2; }
fail() {
  echo "srun_stop: $*" >&2
  scontrol show job "$id" >&2 || true
  [ -e job.out ] && cat job.out >&2
  exit 1
}
id=$(sbatch --parsable --overcommit job.sbatch)
for _ in $(seq 240); do
  [ -e m.jsonl ] && [ "$(wc -l < m.jsonl)" -ge "$after" ] && break
  sleep 0.5
done
[ -e m.jsonl ] && [ "$(wc -l < m.jsonl)" -ge "$after" ] || fail "no $after steps logged after 120 s"
scancel --signal=TERM "$id"
echo "sent TERM to job $id's step"
for _ in $(seq 120); do
  case $(job_field JobState) in RUNNING | COMPLETING) sleep 0.5 ;; *) break ;; esac
done
echo "JobState=$(job_field JobState)"
grep '^srun exit' job.out
