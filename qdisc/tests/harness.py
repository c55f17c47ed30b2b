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
