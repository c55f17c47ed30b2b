"""Initial RTO for the TCP sockets of one cgroup v2 directory: a BPF sock_ops program (the runner attaches it
to a cgroup of the run's own, where its flow clients and servers run; the root cgroup only when none is given).

The program answers BPF_SOCK_OPS_TIMEOUT_INIT with the initial RTO in jiffies (the kernel's
tcp_timeout_init uses it for the SYN and SYN-ACK timers) and leaves every other op alone.

Hand-written as raw eBPF instructions loaded with bpf(2) through ctypes, because the testbed host has
no clang/bpftool (and code on a testbed host is standard library only, docs/contracts.md): the program
is seven instructions, the same logic as the kernel's samples/bpf/tcp_synrto_kern.c.
"""
from __future__ import annotations

import ctypes
import os
import platform
import re
import struct
from pathlib import Path

SYS_BPF = {"x86_64": 321, "aarch64": 280}
BPF_PROG_LOAD, BPF_PROG_ATTACH, BPF_PROG_DETACH = 5, 8, 9
BPF_PROG_TYPE_SOCK_OPS = 13
BPF_CGROUP_SOCK_OPS = 3
BPF_SOCK_OPS_TIMEOUT_INIT = 1
CGROUP2_DEFAULT = "/sys/fs/cgroup"


def insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, dst | (src << 4), off, imm)


def program(jiffies: int) -> bytes:
    """r2 = ops->op; r3 = -1; if r2 == TIMEOUT_INIT: r3 = jiffies; ops->reply = r3; return 1."""
    return b"".join([
        insn(0x61, dst=2, src=1, off=0),                               # ldxw r2, [r1+0]  (op)
        insn(0xb7, dst=3, imm=-1),                                     # mov r3, -1
        insn(0x55, dst=2, off=1, imm=BPF_SOCK_OPS_TIMEOUT_INIT),       # jne r2, 1, +1
        insn(0xb7, dst=3, imm=jiffies),                                # mov r3, jiffies
        insn(0x63, dst=1, src=3, off=4),                               # stxw [r1+4], r3 (reply)
        insn(0xb7, dst=0, imm=1),                                      # mov r0, 1
        insn(0x95),                                                    # exit
    ])


def kernel_hz(release: str | None = None) -> int:
    """CONFIG_HZ of the running kernel from /boot/config-<release> (Debian's is 250)."""
    release = release or os.uname().release
    cfg = Path(f"/boot/config-{release}")
    if cfg.is_file():
        m = re.search(r"^CONFIG_HZ=(\d+)$", cfg.read_text(), re.M)
        if m:
            return int(m.group(1))
    return 250


def ms_to_jiffies(ms: float, hz: int) -> int:
    return max(1, round(ms * hz / 1000))


def _bpf(cmd: int, attr: ctypes.Array) -> int:
    nr = SYS_BPF.get(platform.machine())
    if nr is None:
        raise OSError(f"bpf(2) syscall number unknown for {platform.machine()}")
    libc = ctypes.CDLL(None, use_errno=True)
    ret = libc.syscall(nr, cmd, ctypes.byref(attr), ctypes.sizeof(attr))
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"bpf(cmd {cmd}): {os.strerror(err)}")
    return ret


def cgroup2_root() -> str:
    for line in Path("/proc/mounts").read_text().splitlines():
        f = line.split()
        if f[2] == "cgroup2":
            return f[1]
    os.makedirs("/run/favorlab/cgroup2", exist_ok=True)
    if os.system("mount -t cgroup2 none /run/favorlab/cgroup2") != 0:
        raise OSError("no cgroup v2 hierarchy is mounted and mounting one failed")
    return "/run/favorlab/cgroup2"


class InitialRto:
    """Load and attach on enter, detach and close on exit."""

    def __init__(self, ms: float, hz: int | None = None, cgroup: str | None = None):
        self.ms, self.hz, self.cgroup = ms, hz or kernel_hz(), cgroup
        self.jiffies = ms_to_jiffies(ms, self.hz)
        self.prog_fd = self.cg_fd = -1

    def attach(self) -> "InitialRto":
        code = program(self.jiffies)
        insns = ctypes.create_string_buffer(code, len(code))
        lic = ctypes.create_string_buffer(b"GPL")
        logbuf = ctypes.create_string_buffer(4096)
        attr = ctypes.create_string_buffer(128)
        struct.pack_into("<IIQQIIQ", attr, 0, BPF_PROG_TYPE_SOCK_OPS, len(code) // 8,
                         ctypes.addressof(insns), ctypes.addressof(lic), 1, len(logbuf),
                         ctypes.addressof(logbuf))
        try:
            self.prog_fd = _bpf(BPF_PROG_LOAD, attr)
        except OSError as e:
            raise OSError(f"loading the initial-RTO sock_ops program failed: {e}; verifier says: "
                          f"{logbuf.value.decode(errors='replace').strip()}") from None
        self.cg_fd = os.open(self.cgroup or cgroup2_root(), os.O_RDONLY | os.O_DIRECTORY)
        attr = ctypes.create_string_buffer(128)
        struct.pack_into("<IIII", attr, 0, self.cg_fd, self.prog_fd, BPF_CGROUP_SOCK_OPS, 0)
        _bpf(BPF_PROG_ATTACH, attr)
        return self

    def detach(self) -> None:
        if self.cg_fd >= 0 and self.prog_fd >= 0:
            attr = ctypes.create_string_buffer(128)
            struct.pack_into("<IIII", attr, 0, self.cg_fd, self.prog_fd, BPF_CGROUP_SOCK_OPS, 0)
            try:
                _bpf(BPF_PROG_DETACH, attr)
            except OSError:
                pass
        for fd in (self.prog_fd, self.cg_fd):
            if fd >= 0:
                os.close(fd)
        self.prog_fd = self.cg_fd = -1

    def __enter__(self):
        return self.attach()

    def __exit__(self, *exc):
        self.detach()
