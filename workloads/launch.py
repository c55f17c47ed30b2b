"""The flow client and server as processes on this machine, in either implementation (Python, or Go's
favorflow built from workloads/go): start a server, run a client, read their logs. The loopback benchmark
(workloads.bench) and the client/server tests start them this way."""
import csv
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Debian's python3 has no numpy: running under it proves client and server need the standard library only
GUEST_PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else shutil.which("python3")
GO_DIR = REPO / "workloads" / "go"
GO_BIN = GO_DIR / "bin" / "favorflow"


class Impl:
    """One implementation of the flow client and server: the command prefixes that start them."""

    def __init__(self, name: str, client: list, server: list):
        self.name, self.client, self.server = name, list(client), list(server)

    def __repr__(self):
        return self.name


PY = Impl("python", [GUEST_PY, "-s", "-m", "workloads.client"], [GUEST_PY, "-s", "-m", "workloads.server"])
GO = Impl("go", [str(GO_BIN), "client"], [str(GO_BIN), "server"])


def build_go() -> str | None:
    """Build workloads/go/bin/favorflow; None when done, else why it could not be (no `go`)."""
    if shutil.which("go") is None:
        return "no `go` on PATH: apt-get install golang-go (Go >= 1.19) to test the Go flow client/server"
    p = subprocess.run([str(GO_DIR / "build")], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"workloads/go/build failed:\n{p.stdout}{p.stderr}"
    return None


def start_server(log: Path, bind: str, port: int, mode: str = "push", prefix=(), impl: Impl = PY):
    p = subprocess.Popen([*prefix, *impl.server, "--bind", bind, "--port", str(port),
                          "--log", str(log), "--mode", mode], cwd=REPO, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    line = p.stdout.readline()
    assert "workloads.server:" in line, f"server did not start: {line}{p.stdout.read() if p.poll() else ''}"
    return p


def stop_server(p) -> str:
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=20)
    assert p.returncode == 0, out
    return out


def run_client(schedule: Path, host: str, hosts: dict, log: Path, port: int, t0_in: float = 0.5, prefix=(),
               extra=(), timeout=60, impl: Impl = PY):
    hp = log.with_suffix(".hosts.json")
    hp.write_text(json.dumps(hosts))
    t0 = time.time() + t0_in
    p = subprocess.run([*prefix, *impl.client, "--schedule", str(schedule), "--host",
                        host, "--hosts", str(hp), "--t0", f"{t0:.6f}", "--log", str(log), "--port", str(port),
                        *extra], cwd=REPO, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stdout + p.stderr
    return t0, p


def rows(path: Path) -> list[dict]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
