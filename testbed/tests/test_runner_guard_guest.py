"""The runner's guards on a real host: in a private network namespace here (a runner whose stdout reader goes,
the next run after a killed one), and (guest) killed controllers and a second controller on the shared guest."""
import json
import re
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrate import remote
from testbed.runner import hostguard, network

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def netns():
    """A network namespace of the test's own, with the runner's tools (as test_runner_in_private_netns)."""
    import shutil
    if os.geteuid() != 0 or not all(shutil.which(t) for t in ("mnexec", "tcpdump", "iperf3", "brctl")):
        pytest.skip("needs root and Debian's mininet, bridge-utils, tcpdump, iperf3 (inside the guest they exist)")
    if subprocess.run(["/usr/bin/python3", "-c", "import mininet.net"], capture_output=True).returncode:
        pytest.skip("Debian's python3 cannot import mininet (apt-get install mininet)")
    ns = f"fl-guard-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    yield ns
    subprocess.run(["ip", "netns", "del", ns])


def _netns_runner(ns: str, run_dir: Path) -> subprocess.Popen:
    """testbed/tests/netns_smoke.py (the runner, a 3 s dumbbell run) in ns; its stdout is a pipe, as the SSH
    channel is on a testbed."""
    run_dir.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(["ip", "netns", "exec", ns, "/usr/bin/python3", str(REPO / "testbed/tests/netns_smoke.py"),
                             str(REPO), str(run_dir)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _read_until(p: subprocess.Popen, text: str, timeout: float = 120) -> None:
    deadline, seen = time.monotonic() + timeout, []
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        seen.append(line)
        if text in line:
            return
        assert line, f"the runner ended (rc {p.poll()}) before {text!r}:\n{''.join(seen)[-3000:]}"
    raise AssertionError(f"{text!r} not seen in {timeout:.0f} s")


def _links(ns: str) -> list[str]:
    out = subprocess.run(["ip", "netns", "exec", ns, "ip", "-o", "link"], capture_output=True, text=True).stdout
    return [l.split(": ")[1].split("@")[0] for l in out.splitlines()]


def _running(path: Path) -> list[int]:
    """PIDs of the processes whose command line names `path` (the run's captures, servers and clients)."""
    return [int(x) for x in subprocess.run(["pgrep", "-f", f"{path}/"], capture_output=True, text=True).stdout.split()]


@pytest.mark.slow
def test_the_runner_stops_cleanly_when_its_stdout_reader_goes(netns, tmp_path):
    """The whole runner on this machine: its stdout reader (the controller's SSH session) closes after the
    clients started. The runner logs it, stops without DONE, tears everything down (only lo is left in the
    namespace, none of its processes runs) and releases the host."""
    d = tmp_path / "run"
    p = _netns_runner(netns, d)
    try:
        _read_until(p, "clients started")
        p.stdout.close()
        rc = p.wait(120)
    finally:
        if p.poll() is None:
            p.kill()
    log = (d / "log" / "runner.log").read_text()
    assert rc == 1 and not (d / "DONE").exists(), log[-2000:]
    assert "controller channel lost" in log and "STOPPED (the controller is gone" in log, log[-2000:]
    assert log.index("STOPPED") < log.index("topology down")
    assert _links(netns) == ["lo"] and _running(d) == []
    assert not (hostguard.lock_dir() / hostguard.PIDS_NAME).exists() and not (d / "pcap").exists()


@pytest.mark.slow
def test_the_next_run_removes_what_a_killed_runner_left(netns, tmp_path):
    """The runner is killed (SIGKILL) after its clients started: its bridges, ports and processes stay. The
    next run on the host removes exactly those, says so, and completes; nothing of either is left."""
    first, second = tmp_path / "first", tmp_path / "second"
    p = _netns_runner(netns, first)
    try:
        _read_until(p, "clients started")
        p.kill()
        p.wait(30)
        left = [n for n in _links(netns) if n != "lo"]
        orphans = _running(first)
        assert "sL" in left and "sR-rr" in left and orphans, (left, orphans)
        q = _netns_runner(netns, second)
        out, _ = q.communicate(timeout=300)
        assert q.returncode == 0, out[-3000:]
    finally:
        for pid in _running(first) + _running(second):     # started by this test's runners
            with __import__("contextlib").suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    log = (second / "log" / "runner.log").read_text()
    cleaned = next(l for l in log.splitlines() if "stale run netns-smoke cleaned up:" in l)
    # its processes stopped first; a bridge port still there (the kernel frees a namespace, and the veths in
    # it, a little after its last process) and the bridges by name
    removed = set(cleaned.split("; links ")[1].split(", "))
    assert {"sL", "sR"} <= removed <= set(left), (removed, left)
    assert "tcpdump -i a1-eth0" in cleaned and "workloads.server" in cleaned, cleaned
    assert (second / "DONE").is_file()
    assert _links(netns) == ["lo"] and _running(first) == [] and _running(second) == []


def _guest_spec(tmp_path: Path, run_id: str) -> tuple[Path, Path, dict]:
    """test_runner_guest's short dumbbell run, 15 s of traffic and 5 s of drain, under its own run id."""
    from contract.tests.examples import SPEC
    from testbed.tests.test_runner_guest import _schedule
    spec = dict(SPEC, run_id=run_id, duration_s=15, drain_s=5, warmup_s=0)
    d = tmp_path / "in" / run_id
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps(spec))
    _schedule(d / "schedule.csv", 0.3, spec["duration_s"])
    return d / "run.json", d / "schedule.csv", spec


def _controller(vm: str, spec: Path, sched: Path, run_dir: Path, out: Path) -> subprocess.Popen:
    """orchestrate.remote, the controller's side of one attempt, in a session of its own (killed by its PID)."""
    return subprocess.Popen([sys.executable, "-m", "orchestrate.remote", "--vm", vm, "--spec", str(spec),
                             "--schedule", str(sched), "--run-dir", str(run_dir)], cwd=REPO, start_new_session=True,
                            stdout=out.open("w"), stderr=subprocess.STDOUT)


def _wait_for(out: Path, pattern: str, p: subprocess.Popen, timeout: float = 600):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = re.search(pattern, out.read_text())
        if m:
            return m
        assert p.poll() is None, f"the controller ended (rc {p.returncode}) before {pattern!r}:\n{out.read_text()[-3000:]}"
        time.sleep(0.5)
    raise AssertionError(f"{pattern!r} not seen in {timeout:.0f} s:\n{out.read_text()[-3000:]}")


def _mid_traffic(out: Path, p: subprocess.Popen) -> None:
    """Return 7 s after the run's t0 (the clients start their schedule a start-up lead after they are
    started, several seconds in a TCG guest): in the middle of its 15 s of traffic."""
    lead = float(_wait_for(out, r"t0 in ([\d.]+) s", p).group(1))
    _wait_for(out, r"clients started", p)
    time.sleep(lead + 7)


def _guest_leftovers(ssh, spec: dict, runner_pid: int) -> dict:
    """What of a run is on the guest: its runner, its processes (their command lines name the run's
    directory), its cgroup, its root-namespace interfaces."""
    def sh(cmd):
        return ssh.capture(cmd, timeout=120).stdout.split()
    ours = set(network.root_links(spec))
    return {"runner": sh(f"test -d /proc/{runner_pid} && echo {runner_pid} || true"),
            "processes": sh(f"pgrep -f '/var/lib/favorlab/runs/{spec['run_id']}[.]' || true"),
            "cgroup": sh(f"ls -d /sys/fs/cgroup/{hostguard.CGROUP_PREFIX}{runner_pid} 2>/dev/null || true"),
            "links": sorted(n.split("@")[0] for n in sh("ip -o link show | awk -F': ' '{print $2}'")
                            if n.split("@")[0] in ours)}


def _until_clean(ssh, spec, pid, timeout=180) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        left = _guest_leftovers(ssh, spec, pid)
        if not any(left.values()) or time.monotonic() > deadline:
            return left
        time.sleep(3)


@pytest.fixture(scope="module")
def guest_vm(shared_guest):
    t = remote.vm_target(shared_guest["vm_name"])
    return shared_guest["vm_name"], remote.Ssh(**t)


@pytest.mark.guest
@pytest.mark.slow
def test_a_killed_controller_and_a_killed_runner_leave_the_host_ready_for_the_next_attempt(guest_vm, tmp_path):
    """(1) The controller is killed (SIGKILL, by its PID) in the middle of the traffic: the runner on the
    guest sees its channel gone, stops, and tears everything down itself. (2) The runner itself is killed
    (SIGKILL) mid-traffic, so its bridges and processes stay: the next attempt on the same host removes
    them, says so, and completes (DONE, its probes pass), and nothing of either run is left."""
    vm, ssh = guest_vm
    spec_f, sched, spec = _guest_spec(tmp_path, "guard-killed-controller")
    out = tmp_path / "controller-1.out"
    p = _controller(vm, spec_f, sched, tmp_path / "runs" / spec["run_id"], out)
    pid = int(_wait_for(out, r"\(runner pid (\d+)\)", p).group(1))
    _mid_traffic(out, p)
    p.send_signal(signal.SIGKILL)
    p.wait(30)
    left = _until_clean(ssh, spec, pid)
    assert not any(left.values()), f"the killed controller's run left {left}"
    log = ssh.capture(f"cat /var/lib/favorlab/runs/{spec['run_id']}.*/log/runner.log", timeout=120).stdout
    assert "controller channel lost" in log and "STOPPED (the controller is gone" in log, log[-2000:]
    assert log.index("STOPPED") < log.index("topology down"), log[-2000:]
    assert ssh.capture(f"ls -d /var/lib/favorlab/runs/{spec['run_id']}.*/pcap 2>/dev/null", timeout=60).stdout == ""

    spec_f, sched, spec = _guest_spec(tmp_path, "guard-killed-runner")
    run_dir = tmp_path / "runs" / spec["run_id"]
    out = tmp_path / "controller-2.out"
    p = _controller(vm, spec_f, sched, run_dir, out)
    pid = int(_wait_for(out, r"\(runner pid (\d+)\)", p).group(1))
    _mid_traffic(out, p)
    assert ssh.capture(f"kill -KILL {pid}", timeout=60).returncode == 0
    assert p.wait(120) != 0 and not run_dir.exists()
    time.sleep(2)
    stale = _guest_leftovers(ssh, spec, pid)
    assert stale["links"] and stale["processes"], f"the killed runner left nothing to clean: {stale}"

    out = tmp_path / "controller-3.out"
    p = _controller(vm, spec_f, sched, run_dir, out)
    assert p.wait(900) == 0, out.read_text()[-3000:]
    log = (run_dir / "log" / "runner.log").read_text()
    cleaned = next(l for l in log.splitlines() if f"stale run {spec['run_id']} cleaned up:" in l)
    # its processes and cgroup first; its bridges by name (and a port whose namespace the kernel had not
    # freed yet: the others went with their namespaces)
    removed = set(cleaned.split("; links ")[1].split(", "))
    assert {"sL", "sR"} <= removed <= set(stale["links"]), (removed, stale["links"])
    assert "tcpdump -i a1-eth0" in cleaned and f"cgroups {hostguard.CGROUP_PREFIX}{pid}" in cleaned, cleaned
    assert (run_dir / "DONE").is_file()
    checks = json.loads((run_dir / "fidelity.json").read_text())["checks"]
    bad = {k: v["measured"] for k, v in checks.items() if (k.startswith("rtt_") or k.startswith("bottleneck_rate")
                                                          or k.startswith("foreign_traffic")) and not v["ok"]}
    assert not bad, bad
    new_pid = int(re.search(r"\(runner pid (\d+)\)", log).group(1))
    assert not any(_guest_leftovers(ssh, spec, pid).values()) and not any(_guest_leftovers(ssh, spec, new_pid).values())


@pytest.mark.guest
@pytest.mark.slow
@pytest.mark.long
def test_a_second_controller_waits_for_the_host_and_runs_after(guest_vm, tmp_path):
    """Two controllers on one host: the second's runner waits for the lock, says whose (the first's runner
    PID and run id), and builds its network only after the first tore its own down; both runs complete."""
    vm, ssh = guest_vm
    first = _guest_spec(tmp_path, "guard-first")
    second = _guest_spec(tmp_path, "guard-second")
    outs = [tmp_path / "first.out", tmp_path / "second.out"]
    dirs = [tmp_path / "runs" / "guard-first", tmp_path / "runs" / "guard-second"]
    a = _controller(vm, first[0], first[1], dirs[0], outs[0])
    pid_a = int(_wait_for(outs[0], r"\(runner pid (\d+)\)", a).group(1))
    _wait_for(outs[0], r"host lock \S+ taken", a)
    b = _controller(vm, second[0], second[1], dirs[1], outs[1])
    _wait_for(outs[1], rf"host lock \S+ held by pid {pid_a} \(run guard-first, since [^)]+\): waiting", b)
    assert a.wait(900) == 0, outs[0].read_text()[-3000:]
    assert b.wait(900) == 0, outs[1].read_text()[-3000:]
    logs = [(d / "log" / "runner.log").read_text() for d in dirs]
    assert all((d / "DONE").is_file() for d in dirs)
    assert re.search(r"host lock \S+ taken after waiting \d+ s", logs[1]), logs[1][:2000]

    def stamp(log, what):
        return next(l.split()[0] for l in log.splitlines() if what in l)
    assert stamp(logs[0], "topology down") < stamp(logs[1], "dumbbell up")
