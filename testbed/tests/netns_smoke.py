"""Run the runner on THIS machine inside a private network namespace (no guest): the dumbbell, TCP
profile, probes, captures, stats and the run-directory files. Used by test_runner_guest.py.

    ip netns exec NS /usr/bin/python3 netns_smoke.py REPO RUN_DIR [--reuse-topology] [--limit N] [--run-id ID] [--zero-delays]

(--reuse-topology, the bottleneck's pfifo limit and zero access delays, so that the RTT probes pass without
netem: test_kept_topology_netns.py's runs on one kept network.)

Where the kernel has no netem (a host without modules), the delay ports get a plain tbf instead, so
the RTT checks fail and the run is marked invalid: that is expected here. Mininet's fixLimits (which
raises machine-wide sysctls) is skipped. No initial-RTO program (it would attach to the machine's cgroup).
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

ap = argparse.ArgumentParser()
ap.add_argument("repo")
ap.add_argument("run_dir", type=Path)
ap.add_argument("--reuse-topology", action="store_true")
ap.add_argument("--limit", default="8")
ap.add_argument("--run-id", default="netns-smoke")
ap.add_argument("--zero-delays", action="store_true")
a = ap.parse_args()
sys.path.insert(0, a.repo)
from mininet.net import Mininet  # noqa: E402

Mininet.inited = True  # skip fixLimits: global sysctls of a shared machine stay untouched
from topologies import dumbbell  # noqa: E402
from testbed.runner.run import Runner  # noqa: E402

probe = subprocess.run(["tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"],
                       capture_output=True, text=True)
subprocess.run(["tc", "qdisc", "del", "dev", "lo", "root"], capture_output=True)
if probe.returncode:
    dumbbell.delay_port_cmds = lambda dev, d, acc: [
        ["tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", f"{acc}mbit", "burst", "3028",
         "limit", "1514000"]]
d = a.run_dir
spec = {"run_id": a.run_id, "topology": {
            "kind": "dumbbell", "bottleneck_mbps": 10, "access_mbps": 100, "left_delays_ms": [0, 12, 25],
            "right_delays_ms": [2, 37, 75], "central_delay_ms": 0, "mtu": 1500},
        "aqm": {"forward": {"kind": "pfifo", "args": ["limit", a.limit]},
                "reverse": {"kind": "pfifo", "args": ["limit", "8"]}},
        "tcp": {"profile": "paper", "iw": 2, "congestion_control": "reno", "sack": False, "timestamps": False,
                "delayed_ack": False, "tlp": False, "rack": False, "initial_rto_ms": None, "ecn": False},
        "load": 0.3, "seed": 1, "replication": 0, "duration_s": 3, "drain_s": 1, "warmup_s": 0,
        "schedule": "schedule.csv", "capture": {"snaplen": 128}, "trace_favor": False}
if a.zero_delays:
    spec["topology"].update(left_delays_ms=[0, 0, 0], right_delays_ms=[0, 0, 0])
(d / "run.json").write_text(json.dumps(spec))
(d / "schedule.csv").write_text("# generator=test\nflow_id,start_s,size_bytes,size_pkts,src,dst,direction,kind\n"
                                "0,0.5,14480,10,a1,b1,forward,web\n1,1.0,14480,10,b2,a3,reverse,web\n")
sys.exit(Runner(d, reuse_topology=a.reuse_topology).run())
