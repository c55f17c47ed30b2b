"""The paper's Table 1 dumbbell (Common TCP evaluation suite delays), built with Mininet inside the guest.

    a1,a2,a3 -- sL (Linux bridge) -- rl == rr -- sR (Linux bridge) -- b1,b2,b3

- The bottleneck is rl's interface towards rr: htb (one class, rate = ceil = bottleneck) with the forward
  AQM as its only leaf. rr's interface towards rl carries the reverse (ACK path) qdisc the same way.
- Each host's egress is shaped to the access rate (tbf), so packets reach the bottleneck spaced as on a
  real access link.
- All propagation delay of an access link sits on the bridge port towards the host, doubled
  (sL->a_i: netem delay 2*d_a; sR->b_j: netem delay 2*d_b): captures on the hosts and at the routers see
  no delay shifts, and the RTT of path a_i-b_j is 2*(d_a + d_b). See topologies/README.md.

The address plan and every tc/ethtool command are pure functions (testable without Mininet); `build()`
needs Debian's mininet package and root.
"""
from __future__ import annotations

from topologies.tc import (access_shaper_cmds, bottleneck_cmds, netem_port_cmds, offload_cmd, port_jobs, qdisc_plan_jobs,
                           run_in, run_node_scripts)

LEFT = ("a1", "a2", "a3")
RIGHT = ("b1", "b2", "b3")
ROUTERS = ("rl", "rr")
HOSTS = LEFT + RIGHT


class TopologyError(ValueError):
    """A topology section that cannot be built: the message names the field and the fix."""


def interfaces() -> dict:
    """Interface names, fixed so that captures and qdiscs can be named before the network exists."""
    names = {h: f"{h}-eth0" for h in HOSTS}
    names.update({
        "rl-left": "rl-eth0", "rl-core": "rl-eth1",      # rl-eth1 is the bottleneck
        "rr-core": "rr-eth0", "rr-right": "rr-eth1",     # rr-eth0 carries the reverse (ACK path) qdisc
    })
    names.update({f"sL-{h}": f"sL-{h}" for h in LEFT})
    names.update({f"sR-{h}": f"sR-{h}" for h in RIGHT})
    names.update({"sL-rl": "sL-rl", "sR-rr": "sR-rr"})
    return names


def addresses() -> dict:
    """Deterministic address plan: left 10.1.0.0/24, right 10.2.0.0/24, core 10.0.0.0/30."""
    plan = {"subnets": {"left": "10.1.0.0/24", "right": "10.2.0.0/24", "core": "10.0.0.0/30"}, "hosts": {}}
    for i, h in enumerate(LEFT, 1):
        plan["hosts"][h] = {"ip": f"10.1.0.{i}", "prefix": 24, "gw": "10.1.0.254", "side": "left",
                            "intf": f"{h}-eth0"}
    for i, h in enumerate(RIGHT, 1):
        plan["hosts"][h] = {"ip": f"10.2.0.{i}", "prefix": 24, "gw": "10.2.0.254", "side": "right",
                            "intf": f"{h}-eth0"}
    plan["routers"] = {
        "rl": {"rl-eth0": "10.1.0.254/24", "rl-eth1": "10.0.0.1/30", "route": ("10.2.0.0/24", "10.0.0.2")},
        "rr": {"rr-eth0": "10.0.0.2/30", "rr-eth1": "10.2.0.254/24", "route": ("10.1.0.0/24", "10.0.0.1")},
    }
    return plan


def spoof_route_cmds(prefix: str, attacker: str) -> dict[str, list[list[str]]]:
    """Routes for a flood's spoofed source prefix (the synflood axis), per router. The target answers every SYN
    (a SYN-ACK, or a cookie once its backlog is full) toward the spoofed address: rr sends that backscatter
    back over the bottleneck's reverse direction, as it would go toward the Internet, and rl on to the
    attacker's port, where the attacker, not forwarding, drops it. Without them rr would answer the target
    with ICMP unreachable and the reverse path would carry none of it."""
    plan = addresses()
    return {"rr": [["ip", "route", "replace", prefix, "via", plan["routers"]["rl"]["rl-eth1"].split("/")[0]]],
            "rl": [["ip", "route", "replace", prefix, "via", plan["hosts"][attacker]["ip"]]]}


def hosts_json(topo: dict) -> dict:
    """What hosts.json holds: per host its address and one-way access delay; per path the configured RTT."""
    plan = addresses()
    delays = one_way_delays(topo)
    hosts = {h: dict(plan["hosts"][h], delay_ms=delays[h]) for h in HOSTS}
    paths = {f"{a}-{b}": 2 * (delays[a] + delays[b]) for a in LEFT for b in RIGHT}
    return {"hosts": hosts, "port": 5001, "paths_rtt_ms": paths,
            "bottleneck": {"node": "rl", "intf": "rl-eth1"}, "reverse": {"node": "rr", "intf": "rr-eth0"}}


def validate(topo: dict) -> None:
    """Refuse a topology section this builder cannot honour, naming the field."""
    def need(field, ok, fix):
        if not ok:
            raise TopologyError(f"topology.{field}={topo.get(field)!r}: {fix}")
    need("kind", topo.get("kind") == "dumbbell", "this builder makes only kind 'dumbbell'")
    for f in ("bottleneck_mbps", "access_mbps"):
        v = topo.get(f)
        need(f, isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0, "must be a positive number")
    for f, n in (("left_delays_ms", 3), ("right_delays_ms", 3)):
        v = topo.get(f)
        need(f, isinstance(v, list) and len(v) == n and all(isinstance(x, (int, float)) and x >= 0 for x in v),
             f"must be a list of {n} non-negative one-way delays in ms")
    need("central_delay_ms", topo.get("central_delay_ms", 0) == 0,
         "a nonzero central delay is not supported yet (no place for it that keeps the bottleneck the only "
         "queue); fold it into the access delays")
    need("mtu", topo.get("mtu", 1500) == 1500, "only MTU 1500 is supported")


def one_way_delays(topo: dict) -> dict:
    d = dict(zip(LEFT, topo["left_delays_ms"]))
    d.update(zip(RIGHT, topo["right_delays_ms"]))
    return d


def delay_port_cmds(dev: str, one_way_ms: float, access_mbps: float) -> list[list[str]]:
    """Bridge port towards a host: the access link's whole round-trip share of delay, plus its rate."""
    return netem_port_cmds(dev, 2 * one_way_ms, access_mbps)


def is_p4(aqm: dict) -> bool:
    """The forward AQM is a P4 program on a BMv2 switch between rl and rr (p4/), not a qdisc."""
    return aqm["forward"]["kind"] == "p4"


def qdisc_plan(topo: dict, aqm: dict) -> dict:
    """node -> list of (commands, tc kind) for every qdisc of the dumbbell.

    With a P4 AQM the forward bottleneck is the switch's queue (rate and depth set by p4/control.py):
    rl-eth1 gets no qdisc. The reverse (ACK path) qdisc stays on rr-eth0 as for every AQM.
    """
    acc = topo["access_mbps"]
    delays = one_way_delays(topo)
    plan: dict[str, list] = {n: [] for n in (*HOSTS, *ROUTERS, "root")}
    if not is_p4(aqm):
        plan["rl"].append((bottleneck_cmds("rl-eth1", topo["bottleneck_mbps"], aqm["forward"]["kind"],
                                           aqm["forward"]["args"]), aqm["forward"]["kind"]))
    plan["rr"].append((bottleneck_cmds("rr-eth0", topo["bottleneck_mbps"], aqm["reverse"]["kind"],
                                       aqm["reverse"]["args"]), aqm["reverse"]["kind"]))
    for h in HOSTS:
        plan[h].append((access_shaper_cmds(f"{h}-eth0", acc), "tbf"))
        port = f"sL-{h}" if h in LEFT else f"sR-{h}"
        plan["root"].append((delay_port_cmds(port, delays[h], acc), "netem"))
    return plan


# ---------------------------------------------------------------- Mininet part (guest, root)

P4_SWITCH = "s1"   # BMv2 between rl and rr when the AQM is a P4 program: rl-eth1 = s1-eth1, s1-eth2 = rr-eth0


def _bmv2_switch_class():
    """A Mininet switch running simple_switch in a network namespace of its own holding only loopback and its
    two ports, so its thrift control port is reachable from nowhere else (p4/switch.py does the work)."""
    from mininet.node import Switch
    from p4 import control, switch as p4switch

    class BMv2Switch(Switch):
        def __init__(self, name, p4_args=None, bottleneck_mbps=None, log_path=None, **kw):
            kw.setdefault("inNamespace", False)
            Switch.__init__(self, name, **kw)
            self.p4 = p4switch.Switch(control.parse_args(p4_args), bottleneck_mbps, f"{name}-eth1",
                                      f"{name}-eth2", log_path=log_path)

        def start(self, controllers):
            for intf in (f"{self.name}-eth1", f"{self.name}-eth2"):
                run_in(None, offload_cmd(intf), check=False)
            self.p4.start()

        def stop(self, deleteIntfs=True):
            self.p4.stop()
            Switch.stop(self, deleteIntfs)

    return BMv2Switch


def build(topo: dict, aqm: dict, log=print, p4_log=None):
    """Create, start and configure the dumbbell. Returns the started Mininet object (call net.stop())."""
    validate(topo)
    from mininet.net import Mininet
    from mininet.node import Node
    from mininet.nodelib import LinuxBridge
    from mininet.link import Link

    plan = addresses()
    net = Mininet(topo=None, controller=None, switch=LinuxBridge, link=Link, build=False,
                  autoSetMacs=True, waitConnected=False)
    for h in HOSTS:
        net.addHost(h, ip=f"{plan['hosts'][h]['ip']}/24", defaultRoute=f"via {plan['hosts'][h]['gw']}")
    for r in ROUTERS:
        net.addHost(r, cls=Node, ip=None)
    sl = net.addSwitch("sL", cls=LinuxBridge, stp=False, dpid="1")
    sr = net.addSwitch("sR", cls=LinuxBridge, stp=False, dpid="2")
    for h in LEFT:
        net.addLink(h, sl, intfName1=f"{h}-eth0", intfName2=f"sL-{h}")
    for h in RIGHT:
        net.addLink(h, sr, intfName1=f"{h}-eth0", intfName2=f"sR-{h}")
    net.addLink("rl", sl, intfName1="rl-eth0", intfName2="sL-rl")
    if is_p4(aqm):
        s1 = net.addSwitch(P4_SWITCH, cls=_bmv2_switch_class(), p4_args=aqm["forward"]["args"],
                           bottleneck_mbps=topo["bottleneck_mbps"], log_path=p4_log, dpid="3")
        net.addLink("rl", s1, intfName1="rl-eth1", intfName2=f"{P4_SWITCH}-eth1")
        net.addLink(s1, "rr", intfName1=f"{P4_SWITCH}-eth2", intfName2="rr-eth0")
    else:
        net.addLink("rl", "rr", intfName1="rl-eth1", intfName2="rr-eth0")
    net.addLink("rr", sr, intfName1="rr-eth1", intfName2="sR-rr")
    net.build()
    net.start()
    try:
        _configure(net, topo, aqm, plan, log)
    except Exception:
        net.stop()
        raise
    return net


def _configure(net, topo, aqm, plan, log):
    jobs: dict = {}
    for r in ROUTERS:
        cmds = jobs.setdefault(r, [])
        for intf, cidr in plan["routers"][r].items():
            if intf != "route":
                cmds += [(["ip", "addr", "flush", "dev", intf], True, None),
                         (["ip", "addr", "add", cidr, "dev", intf], True, None),
                         (["ip", "link", "set", intf, "up", "mtu", "1500"], True, None)]
        dst, via = plan["routers"][r]["route"]
        cmds += [(["ip", "route", "replace", dst, "via", via], True, None),
                 (["sysctl", "-qw", "net.ipv4.ip_forward=1"], True, None)]
    port_jobs(net, (*HOSTS, *ROUTERS), ("sL", "sR"), jobs)
    run_node_scripts(net, qdisc_plan_jobs(qdisc_plan(topo, aqm), jobs))
    where = f"P4 switch {P4_SWITCH}" if is_p4(aqm) else "rl-eth1"
    log(f"dumbbell up: bottleneck ({where}) {topo['bottleneck_mbps']} Mb/s {aqm['forward']['kind']} "
        f"{' '.join(map(str, aqm['forward']['args']))}, reverse {aqm['reverse']['kind']}, "
        f"access {topo['access_mbps']} Mb/s")
