#!/usr/bin/env bash
# stall_rank.sh RANK DELAY COMMAND...: runs COMMAND (an mpirun) in the background, and
# DELAY seconds after the process of MPI rank RANK appears (found among COMMAND's
# descendants by the OMPI_COMM_WORLD_RANK in its environment) stops it with SIGSTOP.
# Prints how long COMMAND ran after that and its exit status, then kills whatever is
# left of the stopped rank. Give COMMAND a timeout: if no rank is found, it runs on.
set -u
rank=$1 delay=$2; shift 2
descendants() {
  for child in $(pgrep -P "$1"); do
    echo "$child"
    descendants "$child"
  done
}
"$@" &
job=$!
stopped=
for _ in $(seq 1 300); do
  for pid in $(descendants "$job"); do
    if tr '\0' '\n' < /proc/$pid/environ 2> /dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$rank"; then
      sleep "$delay"
      kill -STOP "$pid" && stopped=$pid
      break 2
    fi
  done
  sleep 0.1
done
start=$(date +%s.%N)
[ -n "$stopped" ] || echo "stall_rank: no process of rank $rank found"
wait $job
status=$?
end=$(date +%s.%N)
echo "exit status $status, $(python3 -c "print(round($end - $start))") s after the stop"
[ -n "$stopped" ] && kill -KILL "$stopped" 2> /dev/null
exit 0
