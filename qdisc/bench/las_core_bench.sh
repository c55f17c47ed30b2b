#!/bin/sh
# Userspace micro-benchmark of las_core.h (see las_core_bench.c). Prints a table.
set -eu
D=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
gcc -O2 -fno-strict-aliasing -Wall -I"$D/../include" -o "$T/las_core_bench" "$D/las_core_bench.c"
"$T/las_core_bench"
