#!/bin/bash
# favorlab's qdisc modules loaded (the old build unloaded first when RELOAD is 1), their tc plugins built
# into TC_LIB_DIR and their man pages installed.
#   load.sh SRC VERSION TC_LIB_DIR RELOAD QDISC...
# One script run instead of one Ansible task per module, plugin and page: each module run costs 5-10 s of
# Python start-up in the TCG guest (the five plugins' build and copy took 88 s there as ten loop items).
# Prints a line for each plugin or page it installed or changed; the role reports changed when any.
set -euo pipefail
src=$1 version=$2 tc_lib_dir=$3 reload=$4
shift 4
if [ "$reload" = 1 ]; then
    # a failed unload (a qdisc still uses the module) leaves the old build loaded; the runner then refuses
    # the run (testbed/runner/hoststate.py check_loaded_module)
    for q in "$@"; do modprobe -r "sch_$q" || echo "warning: sch_$q stays loaded (in use)" >&2; done
fi
for q in "$@"; do modprobe "sch_$q"; done
install -d -m 0755 "$tc_lib_dir" /usr/local/share/man/man8
build=/usr/src/sch_favor-$version
for q in "$@"; do
    # built beside the DKMS sources, installed only when it differs: an unchanged plugin is not rewritten
    gcc -O2 -Wall -fPIC -shared -I"$src/include" -o "$build/q_$q.so" "$src/tc/q_$q.c"
    if ! cmp -s "$build/q_$q.so" "$tc_lib_dir/q_$q.so"; then
        install -m 0755 "$build/q_$q.so" "$tc_lib_dir/q_$q.so"
        echo "installed $tc_lib_dir/q_$q.so"
    fi
    if ! cmp -s "$src/tc-$q.8" "/usr/local/share/man/man8/tc-$q.8"; then
        install -m 0644 "$src/tc-$q.8" "/usr/local/share/man/man8/tc-$q.8"
        echo "installed /usr/local/share/man/man8/tc-$q.8"
    fi
done
