"""Running the P4 bottleneck: find the toolchain, compile a program, start simple_switch on two
interfaces, configure it through simple_switch_CLI, read its counters and registers, stop it.

The toolchain is p4lang's: `simple_switch`, `simple_switch_CLI` (behavioral-model) and `p4c-bm2-ss`
(p4c). They are looked up on PATH, then under FAVORLAB_P4_PREFIX/bin (default /opt/p4lang/bin, where
the Ansible role p4_toolchain unpacks a prefix built elsewhere); p4lang's Ubuntu packages put them
on PATH.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from p4 import control

P4_DIR = Path(__file__).resolve().parent
BUILD_DIR = P4_DIR / "build"
DEFAULT_PREFIX = "/opt/p4lang"
TOOLS = ("simple_switch", "simple_switch_CLI", "p4c-bm2-ss")


class ToolchainMissing(RuntimeError):
    """A p4lang tool is not installed: the message says which and how to get it."""


def prefix() -> Path:
    return Path(os.environ.get("FAVORLAB_P4_PREFIX", DEFAULT_PREFIX))


def tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=str(prefix() / "bin"))
    if not found:
        raise ToolchainMissing(
            f"{name} not found on PATH nor in {prefix() / 'bin'}. Fix: install the P4 toolchain (Ansible "
            f"role p4_toolchain: p4lang's packages on Ubuntu, or a prebuilt prefix via "
            f"p4_toolchain_tarball), or set FAVORLAB_P4_PREFIX to the prefix that holds bin/{name}.")
    return found


def missing_tools() -> list[str]:
    """The tools of TOOLS that are not installed (empty when the toolchain is complete)."""
    out = []
    for t in TOOLS:
        try:
            tool(t)
        except ToolchainMissing:
            out.append(t)
    return out


def tool_env() -> dict:
    """Environment for the tools: a prefix outside the system paths needs its lib/ and Python modules."""
    env = dict(os.environ)
    lib = prefix() / "lib"
    if lib.is_dir():
        env["LD_LIBRARY_PATH"] = f"{lib}:{env['LD_LIBRARY_PATH']}" if env.get("LD_LIBRARY_PATH") else str(lib)
        pys = sorted(lib.glob("python3*/site-packages")) + sorted(lib.glob("python3*/dist-packages"))
        if pys:
            env["PYTHONPATH"] = os.pathsep.join([str(p) for p in pys] + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def compile_program(program: str, out_dir: Path = BUILD_DIR) -> Path:
    """p4/<program>.p4 -> out_dir/<program>.json (BMv2 JSON), recompiled when the sources are newer."""
    if program not in control.PROGRAMS:
        raise ValueError(f"unknown P4 program {program!r}: one of {control.PROGRAMS}")
    src = P4_DIR / f"{program}.p4"
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{program}.json"
    sources = [src, *sorted((P4_DIR / "include").glob("*.p4"))]
    if out.is_file() and out.stat().st_mtime >= max(s.stat().st_mtime for s in sources):
        return out
    tmp = out.with_suffix(".json.tmp")
    p = subprocess.run([tool("p4c-bm2-ss"), "--std", "p4-16", "--target", "bmv2", "--arch", "v1model",
                        "-o", str(tmp), str(src)], capture_output=True, text=True, env=tool_env())
    if p.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise RuntimeError(f"p4c-bm2-ss {src.name} failed:\n{p.stderr.strip() or p.stdout.strip()}")
    tmp.replace(out)
    return out


def _ip(argv: list[str], check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run(argv, capture_output=True, text=True)
    if check and p.returncode:
        raise RuntimeError(f"{' '.join(argv)}: {p.stderr.strip()}")
    return p


def remove_stale_netns() -> None:
    """The namespaces of switches whose runner died before its stop (their ports went with the runner's
    Mininet; the empty namespace stays named in /run/netns)."""
    for ns in sorted(Path("/run/netns").glob(control.NETNS_PREFIX + "*")) if Path("/run/netns").is_dir() else []:
        pid = ns.name[len(control.NETNS_PREFIX):]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            _ip(["ip", "netns", "delete", ns.name], check=False)


class Switch:
    """One simple_switch process and its CLI, in a network namespace where nothing but loopback reaches
    its thrift port (control.py, NETNS_PREFIX). netns: the namespace where its interfaces already are
    (the BMv2 tests make one); None: a namespace of its own, made at start, with the interfaces moved
    into it, and given back at stop."""

    def __init__(self, params: dict, bottleneck_mbps: float, intf_left: str, intf_right: str,
                 thrift_port: int = control.THRIFT_PORT, log_path: Path | None = None,
                 netns: str | None = None):
        self.params, self.mbps = params, bottleneck_mbps
        self.intf_left, self.intf_right = intf_left, intf_right
        self.thrift_port, self.log_path, self.netns = thrift_port, log_path, netns
        self.own_netns: str | None = None
        self.proc: subprocess.Popen | None = None
        self.json = None

    def _wrap(self, argv: list[str]) -> list[str]:
        ns = self.netns or self.own_netns
        return (["ip", "netns", "exec", ns] if ns else []) + argv

    def _isolate(self) -> None:
        remove_stale_netns()
        ns = control.own_netns(os.getpid())
        _ip(["ip", "netns", "delete", ns], check=False)      # a previous switch of this runner that failed
        self.own_netns = ns
        for argv in control.isolate_commands(ns, [self.intf_left, self.intf_right]):
            _ip(argv)

    def _release(self) -> None:
        if self.own_netns:
            for argv in control.release_commands(self.own_netns, [self.intf_left, self.intf_right], os.getpid()):
                _ip(argv, check=False)      # a port already gone (Mininet stopped first) is no error here
            self.own_netns = None

    def start(self, timeout: float = 60.0) -> None:
        self.json = compile_program(self.params["program"])
        binary = tool("simple_switch")
        if self.netns is None:
            self._isolate()
        argv = control.switch_argv(binary, str(self.json), self.intf_left, self.intf_right, self.thrift_port)
        out = self.log_path.open("w") if self.log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(self._wrap(argv), stdout=out, stderr=subprocess.STDOUT,
                                     start_new_session=True, env=tool_env())
        deadline = time.time() + timeout
        while True:
            rc = self.proc.poll()
            if rc is not None:
                self.stop()
                raise RuntimeError(f"simple_switch exited with {rc} at start "
                                   f"(see {self.log_path or 'its output'})")
            p = self._cli_raw("show_ports\n")
            if p.returncode == 0 and "Could not connect" not in p.stdout:
                break
            if time.time() > deadline:
                self.stop()
                last = (p.stderr.strip() or p.stdout.strip()).splitlines()[-3:]
                raise RuntimeError(f"simple_switch did not answer on thrift port {self.thrift_port} "
                                   f"within {timeout:.0f} s; simple_switch_CLI said: {' | '.join(last)}")
            time.sleep(0.5)
        self.cli(control.cli_commands(self.params, self.mbps))

    def _cli_raw(self, text: str) -> subprocess.CompletedProcess:
        # the CLI is a Python script for the system's python3 (python3-thrift is a Debian/Ubuntu package);
        # `env python3` may find another interpreter first (pyenv, a venv) that has no thrift module
        py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else (shutil.which("python3") or "python3")
        return subprocess.run(self._wrap([py, tool("simple_switch_CLI"), "--thrift-port", str(self.thrift_port)]),
                              input=text, capture_output=True, text=True, env=tool_env(), timeout=120)

    def cli(self, commands: list[str]) -> str:
        """Run CLI commands; any error the CLI prints fails loudly (it exits 0 on most errors)."""
        p = self._cli_raw("\n".join(commands) + "\n")
        bad = [ln for ln in p.stdout.splitlines() if "Error" in ln or "Invalid" in ln or "exception" in ln.lower()]
        if p.returncode != 0 or bad:
            raise RuntimeError(f"simple_switch_CLI failed on {commands}: {p.stderr.strip()} {' | '.join(bad)}")
        return p.stdout

    def verdicts(self) -> dict:
        """favorqueue.p4's verdict counters by name (empty for droptail)."""
        if self.params["program"] != "favorqueue":
            return {}
        txt = self.cli([f"counter_read {control.COUNTER_VERDICTS} {i}" for i in range(len(control.VERDICTS))])
        values = control.parse_counter_lines(txt)
        return dict(zip(control.VERDICTS, values))

    def registers(self) -> dict:
        """favorqueue.p4's queue state: the buffer counts and the sum and maximum of per-flow counts."""
        if self.params["program"] != "favorqueue":
            return {}
        # one CLI process for all of them (each costs about 1.3 s in the TCG guest)
        answers = control.parse_register_reads(self.cli([f"register_read {n}" for n in control.REGISTERS]),
                                               len(control.REGISTERS))
        return {name: vals[0] if len(vals) == 1 else {"sum": sum(vals), "max": max(vals),
                                                      "nonzero": sum(1 for v in vals if v)}
                for name, vals in zip(control.REGISTERS, answers)}

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()
        self.proc = None
        self._release()
