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
import tempfile
import time
from pathlib import Path

import pytest

from favorlab_testing import CI, required, unavailable

REPO = Path(__file__).resolve().parent
FAVORVM = REPO / "testbed" / "vm" / "favorvm"
SHARED_VM = "favorlab-test"
# the tests marked `long` run only when asked (`./favorlab test --long` sets it): docs/testing.md, "Long tests"
LONG_TESTS = "FAVORLAB_LONG_TESTS"
# one part of the suite only (tests/session.py runs them as three sessions): timing, host or guest
PART = os.environ.get("FAVORLAB_TEST_PART")
PARTS = {"timing": (-1,), "host": (0,), "guest": (1, 2)}
# where tests/session.py waits for the file that says the shared guest is up
GUEST_UP_FILE = os.environ.get("FAVORLAB_TEST_GUEST_UP")


def _no_guest(why: str):
    """Skips (or, where the guest is required, fails) the test: the guest cannot run here, and why."""
    unavailable(f"the QEMU guest cannot run on this machine: {why}; runs wherever qemu and root are")


def _guest_prerequisite_missing() -> str | None:
    if not FAVORVM.is_file():
        return f"{FAVORVM} does not exist"
    for tool in ("qemu-system-x86_64", "debootstrap"):
        if not shutil.which(tool):
            return f"{tool} is not installed (./favorlab test installs it)"
    if os.geteuid() != 0:
        return "building the guest image needs root (debootstrap)"
    return None


def _start_guest_up(background: bool = False):
    """`orchestrate.testbeds up` of the shared guest as a process of its own, its output in a file. In the
    background it runs at the lowest CPU priority (the guest it starts too, until _guest_priority_back):
    the tests running meanwhile replay traffic on this machine and check its timing, which a guest
    compiling its modules beside them at equal priority would skew."""
    py = REPO / ".venv" / "bin" / "python"
    out = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen([str(py if py.exists() else sys.executable), "-m", "orchestrate.testbeds", "up",
                             "--testbed", json.dumps({"kind": "local-vm", "vm_name": SHARED_VM})],
                            cwd=REPO, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                            preexec_fn=(lambda: os.nice(19)) if background else None)
    return proc, out


def _guest_priority_back() -> None:
    """Every thread of the shared guest's QEMU back to the normal priority (nice 0) before the guest tests:
    their runs need the guest's CPU as much as it can have (each thread has its own nice value in Linux)."""
    from orchestrate.pool import cache_root
    try:
        pid = json.loads((cache_root() / "vm" / "run" / SHARED_VM / "state.json").read_text())["pid"]
        for tid in os.listdir(f"/proc/{pid}/task"):
            os.setpriority(os.PRIO_PROCESS, int(tid), 0)
    except (OSError, ValueError, KeyError, TypeError) as e:
        pytest.fail(f"could not give the shared guest its CPU priority back: {e}")


# The shared guest's bring-up, started as soon as the session knows it will need it and the timing tests are
# done (below), so that the image build, the boot and the provisioning (minutes on a fresh machine) overlap the
# tests that need no guest, which run first. None until started; _GUEST_UP_WANTED while it is asked for and not yet started.
_GUEST_UP = None
_GUEST_UP_WANTED = False


def _order(item) -> int:
    """-1: a test marked `timing`; 0: a test that needs no guest; 1: one that uses the shared guest; 2: one that
    starts a guest of its own or builds an image. The timing tests run before the shared guest's bring-up
    starts (an image build beside them, even at nice 19, took the Go client's lateness p99 from about 0.4 to
    3.3 ms); the second group runs while the guest comes up; the fourth after the third has waited for that
    bring-up, so that no image build or boot of theirs runs beside it (two image builds share a cache)."""
    if item.get_closest_marker("timing") is not None:
        return -1
    if "shared_guest" in item.fixturenames:
        return 1
    if item.get_closest_marker("guest") is not None or \
            (item.get_closest_marker("slow") is not None and item.path.name == "test_favorvm.py"):
        return 2
    return 0


def _long_skip() -> pytest.MarkDecorator | None:
    """The skip of a `long` test when they were not asked for, with the reason and the command that runs it."""
    if required((LONG_TESTS,)):
        return None
    return pytest.mark.skip(reason="a long test (minutes of real runs or a guest of its own under TCG), left out of "
                                   "`./favorlab test` so that it and CI fit their time; runs with `./favorlab test "
                                   "--long` (docs/testing.md, \"Long tests\")")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    """The `long` tests skipped unless asked for; the timing tests first, then the tests that need no guest (each
    group in its usual order), then the guest tests; and the shared guest's bring-up asked for, when a guest test
    that will run needs it: it starts in the background as the first test that is not a timing test begins."""
    global _GUEST_UP_WANTED
    skip = _long_skip()
    if skip is not None:
        for item in items:
            if item.get_closest_marker("long") is not None:
                item.add_marker(skip)
    items[:] = sorted(items, key=_order)      # a stable sort: each group keeps its order
    if PART is not None:
        if PART not in PARTS:
            raise pytest.UsageError(f"FAVORLAB_TEST_PART={PART!r}: one of {', '.join(PARTS)} (tests/session.py)")
        keep = [i for i in items if _order(i) in PARTS[PART]]
        config.hook.pytest_deselected(items=[i for i in items if _order(i) not in PARTS[PART]])
        items[:] = keep
    runs = [i for i in items if not any(m.name == "skip" for m in i.iter_markers())]
    # (the guest's part alone starts the bring-up in its fixture, at the normal priority: nothing runs beside it
    # in that session)
    if PART is None and any("shared_guest" in i.fixturenames for i in runs) and not _guest_prerequisite_missing() \
            and not config.getoption("collectonly"):
        _GUEST_UP_WANTED = True


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """The shared guest's bring-up started in the background at the first test past the timing ones."""
    global _GUEST_UP, _GUEST_UP_WANTED
    if _GUEST_UP_WANTED and _order(item) >= 0:
        _GUEST_UP_WANTED = False
        _GUEST_UP = _start_guest_up(background=True)


# Under CI, the log says how far the session got (minutes since it began, at each test file) and why a test
# failed as soon as it fails: a run stopped at CI's time limit prints no summary at its end.
_SESSION_T0 = time.monotonic()
_LAST_FILE = None


@pytest.hookimpl(tryfirst=True)     # before the terminal reporter writes the file's name
def pytest_runtest_logstart(nodeid, location):
    global _LAST_FILE
    tr = _terminal()
    if tr is None or location[0] == _LAST_FILE:
        return
    _LAST_FILE = location[0]
    tr.write_line(f"[{(time.monotonic() - _SESSION_T0) / 60:5.1f} min]")


def pytest_runtest_logreport(report):
    tr = _terminal()
    if tr is not None and report.failed:
        tail = "\n".join(report.longreprtext.splitlines()[-40:])
        tr.write_line(f"\nFAILED ({report.when}) {report.nodeid}, at once (CI):\n{tail}")


_CONFIG = None


def pytest_configure(config):
    global _CONFIG
    _CONFIG = config


def _terminal():
    """pytest's terminal reporter under CI=true, else None."""
    if os.environ.get("CI") != "true" or _CONFIG is None:
        return None
    return _CONFIG.pluginmanager.get_plugin("terminalreporter")


def pytest_sessionfinish(session, exitstatus):
    """A bring-up no test waited for (the session stopped before the guest tests): ended, and its guest
    stopped, as the fixture would have."""
    global _GUEST_UP
    if _GUEST_UP is not None:
        proc, out = _GUEST_UP
        _GUEST_UP = None
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=120)
        out.close()
        if os.environ.get("FAVORLAB_TEST_KEEP_VM") != "1":
            subprocess.run([str(FAVORVM), "stop", "--name", SHARED_VM], capture_output=True, timeout=300)


@pytest.fixture(scope="session")
def shared_guest():
    """The shared guest as a config's testbed section ({"kind": "local-vm", "vm_name": ...}), up and
    provisioned with this checkout's tracked files. `provision_log` holds what `orchestrate.testbeds up`
    printed (Ansible's recap of the first provisioning among it)."""
    global _GUEST_UP
    missing = _guest_prerequisite_missing()
    if missing:
        _no_guest(missing)
    testbed = {"kind": "local-vm", "vm_name": SHARED_VM}
    proc, out = _GUEST_UP or _start_guest_up()
    niced, _GUEST_UP = _GUEST_UP is not None, None
    try:
        rc = proc.wait(timeout=2400)
    except subprocess.TimeoutExpired:
        proc.terminate()
        rc = proc.wait(timeout=120)
    out.seek(0)
    stdout = out.read()
    out.close()
    if rc:
        if "Traceback" in stdout or "FAILED" in stdout or "fatal:" in stdout:
            # the guest booted but provisioning (our DKMS role among others) failed: that is a failure
            subprocess.run([str(FAVORVM), "stop", "--name", SHARED_VM], capture_output=True)
            pytest.fail(f"orchestrate.testbeds up failed:\n{stdout[-6000:]}")
        _no_guest(f"the guest does not start here: {stdout.strip()[-600:]}")
    if niced:
        _guest_priority_back()
    if GUEST_UP_FILE:
        Path(GUEST_UP_FILE).touch()
    yield {**testbed, "provision_log": stdout}
    if os.environ.get("FAVORLAB_TEST_KEEP_VM") != "1":
        subprocess.run([str(FAVORVM), "stop", "--name", SHARED_VM], capture_output=True, timeout=300)


@pytest.fixture(scope="session")
def rscript():
    """Rscript, which the analysis and the bundle tests run: skipped where it is missing, failed under CI,
    which installs it (scripts/bootstrap)."""
    if shutil.which("Rscript") is None:
        unavailable("Rscript missing (apt-get install r-base-core r-cran-data.table r-cran-ggplot2 r-cran-testthat)",
                    CI)
