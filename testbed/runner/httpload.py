"""The HTTP workload's traffic step (run.json's workload.http): nginx on every left host serving the
schedule's objects, and on every right host one wrk per left host fetching them in a closed loop, each
object over a TCP connection of its own (workloads/http.py), in place of the flow servers and clients.

The data goes left to right, through the AQM's queue, as the replay's forward flows do. The schedule gives
each (a_i, b_j) path its objects: the sizes of its forward rows, in order, cycled; its start times and its
reverse rows do not apply (a closed loop's load is its connections, not its arrivals).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from contract.schedule import read_schedule
from testbed.runner import processes
from workloads import http

REPO = Path(__file__).resolve().parents[2]
# the objects are sparse files of the schedule's sizes: outside the run directory, which is copied back
OBJECTS_ROOT = Path(tempfile.gettempdir())


def is_http(spec: dict) -> bool:
    return "http" in (spec.get("workload") or {})


def paths(ctx) -> dict[tuple[str, str], list[int]]:
    """(server, client) -> the sizes (packets) of its forward schedule rows, in schedule order; a path the
    schedule has no row for is left out. Left hosts serve, right hosts fetch."""
    _, flows = read_schedule(ctx.dir / ctx.spec["schedule"])
    out: dict[tuple[str, str], list[int]] = {}
    for f in flows:
        if f.direction == "forward":
            out.setdefault((f.src, f.dst), []).append(int(f.size_pkts))
    if not out:
        raise RuntimeError(f"{ctx.spec['schedule']} has no forward flows to take the HTTP objects' sizes from. "
                           f"Fix: a load above 0 and a duration_s long enough for at least one arrival")
    return out


def server_root(ctx, host: str) -> Path:
    return OBJECTS_ROOT / f"favorlab-http-{ctx.spec['run_id']}" / host


def mss(ctx) -> int:
    """The payload of a full segment, as the schedule's size_bytes counts it (workloads.schedule)."""
    return int(ctx.spec["topology"].get("mtu", 1500)) - 40


def start_servers(ctx) -> None:
    """One nginx per left host that serves a path, in its namespace and the run's cgroup (the initial RTO
    applies to its connections as to the flow server's)."""
    by_server: dict[str, list[int]] = {}
    for (srv, _), sizes in paths(ctx).items():
        by_server.setdefault(srv, []).extend(sizes)
    port = int(ctx.hostsj["port"])
    for h, sizes in sorted(by_server.items()):
        root = server_root(ctx, h)
        shutil.rmtree(root, ignore_errors=True)
        http.make_objects(root, sorted(set(sizes)), mss(ctx))
        (root / "nginx.conf").write_text(http.nginx_conf(root, ctx.hostsj["hosts"][h]["ip"], port))
        ctx.procs[f"server-{h}"] = processes.popen(
            http.nginx_cmd(root), ctx.net.get(h), cwd=REPO, cgroup=ctx.cgroup_path(),
            stdout=(ctx.dir / "log" / f"nginx-{h}.out").open("w"), stderr=subprocess.STDOUT)
    ctx.log(f"nginx started on {', '.join(sorted(by_server))}, port {port}")


def wrk_launch(ctx, srv: str, t0: float, script: Path) -> list[str]:
    """The command that waits for t0 and runs wrk against srv for duration_s + drain_s: a request made
    before duration_s has drain_s to finish, as a replayed flow has."""
    s = ctx.spec
    url = f"http://{ctx.hostsj['hosts'][srv]['ip']}:{ctx.hostsj['port']}/"
    return [sys.executable, "-m", "workloads.http", "wrk", "--t0", f"{t0:.6f}",
            "--duration", f"{float(s['duration_s']) + float(s['drain_s']):g}",
            "--connections", str(s["workload"]["http"]["connections"]), "--script", str(script), "--url", url]


def start_clients(ctx, t0: float) -> dict:
    """'<server>-<client>' -> the wrk started on the client host for that path."""
    clients = {}
    for (srv, cli), sizes in sorted(paths(ctx).items()):
        script = ctx.dir / "log" / f"wrk-{srv}-{cli}.lua"
        script.write_text(http.wrk_lua([f"/obj/{n}.bin" for n in sizes]))
        name = f"{srv}-{cli}"
        clients[name] = processes.popen(wrk_launch(ctx, srv, t0, script), ctx.net.get(cli), cwd=REPO,
                                        cgroup=ctx.cgroup_path(),
                                        stdout=(ctx.dir / "log" / f"wrk-{name}.out").open("w"),
                                        stderr=subprocess.STDOUT)
        ctx.procs[f"client-{name}"] = clients[name]
    ctx.log(f"wrk started on {len(clients)} paths, {ctx.spec['workload']['http']['connections']} connections "
            f"each, t0 {t0:.3f}")
    return clients


def stop_servers(ctx) -> None:
    """nginx stopped, its access log kept in the run directory (flows/nginx-<host>.log: one line per
    request), its objects removed."""
    for k in [k for k in ctx.procs if k.startswith("server-")]:
        processes.stop(ctx.procs.pop(k))
    root = OBJECTS_ROOT / f"favorlab-http-{ctx.spec['run_id']}"
    for log in sorted(root.glob("*/access.log")):
        shutil.copyfile(log, ctx.dir / "flows" / f"nginx-{log.parent.name}.log")
    shutil.rmtree(root, ignore_errors=True)


def checks(run_dir: Path) -> dict:
    """The run's check http_requests: every wrk reported (its WRKJSON line) and made requests, with its
    errors counted; flows/wrk.json holds each path's report."""
    reports, problems = {}, []
    for out in sorted((run_dir / "log").glob("wrk-*.out")):
        name = out.name[4:-4]
        try:
            reports[name] = http.parse_wrk(out.read_text(errors="replace"))
        except ValueError as e:
            problems.append(f"{name}: {e}")
            continue
        if reports[name]["requests"] < 1:
            problems.append(f"{name}: no request completed")
    (run_dir / "flows" / "wrk.json").write_text(json.dumps(reports, indent=2) + "\n")
    errors = sum(r[k] for r in reports.values() for k in ("connect_errors", "read_errors", "write_errors",
                                                             "status_errors", "timeouts"))
    measured = (f"{sum(r['requests'] for r in reports.values())} requests on {len(reports)} paths, "
                f"{errors} errors" + (f"; {'; '.join(problems)}" if problems else ""))
    return {"http_requests": {"configured": "every path's wrk reports requests", "measured": measured,
                              "ok": bool(reports) and not problems}}
