"""Controller side of one run: push the run spec to a testbed host, run it there, pull the run back.

    python -m orchestrate.remote --ssh-host 127.0.0.1 --ssh-port P --ssh-key K --ssh-user root \\
        [--known-hosts F [--host-key-checking yes|accept-new]] [--ssh-args='-o ProxyCommand=...'] \\
        --spec run.json --schedule schedule.csv --run-dir results/<cfg>/runs/<run_id>
    python -m orchestrate.remote --vm NAME --spec ... --schedule ... --run-dir ...

Works in <run-dir>.partial (a leftover one from an interrupted attempt is removed first) and renames it
to <run-dir> only when DONE came back, so an interrupted run never looks finished. On failure it exits
non-zero and <run-dir> does not exist: 255 (as ssh) when the host stopped answering (a step failed and a
fresh `ssh true` fails too: the testbed died, hangs or is unreachable), 1 for any other failure (the
runner failed on a host that still answers). Without --spec/--schedule, run.json and schedule.csv are
taken from <run-dir>.partial if an earlier step put them there.

Host keys are checked against --known-hosts (StrictHostKeyChecking=yes, or --host-key-checking
accept-new: recorded there on first contact); without it, and without a UserKnownHostsFile in
--ssh-args, against ${FAVORLAB_CACHE:-~/.cache/favorlab}/known_hosts/<host>_<port> (accept-new), never
the user's ~/.ssh/known_hosts.
"""
from __future__ import annotations

import argparse
import ctypes
import io
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path

from contract import rundir
from orchestrate import atomic
from orchestrate.pool import cache_root, known_hosts_file
from testbed.runner import captures, fidelity

REMOTE_ROOT = "/var/lib/favorlab/runs"
REMOTE_REPO = "/opt/favorlab"


EXIT_UNREACHABLE = 255
# The phase that holds the runner's whole ssh session; orchestrate.run_step puts the runner's own phases
# (the manifest's phases_s) in its place and what is left of it becomes "runner start and exit".
RUNNER_PHASE = "runner"


class RemoteError(RuntimeError):
    pass


class Unreachable(RemoteError):
    """The host stopped answering SSH (orchestrate.run_step leaves such a testbed out and the job is retried elsewhere)."""


def prepare_partial(run_dir: Path, spec: Path | None, schedule: Path | None) -> Path:
    """Fresh <run-dir>.partial holding run.json and schedule.csv; refuses to overwrite a finished run."""
    if run_dir.exists():
        raise RemoteError(f"{run_dir} already exists (a finished run); delete it to run it again")
    part = rundir.partial_of(run_dir)
    keep = {}
    for name, src in ((rundir.SPEC, spec), (rundir.SCHEDULE, schedule)):
        src = src or part / name
        if not src.is_file():
            raise RemoteError(f"{name} not found (give --{'spec' if name == rundir.SPEC else 'schedule'})")
        keep[name] = src.read_bytes()
    if part.exists():
        shutil.rmtree(part)
    part.mkdir(parents=True)
    for name, data in keep.items():
        (part / name).write_bytes(data)
    return part


def finalize(run_dir: Path) -> Path:
    """Atomically rename <run-dir>.partial to <run-dir> if DONE is there."""
    part = rundir.partial_of(run_dir)
    if not (part / rundir.DONE).is_file():
        raise RemoteError(f"{part} has no {rundir.DONE}: the run did not complete (see {part}/{rundir.RUNNER_LOG})")
    os.replace(part, run_dir)
    return run_dir


def vm_target(name: str) -> dict:
    state = cache_root() / "vm" / "run" / name / "state.json"
    if not state.is_file():
        raise RemoteError(f"VM {name}: {state} not found; start it with testbed/vm/favorvm start --name {name}")
    s = atomic.read_json(state, what="the VM is taken as not running")
    if not isinstance(s, dict):
        raise RemoteError(f"VM {name}: {state} is empty or not a favorvm state file; start it again with "
                          f"testbed/vm/favorvm start --name {name}")

    def pick(*keys, default=None):
        return next((s[k] for k in keys if s.get(k) is not None), default)
    port = pick("ssh_port", "port")
    if port is None:
        raise RemoteError(f"{state} has no ssh_port; is it a favorvm state file?")
    return {"host": pick("ssh_host", "host", default="127.0.0.1"), "port": int(port),
            "user": pick("ssh_user", "user", default="root"), "key": pick("ssh_key", "key"),
            "known_hosts": pick("known_hosts", "known_hosts_file")}   # favorvm's, from the image's host key


PR_SET_PDEATHSIG = 1   # linux/prctl.h


def die_with_parent(sig: int = signal.SIGTERM):
    """A preexec_fn: the child gets `sig` when the process that started it ends, however it ends (SIGKILL
    included). An ssh left behind by a killed controller keeps the runner's session open; with this the
    session closes and the runner on the host sees its controller gone. The standard library has no
    prctl(2), hence ctypes; where prctl is missing (not Linux) the child is left as it is."""
    parent = os.getpid()
    try:        # looked up here, in the parent: the child between fork and exec should only call it
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        prctl = None

    def preexec():
        if prctl is None:
            return
        prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:      # the parent died before prctl: the signal would never come
            os.kill(os.getpid(), sig)
    return preexec


# How long a shared SSH connection outlives its last use: long enough to carry the next attempt (the
# controller of the next run starts within seconds), short enough to be gone soon after a pipeline ends.
CONTROL_PERSIST_S = 60


def control_dir() -> Path:
    """Where the shared connections' sockets live: a short path (a Unix socket's path has at most 107
    bytes, and %C adds 40), private to this user."""
    d = Path("/tmp") / f"favorlab-ssh-{os.getuid()}"
    d.mkdir(mode=0o700, exist_ok=True)
    if d.stat().st_uid != os.getuid() or d.stat().st_mode & 0o077:
        raise RemoteError(f"{d} is not a private directory of this user; remove it (it holds SSH control sockets)")
    return d


COMPRESS = ["-z", "--compress-level=1"]


class Ssh:
    """ssh/rsync to a testbed host. A login other than root (CloudLab, FABRIC: a user with passwordless
    sudo) runs every command and the remote rsync through sudo, as the runner needs root. ssh_args are
    the inventory's ansible_ssh_common_args (FABRIC: the ProxyCommand through its bastion); they come
    first because ssh keeps the first value it is given for an option; the host-key options come before
    them, so the known_hosts file given here wins over what the inventory says."""

    def __init__(self, host, port, user, key=None, known_hosts=None, ssh_args=None, host_key_checking=None):
        self.dest = f"{user}@{host}"
        # rsync reads host:path, so an IPv6 address needs brackets there (ssh takes it bare)
        self.rsync_dest = f"{user}@[{host}]" if ":" in str(host) else self.dest
        self.sudo = user != "root"
        extra = shlex.split(ssh_args or "")
        if not known_hosts and not any(o.lower().startswith("userknownhostsfile") for o in extra):
            known_hosts = known_hosts_file(re.sub(r"[^A-Za-z0-9._-]", "_", f"{host}_{port}"))
            host_key_checking = host_key_checking or "accept-new"
        self.known_hosts = known_hosts
        common = []
        if known_hosts:
            common += ["-o", f"UserKnownHostsFile={known_hosts}",
                       "-o", f"StrictHostKeyChecking={host_key_checking or 'yes'}"]
        # what Ansible gets as ansible_ssh_common_args (it sets port, user and key itself), so the
        # provisioning checks the host's key exactly as the runs do
        self.common_args = common + extra
        opts = list(self.common_args)
        opts += ["-p", str(port), "-o", "BatchMode=yes", "-o", "ServerAliveInterval=15", "-o", "ConnectTimeout=20"]
        if key:
            opts += ["-i", str(key), "-o", "IdentitiesOnly=yes"]
        # One connection per testbed: every ssh and rsync of an attempt, and those of the next attempts
        # within CONTROL_PERSIST_S, ride on the first one's. A new connection costs a key exchange, which a
        # TCG guest's sshd makes slowly (docs/measurements.md, "one SSH connection per testbed").
        self.fresh_opts = list(opts)
        opts += ["-o", "ControlMaster=auto", "-o", f"ControlPath={control_dir()}/%C",
                 "-o", f"ControlPersist={CONTROL_PERSIST_S}"]
        self.opts = opts

    def ssh_cmd(self) -> str:
        return "ssh " + " ".join(shlex.quote(o) for o in self.opts)

    def at(self, path: str) -> str:
        """The rsync argument for `path` on the host."""
        return f"{self.rsync_dest}:{path}"

    def command(self, cmd: str) -> str:
        return f"sudo -n sh -c {shlex.quote(cmd)}" if self.sudo else cmd

    def _ready(self) -> None:
        """ssh records an accepted key only into a directory that exists (made here, at first use)."""
        if self.known_hosts:
            Path(self.known_hosts).parent.mkdir(parents=True, exist_ok=True)

    def answers(self, timeout: float = 90) -> bool:
        """A fresh `ssh true` succeeds: the host is alive and reachable."""
        self._ready()
        try:
            # its own connection: a shared one to a host that died answers nothing until its keepalives fail
            return subprocess.run(["ssh", *self.fresh_opts, self.dest, "true"], capture_output=True,
                                  stdin=subprocess.DEVNULL, timeout=timeout,
                                  preexec_fn=die_with_parent()).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def capture(self, cmd: str, timeout: float | None = None,
                input: bytes | None = None) -> subprocess.CompletedProcess:
        """Run cmd (through sudo for a non-root login), its output captured as text; `input` is its stdin."""
        self._ready()
        # its own stdin: ssh leaves a shared one non-blocking when it dies mid-session (see favorvm's probe)
        argv = ["ssh", *self.opts, self.dest, self.command(cmd)]
        if input is None:
            return subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=timeout,
                                  preexec_fn=die_with_parent())
        p = subprocess.run(argv, capture_output=True, input=input, timeout=timeout, preexec_fn=die_with_parent())
        return subprocess.CompletedProcess(argv, p.returncode, p.stdout.decode(errors="replace"),
                                           p.stderr.decode(errors="replace"))

    def run(self, cmd: str, stream=False) -> int:
        self._ready()
        argv = ["ssh", *self.opts, self.dest, self.command(cmd)]
        if stream:
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 preexec_fn=die_with_parent())
            for line in p.stdout:
                print(f"  | {line}", end="", flush=True)
            return p.wait()
        return subprocess.run(argv, preexec_fn=die_with_parent()).returncode

    def rsync_argv(self, src: str | list[str], dst: str) -> list[str]:
        """rsync's command. A run directory comes from a host that the controller does not have to trust
        (a testbed shared with others, or broken into), and the controller often copies it as root, so
        only what the analysis reads comes back: directories, regular files and their mtimes (-rlt), never
        device or special files, owners, groups, ACLs or extended attributes (no -a, -D, -o, -g, -A, -X);
        every file mode is plain (--chmod: no setuid, setgid or sticky bit, nothing executable); symlinks
        only when they point inside the copied tree (--safe-links skips the others). The mtimes are kept
        for whoever reads the run's files; Snakemake judges a directory output by the
        .snakemake_timestamp it writes itself, not by them.

        Compressed at level 1 (-z: rsync 3.2 on both ends negotiates zstd, an older one zlib): the captures
        compress several times over, and the copy back out of a TCG guest took a quarter of the time
        (docs/measurements.md, "Copying a run back"; python -m orchestrate.bench_copy_back)."""
        sudo = ["--rsync-path=sudo -n rsync"] if self.sudo else []
        return ["rsync", "-rlt", "--safe-links", "--no-devices", "--no-specials", "--no-perms",
                "--chmod=D755,F644", "--partial", *COMPRESS, *sudo, "-e", self.ssh_cmd(),
                *([src] if isinstance(src, str) else src), dst]

    def rsync(self, src: str | list[str], dst: str) -> None:
        self._ready()
        p = subprocess.run(self.rsync_argv(src, dst), capture_output=True, text=True, preexec_fn=die_with_parent())
        if p.returncode:
            raise RemoteError(f"rsync {src} -> {dst} failed: {p.stderr.strip()}")


# Beside a run's captures: its logs, the favor trace, qdisc and nstat snapshots (MiB).
DISK_MARGIN_MIB = 256


def disk_need_mib(spec: dict) -> int:
    """What a run leaves on the host's disk before it is copied back, estimated from run.json with room to
    spare: snaplen bytes (and pcap's 16) of every packet at every capture point, about four bottlenecks' worth
    of full-size packets a second in all (arrivals and departures at the bottleneck, the senders' own, the
    ACKs), over the traffic, the drain and 30 s of probes, plus DISK_MARGIN_MIB."""
    topo, cap = spec.get("topology", {}), spec.get("capture", {})
    pps = float(topo.get("bottleneck_mbps") or 10) * 1e6 / 8 / 1500
    seconds = float(spec.get("duration_s") or 0) + float(spec.get("drain_s") or 0) + 30
    per_packet = min(int(cap.get("snaplen") or 1514), 1514) + 16
    return int(4 * pps * seconds * per_packet / 2**20) + DISK_MARGIN_MIB


def make_run_folder(ssh: Ssh, where: str, need_mib: int, files: list[Path]) -> None:
    """Make the attempt's folder `where` afresh on the host with `files` in it (the run's inputs) and check its
    disk, in one command (each command over SSH is a session of its own, tenths of a second in a TCG guest):
    fail before the run, naming the host, the space and the fix, when the disk cannot hold the run, as a run
    that fills the disk mid-way loses its captures and says so only in a tcpdump error."""
    q = shlex.quote(where)
    r = ssh.capture(f"rm -rf {q} && mkdir -p {q} && tar -x --no-same-owner -C {q} && df -Pk {q}", timeout=120,
                    input=tar_of(files))
    if r.returncode:
        raise RemoteError(f"cannot create {where} on {ssh.dest} (is the host reachable and provisioned?): "
                          f"{r.stderr.strip()[-300:]}")
    try:
        avail = int(r.stdout.strip().splitlines()[-1].split()[3]) // 1024
    except (IndexError, ValueError):
        raise RemoteError(f"cannot read the free space under {where} on {ssh.dest}: "
                          f"{(r.stdout + r.stderr).strip()[-300:]}") from None
    if avail < need_mib:
        raise RemoteError(f"{ssh.dest} has {avail} MiB free under {where}; this run needs about {need_mib} MiB there "
                          f"(its captures and logs until they are copied back). Fix: free space on that disk (a "
                          f"run whose controller was killed leaves its logs in {REMOTE_ROOT}), or give the host "
                          f"more (the local guest: image_size in testbed/vm/guest.conf)")


def need_capture_reader() -> None:
    """check_captures reads the captures with tcpdump: without it the attempt would fail after its run, so
    fail before it, naming the fix."""
    if not shutil.which("tcpdump"):
        raise RemoteError("tcpdump is not on this controller's PATH: the controller reads each run's captures for "
                          "packets that are not the experiment's once they are copied back. Fix: apt-get install "
                          "tcpdump (./favorlab's bootstrap installs it)")


def check_captures(part: Path) -> None:
    """The foreign_traffic checks of a complete run's captures, added to its fidelity.json
    (testbed.runner.captures.foreign_checks: here, not on the testbed, they take hundredths of a second)."""
    if (part / rundir.DONE).is_file() and (part / rundir.FIDELITY).is_file():
        checks = captures.foreign_checks(part, rundir.read_json(part, rundir.HOSTS))
        atomic.write_json(part / rundir.FIDELITY, fidelity.with_checks(rundir.read_fidelity(part), checks), indent=2)


def tar_of(files: list[Path]) -> bytes:
    """A tar of `files` under their own names (the run's inputs, tens of kB), for the host's tar to unpack."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for f in files:
            tar.add(f, arcname=f.name, recursive=False)
    return buf.getvalue()


def remote_dir(run_id: str) -> str:
    """The attempt's directory on the host: the run id and a token of this attempt's own, so that two
    controllers making the same run on one host never share (or delete) one directory."""
    return f"{REMOTE_ROOT}/{run_id}.{uuid.uuid4().hex[:12]}"


def execute(ssh: Ssh, run_dir: Path, spec: Path | None, schedule: Path | None, reuse_topology: bool = False) -> Path:
    """One run on the host (see _execute); a failure on a host that no longer answers is Unreachable."""
    part = prepare_partial(run_dir, spec, schedule)
    try:
        return _execute(ssh, run_dir, part, reuse_topology)
    except Unreachable:
        raise
    except RemoteError as e:
        if not ssh.answers():
            raise Unreachable(f"{ssh.dest} stopped answering SSH ({e})") from e
        raise


def _execute(ssh: Ssh, run_dir: Path, part: Path, reuse_topology: bool = False) -> Path:
    spec = rundir.read_spec(part)
    run_id = spec.get("run_id") or run_dir.name
    remote = remote_dir(run_id)
    need_capture_reader()
    print(f"remote: {run_id} -> {ssh.dest}:{remote}", flush=True)
    phases = rundir.Phases()
    phases.mark("connect, copy in and space check")
    make_run_folder(ssh, remote, disk_need_mib(spec), [part / rundir.SPEC, part / rundir.SCHEDULE])
    # the runner takes the host's lock (waiting, and saying so, while another controller's run holds it)
    phases.mark(RUNNER_PHASE)
    reuse = " --reuse-topology" if reuse_topology else ""
    rc = ssh.run(f"cd {REMOTE_REPO} && python3 -m testbed.runner --run-dir {shlex.quote(remote)}{reuse}", stream=True)
    phases.mark("copy back")
    ssh.rsync(ssh.at(f"{remote}/"), f"{part}/")
    phases.mark("host clean-up")
    ssh.run(f"rm -rf {shlex.quote(remote)}")
    phases.mark(None)
    if rc:
        raise RemoteError(f"the runner on {ssh.dest} exited with {rc}; its log is {part}/{rundir.RUNNER_LOG}")
    phases.mark("captures' foreign packets")
    check_captures(part)
    phases.mark(None)
    atomic.write_json(part / rundir.CONTROLLER, {"phases_s": phases.s})
    # the rename is the last step: once the run directory is visible the job ends at once, so an
    # interruption right after it (slow SSH in a TCG guest took seconds) rarely finds Snakemake's job unfinished
    finalize(run_dir)
    return run_dir


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m orchestrate.remote", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vm", help="favorvm name: read SSH coordinates from its state.json")
    ap.add_argument("--ssh-host")
    ap.add_argument("--ssh-port", type=int, default=22)
    ap.add_argument("--ssh-user", default="root")
    ap.add_argument("--ssh-key")
    ap.add_argument("--known-hosts", help="the host's known_hosts file (default: one per host:port in the cache)")
    ap.add_argument("--host-key-checking", choices=["yes", "accept-new"],
                    help="with --known-hosts: yes (default), or accept-new to record the key on first contact")
    ap.add_argument("--ssh-args", help="more ssh options, as one string (the inventory's ansible_ssh_common_args)")
    ap.add_argument("--spec", type=Path)
    ap.add_argument("--schedule", type=Path)
    ap.add_argument("--run-dir", required=True, type=Path)
    ap.add_argument("--reuse-topology", action="store_true",
                    help="the runner keeps its network for the host's next run of the same topology, and adopts "
                         "one kept by the run before (the testbed option reuse_topology)")
    a = ap.parse_args(argv)
    try:
        if a.vm:
            t = vm_target(a.vm)
        elif a.ssh_host:
            t = {"host": a.ssh_host, "port": a.ssh_port, "user": a.ssh_user, "key": a.ssh_key,
                 "known_hosts": a.known_hosts, "ssh_args": a.ssh_args, "host_key_checking": a.host_key_checking}
        else:
            raise RemoteError("give --vm NAME or --ssh-host HOST")
        run_dir = a.run_dir.resolve()
        execute(Ssh(**t), run_dir, a.spec, a.schedule, a.reuse_topology)
    except Unreachable as e:
        print(f"remote: {e}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except RemoteError as e:
        print(f"remote: {e}", file=sys.stderr)
        return 1
    print(f"remote: done: {run_dir}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
