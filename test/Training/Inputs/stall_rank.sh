#!/usr/bin/env bash
# stall_rank.sh RANK DELAY COMMAND...: runs COMMAND (an mpirun) in the background, and
# after DELAY seconds stops (SIGSTOP) the process of MPI rank RANK, found by the
# OMPI_COMM_WORLD_RANK in its environment. Prints how long COMMAND ran and its exit
# status, then kills whatever is left of the stopped rank.
set -u
rank=$1 delay=$2; shift 2
start=$(date +%s.%N)
"$@" &
job=$!
sleep "$delay"
stopped=
for pid in $(pgrep -P "$job"); do
  if tr '\0' '\n' < /proc/$pid/environ 2> /dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$rank"; then
    kill -STOP "$pid" && stopped=$pid && break
  fi
done
[ -n "$stopped" ] || echo "stall_rank: no process of rank $rank found"
wait $job
status=$?
end=$(date +%s.%N)
echo "exit status $status after $(python3 -c "print(round($end - $start))") s"
[ -n "$stopped" ] && kill -KILL "$stopped" 2> /dev/null
exit 0
