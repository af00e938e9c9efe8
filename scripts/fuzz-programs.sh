#!/usr/bin/env bash
# Long runs of the program generator (test/Generated): N valid programs through every
# stage in one run (--emit=llvm --report: checkprog's quick level; the suite prints
# every stage), N invalid ones (one known defect each), and N/EXE_EVERY of them built
# and run (reference, gradients, sharded against the reference), split over the
# machine's cores. Failures are shrunk to small reproducers (reduce.py) under WORKDIR.
#
#   scripts/fuzz-programs.sh N [--shardc PATH] [--first SEED] [--exe-every K] [--workdir DIR]
#
# --shardc takes another build of the compiler, e.g. build-asan/bin/shardc from
#   cmake -S . -B build-asan -G Ninja -DSHARDC_SANITIZE=ON && ninja -C build-asan shardc shardrt
# (UndefinedBehaviorSanitizer then stops at the first report, which checkprog counts
# as a failure). Prints each worker's summary and exits 1 if anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."

count=${1:?usage: scripts/fuzz-programs.sh N [--shardc PATH] [--first SEED] [--exe-every K] [--workdir DIR]}
shift
shardc=build/bin/shardc
first=1000000
exe_every=100
workdir=$(mktemp -d /tmp/shardc-fuzz.XXXXXX)
while [ $# -gt 0 ]; do
  case $1 in
    --shardc) shardc=$2; shift 2 ;;
    --first) first=$2; shift 2 ;;
    --exe-every) exe_every=$2; shift 2 ;;
    --workdir) workdir=$2; shift 2 ;;
    *) echo "fuzz-programs: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$shardc" ] || { echo "fuzz-programs: no compiler at $shardc (build it first)" >&2; exit 2; }
mkdir -p "$workdir"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=0

workers=$(nproc)
per=$(( (count + workers - 1) / workers ))
check=test/Generated/Inputs/checkprog.py
echo "fuzz-programs: $count programs from seed $first with $shardc, $workers workers, in $workdir"
pids=()
for w in $(seq 0 $((workers - 1))); do
  a=$((first + w * per)); b=$((a + per)); [ $b -gt $((first + count)) ] && b=$((first + count))
  [ $a -ge $b ] && continue
  (
    python3 $check "$shardc" "$workdir/quick-$w" --seeds $a:$b --level quick --reduce || true
    python3 $check "$shardc" "$workdir/invalid-$w" --seeds $a:$b --invalid 1 || true
    exe=$(( (b - a) / exe_every )); [ $exe -lt 1 ] && exe=1
    python3 $check "$shardc" "$workdir/exe-$w" --seeds $a:$((a + exe)) --level exe --reduce || true
  ) > "$workdir/worker-$w.log" 2>&1 &
  pids+=($!)
done
wait "${pids[@]}"
cat "$workdir"/worker-*.log | grep -E '^(FAIL|  reduced|checkprog:)' || true
failed=$(cat "$workdir"/worker-*.log | grep -c '^FAIL' || true)
echo "fuzz-programs: $failed failed (logs in $workdir)"
[ "$failed" -eq 0 ]
