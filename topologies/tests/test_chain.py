"""The five-hop chain's description (Section 8, Fig. 25): names, address plan, routes, delays, RTTs,
qdisc commands, validation and capture points. Pure: no root, no Mininet (build() runs in the guest)."""
import copy
import ipaddress
import json

import pytest

from topologies import chain

FAVOR = {"forward": {"kind": "favor", "args": ["limit", "8"]}, "reverse": {"kind": "pfifo", "args": ["limit", "8"]}}
DROPTAIL = {"forward": {"kind": "pfifo", "args": ["limit", "8"]}, "reverse": {"kind": "pfifo", "args": ["limit", "8"]}}
PAPER = {"kind": "chain"}     # every other field at its default, the paper's value


def test_defaults_are_the_papers_section_8():
    t = chain.validate(PAPER)
    assert (t["hops"], t["hop_mbps"], t["hop_delay_ms"], t["buffer_pkts"], t["access_mbps"],
            t["user_delay_ms"], t["cross_flows_per_hop"], t["aqm_hops"]) == (5, 10, 1, 8, 100, 25, 10, [1])
    assert len(t["cross_delays_ms"]) == 10 and len(set(t["cross_delays_ms"])) == 10   # "different RTT"
    assert chain.DEFAULTS["cross_delays_ms"] == list(range(10, 101, 10))
    # with_defaults copies: a caller's edit cannot change the module's defaults
    t["cross_delays_ms"].append(1)
    assert len(chain.DEFAULTS["cross_delays_ms"]) == 10


def test_names_hosts_per_hop_and_interface_lengths():
    nm = chain.names(PAPER)
    assert nm["routers"] == ["r0", "r1", "r2", "r3", "r4", "r5"]
    assert len(nm["hosts"]) == 2 + 5 * (10 + 1)
    assert nm["cross_senders"][3][0] == "x3s1" and nm["cross_receivers"][3] == "x3r"
    lans = chain.host_lans(PAPER)
    assert lans["us"] == 0 and lans["ur"] == 5 and lans["x1s4"] == 0 and lans["x1r"] == 1 and lans["x5s10"] == 4
    # Linux interface names are at most 15 characters (IFNAMSIZ - 1), also at the largest allowed chain
    big = {"kind": "chain", "hops": chain.MAX_HOPS, "cross_flows_per_hop": chain.MAX_CROSS,
           "cross_delays_ms": [1] * chain.MAX_CROSS}
    for topo in (PAPER, big):
        names = chain.interfaces(topo).values()
        assert max(len(n) for n in names) <= 15
        assert len(set(names)) == len(names)
        chain.validate(topo)


def _owner(plan):
    """ip -> (node, interface) over hosts and router interfaces."""
    out = {}
    for h, v in plan["hosts"].items():
        out[ipaddress.ip_address(v["ip"])] = (h, v["intf"])
    for r, v in plan["routers"].items():
        for intf, cidr in v["intfs"].items():
            out[ipaddress.ip_interface(cidr).ip] = (r, intf)
    return out


@pytest.mark.parametrize("topo", [PAPER, {"kind": "chain", "hops": 2, "cross_flows_per_hop": 3,
                                          "cross_delays_ms": [1, 2, 3]},
                                  {"kind": "chain", "cross_flows_per_hop": 0, "cross_delays_ms": []}])
def test_addresses_unique_gateways_on_subnet_routes_complete(topo):
    plan = chain.addresses(topo)
    n_addr = len(plan["hosts"]) + sum(len(v["intfs"]) for v in plan["routers"].values())
    owner = _owner(plan)
    assert len(owner) == n_addr                                  # no address used twice
    subnets = [ipaddress.ip_network(s) for s in plan["subnets"].values()]
    assert len(set(subnets)) == len(subnets)
    for h, v in plan["hosts"].items():
        net = ipaddress.ip_network(f"{v['ip']}/{v['prefix']}", strict=False)
        assert ipaddress.ip_address(v["gw"]) in net, h
        assert owner[ipaddress.ip_address(v["gw"])] == (v["router"], f"{v['router']}-lan"), h
    for r, v in plan["routers"].items():
        connected = [ipaddress.ip_interface(c).network for c in v["intfs"].values()]
        routed = [ipaddress.ip_network(dst) for dst, _ in v["routes"]]
        # every subnet of the plan is either on the router or has exactly one route
        assert sorted(connected + routed) == sorted(subnets), r
        for dst, via in v["routes"]:
            via = ipaddress.ip_address(via)
            assert any(via in c for c in connected), f"{r}: next hop {via} for {dst} is not on a connected subnet"
            nbr, _ = owner[via]
            assert nbr in (f"r{int(r[1:]) - 1}", f"r{int(r[1:]) + 1}")


def _walk(plan, src: str, dst_ip: str) -> list[str]:
    """Forward a packet by the plan's addresses and routes; returns the routers it crossed."""
    dst = ipaddress.ip_address(dst_ip)
    owner = _owner(plan)
    node = plan["hosts"][src]["router"]
    seen = []
    for _ in range(50):
        seen.append(node)
        r = plan["routers"][node]
        for cidr in r["intfs"].values():
            if dst in ipaddress.ip_interface(cidr).network:
                tgt, _ = owner[dst]
                if tgt in plan["hosts"]:
                    assert plan["hosts"][tgt]["router"] == node
                    return seen
                if tgt == node:
                    return seen
                seen.append(tgt)
                return seen
        via = [v for d, v in r["routes"] if dst in ipaddress.ip_network(d)]
        assert len(via) == 1, f"{node} has {len(via)} routes to {dst}"
        node = owner[ipaddress.ip_address(via[0])][0]
    raise AssertionError("routing loop")


def test_packets_take_the_intended_hops_both_ways():
    plan = chain.addresses(PAPER)
    ip = {h: v["ip"] for h, v in plan["hosts"].items()}
    assert _walk(plan, "us", ip["ur"]) == ["r0", "r1", "r2", "r3", "r4", "r5"]
    assert _walk(plan, "ur", ip["us"]) == ["r5", "r4", "r3", "r2", "r1", "r0"]
    for k in range(1, 6):
        for i in (1, 10):
            assert _walk(plan, f"x{k}s{i}", ip[f"x{k}r"]) == [f"r{k - 1}", f"r{k}"]   # one hop only
            assert _walk(plan, f"x{k}r", ip[f"x{k}s{i}"]) == [f"r{k}", f"r{k - 1}"]
    # routers reach every far hop link too (pings and ICMP errors from a router's own address)
    assert _walk(plan, "us", "10.0.5.2") == ["r0", "r1", "r2", "r3", "r4", "r5"]


def _leaf(cmds):
    c = cmds[2]
    return c[4], c[c.index("10:") + 1], c[c.index("10:") + 2:]


def _hop_cmds(topo, aqm):
    """(hop, side) -> (device, rate, leaf kind, leaf args) from the qdisc plan."""
    out = {}
    for node, items in chain.qdisc_plan(topo, aqm).items():
        for cmds, kind in items:
            if cmds[0][6:8] == ["handle", "1:"] and "htb" in cmds[0]:
                dev, leaf, args = _leaf(cmds)
                rate = cmds[1][cmds[1].index("rate") + 1]
                assert cmds[1][cmds[1].index("ceil") + 1] == rate
                assert leaf == kind and dev == cmds[0][4]
                out[dev] = (node, rate, leaf, args)
    return out


def test_aqm_at_the_first_hop_only_droptail_elsewhere():
    q = _hop_cmds(PAPER, FAVOR)
    assert q["r0-next"] == ("r0", "10000kbit", "favor", ["limit", "8"])          # hop 1 forward: the AQM
    for k in range(2, 6):
        assert q[f"r{k - 1}-next"] == (f"r{k - 1}", "10000kbit", "pfifo", ["limit", "8"])
    for k in range(1, 6):                                                         # reverse (ACK) side
        assert q[f"r{k}-prev"] == (f"r{k}", "10000kbit", "pfifo", ["limit", "8"])
    assert len(q) == 10


def test_rates_and_limits_come_from_the_topology():
    topo = {"kind": "chain", "hop_mbps": 100, "buffer_pkts": 20, "reverse_buffer_pkts": 30, "aqm_hops": [1, 3]}
    aqm = {"forward": {"kind": "favor", "args": ["limit", "20"]}, "reverse": {"kind": "pfifo", "args": ["limit", "30"]}}
    q = _hop_cmds(topo, aqm)
    assert {v[1] for v in q.values()} == {"100000kbit"}
    assert q["r0-next"][2] == q["r2-next"][2] == "favor"
    assert q["r1-next"][2:] == q["r3-next"][2:] == q["r4-next"][2:] == ("pfifo", ["limit", "20"])
    assert q["r2-prev"][2:] == ("pfifo", ["limit", "30"])


def test_droptail_everywhere_vs_faq_at_first_hop_differ_only_in_the_aqm_section():
    a, b = chain.qdisc_plan(PAPER, DROPTAIL), chain.qdisc_plan(PAPER, FAVOR)
    diff = [(n, x, y) for n in a for x, y in zip(a[n], b[n]) if x != y]
    assert [(n, y[1]) for n, _, y in diff] == [("r0", "favor")]
    dt = _hop_cmds(PAPER, DROPTAIL)
    assert all(v[2:] == ("pfifo", ["limit", "8"]) for v in dt.values())
    # aqm_hops [] is DropTail everywhere whatever the AQM
    none = _hop_cmds({"kind": "chain", "aqm_hops": []}, FAVOR)
    assert all(v[2] == "pfifo" for v in none.values())


def test_netem_only_on_bridge_ports_towards_hosts():
    plan = chain.qdisc_plan(PAPER, FAVOR)
    for node, items in plan.items():
        kinds = {k for _, k in items}
        if node == "root":
            assert kinds == {"netem"}
        elif node.startswith("r"):
            assert kinds <= {"favor", "pfifo"}            # htb + leaf, never netem on a router
        else:
            assert kinds == {"tbf"}                       # host egress at the access rate
    ports = {c[0][4]: c[0] for c, _ in plan["root"]}
    assert set(ports) == {f"s{chain.host_lans(PAPER)[h]}-{h}" for h in chain.names(PAPER)["hosts"]}
    assert ports["s0-us"][ports["s0-us"].index("delay") + 1] == "55ms"
    assert ports["s5-ur"][ports["s5-ur"].index("delay") + 1] == "55ms"
    assert ports["s0-x1s3"][ports["s0-x1s3"].index("delay") + 1] == "61ms"     # 2 * 30 + 1
    assert ports["s3-x3r"][ports["s3-x3r"].index("delay") + 1] == "1ms"
    assert all(p[p.index("rate") + 1] == "100000kbit" for p in ports.values())
    tbf = plan["us"][0][0][0]
    assert tbf[tbf.index("rate") + 1] == "100000kbit"


def test_configured_rtts_equal_hand_computation():
    h = chain.hosts_json(PAPER)
    assert h["reference"] == {"src": "us", "dst": "ur", "rtt_ms": 110, "hops": 5}
    assert h["paths_rtt_ms"]["us-ur"] == 2 * (25 + 25) + 2 * 5 * 1 == 110
    assert h["paths_rtt_ms"]["x1s1-x1r"] == 2 * 10 + 2 * 1 == 22
    assert h["paths_rtt_ms"]["x3s7-x3r"] == 2 * 70 + 2 * 1 == 142
    assert h["paths_rtt_ms"]["x5s10-x5r"] == 202
    assert len(h["paths_rtt_ms"]) == 1 + 50 and len(h["cross_flows"]) == 50
    # the RTT is what the two ports' netem delays add up to (where the delay really is)
    for path, rtt in h["paths_rtt_ms"].items():
        a, b = path.split("-")
        assert h["hosts"][a]["port_delay_ms"] + h["hosts"][b]["port_delay_ms"] == pytest.approx(rtt)
    other = chain.hosts_json({"kind": "chain", "hops": 3, "hop_delay_ms": 2, "user_delay_ms": 10,
                              "cross_flows_per_hop": 2, "cross_delays_ms": [0, 7.5]})
    assert other["paths_rtt_ms"] == {"us-ur": 2 * (10 + 10) + 2 * 3 * 2,
                                     **{f"x{k}s1-x{k}r": 4 for k in (1, 2, 3)},
                                     **{f"x{k}s2-x{k}r": 19 for k in (1, 2, 3)}}


def test_hosts_json_shape():
    h = chain.hosts_json(PAPER)
    json.dumps(h)                                         # it is written as hosts.json
    assert h["port"] == 5001 and h["kind"] == "chain"
    assert h["hosts"]["us"]["ip"] == "10.10.0.100" and h["hosts"]["ur"]["ip"] == "10.10.5.100"
    assert h["hosts"]["us"]["role"] == "user-sender" and h["hosts"]["x2s1"]["role"] == "cross-sender"
    assert h["hosts"]["x2s1"]["hop"] == 2 and h["hosts"]["x2s1"]["delay_ms"] == 10
    assert h["bottleneck"] == {"node": "r0", "intf": "r0-next"} and h["reverse"] == {"node": "r1", "intf": "r1-prev"}
    assert [x["aqm"] for x in h["hops"]] == [True, False, False, False, False]
    assert h["routers"] == ["r0", "r1", "r2", "r3", "r4", "r5"]
    # the flow client/server read it like the dumbbell's hosts.json
    from workloads.common import load_hosts
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        f.write(json.dumps(h))
        f.flush()
        ips = load_hosts(f.name)
    assert ips["us"] == "10.10.0.100" and len(ips) == 57


@pytest.mark.parametrize("field,value,fix", [
    ("kind", "dumbbell", "only kind 'chain'"),
    ("hops", 0, "integer 1..20"),
    ("hops", 2.5, "integer 1..20"),
    ("hop_mbps", 0, "positive number"),
    ("access_mbps", "100", "positive number"),
    ("hop_delay_ms", -1, "non-negative"),
    ("user_delay_ms", None, "non-negative"),
    ("buffer_pkts", 0, "integer >= 1"),
    ("reverse_buffer_pkts", 2.5, "integer >= 1"),
    ("cross_flows_per_hop", 100, "integer 0..99"),
    ("cross_delays_ms", [10, 20], "list of cross_flows_per_hop (10)"),
    ("cross_delays_ms", [-1] * 10, "non-negative"),
    ("aqm_hops", [6], "hop numbers 1..hops (5)"),
    ("aqm_hops", [1, 1], "distinct"),
    ("aqm_hops", 1, "list"),
    ("mtu", 9000, "only MTU 1500"),
    ("bottleneck_mbps", 100, "equal to hop_mbps"),
])
def test_bad_topology_names_field_and_fix(field, value, fix):
    t = copy.deepcopy(PAPER)
    t[field] = value
    with pytest.raises(chain.TopologyError) as e:
        chain.validate(t)
    assert f"topology.{field}=" in str(e.value) and fix in str(e.value)


def test_unknown_field_is_named_with_the_known_ones():
    with pytest.raises(chain.TopologyError, match=r"topology\.hop_mpbs: not a field .* hop_mbps"):
        chain.validate({"kind": "chain", "hop_mpbs": 10})
    chain.validate({"kind": "chain", "bottleneck_mbps": 10})     # the aqms.yaml placeholder's source


def test_p4_aqm_is_refused():
    with pytest.raises(chain.TopologyError, match=r"aqm\.forward\.kind='p4'.*qdisc AQM"):
        chain.qdisc_plan(PAPER, {"forward": {"kind": "p4", "args": []}, "reverse": FAVOR["reverse"]})


def test_capture_points():
    pts = chain.capture_points(PAPER)
    assert {k: (v["node"], v["intf"]) for k, v in pts.items()} == {
        "sender-us": ("us", "us-eth0"), "sender-ur": ("ur", "ur-eth0"),
        "bneck-in": ("r0", "r0-lan"), "bneck-out": ("r1", "r1-prev")}
    intfs = set(chain.interfaces(PAPER).values())
    every = chain.capture_points(PAPER, every_hop=True)
    assert set(every) - set(pts) == {f"hop{k}-{d}" for k in range(2, 6) for d in ("in", "out")}
    for name, p in every.items():
        assert p["intf"] in intfs and p["intf"].startswith(p["node"] + "-"), name   # exists, on that node
        assert p["what"]
    assert chain.hosts_json(PAPER)["capture_points"] == pts


def test_cross_flows_plan_as_persistent_iperf3_groups():
    """The runner can start the cross traffic with workloads.persistent: one stream per (sender, receiver)."""
    from workloads import persistent
    h = chain.hosts_json(PAPER)
    ips = {n: v["ip"] for n, v in h["hosts"].items()}
    pairs = [(c["src"], c["dst"]) for c in h["cross_flows"]]
    groups = persistent.persistent_plan(ips, 600, n=len(pairs), start_s=0, pairs=pairs)
    assert len(groups) == 50 and all(g.streams == 1 for g in groups)
    assert sorted(g.port for g in groups if g.dst == "x3r") == list(range(5201, 5211))
    assert all(chain.addresses(PAPER)["hosts"][g.src]["lan"] == chain.addresses(PAPER)["hosts"][g.dst]["lan"] - 1
               for g in groups)
