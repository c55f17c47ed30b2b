"""The run context: what the steps of one run hand on to one another (the run directory, the spec, the
network and its hosts, the processes started, the checks and reasons gathered, the manifest)."""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract import rundir
from testbed.runner.cpu import work_counters
from testbed.runner.processes import Log


@dataclass
class RunContext:
    dir: Path
    log: Log
    spec: dict = field(default_factory=dict)
    hostsj: dict = field(default_factory=dict)     # hosts.json as written
    net: Any = None                                # the Mininet network while it is up
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)   # name -> a process still running
    checks: dict = field(default_factory=dict)     # fidelity.json's checks
    reasons: list[str] = field(default_factory=list)   # why the run is invalid, beside the failed checks
    manifest: dict = field(default_factory=dict)
    cgroup: Any = None                             # hoststate.RunCgroup when the spec sets an initial RTO
    rto: Any = None                                # bpf.InitialRto attached to that cgroup
    p4: Any = None                                 # the P4 bottleneck's switch (bmv2)
    persistent: list | None = None                 # the persistent flows' iperf3 groups
    cross: list | None = None                      # the chain's cross flows' iperf3 groups
    kernel_log: Any = None                         # hoststate.KernelLog from before the traffic
    host_reset: dict = field(default_factory=dict)  # a kept network's reset script per host (kept.adopt)
    nstat_before: dict = field(default_factory=dict)
    # favor's counters when the run starts and as its trace stops (favortrace.trace_counts_check)
    qdisc_before: dict = field(default_factory=dict)
    qdisc_at_trace_stop: dict | None = None
    # seconds spent in each phase of the run, in order (the manifest's phases_s, which the controller puts
    # into attempts.json): what the overhead around the traffic is made of
    # and the guest's CPU seconds and forks (processes and threads started) in each (the manifest's phases_work)
    phases: rundir.Phases = field(default_factory=lambda: rundir.Phases(counters=work_counters))

    def phase(self, name: str | None) -> None:
        """Ends the phase under way and begins `name` (None: ends it only)."""
        self.phases.mark(name)

    def is_chain(self) -> bool:
        return self.spec["topology"]["kind"] == "chain"

    def routers(self):
        """The routers whose queues are read: the dumbbell's rl and rr, the chain's r0 .. r<hops>."""
        return self.hostsj.get("routers", ("rl", "rr"))

    def cgroup_path(self) -> Path | None:
        return self.cgroup.path if self.cgroup else None

    def write_json(self, rel: str, obj) -> None:
        p = self.dir / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(obj, indent=2) + "\n")
