"""manifest.json: what made a run's result (kernel, the project's qdisc modules as loaded, tool versions,
seeds, the inputs' checksums, what the host runs on)."""
from __future__ import annotations

import hashlib
import os
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path

from contract import rundir
from contract.spec import DEFAULTS
from testbed.runner.hoststate import loaded_module
from testbed.runner.processes import out


def utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def sha256(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def first_line(txt: str) -> str:
    return txt.strip().splitlines()[0] if txt.strip() else ""


def accel(virt: str) -> str:
    """What the testbed host runs on, from systemd-detect-virt: under QEMU without KVM (TCG) a run is
    several times slower than under KVM or on bare metal, which the report must show."""
    return {"kvm": "KVM", "qemu": "TCG (QEMU emulation, no KVM)", "none": "bare metal"}.get(virt, virt or "unknown")


def manifest(spec: dict, run_dir: Path) -> dict:
    m = {"kernel": os.uname().release, "hostname": platform.node(), "python": sys.version.split()[0],
         "tc": first_line(out(["tc", "-V"])), "tcpdump": first_line(out(["tcpdump", "--version"])),
         "iperf3": first_line(out(["iperf3", "--version"])),
         "accel": accel(first_line(out(["systemd-detect-virt"]))),
         "seeds": {"seed": spec.get("seed"), "replication": spec.get("replication")},
         "sha256": {rundir.SPEC: sha256(run_dir / rundir.SPEC),
                    rundir.SCHEDULE: sha256(run_dir / spec.get("schedule", DEFAULTS["schedule"]))}}
    try:
        import mininet.net
        m["mininet"] = getattr(mininet.net, "VERSION", "unknown")
    except ImportError:
        m["mininet"] = None
    from topologies.tc import FAVORLAB_QDISCS
    # favorlab's own qdisc modules (one DKMS package, qdisc/), each as loaded: which code made the result
    for mod in (f"sch_{q}" for q in FAVORLAB_QDISCS):
        m[mod] = loaded_module(mod)
    # one string for tables (analysis/report.py reads module_version), sch_favor first
    m["module_version"] = "; ".join(f"sch_{q} {m[f'sch_{q}']['version']} ({m[f'sch_{q}']['srcversion']})"
                                    for q in FAVORLAB_QDISCS if m[f"sch_{q}"])
    return m
