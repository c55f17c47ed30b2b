"""A corpus of hostile configs: each is config/smoke.yaml (or quick.yaml) with one change.

Every config is either refused by validation, with a message that names the key by its path in the config
and says how to fix it, or, where the value is a valid edge, it validates and then makes its schedules
(orchestrate.schedule.generate, on a short duration) and passes the testbed runner's own run.json check
(contract/spec.py). None may validate and then fail in the schedule generator or the runner.
"""
import json
import math
from pathlib import Path

import pytest
import yaml

from orchestrate import matrix, runspec
from orchestrate.config import ConfigError, validate
from contract import spec as runner_spec
from orchestrate import schedule

REPO = Path(__file__).resolve().parents[2]
NAN, INF = float("nan"), float("inf")


def smoke():
    """config/smoke.yaml as written, with the topology it takes from the defaults stated as empty, so a test
    can change one of its keys."""
    return dict(yaml.safe_load((REPO / "config" / "smoke.yaml").read_text()), topology={})


def quick():
    return dict(yaml.safe_load((REPO / "config" / "quick.yaml").read_text()), topology={})


def chain(**section):
    return dict(smoke(), sections=[dict({"name": "chain", "scenario": "chain", "duration_s": 60, "warmup_s": 10},
                                        **section)])


def persistent(**section):
    return dict(smoke(), sections=[dict({"name": "p", "scenario": "persistent", "loads": [0.2],
                                         "duration_s": 60, "warmup_s": 10}, **section)])


def synflood(**flood):
    return dict(smoke(), synflood=dict({"rates_x": [0, 0.1]}, **flood))


def top(**change):
    return dict(smoke(), **change)


def topo(**change):
    c = smoke()
    c["topology"].update(change)
    return c


def sizes(**s):
    return dict(smoke(), sizes=s)


BP = {"distribution": "bounded_pareto", "shape": 1.3, "mean_pkts": 30}
PARETO = {"distribution": "pareto", "shape": 1.3, "mean_pkts": 30}

# (config, the key's path as the message must give it, a word of the fix)
REFUSED = {
    # loads: the schedule generator's own check (0 < load < 1), and finite numbers
    "load 1.5": (top(loads=[1.5]), "loads[0]", "below 1"),
    "load 1": (top(loads=[1.0]), "loads[0]", "below 1"),
    "second load 1.2": (top(loads=[0.5, 1.2]), "loads[1]", "below 1"),
    "load 0": (top(loads=[0]), "loads[0]", "above 0"),
    "negative load": (top(loads=[-0.1]), "loads[0]", "above 0"),
    "NaN load": (top(loads=[NAN]), "loads[0]", "finite"),
    "infinite load": (top(loads=[INF]), "loads[0]", "finite"),
    "loads sharing a run id": (top(loads=[0.501, 0.502]), "load0.50", "two decimals"),
    "reverse_load 1": (top(reverse_load=1), "reverse_load", "below 1"),
    "reverse_load 1.2": (top(reverse_load=1.2), "reverse_load", "below 1"),
    "negative reverse_load": (top(reverse_load=-0.1), "reverse_load", "0 or more"),
    "NaN reverse_load": (top(reverse_load=NAN), "reverse_load", "finite"),
    "a section's load 1.2": (top(sections=[{"name": "a"}, {"name": "b", "loads": [1.2]}]), "sections[1].loads[0]",
                             "below 1"),
    "a section's reverse_load 1": (top(sections=[{"name": "a", "reverse_load": 1}]), "sections[0].reverse_load",
                                   "below 1"),
    # durations
    "infinite duration": (top(duration_s=INF), "duration_s", "finite"),
    "NaN duration": (top(duration_s=NAN), "duration_s", "finite"),
    "duration 1e9": (top(duration_s=1e9), "duration_s", "replications"),
    "duration 4": (top(duration_s=4), "duration_s", "Fix: change that value"),
    "a day at load 0.95": (dict(quick(), duration_s=86400, warmup_s=30), "duration_s", "replications"),
    "NaN warmup": (top(warmup_s=NAN), "warmup_s", "finite"),
    "infinite warmup": (top(warmup_s=INF), "warmup_s", "finite"),
    "warmup as long as the run": (top(warmup_s=20), "warmup_s (20) must be below duration_s", "lower warmup_s"),
    "negative warmup": (top(warmup_s=-1), "warmup_s", "Fix: change that value"),
    "drain 1e9": (top(drain_s=1e9), "drain_s", "flow-timeout"),
    "drain 601": (top(drain_s=601), "drain_s", "flow-timeout"),
    "NaN drain": (top(drain_s=NAN), "drain_s", "finite"),
    "negative drain": (top(drain_s=-1), "drain_s", "Fix: change that value"),
    # persistent flows
    "NaN persistent.start_s": (persistent(persistent={"start_s": NAN}), "sections[0].persistent.start_s", "finite"),
    "persistent start after the traffic": (persistent(persistent={"start_s": 60}), "persistent.start_s (60)",
                                           "lower persistent.start_s"),
    "no persistent flows": (persistent(persistent={"flows": 0}), "sections[0].persistent.flows",
                            "Fix: change that value"),
    "persistent flows 5.0": (persistent(persistent={"flows": 5.0}), "sections[0].persistent.flows",
                             "without the decimal point"),
    # sizes: the generator's own parse_sizes and E[L]
    "bounded Pareto maximum below its mean": (sizes(**BP, max_pkts=20), "sizes", "max_pkts above mean_pkts"),
    "bounded Pareto maximum at its mean": (sizes(**BP, max_pkts=30), "sizes", "max_pkts above mean_pkts"),
    "bounded Pareto maximum 1e12": (sizes(**BP, max_pkts=1e12), "sizes.max_pkts", "packet by packet"),
    "Pareto shape 1": (sizes(**dict(PARETO, shape=1.0)), "sizes", "shape above 1"),
    "Pareto shape 0.5": (sizes(**dict(PARETO, shape=0.5)), "sizes", "shape above 1"),
    "Pareto shape 1e6": (sizes(**dict(PARETO, shape=1e6)), "sizes", "moderate"),
    "lomax shape 1": (sizes(distribution="lomax", shape=1, mean_pkts=30), "sizes", "shape above 1"),
    "exponential mean 0": (sizes(distribution="exponential", mean_pkts=0), "sizes", "mean_pkts above 0"),
    "negative mean": (sizes(**dict(PARETO, mean_pkts=-5)), "sizes", "mean_pkts above 0"),
    "mean of 1e7 packets": (sizes(**dict(PARETO, mean_pkts=1e7)), "sizes.mean_pkts", "outlasts"),
    "NaN shape": (sizes(**dict(PARETO, shape=NAN)), "sizes.shape", "finite"),
    "second of two sizes bad": (top(sizes=[PARETO, dict(PARETO, shape=0.9)]), "sizes[1]", "shape above 1"),
    "a section's sizes bad": (top(sections=[{"name": "s", "sizes": dict(BP, max_pkts=10)}]), "sections[0].sizes",
                              "max_pkts above mean_pkts"),
    # the SYN flood's spoofed prefix, checked with ipaddress
    "spoof prefix /33": (synflood(spoof="10.66.0.0/33"), "synflood.spoof", "IPv4 prefix"),
    "spoof with host bits": (synflood(spoof="10.66.0.1/16"), "synflood.spoof", "IPv4 prefix"),
    "spoof octet 300": (synflood(spoof="300.1.0.0/16"), "synflood.spoof", "IPv4 prefix"),
    "spoof not an address": (synflood(spoof="attackers"), "synflood.spoof", "IPv4 prefix"),
    "spoof IPv6": (synflood(spoof="fd00::/64"), "synflood.spoof", "IPv4 prefix"),
    "spoof over the left hosts": (synflood(spoof="10.1.0.0/16"), "synflood.spoof", "outside the topology"),
    "spoof everything": (synflood(spoof="0.0.0.0/0"), "synflood.spoof", "outside the topology"),
    "spoof loopback": (synflood(spoof="127.0.0.0/8"), "synflood.spoof", "outside the topology"),
    "spoof multicast": (synflood(spoof="224.1.0.0/16"), "synflood.spoof", "outside the topology"),
    "NaN flood rate": (synflood(rates_x=[0, NAN]), "synflood.rates_x[1]", "finite"),
    # the topology and bottleneck
    "bottleneck 0.01 Mb/s": (topo(bottleneck_mbps=0.01), "topology.bottleneck_mbps", "whole kbit/s"),
    "NaN bottleneck": (topo(bottleneck_mbps=NAN), "topology.bottleneck_mbps", "finite"),
    "access below the bottleneck": (topo(access_mbps=5), "topology", "raise access_mbps"),
    "a bottleneck entry's access below its rate": (
        dict(smoke(), topology=dict({k: v for k, v in smoke()["topology"].items()
                                     if k not in ("bottleneck_mbps", "buffer_pkts", "reverse_buffer_pkts")}, access_mbps=50),
             bottlenecks=[{"bottleneck_mbps": 10, "buffer_pkts": 8},
                          {"bottleneck_mbps": 100, "buffer_pkts": 83}]), "bottlenecks[1]", "raise access_mbps"),
    "buffer 8.0": (topo(buffer_pkts=8.0), "topology.buffer_pkts", "without the decimal point"),
    "NaN delay": (topo(left_delays_ms=[0, NAN, 25]), "topology.left_delays_ms[1]", "finite"),
    "snaplen 128.0": (top(capture={"snaplen": 128.0}), "capture.snaplen", "without the decimal point"),
    "iw 2.0": (top(iw=[2.0]), "iw[0]", "without the decimal point"),
    "replications 1.0": (top(replications=1.0), "replications", "without the decimal point"),
    "NaN rate share": (top(fidelity={"rate_min_share": NAN}), "fidelity.rate_min_share", "finite"),
    "infinite RTT tolerance": (top(fidelity={"rtt_tolerance_ms": INF}), "fidelity.rtt_tolerance_ms", "finite"),
    "name of 65 characters": (top(name="n" * 65), "name", "Fix: change that value"),
    "negative seed": (top(seed=-1), "seed", "Fix: change that value"),
    "attempts 0": (top(attempts=0), "attempts", "Fix: change that value"),
    "guest count 2.0": (top(testbed={"kind": "local-vm", "count": 2.0}), "testbed.count", "without the decimal point"),
    # the chain (topologies.chain.validate's bounds)
    "NaN cross warm-up": (chain(reference={"warmup_cross_s": NAN}), "sections[0].reference.warmup_cross_s", "finite"),
    "25 hops": (chain(topology={"hops": 25}), "topology.hops=25", "Fix: change that value"),
    "100 cross flows per hop": (chain(topology={"cross_flows_per_hop": 100}), "topology.cross_flows_per_hop=100",
                                "Fix: change that value"),
    "AQM at hop 0": (chain(topology={"aqm_hops": [0]}), "topology.aqm_hops=[0]", "Fix: change that value"),
}

# (config, why it is a valid edge): each validates, makes its schedules and passes the runner's spec check
VALID = {
    "load 0.99": (top(loads=[0.99]), "just below 1"),
    "load 0.01": (top(loads=[0.01]), "just above 0"),
    "reverse_load 0": (top(reverse_load=0), "no reverse flows"),
    "reverse_load 0.99": (top(reverse_load=0.99), "just below 1"),
    "duration 5 with warm-up 4.9": (top(duration_s=5, warmup_s=4.9), "the shortest run"),
    "drain 600": (top(drain_s=600), "the longest drain"),
    "drain 0": (top(drain_s=0), "no drain"),
    "a day at load 0.05": (dict(smoke(), loads=[0.05], duration_s=86400, warmup_s=60), "under MAX_FLOWS"),
    "bounded Pareto maximum just above its mean": (sizes(**BP, max_pkts=31), "max_pkts > mean_pkts"),
    "bounded Pareto maximum 1e7": (sizes(**BP, max_pkts=1e7), "the largest maximum"),
    "Pareto shape 1.01": (sizes(**dict(PARETO, shape=1.01)), "heavy tail"),
    "Pareto shape 50": (sizes(**dict(PARETO, shape=50)), "light tail"),
    "exponential mean 0.5": (sizes(distribution="exponential", mean_pkts=0.5), "E[L] just above 1"),
    "mean of a million packets": (sizes(**dict(PARETO, mean_pkts=1e6)), "the largest mean"),
    "spoof /32": (synflood(spoof="10.66.0.0/32"), "one address"),
    "spoof documentation prefix": (synflood(spoof="192.0.2.0/24"), "a public-looking prefix"),
    "bottleneck 0.1 Mb/s": (topo(bottleneck_mbps=0.1, access_mbps=0.1), "the slowest rate"),
    "access equal to the bottleneck": (topo(access_mbps=10), "not below"),
    "persistent from just before the end": (persistent(persistent={"start_s": 59.5}), "start_s < duration_s"),
    "chain with the paper's defaults": (chain(), "closed loop: a header-only schedule"),
    "chain of 20 hops": (chain(topology={"hops": 20, "aqm_hops": [20]}), "MAX_HOPS"),
    "flood rate 10": (synflood(rates_x=[10]), "the largest rate"),
}


def test_the_corpus_is_large_and_covers_every_case_of_the_brief():
    assert len(REFUSED) + len(VALID) >= 50
    for case in ("load 1.5", "reverse_load 1", "infinite duration", "NaN warmup", "NaN persistent.start_s",
                 "NaN load", "spoof with host bits", "bounded Pareto maximum below its mean", "drain 1e9"):
        assert case in REFUSED


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_with_the_key_and_the_fix(case):
    cfg, key, fix = REFUSED[case]
    with pytest.raises(ConfigError) as e:
        validate(json.loads(json.dumps(cfg)), "my.yaml")
    msg = str(e.value)
    assert "my.yaml" in msg and "Fix:" in msg, msg
    line = next((m for m in msg.splitlines() if key in m), None)
    assert line is not None, f"{key!r} not named in: {msg}"
    assert fix in line, f"{fix!r} not in: {line}"


@pytest.mark.parametrize("case", sorted(VALID))
def test_valid_edges_make_their_schedules_and_pass_the_runners_check(case):
    cfg = validate(json.loads(json.dumps(VALID[case][0])), "my.yaml")
    runs = matrix.runs(cfg)
    assert runs
    made = {}
    for run in runs:
        runner_spec.validate(runspec.run_spec(cfg, run))
        if run.schedule_id in made:
            continue
        p = runspec.schedule_params(cfg, run)
        meta, flows = schedule.generate(p["load"], p["capacity_mbps"], min(p["duration"], 20.0), p["seed"],
                                        p["sizes"], p["reverse_load"], topology=p["topology"])
        made[run.schedule_id] = flows
        if meta.get("closed_loop"):
            assert flows == []
        else:
            assert math.isfinite(float(meta["mean_pkts_effective"]))
            assert all(f.size_pkts >= 1 and 0 <= f.start_s < 20.0 for f in flows)


def test_a_delay_line_longer_than_netem_holds_is_said_but_allowed():
    """1000 Mb/s with the paper's 75 ms access delay: a host receiving at the full rate fills its port's netem
    queue (topologies.tc.NETEM_LIMIT) before the AQM sees a loss. The traffic is spread over the hosts,
    so this is a warning; at 100 Mb/s it holds, and nothing is said."""
    said = []
    cfg = validate(json.loads(json.dumps(topo(bottleneck_mbps=1000, access_mbps=1000))), "my.yaml",
                              warn=said.append)
    assert matrix.runs(cfg)
    assert len(said) == 1 and "my.yaml" in said[0] and "12,500 packets" in said[0] and "netem" in said[0], said
    said.clear()
    validate(json.loads(json.dumps(topo(bottleneck_mbps=100))), "my.yaml", warn=said.append)
    assert said == []
