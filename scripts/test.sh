#!/usr/bin/env bash
# Sets up, builds, checks that the C++ files are formatted (scripts/format.sh) and
# runs every test (lit suites and the editor grammar tests through ctest). Ends with
# ctest's summary line.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
bash scripts/format.sh
ctest --test-dir build --output-on-failure
