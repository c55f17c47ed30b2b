"""Long-lived iperf3 flows beside the short ones: Section 5.3's persistent flows over the dumbbell's paths,
and the chain's cross traffic (one flow per cross path, started before t0 so the hops' queues are loaded)."""
from __future__ import annotations

import shlex
import subprocess
import time
from pathlib import Path

from contract import rundir
from testbed.runner import processes


def start_persistent(ctx, t0: float) -> None:
    """Section 5.3's long-lived flows (workloads.persistent: iperf3 groups over the nine paths), from
    t0 + start_s to the end of the traffic. Each client waits in a shell of its sender's namespace, so
    it starts on time without a thread of the runner having to wake then; the flows are the run's
    cgroup's, so they have the same TCP (initial RTO) as the short flows."""
    from workloads import persistent
    w = ctx.spec["workload"]
    ips = {h: v["ip"] for h, v in ctx.hostsj["hosts"].items()}
    groups = persistent.persistent_plan(ips, ctx.spec["duration_s"], int(w["flows"]), float(w["start_s"]))
    d = ctx.dir / "persistent"
    d.mkdir(exist_ok=True)
    ctx.write_json(rundir.PERSISTENT_PLAN, {"flows": w["flows"], "start_s": w["start_s"], "t0_unix": t0,
                                            "groups": [vars(g) for g in groups]})
    ctx.persistent = groups
    start_iperf3_groups(ctx, groups, t0, d, "iperf3")
    ctx.log(f"persistent flows: {w['flows']} in {len(groups)} iperf3 groups, from t0 + {w['start_s']:g} s")


def stop_persistent(ctx, stop_at: float) -> None:
    """Wait for the iperf3 clients (they end with the traffic), then check every stream reported."""
    ctx.checks["persistent_flows"] = stop_iperf3_groups(
        ctx, ctx.persistent, stop_at, ctx.dir / "persistent", "iperf3", int(ctx.spec["workload"]["flows"]))


def start_cross(ctx, t0: float) -> None:
    """The chain's cross traffic: one iperf3 TCP stream per cross flow (hosts.json cross_flows: x<k>s<i>
    -> x<k>r, one hop each), from warmup_cross_s before t0 to the end of the traffic, so the hops'
    queues are loaded when the reference user begins. As start_persistent: one iperf3 server per flow on
    its receiver (ports 5201..), each client waits in a shell of its sender's namespace, all in the
    run's cgroup."""
    from workloads import persistent
    s = ctx.spec
    w = float(s["workload"]["warmup_cross_s"])
    cross = ctx.hostsj.get("cross_flows", [])
    d = ctx.dir / "cross"
    d.mkdir(exist_ok=True)
    start = t0 - w
    total = w + s["duration_s"] + s["drain_s"]
    ips = {h: v["ip"] for h, v in ctx.hostsj["hosts"].items()}
    groups = persistent.persistent_plan(ips, total, len(cross), 0.0,
                                        pairs=[(c["src"], c["dst"]) for c in cross]) if cross else []
    ctx.write_json("cross/plan.json", {"flows": len(cross), "warmup_cross_s": w, "t0_unix": t0,
                                       "start_unix": start, "groups": [vars(g) for g in groups]})
    ctx.cross = groups
    start_iperf3_groups(ctx, groups, start, d, "cross")
    ctx.log(f"cross traffic: {len(groups)} iperf3 flows from t0 - {w:g} s to the end of the traffic")


def stop_cross(ctx, stop_at: float) -> None:
    """Wait for the cross flows' iperf3 clients (they end with the traffic); check every one reported
    (cross_flows, as persistent_flows)."""
    ctx.checks["cross_flows"] = stop_iperf3_groups(
        ctx, ctx.cross, stop_at, ctx.dir / "cross", "cross", len(ctx.hostsj.get("cross_flows", [])))


def start_iperf3_groups(ctx, groups: list, origin: float, out: Path, tag: str) -> None:
    """iperf3 groups (workloads.persistent.persistent_plan) in the run's cgroup: every server on its
    receiver now, then every client at origin + its start_s, waiting in a shell of its sender's
    namespace (so no thread of the runner has to wake on time); each client's -J report goes to
    out/iperf3-<src>-<dst>.json. tag names their entries in ctx.procs."""
    for g in groups:
        ctx.procs[f"{tag}s-{g.dst}-{g.port}"] = processes.popen(
            g.server, ctx.net.get(g.dst), cgroup=ctx.cgroup_path(),
            stdout=(ctx.dir / "log" / f"iperf3-server-{g.dst}-{g.port}.json").open("w"), stderr=subprocess.STDOUT)
    time.sleep(0.5)
    for g in groups:
        woke = out / f"{tag}-{g.src}-{g.dst}.launched"
        ctx.procs[f"{tag}c-{g.src}-{g.dst}"] = processes.popen(
            ["bash", "-c", launch_at(origin + g.start_s, woke), "bash", *g.client], ctx.net.get(g.src),
            cgroup=ctx.cgroup_path(), stdout=(out / f"iperf3-{g.src}-{g.dst}.json").open("w"),
            stderr=(ctx.dir / "log" / f"iperf3-{g.src}-{g.dst}.err").open("w"))


def launch_at(when: float, woke: Path) -> str:
    """A bash script that execs its arguments at the clock time `when`, and writes to `woke` when its sleep ended.

    The sleep is worked out in the shell, from its own clock reading, not by the runner beforehand: the chain that
    starts it (a shell into the cgroup, mnexec into the namespace, bash) took 3.5 s in a busy TCG guest, which a
    sleep computed beforehand would add to the launch. bash's $EPOCHREALTIME and arithmetic start no process;
    the stamp tells the launch the runner scheduled from iperf3's own exec and start-up, the guest's speed.
    """
    when_us = round(when * 1e6)
    return (f'n=${{EPOCHREALTIME/[.,]/}}; d=$(( {when_us} - n )); '
            f'if [ "$d" -gt 0 ]; then printf -v s "%d.%06d" $(( d / 1000000 )) $(( d % 1000000 )); sleep "$s"; fi; '
            f'echo "${{EPOCHREALTIME/,/.}}" > {shlex.quote(str(woke))} && exec "$@"')


def stop_iperf3_groups(ctx, groups: list, stop_at: float, out: Path, tag: str, n: int) -> dict:
    """Wait for the groups' clients (they end with the traffic), stop their servers, and return the
    check: every one of the n streams reported some bytes."""
    from workloads import persistent
    streams, problems = 0, []
    for g in groups:
        p = ctx.procs.pop(f"{tag}c-{g.src}-{g.dst}")
        try:
            rc = p.wait(timeout=max(5.0, stop_at - time.time() + 30))
        except subprocess.TimeoutExpired:
            rc = processes.stop(p)
            problems.append(f"{g.src}-{g.dst} did not end")
        try:
            got = persistent.parse_iperf3_json((out / f"iperf3-{g.src}-{g.dst}.json").read_text())
            streams += sum(1 for st in got["streams"] if st["bytes"] > 0)
        except (OSError, persistent.Iperf3Error) as e:
            problems.append(f"{g.src}-{g.dst}: {e} (exit {rc})")
    for k in [k for k in ctx.procs if k.startswith(f"{tag}s-")]:
        processes.stop(ctx.procs.pop(k))
    return {"configured": n, "measured": streams if not problems else f"{streams} streams; " + "; ".join(problems),
            "ok": streams == n}
