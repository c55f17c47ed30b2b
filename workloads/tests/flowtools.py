"""Helpers for the client/server tests: start a server, run a client, read the logs."""
import csv
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Debian's python3 has no numpy: running under it proves client and server need the standard library only
GUEST_PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else shutil.which("python3")


def start_server(log: Path, bind: str, port: int, mode: str = "push", prefix=()):
    p = subprocess.Popen([*prefix, GUEST_PY, "-s", "-m", "workloads.server", "--bind", bind, "--port", str(port),
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
               extra=(), timeout=60):
    hp = log.with_suffix(".hosts.json")
    hp.write_text(json.dumps(hosts))
    t0 = time.time() + t0_in
    p = subprocess.run([*prefix, GUEST_PY, "-s", "-m", "workloads.client", "--schedule", str(schedule), "--host",
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
