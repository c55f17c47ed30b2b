#!/bin/bash
# The sch_favor DKMS package on this host: its source tree /usr/src/sch_favor-VERSION made equal to the
# repository copy's qdisc sources, then built and installed for KERNEL unless DKMS already holds a build of
# these very sources for it.
#   dkms_build.sh SRC VERSION KERNEL SOURCE...
# One script run instead of one Ansible task per file: every module run costs 5-10 s of Python start-up in
# the TCG guest (the per-file copy of the 17 sources took 140 s there). Prints "sources changed" when a
# file of the tree changed and "rebuilt" after a build; the role reads both.
set -euo pipefail
src=$1 version=$2 kernel=$3
shift 3
dest=/usr/src/sch_favor-$version
mkdir -p "$dest"
# -c: content decides, not times (unarchive may give the repository copy new ones); -i lists what changed
changed=$(cd "$src" && rsync -rlpc -i --relative -- "$@" "$dest/")
if [ -n "$changed" ]; then
    echo "sources changed:"
    printf '%s\n' "$changed"
fi
status=$(dkms status -m sch_favor -v "$version" -k "$kernel")
if [ -n "$changed" ] && [ -n "$status" ]; then
    dkms remove -m sch_favor -v "$version" -k "$kernel"
    status=
fi
if [ -n "$changed" ] || ! grep -q installed <<<"$status"; then
    dkms status -m sch_favor -v "$version" | grep -q . || dkms add -m sch_favor -v "$version"
    dkms build -m sch_favor -v "$version" -k "$kernel"
    dkms install -m sch_favor -v "$version" -k "$kernel" --force
    echo "rebuilt for $kernel"
fi
