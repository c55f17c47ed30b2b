"""Pieces shared by the client and the server (standard library only: they run on testbed hosts)."""
from __future__ import annotations

import csv
import json
import resource
import struct
import time
from pathlib import Path

HEADER = struct.Struct("!QQ")   # flow id, size in bytes (the whole flow, header included), big endian
CHUNK = 64 * 1024               # bytes handed to the transport per write
PAYLOAD = bytes(CHUNK)


def raise_nofile(want: int = 1 << 20) -> int:
    """Raise the soft open-file limit towards the hard limit (one socket per concurrent flow); returns it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(want, hard) if hard != resource.RLIM_INFINITY else want
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


def load_hosts(path: str | Path) -> dict[str, str]:
    """host name -> IP from hosts.json: either {"a1": "10.1.0.1", ...} or the runner's
    {"hosts": {"a1": {"ip": "10.1.0.1", ...}, ...}, ...}."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"--hosts {path}: cannot read it as JSON ({e})")
    table = data.get("hosts", data) if isinstance(data, dict) else None
    if not isinstance(table, dict):
        raise SystemExit(f"--hosts {path}: expected an object host -> IP (or {{'hosts': {{name: {{'ip': ..}}}}}})")
    out = {}
    for name, v in table.items():
        ip = v.get("ip") if isinstance(v, dict) else v
        if not isinstance(ip, str):
            raise SystemExit(f"--hosts {path}: host {name!r} has no IP string (got {v!r})")
        out[name] = ip
    return out


def hosts_port(path: str | Path) -> int | None:
    """The "port" entry of the runner's hosts.json, if any."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return data.get("port") if isinstance(data, dict) and isinstance(data.get("port"), int) else None


class Clock:
    """Event-loop (monotonic) time <-> seconds after a unix-time t0. The offset is taken once, so a wall
    clock step during a run does not move the schedule."""

    def __init__(self, loop_time, t0_unix: float):
        self.loop_time = loop_time
        self.offset = time.time() - loop_time()     # unix = loop + offset
        self.t0 = t0_unix

    def loop_at(self, rel_s: float) -> float:
        return self.t0 + rel_s - self.offset

    def rel(self, loop_t: float | None = None) -> float:
        return (self.loop_time() if loop_t is None else loop_t) + self.offset - self.t0


def write_csv(path: str | Path, columns: list[str], rows: list[dict]) -> None:
    """Write rows atomically (a temporary file renamed), so a reader never sees half a log."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as fh:
        w = csv.DictWriter(fh, columns, lineterminator="\n", extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: _fmt(r.get(k)) for k in columns})
    tmp.replace(path)


def _fmt(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6f}"
    return v
