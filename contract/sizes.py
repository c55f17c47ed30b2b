"""The `--sizes` grammar: a flow-length distribution as one command-line word, and back.

    name[:key=value,...]     lomax:shape=1.3,mean_pkts=30   exponential:mean_pkts=6
                             bounded_pareto:shape=1.3,mean_pkts=30,max_pkts=10000 (or min_pkts= for mean_pkts=)

The controller writes it from a config's `sizes` (format_sizes) into the schedule generator's arguments and
run.json; the generator (orchestrate.schedule, numpy) and the chain's reference user (workloads.reference,
on the testbed host) parse it back here, so both read one text the same way and refuse the same mistakes.
Sizes are in packets: `mean_pkts` is the mean of the continuous draw X, the flow sends max(1, ceil(X)), as
ns-2's one-way TCP sends ceil(bytes / packet size) packets for a transfer (a partial packet is a whole one).
"""
from __future__ import annotations

# Table 1's flow sizes: ns-2's Pareto of the second kind (RandomVariable/ParetoII, here `lomax`) of shape 1.3
# and mean 30 packets; the classic Pareto I of that mean has no flow under 7 packets, while the paper's
# figures show 2-packet flows (docs/sizes.md gives the evidence).
DEFAULT = "lomax:shape=1.3,mean_pkts=30"
# name -> the parameters a distribution has unless the text gives them
DISTRIBUTIONS = {
    "pareto": {"shape": 1.3, "mean_pkts": 30},
    "lomax": {"shape": 1.3, "mean_pkts": 30},
    "bounded_pareto": {"shape": 1.3, "mean_pkts": 30, "max_pkts": 100000},
    "exponential": {"mean_pkts": 6},
}
PARAMETERS = ("shape", "mean_pkts", "max_pkts", "min_pkts")


def format_sizes(sizes: dict) -> str:
    """A config's size distribution ({"distribution": name, key: value, ...}) as the --sizes word, its
    parameters in the dict's order."""
    params = ",".join(f"{k}={v}" for k, v in sizes.items() if k != "distribution")
    return f"{sizes['distribution']}:{params}" if params else sizes["distribution"]


def parse_sizes(text: str, offered: dict | None = None, offered_by: str = "") -> tuple[str, dict]:
    """(name, parameters sorted by key) of a --sizes word, defaults filled in; ValueError names the mistake.

    offered limits the distributions to some names, each with the keys it takes ({name: (key, ...)}), for a
    reader that draws only those (offered_by names it in the message)."""
    name, _, rest = text.partition(":")
    name = name.strip()
    if offered is not None and name not in offered:
        raise ValueError(f"--sizes {text!r}: {name!r} is not offered by {offered_by}; use one of "
                         f"{sorted(offered)}")
    if name not in DISTRIBUTIONS:
        raise ValueError(f"--sizes {text!r}: unknown distribution {name!r}; use one of {sorted(DISTRIBUTIONS)}")
    keys = PARAMETERS if offered is None else offered[name]
    given = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        k, sep, v = item.partition("=")
        if not sep or k not in keys:
            raise ValueError(f"--sizes {text!r}: bad parameter {item!r}; write key=value with keys {sorted(keys)}")
        try:
            given[k] = float(v)
        except ValueError:
            raise ValueError(f"--sizes {text!r}: {k}={v!r} is not a number") from None
    params = dict(DISTRIBUTIONS[name])
    if name == "bounded_pareto" and "min_pkts" in given:
        params.pop("mean_pkts", None)
    params.update(given)
    _check(text, name, params)
    return name, {k: params[k] for k in sorted(params)}


def pareto_minimum(params: dict) -> float:
    """The classic Pareto's minimum xm for its mean: mean = shape * xm / (shape - 1)."""
    return params["mean_pkts"] * (params["shape"] - 1) / params["shape"]


def _check(text: str, name: str, p: dict) -> None:
    def bad(why):
        raise ValueError(f"--sizes {text!r}: {why}")
    if "shape" in p and name != "exponential" and not p["shape"] > 1:
        bad("shape must be > 1 (the mean is infinite otherwise)")
    if "mean_pkts" in p and not p["mean_pkts"] > 0:
        bad("mean_pkts must be > 0")
    if name == "pareto" and pareto_minimum(p) <= 0:
        bad("the Pareto minimum xm = mean*(shape-1)/shape must be > 0")
    if name == "bounded_pareto":
        if "mean_pkts" in p and "min_pkts" in p:
            bad("give mean_pkts or min_pkts, not both")
        if not p["max_pkts"] > p.get("mean_pkts", p.get("min_pkts", 0)):
            bad("max_pkts must exceed mean_pkts (or min_pkts)")
        if "min_pkts" in p and not p["min_pkts"] > 0:
            bad("min_pkts must be > 0")
