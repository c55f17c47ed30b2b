"""Measure the first SYN retransmission delay with and without the initial-RTO program.

    python3 rto_probe.py REPO CGROUP_DIR     (as root, inside a network namespace made for it)

Moves itself into CGROUP_DIR (a cgroup v2 directory), attaches the program there (so nothing else on the
machine is affected), sends a SYN to an address that never answers (a static neighbour entry behind a
veth whose peer drops the frame), and prints `RESULT <with> <without>` in seconds.
"""
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, sys.argv[1])
from testbed.runner.bpf import InitialRto  # noqa: E402

cg = sys.argv[2]
with open(os.path.join(cg, "cgroup.procs"), "w") as f:
    f.write(str(os.getpid()))
for c in (["ip", "link", "add", "fl-rto", "type", "veth", "peer", "name", "fl-rto-p"],
          ["ip", "addr", "replace", "192.0.2.1/24", "dev", "fl-rto"], ["ip", "link", "set", "fl-rto", "up"],
          ["ip", "link", "set", "fl-rto-p", "up"],
          ["ip", "neigh", "replace", "192.0.2.99", "lladdr", "02:00:00:00:00:99", "dev", "fl-rto"]):
    subprocess.run(c, check=True)


def first_retry():
    p = subprocess.Popen(["tcpdump", "-i", "fl-rto", "-n", "-l", "-tt",
                          "tcp[tcpflags] & tcp-syn != 0 and dst port 9"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    time.sleep(1)
    s = socket.socket()
    s.settimeout(4.5)
    try:
        s.connect(("192.0.2.99", 9))
    except OSError:
        pass
    s.close()
    time.sleep(0.2)
    p.terminate()
    ts = [float(line.split()[0]) for line in p.communicate()[0].split("\n") if line.strip()]
    return ts[1] - ts[0] if len(ts) > 1 else None


with InitialRto(3000, cgroup=cg):
    with_prog = first_retry()
without = first_retry()
subprocess.run(["ip", "link", "del", "fl-rto"], check=False)
print("RESULT", with_prog, without)
