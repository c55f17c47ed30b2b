"""orchestrate/images.py against the places that repeat or rely on it: the CloudLab profile's default image
(the portal runs the profile without this package), the FABRIC command's default, and the kernel series
qdisc/tools/build-check builds by default (an image said to be built ahead of time must be among them)."""
import importlib.util
import re
import shutil
from importlib.machinery import SourceFileLoader
from pathlib import Path

import pytest

from orchestrate import fabric, images, lifecycle
from orchestrate.inventory import REPO


def build_check():
    path = str(REPO / "qdisc" / "tools" / "build-check")   # a script without .py: name its loader
    spec = importlib.util.spec_from_loader("build_check", SourceFileLoader("build_check", path))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def test_the_defaults_are_supported_images():
    assert images.FABRIC[images.FABRIC_DEFAULT]["supported"]
    assert images.CLOUDLAB[images.CLOUDLAB_DEFAULT]["supported"]


def test_the_cloudlab_profile_defaults_to_the_same_image():
    text = (REPO / "testbed" / "cloudlab" / "profile.py").read_text()
    m = re.search(r'defineParameter\("disk_image".*?"(urn:publicid:IDN\+[^"]+)"', text, re.S)
    assert m and m.group(1) == images.CLOUDLAB_DEFAULT


def test_both_commands_default_to_the_fabric_default():
    a = lifecycle.parser().parse_args(["create", "c.yaml"])
    assert a.image is None      # None: the testbed's own default, from orchestrate/images.py
    ns = lifecycle.fabric_args(lifecycle.Want("c.yaml", "fabric", "n", ["node0"], "/x"), a)
    assert ns.image == images.FABRIC_DEFAULT
    with pytest.raises(SystemExit):   # and orchestrate.fabric's parser offers exactly the table's images
        fabric.main(["create", "--name", "x", "--dry-run", "--image", "default_rocky_9"])


@pytest.mark.parametrize("table", [images.FABRIC, images.CLOUDLAB], ids=["fabric", "cloudlab"])
def test_build_check_builds_every_series_said_to_be_built_ahead_of_time(table):
    series = build_check().default_series()
    for name, info in table.items():
        built = any(s == info["kernel"] or s.startswith(info["kernel"] + ".") for s in series)
        assert built == info["build_check"], (name, info["kernel"], series)


def test_build_check_leaves_out_only_kernels_whose_headers_debian_does_not_carry():
    """build-check builds every kernel series an image boots whose headers Debian's archive carries: an image
    it does not build ahead of time is one whose kernel apt finds no Debian headers for."""
    # Debian's package lists, as apt-get update leaves them, without asking apt (each apt-cache call costs seconds)
    if not shutil.which("apt-cache") or not list(Path("/var/lib/apt/lists").glob("*debian*_Packages*")):
        pytest.skip("no Debian package lists for apt here (not Debian, or no apt-get update); runs on a Debian "
                    "machine after scripts/bootstrap (CI)")
    bc = build_check()
    left_out = {info["kernel"] for table in (images.FABRIC, images.CLOUDLAB) for info in table.values()
                if not info["build_check"]}
    assert left_out and not [k for k in sorted(left_out) if bc.packages_for(k)[0] is not None]


def test_an_unsupported_image_is_warned_about_with_the_reason():
    why = images.unsupported_warning("default_ubuntu_22", images.FABRIC)
    assert "not supported" in why and "5.15" in why and "docs/testbed-images.md" in why
    assert images.unsupported_warning(images.FABRIC_DEFAULT, images.FABRIC) is None


def series_number(series: str) -> tuple[int, int]:
    """A kernel series or ABI (6.1, 6.1.0-41, 6.12) as (major, minor)."""
    major, minor = re.match(r"(\d+)\.(\d+)", series).groups()
    return int(major), int(minor)


@pytest.mark.parametrize("table", [images.FABRIC, images.CLOUDLAB], ids=["fabric", "cloudlab"])
def test_an_image_is_supported_by_its_kernel_not_its_python(table):
    """Supported means a kernel no older than the oldest series build-check builds; the hosts run the Go
    binaries and their Python code runs on 3.10 (workloads/tests/test_python310.py), so no reason names Python."""
    oldest = min(map(series_number, build_check().default_series()))
    for name, info in table.items():
        assert info["supported"] == (series_number(info["kernel"]) >= oldest), (name, info["kernel"], oldest)
        if not info["supported"]:
            assert info["kernel"] in info["why"] and "build-check" in info["why"], (name, info["why"])
            assert "python" not in info["why"].lower(), (name, info["why"])


def test_the_printed_table_names_every_image_and_why_it_is_not_supported():
    lines = {ln.split()[1].rstrip(":"): ln for ln in images.table_lines()}
    for table in (images.FABRIC, images.CLOUDLAB):
        for name, info in table.items():
            assert ("NOT supported: " + info.get("why", "") in lines[name]) == (not info["supported"]), lines[name]
    assert "(default)" in lines[images.FABRIC_DEFAULT] and "(default)" in lines[images.CLOUDLAB_DEFAULT]
