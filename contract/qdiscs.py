"""favorlab's own qdiscs: the modules qdisc/Kbuild builds, read from its obj-m line.

Kbuild is what the kernel build obeys, so a qdisc added there is known to everything that imports this:
the topology builders (whose tc plugins live in favorlab's TC_LIB_DIR), the manifest (which modules to
record), the tests. Files in other languages that must list them (the Ansible role's defaults, dkms.conf)
are held equal to this by qdisc/tests/test_packaging.py. The repository copy is on every testbed host
(/opt/favorlab), Kbuild included.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

KBUILD = Path(__file__).resolve().parents[1] / "qdisc" / "Kbuild"
PREFIX = "sch_"


@lru_cache(maxsize=None)
def modules(kbuild: Path = KBUILD) -> tuple[str, ...]:
    """The kernel modules in Kbuild's order, e.g. ('sch_favor', 'sch_run2c', ...)."""
    text = Path(kbuild).read_text()
    objs = [o for line in re.findall(r"^obj-m\s*[:+]?=\s*(.*)$", text, re.M) for o in line.split()]
    if not objs or not all(o.startswith(PREFIX) and o.endswith(".o") for o in objs):
        raise ValueError(f"{kbuild}: expected an `obj-m := sch_<name>.o ...` line, found {objs or 'none'}")
    return tuple(o.removesuffix(".o") for o in objs)


def kinds(kbuild: Path = KBUILD) -> tuple[str, ...]:
    """The qdisc kinds tc names them by (the module without sch_), e.g. ('favor', 'run2c', ...)."""
    return tuple(m.removeprefix(PREFIX) for m in modules(kbuild))
