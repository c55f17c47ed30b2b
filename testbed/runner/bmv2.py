"""The P4 bottleneck (favorqueue.p4 on BMv2's simple_switch): its verdict counters and queue registers
before and after the traffic, the checks on them, and its part of the manifest."""
from __future__ import annotations

import time
from pathlib import Path

from testbed.runner.manifest import first_line, sha256
from testbed.runner.processes import out


PHANTOM_LOSS_MAX = 0.01     # share of favored packets whose phantom (favorqueue.p4) the traffic manager may drop


def p4_state(sw) -> dict:
    """The P4 bottleneck's verdict counters and queue state (favorqueue.p4; empty for droptail)."""
    return {"t_unix": time.time(), "verdicts": sw.verdicts(), "registers": sw.registers()}


def p4_drained_check(state: dict) -> dict:
    """After the run the queue is empty, so favorqueue.p4's buffer and per-flow counts must be zero:
    anything else is state leaked by packets that never reached egress."""
    from p4 import control
    regs = state.get("registers") or {}
    if not regs:
        return {}
    left = control.queue_left(regs)
    checks = {"p4_state_drained": {"configured": "all 0 after the run", "measured": left,
                                   "ok": not any(left.values())}}
    v = state["verdicts"]
    favored = v["favored"] + v["pushouts"]
    lost = control.phantoms_lost(v)
    # a lost phantom is one packet sent above the port's rate (favorqueue.p4, top comment)
    checks["p4_phantoms_paced"] = {"configured": f"<= {PHANTOM_LOSS_MAX:.0%} of {favored} favored packets unpaid",
                                   "measured": lost, "ok": lost <= PHANTOM_LOSS_MAX * favored}
    return checks


def p4_manifest(sw, mbps: float) -> dict:
    from p4 import control, switch as p4switch
    m = control.describe(sw.params, mbps)
    for t, arg in (("simple_switch", "--version"), ("p4c-bm2-ss", "--version")):
        try:
            m[t] = first_line(out([p4switch.tool(t), arg], env=p4switch.tool_env()))
        except p4switch.ToolchainMissing as e:
            m[t] = f"(not available: {e})"
    m["program_json_sha256"] = sha256(Path(sw.json)) if sw.json else None
    return m
