#!/usr/bin/env bash
# The main job, for now: set up, build, and compile the W1 MLP example under
# its tensor-parallel rules to its typed sharding plan (the rule linter).
# Code generation and training under mpirun come with the next stages.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
model=${1:-examples/mlp/mlp.shard}
rules=${2:-examples/mlp/tp.rules}
./build/bin/shardc "$model" --rules "$rules" --emit=typed
