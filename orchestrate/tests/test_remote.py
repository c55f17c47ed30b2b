"""Controller side: the .partial -> final rename, stale partials, failures leave no run directory."""
import io
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from contract import rundir
from orchestrate import remote


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """Nothing of these tests goes to the real cache (known_hosts files)."""
    monkeypatch.setenv("FAVORLAB_CACHE", str(tmp_path / "cache"))


def _inputs(tmp_path):
    spec = tmp_path / "in" / "run.json"
    spec.parent.mkdir()
    spec.write_text(json.dumps({"run_id": "r1"}))
    sched = tmp_path / "in" / "schedule.csv"
    sched.write_text("flow_id,start_s\n")
    return spec, sched


def test_stale_partial_is_removed(tmp_path):
    spec, sched = _inputs(tmp_path)
    run_dir = tmp_path / "runs" / "r1"
    stale = rundir.partial_of(run_dir)
    (stale / "pcap").mkdir(parents=True)
    (stale / "pcap" / "old.pcap").write_text("x")
    part = remote.prepare_partial(run_dir, spec, sched)
    assert part == stale and sorted(p.name for p in part.iterdir()) == ["run.json", "schedule.csv"]


def test_finalize_needs_done(tmp_path):
    spec, sched = _inputs(tmp_path)
    run_dir = tmp_path / "runs" / "r1"
    part = remote.prepare_partial(run_dir, spec, sched)
    with pytest.raises(remote.RemoteError, match="no DONE"):
        remote.finalize(run_dir)
    assert not run_dir.exists()
    (part / "DONE").write_text("t\n")
    remote.finalize(run_dir)
    assert (run_dir / "DONE").is_file() and not part.exists()


def test_finished_run_is_not_overwritten(tmp_path):
    spec, sched = _inputs(tmp_path)
    run_dir = tmp_path / "runs" / "r1"
    run_dir.mkdir(parents=True)
    with pytest.raises(remote.RemoteError, match="already exists"):
        remote.prepare_partial(run_dir, spec, sched)


class FakeSsh(remote.Ssh):
    """The 'remote host' is a local folder; the runner is replaced by a few lines of shell semantics."""

    def __init__(self, root: Path, runner_ok: bool):
        super().__init__("127.0.0.1", 22, "root")
        self.root, self.runner_ok, self.commands, self.copies = root, runner_ok, [], []
        self.alive = True

    def run(self, cmd, stream=False):
        self.commands.append(cmd)
        if cmd.startswith("cd /opt/favorlab"):
            d = self.root / cmd.split("--run-dir ")[1].lstrip("/")
            self.inputs = {f.name: f.read_text() for f in d.iterdir()}     # what the runner finds
            (d / "log").mkdir()
            (d / "log" / "runner.log").write_text("ran\n")
            if self.runner_ok:
                (d / "DONE").write_text("t\n")
            return 0 if self.runner_ok else 1
        if cmd.startswith("rm -rf"):
            target = self.root / cmd.split()[2].lstrip("/")
            shutil.rmtree(target, ignore_errors=True)
            if "mkdir" in cmd:
                target.mkdir(parents=True)
        return 0

    def answers(self, timeout=90):
        return self.alive

    free_kib = 50 * 2**20       # df's "Available" column of the fake host's disk

    def capture(self, cmd, timeout=None, input=None):
        self.commands.append(cmd)
        if cmd.startswith("rm -rf"):            # the attempt's directory made, its inputs unpacked, its disk read
            target = self.root / cmd.split()[2].lstrip("/")
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            assert " && tar -x --no-same-owner -C " in cmd
            with tarfile.open(fileobj=io.BytesIO(input)) as tar:
                tar.extractall(target)
            cmd = "df" + cmd.split(" && df")[1]
        assert cmd.startswith("df -Pk ")
        out = ("Filesystem     1024-blocks    Used Available Capacity Mounted on\n"
               f"/dev/vda         6082876 2000000 {self.free_kib} 40% /\n")
        return subprocess.CompletedProcess(cmd, 0, out, "")

    def rsync(self, src, dst):
        self.copies.append(src)
        if not self.alive:
            raise remote.RemoteError("rsync: connection unexpectedly closed (the host died)")
        if isinstance(src, str) and src.startswith(self.dest):     # pull: remote folder -> local folder
            shutil.copytree(self.root / src.split(":", 1)[1].lstrip("/"), dst, dirs_exist_ok=True)
        else:                                   # push: local files -> remote folder
            for f in ([src] if isinstance(src, str) else src):
                shutil.copy(f, self.root / dst.split(":", 1)[1].lstrip("/"))


def test_execute_success_renames_and_cleans_remote(tmp_path):
    spec, sched = _inputs(tmp_path)
    run_dir = tmp_path / "runs" / "r1"
    ssh = FakeSsh(tmp_path / "host", runner_ok=True)
    remote.execute(ssh, run_dir, spec, sched)
    assert (run_dir / "DONE").is_file() and (run_dir / "log" / "runner.log").is_file()
    assert (run_dir / "run.json").read_text() == spec.read_text()
    assert not rundir.partial_of(run_dir).exists()
    runs = tmp_path / "host" / "var/lib/favorlab/runs"
    assert runs.is_dir() and not any(runs.iterdir())        # the attempt's own directory (r1.<token>) removed


def test_execute_failure_leaves_no_run_dir(tmp_path):
    spec, sched = _inputs(tmp_path)
    run_dir = tmp_path / "runs" / "r1"
    with pytest.raises(remote.RemoteError, match="exited with 1"):
        remote.execute(FakeSsh(tmp_path / "host", runner_ok=False), run_dir, spec, sched)
    assert not run_dir.exists()
    assert (rundir.partial_of(run_dir) / "log" / "runner.log").is_file()  # kept for diagnosis
    assert not any((tmp_path / "host" / "var/lib/favorlab/runs").iterdir())  # copied back, so gone from the host


def test_two_attempts_of_one_run_get_their_own_directories_on_the_host():
    """Two controllers making the same run on one host never share, or delete, each other's directory."""
    a, b = remote.remote_dir("r1"), remote.remote_dir("r1")
    assert a != b and a.startswith(f"{remote.REMOTE_ROOT}/r1.") and b.startswith(f"{remote.REMOTE_ROOT}/r1.")


def test_a_host_that_dies_mid_run_is_unreachable(tmp_path):
    """The runner's ssh ends (255) and the copy back fails because the host died: Unreachable (the CLI
    exits 255, and orchestrate.run_step leaves the testbed out), not the run's own failure."""
    spec, sched = _inputs(tmp_path)
    run_dir = tmp_path / "runs" / "r1"
    ssh = FakeSsh(tmp_path / "host", runner_ok=True)
    real_run = ssh.run

    def dying(cmd, stream=False):
        if cmd.startswith("cd /opt/favorlab"):
            ssh.alive = False
            return 255
        return real_run(cmd, stream)
    ssh.run = dying
    with pytest.raises(remote.Unreachable, match="stopped answering"):
        remote.execute(ssh, run_dir, spec, sched)
    assert not run_dir.exists()


def test_cli_exit_codes(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FAVORLAB_CACHE", str(tmp_path / "cache"))
    for exc, rc in ((remote.Unreachable("gone"), remote.EXIT_UNREACHABLE), (remote.RemoteError("runner failed"), 1)):
        def boom(*a, exc=exc):
            raise exc
        monkeypatch.setattr(remote, "execute", boom)
        assert remote.main(["--ssh-host", "192.0.2.7", "--run-dir", str(tmp_path / "r")]) == rc
    assert remote.EXIT_UNREACHABLE == 255


def test_cli_reports_missing_target(tmp_path, capsys):
    assert remote.main(["--run-dir", str(tmp_path / "r")]) == 1
    assert "--vm NAME or --ssh-host" in capsys.readouterr().err


def test_vm_state_missing_is_clear(tmp_path, monkeypatch):
    monkeypatch.setenv("FAVORLAB_CACHE", str(tmp_path))
    with pytest.raises(remote.RemoteError, match="favorvm start --name runner"):
        remote.vm_target("runner")


def test_vm_state_gives_ssh_coordinates(tmp_path, monkeypatch):
    monkeypatch.setenv("FAVORLAB_CACHE", str(tmp_path))
    st = tmp_path / "vm" / "run" / "runner" / "state.json"
    st.parent.mkdir(parents=True)
    st.write_text(json.dumps({"ssh_port": 2299, "ssh_key": "/k", "known_hosts": "/kh"}))
    t = remote.vm_target("runner")
    assert t == {"host": "127.0.0.1", "port": 2299, "user": "root", "key": "/k", "known_hosts": "/kh"}
    ssh = remote.Ssh(**t)
    assert "UserKnownHostsFile=/kh" in ssh.opts and "2299" in ssh.opts and ssh.dest == "root@127.0.0.1"


def test_a_host_short_of_disk_is_refused_before_the_run(tmp_path):
    """A guest whose disk cannot hold the run's captures: a clear error naming the space and the fix, before
    the runner starts (the runner's command is never sent), and nothing half-made left as a run."""
    spec, sched = _inputs(tmp_path)
    run_dir = tmp_path / "runs" / "r1"
    ssh = FakeSsh(tmp_path / "host", runner_ok=True)
    ssh.free_kib = 100 * 1024
    need = remote.disk_need_mib(json.loads(spec.read_text()))
    with pytest.raises(remote.RemoteError, match=rf"has 100 MiB free under /var/lib/favorlab/runs/.*needs about "
                                                 rf"{need} MiB.*Fix: free space"):
        remote.execute(ssh, run_dir, spec, sched)
    assert not any(c.startswith("cd /opt/favorlab") for c in ssh.commands)
    assert not run_dir.exists()


def test_disk_need_grows_with_rate_duration_and_snaplen():
    base = {"topology": {"bottleneck_mbps": 10}, "duration_s": 70, "drain_s": 20, "capture": {"snaplen": 128}}
    n = remote.disk_need_mib(base)
    assert remote.DISK_MARGIN_MIB < n < remote.DISK_MARGIN_MIB + 100          # ~40 MiB of captures at 10 Mb/s
    assert remote.disk_need_mib(dict(base, topology={"bottleneck_mbps": 100})) > n + 300
    assert remote.disk_need_mib(dict(base, capture={"snaplen": 1514})) > n + 300


def test_the_controller_times_its_phases_into_the_run_directory(tmp_path):
    """The phases, each as few SSH sessions as it takes (each is tenths of a second in a TCG guest): the
    attempt's directory, its two inputs and the disk check one command; the copy back one rsync."""
    spec, sched = _inputs(tmp_path)
    run_dir = tmp_path / "runs" / "r1"
    ssh = FakeSsh(tmp_path / "host", runner_ok=True)
    remote.execute(ssh, run_dir, spec, sched)
    assert [c.split()[0] for c in ssh.commands] == ["rm", "cd", "rm"] and "mkdir -p" in ssh.commands[0]
    assert len(ssh.copies) == 1
    assert ssh.inputs == {"run.json": spec.read_text(), "schedule.csv": sched.read_text()}
    phases = json.loads((run_dir / rundir.CONTROLLER).read_text())["phases_s"]
    assert list(phases) == ["connect, copy in and space check", remote.RUNNER_PHASE, "copy back", "host clean-up",
                            "captures' foreign packets"]
    assert all(isinstance(s, float) and s >= 0 for s in phases.values())


class RunnerWithCaptures(FakeSsh):
    """A runner that leaves a complete run: hosts.json, a valid fidelity.json and the captures `pcaps` (name ->
    packets)."""
    hostsj = {"hosts": {"a1": {"ip": "10.1.0.1", "gw": "10.1.0.254"}, "b1": {"ip": "10.2.0.1", "gw": "10.2.0.254"}}}

    def __init__(self, root: Path, pcaps: dict):
        super().__init__(root, runner_ok=True)
        self.pcaps = pcaps

    def run(self, cmd, stream=False):
        rc = super().run(cmd, stream)
        if cmd.startswith("cd /opt/favorlab"):
            from scapy.all import wrpcap
            d = self.root / cmd.split("--run-dir ")[1].lstrip("/")
            (d / rundir.HOSTS).write_text(json.dumps(self.hostsj))
            (d / rundir.FIDELITY).write_text(json.dumps({"valid": True, "reasons": [], "warnings": [], "checks": {
                "cpu_busy": {"configured": 0.9, "measured": 0.3, "ok": True}}}))
            (d / "pcap").mkdir()
            for name, pkts in self.pcaps.items():
                wrpcap(str(d / "pcap" / f"{name}.pcap"), pkts)
        return rc


def test_the_controller_adds_the_foreign_packet_checks_of_the_copied_captures(tmp_path):
    """The captures are read for packets that are not the experiment's on the controller, after the copy back:
    foreign packets at the bottleneck make the run invalid, elsewhere a warning; the runner's checks stay."""
    if not shutil.which("tcpdump"):
        pytest.skip("tcpdump not installed (apt-get install tcpdump); the controller's check of the captures needs it")
    from scapy.all import BOOTP, IP, TCP, UDP, Ether
    own = [Ether() / IP(src="10.1.0.1", dst="10.2.0.1") / TCP(sport=40000, dport=5001, flags="S"),
           Ether() / IP(src="10.2.0.254", dst="10.1.0.1") / TCP(sport=5001, dport=40000, flags="SA")]
    dhcp = Ether() / IP(src="0.0.0.0", dst="255.255.255.255") / UDP(sport=68, dport=67) / BOOTP()
    stray = Ether() / IP(src="10.1.0.1", dst="10.9.9.9") / TCP(sport=40001, dport=80)
    spec, sched = _inputs(tmp_path)
    dirty = tmp_path / "runs" / "dirty"
    remote.execute(RunnerWithCaptures(tmp_path / "host", {"bneck-in": own + [dhcp], "bneck-out": own,
                                                          "sender-a1": own + [stray, stray], "sender-b1": own}),
                   dirty, spec, sched)
    fid = json.loads((dirty / rundir.FIDELITY).read_text())
    assert fid["valid"] is False and fid["checks"]["cpu_busy"]["ok"]
    assert [r.split(":")[0] for r in fid["reasons"]] == ["foreign_traffic_bottleneck"]
    assert [w.split(":")[0] for w in fid["warnings"]] == ["foreign_traffic_elsewhere"]
    assert fid["checks"]["foreign_traffic_bottleneck"]["measured"]["bneck-in"]["packets"] == 1
    assert "0.0.0.0.68 > 255.255.255.255.67" in fid["checks"]["foreign_traffic_bottleneck"]["measured"]["bneck-in"]["first"][0]
    elsewhere = fid["checks"]["foreign_traffic_elsewhere"]["measured"]
    assert list(elsewhere) == ["sender-a1"] and elsewhere["sender-a1"]["packets"] == 2
    assert "10.9.9.9" in elsewhere["sender-a1"]["first"][0]
    clean = tmp_path / "runs" / "clean"
    remote.execute(RunnerWithCaptures(tmp_path / "host", {n: own for n in ("bneck-in", "bneck-out", "sender-a1",
                                                                           "sender-b1")}), clean, spec, sched)
    fid = json.loads((clean / rundir.FIDELITY).read_text())
    assert fid["valid"] is True and fid["reasons"] == [] and fid["warnings"] == []
    assert fid["checks"]["foreign_traffic_bottleneck"]["measured"] == 0
    assert fid["checks"]["foreign_traffic_elsewhere"]["measured"] == 0


def test_a_controller_without_tcpdump_is_refused_before_the_run(tmp_path, monkeypatch):
    """The captures are read on the controller after the run: without tcpdump it fails before, naming the fix."""
    monkeypatch.setattr(remote.shutil, "which", lambda name: None)
    spec, sched = _inputs(tmp_path)
    ssh = FakeSsh(tmp_path / "host", runner_ok=True)
    with pytest.raises(remote.RemoteError, match="apt-get install tcpdump"):
        remote.execute(ssh, tmp_path / "runs" / "r1", spec, sched)
    assert ssh.commands == [] and ssh.copies == []


def test_ssh_shares_one_connection_per_host_but_checks_liveness_on_a_fresh_one(tmp_path):
    """Every ssh and rsync of the attempts rides on one master connection (ControlMaster, a private socket
    directory); the liveness check opens its own, so a dead host's stale master cannot answer for it."""
    ssh = remote.Ssh("192.0.2.7", 2222, "root", key="/k")
    assert "ControlMaster=auto" in ssh.opts and any(o.startswith("ControlPersist=") for o in ssh.opts)
    path = next(o.split("=", 1)[1] for o in ssh.opts if o.startswith("ControlPath="))
    d = Path(path).parent
    assert d.is_dir() and d.stat().st_mode & 0o077 == 0 and len(path.replace("%C", "x" * 40)) < 100
    assert "ControlMaster=auto" in ssh.ssh_cmd()                     # rsync's -e
    assert not any(o.startswith("Control") for o in ssh.fresh_opts)
    assert "ControlPath" not in " ".join(ssh.common_args)            # Ansible keeps its own
