"""Put TCP traffic through each AQM of config/aqms.yaml the way the dumbbell does (topologies.tc's
htb rate limit with the AQM as its only leaf), and print what tc says it did. Run as root in the guest:

    python3 testbed/tests/aqm_probe.py REPO '[{"name": "red", "kind": "red", "args": [...]}, ...]'

For each entry: two network namespaces of its own joined by a veth pair, the bottleneck (10 Mb/s) on the
sender's side, a 4 s iperf3 TCP transfer with 4 streams through it (enough to fill an 8-packet queue),
then `tc -s -j qdisc show` of that interface and iperf3's received rate; the namespaces are deleted
afterwards. Prints one JSON object {name: {"qdisc": [...], "received_mbps": x, "error": str|None}}.
"""
import json
import os
import subprocess
import sys
import time


def sh(*argv, ns=None, check=True, **kw):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(argv)
    return subprocess.run(cmd, capture_output=True, text=True, check=check, **kw)


def probe(entry: dict, mbps: float = 10.0) -> dict:
    from topologies import tc
    tag = f"{os.getpid() % 10000}"
    snd, rcv = f"fl-aqm-s{tag}", f"fl-aqm-r{tag}"
    res = {"qdisc": [], "received_mbps": None, "error": None}
    sh("ip", "netns", "add", snd)
    sh("ip", "netns", "add", rcv)
    try:
        sh("ip", "link", "add", "aqm0", "netns", snd, "type", "veth", "peer", "name", "aqm1", "netns", rcv)
        for ns, dev, ip in ((snd, "aqm0", "10.9.0.1/24"), (rcv, "aqm1", "10.9.0.2/24")):
            sh("ip", "addr", "add", ip, "dev", dev, ns=ns)
            sh("ip", "link", "set", dev, "up", ns=ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
            sh(*tc.offload_cmd(dev), ns=ns, check=False)
        kind = entry["kind"]
        sh("modprobe", f"sch_{kind}", check=False)
        for cmd in tc.bottleneck_cmds("aqm0", mbps, kind, entry["args"]):
            p = sh(*cmd, ns=snd, check=False, env=tc.tc_env(kind))
            if p.returncode:
                res["error"] = f"{' '.join(cmd)}: {p.stderr.strip()}"
                return res
        srv = subprocess.Popen(["ip", "netns", "exec", rcv, "iperf3", "-s", "-1", "-B", "10.9.0.2"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        c = sh("iperf3", "-c", "10.9.0.2", "-t", "4", "-P", "4", "-J", ns=snd, check=False, timeout=60)
        srv.wait(timeout=30)
        try:
            res["received_mbps"] = json.loads(c.stdout)["end"]["sum_received"]["bits_per_second"] / 1e6
        except (ValueError, KeyError) as e:
            res["error"] = f"iperf3: {e}: {c.stdout[-300:]} {c.stderr[-300:]}"
        res["qdisc"] = json.loads(sh("tc", "-s", "-j", "qdisc", "show", "dev", "aqm0", ns=snd,
                                     env=tc.tc_env(kind)).stdout)
    finally:
        sh("ip", "netns", "del", snd, check=False)
        sh("ip", "netns", "del", rcv, check=False)
    return res


def main() -> int:
    sys.path.insert(0, sys.argv[1])     # the repository copy in the guest: a script, not an installed package
    out = {e["name"]: probe(e) for e in json.loads(sys.argv[2])}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
