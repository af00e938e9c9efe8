#!/usr/bin/env bash
# stall_rank.sh RANK FILE COMMAND...: runs COMMAND (an mpirun) in the background and,
# once FILE (its metrics) has a line, so that training has begun, stops the process of
# MPI rank RANK with SIGSTOP (found among COMMAND's descendants by the
# OMPI_COMM_WORLD_RANK in its environment). Prints COMMAND's exit status and how long it
# ran after the stop, then kills whatever is left of the stopped rank. Give COMMAND a
# timeout: if no rank is stopped, it runs on.
set -u
rank=$1 file=$2; shift 2
descendants() {
  for child in $(pgrep -P "$1"); do
    echo "$child"
    descendants "$child"
  done
}
"$@" &
job=$!
stopped=
for _ in $(seq 1 600); do
  if [ -s "$file" ]; then
    for pid in $(descendants "$job"); do
      if tr '\0' '\n' < /proc/$pid/environ 2> /dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$rank"; then
        kill -STOP "$pid" && stopped=$pid
        break 2
      fi
    done
  fi
  sleep 0.1
done
start=$(date +%s.%N)
[ -n "$stopped" ] || echo "stall_rank: no process of rank $rank stopped"
wait $job
status=$?
end=$(date +%s.%N)
echo "exit status $status, $(python3 -c "print(round($end - $start))") s after the stop"
[ -n "$stopped" ] && kill -KILL "$stopped" 2> /dev/null
exit 0
