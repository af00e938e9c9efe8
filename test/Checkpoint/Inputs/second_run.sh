#!/usr/bin/env bash
# second_run.sh DIR PROGRAM ARGS...: starts PROGRAM ARGS --checkpoint-dir DIR in the
# background, waits until it holds DIR's lock (the lock file names its pid), runs the
# same command line a second time and prints its stderr and exit status, then kills the
# first run (SIGKILL: its lock goes with it) and prints what the lock file says.
set -u
dir=$1; shift
"$@" --checkpoint-dir "$dir" > /dev/null 2>&1 &
first=$!
for _ in $(seq 1 600); do
  grep -q '^pid ' "$dir/.lock" 2> /dev/null && break
  sleep 0.05
done
"$@" --checkpoint-dir "$dir" > /dev/null 2> "$dir.second.err"
echo "second run: exit status $?"
cat "$dir.second.err"
kill -KILL $first
wait $first 2> /dev/null
echo "lock file: $(cat "$dir/.lock")"
