#!/usr/bin/env bash
# Every test suite under AddressSanitizer + UndefinedBehaviorSanitizer: shardc, the
# runtime and its test programs, and every program the suites compile (linked against
# the sanitized runtime) are built into build-asan/ with -DSHARDC_SANITIZE=ON, then
# ctest runs all suites there. Undefined behaviour stops the process that hits it;
# leaks are reported but for those of the uninstrumented libraries (scripts/lsan.supp).
#   scripts/test-sanitized.sh [ctest arguments, e.g. -R Parse]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ ! -f build-asan/build.ninja ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHARDC_SANITIZE=ON
fi
cmake --build build-asan
# The slow unwinder: OpenMPI and OpenBLAS keep no frame pointers, and the fast one
# stops at their frames, so that their leaks would not match the suppressions.
export ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0
export LSAN_OPTIONS=suppressions=$PWD/scripts/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
ctest --test-dir build-asan --output-on-failure "$@"
