"""The dumbbell's address plan, delays and qdisc commands (pure; the Mininet build runs in the guest)."""
import copy

import pytest

from topologies import dumbbell, tc

TOPO = {"kind": "dumbbell", "bottleneck_mbps": 10, "buffer_pkts": 8, "access_mbps": 100,
        "left_delays_ms": [0, 12, 25], "right_delays_ms": [2, 37, 75], "central_delay_ms": 0, "mtu": 1500}
AQM = {"forward": {"kind": "favor", "args": ["limit", "8"]}, "reverse": {"kind": "pfifo", "args": ["limit", "8"]}}


def test_addresses_deterministic_and_unique():
    a, b = dumbbell.addresses(), dumbbell.addresses()
    assert a == b
    ips = [h["ip"] for h in a["hosts"].values()]
    assert len(set(ips)) == 6
    assert a["hosts"]["a1"]["ip"] == "10.1.0.1" and a["hosts"]["b3"]["ip"] == "10.2.0.3"


def test_path_rtts_are_the_common_suite():
    h = dumbbell.hosts_json(TOPO)
    rtts = sorted(h["paths_rtt_ms"].values())
    assert rtts == [4, 28, 54, 74, 98, 124, 150, 174, 200]
    assert abs(sum(rtts) / 9 - 100.7) < 0.1


def test_bottleneck_htb_with_aqm_as_only_leaf():
    plan = dumbbell.qdisc_plan(TOPO, AQM)
    (cmds, kind), = plan["rl"]
    assert kind == "favor"
    assert cmds[0][-2:] == ["default", "1"] and "rl-eth1" in cmds[0]
    assert cmds[1][cmds[1].index("rate") + 1] == "10000kbit" == cmds[1][cmds[1].index("ceil") + 1]
    assert "quantum" in cmds[1]
    assert cmds[2][-3:] == ["favor", "limit", "8"]
    assert tc.tc_env("favor")["TC_LIB_DIR"] == tc.FAVOR_TC_LIB
    (rcmds, rkind), = plan["rr"]
    assert rkind == "pfifo" and "rr-eth0" in rcmds[0]


def test_delays_doubled_on_bridge_port_towards_host():
    ports = {c[0][4]: c[0] for c, _ in dumbbell.qdisc_plan(TOPO, AQM)["root"]}
    assert ports["sR-b3"][ports["sR-b3"].index("delay") + 1] == "150ms"
    assert ports["sL-a2"][ports["sL-a2"].index("delay") + 1] == "24ms"
    assert "limit" in ports["sL-a1"] and "rate" in ports["sL-a1"]


@pytest.mark.parametrize("field,value", [("central_delay_ms", 5), ("left_delays_ms", [0, 1]),
                                         ("access_mbps", 0), ("mtu", 9000), ("kind", "chain")])
def test_bad_topology_names_field(field, value):
    t = copy.deepcopy(TOPO)
    t[field] = value
    with pytest.raises(dumbbell.TopologyError, match=field):
        dumbbell.validate(t)
