"""The tcpdump captures at the topology's capture points (docs/contracts.md "Run directory": pcap/), their
drops, and the packets in them that are not the experiment's."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from testbed.runner import processes


# the dumbbell's capture points (contracts.md "Run directory"): every host's own interface, and rl's
# interface towards the senders and rr's towards rl around the bottleneck
DUMBBELL_BNECK_POINTS = {"bneck-in": ("rl", "rl-eth0"), "bneck-out": ("rr", "rr-eth0")}


def capture_points(hostsj: dict) -> dict:
    """name -> (node, intf) of every tcpdump: the topology's own capture_points when hosts.json has them
    (the chain: topologies.chain.capture_points), else the dumbbell's (a sender-<h> per host, bneck-in/out)."""
    if "capture_points" in hostsj:
        return {name: (p["node"], p["intf"]) for name, p in hostsj["capture_points"].items()}
    points = {f"sender-{h}": (h, f"{h}-eth0") for h in hostsj["hosts"]}
    points.update(DUMBBELL_BNECK_POINTS)
    return points


def capture_filter(spec: dict) -> str:
    """tcpdump's filter for every capture: IPv4, less a flood's spoofed prefix (its SYNs and their backscatter:
    tens of thousands of packets a second that the analysis does not read; flood.json and the qdiscs'
    statistics count them)."""
    flood = spec.get("flood")
    return f"ip and not net {flood['spoof']}" if flood else "ip"


def own_addresses(hostsj: dict) -> list[str]:
    """The experiment's IPv4 addresses: every host's and its gateway's (the routers' ports toward the hosts)."""
    return sorted({a for h in hostsj["hosts"].values() for a in (h.get("ip"), h.get("gw")) if a})


def foreign_packets(pcap: Path, own: list[str], keep: int = 5) -> tuple[int, list[str]]:
    """(count, the first `keep` as tcpdump prints them) of the IP packets in `pcap` whose source or destination
    is not one of `own`: traffic that is not the experiment's (a DHCP client on a veth port, a stray daemon).
    tcpdump, already on every testbed, reads the file with a filter built from the addresses."""
    srcs = " or ".join(f"src host {a}" for a in own)
    dsts = " or ".join(f"dst host {a}" for a in own)
    flt = f"ip and not (({srcs}) and ({dsts}))" if own else "ip"
    p = subprocess.run(["tcpdump", "-r", str(pcap), "-n", flt], capture_output=True, text=True, timeout=600)
    if p.returncode:
        raise RuntimeError(f"tcpdump -r {pcap} failed: {p.stderr.strip()[-300:]}")
    lines = p.stdout.splitlines()
    return len(lines), lines[:keep]


def launch(ctx) -> tuple[list[str], float]:
    """A tcpdump at every capture point, not waited for (wait_started): the run reads its state before the
    traffic while they open their captures. Returns the points' names and when they were launched."""
    snap = str(ctx.spec["capture"]["snaplen"])
    points = capture_points(ctx.hostsj)
    flt = capture_filter(ctx.spec)
    for name, (node, intf) in points.items():
        ctx.procs[f"pcap-{name}"] = processes.popen(
            ["tcpdump", "-i", intf, "-s", snap, "-B", "16384", "-n", "-w",
             str(ctx.dir / "pcap" / f"{name}.pcap"), flt], ctx.net.get(node),
            stdout=subprocess.DEVNULL, stderr=(ctx.dir / "log" / f"tcpdump-{name}.err").open("w"))
    return list(points), time.monotonic()


def wait_started(ctx, points: list[str], launched: float) -> None:
    """Until every capture launched is listening (wait_listening), logged with the seconds since the launch."""
    wait_listening([ctx.dir / "log" / f"tcpdump-{name}.err" for name in points])
    ctx.log(f"captures started: {', '.join(points)} (listening {time.monotonic() - launched:.2f} s after their launch)")


def wait_listening(errs: list[Path], timeout_s: float = 5.0) -> float:
    """Seconds until every tcpdump says on stderr that its capture is open ("listening on"), at most
    timeout_s: a fixed wait was either too long (a second of every run) or, on a loaded host, too short. A
    capture that never says so is not an error here: its file and error log tell in the checks after."""
    t = time.monotonic()
    while time.monotonic() - t < timeout_s:
        if all(e.is_file() and "listening on" in e.read_text(errors="replace") for e in errs):
            break
        time.sleep(0.05)
    return time.monotonic() - t


def stop(ctx) -> None:
    """Stop every capture, and the capture_drops check. The foreign_traffic checks read the pcaps after they are
    copied back (foreign_checks)."""
    drops = {}
    names = [k for k in ctx.procs if k.startswith("pcap-")]
    processes.stop_many([ctx.procs.pop(k) for k in names], signal.SIGINT)
    for k in names:
        err = (ctx.dir / "log" / f"tcpdump-{k[5:]}.err").read_text()
        m = re.search(r"(\d+) packets? dropped by kernel", err)
        drops[k[5:]] = int(m.group(1)) if m else None
    bad = {k: v for k, v in drops.items() if v}
    ctx.checks["capture_drops"] = {"configured": 0, "measured": drops, "ok": not bad}


def foreign_checks(run_dir: Path, hostsj: dict) -> dict:
    """The foreign_traffic checks of a run directory's captures. Foreign packets where the bottleneck queue is
    captured shared it with the experiment: the run is invalid. Elsewhere (a sender's link) they are listed as
    a warning: they did not reach the queue.

    The controller makes them once the captures are copied back (orchestrate.remote): reading every packet
    again costs seconds of each run in a TCG guest (a 40 s run's bottleneck capture alone 1.6-3.3 s) and a
    few hundredths on the controller, and the captures stay as they were written."""
    own = own_addresses(hostsj)
    # the names come from the run's hosts.json, written on a host the controller need not trust: a plain file
    # name each, so that no capture is read from outside the run's pcap folder
    pcaps = {name: run_dir / "pcap" / f"{name}.pcap" for name in capture_points(hostsj)
             if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name)}
    pcaps = {name: p for name, p in pcaps.items() if p.is_file()}
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        foreign = dict(zip(pcaps, pool.map(lambda p: foreign_packets(p, own), pcaps.values())))
    checks = {}
    for where, names in (("bottleneck", [k for k in foreign if k.startswith("bneck")]),
                         ("elsewhere", [k for k in foreign if not k.startswith("bneck")])):
        checks[f"foreign_traffic_{where}"] = {
            "configured": f"only packets between the experiment's addresses ({', '.join(own)})",
            "measured": {k: {"packets": foreign[k][0], "first": foreign[k][1]} for k in names if foreign[k][0]} or 0,
            "ok": not any(foreign[k][0] for k in names),
            **({} if where == "bottleneck" else {"severity": "warning"})}
    return checks
