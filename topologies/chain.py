r"""The paper's Section 8 five-hop chain (Fig. 25): FavorQueue deployed at the edge only, built with Mininet.

    us    x1s1..x1s10        x1r  x2s1..x2s10   ...             x5r    ur    (hosts)
      \    /                   \   /                             \   /
       s0                       s1        ...                     s5       (Linux bridges, one LAN each)
       |                        |                                 |
       r0 =====hop 1=====>      r1 ==hop 2==> r2 ... r4 ==hop 5==> r5

- Hop k is r(k-1) -> r(k): htb at `hop_mbps` (rate = ceil) with one leaf, on r(k-1)'s interface towards
  r(k) (forward, data) and on r(k)'s interface towards r(k-1) (reverse, ACKs). The config's AQM is the
  leaf of the hops in `aqm_hops` (default [1]: the first hop only, as in the paper); every other hop is
  DropTail (pfifo, limit `buffer_pkts`). So "DropTail everywhere" and "FaQ at the first hop" are the
  same topology with aqm droptail and aqm favor.
- Cross traffic of hop k: `cross_flows_per_hop` long-lived TCP flows, flow i from its own sender x<k>s<i>
  (LAN of r(k-1)) to the hop's receiver x<k>r (LAN of r(k)); they share hop k only.
- The reference user: `us` on r0's LAN to `ur` on r(hops)'s LAN, across every hop.
- No netem between the routers: every propagation delay, the hops' included, sits on the bridge port
  towards a host (see hosts_json() and topologies/README.md), so each hop's queue receives what the
  previous one sent with its spacing intact and captures at the routers see no delay shifts.

The description (names, addresses, routes, delays, every tc/ethtool command) is pure and testable without
Mininet; `build()` needs Debian's mininet package and root (it runs in the guest).
"""
from __future__ import annotations

import copy

from topologies.dumbbell import TopologyError
from topologies.tc import (access_shaper_cmds, bottleneck_cmds, netem_port_cmds, port_jobs, qdisc_plan_jobs,
                           run_node_scripts)

__all__ = ["DEFAULTS", "TopologyError", "with_defaults", "validate", "validate_aqm", "names", "host_lans",
           "interfaces", "addresses", "port_delays", "access_delays", "hosts_json", "hop_info", "capture_points",
           "hop_qdiscs", "port_delay_cmds", "qdisc_plan", "build"]

# The paper's Section 8 values. Only cross_delays_ms is not from the paper (it says "ten TCP long-lived
# flows with different RTT" and nothing more): one-way access delays 10, 20, .., 100 ms give RTTs
# 22, 42, .., 202 ms (2 * (d_i + hop_delay_ms)), spread evenly over the range of the paper's own
# Table 1 paths (4..200 ms) with a mean (112 ms) next to the reference path's 110 ms.
DEFAULTS = {
    "kind": "chain",
    "hops": 5,
    "hop_mbps": 10,
    "hop_delay_ms": 1,
    "buffer_pkts": 8,
    "reverse_buffer_pkts": 8,
    "access_mbps": 100,
    "user_delay_ms": 25,
    "cross_flows_per_hop": 10,
    "cross_delays_ms": [10 * i for i in range(1, 11)],
    "aqm_hops": [1],
    "mtu": 1500,
}
# accepted for the config's and aqms.yaml's sake ({bottleneck_mbps} placeholders), must equal hop_mbps
OPTIONAL = ("bottleneck_mbps",)
MAX_HOPS = 20          # a sanity bound for Mininet in a guest; the address plan (10.10.<k>, 10.0.<k>) allows 254
MAX_CROSS = 99         # cross senders take .1 .. .99 of their LAN; .100 is the user, .200 the receiver
PORT = 5001
USER_SENDER, USER_RECEIVER = "us", "ur"


def with_defaults(topo: dict | None = None) -> dict:
    """The topology section with every missing key at the paper's value (a deep copy)."""
    out = copy.deepcopy(DEFAULTS)
    out.update(copy.deepcopy(topo or {}))
    return out


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def validate(topo: dict) -> dict:
    """Refuse a topology section this builder cannot honour (the message names the field and the fix);
    returns the section with defaults filled in."""
    t = with_defaults(topo)

    def need(field, ok, fix):
        if not ok:
            raise TopologyError(f"topology.{field}={t.get(field)!r}: {fix}")

    unknown = sorted(set(t) - set(DEFAULTS) - set(OPTIONAL))
    if unknown:
        raise TopologyError(f"topology.{unknown[0]}: not a field of kind 'chain'; known fields are "
                            f"{', '.join(sorted((*DEFAULTS, *OPTIONAL)))}")
    need("kind", t["kind"] == "chain", "this builder makes only kind 'chain' (the dumbbell is topologies.dumbbell)")
    need("hops", isinstance(t["hops"], int) and not isinstance(t["hops"], bool) and 1 <= t["hops"] <= MAX_HOPS,
         f"must be an integer 1..{MAX_HOPS} (the paper's chain has 5)")
    for f in ("hop_mbps", "access_mbps"):
        need(f, _number(t[f]) and t[f] > 0, "must be a positive number (Mb/s)")
    for f in ("hop_delay_ms", "user_delay_ms"):
        need(f, _number(t[f]) and t[f] >= 0, "must be a non-negative one-way delay in ms")
    for f in ("buffer_pkts", "reverse_buffer_pkts"):
        need(f, isinstance(t[f], int) and not isinstance(t[f], bool) and t[f] >= 1,
             "must be an integer >= 1 (packets)")
    n = t["cross_flows_per_hop"]
    need("cross_flows_per_hop", isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= MAX_CROSS,
         f"must be an integer 0..{MAX_CROSS} (the paper has 10)")
    d = t["cross_delays_ms"]
    need("cross_delays_ms", isinstance(d, list) and len(d) == n and all(_number(x) and x >= 0 for x in d),
         f"must be a list of cross_flows_per_hop ({n}) non-negative one-way delays in ms, one per cross flow "
         f"(its sender's access link)")
    a = t["aqm_hops"]
    need("aqm_hops", isinstance(a, list) and len(set(a)) == len(a)
         and all(isinstance(k, int) and not isinstance(k, bool) and 1 <= k <= t["hops"] for k in a),
         f"must be a list of distinct hop numbers 1..hops ({t['hops']}) that get the config's AQM "
         f"([1] for the paper's edge deployment, [] for DropTail everywhere whatever the AQM)")
    need("mtu", t["mtu"] == 1500, "only MTU 1500 is supported")
    if "bottleneck_mbps" in t:
        need("bottleneck_mbps", t["bottleneck_mbps"] == t["hop_mbps"],
             f"every hop of the chain runs at hop_mbps ({t['hop_mbps']}); drop bottleneck_mbps or set it "
             f"equal to hop_mbps")
    return t


def validate_aqm(aqm: dict) -> None:
    """The chain's hops are qdiscs: a P4 forward AQM (a BMv2 switch, dumbbell only) cannot be placed."""
    for side in ("forward", "reverse"):
        kind = aqm.get(side, {}).get("kind")
        if not isinstance(kind, str):
            raise TopologyError(f"aqm.{side}.kind={kind!r}: must be a qdisc kind (config/aqms.yaml)")
        if kind == "p4":
            raise TopologyError(f"aqm.{side}.kind='p4': the chain has no P4 switch between its routers; "
                                f"use a qdisc AQM (favor, droptail, ...) for the chain")


# ---------------------------------------------------------------- names and addresses

def names(topo: dict | None = None) -> dict:
    """Node names by role. Cross hosts are per hop: senders x<k>s<i> (i = 1..n) on r(k-1)'s LAN and one
    receiver x<k>r on r(k)'s LAN, so every cross flow has its own sender (its own access delay, hence its
    own RTT) while the hop's flows share one receiver (its access link is 10x the hop rate: never binds)."""
    t = with_defaults(topo)
    hops, n = t["hops"], t["cross_flows_per_hop"]
    cross_senders = {k: [f"x{k}s{i}" for i in range(1, n + 1)] for k in range(1, hops + 1)}
    cross_receivers = {k: f"x{k}r" for k in range(1, hops + 1)} if n else {}
    hosts = [USER_SENDER, USER_RECEIVER]
    for k in range(1, hops + 1):
        hosts += cross_senders[k] + ([cross_receivers[k]] if n else [])
    return {"routers": [f"r{k}" for k in range(hops + 1)], "bridges": [f"s{k}" for k in range(hops + 1)],
            "user_sender": USER_SENDER, "user_receiver": USER_RECEIVER,
            "cross_senders": cross_senders, "cross_receivers": cross_receivers, "hosts": hosts}


def host_lans(topo: dict | None = None) -> dict:
    """host -> index of the router whose LAN it is on (x<k>s<i> on r(k-1)'s, x<k>r on r(k)'s)."""
    t = with_defaults(topo)
    nm = names(t)
    out = {USER_SENDER: 0, USER_RECEIVER: t["hops"]}
    for k, senders in nm["cross_senders"].items():
        out.update({h: k - 1 for h in senders})
    out.update({h: k for k, h in nm["cross_receivers"].items()})
    return out


def interfaces(topo: dict | None = None) -> dict:
    """Interface names, fixed so that qdiscs and captures can be named before the network exists.

    Routers: r<k>-lan (towards its LAN bridge s<k>), r<k>-next (towards r(k+1): hop k+1's forward queue),
    r<k>-prev (towards r(k-1): hop k's reverse queue). Hosts: <h>-eth0. Bridge ports: s<k>-<h> towards a
    host (its delay port), s<k>-r<k> towards the router."""
    t = with_defaults(topo)
    nm = names(t)
    out = {h: f"{h}-eth0" for h in nm["hosts"]}
    for k in range(t["hops"] + 1):
        r = f"r{k}"
        out[f"{r}-lan"] = f"{r}-lan"
        out[f"s{k}-{r}"] = f"s{k}-{r}"
        if k < t["hops"]:
            out[f"{r}-next"] = f"{r}-next"
        if k > 0:
            out[f"{r}-prev"] = f"{r}-prev"
    for h, lan in host_lans(t).items():
        out[f"s{lan}-{h}"] = f"s{lan}-{h}"
    return out


def addresses(topo: dict | None = None) -> dict:
    """Deterministic address plan.

    LAN of r<k>: 10.10.<k>.0/24, r<k>-lan = .254 (every host's gateway); on it the cross senders of hop
    k+1 are .1 .. .n, the user host (us on LAN 0, ur on the last LAN) .100, hop k's cross receiver .200.
    Hop link k (r(k-1) - r(k)): 10.0.<k>.0/30, r(k-1)-next = .1, r(k)-prev = .2. Every router has a route
    to every subnet it is not on: towards higher-numbered subnets via the next router, lower via the
    previous one (a line has no other way)."""
    t = with_defaults(topo)
    hops = t["hops"]
    nm = names(t)
    lans = {k: f"10.10.{k}.0/24" for k in range(hops + 1)}
    links = {k: f"10.0.{k}.0/30" for k in range(1, hops + 1)}
    hosts = {}

    def put(h, lan, last):
        hosts[h] = {"ip": f"10.10.{lan}.{last}", "prefix": 24, "gw": f"10.10.{lan}.254", "router": f"r{lan}",
                    "lan": lan, "intf": f"{h}-eth0"}
    put(USER_SENDER, 0, 100)
    put(USER_RECEIVER, hops, 100)
    for k, senders in nm["cross_senders"].items():
        for i, h in enumerate(senders, 1):
            put(h, k - 1, i)
    for k, h in nm["cross_receivers"].items():
        put(h, k, 200)
    routers = {}
    for k in range(hops + 1):
        intfs = {f"r{k}-lan": f"10.10.{k}.254/24"}
        if k < hops:
            intfs[f"r{k}-next"] = f"10.0.{k + 1}.1/30"
        if k > 0:
            intfs[f"r{k}-prev"] = f"10.0.{k}.2/30"
        routes = []
        for j, net in lans.items():
            if j > k:
                routes.append((net, f"10.0.{k + 1}.2"))
            elif j < k:
                routes.append((net, f"10.0.{k}.1"))
        for j, net in links.items():
            if j > k + 1:
                routes.append((net, f"10.0.{k + 1}.2"))
            elif j < k:
                routes.append((net, f"10.0.{k}.1"))
        routers[f"r{k}"] = {"intfs": intfs, "routes": routes}
    return {"subnets": {**{f"lan{k}": v for k, v in lans.items()}, **{f"hop{k}": v for k, v in links.items()}},
            "hosts": hosts, "routers": routers}


# ---------------------------------------------------------------- delays and RTTs

def port_delays(topo: dict | None = None) -> dict:
    """host -> netem delay (ms) on the bridge port towards it: where all propagation delay lives.

    A port carries its host's access delay in both directions (2 * d, as in the dumbbell) plus the hop
    delays of one direction of the host's path: a receiver's port the data direction's hops, a sender's
    port the ACK direction's hops. For the user that is 2 * 25 + 5 * 1 = 55 ms at each end: the one-way
    delay each way is exactly the paper's 25 + 5 * 1 + 25 ms. Hosts are senders or receivers only, so
    each port's share is unambiguous."""
    t = with_defaults(topo)
    hd = t["hop_delay_ms"]
    nm = names(t)
    out = {USER_SENDER: 2 * t["user_delay_ms"] + t["hops"] * hd,
           USER_RECEIVER: 2 * t["user_delay_ms"] + t["hops"] * hd}
    for senders in nm["cross_senders"].values():
        for h, d in zip(senders, t["cross_delays_ms"]):
            out[h] = 2 * d + hd
    for h in nm["cross_receivers"].values():
        out[h] = hd
    return out


def access_delays(topo: dict | None = None) -> dict:
    """host -> one-way delay of its access link (the configured quantity; cross receivers have none)."""
    t = with_defaults(topo)
    nm = names(t)
    out = {USER_SENDER: t["user_delay_ms"], USER_RECEIVER: t["user_delay_ms"]}
    for senders in nm["cross_senders"].values():
        out.update(zip(senders, t["cross_delays_ms"]))
    out.update({h: 0 for h in nm["cross_receivers"].values()})
    return out


def _r(x: float) -> float:
    # keeps 0.1 + 0.2 style float noise out of hosts.json, where RTTs are compared as configured values
    return round(float(x), 6)


def hosts_json(topo: dict | None = None) -> dict:
    """What hosts.json holds: each host's address, role, access and port delays; the configured RTT of the
    reference path and of every cross flow (paths_rtt_ms has them all, keyed "src-dst", as the dumbbell's
    does); the hops' qdisc interfaces; the capture points."""
    t = validate(topo or {})
    plan, nm = addresses(t), names(t)
    acc, ports = access_delays(t), port_delays(t)
    hd = t["hop_delay_ms"]
    roles = {USER_SENDER: ("user-sender", None), USER_RECEIVER: ("user-receiver", None)}
    for k, senders in nm["cross_senders"].items():
        roles.update({h: ("cross-sender", k) for h in senders})
    roles.update({h: ("cross-receiver", k) for k, h in nm["cross_receivers"].items()})
    hosts = {h: dict(plan["hosts"][h], role=roles[h][0], hop=roles[h][1], delay_ms=_r(acc[h]),
                     port_delay_ms=_r(ports[h])) for h in nm["hosts"]}
    ref_rtt = _r(2 * (2 * t["user_delay_ms"]) + 2 * t["hops"] * hd)
    cross = []
    for k, senders in nm["cross_senders"].items():
        for i, (h, d) in enumerate(zip(senders, t["cross_delays_ms"]), 1):
            cross.append({"hop": k, "index": i, "src": h, "dst": nm["cross_receivers"][k],
                          "rtt_ms": _r(2 * d + 2 * hd)})
    paths = {f"{USER_SENDER}-{USER_RECEIVER}": ref_rtt}
    paths.update({f"{c['src']}-{c['dst']}": c["rtt_ms"] for c in cross})
    hops = [hop_info(t, k) for k in range(1, t["hops"] + 1)]
    first = next((h for h in hops if h["aqm"]), hops[0])
    return {"kind": "chain", "hosts": hosts, "port": PORT, "paths_rtt_ms": paths,
            "reference": {"src": USER_SENDER, "dst": USER_RECEIVER, "rtt_ms": ref_rtt, "hops": t["hops"]},
            "cross_flows": cross, "hops": hops, "routers": nm["routers"],
            "bottleneck": first["forward"], "reverse": first["reverse"],
            "capture_points": capture_points(t)}


def hop_info(topo: dict, k: int) -> dict:
    """Hop k (1-based): its routers, its forward and reverse qdisc interfaces, whether it has the AQM."""
    t = with_defaults(topo)
    return {"hop": k, "from": f"r{k - 1}", "to": f"r{k}", "aqm": k in t["aqm_hops"],
            "forward": {"node": f"r{k - 1}", "intf": f"r{k - 1}-next"},
            "reverse": {"node": f"r{k}", "intf": f"r{k}-prev"}}


def capture_points(topo: dict | None = None, every_hop: bool = False) -> dict:
    """name -> {"node", "intf", "what"}: where a runner runs tcpdump (pcap/<name>.pcap), so it asks the
    topology instead of naming interfaces. The names follow the dumbbell's contract where the meaning is
    the same: sender-<host> is a host's own interface, bneck-in / bneck-out the first hop's arrivals and
    departures (the hop with the AQM in the paper's set-up). every_hop adds hop<k>-in / hop<k>-out for
    the other hops (costly in a TCG guest: one tcpdump each)."""
    t = with_defaults(topo)
    pts = {
        f"sender-{USER_SENDER}": {"node": USER_SENDER, "intf": f"{USER_SENDER}-eth0",
                                  "what": "reference user's sender: its own interface (true send times)"},
        f"sender-{USER_RECEIVER}": {"node": USER_RECEIVER, "intf": f"{USER_RECEIVER}-eth0",
                                    "what": "reference user's receiver: its own interface"},
        # r0 has no upstream router: its LAN interface's ingress is every arrival at hop 1's queue
        "bneck-in": {"node": "r0", "intf": "r0-lan",
                     "what": "hop 1 arrivals: r0's LAN side (user and hop-1 cross senders)"},
        "bneck-out": {"node": "r1", "intf": "r1-prev",
                      "what": "hop 1 departures: r1's interface facing r0 (what left hop 1's queue)"},
    }
    if every_hop:
        for k in range(2, t["hops"] + 1):
            # r(k-1)'s LAN ingress is only hop k's cross senders: the user's packets reach hop k from
            # upstream and are in hop(k-1)'s "out" capture already
            pts[f"hop{k}-in"] = {"node": f"r{k - 1}", "intf": f"r{k - 1}-lan",
                                 "what": f"hop {k} arrivals from r{k - 1}'s LAN (its cross senders)"}
            pts[f"hop{k}-out"] = {"node": f"r{k}", "intf": f"r{k}-prev",
                                  "what": f"hop {k} departures: r{k}'s interface facing r{k - 1}"}
    return pts


# ---------------------------------------------------------------- qdiscs

def hop_qdiscs(topo: dict, aqm: dict, k: int) -> dict:
    """Hop k's forward and reverse leaf: the config's AQM where k is in aqm_hops, DropTail elsewhere."""
    t = with_defaults(topo)
    if k in t["aqm_hops"]:
        return {"forward": (aqm["forward"]["kind"], list(aqm["forward"]["args"])),
                "reverse": (aqm["reverse"]["kind"], list(aqm["reverse"]["args"]))}
    return {"forward": ("pfifo", ["limit", str(t["buffer_pkts"])]),
            "reverse": ("pfifo", ["limit", str(t["reverse_buffer_pkts"])])}


def port_delay_cmds(dev: str, delay_ms: float, access_mbps: float) -> list[list[str]]:
    """Bridge port towards a host: its whole share of the path's delay (port_delays()), at the access rate."""
    return netem_port_cmds(dev, delay_ms, access_mbps)


def qdisc_plan(topo: dict, aqm: dict) -> dict:
    """node -> list of (commands, tc kind) for every qdisc of the chain ("root": the bridge ports, in the
    root namespace as Mininet's Linux bridges are)."""
    t = validate(topo)
    validate_aqm(aqm)
    nm = names(t)
    plan: dict[str, list] = {n: [] for n in (*nm["hosts"], *nm["routers"], "root")}
    for k in range(1, t["hops"] + 1):
        q = hop_qdiscs(t, aqm, k)
        info = hop_info(t, k)
        for side in ("forward", "reverse"):
            kind, args = q[side]
            plan[info[side]["node"]].append((bottleneck_cmds(info[side]["intf"], t["hop_mbps"], kind, args), kind))
    ports, lans = port_delays(t), host_lans(t)
    for h in nm["hosts"]:
        plan[h].append((access_shaper_cmds(f"{h}-eth0", t["access_mbps"]), "tbf"))
        plan["root"].append((port_delay_cmds(f"s{lans[h]}-{h}", ports[h], t["access_mbps"]), "netem"))
    return plan


# ---------------------------------------------------------------- Mininet part (guest, root)

def build(topo: dict, aqm: dict, log=print):
    """Create, start and configure the chain. Returns the started Mininet object (call net.stop())."""
    t = validate(topo)
    validate_aqm(aqm)
    from mininet.link import Link
    from mininet.net import Mininet
    from mininet.node import Node
    from mininet.nodelib import LinuxBridge

    plan, nm = addresses(t), names(t)
    net = Mininet(topo=None, controller=None, switch=LinuxBridge, link=Link, build=False,
                  autoSetMacs=True, waitConnected=False)
    for h in nm["hosts"]:
        net.addHost(h, ip=f"{plan['hosts'][h]['ip']}/24", defaultRoute=f"via {plan['hosts'][h]['gw']}")
    for r in nm["routers"]:
        net.addHost(r, cls=Node, ip=None)
    for k, sw in enumerate(nm["bridges"]):
        net.addSwitch(sw, cls=LinuxBridge, stp=False, dpid=str(k + 1))
    for h in nm["hosts"]:
        lan = plan["hosts"][h]["lan"]
        net.addLink(h, f"s{lan}", intfName1=f"{h}-eth0", intfName2=f"s{lan}-{h}")
    for k, r in enumerate(nm["routers"]):
        net.addLink(r, f"s{k}", intfName1=f"{r}-lan", intfName2=f"s{k}-{r}")
    for k in range(1, t["hops"] + 1):
        net.addLink(f"r{k - 1}", f"r{k}", intfName1=f"r{k - 1}-next", intfName2=f"r{k}-prev")
    net.build()
    net.start()
    try:
        _configure(net, t, aqm, plan, nm, log)
    except Exception:
        net.stop()
        raise
    return net


def _configure(net, t, aqm, plan, nm, log):
    jobs: dict = {}
    for r in nm["routers"]:
        cmds = jobs.setdefault(r, [])
        for intf, cidr in plan["routers"][r]["intfs"].items():
            cmds += [(["ip", "addr", "flush", "dev", intf], True, None),
                     (["ip", "addr", "add", cidr, "dev", intf], True, None),
                     (["ip", "link", "set", intf, "up", "mtu", "1500"], True, None)]
        cmds += [(["ip", "route", "replace", dst, "via", via], True, None) for dst, via in plan["routers"][r]["routes"]]
        cmds.append((["sysctl", "-qw", "net.ipv4.ip_forward=1"], True, None))
    port_jobs(net, (*nm["hosts"], *nm["routers"]), nm["bridges"], jobs)
    run_node_scripts(net, qdisc_plan_jobs(qdisc_plan(t, aqm), jobs))
    at = ", ".join(str(k) for k in t["aqm_hops"]) or "none"
    log(f"chain up: {t['hops']} hops of {t['hop_mbps']} Mb/s, buffer {t['buffer_pkts']}; "
        f"{aqm['forward']['kind']} {' '.join(map(str, aqm['forward']['args']))} at hop(s) {at}, DropTail "
        f"elsewhere; {t['cross_flows_per_hop']} cross senders per hop; access {t['access_mbps']} Mb/s")
