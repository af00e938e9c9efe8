#!/bin/sh
# What a rank of a compiled program holds before the program's own memory, measured on
# this machine with 8 ranks (the examples' count): writes shardrt-calibrate's JSON to
# OUTPUT, which shardc --report reads beside libshardrt.so. When MPI cannot start here
# it writes {} and says so: the report then says the process is not measured.
#   measure-process-memory.sh CALIBRATE OUTPUT
if measured=$(timeout 120 mpirun --allow-run-as-root --oversubscribe -np 8 "$1" --process-memory 2>/dev/null) &&
  [ -n "$measured" ]; then
  printf '%s\n' "$measured" > "$2"
else
  echo "warning: shardrt-calibrate --process-memory did not run; shardc --report will not count a rank's own memory" >&2
  echo '{}' > "$2"
fi
