#!/usr/bin/env bash
# The main job, for now: set up, build, compile the W1 MLP example under its
# tensor-parallel rules, print its communication plan, run the forward pass on
# 8 local ranks and check it against the unpartitioned reference build.
# (Training under mpirun comes with the next stage.)
#   run-example.sh [MODEL RULES RANKS]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
model=${1:-examples/mlp/mlp.shard}
rules=${2:-examples/mlp/tp.rules}
ranks=${3:-8}
out=build/example
mkdir -p "$out"
./build/bin/shardc "$model" --rules "$rules" --report -o "$out/program"
./build/bin/shardc "$model" --reference -o "$out/reference"
"$out/reference" --output "$out/reference.json"
mpirun --allow-run-as-root --oversubscribe -np "$ranks" "$out/program" --output "$out/output.json"
cat "$out/output.json"
python3 test/EndToEnd/Inputs/compare_outputs.py "$out/reference.json" "$out/output.json"
