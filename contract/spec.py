"""The run spec (run.json, docs/contracts.md "Run spec"): the defaults the host runner applies to keys a
spec may leave out, the fidelity thresholds, and the validator, whose every error names the field and the fix."""
from __future__ import annotations

import json
from pathlib import Path

from contract import rundir

# A spec's `fidelity` thresholds when it names none: an idle RTT may differ from the configured one by this
# many ms (plus 2 % of it), and the bottleneck rate probe must read at least this share of the configured rate.
# The config module fills a spec's `fidelity` from here; the runner falls back on it for a spec without one.
FIDELITY_DEFAULTS = {"rtt_tolerance_ms": 3.0, "rate_min_share": 0.90}
# keys of run.json the runner reads with a default when they are absent
DEFAULTS = {"schedule": rundir.SCHEDULE, "workload": {"kind": "web"}, "workload_impl": "python"}


class SpecError(ValueError):
    """run.json cannot be run: the message names the field."""


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check(spec: dict, path: str, ok, fix: str) -> None:
    cur = spec
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            raise SpecError(f"run.json: field {path} is missing ({fix})")
        cur = cur[part]
    if not ok(cur):
        raise SpecError(f"run.json: field {path}={cur!r} is invalid: {fix}")


# topology kinds the runner builds (testbed.runner.network's TOPOLOGIES maps each to its module)
KINDS = ("dumbbell", "chain")
# the workload kind each topology runs: the chain has no open-loop schedule, only its reference user
WORKLOADS = {"dumbbell": ("web", "persistent"), "chain": ("reference",)}

RULES = [
    ("run_id", lambda v: isinstance(v, str) and v and "/" not in v, "a non-empty name without '/'"),
    ("topology.kind", lambda v: v in KINDS, f"one of {', '.join(KINDS)}"),
    ("topology.bottleneck_mbps", lambda v: _num(v) and v > 0, "a positive rate in Mb/s"),
    ("topology.access_mbps", lambda v: _num(v) and v > 0, "a positive rate in Mb/s"),
    ("aqm.forward.kind", lambda v: isinstance(v, str) and v.isidentifier(), "a tc qdisc kind, e.g. pfifo"),
    ("aqm.forward.args", lambda v: isinstance(v, list), "a list of tc arguments, e.g. [limit, 8]"),
    ("aqm.reverse.kind", lambda v: isinstance(v, str) and v.isidentifier(), "a tc qdisc kind, e.g. pfifo"),
    ("aqm.reverse.args", lambda v: isinstance(v, list), "a list of tc arguments"),
    ("tcp.profile", lambda v: v in ("paper", "linux"), "'paper' or 'linux'"),
    ("tcp.iw", lambda v: isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 100,
     "an initial window in segments, 1..100"),
    ("tcp.congestion_control", lambda v: isinstance(v, str) and v.isidentifier(), "e.g. reno or cubic"),
    ("duration_s", lambda v: _num(v) and v > 0, "a positive number of seconds"),
    ("drain_s", lambda v: _num(v) and v >= 0, "a non-negative number of seconds"),
    ("capture.snaplen", lambda v: isinstance(v, int) and 64 <= v <= 65535, "an integer 64..65535"),
    ("seed", lambda v: isinstance(v, int), "an integer"),
]
DUMBBELL_RULES = [
    ("topology.left_delays_ms", lambda v: isinstance(v, list) and len(v) == 3, "three one-way delays (ms)"),
    ("topology.right_delays_ms", lambda v: isinstance(v, list) and len(v) == 3, "three one-way delays (ms)"),
]


def validate(spec: dict) -> dict:
    if not isinstance(spec, dict):
        raise SpecError("run.json: the top level must be an object")
    for path, ok, fix in RULES:
        _check(spec, path, ok, fix)
    kind = spec["topology"]["kind"]
    w = spec.get("workload", DEFAULTS["workload"])
    if isinstance(w, dict) and w.get("kind") in ("web", "persistent", "reference") and w["kind"] not in WORKLOADS[kind]:
        raise SpecError(f"run.json: field topology.kind={kind!r} does not run workload.kind={w['kind']!r}: "
                        f"a {kind} runs {' or '.join(WORKLOADS[kind])} (absent workload means web)")
    if kind == "dumbbell":
        for path, ok, fix in DUMBBELL_RULES:
            _check(spec, path, ok, fix)
    else:
        from topologies import chain
        from topologies.dumbbell import TopologyError
        try:
            chain.validate(spec["topology"])
            chain.validate_aqm(spec["aqm"])
        except TopologyError as e:
            raise SpecError(f"run.json: field {e}") from None
    rto = spec["tcp"].get("initial_rto_ms")
    if rto is not None and not (_num(rto) and 200 <= rto <= 120000):
        raise SpecError(f"run.json: field tcp.initial_rto_ms={rto!r} is invalid: null or 200..120000 ms")
    if spec.get("workload_impl", DEFAULTS["workload_impl"]) not in ("python", "go"):
        raise SpecError(f"run.json: field workload_impl={spec['workload_impl']!r} is invalid: python or go")
    if not isinstance(w, dict) or w.get("kind") not in ("web", "persistent", "reference"):
        raise SpecError(f"run.json: field workload={w!r} is invalid: {{kind: web}}, {{kind: persistent, "
                        f"flows: N, start_s: S}} or {{kind: reference, warmup_cross_s: S}}")
    if w["kind"] == "reference":
        if not (_num(w.get("warmup_cross_s")) and w["warmup_cross_s"] >= 0):
            raise SpecError(f"run.json: field workload.warmup_cross_s={w.get('warmup_cross_s')!r} is invalid: "
                            f"seconds >= 0 the cross traffic starts before t0")
        d = spec.get("sizes", {}).get("distribution")
        if d not in ("pareto", "lomax", "exponential"):
            raise SpecError(f"run.json: field sizes.distribution={d!r} is invalid: the reference user draws "
                            f"pareto, lomax or exponential")
    if w["kind"] == "persistent":
        if not (isinstance(w.get("flows"), int) and w["flows"] >= 1):
            raise SpecError(f"run.json: field workload.flows={w.get('flows')!r} is invalid: persistent flows, 1 or more")
        if not (_num(w.get("start_s")) and 0 <= w["start_s"] < spec["duration_s"]):
            raise SpecError(f"run.json: field workload.start_s={w.get('start_s')!r} is invalid: seconds after t0, "
                            f"below duration_s")
    if "http" in w:
        c = w["http"].get("connections") if isinstance(w["http"], dict) else None
        if w["kind"] != "web" or not (isinstance(c, int) and 1 <= c <= 64):
            raise SpecError(f"run.json: field workload.http={w['http']!r} is invalid: {{connections: 1..64}}, "
                            f"under workload.kind web only (nginx and wrk in place of the schedule's replay)")
    if spec["topology"].get("central_delay_ms", 0) != 0:
        raise SpecError("run.json: field topology.central_delay_ms must be 0 (a central delay is not "
                        "supported yet; put it into the access delays)")
    return spec


def load(run_dir: Path) -> dict:
    p = Path(run_dir) / rundir.SPEC
    if not p.is_file():
        raise SpecError(f"{p} does not exist: the controller must put run.json into the run directory")
    try:
        spec = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise SpecError(f"{p} is not valid JSON: {e}") from None
    validate(spec)
    sched = Path(run_dir) / spec.get("schedule", DEFAULTS["schedule"])
    if not sched.is_file():
        raise SpecError(f"run.json: field schedule names {sched.name}, which is not in {run_dir}")
    return spec
