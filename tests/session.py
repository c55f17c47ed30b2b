"""`./favorlab test` with no pytest arguments: the whole suite as three pytest sessions, two of them side by side.

1. The `timing` tests alone (they bound how late this machine starts a process: nothing may run beside them).
2. Then two sessions at once: the tests on the QEMU guest (the shared guest's bring-up first, then its suites,
   then the tests that start a guest of their own), and the tests that need no guest. Until the shared guest is
   up, both run at the normal priority (the bring-up is an image build and a provisioning under emulation).
   Once it is up, the guest's runs need the CPU:
   the host's session drops to the lowest share of the CPU (`LowPriority`) and takes only what the guest leaves,
   until the guest's session ends and it gets the normal share back. The containers the host part's tests start
   are in its group too (the group's path in the environment, CGROUP_PARENT): Podman's and Docker's default
   parents sit beside it, and there a container build took a guest run's CPU (a chain run's rate probe read
   8.5 Mb/s for 10, a short run's 8.0).

Under TCG the guest's tests leave a core idle much of the time (SSH round trips, waits, one-vCPU stretches), and
the tests that need no guest are about half of the suite's time: run one after the other they took 75 minutes
on this project's 2-core machine, so this is what fits CI's time (docs/testing.md, "The order of a session").
Each part is picked by conftest.py (`FAVORLAB_TEST_PART`), from the same order a single session runs in, so the
three parts are the whole suite (tests/test_session.py checks it). Their output is interleaved line by line,
each line marked with its part; each prints its own summary. The exit status is the first failing part's.

    tests/session.py            what `./favorlab test` runs (FAVORLAB_LONG_TESTS=1 for --long)
    FAVORLAB_TEST_SERIAL=1 ./favorlab test     one session, one part after the other (the order of conftest.py)
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil   # snakemake's own dependency, pinned in containers/requirements.lock

REPO = Path(__file__).resolve().parents[1]
PART = "FAVORLAB_TEST_PART"
# the file the guest's session creates once the shared guest is up (conftest.py's shared_guest)
GUEST_UP = "FAVORLAB_TEST_GUEST_UP"
NO_TESTS = 5        # pytest's exit status when a part selects no test: not a failure of the suite
# cgroup v1's cpu.shares: the default, and the least the kernel takes (a share of about 2/1026 of a busy CPU)
SHARES_NORMAL, SHARES_LOW = 1024, 2
CGROUP_V1_CPU = Path("/sys/fs/cgroup/cpu")
# containers/build's CGROUP_PARENT: the group a caller's containers go in (tests/test_session.py checks the two)
CGROUP_PARENT = "FAVORLAB_CGROUP_PARENT"


class LowPriority:
    """A group of processes whose CPU share can be lowered and raised again as one: every process it starts and
    all they start, whatever their session. Where cgroup v1's cpu controller is writable (root on this
    project's machines), a cgroup of its own whose cpu.shares goes from 1024 to 2: a double-forked or setsid
    child stays in it. Elsewhere, the group leader's autogroup (its session) goes to nice 19 and every
    process under it to SCHED_IDLE, which a process that left the session escapes. The kernel's own scheduler
    classes, not a hand-written throttle: a low share costs the guest nothing when the guest wants the CPU,
    and leaves the host's tests all the CPU the guest does not use."""

    def __init__(self, cgroup: bool = True):
        """cgroup False: the autogroup and SCHED_IDLE way even where a cgroup could be made."""
        self.cgroup = None
        if cgroup and os.access(CGROUP_V1_CPU / "cgroup.procs", os.W_OK):
            path = CGROUP_V1_CPU / f"favorlab-tests-{os.getpid()}"
            try:
                path.mkdir()
                self.cgroup = path
            except OSError:
                self.cgroup = None
        self.leader = None
        self.low = False

    def join(self) -> None:
        """preexec_fn of the group's leader: into the cgroup (or a session of its own) before it executes."""
        if self.cgroup is not None:
            (self.cgroup / "cgroup.procs").write_text(str(os.getpid()))
        else:
            os.setsid()

    def env(self) -> dict[str, str]:
        """What the group's leader is started with: its cgroup as the parent of the containers its tests start,
        a path under the cpu hierarchy's root (none in the autogroup way, which containers escape)."""
        return {CGROUP_PARENT: f"/{self.cgroup.relative_to(CGROUP_V1_CPU)}"} if self.cgroup is not None else {}

    def started(self, pid: int) -> None:
        self.leader = pid

    def lower(self) -> str:
        self.low = True
        return self._set(True)

    def restore(self) -> str:
        if not self.low:
            return ""
        self.low = False
        return self._set(False)

    def _set(self, low: bool) -> str:
        if self.cgroup is not None:
            (self.cgroup / "cpu.shares").write_text(str(SHARES_LOW if low else SHARES_NORMAL))
            return f"cpu.shares {SHARES_LOW if low else SHARES_NORMAL} (cgroup {self.cgroup})"
        try:
            Path(f"/proc/{self.leader}/autogroup").write_text("19" if low else "0")
        except OSError:
            pass        # no autogroup in this kernel: the scheduling class below still applies
        policy = os.SCHED_IDLE if low else os.SCHED_OTHER
        for proc in tree(self.leader):
            try:
                for thread in proc.threads():
                    os.sched_setscheduler(thread.id, policy, os.sched_param(0))
            except (OSError, psutil.Error):
                pass    # gone meanwhile
        return f"{'SCHED_IDLE and autogroup nice 19' if low else 'SCHED_OTHER and autogroup nice 0'}"

    def close(self) -> None:
        """The cgroup removed, and its namesakes in the other hierarchies, which a container engine makes when
        given it as a parent (memory/<group>/libpod-<id>, .../conmon), each with the groups in it, deepest first;
        a process still in one (a test's leftover) moved to its hierarchy's root first."""
        if self.cgroup is None:
            return
        name = self.cgroup.relative_to(CGROUP_V1_CPU)
        for top in [self.cgroup, *(h / name for h in CGROUP_V1_CPU.parent.iterdir() if h.resolve() !=
                                   CGROUP_V1_CPU.resolve())]:
            if not top.is_dir():
                continue
            try:
                for group in sorted((d for d in top.rglob("*") if d.is_dir()), key=lambda d: -len(d.parts)) + [top]:
                    for pid in (group / "cgroup.procs").read_text().split():
                        try:
                            (top.parent / "cgroup.procs").write_text(pid)
                        except OSError:
                            pass
                    group.rmdir()
            except OSError as e:
                print(f"session: could not remove {top}: {e}", file=sys.stderr)


def tree(pid: int) -> list[psutil.Process]:
    """The process and all it started that are still its descendants (psutil reads /proc for it)."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _pytest(part: str, extra_env: dict | None = None, **kw) -> subprocess.Popen:
    env = dict(os.environ, **{PART: part, "PYTHONUNBUFFERED": "1"}, **(extra_env or {}))
    return subprocess.Popen([sys.executable, "-m", "pytest"], cwd=REPO, env=env, stdin=subprocess.DEVNULL, **kw)


def _pump(proc: subprocess.Popen, label: str, lock: threading.Lock) -> threading.Thread:
    def run():
        for line in proc.stdout:
            with lock:
                sys.stdout.write(f"{label} | {line}")
                sys.stdout.flush()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _ok(rc: int) -> bool:
    return rc in (0, NO_TESTS)


def main() -> int:
    if os.environ.get("FAVORLAB_TEST_SERIAL") == "1":
        os.execv(sys.executable, [sys.executable, "-m", "pytest"])
    t0 = time.monotonic()
    print("session: the timing tests alone, then the guest's tests and the tests that need no guest side by side "
          "(tests/session.py)", flush=True)
    timing = _pytest("timing")
    rcs = {"timing": timing.wait()}
    group = LowPriority()
    lock = threading.Lock()
    with tempfile.TemporaryDirectory(prefix="favorlab-session-") as tmp:
        up = Path(tmp) / "guest-up"
        guest = _pytest("guest", {GUEST_UP: str(up)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        host = _pytest("host", group.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       preexec_fn=group.join)
        group.started(host.pid)
        pumps = [_pump(guest, "guest", lock), _pump(host, "host ", lock)]
        procs = {"guest": guest, "host": host}
        ended: dict[str, float] = {}

        def note(msg):
            with lock:
                print(f"session | [{(time.monotonic() - t0) / 60:5.1f} min] {msg}", flush=True)

        def interrupt(signum, _frame):
            # a terminal's Ctrl-C reaches the parts in this process group itself; passed on to the others only
            for p in procs.values():
                try:
                    if p.poll() is None and (signum != signal.SIGINT or os.getpgid(p.pid) != os.getpgrp()):
                        p.send_signal(signum)
                except ProcessLookupError:
                    pass
        old = signal.signal(signal.SIGINT, interrupt), signal.signal(signal.SIGTERM, interrupt)
        try:
            while len(ended) < 2:
                for name, p in procs.items():
                    if name not in ended and p.poll() is not None:
                        ended[name] = time.monotonic()
                        note(f"the {name} part ended (exit {p.returncode})")
                if "host" in ended:
                    pass            # nothing left to lower or restore
                elif "guest" in ended:
                    how = group.restore()
                    if how:
                        note(f"the host part back to the normal share of the CPU: {how}")
                elif not group.low and up.exists():
                    note(f"the shared guest is up: the host part to the lowest share of the CPU: {group.lower()}")
                time.sleep(1)
        finally:
            signal.signal(signal.SIGINT, old[0])
            signal.signal(signal.SIGTERM, old[1])
            for t in pumps:
                t.join(timeout=30)
            group.close()
        rcs.update({name: p.returncode for name, p in procs.items()})
    minutes = {name: (ended[name] - t0) / 60 for name in ended}
    print(f"session: timing exit {rcs['timing']}; guest part exit {rcs['guest']} at {minutes['guest']:.1f} min; "
          f"host part exit {rcs['host']} at {minutes['host']:.1f} min; {(time.monotonic() - t0) / 60:.1f} min in all",
          flush=True)
    bad = [rc for rc in rcs.values() if not _ok(rc)]
    return bad[0] if bad else 0


if __name__ == "__main__":
    sys.exit(main())
