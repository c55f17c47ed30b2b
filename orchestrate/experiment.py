"""Experiment configuration: loading, validation, and expansion into runs.

The Snakefile and the tests use this module; nothing else reads config/*.yaml. A config is rejected
before any experiment starts, with a message that names the key, what is wrong and how to fix it.
"""
from __future__ import annotations

import copy
import functools
import hashlib
import ipaddress
import json
import math
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import yaml

from orchestrate import plan, pool

REPO = Path(__file__).resolve().parents[1]
SCHEMA_PATH = REPO / "config" / "schema" / "config.schema.yaml"
AQMS_PATH = REPO / "config" / "aqms.yaml"

DEFAULTS = {
    "reverse_load": 0.1,
    "drain_s": 20,
    "capture": {"snaplen": 128},
    "trace_favor": True,
    "attempts": 3,
    "workload_impl": "python",
}
# the runner's validity thresholds (testbed/runner/run.py); a config may loosen them for a dataplane with a
# known, stated overhead (config/p4-quick.yaml)
FIDELITY_DEFAULTS = {"rtt_tolerance_ms": 3.0, "rate_min_share": 0.90}
TOPOLOGY_DEFAULTS = {
    "left_delays_ms": [0, 12, 25],
    "right_delays_ms": [2, 37, 75],
    "central_delay_ms": 0,
    "mtu": 1500,
}

# TCP profiles (design.md): `paper` is as close to ns-2 NewReno as Linux allows, `linux` keeps the
# kernel's defaults. The runner applies these per host network namespace.
TCP_PROFILES = {
    "paper": {"congestion_control": "reno", "sack": False, "timestamps": False, "delayed_ack": False,
              "tlp": False, "rack": False, "initial_rto_ms": 3000, "ecn": False},
    "linux": {"congestion_control": "cubic", "sack": True, "timestamps": True, "delayed_ack": True,
              "tlp": True, "rack": True, "initial_rto_ms": None, "ecn": False},
}


P4_TARBALL_DEFAULT = Path.home() / ".cache" / "favorlab" / "p4" / "p4lang.tar.gz"


def p4_tarball() -> str | None:
    """A prebuilt P4 toolchain prefix for hosts without p4lang packages (the local guest), or None."""
    p = os.environ.get("FAVORLAB_P4_TARBALL") or (str(P4_TARBALL_DEFAULT) if P4_TARBALL_DEFAULT.is_file() else "")
    return p if p and Path(p).is_file() else None


class ConfigError(ValueError):
    """A configuration that must not start: the message says what and how to fix it."""


@dataclass(frozen=True)
class Run:
    """One run of the matrix: a value of every axis. Two sections that name the same run make it once."""
    config_name: str
    scenario: str
    aqm: str
    load: float
    iw: int
    replication: int
    bottleneck_mbps: float
    buffer_pkts: int
    sizes: tuple          # the size distribution's (key, value) pairs, sorted
    profile: str
    cc: str
    # the synflood axis: the spoofed SYN flood's rate in multiples of the bottleneck (0: none)
    flood_x: float = 0.0
    # where the run's other settings come from (cfg["matrix"]): not part of what the run is
    section: str = field(default="", compare=False)
    bottleneck: int = field(default=0, compare=False)

    @property
    def size_tag(self) -> str:
        s = dict(self.sizes)
        return f"{SIZE_TAGS[s['distribution']]}{s.get('mean_pkts', ''):g}" if "mean_pkts" in s \
            else SIZE_TAGS[s["distribution"]]

    @property
    def cell(self) -> str:
        """Every axis but AQM, load, IW and replication: the part of the run id that names the scenario."""
        flood = f"-syn{self.flood_x:g}x" if self.flood_x else ""
        return (f"{self.scenario}-{self.bottleneck_mbps:g}M-buf{self.buffer_pkts}-{self.size_tag}"
                f"-{self.profile}-{self.cc}{flood}")

    @property
    def run_id(self) -> str:
        return f"{self.cell}_{self.aqm}_load{self.load:.2f}_iw{self.iw}_rep{self.replication}"

    @property
    def schedule_id(self) -> str:
        # The schedule depends on what offers the load (scenario, bottleneck rate, sizes), not on the AQM,
        # buffer, IW, congestion control or flood: every AQM (and buffer, IW, cc, flood rate) of a comparison
        # replays the same flows, so flows can be paired (Delta_i, F10; the buffer sweep of F9; the same
        # legitimate flows with and without a SYN flood).
        return f"{self.scenario}-{self.bottleneck_mbps:g}M-{self.size_tag}_load{self.load:.2f}_rep{self.replication}"


SIZE_TAGS = {"pareto": "pareto", "lomax": "lomax", "bounded_pareto": "bpareto", "exponential": "exp"}


def load_aqms(path: Path = AQMS_PATH) -> dict:
    """config/aqms.yaml, parsed once per file version: validate builds every run's spec (aqm_setup), and
    a YAML parse per run made a 600-run config take seconds in every Snakemake job. A copy, so a caller
    cannot change what the next one reads."""
    p = Path(path)
    return copy.deepcopy(_parse_aqms(str(p), p.stat().st_mtime_ns))


@functools.lru_cache(maxsize=8)
def _parse_aqms(path: str, mtime_ns: int) -> dict:
    with open(path) as f:
        return yaml.safe_load(f)


def key_path(parts) -> str:
    """A key's path in the config as a user writes it: sections[1].topology.buffer_pkts, loads[2]."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _nonfinite(value, parts=()):
    """Paths of the numbers that are not finite (YAML's .inf, .nan): a schema's bounds let NaN through
    (every comparison with it is false) and an infinite duration never ends."""
    if isinstance(value, float) and not math.isfinite(value):
        yield key_path(parts), value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _nonfinite(v, (*parts, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _nonfinite(v, (*parts, i))


# JSON Schema counts 8.0 as an integer; the runner and tc do not (limit 8.0, snaplen 128.0), so a key the
# schema calls integer takes whole numbers written as such
_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, v: isinstance(v, int) and not isinstance(v, bool)))


def _schema_error_message(source: str, err: jsonschema.ValidationError) -> str:
    if err.validator in ("oneOf", "anyOf") and err.context:
        # sizes is one distribution or a list of them: say what is wrong with the form the value has
        # (the branch that only says "not a list" / "not a mapping" is the form it does not have)
        same = [e for e in err.context if not (e.validator == "type" and not e.relative_path)]
        err = jsonschema.exceptions.best_match(same) if same else err
    where = key_path(err.absolute_path) or "(top level)"
    if err.validator == "additionalProperties":
        allowed = sorted(err.schema.get("properties", {}))
        extra = sorted(set(err.instance) - set(allowed)) if isinstance(err.instance, dict) else []
        return (f"{source}: unknown key {', '.join(map(repr, extra))} at {where}. "
                f"Fix: remove it or use one of: {', '.join(allowed)}.")
    if err.validator == "required":
        return f"{source}: {err.message} at {where}. Fix: add that key (see config/quick.yaml for an example)."
    hint = err.schema.get("description", "")
    if err.validator == "type" and err.validator_value == "integer" and isinstance(err.instance, float):
        return (f"{source}: {where}: {err.instance!r} is not a whole number as written. Fix: write it without "
                f"the decimal point ({int(err.instance) if err.instance.is_integer() else round(err.instance)}).")
    return (f"{source}: {where}: {err.message}."
            + (f" ({hint})" if hint else "")
            + " Fix: change that value (config/schema/config.schema.yaml states what is allowed).")


def validate(config: dict, source: str = "config", warn=None) -> dict:
    """Validate a config dict; return it with defaults filled in, cfg["matrix"] (each section resolved:
    every key given, the axes as lists) and cfg["pool"] (expand_pool) added. Raises ConfigError.
    warn(msg) gets what is allowed but unwise (default: printed to stderr)."""
    warn = _warn if warn is None else warn
    if not isinstance(config, dict):
        raise ConfigError(f"{source}: expected a YAML mapping at the top, got {type(config).__name__}.")
    # what validate derives is not a config key: a validated config (capacity.py edits one) validates again
    config = {k: v for k, v in config.items() if k not in DERIVED_KEYS}
    if isinstance(config.get("testbed"), dict):
        config["testbed"] = {k: v for k, v in config["testbed"].items() if k != "p4"}
    bad = list(_nonfinite(config))
    if bad:
        raise ConfigError("\n".join(f"{source}: {path}: {v!r} is not a finite number. Fix: give a finite number "
                                    f"(YAML's .inf and .nan are not allowed)." for path, v in bad))
    with open(SCHEMA_PATH) as f:
        schema = yaml.safe_load(f)
    errors = sorted(_Validator(schema).iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        raise ConfigError("\n".join(_schema_error_message(source, e) for e in errors))

    cfg = json.loads(json.dumps(config))  # deep copy
    for k, v in DEFAULTS.items():
        cfg.setdefault(k, v)
    problems = []
    sections = cfg.get("sections") or [{"name": cfg["name"]}]
    names = [s["name"] for s in sections]
    for n in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"{source}: two sections are named {n!r}. Fix: give each section its own name.")
    matrix = [_resolve_section(cfg, sec, f"{source}: sections[{i}] ({sec['name']})" if cfg.get("sections")
                               else source, problems, source, f"sections[{i}]." if cfg.get("sections") else "")
              for i, sec in enumerate(sections)]

    known = load_aqms()
    p4_names = set()
    for sec in matrix:
        for i, name in enumerate(sec["aqms"]):
            if name not in known:
                problems.append(f"{sec['where']}: aqms[{i}]: {name!r} is not a known AQM. Fix: use one of "
                                f"{', '.join(sorted(known))}, or add an entry to config/aqms.yaml.")
            elif SCENARIOS[sec["scenario"]]["topology"] == "chain" and known[name]["forward"]["kind"] == "p4":
                problems.append(f"{sec['where']}: aqms[{i}]: {name!r} is a P4 switch; the chain has no P4 switch "
                                f"between its routers. Fix: use a qdisc AQM (favor, droptail, ...) for the chain.")
            elif known[name]["forward"]["kind"] == "p4":
                p4_names.add(name)
                problems += _p4_problems(sec, name, known[name])
    if p4_names:
        # derived, not a config key: orchestrate.testbeds provisions the P4 toolchain only when it is needed
        cfg["testbed"]["p4"] = True
        if cfg["testbed"]["kind"] == "local-vm" and not p4_tarball():
            problems.append(
                f"{source}: aqms use a P4 switch, and the local Debian 12 guest has no package source for "
                f"p4lang's toolchain. Fix: build BMv2 and p4c into a prefix /opt/p4lang elsewhere, tar it "
                f"(tar czf p4lang.tar.gz /opt/p4lang) and set FAVORLAB_P4_TARBALL to it, or put it at "
                f"{P4_TARBALL_DEFAULT} (p4/README.md, 'Toolchain').")
    tb = cfg["testbed"]
    if tb["kind"] == "local-vm":
        tb.setdefault("vm_name", "favorlab")
    problems += _pool_problems(tb, source)
    if problems:
        raise ConfigError("\n".join(problems))
    cfg["matrix"] = matrix
    problems = _collisions(cfg, source)
    if problems:
        raise ConfigError("\n".join(problems))
    for sec in matrix:
        for msg in _delay_line_warnings(sec):
            warn(f"{sec['where']}: {msg}")
    cfg["pool"] = expand_pool(tb, _testbed_defaults(schema), source, warn=warn)
    return cfg


# ------------------------------------------------------------------ sections and their axes

# A scenario is a topology and a kind of workload. web: the schedule's flows (Poisson arrivals, the config's
# sizes); persistent: the same and long-lived iperf3 flows from persistent.start_s (paper Section 5.3);
# reference: the chain's closed-loop reference user (workloads.reference, the config's sizes) and one
# long-lived iperf3 flow per cross flow of every hop (paper Section 8), no open-loop schedule.
SCENARIOS = {"dumbbell": {"topology": "dumbbell", "workload": "web"},
             "persistent": {"topology": "dumbbell", "workload": "persistent"},
             "chain": {"topology": "chain", "workload": "reference"}}
PERSISTENT_DEFAULTS = {"flows": 50, "start_s": 40.0}
# the synflood axis (FavorQueue paper, Section 9.1): rates_x 0 is the run without a flood; the attacker is a left
# host (its flood shares its access link with its own flows), the target a right host's flow server port;
# the spoofed sources come from a prefix no host has (workloads.synflood)
SYNFLOOD_DEFAULTS = {"rates_x": [0.0], "attacker": "a1", "target": "b1", "spoof": "10.66.0.0/16"}
# the chain's cross traffic starts this long before t0, so the hops' queues are loaded when the reference
# user's first flow is due (ten Reno flows of RTT <= 202 ms leave slow start within a few seconds)
REFERENCE_DEFAULTS = {"warmup_cross_s": 10.0}
# keys a section may give; the others (name, seed, testbed, attempts, workload_impl) are the pipeline's
SECTION_KEYS = ("scenario", "persistent", "reference", "synflood", "topology", "bottlenecks", "aqms", "loads", "reverse_load", "iw",
                "tcp_profile", "cc", "replications", "duration_s", "warmup_s", "drain_s", "sizes", "capture",
                "trace_favor", "fidelity")
# topology keys of one kind only: given by a section of the other kind they are an error, inherited from
# the config's top level they are left out (a config may hold dumbbell and chain sections)
DUMBBELL_TOPOLOGY_KEYS = ("left_delays_ms", "right_delays_ms", "central_delay_ms")
CHAIN_TOPOLOGY_KEYS = ("hops", "hop_delay_ms", "user_delay_ms", "cross_flows_per_hop", "cross_delays_ms", "aqm_hops")
CHAIN_BASE = {"bottleneck_mbps": 10, "buffer_pkts": 8, "access_mbps": 100, "mtu": 1500}
# the chain's reference user draws these (workloads.reference.parse_sizes); bounded_pareto is not offered
REFERENCE_SIZES = ("pareto", "lomax", "exponential")
# what validate adds to a config; a config that holds them (a validated one, edited) validates again
DERIVED_KEYS = ("pool", "matrix")
BOTTLENECK_KEYS = ("bottleneck_mbps", "buffer_pkts", "reverse_buffer_pkts", "access_mbps")
# Linux's congestion controls (net/ipv4/tcp_*.c): reno and cubic are built in, the others are modules the
# kernel loads when the runner sets net.ipv4.tcp_congestion_control (the guest's Debian 12 kernel 6.1.0-50 ships
# every one of them as tcp_<name>.ko, checked 2026-11-24)
KNOWN_CC = ("reno", "cubic", "bbr", "bic", "cdg", "dctcp", "highspeed", "htcp", "hybla", "illinois", "lp", "nv",
            "scalable", "vegas", "veno", "westwood", "yeah")
SIZE_NEEDS = {"pareto": ["shape", "mean_pkts"], "lomax": ["shape", "mean_pkts"],
              "bounded_pareto": ["shape", "mean_pkts", "max_pkts"], "exponential": ["mean_pkts"]}


def _resolve_section(cfg: dict, sec: dict, where: str, problems: list, source: str = "config",
                     prefix: str = "") -> dict:
    """A section with every key given (its own, else the config's) and its axes as lists: bottlenecks
    (complete topology overrides), sizes, cc. Problems are appended, not raised, so all are told at once.
    prefix: the section's path in the config ("sections[2].", or "" for a config without sections)."""
    r = {k: json.loads(json.dumps(sec.get(k, cfg.get(k)))) for k in SECTION_KEYS
         if k not in ("topology", "bottlenecks", "sizes", "cc", "capture", "fidelity", "persistent", "reference",
                      "synflood")}
    r.update(name=sec["name"], where=where, figures=sec.get("figures", []))
    r["capture"] = dict(DEFAULTS["capture"], **cfg.get("capture", {}), **sec.get("capture", {}))
    r["fidelity"] = dict(FIDELITY_DEFAULTS, **cfg.get("fidelity", {}), **sec.get("fidelity", {}))
    kind = SCENARIOS[r["scenario"]]["topology"]
    own, other = (CHAIN_TOPOLOGY_KEYS, DUMBBELL_TOPOLOGY_KEYS) if kind == "chain" else \
        (DUMBBELL_TOPOLOGY_KEYS, CHAIN_TOPOLOGY_KEYS)
    # the section's own topology (or, without sections, the config's) is the one that must fit its kind
    mine = sec.get("topology", {}) if cfg.get("sections") else cfg["topology"]
    for k in sorted(set(mine) & set(other)):
        problems.append(f"{where}: topology.{k} is for scenario {'chain' if kind != 'chain' else 'dumbbell or persistent'}"
                        f" (this is {r['scenario']!r}, topology {kind}). Fix: remove topology.{k} from it.")
    # the chain's defaults are the paper's (topologies.chain.DEFAULTS): 10 Mb/s hops, 8-packet queues
    base = TOPOLOGY_DEFAULTS if kind == "dumbbell" else CHAIN_BASE
    # {**a, **b}: a key the section gives replaces the config's (dict(a, **b, **c) raised TypeError on it)
    topo = {k: v for k, v in {**base, **cfg["topology"], **sec.get("topology", {})}.items() if k not in other}
    for level, name in ((sec, "section"), (cfg, "config")):
        if "bottlenecks" in level and any(k in level.get("topology", {}) for k in ("bottleneck_mbps", "buffer_pkts")):
            problems.append(f"{where}: this {name} gives both topology.bottleneck_mbps/buffer_pkts and bottlenecks. "
                            f"Fix: keep one: bottlenecks is the axis, the topology's pair is one value of it.")
    if "bottlenecks" in sec:
        entries = sec["bottlenecks"]
    elif any(k in sec.get("topology", {}) for k in ("bottleneck_mbps", "buffer_pkts")) or "bottlenecks" not in cfg:
        pair = {k: topo[k] for k in BOTTLENECK_KEYS if k in topo}
        if "bottleneck_mbps" not in pair or "buffer_pkts" not in pair:
            problems.append(f"{where}: no bottleneck: topology needs bottleneck_mbps and buffer_pkts, or give "
                            f"bottlenecks. Fix: add topology.bottleneck_mbps and topology.buffer_pkts, or "
                            f"bottlenecks: [{{bottleneck_mbps: 10, buffer_pkts: 8}}].")
            pair = {}
        entries = [pair] if pair else []
    else:
        entries = cfg["bottlenecks"]
    r["bottlenecks"] = []
    for i, e in enumerate(entries):
        b = dict(e)
        b.setdefault("reverse_buffer_pkts", b["buffer_pkts"])
        b.setdefault("access_mbps", topo.get("access_mbps"))
        at = (f"{prefix}bottlenecks[{i}]" if "bottlenecks" in sec else f"bottlenecks[{i}]" if "bottlenecks" in cfg
              else f"{prefix}topology" if "bottleneck_mbps" in sec.get("topology", {}) else "topology")
        if b["access_mbps"] is None:
            problems.append(f"{where}: bottleneck {i}: no access_mbps. Fix: add topology.access_mbps, or "
                            f"access_mbps to that bottleneck.")
        elif b["access_mbps"] < b["bottleneck_mbps"]:
            problems.append(f"{source}: {at}: access_mbps ({b['access_mbps']:g}) is below bottleneck_mbps "
                            f"({b['bottleneck_mbps']:g}): the access links, not the AQM's queue, would be the "
                            f"bottleneck, and the runner's rate probe would find every run below its rate. Fix: "
                            f"raise access_mbps to at least bottleneck_mbps (the paper: 100 for 10).")
        r["bottlenecks"].append(b)
    r["topology"] = {k: v for k, v in topo.items() if k not in BOTTLENECK_KEYS}
    sizes = sec.get("sizes", cfg["sizes"])
    r["sizes"] = [dict(s) for s in (sizes if isinstance(sizes, list) else [sizes])]
    for s in r["sizes"]:
        for key in SIZE_NEEDS[s["distribution"]]:
            if key not in s:
                problems.append(f"{where}: sizes: distribution {s['distribution']!r} needs {key!r}. "
                                f"Fix: add sizes.{key}.")
    r["cc"] = list(sec.get("cc", cfg.get("cc", [TCP_PROFILES[r["tcp_profile"]]["congestion_control"]])))
    for c in r["cc"]:
        if c not in KNOWN_CC:
            problems.append(f"{where}: cc {c!r} is not a Linux congestion control. Fix: use one of "
                            f"{', '.join(KNOWN_CC)}.")
    r["workload"] = {"kind": SCENARIOS[r["scenario"]]["workload"]}
    if r["workload"]["kind"] == "reference":
        r["workload"].update(REFERENCE_DEFAULTS, **cfg.get("reference", {}), **sec.get("reference", {}))
        _chain_problems(r, sec, cfg, where, problems)
    elif "reference" in sec or ("reference" in cfg and not cfg.get("sections")):
        problems.append(f"{where}: reference is for scenario 'chain' (this is {r['scenario']!r}). "
                        f"Fix: remove it, or set scenario: chain.")
    if r["workload"]["kind"] == "persistent":
        r["workload"].update(PERSISTENT_DEFAULTS, **cfg.get("persistent", {}), **sec.get("persistent", {}))
        if r["workload"]["start_s"] >= r["duration_s"]:
            problems.append(f"{where}: persistent.start_s ({r['workload']['start_s']}) must be below duration_s "
                            f"({r['duration_s']}): the persistent flows run from then to the end of the traffic. "
                            f"Fix: lower persistent.start_s or raise duration_s.")
    elif "persistent" in sec or ("persistent" in cfg and not cfg.get("sections")):
        problems.append(f"{where}: persistent is for scenario 'persistent' (this is {r['scenario']!r}). "
                        f"Fix: remove it, or set scenario: persistent.")
    r["synflood"] = dict(SYNFLOOD_DEFAULTS, **cfg.get("synflood", {}), **sec.get("synflood", {}))
    _synflood_problems(r, where, problems)
    spoof_at = f"{prefix}synflood.spoof" if "spoof" in sec.get("synflood", {}) and prefix else "synflood.spoof"
    problems += [f"{source}: {spoof_at}: {why}" for why in spoof_problems(r["synflood"]["spoof"])]
    if r["warmup_s"] >= r["duration_s"]:
        problems.append(f"{where}: warmup_s ({r['warmup_s']}) must be below duration_s "
                        f"({r['duration_s']}). Fix: lower warmup_s or raise duration_s.")
    _schedule_problems(r, sec, cfg, source, prefix, problems)
    return r


def _synflood_problems(r: dict, where: str, problems: list) -> None:
    """The flood needs the dumbbell (an attacker among the left hosts, a target among the right ones)."""
    f = r["synflood"]
    if not any(f["rates_x"]):
        return
    if SCENARIOS[r["scenario"]]["topology"] != "dumbbell":
        problems.append(f"{where}: synflood is for the dumbbell's scenarios (this is {r['scenario']!r}). "
                        f"Fix: remove synflood.rates_x, or use scenario dumbbell or persistent.")
        return
    from topologies import dumbbell
    left, right = dumbbell.HOSTS[:3], dumbbell.HOSTS[3:]
    if f["attacker"] not in left:
        problems.append(f"{where}: synflood.attacker {f['attacker']!r} is not a left host. Fix: use one of "
                        f"{', '.join(left)}.")
    if f["target"] not in right:
        problems.append(f"{where}: synflood.target {f['target']!r} is not a right host. Fix: use one of "
                        f"{', '.join(right)}.")


def spoof_problems(spoof: str) -> list[str]:
    """What is wrong with a flood's spoofed source prefix (each with its fix): it must be an IPv4 network
    (tcpdump's `not net` filter refuses host bits; favorflow synflood draws IPv4 sources) that no host of the
    topology uses and that a router forwards (no loopback, multicast, reserved or 0.0.0.0/8 sources)."""
    from topologies import dumbbell
    fix = f"Fix: an IPv4 prefix outside the topology's addresses, e.g. {SYNFLOOD_DEFAULTS['spoof']}."
    try:
        net = ipaddress.ip_network(spoof, strict=True)
    except ValueError as e:
        return [f"{spoof!r} is not an IPv4 network prefix ({e}). {fix}"]
    if net.version != 4:
        return [f"{spoof!r} is IPv6; the flood and the topology are IPv4. {fix}"]
    out = [f"{spoof} overlaps the topology's {name} subnet {sub}: the flood's sources would be its hosts. {fix}"
           for name, sub in dumbbell.addresses()["subnets"].items() if net.overlaps(ipaddress.ip_network(sub))]
    unroutable = [n for n in ("0.0.0.0/8", "127.0.0.0/8", "224.0.0.0/4", "240.0.0.0/4")
                  if net.overlaps(ipaddress.ip_network(n))]
    if unroutable:
        out.append(f"{spoof} overlaps {', '.join(unroutable)}, sources a router drops as martians. {fix}")
    return out


# At most this many flows in one schedule: the generator holds every flow in memory and each host's flow
# client replays its share from one process in the guest; the paper's largest schedules (500 s at 100 Mb/s,
# load 0.95) hold about 130 000.
MAX_FLOWS = 1_000_000


def _schedule_problems(r: dict, sec: dict, cfg: dict, source: str, prefix: str, problems: list) -> None:
    """The section's loads, reverse load, sizes and duration as workloads.schedule checks them (its own
    functions, so a config that validates makes its schedules), each told at its key's path."""
    from workloads import reference, schedule
    before = len(problems)

    def path(key):
        return f"{prefix}{key}" if prefix and key in sec else key
    closed = SCENARIOS[r["scenario"]]["topology"] in schedule.CLOSED_LOOP
    given = sec.get("sizes", cfg["sizes"])
    parsed = []
    for i, s in enumerate(r["sizes"]):
        at = f"{path('sizes')}[{i}]" if isinstance(given, list) else path("sizes")
        if any(k not in s for k in SIZE_NEEDS[s["distribution"]]) or \
                (closed and s["distribution"] not in REFERENCE_SIZES):
            continue       # told above
        try:
            sizes = schedule.parse_sizes(sizes_arg(s))
            if closed:
                reference.parse_sizes(sizes_arg(s))
            mean = sizes.mean_pkts_effective        # what the generator divides the load by
            if not (math.isfinite(mean) and mean >= 1):
                raise ValueError(f"its mean flow length E[L] comes out as {mean!r} packets")
        except (ValueError, ArithmeticError) as e:
            why = e if isinstance(e, ValueError) else \
                f"its mean flow length E[L] cannot be computed ({type(e).__name__}: {e})"
            problems.append(f"{source}: {at}: the schedule generator cannot use "
                            f"{json.dumps(s)}: {why}. Fix: change those parameters (shape "
                            f"above 1 and moderate, mean_pkts above 0, max_pkts above mean_pkts).")
            continue
        parsed.append(sizes)
    if closed:
        return
    for i, load in enumerate(r["loads"]):
        try:
            schedule.check_load(load)
        except ValueError as e:
            problems.append(f"{source}: {path('loads')}[{i}]: {e}. Fix: a load above 0 and below 1, e.g. 0.95 "
                            f"(at 1 or more the offered flows outgrow the link and the queue never drains).")
    try:
        schedule.check_reverse_load(r["reverse_load"])
    except ValueError as e:
        problems.append(f"{source}: {path('reverse_load')}: {e}. Fix: a reverse load of 0 or more, below 1 "
                        f"(the paper: 0.1).")
    for b in r["bottlenecks"]:
        try:
            schedule.check_duration(b["bottleneck_mbps"], r["duration_s"])
        except ValueError as e:
            problems.append(f"{source}: {path('duration_s')}: {e}. Fix: a positive, finite duration_s.")
    if len(problems) > before:
        return
    for b in r["bottlenecks"]:
        for sizes in parsed:
            load = max(r["loads"])
            n = sum(schedule.expected_flows(x, b["bottleneck_mbps"], r["duration_s"], sizes)
                    for x in (load, r["reverse_load"]))
            if n > MAX_FLOWS:
                problems.append(
                    f"{source}: {path('duration_s')}: {r['duration_s']:g} s at {b['bottleneck_mbps']:g} Mb/s, load "
                    f"{load:g} and {sizes.spec()} makes about {n:,.0f} flows in one schedule, above the "
                    f"{MAX_FLOWS:,} the generator and the flow clients are sized for. Fix: shorten duration_s "
                    f"and add replications instead.")
                return


def _delay_line_warnings(sec: dict) -> list[str]:
    """The dumbbell's propagation delay is a netem queue on the bridge port towards each host (twice its
    one-way delay), holding at most topologies.dumbbell.NETEM_LIMIT packets: at a high rate and a long delay,
    traffic to one host can fill it, and packets are then lost there instead of at the AQM. Allowed (the
    traffic is spread over the hosts), but said."""
    if SCENARIOS[sec["scenario"]]["topology"] != "dumbbell":
        return []
    from topologies import dumbbell
    d = max(sec["topology"]["left_delays_ms"] + sec["topology"]["right_delays_ms"])
    out = []
    for b in sec["bottlenecks"]:
        pkts = b["bottleneck_mbps"] * 1e6 / 8 / 1500 * 2 * d / 1000
        if pkts > dumbbell.NETEM_LIMIT:
            out.append(f"at {b['bottleneck_mbps']:g} Mb/s, the {2 * d:g} ms delay towards one host holds up to "
                       f"{pkts:,.0f} packets, above the {dumbbell.NETEM_LIMIT} its netem queue takes: if that host "
                       f"receives at the full rate, packets are lost there, not at the AQM (lower the delays or "
                       f"the rate to stay within it).")
    return out


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


def _chain_problems(r: dict, sec: dict, cfg: dict, where: str, problems: list) -> None:
    """What a chain section must not say: the reference user is closed loop (no load, no reverse load: the
    run's load is 0), its sizes are the reference user's, and the topology must be a chain the builder
    makes (every bottleneck entry is tried)."""
    from topologies.dumbbell import TopologyError
    for key in ("loads", "reverse_load"):
        if key in sec and cfg.get("sections"):
            problems.append(f"{where}: {key} has no meaning for scenario 'chain': the reference user is closed "
                            f"loop (one flow at a time, the next after a think time) and the cross traffic is "
                            f"long-lived. Fix: remove {key} from this section.")
    r["loads"], r["reverse_load"] = [0.0], 0.0
    for s in r["sizes"]:
        if s["distribution"] not in REFERENCE_SIZES:
            problems.append(f"{where}: sizes: the chain's reference user (workloads.reference) draws "
                            f"{', '.join(REFERENCE_SIZES)}, not {s['distribution']!r}. Fix: use one of those.")
    w = r["workload"]["warmup_cross_s"]
    if not (isinstance(w, (int, float)) and not isinstance(w, bool) and w >= 0):
        problems.append(f"{where}: reference.warmup_cross_s={w!r}: seconds >= 0. Fix: e.g. 10.")
    for i, b in enumerate(r["bottlenecks"]):
        try:
            chain_topology(dict(r["topology"], **b))
        except TopologyError as e:
            problems.append(f"{where}: bottleneck {i}: {e}. (scenario chain: topologies/README.md, 'Chain'; "
                            f"bottleneck_mbps is the hop rate, buffer_pkts the DropTail hops' queue.) "
                            f"Fix: change that value.")


def _p4_problems(sec: dict, name: str, entry: dict) -> list[str]:
    """A P4 entry's arguments, checked with every bottleneck of the section before any run."""
    from p4 import control as p4control
    out = []
    for b in sec["bottlenecks"]:
        try:
            p4control.parse_args(_aqm_args(entry["forward"]["args"], dict(sec["topology"], **b)))
        except p4control.P4ConfigError as e:
            out.append(f"{sec['where']}: aqm {name!r} (config/aqms.yaml): {e}")
    return out


def _collisions(cfg: dict, source: str) -> list[str]:
    """Two sections may name the same run (it is made once) only with the same settings, and runs that
    share a schedule must agree on what makes it."""
    out, specs, scheds, named = [], {}, {}, {}
    for run in _all_runs(cfg):
        first = named.setdefault(run.run_id, run)
        if first != run:
            # Run equality ignores the section: these are two runs of the matrix under one name
            diff = [f"{f} {getattr(first, f)!r} and {getattr(run, f)!r}"
                    for f in ("load", "bottleneck_mbps", "sizes", "flood_x") if getattr(first, f) != getattr(run, f)]
            out.append(f"{source}: two runs are both named {run.run_id} ({'; '.join(diff)}): a run id writes the "
                       f"load with two decimals and rates, sizes and flood rates with six significant digits. "
                       f"Fix: make those values differ in what the run id shows (e.g. loads 0.50 and 0.51).")
            continue
        spec = run_spec(cfg, run)
        sched = schedule_params(cfg, run)
        for table, key, value in ((specs, run.run_id, spec), (scheds, run.schedule_id, sched)):
            if key not in table:
                table[key] = (value, run.section)
                continue
            first, where = table[key]
            diff = sorted(k for k in set(first) | set(value) if first.get(k) != value.get(k))
            if diff:
                what = "run" if table is specs else "schedule"
                out.append(f"{source}: sections {where!r} and {run.section!r} both make the {what} {key} "
                           f"with different {', '.join(diff)}. Fix: give them the same {', '.join(diff)}, or "
                           f"make them differ in an axis (bottleneck, buffer, sizes, cc, IW, load).")
    if out:
        return sorted(set(out))
    # What the testbed and the schedule generator would refuse, from their own checks: the checks above are
    # meant to catch it first, at its key; this is the guarantee that a config which validates can run.
    from contract import spec as runner_spec
    from workloads import schedule
    for run_id, (spec, _) in specs.items():
        try:
            runner_spec.validate(spec)
        except runner_spec.SpecError as e:
            out.append(f"{source}: run {run_id}: the testbed's runner would refuse it: {e}. Fix: change the "
                       f"config value behind that field.")
    for sched_id, (p, _) in scheds.items():
        try:
            schedule.check_args(p["load"], p["capacity_mbps"], p["duration"], p["seed"], p["reverse_load"],
                                schedule.DEFAULT_MSS, p["topology"])
            schedule.parse_sizes(p["sizes"])
        except ValueError as e:
            out.append(f"{source}: schedule {sched_id}: workloads.schedule would refuse it: {e}. Fix: change the "
                       f"config value behind that argument.")
    return sorted(set(out))


# ------------------------------------------------------------------ the testbed pool

def _testbed_defaults(schema: dict) -> dict:
    props = schema["properties"]["testbed"]["properties"]
    return {k: v["default"] for k, v in props.items() if "default" in v}


def _pool_problems(tb: dict, source: str) -> list[str]:
    p = []
    if tb["kind"] == "local-vm":
        for key in ("inventory", "host", "hosts", "group"):
            if key in tb:
                p.append(f"{source}: testbed.{key} is for kind 'ssh' (hosts of an inventory); kind 'local-vm' "
                         f"runs QEMU guests on this machine. Fix: remove testbed.{key}, or set kind: ssh.")
        return p
    if "count" in tb:
        p.append(f"{source}: testbed.count is for kind 'local-vm'; an ssh pool is the hosts it names. Fix: "
                 f"remove count and list the hosts (testbed.hosts: [node0, node1]) or name an inventory "
                 f"group (testbed.group: ssh_hosts).")
    if "inventory" not in tb:
        p.append(f"{source}: testbed: kind 'ssh' needs 'inventory'. Fix: add testbed.inventory "
                 f"(see ansible/inventories/ssh-hosts/).")
    elif not inventory_path(tb["inventory"]).exists():
        p.append(f"{source}: testbed.inventory {tb['inventory']!r} does not exist. "
                 f"Fix: point it at an inventory file.")
    given = [k for k in ("host", "hosts", "group") if k in tb]
    if not given:
        p.append(f"{source}: testbed: kind 'ssh' needs 'host' (one host), 'hosts' (a list) or 'group' "
                 f"(an inventory group). Fix: add testbed.host: node0, testbed.hosts: [node0, node1] or "
                 f"testbed.group: ssh_hosts.")
    elif len(given) > 1:
        p.append(f"{source}: testbed has {' and '.join(given)}: name the hosts one way. Fix: keep one of "
                 f"host, hosts, group.")
    return p


def inventory_path(inv: str) -> Path:
    """A config's inventory path: relative to the repository (as the shipped examples are), else as given."""
    p = Path(inv).expanduser()
    return p if p.is_absolute() or not (REPO / p).exists() else REPO / p


def inventory_groups(inv: Path) -> dict:
    """`ansible-inventory --list` of an inventory: {group: {"hosts": [...], "children": [...]}, ...}."""
    import subprocess
    exe = Path(sys.executable).parent / "ansible-inventory"
    out = subprocess.run([str(exe) if exe.exists() else "ansible-inventory", "-i", str(inv), "--list"],
                         capture_output=True, text=True, cwd=REPO / "ansible", stdin=subprocess.DEVNULL)
    if out.returncode != 0:
        raise ConfigError(f"testbed.inventory {inv}: ansible-inventory cannot read it: "
                          f"{out.stderr.strip()[-500:]}. Fix: correct the inventory file.")
    return json.loads(out.stdout)


def group_hosts(groups: dict, group: str) -> list[str]:
    """Every host of a group and of its child groups, each once, in the order ansible-inventory lists them."""
    seen, out = set(), []

    def walk(g):
        if g in seen:
            return
        seen.add(g)
        for h in groups.get(g, {}).get("hosts", []):
            if h not in out:
                out.append(h)
        for c in groups.get(g, {}).get("children", []):
            walk(c)
    walk(group)
    return out


def expand_pool(tb: dict, defaults: dict, source: str = "config", warn=None) -> dict:
    """The testbed section -> {"members": [member, ...], "size": N, "retries": R}; each member is a dict
    orchestrate.testbeds takes (kind, vm_name or inventory + host, keep_running, p4) with its id
    (orchestrate/pool.py: the VM name, or host@<inventory path hash>). defaults: the schema's testbed
    defaults, from the schema validate has already read."""
    common = {"keep_running": tb.get("keep_running", defaults["keep_running"])}
    if tb.get("p4"):
        common["p4"] = True
    if tb["kind"] == "local-vm":
        rule = pool.default_vm_count()
        count = tb.get("count", rule)
        if count > rule and warn:
            warn(f"{source}: testbed.count {count} is above this machine's {rule} (one guest per "
                 f"{pool.CORES_PER_GUEST} of its {os.cpu_count()} cores): the guests will share CPU, which "
                 f"slows every run, and the fidelity checks (CPU, start lateness) may reject runs.")
        members = [dict(common, id=n, kind="local-vm", vm_name=n) for n in pool.vm_names(tb["vm_name"], count)]
    else:
        inv = inventory_path(tb["inventory"])
        groups = inventory_groups(inv)
        known = group_hosts(groups, "all")
        if "group" in tb:
            if tb["group"] not in groups:
                raise ConfigError(f"{source}: testbed.group {tb['group']!r} is not a group of {tb['inventory']} "
                                  f"(it has {', '.join(sorted(g for g in groups if g != '_meta'))}). Fix: "
                                  f"name one of those.")
            hosts = group_hosts(groups, tb["group"])
            if not hosts:
                raise ConfigError(f"{source}: testbed.group {tb['group']!r} of {tb['inventory']} has no hosts. "
                                  f"Fix: add hosts to it, or name another group.")
        else:
            hosts = tb["hosts"] if "hosts" in tb else [tb["host"]]
            missing = [h for h in hosts if h not in known]
            if missing:
                raise ConfigError(f"{source}: testbed: {', '.join(missing)} not in {tb['inventory']} (its hosts: "
                                  f"{', '.join(known) or 'none'}). Fix: name hosts of that inventory.")
        members = [dict(common, id=pool.ssh_member_id(h, inv), kind="ssh", inventory=str(inv), host=h)
                   for h in hosts]
    return {"members": members, "size": len(members), "retries": tb.get("retries", defaults["retries"])}


# The testbed keys that change a measurement: a run in the local TCG guest and one on a real host differ in
# CPU and timer precision, so moving a config between them redoes its runs. Which guest or host (vm_name,
# host, hosts, group, inventory), the pool's size, whether guests stay up (keep_running) and the derived P4
# toolchain flag (the run spec's aqm already says P4) are not part of an experiment.
TESTBED_EXPERIMENT_KEYS = ("kind",)


def testbed_param(cfg: dict) -> dict:
    """The run rule's `testbed` parameter: Snakemake redoes a run whose params changed (--rerun-triggers
    params), so it holds only the testbed keys that change what a run measures."""
    return {k: v for k, v in cfg["testbed"].items() if k in TESTBED_EXPERIMENT_KEYS}


def _warn(msg: str) -> None:
    print(f"favorlab: warning: {msg}", file=sys.stderr, flush=True)


def load(path: str | Path, warn=None) -> dict:
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such config file. Fix: pick one of config/smoke.yaml, "
                          f"config/quick.yaml, config/paper.yaml or write your own.")
    try:
        with open(path) as f:
            raw = yaml.safe_load(f)
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from e
    return validate(raw, str(path), warn=warn)


def _all_runs(cfg: dict) -> list[Run]:
    """Every section's runs, a run named by two sections twice (each with its section)."""
    out = []
    for sec in cfg["matrix"]:
        for bi, b in enumerate(sec["bottlenecks"]):
            for sizes in sec["sizes"]:
                for cc in sec["cc"]:
                    out += [Run(cfg["name"], sec["scenario"], aqm, float(load), int(iw), rep,
                                float(b["bottleneck_mbps"]), int(b["buffer_pkts"]), tuple(sorted(sizes.items())),
                                sec["tcp_profile"], cc, flood_x=float(fx), section=sec["name"], bottleneck=bi)
                            for fx in sec["synflood"]["rates_x"]
                            for load in sec["loads"] for iw in sec["iw"] for rep in range(sec["replications"])
                            for aqm in sec["aqms"]]
    return out


def runs(cfg: dict) -> list[Run]:
    """The config's runs, each once (the first section that names it gives its settings: validate has
    checked that the others agree)."""
    seen, out = set(), []
    for r in _all_runs(cfg):
        if r not in seen:
            seen.add(r)
            out.append(r)
    return out


def section_of(cfg: dict, run: Run) -> dict:
    return next(s for s in cfg["matrix"] if s["name"] == run.section)


def run_topology(cfg: dict, run: Run) -> dict:
    """The run's topology: the section's, with the run's bottleneck (a chain's: validated, defaults filled in)."""
    sec = section_of(cfg, run)
    topo = dict(sec["topology"], **sec["bottlenecks"][run.bottleneck])
    return chain_topology(topo) if SCENARIOS[run.scenario]["topology"] == "chain" else topo


def schedule_seed(cfg: dict, run: Run) -> int:
    """A seed per (load, replication), derived from the config's seed: stable and independent of AQM/IW.
    The chain's runs have load 0, so theirs is per replication: the reference user's seed (run.json's
    seed), the same for DropTail and FaQ."""
    h = hashlib.sha256(f"{cfg['seed']}|{run.load:.4f}|{run.replication}".encode()).digest()
    return int.from_bytes(h[:4], "big")


def schedule_params(cfg: dict, run: Run) -> dict:
    """What `python -m workloads.schedule` makes the run's schedule from (schedule_args)."""
    sec = section_of(cfg, run)
    return {"load": run.load, "capacity_mbps": run.bottleneck_mbps, "duration": sec["duration_s"],
            "seed": schedule_seed(cfg, run), "sizes": sizes_arg(dict(run.sizes)),
            "reverse_load": sec["reverse_load"], "topology": SCENARIOS[run.scenario]["topology"]}


def schedule_args(cfg: dict, run: Run) -> list[str]:
    """The command-line arguments of `python -m workloads.schedule` for the run's schedule (without --out)."""
    p = schedule_params(cfg, run)
    return ["--load", str(p["load"]), "--capacity-mbps", f"{p['capacity_mbps']:g}", "--duration", f"{p['duration']:g}",
            "--seed", str(p["seed"]), "--sizes", p["sizes"], "--reverse-load", f"{p['reverse_load']:g}",
            "--topology", p["topology"]]


def _aqm_args(args: list, topo: dict, tcp: dict | None = None) -> list[str]:
    """An entry's tc arguments with the fields of config/aqms.yaml filled in from the run's topology and TCP
    profile."""
    b = topo["buffer_pkts"]
    mtu = topo.get("mtu", TOPOLOGY_DEFAULTS["mtu"])
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
    entry = load_aqms()[name]
    return {"name": name, "paper_name": entry.get("paper_name", name),
            "forward": {"kind": entry["forward"]["kind"], "args": _aqm_args(entry["forward"]["args"], topo, tcp)},
            "reverse": {"kind": entry["reverse"]["kind"], "args": _aqm_args(entry["reverse"]["args"], topo, tcp)}}


def run_spec(cfg: dict, run: Run) -> dict:
    """The resolved run.json of docs/contracts.md for one run."""
    sec = section_of(cfg, run)
    topo = dict(run_topology(cfg, run), kind=SCENARIOS[run.scenario]["topology"])
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
        "schedule": "schedule.csv",
        "workload": sec["workload"],
        "sizes": dict(run.sizes),
        "capture": {"snaplen": sec["capture"]["snaplen"], "points": _capture_points(topo)},
        "trace_favor": bool(sec["trace_favor"]),
        "workload_impl": cfg["workload_impl"],
        "fidelity": sec["fidelity"],
        "flood": _flood_spec(sec, run),
    }


def _flood_spec(sec: dict, run: Run) -> dict | None:
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


def sizes_arg(sizes: dict) -> str:
    """The --sizes argument of `python -m workloads.schedule` for a config's size distribution."""
    params = ",".join(f"{k}={v}" for k, v in sizes.items() if k != "distribution")
    return f"{sizes['distribution']}:{params}" if params else sizes["distribution"]


def main(argv=None) -> int:
    """python -m orchestrate.experiment CONFIG            validate, list the run ids
       python -m orchestrate.experiment pool-size CONFIG  the number of testbeds (./favorlab's --resources)
       python -m orchestrate.experiment plan CONFIG       projected wall time with its pool, 1, 10 and 50
                                                              testbeds (orchestrate/plan.py)"""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["plan"] and len(argv) == 2:
        try:
            c = load(argv[1], warn=lambda m: None)
        except ConfigError as e:
            print(str(e), file=sys.stderr)
            return 2
        sizes = sorted({c["pool"]["size"], 1, 10, 50})
        traffic = [(lambda sec: sec["duration_s"] + sec["drain_s"])(section_of(c, r)) for r in runs(c)]
        _, lines = plan.project(traffic, c["testbed"]["kind"], sizes, REPO / "results")
        print("\n".join(lines) + f"\nplan: this config's pool: {c['pool']['size']} testbed(s)")
        return 0
    if argv[:1] == ["pool-size"] and len(argv) == 2:
        try:
            c = load(argv[1], warn=lambda m: None)   # Snakemake says it once when it loads the config
        except ConfigError as e:
            print(str(e), file=sys.stderr)
            return 2
        print(c["pool"]["size"])
        return 0
    if len(argv) != 1:
        print(main.__doc__, file=sys.stderr)
        return 2
    try:
        c = load(argv[0])
    except ConfigError as e:
        print(str(e), file=sys.stderr)
        return 2
    for r in runs(c):
        print(r.run_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
