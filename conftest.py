"""The provisioned guest the in-guest suites share.

Booting a TCG guest and provisioning it (the DKMS build of five qdisc modules under emulation) takes about
five minutes; each in-guest suite doing its own made `./favorlab test` spend a third of its time there.
So one guest, `favorlab-test`, is booted and provisioned once per test session by the pipeline's own path
(`orchestrate.testbeds up` -> ansible/site.yml), and the qdisc, runner, jump-host and pipeline suites use
it. Suites that test the lifecycle itself (favorvm's boot and stop, the image build killed mid-chroot, the
pool of two guests) still start guests of their own.

Skipped with the reason where the guest cannot run here; failing instead when FAVORLAB_REQUIRE_GUEST=1
(CI), by favorlab_testing.unavailable. FAVORLAB_TEST_KEEP_VM=1 leaves the guest running after the session
(development: the next session finds it up and, if the code did not change, already provisioned).
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from favorlab_testing import CI, unavailable

REPO = Path(__file__).resolve().parent
FAVORVM = REPO / "testbed" / "vm" / "favorvm"
SHARED_VM = "favorlab-test"


def _no_guest(why: str):
    """Skips (or, where the guest is required, fails) the test: the guest cannot run here, and why."""
    unavailable(f"the QEMU guest cannot run on this machine: {why}; runs wherever qemu and root are")


@pytest.fixture(scope="session")
def shared_guest():
    """The shared guest as a config's testbed section ({"kind": "local-vm", "vm_name": ...}), up and
    provisioned with this checkout's tracked files. `provision_log` holds what `orchestrate.testbeds up`
    printed (Ansible's recap of the first provisioning among it)."""
    if not FAVORVM.is_file():
        _no_guest(f"{FAVORVM} does not exist")
    for tool in ("qemu-system-x86_64", "debootstrap"):
        if not shutil.which(tool):
            _no_guest(f"{tool} is not installed (./favorlab test installs it)")
    if os.geteuid() != 0:
        _no_guest("building the guest image needs root (debootstrap)")
    testbed = {"kind": "local-vm", "vm_name": SHARED_VM}
    py = REPO / ".venv" / "bin" / "python"
    p = subprocess.run([str(py if py.exists() else sys.executable), "-m", "orchestrate.testbeds", "up",
                        "--testbed", json.dumps(testbed)],
                       cwd=REPO, capture_output=True, text=True, timeout=2400)
    if p.returncode:
        if "Traceback" in p.stderr or "FAILED" in p.stdout or "fatal:" in p.stdout:
            # the guest booted but provisioning (our DKMS role among others) failed: that is a failure
            subprocess.run([str(FAVORVM), "stop", "--name", SHARED_VM], capture_output=True)
            pytest.fail(f"orchestrate.testbeds up failed:\n{p.stdout[-4000:]}\n{p.stderr[-2000:]}")
        _no_guest(f"the guest does not start here: {p.stderr.strip()[-600:]}")
    yield {**testbed, "provision_log": p.stdout}
    if os.environ.get("FAVORLAB_TEST_KEEP_VM") != "1":
        subprocess.run([str(FAVORVM), "stop", "--name", SHARED_VM], capture_output=True, timeout=300)


@pytest.fixture(scope="session")
def rscript():
    """Rscript, which the analysis and the bundle tests run: skipped where it is missing, failed under CI,
    which installs it (scripts/bootstrap)."""
    if shutil.which("Rscript") is None:
        unavailable("Rscript missing (apt-get install r-base-core r-cran-data.table r-cran-ggplot2 r-cran-testthat)",
                    CI)
