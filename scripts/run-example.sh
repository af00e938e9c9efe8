#!/usr/bin/env bash
# The main job: set up, build, compile the W2 CNN example for 8 data-parallel
# ranks, print its communication plan, train it on Fashion-MNIST on 8 local
# ranks, print the test accuracy and write the run's report page
# (build/example/report.html: curves, plan, layouts).
#   run-example.sh [MODEL RULES RANKS EPOCHS]
# The run configuration beside the model (run.json: data bindings, seed, ...) is
# used when there is one; EPOCHS overrides its epochs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
model=${1:-examples/cnn/cnn.shard}
rules=${2:-examples/cnn/dp.rules}
ranks=${3:-8}
epochs=${4:-5}
out=build/example
mkdir -p "$out"
./build/bin/shardc "$model" --rules "$rules" --report -o "$out/program"
config=()
[ -f "$(dirname "$model")/run.json" ] && config=(--config "$(dirname "$model")/run.json")
mpirun --allow-run-as-root --oversubscribe -np "$ranks" "$out/program" "${config[@]}" \
  --epochs "$epochs" --metrics "$out/metrics.jsonl" --output "$out/summary.json" \
  --report-page "$out/report.html"
python3 - "$out/summary.json" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
print(json.dumps(summary, indent=2))
if summary.get("eval"):
    e = summary["eval"]
    print(f"test accuracy {e['accuracy']:.4f} on {e['examples']} images after "
          f"{summary['epochs']:g} epochs ({summary['seconds_per_epoch']:.1f} s per epoch)")
PY
