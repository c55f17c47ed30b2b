"""Control plane of the P4 bottleneck: from a run's `aqm` entry (config/aqms.yaml, kind `p4`) and its
topology to the simple_switch command line and the simple_switch_CLI commands that configure it.

Everything here is a pure function (tested without BMv2); p4/switch.py runs what it returns.

An aqms.yaml entry of kind p4 lists key/value pairs as tc arguments are listed:
    forward: {kind: p4, args: [program, favorqueue, limit, "{buffer_pkts}", pushout, "1"]}
"""
from __future__ import annotations

import re

PROGRAMS = ("favorqueue", "droptail")
# Port numbers inside the switch: 1 faces the left router rl, 2 faces rr (the bottleneck's far end).
PORT_LEFT, PORT_RIGHT = 1, 2
FORWARD_PORT = PORT_RIGHT
FRAME_BYTES = 1514          # a full-size Ethernet frame (MTU 1500): BMv2 paces packets, not bytes
THRIFT_PORT = 9090
PRIORITY_QUEUES = 2         # favored (1) and standard (0); droptail uses only 0
MIN_MAX_SOJOURN_MS = 1000   # counts older than this are stale (see favorqueue.p4), at least 1 s
VERDICTS = ("favored", "standard", "pushouts", "drop_favored", "drop_standard", "drop_victim",
            "victim_served", "aged_flow", "aged_queue", "phantoms")   # index order of favorqueue.p4's `verdicts`
PHANTOM_SESSION = 1         # favorqueue.p4's mirroring session: phantoms go to the bottleneck port
TABLE_FORWARD = {"favorqueue": "FavorIngress.port_forward.forward",
                 "droptail": "DropTailIngress.port_forward.forward"}
TABLE_BOTTLENECK = "FavorIngress.bottleneck"
COUNTER_VERDICTS = "verdicts"
REGISTERS = ("flow_queued", "queued", "standard_queued", "pushout_debt")


class P4ConfigError(ValueError):
    """An aqm entry of kind p4 that cannot be set up: the message names the key and the fix."""


def parse_args(args: list) -> dict:
    """The `args` of an aqms.yaml p4 entry (key, value, key, value...) into checked parameters."""
    args = [str(a) for a in args]
    if len(args) % 2:
        raise P4ConfigError(f"p4 args {args}: expected key/value pairs (program NAME limit N ...); "
                            f"the last key has no value")
    kv = dict(zip(args[::2], args[1::2]))
    known = {"program", "limit", "pushout", "max_sojourn_ms"}
    unknown = sorted(set(kv) - known)
    if unknown:
        raise P4ConfigError(f"p4 args: unknown key(s) {unknown}. Fix: use only {sorted(known)}.")
    prog = kv.get("program")
    if prog not in PROGRAMS:
        raise P4ConfigError(f"p4 args: program={prog!r}. Fix: one of {', '.join(PROGRAMS)} "
                            f"(p4/<program>.p4).")

    def integer(key, lo, hi, default=None):
        v = kv.get(key, default)
        if v is None:
            raise P4ConfigError(f"p4 args: {key} is missing. Fix: add '{key}, N' ({lo}..{hi}).")
        try:
            n = int(v)
        except ValueError:
            raise P4ConfigError(f"p4 args: {key}={v!r} is not an integer. Fix: an integer {lo}..{hi}.") from None
        if not lo <= n <= hi:
            raise P4ConfigError(f"p4 args: {key}={n} is out of range. Fix: an integer {lo}..{hi}.")
        return n

    p = {"program": prog, "limit": integer("limit", 1, 100000)}
    if prog == "favorqueue":
        p["pushout"] = integer("pushout", 0, 1, default=1)
        p["max_sojourn_ms"] = integer("max_sojourn_ms", 1, 600000, default=0) if "max_sojourn_ms" in kv else None
    elif "pushout" in kv or "max_sojourn_ms" in kv:
        raise P4ConfigError("p4 args: pushout and max_sojourn_ms apply to program favorqueue only. "
                            "Fix: remove them from the droptail entry.")
    return p


def queue_rate_pps(mbps: float, frame_bytes: int = FRAME_BYTES) -> int:
    """BMv2 paces packets: the bottleneck rate in full-size frames per second (rounded, at least 1)."""
    return max(1, round(mbps * 1e6 / (8 * frame_bytes)))


def queue_depth(params: dict) -> int:
    """The traffic manager's depth for the bottleneck port, per priority queue.

    droptail: the buffer itself (the traffic manager tail-drops). favorqueue: the buffer is enforced
    at admission on a count shared by both queues and may exceed the limit by the push-outs owed (at
    most the standard packets queued, so at most `limit`): 2*limit counted packets at most. The
    standard queue also holds the favored packets' phantoms (favorqueue.p4), about f/(1-f) per
    standard packet when a share f of the port's packets is favored: 8*limit+1 leaves room up to
    f = 3/4 of the port; a phantom that finds it full is lost (counted: p4_phantoms_lost) and its
    favored packet goes unpaid, but no count leaks (phantoms are not counted).
    """
    return params["limit"] if params["program"] == "droptail" else 8 * params["limit"] + 1


def max_sojourn_us(params: dict, pps: int) -> int:
    """Longer than any packet can stay queued: 10 times a full favorqueue buffer's drain, >= 1 s."""
    if params.get("max_sojourn_ms"):
        return params["max_sojourn_ms"] * 1000
    drain_us = queue_depth(params) * 2 * 1e6 / pps
    return int(max(MIN_MAX_SOJOURN_MS * 1000, 10 * drain_us))


def switch_argv(binary: str, json_path: str, intf_left: str, intf_right: str,
                thrift_port: int = THRIFT_PORT, device_id: int = 0) -> list[str]:
    """simple_switch with logging off (no --log-console/--log-file: logging costs more than the whole
    dataplane at these rates) and two priority queues per port."""
    # simple_switch's own options (--priority-queues) come after "--", behind the generic bm options
    return [binary, "--device-id", str(device_id), "--thrift-port", str(thrift_port),
            "-i", f"{PORT_LEFT}@{intf_left}", "-i", f"{PORT_RIGHT}@{intf_right}", json_path,
            "--", "--priority-queues", str(PRIORITY_QUEUES)]


# BMv2's thrift server (bm_runtime) binds its port on every address of its network namespace: simple_switch
# has --thrift-port but no option for the address (simple_switch_CLI's --thrift-ip is the client's). Run in
# the host's namespace, anyone who reaches the host could rewrite the tables and queues mid-run. So the
# switch runs in a namespace of its own that holds only loopback and its two ports (which carry no
# addresses: BMv2 reads them raw), and its CLI is started there too.
NETNS_PREFIX = "favorlab-p4-"


def own_netns(pid: int) -> str:
    """The name of the switch's own namespace, per runner process (one switch per run)."""
    return f"{NETNS_PREFIX}{pid}"


def isolate_commands(netns: str, intfs: list[str]) -> list[list[str]]:
    """Make the namespace, move the switch's ports into it and bring them and loopback up (a device
    moved to another namespace goes down; its MTU and offload settings move with it)."""
    cmds = [["ip", "netns", "add", netns], ["ip", "-n", netns, "link", "set", "lo", "up"]]
    for i in intfs:
        cmds += [["ip", "link", "set", "dev", i, "netns", netns], ["ip", "-n", netns, "link", "set", "dev", i, "up"]]
    return cmds


def release_commands(netns: str, intfs: list[str], home_pid: int) -> list[list[str]]:
    """Give the ports back to the namespace of process home_pid (where they were: Mininet deletes them
    there at its stop), up again, and delete the switch's namespace."""
    cmds = []
    for i in intfs:
        cmds += [["ip", "-n", netns, "link", "set", "dev", i, "netns", str(home_pid)],
                 ["ip", "link", "set", "dev", i, "up"]]
    return cmds + [["ip", "netns", "delete", netns]]


def cli_commands(params: dict, bottleneck_mbps: float) -> list[str]:
    """simple_switch_CLI commands: forwarding, the managed port, its queue depth and rate."""
    prog = params["program"]
    pps = queue_rate_pps(bottleneck_mbps)
    cmds = [f"table_add {TABLE_FORWARD[prog]} set_egress {PORT_LEFT} => {PORT_RIGHT}",
            f"table_add {TABLE_FORWARD[prog]} set_egress {PORT_RIGHT} => {PORT_LEFT}"]
    if prog == "favorqueue":
        cmds.append(f"table_add {TABLE_BOTTLENECK} favor_admit {FORWARD_PORT} => "
                    f"{params['limit']} {params['pushout']} {max_sojourn_us(params, pps)}")
        cmds.append(f"mirroring_add {PHANTOM_SESSION} {FORWARD_PORT}")
    cmds += [f"set_queue_depth {queue_depth(params)} {FORWARD_PORT}",
             f"set_queue_rate {pps} {FORWARD_PORT}"]
    return cmds


def describe(params: dict, bottleneck_mbps: float) -> dict:
    """What the switch was configured with (for hosts.json / the manifest)."""
    pps = queue_rate_pps(bottleneck_mbps)
    d = {"program": params["program"], "limit_pkts": params["limit"], "queue_depth_pkts": queue_depth(params),
         "queue_rate_pps": pps, "frame_bytes": FRAME_BYTES, "priority_queues": PRIORITY_QUEUES}
    if params["program"] == "favorqueue":
        d.update(pushout=params["pushout"], max_sojourn_us=max_sojourn_us(params, pps), buckets=1024)
    return d


# runtime_CLI.py prints "verdicts[3]= (4500 bytes, 3 packets)" and "queued[0]= 5" / "flow_queued= 0, 1, ..."
def queue_left(registers: dict) -> dict:
    """What favorqueue.p4 still counts as queued (Switch.registers() form): all 0 once the queue drained;
    anything else is state leaked by packets that never reached egress."""
    return {"queued": registers["queued"], "standard_queued": registers["standard_queued"],
            "pushout_debt": registers["pushout_debt"], "flow_queued_sum": registers["flow_queued"]["sum"]}


def phantoms_lost(verdicts: dict) -> int:
    """Admitted favored packets whose phantom never reached egress (the traffic manager's standard queue
    was full): each let the port send one packet more than its rate. 0 once drained, when none was lost."""
    return verdicts["favored"] + verdicts["pushouts"] - verdicts["phantoms"]


_COUNTER_RE = re.compile(r"\w+\[\d+\]=\s*\((\d+) bytes, (\d+) packets\)")
_REGISTER_RE = re.compile(r"\b\w+(?:\[\d+\])?=\s*(-?\d+(?:\s*,\s*-?\d+)*)")


def parse_counter_lines(text: str) -> list[int]:
    """Packets of each `counter_read NAME INDEX` answer in a CLI transcript, in order."""
    vals = [int(m.group(2)) for m in _COUNTER_RE.finditer(text)]
    if not vals:
        raise ValueError(f"no counter_read answer in: {text.strip()[:200]!r}")
    return vals


def parse_register_read(text: str) -> list[int]:
    """Values of a `register_read NAME` (whole array) or `register_read NAME INDEX` answer."""
    return parse_register_reads(text, 1)[0]


def parse_register_reads(text: str, n: int) -> list[list[int]]:
    """The values of each of n `register_read` answers in a CLI transcript, in order."""
    found = [[int(x) for x in m.group(1).split(",")] for m in _REGISTER_RE.finditer(text)]
    if len(found) != n:
        raise ValueError(f"expected {n} register_read answer(s), found {len(found)} in: {text.strip()[:200]!r}")
    return found
