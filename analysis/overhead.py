"""Where an attempt's wall time goes: the median of each phase over the attempts of a results folder, from
attempts.json (orchestrate.run_step writes each attempt's phases_s and overhead_s there: the controller's
phases, the runner's from its manifest, and the job's lease and bring-up in its first attempt).

The median is per phase over the attempts that recorded it; the overhead per attempt is everything but the
traffic and its drain. What it leaves out: Snakemake's own time between jobs, and the pipeline's steps
before the first run (schedules, provisioning) and after the last (extraction, figures)."""
from __future__ import annotations

import html
import statistics

from contract import rundir


def attempt_records(runs) -> list[dict]:
    """Every attempt of runs (report.runs_section's rows, each with its attempts.json list) that recorded
    its phases."""
    return [a for r in runs for a in r.get("tries", []) if isinstance(a.get("phases_s"), dict)]


def phase_medians(attempts) -> list[tuple[str, float, int]]:
    """(phase, median seconds, attempts that recorded it), in the order the phases first appear."""
    order: dict[str, list[float]] = {}
    for a in attempts:
        for name, s in a["phases_s"].items():
            if isinstance(s, (int, float)):
                order.setdefault(name, []).append(float(s))
    return [(name, statistics.median(v), len(v)) for name, v in order.items()]


def work_medians(attempts) -> dict[str, tuple[float, float]]:
    """phase -> (median testbed CPU seconds, median forks: processes and threads started) over the attempts
    whose runner counted them (attempts.json's runner_work): a phase that takes long with little CPU waits;
    one whose CPU is most of its time works, and its forks say what that work is made of in a guest."""
    cpu: dict[str, list[float]] = {}
    procs: dict[str, list[float]] = {}
    for a in attempts:
        for name, w in (a.get("runner_work") or {}).items():
            if isinstance(w, dict) and isinstance(w.get("cpu_s"), (int, float)):
                cpu.setdefault(name, []).append(float(w["cpu_s"]))
                procs.setdefault(name, []).append(float(w.get("forks", 0)))
    return {name: (statistics.median(cpu[name]), statistics.median(procs[name])) for name in cpu}


def overhead_section(runs) -> str:
    attempts = attempt_records(runs)
    if not attempts:
        return "<p>no attempt recorded its phases (runs made before favorlab timed them)</p>"
    overheads = [a["overhead_s"] for a in attempts if isinstance(a.get("overhead_s"), (int, float))]
    work = work_medians(attempts)

    def cells(name):
        return (f"<td>{work[name][0]:.2f}</td><td>{work[name][1]:g}</td>" if name in work
                else "<td></td><td></td>")
    rows = "\n".join(f"<tr><td>{html.escape(name)}</td><td>{s:.2f}</td><td>{n}</td>{cells(name)}</tr>"
                     for name, s, n in phase_medians(attempts))
    return (f"<p>Median over {len(attempts)} attempt(s): overhead per attempt (everything but the "
            f"{html.escape(rundir.TRAFFIC_PHASE)}) <b>{statistics.median(overheads):.1f} s</b>, from "
            f"{min(overheads):.1f} to {max(overheads):.1f} s. The lease and bring-up of a testbed are counted in "
            f"the first attempt of each run's job only; Snakemake's time between jobs is not counted. The runner's "
            f"phases also give the testbed's CPU seconds (all its CPUs together) and its forks (processes and "
            f"threads started) in them, medians over the attempts that counted them.</p>"
            f"<table><tr><th>phase</th><th>median s</th><th>attempts</th><th>testbed CPU s</th>"
            f"<th>forks</th></tr>\n{rows}\n</table>")
