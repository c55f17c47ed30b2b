"""The host images FABRIC slices and CloudLab experiments boot, which of them the project supports, and the
default of each testbed: the one list of them (docs/testbed-images.md says what makes an image supported;
`python -m orchestrate.images` prints this table).

A supported image boots a kernel of 6.1 or newer, the oldest series qdisc/tools/build-check builds sch_favor
against, whose headers its own archive carries (the DKMS package builds sch_favor against them at
provisioning). The image's Python does not decide: the hosts run the Go flow client and server, and the
Python a host does run (the runner, the reference client) works on 3.10 and newer
(workloads/tests/test_python310.py). `build_check` says whether build-check also builds the module ahead of
time for that kernel series: it can only for a series whose headers Debian's archive carries.
testbed/cloudlab/profile.py runs on CloudLab's portal without this package, so it repeats CLOUDLAB_DEFAULT;
orchestrate/tests/test_images.py checks the two agree and that `supported` follows build-check's series.
"""
from __future__ import annotations

import sys

# Ubuntu 22.04's kernel, on either testbed: no build, no run and no headers in Debian's archive cover it
KERNEL_5_15 = ("kernel 5.15 is older than 6.1, the oldest series sch_favor is built and tested against, and "
               "Debian's archive has no 5.15 headers for qdisc/tools/build-check to build it against")

FABRIC = {   # fablib's image name -> its login user (fablib's Constants.IMAGE_NAMES) and what it boots
    "default_debian_12": {"user": "debian", "os": "Debian 12", "kernel": "6.1",
                          "supported": True, "build_check": True},
    "default_ubuntu_24": {"user": "ubuntu", "os": "Ubuntu 24.04", "kernel": "6.8",
                          "supported": True, "build_check": False},
    "default_ubuntu_22": {"user": "ubuntu", "os": "Ubuntu 22.04", "kernel": "5.15",
                          "supported": False, "build_check": False, "why": KERNEL_5_15},
}
FABRIC_DEFAULT = "default_debian_12"

_CL = "urn:publicid:IDN+emulab.net+image+emulab-ops//"
CLOUDLAB = {  # CloudLab's standard images (emulab-ops): none of Debian 12 that we could confirm
    _CL + "UBUNTU24-64-STD": {"os": "Ubuntu 24.04", "kernel": "6.8", "supported": True, "build_check": False},
    _CL + "UBUNTU22-64-STD": {"os": "Ubuntu 22.04", "kernel": "5.15", "supported": False, "build_check": False,
                              "why": KERNEL_5_15},
}
CLOUDLAB_DEFAULT = _CL + "UBUNTU24-64-STD"


def unsupported_warning(image: str, table: dict) -> str | None:
    """Why an image the user chose is not supported (None when it is, or when this table does not know it)."""
    info = table.get(image)
    if not info or info["supported"]:
        return None
    return (f"image {image} ({info['os']}) is not supported ({info['why']}); docs/testbed-images.md says "
            f"which images are and why (python -m orchestrate.images lists them)")


def table_lines() -> list[str]:
    """Every image of both testbeds, one line each: what it boots, whether it is supported and why not."""
    lines = []
    for testbed, table, default in (("FABRIC", FABRIC, FABRIC_DEFAULT), ("CloudLab", CLOUDLAB, CLOUDLAB_DEFAULT)):
        for image, info in table.items():
            lines.append(f"{testbed:8}  {image}{' (default)' if image == default else ''}: "
                         f"{info['os']}, kernel {info['kernel']}; "
                         + ("supported" if info["supported"] else f"NOT supported: {info['why']}")
                         + ("; built ahead of time by build-check" if info["build_check"] else ""))
    return lines


if __name__ == "__main__":
    sys.stdout.write("".join(line + "\n" for line in table_lines()))
