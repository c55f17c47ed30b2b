"""(guest) A virtual-clock guest of its own: favorvm starts it with QEMU's instruction counter, its clock
is virtual (an idle guest's `sleep 10` takes far less wall time, as sleep=off skips idle time), it has one
vCPU, its sshd takes every connection from the host, a start asking for the real clock does not reuse
it, and stop leaves nothing behind.

Run only under the guest lock, as every QEMU start on the shared machine:
    flock /var/tmp/favorlab-guest.lock env FAVORLAB_REQUIRE_GUEST=1 .venv/bin/pytest testbed/tests/test_virtual_clock_guest.py -q
"""
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from favorlab_testing import unavailable

REPO = Path(__file__).resolve().parents[2]
FAVORVM = REPO / "testbed" / "vm" / "favorvm"
NAME = "vclock-test"


def favorvm(*args, timeout=900) -> subprocess.CompletedProcess:
    return subprocess.run([str(FAVORVM), *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.guest
@pytest.mark.slow
@pytest.mark.long
def test_a_virtual_clock_guest_runs_in_virtual_time_and_leaves_nothing():
    if not shutil.which("qemu-system-x86_64") or not shutil.which("debootstrap"):
        unavailable("qemu-system-x86_64 or debootstrap is missing (./favorlab test installs them)")
    if os.geteuid() != 0:
        unavailable("building the guest image needs root (debootstrap)")
    p = favorvm("start", "--name", NAME, "--clock", "virtual", timeout=1800)
    assert p.returncode == 0, p.stderr[-3000:]
    st = json.loads(p.stdout)
    pid = st["pid"]
    try:
        print(f"boot {st['boot_s']} s")
        assert st["clock"] == "virtual" and st["accel"] == "tcg" and st["cpus"] == 1
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert [b"-icount", b"shift=0,sleep=off"] == cmdline[cmdline.index(b"-icount"):][:2]
        assert cmdline[cmdline.index(b"-smp") + 1] == b"1"
        def wall(cmd):
            t0 = time.monotonic()
            r = subprocess.run([str(FAVORVM), "ssh", "--name", NAME, cmd], capture_output=True, text=True,
                               timeout=300, stdin=subprocess.DEVNULL)
            assert r.returncode == 0, r.stderr
            return time.monotonic() - t0, r.stdout.split()
        ssh_s, (nproc,) = wall("nproc")
        for _ in range(10):       # connections from the host are not cut while the guest's time races ahead
            wall("true")
        sleep_s, (before, after) = wall("cut -d' ' -f1 /proc/uptime; sleep 30; cut -d' ' -f1 /proc/uptime")
        print(f"guest sleep 30: {float(after) - float(before):.2f} guest s in {sleep_s:.1f} wall s "
              f"(an ssh command alone: {ssh_s:.1f} s)")
        assert nproc == "1"
        assert float(after) - float(before) >= 30          # the guest slept its 30 s, in its own time
        assert sleep_s - ssh_s < 10, "a guest sleep 30 took its time in wall time: the clock is not virtual"
        again = favorvm("start", "--name", NAME)             # the real clock: never this guest
        assert again.returncode == 1 and "virtual clock, not the real" in again.stderr, again.stderr
        assert json.loads(favorvm("status", "--name", NAME).stdout)["pid"] == pid
    finally:
        favorvm("stop", "--name", NAME, timeout=180)
    end = time.monotonic() + 30
    while alive(pid) and time.monotonic() < end:
        time.sleep(0.5)
    assert not alive(pid), f"QEMU pid {pid} left behind"
    s = json.loads(favorvm("status", "--name", NAME).stdout)
    assert s["running"] is False and not (Path(st["inventory"]).parent / "overlay.qcow2").exists()
