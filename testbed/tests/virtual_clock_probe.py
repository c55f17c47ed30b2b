"""The dumbbell probe of a guest's clock: two namespaces and a router inside a running local guest, htb
100 Mb/s with a pfifo of 83 packets on the router's bottleneck port, netem 25 ms on each end host, 5 pings,
then 8 iperf3 flows for 20 s with tcpdump on the bottleneck; what it carried, the ping RTTs, the guest's
CPU busy share, and the guest's and the host's (wall) seconds it took.

    .venv/bin/python -m testbed.tests.virtual_clock_probe --name favorlab-virtual [--busy 2] [--json OUT]

--busy N runs N CPU-bound loops on the host beside it (started and ended here, by their PIDs). Run it only
under the guest lock (flock /var/tmp/favorlab-guest.lock ...): the guest must be the only load it measures.
Nothing the runner or the pipeline uses: it needs only the image's iproute2, iperf3 and tcpdump.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FAVORVM = REPO / "testbed" / "vm" / "favorvm"

# One shell script, run in the guest as root; its last line is the JSON result. The namespaces go at the
# end whatever happened (trap), so a probe leaves the guest as it found it.
GUEST_SCRIPT = r"""
set -eu
trap 'ip netns pids h2 2>/dev/null | xargs -r kill; ip netns pids r 2>/dev/null | xargs -r kill;
      ip netns del h1 2>/dev/null; ip netns del h2 2>/dev/null; ip netns del r 2>/dev/null; true' EXIT
for n in h1 h2 r; do ip netns add $n; ip -n $n link set lo up; done
ip link add h1-eth0 netns h1 type veth peer name r-eth0 netns r
ip link add h2-eth0 netns h2 type veth peer name r-eth1 netns r
ip -n h1 addr add 10.0.1.1/24 dev h1-eth0; ip -n r addr add 10.0.1.254/24 dev r-eth0
ip -n h2 addr add 10.0.2.1/24 dev h2-eth0; ip -n r addr add 10.0.2.254/24 dev r-eth1
for l in "h1 h1-eth0" "h2 h2-eth0" "r r-eth0" "r r-eth1"; do set -- $l; ip -n $1 link set $2 up; done
ip -n h1 route add default via 10.0.1.254; ip -n h2 route add default via 10.0.2.254
ip netns exec r sysctl -qw net.ipv4.ip_forward=1
ip netns exec h1 tc qdisc add dev h1-eth0 root netem delay 25ms limit 100000
ip netns exec h2 tc qdisc add dev h2-eth0 root netem delay 25ms limit 100000
ip netns exec r tc qdisc add dev r-eth1 root handle 1: htb default 1
ip netns exec r tc class add dev r-eth1 parent 1: classid 1:1 htb rate 100mbit
ip netns exec r tc qdisc add dev r-eth1 parent 1:1 handle 10: pfifo limit 83
t0=$(cat /proc/uptime | cut -d' ' -f1)
ping=$(ip netns exec h1 ping -n -c 5 10.0.2.1 | sed -n 's/.*time=\([0-9.]*\) ms/\1/p' | paste -sd, -)
ip netns exec h2 iperf3 -s -D -1 -p 5201
sleep 1
ip netns exec r tcpdump -q -n -s 128 -i r-eth1 -w /tmp/vclock-probe.pcap 2>/dev/null & tcpd=$!
sleep 1
cpu0=$(head -1 /proc/stat)
ip netns exec h1 iperf3 -c 10.0.2.1 -p 5201 -P 8 -t 20 -J > /tmp/vclock-probe.json
cpu1=$(head -1 /proc/stat)
kill -INT $tcpd; wait $tcpd || true
t1=$(cat /proc/uptime | cut -d' ' -f1)
python3 - "$ping" "$cpu0" "$cpu1" "$t0" "$t1" <<'PY'
import json, sys
ping, c0, c1, t0, t1 = sys.argv[1:]
a, b = [list(map(int, c.split()[1:])) for c in (c0, c1)]
d = [y - x for x, y in zip(a, b)]
idle = d[3] + d[4]
it = json.load(open("/tmp/vclock-probe.json"))
import os
pcap = os.path.getsize("/tmp/vclock-probe.pcap")
print(json.dumps({"throughput_mbps": round(it["end"]["sum_received"]["bits_per_second"] / 1e6, 2),
                  "ping_ms": [float(x) for x in ping.split(",") if x],
                  "guest_cpu_busy": round(1 - idle / sum(d), 3),
                  "guest_s": round(float(t1) - float(t0), 1), "pcap_bytes": pcap,
                  "retransmits": it["end"]["sum_sent"].get("retransmits")}))
PY
rm -f /tmp/vclock-probe.pcap /tmp/vclock-probe.json
"""


def guest(name: str, cmd: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([str(FAVORVM), "ssh", "--name", name, cmd], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def busy_loops(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(n)]


def end(procs: list[subprocess.Popen]) -> None:
    for p in procs:          # by PID: only the loops started here
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=10)


def probe(name: str, busy: int = 0) -> dict:
    """The probe on the running guest `name`, with `busy` host loops beside it."""
    loops = busy_loops(busy)
    try:
        load0 = os.getloadavg()[0]
        t0 = time.monotonic()
        r = guest(name, "bash -s <<'EOF'\n" + GUEST_SCRIPT + "EOF\n")
        wall = time.monotonic() - t0
        load1 = os.getloadavg()[0]
    finally:
        end(loops)
    if r.returncode != 0:
        raise RuntimeError(f"the probe failed in guest {name} (exit {r.returncode}): {r.stderr[-2000:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    ping = out["ping_ms"]
    return dict(out, wall_s=round(wall, 1), host_busy_loops=busy, host_load_before=round(load0, 2),
                host_load_after=round(load1, 2), ping_mean_ms=round(sum(ping) / len(ping), 3) if ping else None)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", required=True, help="the running local guest (favorvm --name)")
    ap.add_argument("--busy", type=int, default=0, help="CPU-bound loops on the host beside the probe")
    ap.add_argument("--json", type=Path, help="also write the result here")
    a = ap.parse_args(argv)
    res = probe(a.name, a.busy)
    print(json.dumps(res, indent=1))
    if a.json:
        a.json.write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
