"""The run matrix of a validated config: its points (one run each: a value of every axis), their ids, and
the section each takes its settings from.

orchestrate.config.validate resolves a config's sections into cfg["matrix"]; runs() expands them into
Points, which the Snakefile's rules key by run id and orchestrate.runspec turns into run.json.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# A scenario is a topology and a kind of workload. web: the schedule's flows (Poisson arrivals, the config's
# sizes); persistent: the same and long-lived iperf3 flows from persistent.start_s (paper Section 5.3);
# reference: the chain's closed-loop reference user (workloads.reference, the config's sizes) and one
# long-lived iperf3 flow per cross flow of every hop (paper Section 8), no open-loop schedule.
SCENARIOS = {"dumbbell": {"topology": "dumbbell", "workload": "web"},
             "persistent": {"topology": "dumbbell", "workload": "persistent"},
             "chain": {"topology": "chain", "workload": "reference"}}


@dataclass(frozen=True)
class Point:
    """One point of the matrix, i.e. one run: a value of every axis. Two sections that name the same point make
    it once."""
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
    # the HTTP workload's connections per path (wrk -c; 0: the open-loop replay): a closed loop is another
    # scenario than the replay of the same schedule, so its run ids and scenario key say so
    http_connections: int = 0
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
        http = f"-http{self.http_connections}c" if self.http_connections else ""
        return (f"{self.scenario}-{self.bottleneck_mbps:g}M-buf{self.buffer_pkts}-{self.size_tag}"
                f"-{self.profile}-{self.cc}{flood}{http}")

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


def all_points(cfg: dict) -> list[Point]:
    """Every section's runs, a run named by two sections twice (each with its section)."""
    out = []
    for sec in cfg["matrix"]:
        for bi, b in enumerate(sec["bottlenecks"]):
            for sizes in sec["sizes"]:
                for cc in sec["cc"]:
                    out += [Point(cfg["name"], sec["scenario"], aqm, float(load), int(iw), rep,
                                  float(b["bottleneck_mbps"]), int(b["buffer_pkts"]), tuple(sorted(sizes.items())),
                                sec["tcp_profile"], cc, flood_x=float(fx), section=sec["name"], bottleneck=bi,
                                  http_connections=int(sec["workload"].get("http", {}).get("connections", 0)))
                            for fx in sec["synflood"]["rates_x"]
                            for load in sec["loads"] for iw in sec["iw"] for rep in range(sec["replications"])
                            for aqm in sec["aqms"]]
    return out


def runs(cfg: dict) -> list[Point]:
    """The config's runs, each once (the first section that names it gives its settings: validate has
    checked that the others agree)."""
    seen, out = set(), []
    for r in all_points(cfg):
        if r not in seen:
            seen.add(r)
            out.append(r)
    return out


def section_of(cfg: dict, run: Point) -> dict:
    """The resolved section (cfg["matrix"]) that gives the run its settings."""
    return next(s for s in cfg["matrix"] if s["name"] == run.section)

