#!/usr/bin/env python3
"""What the favor trace's recorder costs while a run is measured, with its ring buffer at the old fixed size
(16 MB per CPU, copied out whenever half full) and sized to hold the run (--expect-events), in turn:

    testbed/vm/favorvm ssh --name VM "python3 /opt/favorlab/qdisc/bench/trace_cost.py [--seconds 40] [--reps 2]"

In the guest, as root: two network namespaces of its own joined by a veth pair, favor (limit 83) under htb at
100 Mbit/s on the sender's side, 8 iperf3 TCP streams for --seconds through it while favor_trace.py records.
For each recording it prints the recorder's CPU seconds over the traffic (from /proc/PID/stat), the guest's
busy share over it (/proc/stat), the bytes the recorder copied out during the run and the seconds it read after
the stop (its log), and iperf3's received rate; then the medians and the ratio of the recorder's CPU
(docs/measurements.md, "The favor trace's buffer"). Python standard library and the repository's topologies.tc (as
the dumbbell builds its bottleneck).
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, REPO)      # the repository copy in the guest: a script, not an installed package
from topologies import tc     # noqa: E402  (the dumbbell's own bottleneck commands)

TRACER = os.path.join(REPO, "qdisc", "tools", "favor_trace.py")
MODES = {"fixed 16 MB": ["--buffer-kb", "16384"], "sized": ["--expect-events", "600000"]}


def sh(*argv, ns=None, **kw):
    return subprocess.run((["ip", "netns", "exec", ns] if ns else []) + list(argv), check=True,
                          capture_output=True, text=True, **kw)


def busy():
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return sum(f) - f[3] - f[4], f[3] + f[4]          # busy, idle + iowait


def proc_cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")    # utime + stime


def once(args, seconds):
    tag = f"tc{os.getpid() % 10000}"
    snd, rcv = f"{tag}s", f"{tag}r"
    sh("ip", "netns", "add", snd)
    sh("ip", "netns", "add", rcv)
    try:
        sh("ip", "link", "add", "fq0", "netns", snd, "type", "veth", "peer", "name", "fq1", "netns", rcv)
        for ns, dev, ip in ((snd, "fq0", "10.77.0.1/24"), (rcv, "fq1", "10.77.0.2/24")):
            sh("ip", "addr", "add", ip, "dev", dev, ns=ns)
            sh("ip", "link", "set", dev, "up", ns=ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
            subprocess.run(["ip", "netns", "exec", ns, *tc.offload_cmd(dev)], capture_output=True)
        sh("modprobe", "sch_favor")
        for cmd in tc.bottleneck_cmds("fq0", 100, "favor", ["limit", "83"]):
            sh(*cmd, ns=snd, env=tc.tc_env("favor"))
        srv = subprocess.Popen(["ip", "netns", "exec", rcv, "iperf3", "-s", "-1", "-B", "10.77.0.2"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        log = "/tmp/trace-cost-recorder.log"
        rec = subprocess.Popen(["python3", TRACER, "--raw", "--out", "/tmp/trace-cost.txt", "--dev", "fq0", *args],
                               stdout=open(log, "w"), stderr=subprocess.STDOUT)
        time.sleep(2)                                       # the recorder is up and its buffer allocated
        b0, c0 = busy(), proc_cpu(rec.pid)
        out = sh("iperf3", "-c", "10.77.0.2", "-t", str(seconds), "-P", "8", "-J", ns=snd, timeout=seconds + 60)
        b1, c1 = busy(), proc_cpu(rec.pid)
        rec.send_signal(signal.SIGINT)
        rec.wait(timeout=600)
        srv.wait(timeout=30)
        text = open(log).read()
        during = int(re.search(r"(\d+) bytes copied out during the run", text).group(1))
        after = float(re.search(r"after the stop ([\d.]+) s reading", text).group(1))
        return {"recorder_cpu_s": c1 - c0, "busy": (b1[0] - b0[0]) / ((b1[0] - b0[0]) + (b1[1] - b0[1])),
                "copied_during_mb": during / 1e6, "read_after_stop_s": after,
                "mbps": json.loads(out.stdout)["end"]["sum_received"]["bits_per_second"] / 1e6}
    finally:
        subprocess.run(["ip", "netns", "del", snd], capture_output=True)
        subprocess.run(["ip", "netns", "del", rcv], capture_output=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=40)
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args()
    res = {m: [] for m in MODES}
    for _ in range(a.reps):
        for mode, args in MODES.items():
            r = once(args, a.seconds)
            res[mode].append(r)
            print(f"{mode:12s} recorder {r['recorder_cpu_s']:5.2f} CPU s over {a.seconds} s, guest busy "
                  f"{r['busy']:.3f}, copied out during the run {r['copied_during_mb']:5.1f} MB, read after the stop "
                  f"{r['read_after_stop_s']:5.2f} s, {r['mbps']:.1f} Mb/s", flush=True)
    med = {m: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for m, rs in res.items()}
    fixed, sized = med["fixed 16 MB"], med["sized"]
    print(f"median recorder CPU over the traffic: fixed {fixed['recorder_cpu_s']:.2f} s, sized "
          f"{sized['recorder_cpu_s']:.2f} s; fixed / sized = {fixed['recorder_cpu_s'] / sized['recorder_cpu_s']:.1f}")


if __name__ == "__main__":
    main()
