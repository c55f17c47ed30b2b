#!/usr/bin/env python3
"""Per-packet cost of one of favorlab's qdiscs (qdisc/Kbuild's modules, contract.qdiscs) against pfifo, in the
kernel, with pktgen.

    python3 /opt/favorlab/qdisc/bench/bench.py [--qdisc KIND (favor)] [--seconds 1.5] [--reps 3]
                                               [--limits 8 100 1000 10000] [--flows 1 100 10000] [--json out.json]

Runs as root on a testbed host (the QEMU guest; see qdisc/bench/run). For each mode, limit and
number of flows it runs pktgen (xmit_mode queue_xmit: every packet goes through dev_queue_xmit and
the qdisc) on a dummy device in a private network namespace, once with pfifo and once with the qdisc,
interleaved, --reps times, and reports the packets pktgen offered per second (accepted + dropped
by the qdisc; median). pktgen is CPU bound, so
pps_pfifo / pps_qdisc is the ratio of the whole per-packet cost (skb allocation, dev_queue_xmit,
qdisc, driver) with the qdisc to that with pfifo; the qdisc's own share is smaller than the whole.
pktgen sends UDP only: run2c classes every packet low without reading a TCP header (its cheaper path).

Modes:
  backlogged  htb at 1 Mbit/s above the qdisc: the queue stays full at `limit`, so every arrival
              takes the full-queue branch (pfifo: tail drop; favor: standard drop, or push-out of
              the last standard packet when the arrival's flow has nothing queued; las: the arrival
              or the tail of the flow with most attained service dropped)
  through     the qdisc as root of the dummy device: enqueue + dequeue at a near-empty queue
Flows: pktgen cycles UDP source ports over N values (N concurrent flows, round robin).
Standard library only.
"""
import argparse
import json
import os
import platform
import re
import statistics
import threading
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # run as a script: the repository root
from contract import qdiscs  # noqa: E402

PG = "/proc/net/pktgen"
# tc -s -j's fields every qdisc has; the rest of a qdisc's object is its own options and xstats
STANDARD_STATS = {"kind", "handle", "parent", "root", "options", "bytes", "packets", "drops", "overlimits",
                  "requeues", "backlog", "qlen", "refcnt"}
TC_ENV = dict(os.environ, TC_LIB_DIR=os.environ.get("TC_LIB_DIR", "/usr/local/lib/favorlab/tc"))


def sh(cmd):
    r = subprocess.run(cmd, shell=True, capture_output=True, text=True, env=TC_ENV)
    if r.returncode:
        sys.exit(f"bench: {cmd}: {r.stderr.strip()}")
    return r.stdout


def pg(path, cmd):
    with open(path, "w") as f:
        f.write(cmd + "\n")


def run_one(mode, kind, limit, flows, seconds):
    """pktgen pps through `kind` (pfifo or the qdisc under test) in a fresh device."""
    sh("ip link del bench0 2>/dev/null; ip link add bench0 type dummy && ip link set bench0 up txqueuelen 1000")
    if mode == "backlogged":
        sh("tc qdisc add dev bench0 root handle 1: htb default 1 && "
           "tc class add dev bench0 parent 1: classid 1:1 htb rate 1mbit burst 1600 && "
           f"tc qdisc add dev bench0 parent 1:1 handle 10: {kind} limit {limit}")
    else:
        sh(f"tc qdisc add dev bench0 root handle 10: {kind} limit {limit}")
    thread = f"{PG}/kpktgend_0"
    pg(thread, "rem_device_all")
    pg(thread, "add_device bench0")
    dev = f"{PG}/bench0"
    for c in ["xmit_mode queue_xmit", "count 0", "pkt_size 64", "delay 0", "clone_skb 0",
              "dst 10.77.0.2", "src_min 10.77.0.1", "src_max 10.77.0.1", "dst_mac 02:00:00:00:00:02",
              "udp_dst_min 9", "udp_dst_max 9", "udp_src_min 10000", f"udp_src_max {10000 + flows}"]:   # pktgen cycles [min, max):
        pg(dev, c)
    # count 0 = until stopped: pktgen counts only accepted packets in "count", and a full queue drops
    starter = threading.Thread(target=pg, args=(f"{PG}/pgctrl", "start"))
    starter.start()                          # the write returns when pktgen stops
    time.sleep(seconds)
    pg(f"{PG}/pgctrl", "stop")
    starter.join()
    res = open(dev).read()
    stats = sh("tc -s -j qdisc show dev bench0")
    pg(thread, "rem_device_all")
    sh("ip link del bench0")
    m = re.search(r"Result: OK: (\d+)\(c\d+\+d\d+\) usec", res)
    c = re.search(r"pkts-sofar: (\d+)\s+errors: (\d+)", res)
    if not m or not c:
        sys.exit(f"bench: pktgen did not report: {res[-600:]}")
    usec, sent = int(m.group(1)), int(c.group(1)) + int(c.group(2))   # accepted + dropped by the qdisc
    q = [x for x in json.loads(stats) if x.get("kind") == kind][0]
    return sent * 1e6 / usec, q


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qdisc", default="favor", choices=qdiscs.kinds(), help="the qdisc against pfifo")
    ap.add_argument("--seconds", type=float, default=1.5, help="length of one pktgen run (default 1.5 s)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--limits", type=int, nargs="+", default=[8, 100, 1000, 10000])
    ap.add_argument("--flows", type=int, nargs="+", default=[1, 100, 10000])
    ap.add_argument("--modes", nargs="+", default=["backlogged", "through"])
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench: run as root (pktgen, tc)")
    subprocess.run(["modprobe", "pktgen"], check=True)
    subprocess.run(["modprobe", f"sch_{a.qdisc}"], check=True)
    if not os.path.exists(f"{PG}/kpktgend_0"):
        sys.exit("bench: /proc/net/pktgen/kpktgend_0 missing after modprobe pktgen")
    cpus = os.cpu_count()
    # pktgen's other threads must not own the device: keep everything on thread 0
    for i in range(1, cpus):
        if os.path.exists(f"{PG}/kpktgend_{i}"):
            pg(f"{PG}/kpktgend_{i}", "rem_device_all")
    grid = []
    for mode in a.modes:
        for limit in (a.limits if mode == "backlogged" else [1000]):
            for flows in a.flows:
                grid.append((mode, limit, flows))
    results = []
    t0 = time.time()
    qd = a.qdisc
    for mode, limit, flows in grid:
        pps = {"pfifo": [], qd: []}
        last = {}
        for _ in range(a.reps):
            for kind in ("pfifo", qd):          # interleaved: drifts hit both alike
                v, q = run_one(mode, kind, limit, flows, a.seconds)
                pps[kind].append(v)
                last[kind] = q
        r = {"mode": mode, "limit": limit, "flows": flows, "qdisc": qd,
             "pps_pfifo": statistics.median(pps["pfifo"]), "pps_qdisc": statistics.median(pps[qd]),
             "runs": pps, "xstats": {k: v for k, v in last[qd].items() if k not in STANDARD_STATS}}
        r["ratio"] = r["pps_pfifo"] / r["pps_qdisc"]
        results.append(r)
        print(f"# {mode} limit={limit} flows={flows}: pfifo {r['pps_pfifo']:.0f} pps {qd} {r['pps_qdisc']:.0f} pps "
              f"ratio {r['ratio']:.3f}", file=sys.stderr, flush=True)
    env = {"kernel": platform.release(), "cpus": cpus,
           "module": open(f"/sys/module/sch_{qd}/version").read().strip(),
           "cpu_model": re.search(r"model name\s*:\s*(.*)", open("/proc/cpuinfo").read()).group(1),
           "seconds_per_run": a.seconds, "reps": a.reps, "seconds": round(time.time() - t0, 1),
           "command": "python3 " + " ".join([os.path.abspath(sys.argv[0])] + sys.argv[1:])}
    print(f"kernel {env['kernel']}, sch_{qd} {env['module']}, {cpus} CPU ({env['cpu_model']}), "
          f"pktgen queue_xmit, 64-byte UDP, {a.seconds} s x {a.reps} reps (median), {env['seconds']} s")
    print(f"reproduce: {env['command']}")
    print()
    print(f"| mode | limit (pkts) | flows | pfifo kpps | {qd} kpps | cost ratio {qd}/pfifo | {qd} counters (last run) |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for r in results:
        verd = ", ".join(f"{k} {v}" for k, v in r["xstats"].items() if isinstance(v, int) and v)
        print(f"| {r['mode']} | {r['limit'] if r['mode'] == 'backlogged' else '-'} | {r['flows']} | "
              f"{r['pps_pfifo'] / 1e3:.1f} | {r['pps_qdisc'] / 1e3:.1f} | {r['ratio']:.2f} | {verd} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"env": env, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
