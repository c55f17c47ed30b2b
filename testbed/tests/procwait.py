"""Waiting for a process the test started to be gone, for the runner's guard tests."""
import time

from testbed.runner import hostguard


def gone(pid: int, within: float = 10.0) -> bool:
    """True once `pid` has exited (or is a zombie) within `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if hostguard.proc_start(pid) is None:     # gone, or a zombie
            return True
        time.sleep(0.05)
    return False
