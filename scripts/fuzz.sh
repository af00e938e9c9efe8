#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ (built by scripts/build.sh into build/fuzz/bin
# when clang-22's libFuzzer is installed) for SECONDS each, one after the other.
#
#   scripts/fuzz.sh TARGET|all SECONDS [--workdir DIR] [--fuzzers DIR] [--merge]
#
# TARGET: frontend (a model file through --emit=typed), rules (a rules file on W1),
# safetensors (both safetensors readers), npy. Each run starts from the committed
# corpus (fuzz/corpus/TARGET) and seeds made fresh from the repository: every model
# file or rules file of examples/, stdlib/ and test/, and the files the Data tests
# write (test/Data/Inputs/make_*.py). New inputs go to WORKDIR/corpus/TARGET (default
# build/fuzz/work), a crash or hang to WORKDIR/TARGET-crash-*, and the script fails.
# --merge then replaces fuzz/corpus/TARGET by the smallest set of all of them that
# keeps their features (libFuzzer's -set_cover_merge=1): what to commit.
set -euo pipefail
cd "$(dirname "$0")/.."

usage="usage: scripts/fuzz.sh TARGET|all SECONDS [--workdir DIR] [--fuzzers DIR] [--merge]"
target=${1:?$usage}
seconds=${2:?$usage}
shift 2
workdir=build/fuzz/work
fuzzers=build/fuzz/bin
merge=false
while [ $# -gt 0 ]; do
  case $1 in
    --workdir) workdir=$2; shift 2 ;;
    --fuzzers) fuzzers=$2; shift 2 ;;
    --merge) merge=true; shift ;;
    *) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
case $target in
  all) targets=(frontend rules safetensors npy) ;;
  frontend|rules|safetensors|npy) targets=("$target") ;;
  *) echo "fuzz.sh: unknown target '$target' (frontend, rules, safetensors, npy or all)" >&2; exit 2 ;;
esac
if [ ! -x "$fuzzers/shardc-fuzz-frontend" ]; then
  echo "fuzz.sh: no fuzzers in $fuzzers: run scripts/build.sh (it needs libclang-rt-22-dev)" >&2
  exit 1
fi

# Seeds of TARGET into DIR: files copied under their path (slashes as '_'), so that
# equal names from different folders stay apart.
seed() {
  local target=$1 dir=$2
  rm -rf "$dir" && mkdir -p "$dir"
  case $target in
    frontend|rules)
      local ext=shard
      [ "$target" = rules ] && ext=rules
      find examples stdlib test -name "*.$ext" | while read -r file; do
        cp "$file" "$dir/${file//\//_}"
      done ;;
    safetensors|npy)
      /usr/bin/python3 "test/Data/Inputs/make_$target.py" "$dir/made" > /dev/null
      find "$dir/made" -name "*.$target" -exec mv {} "$dir" \;
      rm -rf "$dir/made" ;;
  esac
}

dictionary() {
  case $1 in
    frontend) echo "-dict=$fuzzers/model.dict" ;;
    rules) echo "-dict=$fuzzers/rules.dict" ;;
  esac
}

mkdir -p "$workdir"
for t in "${targets[@]}"; do
  seeds=$workdir/seeds/$t corpus=$workdir/corpus/$t committed=fuzz/corpus/$t
  seed "$t" "$seeds"
  mkdir -p "$corpus" "$committed"
  echo "fuzz.sh: $t for ${seconds} s"
  # Inputs up to 16 KiB (the examples are smaller); 10 s for one is a hang; the RSS
  # limit stays under the machine's memory with both cores fuzzing.
  "$fuzzers/shardc-fuzz-$t" $(dictionary "$t") -max_total_time="$seconds" -max_len=16384 \
    -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$workdir/$t-" "$corpus" "$committed" "$seeds"
  if $merge; then
    rm -rf "$committed.new" && mkdir -p "$committed.new"
    "$fuzzers/shardc-fuzz-$t" -set_cover_merge=1 "$committed.new" "$committed" "$corpus" "$seeds" 2>&1 |
      grep -E "MERGE-OUTER: [0-9]+ new files" || true
    rm -rf "$committed" && mv "$committed.new" "$committed"
    echo "fuzz.sh: $committed: $(ls "$committed" | wc -l) files, $(du -sh "$committed" | cut -f1)"
  fi
done
