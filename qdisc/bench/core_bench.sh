#!/bin/sh
# Userspace micro-benchmark of favor_core.h (see core_bench.c). Prints a table.
set -eu
D=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
gcc -O2 -fno-strict-aliasing -Wall -I"$D/../include" -o "$T/core_bench" "$D/core_bench.c"
"$T/core_bench"
