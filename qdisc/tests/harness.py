"""Builds a queueing core's userspace harness (tests/<name>.c, which includes the exact core header the
kernel module compiles) into a shared library for ctypes."""
import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest

QDISC = Path(__file__).resolve().parents[1]


def build(tmp_path_factory, name):
    if not shutil.which("gcc"):
        pytest.skip("gcc not installed (apt-get install gcc)")
    so = tmp_path_factory.mktemp(name) / f"{name}.so"
    # no ASan here: its runtime must be loaded first, which a ctypes library in Python is not
    # -fno-strict-aliasing as the kernel: the list head is used as an sk_buff, as in the kernel
    subprocess.run(["gcc", "-O2", "-fno-strict-aliasing", "-g", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared",
                    f"-I{QDISC / 'include'}", "-o", str(so), str(QDISC / "tests" / f"{name}.c")],
                   check=True)
    return ctypes.CDLL(str(so))


class Core:
    """What every harness offers (core_harness.c, run2c_harness.c, las_harness.c): packets are ints, -1 (in C)
    is none. COUNTERS names h_counters' array, in its order; each test's subclass adds its h_init and
    h_enqueue."""
    COUNTERS: list = []

    def __init__(self, lib):
        self.lib = lib

    def dequeue(self):
        r = self.lib.h_dequeue()
        return None if r < 0 else r

    def peek(self):
        r = self.lib.h_peek()
        return None if r < 0 else r

    def set_limit(self, limit):
        """Lowers (or raises) the limit as tc qdisc change does; the packets trimmed, in order."""
        self.lib.h_set_limit(limit)
        out = []
        while (r := self.lib.h_trim_one()) >= 0:
            out.append(r)
        return out

    def counters(self):
        arr = (ctypes.c_uint64 * len(self.COUNTERS))()
        self.lib.h_counters(arr)
        return dict(zip(self.COUNTERS, arr))

    def qlen(self):
        return self.lib.h_qlen()


def every_branch_total(run_random, lib, seeds, names):
    """Counters summed over short random runs: a test asserts each is above 0 (every branch was taken)."""
    total = dict.fromkeys(names, 0)
    for seed in seeds:
        for k, v in run_random(lib, seed, steps=500).items():
            total[k] += v
    return total
