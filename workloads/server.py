"""Flow server: one asyncio process per testbed host, thousands of concurrent flows. Standard library only.

    python3 -m workloads.server --bind 10.2.0.1 --port 5001 --log server-b1.csv [--mode push|pull]
    python3 -m workloads.server --host b1 --hosts hosts.json --log server-b1.csv    # the runner's form

push (default): the peer (the data sender) connects, writes `size` bytes starting with the 16-byte header
(flow id, size; big-endian u64) and shuts down its write side; the server reads to EOF, records the flow
and closes, which the client takes as completion. pull: the peer writes the header, the server writes
`size` bytes (beginning with the same header) and closes.

Runs until SIGTERM or SIGINT, then records flows still open as `unfinished`, writes its log and exits 0.
Log columns: flow_id, peer, first_byte_s, last_byte_s, bytes, outcome, error (times in seconds after
--t0, unix time when --t0 is not given). TCP options are the kernel's defaults (no TCP_NODELAY).
"""
from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from workloads.common import CHUNK, HEADER, PAYLOAD, Clock, hosts_port, load_hosts, raise_nofile, write_csv

LOG_COLUMNS = ["flow_id", "peer", "first_byte_s", "last_byte_s", "bytes", "outcome", "error"]
BACKLOG = 4096


class _Flow(asyncio.Protocol):
    """One accepted connection; subclasses differ in which side sends the data."""

    def __init__(self, server: "FlowServer"):
        self.srv, self.clock = server, server.clock
        self.head = b""
        self.rec = {"flow_id": None, "peer": "", "first_byte_s": None, "last_byte_s": None, "bytes": 0,
                    "outcome": None, "error": ""}
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.rec["peer"] = f"{peer[0]}:{peer[1]}" if peer else ""
        self.srv.open.add(self)

    def _header(self, data: bytes) -> bytes:
        """Collect the 16-byte header; returns the bytes after it once complete."""
        if self.rec["flow_id"] is not None:
            return data
        need = HEADER.size - len(self.head)
        self.head += data[:need]
        if len(self.head) == HEADER.size:
            self.rec["flow_id"], self.size = HEADER.unpack(self.head)
            self.on_header()
        return data[need:]

    def on_header(self):
        pass

    def finish(self, outcome: str, error: str = ""):
        if self.rec["outcome"] is None:
            self.rec["outcome"], self.rec["error"] = outcome, error
            self.srv.done(self)

    def connection_lost(self, exc):
        if exc is None:
            self.finish("reset", "connection closed before the flow ended")
        else:
            self.finish("reset" if isinstance(exc, (ConnectionResetError, BrokenPipeError)) else "error", str(exc))


class PushSink(_Flow):
    """push: receive `size` bytes to EOF."""

    def data_received(self, data):
        now = self.clock.rel()
        if self.rec["first_byte_s"] is None:
            self.rec["first_byte_s"] = now
        self.rec["last_byte_s"] = now
        self.rec["bytes"] += len(data)
        self._header(data)

    def eof_received(self):
        size = getattr(self, "size", None)
        if size is not None and self.rec["bytes"] == size:
            self.finish("completed")
        else:
            self.finish("short", f"EOF after {self.rec['bytes']} of {size} bytes")
        self.transport.close()
        return False


class PullSource(_Flow):
    """pull: read the header, then send `size` bytes (the header first) and close."""
    paused = False
    remaining = 0

    def data_received(self, data):
        self._header(data)

    def on_header(self):
        self.remaining = self.size
        self.first = True
        self.fill()

    def fill(self):
        t = self.transport
        while self.remaining > 0 and not self.paused and not t.is_closing():
            n = min(CHUNK, self.remaining)
            if self.first:
                t.write(self.head + PAYLOAD[:n - HEADER.size] if n >= HEADER.size else self.head[:n])
                self.rec["first_byte_s"], self.first = self.clock.rel(), False
            else:
                t.write(PAYLOAD[:n])
            self.remaining -= n
            self.rec["bytes"] += n
        if self.remaining == 0 and self.rec["outcome"] is None and not t.is_closing():
            self.rec["last_byte_s"] = self.clock.rel()
            self.finish("completed")
            t.close()          # sends what is buffered, then FIN

    def pause_writing(self):
        self.paused = True

    def resume_writing(self):
        self.paused = False
        self.fill()

    def eof_received(self):
        if self.rec["flow_id"] is None:
            self.finish("short", f"EOF after {len(self.head)} header bytes")
            return False
        return True            # keep our write side open: the data is still flowing


class FlowServer:
    def __init__(self, mode: str, clock: Clock):
        self.mode, self.clock = mode, clock
        self.open, self.rows = set(), []

    def factory(self):
        return PushSink(self) if self.mode == "push" else PullSource(self)

    def done(self, flow: _Flow):
        self.open.discard(flow)
        self.rows.append(flow.rec)

    def close_all(self):
        for f in list(self.open):
            f.finish("unfinished", "server stopped while the flow was open")
            if f.transport:
                f.transport.abort()


async def serve(bind: str, port: int, mode: str, log: str, t0: float, ready=None) -> int:
    loop = asyncio.get_running_loop()
    srv = FlowServer(mode, Clock(loop.time, t0))
    server = await loop.create_server(srv.factory, bind, port, backlog=BACKLOG, reuse_address=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"workloads.server: {mode} on {bind}:{port}, log {log}", flush=True)
    if ready:
        ready(server)
    try:
        await stop.wait()
    finally:
        server.close()
        srv.close_all()
        write_csv(log, LOG_COLUMNS, srv.rows)
    print(f"workloads.server: {len(srv.rows)} flows logged", flush=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m workloads.server", description=__doc__.split("\n\n")[0])
    ap.add_argument("--bind", help="address to listen on (default: --host's IP, else 0.0.0.0)")
    ap.add_argument("--host", help="this host's name in --hosts (the runner's form)")
    ap.add_argument("--hosts", help="hosts.json: host name -> IP")
    ap.add_argument("--port", type=int, default=None, help="TCP port (default: hosts.json's port, else 5001)")
    ap.add_argument("--log", required=True, help="per-flow CSV written at exit")
    ap.add_argument("--mode", choices=("push", "pull"), default="push")
    ap.add_argument("--t0", type=float, default=0.0, help="unix time the log's times count from (default 0)")
    a = ap.parse_args(argv)
    bind = a.bind
    if bind is None and a.host:
        if not a.hosts:
            ap.error("--host needs --hosts (or give --bind)")
        table = load_hosts(a.hosts)
        if a.host not in table:
            ap.error(f"--host {a.host!r} is not in {a.hosts} (hosts: {', '.join(sorted(table))})")
        bind = table[a.host]
    port = a.port or (hosts_port(a.hosts) if a.hosts else None) or 5001
    raise_nofile()
    return asyncio.run(serve(bind or "0.0.0.0", port, a.mode, a.log, a.t0))


if __name__ == "__main__":
    sys.exit(main())
