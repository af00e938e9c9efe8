#!/bin/bash
# signal_after.sh FILE DELAY SIGNAL COMMAND...: runs COMMAND, and once FILE exists
# waits DELAY seconds and sends it SIGNAL (KILL, TERM, INT); then waits for it and
# prints "exit STATUS". Fails if COMMAND ends first or FILE never comes (600 s): then
# nothing was tested.
file=$1 delay=$2 signal=$3
shift 3
"$@" &
pid=$!
for _ in $(seq 6000); do
  [ -e "$file" ] && break
  kill -0 $pid 2> /dev/null || { echo "signal_after: the command ended before $file" >&2; exit 1; }
  sleep 0.1
done
[ -e "$file" ] || { echo "signal_after: no $file after 600 s" >&2; kill -KILL $pid; exit 1; }
sleep "$delay"
kill -0 $pid 2> /dev/null || { echo "signal_after: the command ended before the signal" >&2; exit 1; }
kill -"$signal" $pid
wait $pid 2> /dev/null
echo "exit $?"
