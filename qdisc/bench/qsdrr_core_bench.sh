#!/bin/sh
# Userspace micro-benchmark of qsdrr_core.h (see qsdrr_core_bench.c). Prints two tables.
set -eu
D=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
gcc -O2 -fno-strict-aliasing -Wall -I"$D/../include" -o "$T/qsdrr_core_bench" "$D/qsdrr_core_bench.c"
"$T/qsdrr_core_bench"
