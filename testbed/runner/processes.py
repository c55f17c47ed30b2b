"""The processes of a run: its log, starting a command in a host's namespace (recorded in the host's
pidfile before a stop request can cut in), stopping one by its PID, and the tear-down's steps that stop
what the run started."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from testbed.runner import hostguard


class Log:
    """Each line to the run's log file and to stdout, which is the SSH channel to the controller. When that
    channel is gone (the controller was killed: a broken pipe, or stdout closed), writing to it stops for
    good, the file goes on, and on_lost(why) is called once; a failure to write the file is not allowed to
    stop the caller either (a tear-down logs as it goes and must reach its end)."""

    def __init__(self, path: Path, stream=None, on_lost=None):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.f = path.open("a")
        self.stream = stream
        self.stdout_ok = True
        self.on_lost = on_lost

    def __call__(self, msg: str) -> None:
        line = f"{datetime.now(timezone.utc).isoformat(timespec='milliseconds')} {msg}"
        try:
            self.f.write(line + "\n")
            self.f.flush()
        except (OSError, ValueError):
            pass
        if self.stdout_ok:
            try:
                stream = self.stream or sys.stdout
                stream.write(line + "\n")
                stream.flush()
            except (OSError, ValueError) as e:       # BrokenPipeError, EIO, a closed file
                self.lost(f"stdout failed ({type(e).__name__}: {e})")

    def lost(self, why: str) -> None:
        """The controller's channel is gone: say so in the file, point stdout and stderr at /dev/null (so
        neither this process's later writes nor Python's flush at exit fail), and tell on_lost."""
        if not self.stdout_ok:
            return
        self.stdout_ok = False
        try:
            self.f.write(f"{datetime.now(timezone.utc).isoformat(timespec='milliseconds')} controller channel "
                         f"lost: {why}; logging to this file only\n")
            self.f.flush()
        except (OSError, ValueError):
            pass
        if self.stream is None:
            devnull = os.open(os.devnull, os.O_WRONLY)
            for fd in (1, 2):
                os.dup2(devnull, fd)
            os.close(devnull)
        if self.on_lost:
            self.on_lost(why)


def proc_net(node) -> Path:
    """/proc/<pid>/net of a node: the files of its network namespace, which the runner reads without
    starting a process in it."""
    return Path(f"/proc/{node.pid}/net")


def out(argv, node=None, check=False, env=None) -> str:
    prefix = [] if node is None else ["mnexec", "-a", str(node.pid)]
    try:
        p = subprocess.run(prefix + list(argv), capture_output=True, text=True, env=env, timeout=120)
    except FileNotFoundError as e:
        if check:
            raise
        return f"(not available: {e})"
    if check and p.returncode:
        raise RuntimeError(f"{' '.join(argv)} failed: {p.stderr.strip()}")
    return p.stdout if p.returncode == 0 else (p.stdout + p.stderr)


# The run's stop requests and its pidfile (hostguard): module-wide because popen, which every start of a
# process goes through, records each process there and must not be cut off between the two.
STOPPER = hostguard.Stopper()
PIDFILE: hostguard.PidFile | None = None


def popen(argv, node=None, cgroup: Path | None = None, **kw) -> subprocess.Popen:
    """Start argv in a host's namespace; with `cgroup`, inside that cgroup v2 directory from its first
    instruction (a shell moves itself in, then execs), so every socket it makes is the cgroup's. The
    process is in the pidfile before a stop request can unwind the caller."""
    prefix = [] if node is None else ["mnexec", "-a", str(node.pid)]
    if cgroup is not None:
        prefix = ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(cgroup / "cgroup.procs")] + prefix
    with STOPPER.deferred():
        p = subprocess.Popen(prefix + list(argv), start_new_session=True, **kw)
        if PIDFILE is not None:
            PIDFILE.add(p.pid, " ".join(map(str, argv))[:60])
    return p


def stop(p: subprocess.Popen, sig=signal.SIGTERM, wait=10.0) -> int | None:
    """Stop one process we started, by its PID (its own session, so its children go too)."""
    return stop_many([p], sig, wait)[0]


def stop_many(procs: list[subprocess.Popen], sig=signal.SIGTERM, wait=10.0) -> list[int | None]:
    """Stop processes we started: each still running is signalled once, then all are waited for until `wait`
    seconds after the signal, and one still running then is killed. Signalling every one before waiting for
    any lets the eight captures or six flow servers of a run end in the time of the slowest, not of all of them
    in turn (each tcpdump's exit after SIGINT takes a few tenths of a second in a TCG guest). Returns their
    exit codes."""
    running = [p for p in procs if p.poll() is None]
    for p in running:
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + wait
    for p in running:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
    return [p.returncode for p in procs]


MININET_SHELL = "mininet:"    # a node shell's entry in the pidfile (Mininet names its shells so too)


def record_shells(net) -> None:
    """Mininet's node shells (each holds its node's network namespace) into the pidfile, so a run that
    dies without its tear-down leaves the next one their PIDs."""
    if PIDFILE is not None:
        for node in [*net.hosts, *net.switches]:
            if getattr(node, "pid", None):
                PIDFILE.add(node.pid, f"{MININET_SHELL}{node.name}")


def stop_all(ctx) -> None:
    """Stop every process in ctx.procs: the captures and the favor trace with SIGINT (they write their
    files' ends on it), the rest with SIGTERM."""
    for name in list(ctx.procs):
        try:
            stop(ctx.procs.pop(name), signal.SIGINT if name.startswith(("pcap", "trace")) else signal.SIGTERM)
        except Exception as e:  # noqa: BLE001 - one process that will not stop must not keep the others
            ctx.log(f"teardown: stopping {name} failed: {type(e).__name__}: {e}")


def stop_leftovers(log, shells: bool = False) -> None:
    """Whatever this run started and is still running (a process started but not yet in ctx.procs when
    the run stopped, a child that left its group): by the pidfile. Mininet's node shells only with
    `shells`, after the topology's own stop (which needs them)."""
    if PIDFILE is not None:
        procs = [p for p in PIDFILE.read()[1] if shells or not str(p.get("what", "")).startswith(MININET_SHELL)]
        left = hostguard.stop_recorded(procs, log)
        if left:
            log(f"teardown: stopped leftover processes {', '.join(left)}")
