"""The config module: reading a config file (config/*.yaml), validating it, and its command line.

The Snakefile and the controller read configs only through read_config and validate. A config is refused
before any run starts, with a message that names the key by its path, what is wrong and how to fix it.
validate returns the config with every default filled in, its sections resolved into cfg["matrix"]
(orchestrate.sections; orchestrate.matrix expands them into runs) and its testbed pool in cfg["pool"]
(orchestrate.pool). The defaults are the schema's (orchestrate.schema).

A config may say `extends: other.yaml` and state only what differs from that file: mappings are merged key
by key (the extending file's values win), anything else is replaced whole.
"""
from __future__ import annotations

import copy
import json
import math
import os
import sys
from pathlib import Path

import jsonschema
import yaml

from orchestrate import matrix, plan, pool, runspec, schema, sections

REPO = Path(__file__).resolve().parents[1]
P4_TARBALL_DEFAULT = Path.home() / ".cache" / "favorlab" / "p4" / "p4lang.tar.gz"
# what validate adds to a config; a config that holds them (a validated one, edited) validates again
DERIVED_KEYS = ("pool", "matrix")


def p4_tarball() -> str | None:
    """A prebuilt P4 toolchain prefix for hosts without p4lang packages (the local guest), or None."""
    p = os.environ.get("FAVORLAB_P4_TARBALL") or (str(P4_TARBALL_DEFAULT) if P4_TARBALL_DEFAULT.is_file() else "")
    return p if p and Path(p).is_file() else None


class ConfigError(ValueError):
    """A configuration that must not start: the message says what and how to fix it."""


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


def _merge(base, over):
    """over on top of base: mappings merged key by key, anything else (lists included) replaced."""
    if isinstance(base, dict) and isinstance(over, dict):
        return {**base, **{k: _merge(base[k], v) if k in base else v for k, v in over.items()}}
    return copy.deepcopy(over)


def resolve_extends(config, origin: str | Path | None, source: str, chain: tuple = ()):
    """The config with its `extends` chain merged in (the file it extends first, then this one on top).
    origin: the file the config was read from (relative `extends` paths are relative to its directory), or
    None for a config that comes from no file (relative to the working directory)."""
    if not isinstance(config, dict) or "extends" not in config:
        return config
    rel = config["extends"]
    if not isinstance(rel, str) or not rel:
        raise ConfigError(f"{source}: extends: {rel!r} is not a file name. Fix: name the config file this one "
                          f"states the differences from, e.g. extends: quick.yaml.")
    base_dir = Path(origin).parent if origin else Path.cwd()
    path = (base_dir / Path(rel).expanduser()).resolve()
    seen = (*chain, Path(origin).resolve()) if origin else chain
    if path in seen:
        loop = " -> ".join(str(p) for p in (*seen, path))
        raise ConfigError(f"{source}: extends: {rel!r} makes a loop ({loop}). Fix: let one of those files "
                          f"state its keys itself instead of extending.")
    if not path.is_file():
        raise ConfigError(f"{source}: extends: {rel!r} is no file ({path}). Fix: name an existing config file, "
                          f"relative to {base_dir}.")
    try:
        base = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"{source}: extends: {path} is not valid YAML: {e}") from e
    if not isinstance(base, dict):
        raise ConfigError(f"{source}: extends: {path} holds no YAML mapping. Fix: name a config file.")
    base = resolve_extends(base, path, f"{source} (extends {path})", seen)
    return _merge(base, {k: v for k, v in config.items() if k != "extends"})


def validate(config: dict, source: str = "config", warn=None, origin: str | Path | None = None) -> dict:
    """Validate a config dict; return it with defaults filled in, cfg["matrix"] (each section resolved:
    every key given, the axes as lists) and cfg["pool"] (expand_pool) added. Raises ConfigError.
    warn(msg) gets what is allowed but unwise (default: printed to stderr). origin: the file the config
    comes from, which its `extends` is relative to."""
    warn = _warn if warn is None else warn
    if not isinstance(config, dict):
        raise ConfigError(f"{source}: expected a YAML mapping at the top, got {type(config).__name__}.")
    config = resolve_extends(config, origin, source)
    # what validate derives is not a config key: a validated config (capacity.py edits one) validates again
    config = {k: v for k, v in config.items() if k not in DERIVED_KEYS}
    if isinstance(config.get("testbed"), dict):
        config["testbed"] = {k: v for k, v in config["testbed"].items() if k != "p4"}
    bad = list(_nonfinite(config))
    if bad:
        raise ConfigError("\n".join(f"{source}: {path}: {v!r} is not a finite number. Fix: give a finite number "
                                    f"(YAML's .inf and .nan are not allowed)." for path, v in bad))
    errors = sorted(schema.Validator(schema.schema()).iter_errors(config),
                    key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        raise ConfigError("\n".join(_schema_error_message(source, e) for e in errors))

    if "workload_impl" not in config and (config.get("testbed") or {}).get("kind") == "ssh":
        # real hosts run favorflow, built for each host's machine by the controller (ansible's favorlab_code):
        # the hosts' own Python (3.10 on Ubuntu 22.04) and its CPU cost per flow stay out of the runs
        config["workload_impl"] = "go"
    cfg = schema.fill_defaults(json.loads(json.dumps(config)))  # a deep copy, then the defaults
    if "bottlenecks" in cfg:
        # the bottleneck axis is given: the topology's default pair is no value of it (and a validated config,
        # which holds its defaults, validates again)
        for k in ("bottleneck_mbps", "buffer_pkts"):
            if k not in config.get("topology", {}):
                cfg["topology"].pop(k)
    problems = []
    secs = cfg.get("sections") or [{"name": cfg["name"]}]
    names = [s["name"] for s in secs]
    for n in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"{source}: two sections are named {n!r}. Fix: give each section its own name.")
    resolved = [sections.resolve_section(cfg, config, sec, f"{source}: sections[{i}] ({sec['name']})" if cfg.get("sections")
                                         else source, problems, source, f"sections[{i}]." if cfg.get("sections") else "")
                for i, sec in enumerate(secs)]

    known = runspec.read_aqms()
    p4_names = set()
    for sec in resolved:
        for i, name in enumerate(sec["aqms"]):
            if name not in known:
                problems.append(f"{sec['where']}: aqms[{i}]: {name!r} is not a known AQM. Fix: use one of "
                                f"{', '.join(sorted(known))}, or add an entry to config/aqms.yaml.")
            elif matrix.SCENARIOS[sec["scenario"]]["topology"] == "chain" and known[name]["forward"]["kind"] == "p4":
                problems.append(f"{sec['where']}: aqms[{i}]: {name!r} is a P4 switch; the chain has no P4 switch "
                                f"between its routers. Fix: use a qdisc AQM (favor, droptail, ...) for the chain.")
            elif known[name]["forward"]["kind"] == "p4":
                p4_names.add(name)
                problems += sections.p4_problems(sec, name, known[name])
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
    problems += pool.pool_problems(tb, source)
    if problems:
        raise ConfigError("\n".join(problems))
    cfg["matrix"] = resolved
    problems = sections.collisions(cfg, source)
    if problems:
        raise ConfigError("\n".join(problems))
    for sec in resolved:
        for msg in sections.delay_line_warnings(sec):
            warn(f"{sec['where']}: {msg}")
    try:
        cfg["pool"] = pool.expand_pool(tb, source, warn=warn)
    except pool.PoolError as e:
        raise ConfigError(str(e)) from None
    return cfg


def _warn(msg: str) -> None:
    print(f"favorlab: warning: {msg}", file=sys.stderr, flush=True)


def read_config(path: str | Path, warn=None) -> dict:
    """A config file, read and validated (validate). Raises ConfigError."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such config file. Fix: pick one of config/smoke.yaml, "
                          f"config/quick.yaml, config/paper.yaml or write your own.")
    try:
        with open(path) as f:
            raw = yaml.safe_load(f)
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from e
    return validate(raw, str(path), warn=warn, origin=path)


def main(argv=None) -> int:
    """python -m orchestrate.config CONFIG            validate, list the run ids
       python -m orchestrate.config pool-size CONFIG  the number of testbeds (./favorlab's --resources)
       python -m orchestrate.config plan CONFIG       projected wall time with its pool, 1, 10 and 50
                                                              testbeds (orchestrate/plan.py)"""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["plan"] and len(argv) == 2:
        try:
            c = read_config(argv[1], warn=lambda m: None)
        except ConfigError as e:
            print(str(e), file=sys.stderr)
            return 2
        sizes = sorted({c["pool"]["size"], 1, 10, 50})
        traffic = [(lambda sec: sec["duration_s"] + sec["drain_s"])(matrix.section_of(c, r)) for r in matrix.runs(c)]
        tb = c["testbed"]
        _, lines = plan.project(traffic, tb["kind"], sizes, REPO / "results", tb.get("clock", "real"),
                                bool(tb.get("reuse_topology")))
        print("\n".join(lines) + f"\nplan: this config's pool: {c['pool']['size']} testbed(s)")
        return 0
    if argv[:1] == ["pool-size"] and len(argv) == 2:
        try:
            c = read_config(argv[1], warn=lambda m: None)   # Snakemake says it once when it loads the config
        except ConfigError as e:
            print(str(e), file=sys.stderr)
            return 2
        print(c["pool"]["size"])
        return 0
    if len(argv) != 1:
        print(main.__doc__, file=sys.stderr)
        return 2
    try:
        c = read_config(argv[0])
    except ConfigError as e:
        print(str(e), file=sys.stderr)
        return 2
    for r in matrix.runs(c):
        print(r.run_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
