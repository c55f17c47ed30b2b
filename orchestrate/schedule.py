"""Flow schedules: Poisson arrivals, Pareto (or other) sizes, sender/receiver pairs. Controller side.

    python -m orchestrate.schedule --load 0.55 --capacity-mbps 10 --duration 60 --seed 7 \
        --sizes lomax:shape=1.3,mean_pkts=30 [--reverse-load 0.1] [--mss 1460] [--topology dumbbell] \
        --out schedule.csv

Random streams (numpy.random.Generator(PCG64), NumPy's documented, version-stable bit generator):
SeedSequence(seed).spawn(6) gives, in order, the forward arrivals, forward sizes, forward pairs, reverse
arrivals, reverse sizes and reverse pairs streams. Each stream is consumed only by its own quantity, so
changing the reverse load (or the size distribution) never moves a forward arrival, and changing the load
only rescales the same unit-exponential inter-arrival draws.

Load: rho = lambda * E[L] * packet_bytes / C, where L = ceil(X) is the flow length in packets actually
sent and E[L] is its exact mean (computed from the distribution, not from the sample), so the configured
load holds in expectation. The size parameter `mean_pkts` is the mean of the continuous draw X, as in the
paper (45000 B = 30 packets); E[L] is about half a packet more and is recorded in the header.

Sizes (contract.sizes): Table 1's default is `lomax`, ns-2's RandomVariable/ParetoII (X = s (U^(-1/a) - 1),
s = mean (a - 1)); `pareto` is ns-2's RandomVariable/Pareto (Pareto I, X = xm U^(-1/a), xm = mean (a-1)/a,
no flow under ceil(xm) = 7 packets at mean 30). L = max(1, ceil(X)) is the packet count ns-2's one-way TCP
gives a transfer of X packets' worth of bytes (TcpAgent::sendmsg: ceil(bytes / packet size)); docs/sizes.md.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import optimize, special

from contract import sizes as sizes_grammar
from contract.sizes import pareto_minimum
from contract.schedule import Flow, write_schedule

PACKET_BYTES = 1500
DEFAULT_MSS = 1460     # payload bytes per packet: 1500 less the IPv4 and TCP headers
STREAMS = ("forward-arrivals", "forward-sizes", "forward-pairs", "reverse-arrivals", "reverse-sizes",
           "reverse-pairs")
TOPOLOGIES = {
    # (sender, receiver) of the forward direction; reverse flows go receiver -> sender.
    "dumbbell": [(a, b) for a in ("a1", "a2", "a3") for b in ("b1", "b2", "b3")],
}
# The `generator` a schedule's header records: one name for the file format's generator, whatever module
# holds it, so that equal parameters make byte-equal schedules.
GENERATOR = "workloads.schedule"
# Topologies whose workload is closed loop (the chain's reference user, workloads.reference): no open-loop
# flows, so their schedule is the header alone (--load 0). The runner replaces the run directory's copy with
# the flows the reference user started (its --schedule-out), which extraction joins like any schedule.
CLOSED_LOOP = ("chain",)


# ---------------------------------------------------------------- size distributions (in packets)
@dataclass(frozen=True)
class Sizes:
    """A flow-length distribution: draw(rng, n) -> packets (int >= 1), mean_pkts_effective = E[L]."""
    name: str
    params: dict

    def spec(self) -> str:
        return self.name + (":" + ",".join(f"{k}={v:g}" for k, v in self.params.items()) if self.params else "")

    def draw_continuous(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return DISTRIBUTIONS[self.name][0](self.params, rng, n)

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        # ns-2's rounding: a partial last packet is sent whole; a draw under one packet still sends one
        return np.maximum(1, np.ceil(self.draw_continuous(rng, n))).astype(np.int64)

    @property
    def mean_pkts_effective(self) -> float:
        return DISTRIBUTIONS[self.name][1](self.params)


def _pareto_draw(p, rng, n):
    # numpy's pareto() is Lomax (Pareto II, scale 1); classic Pareto I with minimum xm is xm * (1 + Lomax)
    return pareto_minimum(p) * (1.0 + rng.pareto(p["shape"], n))


def _pareto_mean_l(p):
    # E[ceil X] = sum_{k>=0} P(X > k) = n0 + xm^a * zeta(a, n0), n0 = ceil(xm) (Hurwitz zeta)
    a, xm = p["shape"], pareto_minimum(p)
    n0 = math.ceil(xm)
    return n0 + xm ** a * float(special.zeta(a, n0))


def _lomax_scale(p):
    return p["mean_pkts"] * (p["shape"] - 1)


def _lomax_draw(p, rng, n):
    return _lomax_scale(p) * rng.pareto(p["shape"], n)


def _lomax_mean_l(p):
    # P(X > k) = (1 + k/s)^-a ; the k = 0 term is 1 (and ceil(0) is lifted to 1: P(X = 0) = 0)
    a, s = p["shape"], _lomax_scale(p)
    return s ** a * float(special.zeta(a, s))


def _bp_mean(a, lo, hi):
    r = (lo / hi) ** a
    return a * lo / (a - 1) * (1 - (lo / hi) ** (a - 1)) / (1 - r)


def _bp_lo(p):
    if "min_pkts" in p:
        return p["min_pkts"]
    a, hi, m = p["shape"], p["max_pkts"], p["mean_pkts"]
    return optimize.brentq(lambda lo: _bp_mean(a, lo, hi) - m, 1e-9, m * (1 - 1e-12), xtol=1e-12)


def _bp_draw(p, rng, n):
    a, lo, hi = p["shape"], _bp_lo(p), p["max_pkts"]
    u = rng.random(n)
    return lo * (1 - u * (1 - (lo / hi) ** a)) ** (-1 / a)   # inverse CDF of the bounded Pareto


def _bp_mean_l(p):
    a, lo, hi = p["shape"], _bp_lo(p), p["max_pkts"]
    k = np.arange(0, math.ceil(hi), dtype=float)
    surv = np.where(k < lo, 1.0, ((lo / np.maximum(k, lo)) ** a - (lo / hi) ** a) / (1 - (lo / hi) ** a))
    return float(np.sum(surv))


def _exp_draw(p, rng, n):
    return rng.exponential(p["mean_pkts"], n)


def _exp_mean_l(p):
    return 1.0 / (1.0 - math.exp(-1.0 / p["mean_pkts"]))


# name -> draw, E[L]; the names, parameters and their checks are the --sizes grammar's (contract.sizes)
DISTRIBUTIONS = {
    "pareto": (_pareto_draw, _pareto_mean_l),
    "lomax": (_lomax_draw, _lomax_mean_l),
    "bounded_pareto": (_bp_draw, _bp_mean_l),
    "exponential": (_exp_draw, _exp_mean_l),
}


def parse_sizes(text: str) -> Sizes:
    """A --sizes word (contract.sizes) as the distribution the generator draws from."""
    return Sizes(*sizes_grammar.parse_sizes(text))


# ---------------------------------------------------------------- arrivals, pairs, the schedule
def poisson_arrivals(rng: np.random.Generator, rate: float, duration: float, block: int = 4096) -> np.ndarray:
    """Arrival times in [0, duration) of a Poisson process of `rate` per second (unit-exponential
    inter-arrivals drawn in fixed blocks, then scaled, so the stream does not depend on the rate)."""
    if rate <= 0:
        return np.empty(0)
    times, t = [], 0.0
    while t < duration:
        gaps = rng.standard_exponential(block) / rate
        c = t + np.cumsum(gaps)
        times.append(c)
        t = c[-1]
    out = np.concatenate(times)
    return out[out < duration]


def flow_rate(load: float, capacity_mbps: float, mean_pkts: float, packet_bytes: int = PACKET_BYTES) -> float:
    """lambda = rho * C / E[size], E[size] in bytes on the wire (packet_bytes per packet)."""
    return load * capacity_mbps * 1e6 / 8 / (mean_pkts * packet_bytes)


def _direction(gens, load, capacity_mbps, duration, sizes, pairs, mss, direction, packet_bytes):
    rate = flow_rate(load, capacity_mbps, sizes.mean_pkts_effective, packet_bytes)
    starts = np.round(poisson_arrivals(gens[0], rate, duration), 6)
    pkts = sizes.draw(gens[1], len(starts))
    which = gens[2].integers(0, len(pairs), len(starts))
    out = []
    for t, L, k in zip(starts.tolist(), pkts.tolist(), which.tolist()):
        src, dst = pairs[k] if direction == "forward" else pairs[k][::-1]
        out.append([t, int(L) * mss, int(L), src, dst, direction])
    return out, rate


def generate(load: float, capacity_mbps: float, duration: float, seed: int, sizes: Sizes | str,
             reverse_load: float = 0.1, mss: int = DEFAULT_MSS, topology: str = "dumbbell",
             packet_bytes: int = PACKET_BYTES) -> tuple[dict, list[Flow]]:
    """(meta, flows) of a schedule. Forward flows get ids 0..n-1 in start order, reverse flows n.., so
    the forward rows do not depend on the reverse load. Rows are sorted by (start_s, flow_id)."""
    sizes = parse_sizes(sizes) if isinstance(sizes, str) else sizes
    check_args(load, capacity_mbps, duration, seed, reverse_load, mss, topology, packet_bytes)
    if topology in CLOSED_LOOP:
        return {"generator": GENERATOR, "format": 1, "seed": seed, "load": 0, "reverse_load": 0,
                "capacity_mbps": capacity_mbps, "duration_s": duration, "sizes": sizes.spec(), "mss": mss,
                "topology": topology, "flows_forward": 0, "flows_reverse": 0, "closed_loop": 1,
                "note": "no open-loop flows: the runner writes the reference user's flows over this file"}, []
    pairs = TOPOLOGIES[topology]
    gens = [np.random.Generator(np.random.PCG64(s)) for s in np.random.SeedSequence(seed).spawn(len(STREAMS))]
    fwd, rate_f = _direction(gens[0:3], load, capacity_mbps, duration, sizes, pairs, mss, "forward", packet_bytes)
    rev, rate_r = _direction(gens[3:6], reverse_load, capacity_mbps, duration, sizes, pairs, mss, "reverse",
                             packet_bytes)
    flows = [Flow(i, r[0], r[1], r[2], r[3], r[4], r[5], "web") for i, r in enumerate(fwd + rev)]
    flows.sort(key=lambda f: (f.start_s, f.flow_id))
    meta = {"generator": GENERATOR, "format": 1, "seed": seed, "load": load,
            "reverse_load": reverse_load, "capacity_mbps": capacity_mbps, "duration_s": duration,
            "sizes": sizes.spec(), "mean_pkts_effective": f"{sizes.mean_pkts_effective:.6f}", "mss": mss,
            "packet_bytes": packet_bytes, "topology": topology,
            "rate_forward_per_s": f"{rate_f:.6f}", "rate_reverse_per_s": f"{rate_r:.6f}",
            "flows_forward": len(fwd), "flows_reverse": len(rev),
            "rng": "numpy.random.Generator(PCG64), SeedSequence(seed).spawn(6): " + " ".join(STREAMS)}
    return meta, flows


# The generator's constraints, importable so that config validation (the config module) applies
# these very checks before any testbed starts: each raises ValueError saying what is wrong.
def check_load(load: float) -> None:
    """The forward load of an open-loop schedule: rho in (0, 1)."""
    if not 0 < load < 1:
        raise ValueError(f"--load {load}: must be in (0, 1) (rho = lambda * E[size] / C)")


def check_reverse_load(reverse_load: float) -> None:
    if not 0 <= reverse_load < 1:
        raise ValueError(f"--reverse-load {reverse_load}: must be in [0, 1)")


def check_duration(capacity_mbps: float, duration: float) -> None:
    """Arrivals are drawn block by block until `duration`: it must be finite, or the loop never ends."""
    if not capacity_mbps > 0 or not duration > 0:
        raise ValueError("--capacity-mbps and --duration must be > 0")
    if not math.isfinite(capacity_mbps) or not math.isfinite(duration):
        raise ValueError("--capacity-mbps and --duration must be finite")


def expected_flows(load: float, capacity_mbps: float, duration: float, sizes: Sizes,
                   packet_bytes: int = PACKET_BYTES) -> float:
    """The mean number of flows a direction of `load` has over `duration` (what generate holds in memory)."""
    return flow_rate(load, capacity_mbps, sizes.mean_pkts_effective, packet_bytes) * duration


def check_args(load, capacity_mbps, duration, seed, reverse_load, mss, topology, packet_bytes=PACKET_BYTES):
    if topology in CLOSED_LOOP:
        if load != 0 or reverse_load != 0:
            raise ValueError(f"--topology {topology}: its workload is closed loop; give --load 0 --reverse-load 0")
    else:
        check_load(load)
    check_reverse_load(reverse_load)
    check_duration(capacity_mbps, duration)
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"--seed {seed!r}: must be an integer >= 0")
    if not 16 <= mss <= 65495 or packet_bytes < mss:
        raise ValueError(f"--mss {mss} / packet_bytes {packet_bytes}: need 16 <= mss <= packet_bytes")
    if topology not in TOPOLOGIES and topology not in CLOSED_LOOP:
        raise ValueError(f"--topology {topology!r}: unknown; use one of {sorted((*TOPOLOGIES, *CLOSED_LOOP))}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m orchestrate.schedule", description=__doc__.split("\n\n")[0])
    ap.add_argument("--load", type=float, required=True, help="forward load rho in (0, 1)")
    ap.add_argument("--capacity-mbps", type=float, required=True, help="bottleneck capacity C")
    ap.add_argument("--duration", type=float, required=True, help="arrivals in [0, duration) seconds")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--sizes", default=sizes_grammar.DEFAULT,
                    help=f"distribution[:k=v,...], one of {sorted(DISTRIBUTIONS)} (default %(default)s)")
    ap.add_argument("--reverse-load", type=float, default=0.1, help="load of b->a flows (default %(default)s)")
    ap.add_argument("--mss", type=int, default=DEFAULT_MSS, help="payload bytes per packet (default %(default)s)")
    ap.add_argument("--packet-bytes", type=int, default=PACKET_BYTES, help="wire bytes per packet (load)")
    ap.add_argument("--topology", default="dumbbell",
                    help=f"one of {sorted((*TOPOLOGIES, *CLOSED_LOOP))} ({', '.join(CLOSED_LOOP)}: the header only)")
    ap.add_argument("--out", required=True, help="schedule CSV to write")
    a = ap.parse_args(argv)
    try:
        meta, flows = generate(a.load, a.capacity_mbps, a.duration, a.seed, a.sizes, a.reverse_load, a.mss,
                               a.topology, a.packet_bytes)
    except ValueError as e:
        print(f"orchestrate.schedule: {e}", file=sys.stderr)
        return 2
    write_schedule(Path(a.out), meta, flows)
    if meta.get("closed_loop"):
        print(f"{a.out}: topology {a.topology} is closed loop: header only, no flows")
        return 0
    print(f"{a.out}: {meta['flows_forward']} forward + {meta['flows_reverse']} reverse flows, "
          f"{meta['rate_forward_per_s']} flows/s forward, E[L] = {meta['mean_pkts_effective']} packets")
    return 0


if __name__ == "__main__":
    sys.exit(main())
