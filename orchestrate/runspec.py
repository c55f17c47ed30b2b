"""A run's spec: the run.json of docs/contracts.md for one point of the matrix, its AQM's tc arguments
(config/aqms.yaml filled in from the run's topology), its TCP profile, and the arguments of the schedule
generator that makes its schedule.
"""
from __future__ import annotations

import copy
import functools
import hashlib
import json
import shlex
from pathlib import Path

import yaml

from contract import rundir
from contract.sizes import format_sizes
from orchestrate import matrix, schema
from orchestrate.matrix import Point

REPO = Path(__file__).resolve().parents[1]
AQMS_PATH = REPO / "config" / "aqms.yaml"

# TCP profiles: `paper` is as close to ns-2 NewReno as Linux allows, `linux` keeps the
# kernel's defaults. The runner applies these per host network namespace.
TCP_PROFILES = {
    "paper": {"congestion_control": "reno", "sack": False, "timestamps": False, "delayed_ack": False,
              "tlp": False, "rack": False, "initial_rto_ms": 3000, "ecn": False},
    "linux": {"congestion_control": "cubic", "sack": True, "timestamps": True, "delayed_ack": True,
              "tlp": True, "rack": True, "initial_rto_ms": None, "ecn": False},
}


def read_aqms(path: Path = AQMS_PATH) -> dict:
    """config/aqms.yaml, parsed once per file version: validate builds every run's spec (aqm_setup), and
    a YAML parse per run would make a 600-run config take seconds in every Snakemake job. A copy, so a caller
    cannot change what the next one reads."""
    p = Path(path)
    return copy.deepcopy(_parse_aqms(str(p), p.stat().st_mtime_ns))


@functools.lru_cache(maxsize=8)
def _parse_aqms(path: str, mtime_ns: int) -> dict:
    with open(path) as f:
        aqms = yaml.safe_load(f)
    for entry in aqms.values():
        if "twin_of" in entry:  # an A/A twin: its original's dataplane, under its own name
            entry.update({k: copy.deepcopy(aqms[entry["twin_of"]][k]) for k in ("forward", "reverse")})
    return aqms


def chain_topology(topo: dict) -> dict:
    """A chain section's topology with one bottleneck entry -> run.json's topology (topologies.chain
    validated, its defaults filled in): bottleneck_mbps is the rate of every hop (hop_mbps) and
    buffer_pkts / reverse_buffer_pkts the DropTail hops' queues, so the bottleneck axis and the run ids
    work as for the dumbbell. Raises topologies.dumbbell.TopologyError naming the field and the fix."""
    from topologies import chain
    t = dict(topo, kind="chain")
    if "bottleneck_mbps" in t:
        t["hop_mbps"] = t["bottleneck_mbps"]
    return chain.validate(t)


def run_topology(cfg: dict, run: Point) -> dict:
    """The run's topology: the section's, with the run's bottleneck (a chain's: validated, defaults filled in)."""
    sec = matrix.section_of(cfg, run)
    topo = dict(sec["topology"], **sec["bottlenecks"][run.bottleneck])
    return chain_topology(topo) if matrix.SCENARIOS[run.scenario]["topology"] == "chain" else topo


def schedule_seed(cfg: dict, run: Point) -> int:
    """A seed per (load, replication), derived from the config's seed: stable and independent of AQM/IW.
    The chain's runs have load 0, so theirs is per replication: the reference user's seed (run.json's
    seed), the same for DropTail and FaQ."""
    h = hashlib.sha256(f"{cfg['seed']}|{run.load:.4f}|{run.replication}".encode()).digest()
    return int.from_bytes(h[:4], "big")


def schedule_params(cfg: dict, run: Point) -> dict:
    """What `python -m orchestrate.schedule` makes the run's schedule from (schedule_args)."""
    sec = matrix.section_of(cfg, run)
    return {"load": run.load, "capacity_mbps": run.bottleneck_mbps, "duration": sec["duration_s"],
            "seed": schedule_seed(cfg, run), "sizes": format_sizes(dict(run.sizes)),
            "reverse_load": sec["reverse_load"], "topology": matrix.SCENARIOS[run.scenario]["topology"]}


def schedule_args(cfg: dict, run: Point) -> list[str]:
    """The command-line arguments of `python -m orchestrate.schedule` for the run's schedule (without --out)."""
    p = schedule_params(cfg, run)
    return ["--load", str(p["load"]), "--capacity-mbps", f"{p['capacity_mbps']:g}", "--duration", f"{p['duration']:g}",
            "--seed", str(p["seed"]), "--sizes", p["sizes"], "--reverse-load", f"{p['reverse_load']:g}",
            "--topology", p["topology"]]


def aqm_args(args: list, topo: dict, tcp: dict | None = None) -> list[str]:
    """An entry's tc arguments with the fields of config/aqms.yaml filled in from the run's topology and TCP
    profile."""
    b = topo["buffer_pkts"]
    mtu = topo.get("mtu", schema.defaults()["topology"]["mtu"])
    third, two_thirds = max(1, b // 3), max(2, (2 * b) // 3)
    fields = dict(topo, buffer_pkts_third=third, buffer_pkts_two_thirds=two_thirds, buffer_bytes=b * mtu,
                  buffer_bytes_third=third * mtu, buffer_bytes_two_thirds=two_thirds * mtu,
                  # tc-red(8): burst = (min + min + max) / (3 * avpkt), in packets, at least 1
                  red_burst=max(1, -(-(2 * third + two_thirds) // 3)),
                  sfb_target=max(1, (4 * b) // 5),
                  # a full segment's payload: the MTU less the IPv4 and TCP headers, and TCP timestamps' 12 bytes
                  # when the profile has them (the hosts use IPv4; no other option is on every segment)
                  tcp_mss=mtu - 40 - (12 if (tcp or {}).get("timestamps") else 0))
    return [str(a).format(**fields) for a in args]


def aqm_setup(name: str, topo: dict, tcp: dict | None = None) -> dict:
    entry = read_aqms()[name]
    return {"name": name, "paper_name": entry.get("paper_name", name),
            "forward": {"kind": entry["forward"]["kind"], "args": aqm_args(entry["forward"]["args"], topo, tcp)},
            "reverse": {"kind": entry["reverse"]["kind"], "args": aqm_args(entry["reverse"]["args"], topo, tcp)}}


def run_spec(cfg: dict, run: Point) -> dict:
    """The resolved run.json of docs/contracts.md for one run."""
    sec = matrix.section_of(cfg, run)
    topo = dict(run_topology(cfg, run), kind=matrix.SCENARIOS[run.scenario]["topology"])
    # the chain's run.json topology is chain.validate's (every field, the defaults of the paper)
    return {
        "run_id": run.run_id,
        "config_name": cfg["name"],
        "scenario": run.scenario,
        "topology": topo,
        "aqm": aqm_setup(run.aqm, topo, TCP_PROFILES[run.profile]),
        "tcp": dict(TCP_PROFILES[run.profile], profile=run.profile, congestion_control=run.cc, iw=run.iw),
        "load": run.load,
        "reverse_load": sec["reverse_load"],
        "replication": run.replication,
        "seed": schedule_seed(cfg, run),
        "duration_s": sec["duration_s"],
        "warmup_s": sec["warmup_s"],
        "drain_s": sec["drain_s"],
        "schedule": rundir.SCHEDULE,
        "workload": sec["workload"],
        "sizes": dict(run.sizes),
        "capture": {"snaplen": sec["capture"]["snaplen"], "points": _capture_points(topo)},
        "trace_favor": bool(sec["trace_favor"]),
        "workload_impl": cfg["workload_impl"],
        "fidelity": sec["fidelity"],
        "flood": _flood_spec(sec, run),
    }


def _flood_spec(sec: dict, run: Point) -> dict | None:
    """run.json's flood: what the runner starts on the attacker (workloads.synflood), or None."""
    if not run.flood_x:
        return None
    from workloads import synflood
    f = sec["synflood"]
    return {"kind": "synflood", "rate_x": run.flood_x, "pps": synflood.flood_pps(run.flood_x, run.bottleneck_mbps),
            "attacker": f["attacker"], "target": f["target"], "spoof": f["spoof"]}


def _capture_points(topo: dict) -> list[str]:
    """run.json's capture.points: the dumbbell's (every sender, bneck-in, bneck-out), or the chain's own
    (topologies.chain.capture_points: the user's two hosts, hop 1's arrivals and departures)."""
    if topo["kind"] == "chain":
        from topologies import chain
        return list(chain.capture_points(topo))
    return ["senders", "bneck-in", "bneck-out"]


def shell_json(value) -> str:
    """A config section as one shell word: its strings (inventory paths, host names) come from the user's
    config and may hold quotes or `;`, so they are quoted for the shell, never pasted between quotes."""
    return shlex.quote(json.dumps(value))


# The testbed keys that change a measurement: a run in the local TCG guest and one on a real host differ in
# CPU and timer precision, so moving a config between them redoes its runs. Which guest or host (vm_name,
# host, hosts, group, inventory), the pool's size, whether guests stay up (keep_running) and the derived P4
# toolchain flag (the run spec's aqm already says P4) are not part of an experiment. A local guest's clock is:
# a guest in virtual time carries more at the same bottleneck than one whose CPU the host shares
# (testbed/README.md, "The virtual clock").
TESTBED_EXPERIMENT_KEYS = ("kind", "clock")
# The clock every run had before the option existed: left out of the parameter, so those runs are not redone.
TESTBED_PARAM_OMITS = {"clock": "real"}


def testbed_param(cfg: dict) -> dict:
    """The run rule's `testbed` parameter: Snakemake redoes a run whose params changed (--rerun-triggers
    params), so it holds only the testbed keys that change what a run measures."""
    return {k: v for k, v in cfg["testbed"].items()
            if k in TESTBED_EXPERIMENT_KEYS and TESTBED_PARAM_OMITS.get(k) != v}

