#!/bin/bash
# kill_after.sh FILE DELAY COMMAND...: runs COMMAND, and once FILE exists waits DELAY
# seconds and kills it with SIGKILL. Fails if COMMAND ends first or FILE never comes
# (600 s): then nothing was tested.
file=$1 delay=$2
shift 2
"$@" > /dev/null 2>&1 &
pid=$!
for _ in $(seq 6000); do
  [ -e "$file" ] && break
  kill -0 $pid 2> /dev/null || { echo "kill_after: the command ended before $file" >&2; exit 1; }
  sleep 0.1
done
[ -e "$file" ] || { echo "kill_after: no $file after 600 s" >&2; kill -KILL $pid; exit 1; }
sleep "$delay"
kill -0 $pid 2> /dev/null || { echo "kill_after: the command ended before the kill" >&2; exit 1; }
kill -KILL $pid
wait $pid 2> /dev/null
exit 0
