#!/bin/sh
# Userspace micro-benchmark of riops_core.h (see riops_core_bench.c). Prints a table.
set -eu
D=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
gcc -O2 -fno-strict-aliasing -Wall -I"$D/../include" -o "$T/riops_core_bench" "$D/riops_core_bench.c"
"$T/riops_core_bench"
