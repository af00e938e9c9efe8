#!/usr/bin/env bash
# Checks that every C and C++ file of the project is formatted by .clang-format (LLVM's
# style at 100 columns), naming those that are not; `--fix` formats them in place.
# scripts/test.sh runs the check first. Uses Debian 12's clang-format (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.c' '*.cpp' '*.h')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
unformatted=()
for file in "${files[@]}"; do
  clang-format --dry-run --Werror "$file" > /dev/null 2>&1 || unformatted+=("$file")
done
if [ ${#unformatted[@]} -gt 0 ]; then
  echo "format: ${#unformatted[@]} file(s) not formatted as .clang-format says:" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  echo "format: run scripts/format.sh --fix" >&2
  exit 1
fi
echo "format: ${#files[@]} files formatted"
