#!/bin/bash
# stop_under_load.sh TRIES STEPS MPIRUN... -- PROGRAM ARGS...
#
# SIGTERM to mpirun in the middle of a run, TRIES times, with two CPU hogs running
# (started here, and killed however this script ends). First the uninterrupted run of
# STEPS steps (ref.jsonl). Then each try starts the same run with --checkpoint-dir
# ckI, waits for its third metrics line, sends mpirun SIGTERM and checks:
#   - mpirun is gone within 10 s of the signal;
#   - a checkpoint of a completed step N is there, and what the summary says;
#   - --resume ckI for two more steps gives the uninterrupted run's losses of steps N+1
#     and N+2, to the last digit.
# One line per try; "FAIL" and exit 1 at the first that does not hold.
set -u
tries=$1 steps=$2
shift 2
mpirun=()
while [ "$1" != "--" ]; do mpirun+=("$1"); shift; done
shift
program=("$@")

yes > /dev/null & hog1=$!
yes > /dev/null & hog2=$!
trap 'kill $hog1 $hog2 2>/dev/null; wait $hog1 $hog2 2>/dev/null' EXIT

lossOf() { # FILE STEP: the loss of that step's metrics line
  sed -n "s/.*\"kind\":\"train\",\"step\":$2,.*\"loss\":\([^,]*\),.*/\1/p" "$1"
}

"${mpirun[@]}" "${program[@]}" --steps "$steps" --checkpoint-dir ref-ck --metrics ref.jsonl \
  --log-every 1 --no-eval --output ref.json > /dev/null 2> ref.err || { echo "FAIL: the uninterrupted run"; cat ref.err; exit 1; }

for i in $(seq 1 "$tries"); do
  rm -rf "ck$i" "m$i.jsonl" "r$i.jsonl"
  "${mpirun[@]}" "${program[@]}" --steps "$steps" --checkpoint-dir "ck$i" --metrics "m$i.jsonl" \
    --log-every 1 --no-eval --output "s$i.json" > "out$i" 2> "err$i" &
  pid=$!
  waited=0
  while lines=$(grep -c '"kind":"train"' "m$i.jsonl" 2>/dev/null); [ "${lines:-0}" -lt 3 ]; do
    sleep 0.05
    waited=$((waited + 1))
    if [ $waited -gt 2400 ] || ! kill -0 $pid 2>/dev/null; then
      echo "FAIL: try $i: no third step"; cat "err$i"; kill -KILL $pid 2>/dev/null; exit 1
    fi
  done
  start=$(date +%s.%N)
  kill -TERM $pid
  wait $pid
  status=$?
  seconds=$(echo "$(date +%s.%N) - $start" | bc)
  if [ "$(echo "$seconds > 10" | bc)" = 1 ]; then
    echo "FAIL: try $i: mpirun took $seconds s to go"; exit 1
  fi
  if grep -q "Process received signal\|exited on signal" "err$i"; then
    echo "FAIL: try $i: a rank crashed"; cat "err$i"; exit 1
  fi
  newest=$(ls "ck$i" 2>/dev/null | grep '^ckpt-[0-9]*\.safetensors$' | sort -t- -k2 -n | tail -1)
  if [ -z "$newest" ]; then
    echo "FAIL: try $i: no checkpoint (exit $status)"; cat "err$i"; exit 1
  fi
  n=${newest#ckpt-}
  n=${n%.safetensors}
  how=$(sed -n 's/.*"stopped_after_step": \([0-9]*\), "abandoned_step": \([0-9a-z]*\),.*/after step \1, abandoned \2/p' "s$i.json")
  # mpirun SIGKILLs a second after its SIGTERM: a rank slowed by the hogs may be killed
  # after its checkpoint and before its summary is out (the checkpoint is what counts).
  [ -n "$how" ] || how="summary lost to mpirun's SIGKILL"
  if ! "${mpirun[@]}" "${program[@]}" --steps $((n + 2)) --resume "ck$i" --checkpoint-dir "ck$i" \
      --metrics "r$i.jsonl" --log-every 1 --no-eval > /dev/null 2> "resume-err$i"; then
    echo "FAIL: try $i: the resumed run"; cat "resume-err$i"; exit 1
  fi
  for step in $((n + 1)) $((n + 2)); do
    want=$(lossOf ref.jsonl $step) got=$(lossOf "r$i.jsonl" $step)
    if [ -z "$want" ] || [ "$want" != "$got" ]; then
      echo "FAIL: try $i: step $step's loss: $got, uninterrupted $want"; exit 1
    fi
  done
  echo "try $i: checkpoint of step $n (stopped $how), mpirun gone $(printf %.1f "$seconds") s after SIGTERM, resumed losses equal"
done
