"""The tc and ethtool commands the topologies (dumbbell.py, chain.py) configure their ports with, and how
they run in Mininet's nodes: a bottleneck (htb with the AQM as its only leaf), a host's access shaper (tbf),
a bridge port's delay line (netem), offloads off.

The commands are pure functions (argv lists, testable without Mininet); run_in and apply_qdisc_plan need
Mininet's nodes, in the guest as root.
"""
from __future__ import annotations

import os
import subprocess

from contract import qdiscs

FAVOR_TC_LIB = "/usr/local/lib/favorlab/tc"
FAVORLAB_QDISCS = qdiscs.kinds()    # qdisc/'s own: their tc plugins are in FAVOR_TC_LIB
NETEM_LIMIT = 10000  # packets: well above the largest BDP (1000 Mb/s x 200 ms is ~16700 pkts only at 1G
#                      access; access-port queues hold no standing queue, so this never binds in practice)


def rate(mbps: float) -> str:
    """A rate in tc's units (kbit)."""
    return f"{int(round(mbps * 1000))}kbit"


def bottleneck_cmds(dev: str, mbps: float, leaf_kind: str, leaf_args: list) -> list[list[str]]:
    """htb root with one class (rate = ceil = bottleneck, default class) and the AQM as its only leaf.

    quantum 1514 keeps htb from warning about r2q at 10 and 100 Mb/s (its default quantum = rate/r2q
    is out of range there). burst = cburst = max(one frame, 1 ms at the rate): tc's default (about
    1600 bytes) makes htb wait for a timer before every packet, and at 100 Mb/s (121 us per frame) the
    emulated guest's timer slack then costs rate; 1 ms lets htb catch up without a standing burst.
    """
    r = rate(mbps)
    burst = str(max(1600, int(mbps * 1e6 / 8 * 0.001)))
    return [
        ["tc", "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "1"],
        ["tc", "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb",
         "rate", r, "ceil", r, "quantum", "1514", "burst", burst, "cburst", burst],
        ["tc", "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", leaf_kind, *map(str, leaf_args)],
    ]


def access_shaper_cmds(dev: str, mbps: float) -> list[list[str]]:
    """Host egress at the access rate: tbf with a burst of about two frames (or 0.5 ms at high rates)."""
    burst = max(3028, int(mbps * 1e6 / 8 * 0.0005))
    return [["tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate(mbps),
             "burst", str(burst), "limit", str(1514 * 1000)]]


def netem_port_cmds(dev: str, delay_ms: float, mbps: float) -> list[list[str]]:
    """A bridge port towards a host: a delay line of `delay_ms` at the access rate, holding NETEM_LIMIT
    packets."""
    return [["tc", "qdisc", "replace", "dev", dev, "root", "netem", "delay", f"{delay_ms:g}ms",
             "rate", rate(mbps), "limit", str(NETEM_LIMIT)]]


def offload_cmd(dev: str) -> list[str]:
    return ["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", "lro", "off",
            "tx", "off", "rx", "off"]


def tc_env(kind: str) -> dict:
    """Environment for tc: the plugins of favorlab's qdiscs (q_favor.so...) live in favorlab's own TC_LIB_DIR,
    which only their commands get: stock tc reads netem's distribution tables from the default one."""
    env = dict(os.environ)
    if kind in FAVORLAB_QDISCS:
        env["TC_LIB_DIR"] = FAVOR_TC_LIB
    return env


def run_in(node, argv: list[str], env: dict | None = None, check=True) -> str:
    """Run a command in a node's namespace (or the root namespace when node is None)."""
    prefix = [] if node is None else ["mnexec", "-a", str(node.pid)]
    p = subprocess.run(prefix + argv, capture_output=True, text=True, env=env)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} (in {getattr(node, 'name', 'root')}) failed: "
                           f"{p.stderr.strip() or p.stdout.strip()}")
    return p.stdout


def apply_qdisc_plan(net, plan: dict) -> None:
    """Run a topology's qdisc plan ({node or "root": [(tc commands, qdisc kind), ...]}) in its nodes, each
    with the tc environment its kind needs."""
    for node_name, items in plan.items():
        node = None if node_name == "root" else net.get(node_name)
        for cmds, kind in items:
            for c in cmds:
                run_in(node, c, env=tc_env(kind))
