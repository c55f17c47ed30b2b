"""manifest.json: what made a run's result (kernel, the project's qdisc modules as loaded, tool versions,
seeds, the inputs' checksums, what the host runs on)."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import platform
import re
import sys
from concurrent.futures import ThreadPoolExecutor
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


def mininet_version() -> str | None:
    """Mininet's VERSION as mininet/net.py sets it, read from that file: importing mininet.net (distutils among
    its imports) takes a third of a second on a fast host and more in a TCG guest, for one string."""
    found = importlib.util.find_spec("mininet")
    if found is None:
        return None
    for d in found.submodule_search_locations or []:
        net = Path(d) / "net.py"
        m = re.search(r"""^VERSION\s*=\s*["']([^"']+)["']""", net.read_text(), re.M) if net.is_file() else None
        if m:
            return m.group(1)
    return "unknown"


# the tools whose versions the manifest names (their first line of output)
TOOLS = {"tc": ["tc", "-V"], "tcpdump": ["tcpdump", "--version"], "iperf3": ["iperf3", "--version"],
         "accel": ["systemd-detect-virt"]}


def manifest(spec: dict, run_dir: Path) -> dict:
    # the tools at once: one after another they were a few tenths of a second of every run in a TCG guest
    with ThreadPoolExecutor(max_workers=len(TOOLS)) as pool:
        tools = dict(zip(TOOLS, pool.map(lambda argv: first_line(out(argv)), TOOLS.values())))
    m = {"kernel": os.uname().release, "hostname": platform.node(), "python": sys.version.split()[0],
         "tc": tools["tc"], "tcpdump": tools["tcpdump"], "iperf3": tools["iperf3"], "accel": accel(tools["accel"]),
         "seeds": {"seed": spec.get("seed"), "replication": spec.get("replication")},
         "sha256": {rundir.SPEC: sha256(run_dir / rundir.SPEC),
                    rundir.SCHEDULE: sha256(run_dir / spec.get("schedule", DEFAULTS["schedule"]))},
         "mininet": mininet_version()}
    from topologies.tc import FAVORLAB_QDISCS
    # favorlab's own qdisc modules (one DKMS package, qdisc/), each as loaded: which code made the result
    for mod in (f"sch_{q}" for q in FAVORLAB_QDISCS):
        m[mod] = loaded_module(mod)
    # one string for tables (analysis/report.py reads module_version), sch_favor first
    m["module_version"] = "; ".join(f"sch_{q} {m[f'sch_{q}']['version']} ({m[f'sch_{q}']['srcversion']})"
                                    for q in FAVORLAB_QDISCS if m[f"sch_{q}"])
    return m
