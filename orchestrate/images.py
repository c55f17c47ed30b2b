"""The host images FABRIC slices and CloudLab experiments boot, which of them the project supports, and the
default of each testbed (docs/testbed-images.md says why each is or is not supported).

A supported image has a kernel whose headers its own archive carries (the DKMS package builds sch_favor
against them at provisioning) and a Python of 3.11 or newer (the hosts' Python tools). `build_check` says whether qdisc/tools/build-check also builds the module ahead of time
for that kernel series: it can only for a series whose headers Debian's archive carries.
testbed/cloudlab/profile.py runs on CloudLab's portal without this package, so it repeats CLOUDLAB_DEFAULT;
orchestrate/tests/test_images.py checks the two agree.
"""
from __future__ import annotations

FABRIC = {   # fablib's image name -> its login user (fablib's Constants.IMAGE_NAMES) and what it boots
    "default_debian_12": {"user": "debian", "os": "Debian 12", "python": "3.11", "kernel": "6.1",
                          "supported": True, "build_check": True},
    "default_ubuntu_24": {"user": "ubuntu", "os": "Ubuntu 24.04", "python": "3.12", "kernel": "6.8",
                          "supported": True, "build_check": False},
    "default_ubuntu_22": {"user": "ubuntu", "os": "Ubuntu 22.04", "python": "3.10", "kernel": "5.15",
                          "supported": False, "build_check": False,
                          "why": "kernel 5.15 is older than 6.1, the oldest series sch_favor is built against; Python 3.10"},
}
FABRIC_DEFAULT = "default_debian_12"

_CL = "urn:publicid:IDN+emulab.net+image+emulab-ops//"
CLOUDLAB = {  # CloudLab's standard images (emulab-ops): none of Debian 12 that we could confirm
    _CL + "UBUNTU24-64-STD": {"os": "Ubuntu 24.04", "python": "3.12", "kernel": "6.8",
                              "supported": True, "build_check": False},
    _CL + "UBUNTU22-64-STD": {"os": "Ubuntu 22.04", "python": "3.10", "kernel": "5.15",
                              "supported": False, "build_check": False,
                              "why": "kernel 5.15 is older than 6.1, the oldest series sch_favor is built against; Python 3.10"},
}
CLOUDLAB_DEFAULT = _CL + "UBUNTU24-64-STD"


def unsupported_warning(image: str, table: dict) -> str | None:
    """Why an image the user chose is not supported (None when it is, or when this table does not know it)."""
    info = table.get(image)
    if not info or info["supported"]:
        return None
    return (f"image {image} ({info['os']}) is not supported ({info['why']}); docs/testbed-images.md lists "
            f"the supported images")
