"""Open-loop flow client: replays a schedule's flows from one host, one new TCP connection per flow.

    python3 -m workloads.client --schedule schedule.csv --host a1 --hosts hosts.json --t0 <unix time> \
        --log client-a1.csv [--port 5001] [--mode push|pull] [--flow-timeout 120] [--stop-at <unix time>]
    python3 -m workloads.client ... --ready FILE     (instead of --t0: FILE is created once the client is
        loaded, then the go line "t0 [stop_at]" (unix times) is read from stdin; the runner starts every
        client this way and sets t0 once all are up)

Every row with src == --host is opened at t0 + start_s whatever the network does (open loop): the
connection is issued by the dispatcher itself (a non-blocking connect(), so the SYN leaves at the logged
actual start); a late start is logged as lateness and never shifts later flows. One asyncio loop carries
every flow (standard library only, Python 3.10 or newer). It exits when every flow has ended, or at --stop-at
(flows still open are aborted and logged `timed_out`, flows not yet started `not_started`), or on
SIGTERM/SIGINT (same as --stop-at), after writing its log. Exit status 0 unless the inputs are wrong.

Timing: asyncio's epoll wait has whole-millisecond timeouts, rounded up twice (selectors rounds the float
up to ms, then select.epoll rounds the result up again, which adds another ms when the float is a hair
above), so a timer fires up to 2 ms late. The dispatcher therefore wakes EARLY_S (2.2 ms) before a start
and sleeps the rest with time.sleep (clock_nanosleep, microseconds): p99 lateness 0.1-0.2 ms instead of
about 1 ms. That blocks the loop about 1.2 ms per flow start; sockets keep moving in the kernel.
"""
from __future__ import annotations

import argparse
import asyncio
import errno
import os
import signal
import socket
import sys
import time

from workloads.common import CHUNK, HEADER, PAYLOAD, Clock, hosts_port, load_hosts, raise_nofile, write_csv
from contract.schedule import Flow, ScheduleError, read_schedule

LOG_COLUMNS = ["flow_id", "src", "dst", "size_bytes", "scheduled_s", "actual_start_s", "lateness_s",
               "connect_s", "first_byte_s", "last_byte_s", "end_s", "bytes", "outcome", "error"]
EARLY_S = 0.0022
WRITE_HIGH_WATER = 4 * CHUNK


def _outcome(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "refused"
    if isinstance(exc, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)):
        return "reset"
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)) or getattr(exc, "errno", None) == errno.ETIMEDOUT:
        return "timed_out"
    return "error"


class _FlowProto(asyncio.Protocol):
    def __init__(self, run: "FlowRun"):
        self.run, self.rec, self.clock = run, run.rec, run.client.clock
        self.transport = None

    def connection_lost(self, exc):
        if exc is None:
            self.run.finish("reset", "connection closed before the flow ended")
        else:
            self.run.finish(_outcome(exc), f"{type(exc).__name__}: {exc}")


class PushProto(_FlowProto):
    """push: write size bytes (the header first), shut down the write side, wait for the server's EOF."""
    paused = False

    def connection_made(self, transport):
        self.transport = transport
        transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)
        self.remaining, self.first = self.run.flow.size_bytes, True
        self.fill()

    def fill(self):
        t, f = self.transport, self.run.flow
        while self.remaining > 0 and not self.paused and not t.is_closing():
            n = min(CHUNK, self.remaining)
            if self.first:
                t.write(HEADER.pack(f.flow_id, f.size_bytes) + PAYLOAD[:n - HEADER.size])
                self.rec["first_byte_s"], self.first = self.clock.rel(), False
            else:
                t.write(PAYLOAD[:n])
            self.remaining -= n
        if self.remaining == 0 and self.rec["last_byte_s"] is None and not t.is_closing():
            self.rec["last_byte_s"] = self.clock.rel()
            t.write_eof()

    def sent(self) -> int:
        if self.transport is None:
            return 0
        return self.run.flow.size_bytes - self.remaining - self.transport.get_write_buffer_size()

    def pause_writing(self):
        self.paused = True

    def resume_writing(self):
        self.paused = False
        self.fill()

    def data_received(self, data):
        pass                     # the server sends nothing in push mode

    def eof_received(self):
        if self.remaining == 0 and self.transport.get_write_buffer_size() == 0:
            self.run.finish("completed")
        else:
            self.run.finish("reset", f"server closed with {self.run.flow.size_bytes - self.sent()} bytes unsent")
        return False


class PullProto(_FlowProto):
    """pull: write the header, read size bytes to EOF."""
    got = 0

    def connection_made(self, transport):
        self.transport = transport
        transport.write(HEADER.pack(self.run.flow.flow_id, self.run.flow.size_bytes))
        transport.write_eof()

    def data_received(self, data):
        now = self.clock.rel()
        if self.rec["first_byte_s"] is None:
            self.rec["first_byte_s"] = now
        self.rec["last_byte_s"] = now
        self.got += len(data)

    def sent(self) -> int:
        return self.got

    def eof_received(self):
        if self.got == self.run.flow.size_bytes:
            self.run.finish("completed")
        else:
            self.run.finish("reset", f"EOF after {self.got} of {self.run.flow.size_bytes} bytes")
        return False


class FlowRun:
    """One flow: its connect, its transfer, its log record."""

    def __init__(self, client: "Client", flow: Flow):
        self.client, self.flow = client, flow
        self.rec = {"flow_id": flow.flow_id, "src": flow.src, "dst": flow.dst, "size_bytes": flow.size_bytes,
                    "scheduled_s": flow.start_s, "actual_start_s": None, "lateness_s": None, "connect_s": None,
                    "first_byte_s": None, "last_byte_s": None, "end_s": None, "bytes": 0,
                    "outcome": "not_started", "error": ""}
        self.proto, self.sock, self.task = None, None, None
        self.ended = asyncio.get_running_loop().create_future()

    def start(self, addr: tuple[str, int]):
        """Issue the connect now (called by the dispatcher at the scheduled time)."""
        c = self.client
        now = c.clock.rel()
        self.rec.update(actual_start_s=now, lateness_s=now - self.flow.start_s, outcome=None)
        try:
            self.sock = socket.socket(socket.AF_INET6 if ":" in addr[0] else socket.AF_INET, socket.SOCK_STREAM)
            self.sock.setblocking(False)
            try:
                self.sock.connect(addr)
            except BlockingIOError:
                pass
        except OSError as e:
            if self.sock is not None:
                self.sock.close()
                self.sock = None
            self.finish(_outcome(e), f"{type(e).__name__}: {e}")
            return
        self.task = asyncio.ensure_future(self._run())

    async def _flow(self, loop):
        c = self.client
        await self._connected(loop)
        self.rec["connect_s"] = c.clock.rel()
        self.proto = PullProto(self) if c.mode == "pull" else PushProto(self)
        sock, self.sock = self.sock, None    # the transport owns it from here (and closes it)
        await loop.create_connection(lambda: self.proto, sock=sock)
        await asyncio.shield(self.ended)

    async def _run(self):
        c, loop = self.client, asyncio.get_running_loop()
        try:
            # wait_for, not asyncio.timeout (3.11+): hosts on Ubuntu 22.04 have Python 3.10
            await asyncio.wait_for(self._flow(loop), c.flow_timeout)
        except asyncio.TimeoutError:   # on 3.10 not the builtin TimeoutError (3.11 made them one)
            self.finish("timed_out", f"flow not ended after --flow-timeout {c.flow_timeout:g} s")
        except OSError as e:
            self.finish(_outcome(e), f"{type(e).__name__}: {e}")
        finally:
            if self.sock is not None:   # never wrapped in a transport (connect failed or stopped)
                self.sock.close()
                self.sock = None

    async def _connected(self, loop):
        fd = self.sock.fileno()
        fut = loop.create_future()
        loop.add_writer(fd, lambda: fut.done() or fut.set_result(None))
        try:
            await fut
        finally:
            loop.remove_writer(fd)
        err = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            raise OSError(err, os.strerror(err))

    def finish(self, outcome: str, error: str = ""):
        """Record how the flow ended (the first call wins) and release its socket."""
        if self.ended.done():
            return
        r = self.rec
        r["end_s"], r["outcome"], r["error"] = self.client.clock.rel(), outcome, error
        r["bytes"] = self.proto.sent() if self.proto else 0
        if self.proto and self.proto.transport and outcome != "completed":
            self.proto.transport.abort()
        elif self.proto and self.proto.transport:
            self.proto.transport.close()
        self.ended.set_result(None)
        if self.task and self.task is not asyncio.current_task() and self.sock is not None:
            self.task.cancel()           # still connecting: its finally closes the socket
        self.client.ended_one()


class Client:
    def __init__(self, flows: list[Flow], hosts: dict[str, str], port: int, mode: str, flow_timeout: float,
                 t0: float):
        self.flows, self.hosts, self.port, self.mode = flows, hosts, port, mode
        self.flow_timeout, self.t0 = flow_timeout, t0
        self.runs: list[FlowRun] = []
        self.pending = 0
        self.all_ended = None

    def ended_one(self):
        self.pending -= 1
        if self.pending == 0 and self.dispatched:
            self.all_ended.set()

    async def dispatch(self):
        """Open every flow at its time: sleep until EARLY_S before it, then sleep the rest precisely."""
        loop = asyncio.get_running_loop()
        for run in self.runs:
            target = self.clock.loop_at(run.flow.start_s)
            delay = target - loop.time()
            if delay > EARLY_S:
                await asyncio.sleep(delay - EARLY_S)
            rest = target - loop.time()
            if rest > 0:
                time.sleep(rest)   # sub-millisecond precision; the epoll timeout above is in whole ms
            run.start((self.hosts[run.flow.dst], self.port))
        self.dispatched = True
        if self.pending == 0:
            self.all_ended.set()

    async def run(self, stop_at: float | None) -> list[dict]:
        loop = asyncio.get_running_loop()
        self.clock = Clock(loop.time, self.t0)
        self.all_ended, self.dispatched = asyncio.Event(), False
        self.runs = [FlowRun(self, f) for f in self.flows]
        self.pending = len(self.runs)
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        if stop_at is not None:
            loop.call_at(self.clock.loop_at(stop_at - self.t0), stop.set)
        disp = asyncio.ensure_future(self.dispatch())
        waiters = [asyncio.ensure_future(self.all_ended.wait()), asyncio.ensure_future(stop.wait())]
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        disp.cancel()
        for w in waiters:
            w.cancel()
        for r in self.runs:
            if r.rec["outcome"] is None:
                r.finish("timed_out", "still running at --stop-at (or a stop signal)")
        tasks = [r.task for r in self.runs if r.task]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return [r.rec for r in self.runs]


def flows_for(path: str, host: str, hosts: dict[str, str]) -> list[Flow]:
    """The schedule's rows whose src is `host`, checked against hosts.json."""
    try:
        _, flows = read_schedule(path)
    except ScheduleError as e:
        raise SystemExit(f"workloads.client: {e}")
    mine = [f for f in flows if f.src == host]
    unknown = sorted({f.dst for f in mine} - set(hosts))
    if unknown:
        raise SystemExit(f"workloads.client: destinations {unknown} of host {host} are not in --hosts; "
                         f"hosts.json knows {sorted(hosts)}")
    return mine


READY_USAGE = "give one of --t0 and --ready"


def await_go(ready: str) -> tuple[float, float | None]:
    """--ready's handshake (favorflow's awaitGo): the client is loaded, so it says so by creating the file,
    then blocks until its starter writes the go line "t0 [stop_at]" (unix times) to stdin. The starter learns
    when every client is up instead of guessing a start-up lead."""
    try:
        open(ready, "wb").close()
    except OSError as e:
        raise SystemExit(f"workloads.client: --ready {ready}: cannot create it ({e})")
    line = sys.stdin.readline()
    try:
        f = [float(x) for x in line.split()]
    except ValueError:
        f = []
    if len(f) not in (1, 2):
        raise SystemExit(f"workloads.client: --ready: expected the go line 't0 [stop_at]' (unix times) on stdin, "
                         f"got {line!r}")
    return f[0], (f[1] if len(f) == 2 else None)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m workloads.client", description=__doc__.split("\n\n")[0])
    ap.add_argument("--schedule", required=True)
    ap.add_argument("--host", required=True, help="this host's name: runs the rows whose src is this")
    ap.add_argument("--hosts", required=True, help="hosts.json: host name -> IP")
    ap.add_argument("--t0", type=float, default=None, help="unix time of the schedule's 0 (or --ready)")
    ap.add_argument("--log", required=True, help="per-flow CSV written at exit")
    ap.add_argument("--port", type=int, default=None, help="server port (default: hosts.json's port, else 5001)")
    ap.add_argument("--mode", choices=("push", "pull"), default="push")
    ap.add_argument("--flow-timeout", type=float, default=120.0, help="seconds from a flow's start (default 120)")
    ap.add_argument("--stop-at", type=float, default=None, help="unix time to stop at, whatever is still open")
    ap.add_argument("--ready", default=None, help="once loaded, create this file and read 't0 [stop_at]' from stdin")
    a = ap.parse_args(argv)
    if a.flow_timeout <= 0:
        ap.error("--flow-timeout must be > 0")
    if (a.t0 is None) == (a.ready is None):
        ap.error(READY_USAGE)
    hosts = load_hosts(a.hosts)
    flows = flows_for(a.schedule, a.host, hosts)
    raise_nofile()
    client = Client(flows, hosts, a.port or hosts_port(a.hosts) or 5001, a.mode, a.flow_timeout, a.t0)
    if a.ready:
        client.t0, a.stop_at = await_go(a.ready)
    rows = asyncio.run(client.run(a.stop_at))
    write_csv(a.log, LOG_COLUMNS, rows)
    counts = {}
    for r in rows:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    print(f"workloads.client {a.host}: {len(rows)} flows: {counts}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
