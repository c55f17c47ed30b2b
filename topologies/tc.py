"""The tc and ethtool commands the topologies (dumbbell.py, chain.py) configure their ports with, and how
they run in Mininet's nodes: a bottleneck (htb with the AQM as its only leaf), a host's access shaper (tbf),
a bridge port's delay line (netem), offloads off.

The commands are pure functions (argv lists, testable without Mininet); run_in and run_node_scripts need
Mininet's nodes, in the guest as root.
"""
from __future__ import annotations

import os
import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor

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


def tc_lib_env(kind: str) -> dict:
    """What tc needs in its environment for a qdisc of this kind: favorlab's qdiscs find their plugins
    (q_favor.so...) in favorlab's own TC_LIB_DIR, which only their commands get: stock tc reads netem's
    distribution tables from the default one."""
    return {"TC_LIB_DIR": FAVOR_TC_LIB} if kind in FAVORLAB_QDISCS else {}


def tc_env(kind: str) -> dict:
    """The whole environment of a tc command for a qdisc of this kind (tc_lib_env)."""
    return {**os.environ, **tc_lib_env(kind)}


def run_in(node, argv: list[str], env: dict | None = None, check=True) -> str:
    """Run a command in a node's namespace (or the root namespace when node is None)."""
    prefix = [] if node is None else ["mnexec", "-a", str(node.pid)]
    p = subprocess.run(prefix + argv, capture_output=True, text=True, env=env)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} (in {getattr(node, 'name', 'root')}) failed: "
                           f"{p.stderr.strip() or p.stdout.strip()}")
    return p.stdout


# Tools whose consecutive commands a node script gives to one process (`tc -batch`, `ip -batch`): each start
# of a process is tens of milliseconds in a TCG guest, and a kept network's reset alone is 48 of them.
BATCH_TOOLS = ("tc", "ip")
BATCH_END = "FAVORLAB_BATCH_END"


def _batchable(argv: list[str]) -> bool:
    """A command that reads the same from a batch line: tc and ip split batch lines at blanks and treat
    quotes and '#' their own way, so an argument holding any of those keeps its own process."""
    return argv[0] in BATCH_TOOLS and len(argv) > 1 and not any(
        not a or any(c in a for c in " \t\n'\"\\#") or a == BATCH_END for a in argv[1:])


def node_script(cmds: list[tuple[list[str], bool, str | None]]) -> str:
    """One node's commands as one shell script: (argv, check, qdisc kind or None) each, in order. A checked
    command that fails ends the script naming it; an unchecked one (ethtool on a veth whose features are
    fixed) is silent. A command for one of favorlab's qdiscs gets the tc plugin directory (tc_env).
    Consecutive tc (or ip) commands with the same check and environment run as one `-batch` of that tool:
    checked, it stops at the first failing line (tc names the line: "Command failed -:N") and the script
    names the batch; unchecked, with -force, every line is tried."""
    groups: list[tuple[tuple, list[list[str]]]] = []
    for argv, check, kind in cmds:
        key = (argv[0] if _batchable(argv) else None, check, tuple(sorted(tc_lib_env(kind).items())))
        if key[0] and groups and groups[-1][0] == key:
            groups[-1][1].append(argv)
        else:
            groups.append((key, [argv]))
    lines = []
    for (tool, check, extra), argvs in groups:
        if len(argvs) == 1:
            cmd, what = shlex.join(argvs[0]), shlex.join(argvs[0])
        else:
            cmd = f"{tool}{'' if check else ' -force'} -batch - <<'{BATCH_END}'"
            what = f"{tool} -batch: " + "; ".join(" ".join(a[1:]) for a in argvs)
        if extra:
            cmd = "env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in extra) + " " + cmd
        if check:
            line = f"{cmd} || {{ echo {shlex.quote('failed: ' + what)} >&2; exit 1; }}"
        else:
            line = f"{cmd} >/dev/null 2>&1 || true"
        lines.append(line if len(argvs) == 1 else "\n".join([line, *(" ".join(a[1:]) for a in argvs), BATCH_END]))
    return "\n".join(lines)


def run_node_scripts(net, jobs: dict) -> None:
    """{node name, or None for the root namespace: [(argv, check, kind), ...]}: each node's commands as one
    process (node_script), the nodes at once. One process per command cost tens of milliseconds each in
    a TCG guest, seconds per topology; the nodes are separate namespaces, so their order does not matter,
    while each node's own commands keep theirs."""
    def one(item):
        name, cmds = item
        if cmds:
            run_in(None if name is None else net.get(name), ["sh", "-c", node_script(cmds)])
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(one, jobs.items()))


def port_jobs(net, nodes, bridges, jobs: dict) -> dict:
    """Every port of `nodes` (offloads off, MTU 1500) and of the root namespace's `bridges` (offloads off)
    added to jobs (run_node_scripts'), after what each node already has. ethtool is unchecked: some
    features are fixed on veth."""
    for n in nodes:
        for intf in net.get(n).intfNames():
            if intf != "lo":
                jobs.setdefault(n, []).extend([(offload_cmd(intf), False, None),
                                               (["ip", "link", "set", intf, "mtu", "1500"], True, None)])
    for sw in bridges:
        for intf in [sw] + [i for i in net.get(sw).intfNames() if i != "lo"]:
            jobs.setdefault(None, []).append((offload_cmd(intf), False, None))
    return jobs


def qdisc_plan_jobs(plan: dict, jobs: dict) -> dict:
    """A topology's qdisc plan ({node or "root": [(tc commands, qdisc kind), ...]}) added to jobs
    (run_node_scripts'), after what each node already has."""
    for node_name, items in plan.items():
        key = None if node_name == "root" else node_name
        jobs.setdefault(key, []).extend((c, True, kind) for cmds, kind in items for c in cmds)
    return jobs
