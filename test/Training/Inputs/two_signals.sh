#!/bin/bash
# two_signals.sh FILE GAP COMMAND...: runs COMMAND; once FILE holds 3 lines sends it
# SIGTERM, and GAP seconds later a second SIGTERM, from this shell or, with
# SECOND_SENDER=other, from another process (as Slurm and mpirun each send one); prints
# "exit STATUS" and whether the run wrote its summary.
file=$1 gap=$2
shift 2
"$@" > summary.json &
pid=$!
for _ in $(seq 6000); do
  lines=$(wc -l < "$file" 2> /dev/null)
  [ "${lines:-0}" -ge 3 ] && break
  kill -0 $pid 2> /dev/null || { echo "two_signals: the command ended first" >&2; exit 1; }
  sleep 0.05
done
kill -TERM $pid
sleep "$gap"
if [ "${SECOND_SENDER:-same}" = other ]; then
  sh -c "kill -TERM $pid" 2> /dev/null
else
  kill -TERM $pid 2> /dev/null
fi
wait $pid
echo "exit $?"
[ -s summary.json ] && echo "summary written" || echo "no summary"
