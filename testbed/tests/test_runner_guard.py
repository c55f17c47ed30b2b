"""A runner that survives a lost controller, one run per host, a dead run's leftovers cleaned, and a copy-back
that brings only plain files: testbed/runner/hostguard.py, the runner's Log and tear-down, orchestrate.remote's
rsync and die_with_parent, without a network or a guest (test_runner_guard_guest.py has the runs)."""
import json
import os
import shlex
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from orchestrate import remote
from testbed.runner import hostguard, network, processes
from testbed.runner.run import Runner

REPO = Path(__file__).resolve().parents[2]


def gone(pid: int, within: float = 10.0) -> bool:
    """True once `pid` has exited (or is a zombie) within `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if hostguard.proc_start(pid) is None:     # gone, or a zombie
            return True
        time.sleep(0.05)
    return False


def _py(code: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], cwd=REPO, **kw)


def test_log_goes_on_in_its_file_after_stdout_breaks(tmp_path):
    """The controller's channel breaks after the first line: every line still reaches the file, stdout is
    not written again, and the runner is told once."""
    class Broken:
        writes = 0

        def write(self, s):
            Broken.writes += 1
            if Broken.writes > 1:
                raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            pass
    lost = []
    log = processes.Log(tmp_path / "log" / "runner.log", stream=Broken(), on_lost=lost.append)
    for i in range(5):
        log(f"line {i}")
    text = (tmp_path / "log" / "runner.log").read_text()
    assert [f"line {i}" in text for i in range(5)] == [True] * 5
    assert "controller channel lost: stdout failed (BrokenPipeError" in text
    assert len(lost) == 1 and Broken.writes == 2


def test_a_process_whose_stdout_reader_is_gone_logs_to_the_end_and_exits_cleanly(tmp_path):
    """The real case: stdout is a pipe whose reader closed (the SSH session of a killed controller). The
    process keeps logging to its file, exits 0 (no BrokenPipeError at Python's final flush either), and the
    lost channel is noticed once."""
    r, w = os.pipe()
    os.close(r)
    code = ("import sys; from pathlib import Path; from testbed.runner.processes import Log\n"
            f"log = Log(Path({str(tmp_path)!r}) / 'runner.log', on_lost=lambda why: "
            f"Path({str(tmp_path)!r}, 'lost').open('a').write(why + '\\n'))\n"
            "for i in range(20): log(f'line {i}')\n"
            "print('after the log', flush=True)\n")
    p = _py(code, stdout=w, stderr=subprocess.PIPE)
    os.close(w)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert b"Exception ignored" not in err and b"Traceback" not in err
    lines = (tmp_path / "runner.log").read_text().splitlines()
    assert sum(1 for l in lines if " line " in l) == 20
    assert len((tmp_path / "lost").read_text().splitlines()) == 1


def test_the_hangup_watch_sees_a_closed_reader():
    """Between two log lines (minutes of traffic) the watch notices that the channel's reader closed."""
    r, w = os.pipe()
    seen, halt = threading.Event(), threading.Event()
    hostguard.watch_hangup(w, seen.set, halt, every_s=0.1)
    time.sleep(0.3)
    assert not seen.is_set()
    os.close(r)
    assert seen.wait(5)
    halt.set()
    os.close(w)


def test_a_signal_stops_the_run_but_waits_for_a_deferred_step_and_never_cuts_the_teardown():
    st = hostguard.Stopper()
    old = {s: signal.getsignal(s) for s in (*hostguard.Stopper.SIGNALS, signal.SIGPIPE)}
    try:
        st.install()
        with pytest.raises(hostguard.Stopped, match="SIGHUP"):
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(1)
        st.reason = None
        steps = []
        with pytest.raises(hostguard.Stopped, match="SIGTERM"):
            with st.deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.2)
                steps.append("the deferred step ran to its end")
        assert steps == ["the deferred step ran to its end"]
        st.reason, st.tearing_down = None, True
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(0.2)
        assert st.reason == "signal SIGHUP"      # recorded, not raised
    finally:
        for s, h in old.items():
            signal.signal(s, h)


class _Net:
    def __init__(self, calls):
        self.calls = calls

    def stop(self):
        self.calls.append("net.stop")


class _FailingRto:
    def __init__(self, calls, exc):
        self.calls, self.exc = calls, exc

    def detach(self):
        self.calls.append("rto.detach")
        raise self.exc


@pytest.mark.parametrize("exc", [RuntimeError("bpf detach failed"), hostguard.Stopped("signal SIGHUP")])
def test_teardown_runs_every_step_when_one_fails(tmp_path, monkeypatch, exc):
    """A failing step (an error, or a stop request arriving then) is logged and the next steps run: the
    processes stopped first, the network always stopped, a process only the pidfile knows stopped too."""
    calls = []
    r = Runner(tmp_path)
    r.ctx.spec = {"topology": {"kind": "dumbbell"}, "aqm": {"forward": {"kind": "pfifo"}}}
    r.ctx.net, r.ctx.rto = _Net(calls), _FailingRto(calls, exc)
    r.ctx.cgroup = type("Cg", (), {"path": tmp_path / "cg"})()
    monkeypatch.setattr(hostguard, "remove_cgroup", lambda path, log: calls.append("cgroup"))
    monkeypatch.setattr(hostguard, "ip_links", lambda: [{"ifname": "sL-a1"}, {"ifname": "eth0"}])
    monkeypatch.setattr(hostguard, "remove_links", lambda names, log: calls.append(("links", names)) or names)
    managed = processes.popen(["sleep", "60"])
    r.ctx.procs["server-a1"] = managed
    pidfile = hostguard.PidFile(tmp_path)
    pidfile.start("r", [])
    monkeypatch.setattr(processes, "PIDFILE", pidfile)
    orphan = subprocess.Popen(["sleep", "60"], start_new_session=True)   # started, not yet in ctx.procs
    pidfile.add(orphan.pid, "sleep 60")
    try:
        r.teardown()
    finally:
        processes.STOPPER.tearing_down = False
        for p in (managed, orphan):
            if p.poll() is None:
                p.kill()
    assert managed.wait(1) is not None and orphan.wait(10) is not None
    assert calls == ["rto.detach", "cgroup", "net.stop", ("links", ["sL-a1"])]
    log = (tmp_path / "log" / "runner.log").read_text()
    assert f"teardown: detach the initial RTO program failed: {type(exc).__name__}" in log
    assert "topology down" in log and f"stopped leftover processes sleep 60 (pid {orphan.pid})" in log


HOLDER = ("import sys, time; from testbed.runner import hostguard\n"
          "l = hostguard.HostLock()\n"
          "l.acquire('holder-run', float(sys.argv[1]), print)\n"
          "print('held', flush=True)\n"
          "time.sleep(float(sys.argv[2]))\n")


def _holder(tmp_path, hold_s: float, expected_s: float = 60) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(expected_s), str(hold_s)], cwd=REPO, text=True,
                         stdout=subprocess.PIPE, env=dict(os.environ, FAVORLAB_LOCK_DIR=str(tmp_path)))
    while "held" not in p.stdout.readline():
        assert p.poll() is None, "the holder did not get the lock"
    return p


def test_a_second_run_waits_for_the_lock_says_whom_for_and_then_gets_it(tmp_path):
    holder = _holder(tmp_path, hold_s=2.0)
    said = []
    waited = hostguard.HostLock(tmp_path).acquire("second-run", 60, said.append, wait_s=60, poll_s=0.1)
    holder.wait(10)
    assert 1.0 <= waited < 30
    assert f"held by pid {holder.pid} (run holder-run, since " in said[0] and "waiting" in said[0]
    assert said[-1].startswith(f"host lock {tmp_path / hostguard.LOCK_NAME} taken after waiting")
    assert hostguard.HostLock(tmp_path).holder()["run_id"] == "second-run"


def test_a_dead_holder_frees_the_lock(tmp_path):
    holder = _holder(tmp_path, hold_s=600)
    holder.send_signal(signal.SIGKILL)
    holder.wait(10)
    lock = hostguard.HostLock(tmp_path)
    t0 = time.monotonic()
    lock.acquire("next-run", 60, lambda m: None, wait_s=5, poll_s=0.1)
    assert time.monotonic() - t0 < 1.0
    lock.release()


def test_the_wait_is_bounded_and_names_the_holder(tmp_path):
    holder = _holder(tmp_path, hold_s=600)
    try:
        with pytest.raises(hostguard.HostBusy, match=rf"pid {holder.pid} \(run holder-run, since .*waited 1 s.*Fix"):
            hostguard.HostLock(tmp_path).acquire("second-run", 60, lambda m: None, wait_s=1.0, poll_s=0.1)
    finally:
        holder.kill()
        holder.wait()


def test_the_default_wait_follows_the_holders_expected_end(tmp_path, monkeypatch):
    """With no bound given, a run waits until LOCK_WAIT_MIN_S past the holder's expected end."""
    holder = _holder(tmp_path, hold_s=600, expected_s=3)
    monkeypatch.setattr(hostguard, "LOCK_WAIT_MIN_S", 1.0)
    said = []
    try:
        with pytest.raises(hostguard.HostBusy):
            hostguard.HostLock(tmp_path).acquire("second-run", 60, said.append, poll_s=0.1)
    finally:
        holder.kill()
        holder.wait()
    limit = float(said[0].split("at most ")[1].split(" s")[0])
    assert 2.0 <= limit <= 5.0


def _link(name, kind=None, master=None):
    return {"ifname": name, **({"master": master} if master else {}), **({"linkinfo": {"info_kind": kind}} if kind else {})}


LINKS = [
    _link("lo"), _link("eth0"), _link("docker0", "bridge"), _link("veth12ab", "veth", "docker0"),
    # a dead dumbbell
    _link("sL", "bridge"), _link("sR", "bridge"), *(_link(f"sL-{h}", "veth", "sL") for h in ("a1", "a2", "a3", "rl")),
    *(_link(f"sR-{h}", "veth", "sR") for h in ("b1", "rr")),
    # a dead chain's first LAN
    _link("s0", "bridge"), _link("s0-r0", "veth", "s0"), _link("s0-us", "veth", "s0"), _link("s0-x1s1", "veth", "s0"),
    # someone else's Mininet with its default names: an OVS s1, a Linux-bridge s2, a host end h1-eth0
    _link("s1", "openvswitch"), _link("s1-eth1", "veth", "s1"), _link("s2", "bridge"),
    _link("s2-eth1", "veth", "s2"), _link("h1-eth0", "veth"), _link("sLx", "bridge"), _link("sL-h1", "veth"),
]


def test_stale_selection_takes_only_our_interfaces():
    got = hostguard.select_stale_links(LINKS)
    assert got == ["sL-a1", "sL-a2", "sL-a3", "sL-rl", "sR-b1", "sR-rr", "s0-r0", "s0-us", "s0-x1s1", "sL", "sR", "s0"]


def test_the_p4_ports_go_only_when_the_dead_run_recorded_them():
    links = [_link("s1-eth1", "veth"), _link("s1-eth2", "veth"), _link("s2-eth1", "veth")]
    assert hostguard.select_stale_links(links) == []
    assert hostguard.select_stale_links(links, ["s1-eth1", "s1-eth2", "s2-eth1", "eth0"]) == ["s1-eth1", "s1-eth2"]


def test_stale_cgroups_are_those_of_dead_runners():
    names = ["favorlab-run-101", "favorlab-run-202", "system.slice", "favorlab-run-x", "other-run-101"]
    assert hostguard.select_stale_cgroups(names, alive=lambda pid: pid == 202) == ["favorlab-run-101"]


def test_the_dumbbells_and_chains_root_interfaces_are_all_recognised_as_ours():
    """The names the runner records for its topologies (runner.root_links) are the ones the selection takes."""
    from contract.tests.examples import SPEC, chain_spec
    for spec in (SPEC, chain_spec(), dict(SPEC, aqm={"forward": {"kind": "p4", "args": []}})):
        names = network.root_links(spec)
        links = [_link(n, "bridge" if "-" not in n else "veth", None if "-" not in n else n.split("-")[0])
                 for n in names]
        assert sorted(hostguard.select_stale_links(links, names)) == sorted(names), spec["topology"]["kind"]


def test_clean_stale_stops_only_the_recorded_processes_that_are_still_the_same(tmp_path, monkeypatch):
    """The pidfile's live processes are stopped (their process group too); a recorded PID whose start time
    differs (reused by another process since) is left alone; the cleanup says what it removed."""
    pidfile = hostguard.PidFile(tmp_path)
    pidfile.start("dead-run", ["sL", "sL-a1"])
    ours = subprocess.Popen(["sh", "-c", "sleep 60 & wait"], start_new_session=True)
    pidfile.add(ours.pid, "tcpdump -i a1-eth0")
    stranger = subprocess.Popen(["sleep", "60"], start_new_session=True)
    with pidfile.path.open("a") as f:      # the stranger has the PID of a recorded process, not its start time
        f.write(json.dumps({"pid": stranger.pid, "start": "1", "what": "iperf3"}) + "\n")
    monkeypatch.setattr(hostguard, "ip_links", lambda: LINKS)
    removed_links = []
    monkeypatch.setattr(hostguard, "remove_links", lambda names, log: removed_links.extend(names) or names)
    said = []
    try:
        removed = hostguard.clean_stale(said.append, pidfile, cgroup_root=tmp_path / "no-cgroups")
        assert ours.wait(10) is not None and stranger.poll() is None
    finally:
        for p in (ours, stranger):
            p.kill()
            p.wait()
    assert removed["processes"] == [f"tcpdump -i a1-eth0 (pid {ours.pid})"]
    assert removed_links == hostguard.select_stale_links(LINKS, ["sL", "sL-a1"])
    assert said[-1].startswith("stale run dead-run cleaned up: processes tcpdump -i a1-eth0") and "links sL-a1" in said[-1]
    assert not pidfile.path.exists()


def test_the_copy_back_brings_plain_files_only(tmp_path):
    """rsync with the copy-back's own options (less the ssh transport), between two local folders: regular
    files and directories with their mtimes come back; no setuid or setgid bit, no device or FIFO, no
    symlink pointing out of the run directory (one pointing inside stays), nothing executable."""
    src, dst = tmp_path / "host" / "run", tmp_path / "part"
    (src / "log").mkdir(parents=True)
    (src / "log" / "runner.log").write_text("ran\n")
    os.utime(src / "log" / "runner.log", (1_700_000_000, 1_700_000_000))
    tool = src / "suid-tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o6755)
    os.mkfifo(src / "fifo")
    (src / "outside").symlink_to("/etc/passwd")
    (src / "escape").symlink_to("../../../etc")
    (src / "inside").symlink_to("log/runner.log")
    if os.geteuid() == 0:
        os.mknod(src / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    dst.mkdir()
    argv = remote.Ssh("192.0.2.7", 22, "root").rsync_argv(f"{src}/", f"{dst}/")
    i = argv.index("-e")
    argv = argv[:i] + argv[i + 2:]
    assert "-a" not in argv and not any(a in ("-D", "-o", "-g", "-p", "--devices", "--specials") for a in argv)
    p = subprocess.run(argv, capture_output=True, text=True)
    assert p.returncode in (0, 23), p.stderr       # 23: some files were skipped (the ones refused), said on stderr
    assert sorted(x.name for x in dst.iterdir()) == ["inside", "log", "suid-tool"]
    assert (dst / "log" / "runner.log").stat().st_mtime == 1_700_000_000
    assert stat.S_IMODE((dst / "suid-tool").stat().st_mode) == 0o644
    assert stat.S_IMODE((dst / "log").stat().st_mode) == 0o755
    assert (dst / "inside").is_symlink() and (dst / "inside").read_text() == "ran\n"


def test_the_ssh_under_a_killed_controller_goes_with_it(tmp_path):
    """die_with_parent: the child (the ssh of a runner's session) ends when its controller is killed, even
    by SIGKILL, so the session closes and the runner sees its controller gone."""
    code = ("import subprocess, sys, time; from orchestrate import remote\n"
            "c = subprocess.Popen(['sleep', '120'], preexec_fn=remote.die_with_parent())\n"
            "print(c.pid, flush=True); time.sleep(120)\n")
    parent = _py(code, stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    assert hostguard.proc_start(child) is not None
    parent.send_signal(signal.SIGKILL)
    parent.wait(10)
    assert gone(child), "the child outlived its killed parent"


def test_stopping_several_processes_signals_them_all_before_waiting_for_any(tmp_path):
    """The captures and servers of a run end in the time of the slowest: each one here takes 0.5 s to exit
    after its signal, so three stopped one after another would take 1.5 s."""
    slow = 'import signal, sys, time\nsignal.signal(signal.SIGTERM, lambda *a: (time.sleep(0.5), sys.exit(3)))\ntime.sleep(60)'
    ps = [subprocess.Popen([sys.executable, "-c", slow], start_new_session=True) for _ in range(3)]
    time.sleep(1.0)           # each has installed its handler
    t = time.monotonic()
    assert processes.stop_many(ps) == [3, 3, 3]
    assert time.monotonic() - t < 1.2
    # one that ignores its signal is killed after the wait, and the others are still waited for
    stubborn = subprocess.Popen([sys.executable, "-c", "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                                 "time.sleep(60)"], start_new_session=True)
    quick = subprocess.Popen(["sleep", "60"], start_new_session=True)
    time.sleep(0.5)
    assert processes.stop_many([stubborn, quick], wait=1.0) == [-9, -15]


def test_the_interfaces_read_from_sysfs_are_what_ip_link_says_of_them():
    """hostguard.ip_links against `ip -j -d link show` in a network (and mount) namespace of the test's own,
    holding a bridge with a veth port and the veth's other end: the same names, masters and bridge."""
    if subprocess.run(["unshare", "-n", "-m", "true"], capture_output=True).returncode:
        pytest.skip("cannot make namespaces here (needs root and unshare)")
    probe = ("import json, subprocess; from testbed.runner import hostguard; "
             "ip = json.loads(subprocess.run(['ip', '-j', '-d', 'link', 'show'], capture_output=True).stdout); "
             "print(json.dumps([sorted((l['ifname'], l.get('master'), (l.get('linkinfo') or {}).get('info_kind') == 'bridge') "
             "for l in links) for links in (hostguard.ip_links(), ip)]))")
    script = ("mount -t sysfs sysfs /sys && ip link add sL type bridge && ip link add sL-a1 type veth peer name a1-eth0 "
              f"&& ip link set sL-a1 master sL && {sys.executable} -c {shlex.quote(probe)}")
    p = subprocess.run(["unshare", "-n", "-m", "sh", "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    read, said = json.loads(p.stdout)
    assert read == said
    assert ["sL", None, True] in read and ["sL-a1", "sL", False] in read and ["a1-eth0", None, False] in read
    assert hostguard.select_stale_links(hostguard.ip_links(Path("/nonexistent"))) == []
