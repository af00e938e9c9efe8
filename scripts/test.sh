#!/usr/bin/env bash
# Sets up, builds and runs every test (lit suites and the editor grammar tests
# through ctest). Ends with ctest's summary line.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure
