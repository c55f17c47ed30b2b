"""What keeps runs on one testbed host apart and cleans up after a run that died: the host lock, the
runner's pidfile, the stop request that a lost controller or a signal turns into, and the selection of
what a dead run left behind (only favorlab's own interfaces, cgroups and processes).

Standard library only, as everything that runs on a testbed host (docs/contracts.md, "Python layout")."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import select
import signal
import subprocess
import threading
import time
from pathlib import Path

LOCK_DIRS = ("/run/lock", "/var/lock")
LOCK_NAME = "favorlab-runner.lock"
PIDS_NAME = "favorlab-runner.pids"
CGROUP_PREFIX = "favorlab-run-"
LOCK_WAIT_MIN_S = 600      # a waiter waits at least this long, and this long past the holder's expected end


def lock_dir() -> Path:
    """/run/lock (tmpfs: a reboot, which ends every run, also clears the pidfile), or /var/lock;
    FAVORLAB_LOCK_DIR for tests."""
    env = os.environ.get("FAVORLAB_LOCK_DIR")
    if env:
        return Path(env)
    return next((Path(d) for d in LOCK_DIRS if Path(d).is_dir()), Path(LOCK_DIRS[0]))


class HostBusy(RuntimeError):
    """Another run held the host for longer than this one would wait."""


class HostLock:
    """One run per host: an exclusive flock(2) on <lock dir>/favorlab-runner.lock, held for the whole run.

    The kernel drops a flock when its holder's file is closed, which happens when the holder exits however
    it exits (SIGKILL included), so a dead run can never leave the host locked. The file's content names the
    holder (pid, run id, since when, when it should be done), for the message of a run that has to wait.
    Python opens files non-inheritable, so the processes a run starts do not keep the lock after it."""

    def __init__(self, directory: Path | None = None):
        self.path = (directory or lock_dir()) / LOCK_NAME
        self.fd: int | None = None

    def holder(self) -> dict:
        try:
            return json.loads(self.path.read_text() or "{}")
        except (OSError, ValueError):
            return {}

    @staticmethod
    def describe(h: dict) -> str:
        if not h:
            return "a run that has not named itself yet"
        return f"pid {h.get('pid')} (run {h.get('run_id')}, since {h.get('since_utc')})"

    def acquire(self, run_id: str, expected_s: float, log, wait_s: float | None = None,
                poll_s: float = 1.0, say_every_s: float = 60.0) -> float:
        """Take the lock, waiting while another run holds it: at most wait_s, or by default until
        LOCK_WAIT_MIN_S past the holder's expected end (at least LOCK_WAIT_MIN_S). Says once that it waits
        and whom for, then every say_every_s. Returns the seconds waited; raises HostBusy naming the holder."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        start, said = time.monotonic(), None
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                pass
            h = self.holder()
            waited = time.monotonic() - start
            limit = wait_s if wait_s is not None else max(
                LOCK_WAIT_MIN_S, float(h.get("expected_end_unix", 0)) - time.time() + LOCK_WAIT_MIN_S)
            if waited >= limit:
                os.close(fd)
                raise HostBusy(f"the host is busy: another favorlab run holds {self.path}, {self.describe(h)}; "
                               f"waited {waited:.0f} s. Fix: let it finish (or stop it by that pid) and run again")
            if said is None or time.monotonic() - said >= say_every_s:
                log(f"host lock {self.path} held by {self.describe(h)}: waiting (at most {limit:.0f} s)")
                said = time.monotonic()
            time.sleep(poll_s)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "run_id": run_id,
                                  "since_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                  "expected_end_unix": round(time.time() + expected_s)}).encode() + b"\n", 0)
        self.fd = fd
        waited = time.monotonic() - start
        log(f"host lock {self.path} taken" + (f" after waiting {waited:.0f} s" if said is not None else ""))
        return waited

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)      # closing drops the flock
            self.fd = None


# ---------------------------------------------------------------- the pidfile

def proc_start(pid: int) -> str | None:
    """The process's start time (clock ticks after boot, /proc/<pid>/stat field 22): with the PID, what
    tells a process from a later one that reuses its PID. None when there is no such process, or only its
    zombie (ended, not yet reaped by its parent: nothing left to stop)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = stat[stat.rindex(")") + 2:].split()
    return None if rest[0] in ("Z", "X") else rest[19]


class PidFile:
    """Every process a run starts, one JSON line each ({"pid", "start", "what"}), written as it starts, so
    that the next run can stop exactly those processes when this one dies without its tear-down. The
    first line names the run ({"run_id", "runner_pid", "runner_start", "links"}: the root-namespace
    interfaces its topology makes). Kept beside the lock and written only by the lock's holder."""

    def __init__(self, directory: Path | None = None):
        self.path = (directory or lock_dir()) / PIDS_NAME
        self._mu = threading.Lock()

    def read(self) -> tuple[dict, list[dict]]:
        head, procs = {}, []
        try:
            lines = self.path.read_text().splitlines()
        except OSError:
            return head, procs
        for i, line in enumerate(lines):
            try:
                rec = json.loads(line)
            except ValueError:
                continue        # a line cut by the death of its writer
            if i == 0 and "run_id" in rec:
                head = rec
            elif isinstance(rec, dict) and isinstance(rec.get("pid"), int):
                procs.append(rec)
        return head, procs

    def start(self, run_id: str, links: list[str]) -> None:
        with self._mu:
            self.path.write_text(json.dumps({"run_id": run_id, "runner_pid": os.getpid(),
                                             "runner_start": proc_start(os.getpid()), "links": links}) + "\n")

    def add(self, pid: int, what: str) -> None:
        with self._mu, self.path.open("a") as f:
            f.write(json.dumps({"pid": pid, "start": proc_start(pid), "what": what}) + "\n")
            f.flush()

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


def live_recorded(procs: list[dict], start_of=proc_start) -> list[dict]:
    """The recorded processes still running: same PID and same start time (a PID reused by another
    process since is not ours)."""
    return [p for p in procs if p.get("start") is not None and start_of(p["pid"]) == p["start"]]


# ---------------------------------------------------------------- what a dead run left: only ours

# Root-namespace interfaces of the project's topologies (topologies/dumbbell.py and chain.py: their hosts
# and routers are in namespaces of their own, whose veth ends go when the namespace goes): the dumbbell's
# bridges sL and sR and their ports sL-<a1..a3|rl>, sR-<b1..b3|rr>; the chain's bridges s<k> and their ports
# s<k>-<r<k>|us|ur|x<k>s<i>|x<k>r>. Mininet's own default names (s1, s1-eth1, h1-eth0) are not among the
# patterns: a bridge s<k> counts only when it is a Linux bridge whose every port is one of ours, and the
# P4 switch's s1-eth1/s1-eth2 only when the dead run's pidfile lists them.
OUR_PORT = re.compile(r"sL-(a[1-3]|rl)|sR-(b[1-3]|rr)|s\d+-(r\d+|us|ur|x\d+s\d+|x\d+r)")
OUR_BRIDGE = re.compile(r"sL|sR|s\d+")


def select_stale_links(links: list[dict], recorded: list[str] = ()) -> list[str]:
    """Which interfaces of `ip -j -d link show` (dicts with ifname, master, linkinfo.info_kind) a dead run of
    ours left: our bridge ports, our bridges (a Linux bridge named as ours with only our ports), and the
    recorded names that also look like ours (the P4 switch's ports). Bridges last, after their ports."""
    by_name = {l.get("ifname"): l for l in links}
    kind = {n: (l.get("linkinfo") or {}).get("info_kind") for n, l in by_name.items()}
    ports = [n for n in by_name if n and OUR_PORT.fullmatch(n)]
    ports += [n for n in recorded if n in by_name and n not in ports and re.fullmatch(r"s1-eth[12]", n)]
    bridges = []
    for n in by_name:
        if not n or not OUR_BRIDGE.fullmatch(n) or kind.get(n) != "bridge":
            continue
        members = [m for m, l in by_name.items() if l.get("master") == n]
        if all(OUR_PORT.fullmatch(m) or m in ports for m in members):
            bridges.append(n)
    return ports + bridges


def select_stale_cgroups(names: list[str], alive=lambda pid: proc_start(pid) is not None) -> list[str]:
    """The run cgroups (favorlab-run-<runner pid>, RunCgroup) of runners that are gone."""
    out = []
    for n in names:
        m = re.fullmatch(re.escape(CGROUP_PREFIX) + r"(\d+)", n)
        if m and not alive(int(m.group(1))):
            out.append(n)
    return out


def _kill_group(pid: int, sig: int) -> None:
    """The processes a run starts lead sessions of their own (runner.popen: start_new_session), so their
    children are in their process group: signal the group, or the process alone when it leads none."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_recorded(procs: list[dict], log, grace_s: float = 5.0) -> list[str]:
    """SIGTERM, then SIGKILL after grace_s, to every recorded process still alive; returns what was stopped."""
    live = live_recorded(procs)
    for p in live:
        _kill_group(p["pid"], signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and live_recorded(live):
        time.sleep(0.1)
    for p in live_recorded(live):
        _kill_group(p["pid"], signal.SIGKILL)
    return [f"{p['what']} (pid {p['pid']})" for p in live]


def clean_stale(log, pidfile: PidFile, cgroup_root: Path | None = None, spare: dict | None = None) -> dict:
    """Under the host lock, before a run sets anything up: remove what a dead earlier run left (its
    processes by the pidfile, its cgroups, its interfaces; never Mininet's machine-wide cleanup, which stops every Mininet on the
    machine) and log each thing removed, but for `spare` ({"pids", "links"}: a kept network this run adopts,
    testbed/runner/kept.py). Returns {"processes", "cgroups", "links"} removed."""
    head, procs = pidfile.read()
    spare = spare or {}
    spare_pids, spare_links = set(spare.get("pids", ())), set(spare.get("links", ()))
    procs = [p for p in procs if p.get("pid") not in spare_pids]
    removed = {"processes": stop_recorded(procs, log), "cgroups": [], "links": []}
    if cgroup_root is None:
        try:
            from testbed.runner.bpf import cgroup2_root
            cgroup_root = Path(cgroup2_root())
        except Exception:  # noqa: BLE001 - no cgroup v2 here: no run cgroup can be left either
            cgroup_root = None
    if cgroup_root is not None and cgroup_root.is_dir():
        names = [p.name for p in cgroup_root.iterdir() if p.is_dir() and p.name.startswith(CGROUP_PREFIX)]
        for n in select_stale_cgroups(names):
            removed["cgroups"].append(n)
            remove_cgroup(cgroup_root / n, log)
    removed["links"] = remove_links([n for n in select_stale_links(ip_links(), head.get("links", []))
                                     if n not in spare_links], log)
    if any(removed.values()):
        log(f"stale run {head.get('run_id', '(no pidfile)')} cleaned up: " + "; ".join(
            f"{k} {', '.join(v)}" for k, v in removed.items() if v))
    pidfile.clear()
    return removed


def remove_cgroup(path: Path, log) -> None:
    """Kill what is still in a run cgroup (cgroup.kill: only that cgroup's processes, which are the run's
    by construction), then remove it."""
    try:
        (path / "cgroup.kill").write_text("1")
    except OSError:
        for pid in (path / "cgroup.procs").read_text().split() if (path / "cgroup.procs").is_file() else []:
            _kill_group(int(pid), signal.SIGKILL)
    for _ in range(50):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)
    log(f"cgroup {path} still busy: left in place")


def ip_links(sys_net: Path = Path("/sys/class/net")) -> list[dict]:
    """This namespace's interfaces with what select_stale_links reads of `ip -j -d link show` (ifname, master,
    linkinfo.info_kind for a bridge, the one kind it asks for), from sysfs: read twice before every run, an
    `ip` process each time was tenths of a second in a TCG guest."""
    links = []
    for d in sorted(sys_net.iterdir()) if sys_net.is_dir() else []:
        link = {"ifname": d.name}
        if (d / "master").exists():
            link["master"] = os.path.basename(os.readlink(d / "master"))
        if (d / "bridge").is_dir():
            link["linkinfo"] = {"info_kind": "bridge"}
        links.append(link)
    return links


def remove_links(names: list[str], log) -> list[str]:
    """`ip link del` each name (a veth's peer in its namespace goes with it); returns the ones removed."""
    gone = []
    for n in names:
        p = subprocess.run(["ip", "link", "del", n], capture_output=True, text=True, timeout=60)
        if p.returncode == 0:
            gone.append(n)
        elif "Cannot find device" not in p.stderr:
            log(f"ip link del {n} failed: {p.stderr.strip()}")
    return gone


# ---------------------------------------------------------------- stopping: signals and a lost controller

class Stopped(BaseException):
    """The run was asked to stop (a signal, the controller gone). A BaseException, as KeyboardInterrupt, so
    that the broad `except Exception` around checks and probes does not swallow it: the run unwinds to its
    tear-down."""


class Stopper:
    """Turns SIGHUP, SIGTERM and SIGINT (and a controller whose SSH session closed) into Stopped, raised in
    the main thread, except while it is deferred (starting a process and writing it to the pidfile,
    building the topology: what a half-done step would leak) or once the tear-down has begun, which must
    run to its end: then the request is only recorded. SIGPIPE stays ignored (Python's default), so a
    write to a closed stdout is an error that Log handles, not the end of the runner."""

    SIGNALS = (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)

    def __init__(self):
        self.reason: str | None = None
        self.depth = 0
        self.tearing_down = False

    def install(self) -> None:
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        for s in self.SIGNALS:
            signal.signal(s, self._handler)

    def _handler(self, signum, frame):
        self.reason = self.reason or f"signal {signal.Signals(signum).name}"
        if self.depth == 0 and not self.tearing_down:
            raise Stopped(self.reason)

    def request(self, reason: str) -> None:
        """From any thread: record why, and interrupt the main thread (a real signal, so a blocking wait
        there returns) unless it defers."""
        if self.reason is None:
            self.reason = reason
        if threading.current_thread() is threading.main_thread():
            if self.depth == 0 and not self.tearing_down:
                raise Stopped(self.reason)
        else:
            signal.pthread_kill(threading.main_thread().ident, signal.SIGHUP)

    @contextlib.contextmanager
    def deferred(self):
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
        if self.depth == 0 and self.reason and not self.tearing_down:
            raise Stopped(self.reason)


def watch_hangup(fd: int, on_hangup, halt: threading.Event, every_s: float = 1.0) -> threading.Thread:
    """A thread that calls on_hangup() once when fd (the runner's stdout: the SSH channel to the controller)
    reports POLLHUP or POLLERR, i.e. its reader is gone. Between two log lines of the runner (the traffic
    lasts minutes) nothing else would notice. A file or a terminal never reports either."""
    def loop():
        p = select.poll()
        p.register(fd, 0)      # no events asked: poll still reports POLLHUP and POLLERR
        while not halt.is_set():
            try:
                ev = p.poll(every_s * 1000)
            except OSError:
                return
            if any(e & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _, e in ev):
                on_hangup()
                return
    t = threading.Thread(target=loop, name="stdout-hangup", daemon=True)
    t.start()
    return t


def expected_run_s(spec: dict) -> float:
    """How long the run should hold the host: its traffic, drain and cross-traffic warm-up, plus 10 minutes
    for the topology, the probes and the checks (a waiting run reads it from the lock)."""
    return (float(spec.get("duration_s") or 0) + float(spec.get("drain_s") or 0)
            + float((spec.get("workload") or {}).get("warmup_cross_s") or 0) + 600)
