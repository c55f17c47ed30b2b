"""A config's sections resolved into the matrix's axes, and what each section must not say.

resolve_section gives every key of a section (its own, else the config's, else the default) and its axes as
lists; the checks here append each problem with its key's path and the fix, so a config is told all of them
at once. collisions checks the resolved matrix as a whole: runs and schedules two sections share, and every
run spec and schedule against the runner's and the generator's own checks.
"""
from __future__ import annotations

import ipaddress
import json
import math

from contract.sizes import format_sizes
from orchestrate import matrix, runspec, schema

# keys a section may give; the others (name, seed, testbed, attempts, workload_impl) are the pipeline's
SECTION_KEYS = ("scenario", "persistent", "reference", "synflood", "topology", "bottlenecks", "aqms", "loads", "reverse_load", "iw",
                "tcp_profile", "cc", "replications", "duration_s", "warmup_s", "drain_s", "sizes", "capture",
                "trace_favor", "fidelity")
# topology keys of one kind only: given by a section of the other kind they are an error, inherited from
# the config's top level they are left out (a config may hold dumbbell and chain sections)
DUMBBELL_TOPOLOGY_KEYS = ("left_delays_ms", "right_delays_ms", "central_delay_ms")
CHAIN_TOPOLOGY_KEYS = ("hops", "hop_delay_ms", "user_delay_ms", "cross_flows_per_hop", "cross_delays_ms", "aqm_hops")
# the chain's reference user draws these (workloads.reference.parse_sizes); bounded_pareto is not offered
REFERENCE_SIZES = ("pareto", "lomax", "exponential")
BOTTLENECK_KEYS = ("bottleneck_mbps", "buffer_pkts", "reverse_buffer_pkts", "access_mbps")
# Linux's congestion controls (net/ipv4/tcp_*.c): reno and cubic are built in, the others are modules the
# kernel loads when the runner sets net.ipv4.tcp_congestion_control (the guest's Debian 12 kernel ships every
# one of them as tcp_<name>.ko)
KNOWN_CC = ("reno", "cubic", "bbr", "bic", "cdg", "dctcp", "highspeed", "htcp", "hybla", "illinois", "lp", "nv",
            "scalable", "vegas", "veno", "westwood", "yeah")
SIZE_NEEDS = {"pareto": ["shape", "mean_pkts"], "lomax": ["shape", "mean_pkts"],
              "bounded_pareto": ["shape", "mean_pkts", "max_pkts"], "exponential": ["mean_pkts"]}


def resolve_section(cfg: dict, given: dict, sec: dict, where: str, problems: list, source: str = "config",
                    prefix: str = "") -> dict:
    """A section with every key given (its own, else the config's) and its axes as lists: bottlenecks
    (complete topology overrides), sizes, cc. Problems are appended, not raised, so all are told at once.
    cfg: the config with the schema's defaults filled in; given: the config as written, for what the
    config itself says (a default is no mistake). prefix: the section's path in the config ("sections[2].",
    or "" for a config without sections)."""
    r = {k: json.loads(json.dumps(sec.get(k, cfg.get(k)))) for k in SECTION_KEYS
         if k not in ("topology", "bottlenecks", "sizes", "cc", "capture", "fidelity", "persistent", "reference",
                      "synflood")}
    r.update(name=sec["name"], where=where, figures=sec.get("figures", []))
    r["capture"] = dict(cfg["capture"], **sec.get("capture", {}))
    r["fidelity"] = dict(cfg["fidelity"], **sec.get("fidelity", {}))
    kind = matrix.SCENARIOS[r["scenario"]]["topology"]
    own, other = (CHAIN_TOPOLOGY_KEYS, DUMBBELL_TOPOLOGY_KEYS) if kind == "chain" else \
        (DUMBBELL_TOPOLOGY_KEYS, CHAIN_TOPOLOGY_KEYS)
    # the section's own topology (or, without sections, the config's) is the one that must fit its kind
    mine = sec.get("topology", {}) if cfg.get("sections") else given.get("topology", {})
    for k in sorted(set(mine) & set(other)):
        problems.append(f"{where}: topology.{k} is for scenario {'chain' if kind != 'chain' else 'dumbbell or persistent'}"
                        f" (this is {r['scenario']!r}, topology {kind}). Fix: remove topology.{k} from it.")
    # the config's topology holds Table 1's defaults (the schema's); a chain keeps their rate, queue, access
    # links and MTU, which are the paper's Section 8 chain too. {**a, **b}: a key the section gives replaces
    # the config's (dict(a, **b) would raise TypeError on it)
    topo = {k: v for k, v in {**schema.defaults()["topology"], **cfg["topology"], **sec.get("topology", {})}.items()
            if k not in other}
    for level, name in ((sec, "section"), (given, "config")):
        if "bottlenecks" in level and any(k in level.get("topology", {}) for k in ("bottleneck_mbps", "buffer_pkts")):
            problems.append(f"{where}: this {name} gives both topology.bottleneck_mbps/buffer_pkts and bottlenecks. "
                            f"Fix: keep one: bottlenecks is the axis, the topology's pair is one value of it.")
    if "bottlenecks" in sec:
        entries = sec["bottlenecks"]
    elif any(k in sec.get("topology", {}) for k in ("bottleneck_mbps", "buffer_pkts")) or "bottlenecks" not in cfg:
        entries = [{k: topo[k] for k in BOTTLENECK_KEYS if k in topo}]
    else:
        entries = cfg["bottlenecks"]
    r["bottlenecks"] = []
    for i, e in enumerate(entries):
        b = dict(e)
        b.setdefault("reverse_buffer_pkts", b["buffer_pkts"])
        b.setdefault("access_mbps", topo["access_mbps"])
        at = (f"{prefix}bottlenecks[{i}]" if "bottlenecks" in sec else f"bottlenecks[{i}]" if "bottlenecks" in cfg
              else f"{prefix}topology" if "bottleneck_mbps" in sec.get("topology", {}) else "topology")
        if b["access_mbps"] < b["bottleneck_mbps"]:
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
    r["cc"] = list(sec.get("cc", cfg.get("cc", [runspec.TCP_PROFILES[r["tcp_profile"]]["congestion_control"]])))
    for c in r["cc"]:
        if c not in KNOWN_CC:
            problems.append(f"{where}: cc {c!r} is not a Linux congestion control. Fix: use one of "
                            f"{', '.join(KNOWN_CC)}.")
    r["workload"] = {"kind": matrix.SCENARIOS[r["scenario"]]["workload"]}
    if r["workload"]["kind"] == "reference":
        r["workload"].update(schema.defaults_of("reference"), **cfg.get("reference", {}), **sec.get("reference", {}))
        _chain_problems(r, sec, cfg, where, problems)
    elif "reference" in sec or ("reference" in given and not cfg.get("sections")):
        problems.append(f"{where}: reference is for scenario 'chain' (this is {r['scenario']!r}). "
                        f"Fix: remove it, or set scenario: chain.")
    if r["workload"]["kind"] == "persistent":
        r["workload"].update(schema.defaults_of("persistent"), **cfg.get("persistent", {}), **sec.get("persistent", {}))
        if r["workload"]["start_s"] >= r["duration_s"]:
            problems.append(f"{where}: persistent.start_s ({r['workload']['start_s']}) must be below duration_s "
                            f"({r['duration_s']}): the persistent flows run from then to the end of the traffic. "
                            f"Fix: lower persistent.start_s or raise duration_s.")
    elif "persistent" in sec or ("persistent" in given and not cfg.get("sections")):
        problems.append(f"{where}: persistent is for scenario 'persistent' (this is {r['scenario']!r}). "
                        f"Fix: remove it, or set scenario: persistent.")
    _http_workload(r, cfg, sec, where, problems)
    r["synflood"] = dict(cfg["synflood"], **sec.get("synflood", {}))
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
    if matrix.SCENARIOS[r["scenario"]]["topology"] != "dumbbell":
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
    fix = f"Fix: an IPv4 prefix outside the topology's addresses, e.g. {schema.defaults()['synflood']['spoof']}."
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
    """The section's loads, reverse load, sizes and duration as orchestrate.schedule checks them (its own
    functions, so a config that validates makes its schedules), each told at its key's path."""
    from orchestrate import schedule
    from workloads import reference
    before = len(problems)

    def path(key):
        return f"{prefix}{key}" if prefix and key in sec else key
    closed = matrix.SCENARIOS[r["scenario"]]["topology"] in schedule.CLOSED_LOOP
    given = sec.get("sizes", cfg["sizes"])
    parsed = []
    for i, s in enumerate(r["sizes"]):
        at = f"{path('sizes')}[{i}]" if isinstance(given, list) else path("sizes")
        if any(k not in s for k in SIZE_NEEDS[s["distribution"]]) or \
                (closed and s["distribution"] not in REFERENCE_SIZES):
            continue       # told above
        try:
            sizes = schedule.parse_sizes(format_sizes(s))
            if closed:
                reference.parse_sizes(format_sizes(s))
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


def delay_line_warnings(sec: dict) -> list[str]:
    """The dumbbell's propagation delay is a netem queue on the bridge port towards each host (twice its
    one-way delay), holding at most topologies.tc.NETEM_LIMIT packets: at a high rate and a long delay,
    traffic to one host can fill it, and packets are then lost there instead of at the AQM. Allowed (the
    traffic is spread over the hosts), but said."""
    if matrix.SCENARIOS[sec["scenario"]]["topology"] != "dumbbell":
        return []
    from topologies import tc
    d = max(sec["topology"]["left_delays_ms"] + sec["topology"]["right_delays_ms"])
    out = []
    for b in sec["bottlenecks"]:
        pkts = b["bottleneck_mbps"] * 1e6 / 8 / 1500 * 2 * d / 1000
        if pkts > tc.NETEM_LIMIT:
            out.append(f"at {b['bottleneck_mbps']:g} Mb/s, the {2 * d:g} ms delay towards one host holds up to "
                       f"{pkts:,.0f} packets, above the {tc.NETEM_LIMIT} its netem queue takes: if that host "
                       f"receives at the full rate, packets are lost there, not at the AQM (lower the delays or "
                       f"the rate to stay within it).")
    return out


def _http_workload(r: dict, cfg: dict, sec: dict, where: str, problems: list) -> None:
    """The config's workload.kind http into the run's workload (run.json's workload.http: the runner starts
    nginx and wrk instead of the flow servers and clients). The replay adds nothing, so the specs of the
    configs that do not ask for HTTP stay as they were."""
    w = cfg.get("workload") or schema.defaults_of("workload")
    if w["kind"] != "http":
        return
    if r["scenario"] != "dumbbell":
        problems.append(f"{where}: workload.kind http is for scenario 'dumbbell' (this is {r['scenario']!r}): "
                        f"the persistent and chain scenarios run their own long flows. Fix: set scenario: "
                        f"dumbbell, or remove workload.")
        return
    if any(float(x) for x in dict(cfg["synflood"], **sec.get("synflood", {}))["rates_x"]):
        problems.append(f"{where}: workload.kind http with a SYN flood: the flood targets the right hosts' flow "
                        f"server port, where nothing listens under HTTP (nginx is on the left hosts). Fix: "
                        f"synflood.rates_x: [0], or workload.kind replay.")
    r["workload"]["http"] = {"connections": int(w["connections"])}


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
            runspec.chain_topology(dict(r["topology"], **b))
        except TopologyError as e:
            problems.append(f"{where}: bottleneck {i}: {e}. (scenario chain: topologies/README.md, 'Chain'; "
                            f"bottleneck_mbps is the hop rate, buffer_pkts the DropTail hops' queue.) "
                            f"Fix: change that value.")


def p4_problems(sec: dict, name: str, entry: dict) -> list[str]:
    """A P4 entry's arguments, checked with every bottleneck of the section before any run."""
    from p4 import control as p4control
    out = []
    for b in sec["bottlenecks"]:
        try:
            p4control.parse_args(runspec.aqm_args(entry["forward"]["args"], dict(sec["topology"], **b)))
        except p4control.P4ConfigError as e:
            out.append(f"{sec['where']}: aqm {name!r} (config/aqms.yaml): {e}")
    return out


def collisions(cfg: dict, source: str) -> list[str]:
    """Two sections may name the same run (it is made once) only with the same settings, and runs that
    share a schedule must agree on what makes it."""
    out, specs, scheds, named = [], {}, {}, {}
    for run in matrix.all_points(cfg):
        first = named.setdefault(run.run_id, run)
        if first != run:
            # Point equality ignores the section: these are two runs of the matrix under one name
            diff = [f"{f} {getattr(first, f)!r} and {getattr(run, f)!r}"
                    for f in ("load", "bottleneck_mbps", "sizes", "flood_x") if getattr(first, f) != getattr(run, f)]
            out.append(f"{source}: two runs are both named {run.run_id} ({'; '.join(diff)}): a run id writes the "
                       f"load with two decimals and rates, sizes and flood rates with six significant digits. "
                       f"Fix: make those values differ in what the run id shows (e.g. loads 0.50 and 0.51).")
            continue
        spec = runspec.run_spec(cfg, run)
        sched = runspec.schedule_params(cfg, run)
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
    from orchestrate import schedule
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
            out.append(f"{source}: schedule {sched_id}: the schedule generator (orchestrate.schedule) would refuse "
                       f"it: {e}. Fix: change the config value behind that argument.")
    return sorted(set(out))

