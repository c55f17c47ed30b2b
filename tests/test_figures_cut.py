"""The whole pipeline on the suites' guest, from config/figures.yaml cut down, in two sizes.

CI's pipeline run (`./favorlab test`): table1 at two light loads, a DropTail and a FaQ run on each load's schedule. It is the test
of what a user relies on when a pipeline is cut short or a run comes back invalid: it is interrupted as soon as
its first run directory is complete, nothing half-done is visible, and the resumed pipeline does not redo the
finished run; the FaQ run's first attempt is made invalid on purpose (tests/test_pipeline.py) and must be redone,
both attempts kept, the last used by the tables. Its runs keep their networks between runs (testbed
reuse_topology), so an attempt after one of the same topology adopts it. Tables, verdict and report follow.

The figures cut (a long test: `./favorlab test --long`, about 20-25 minutes in a TCG guest, more than CI's budget
leaves beside the other suites): the same checks, and the sections of the small every-figure config that the
dumbbell draws, with the fewest and shortest runs that still give each figure its data. `./favorlab figures`
itself takes over two hours on this kind of machine (its header). The cut keeps every dumbbell section and every
axis they vary (bottleneck, buffer, size distribution, IW) and shrinks what only adds samples: one or two loads,
two values of a swept axis, 20 s of Table 1 traffic. Two sections are left out (OMITTED): the persistent flows
and the chain. Their runs carry 50 iperf3 streams, whose CPU in a TCG guest is near the cpu_busy limit: on a
machine a third slower than CI's, each came back invalid three times in a row. Their runs are tested in the
guest by testbed/tests/test_runner_guest.py (persistent flows, the chain end to end), and their figures and
claims from tables by analysis/tests/test_r.py; `./favorlab figures` draws them from real runs. What a user of
`./favorlab figures` relies on, checked there on real runs: every figure of the kept sections is in the report's
figure index and drawn, the claims only those sections decide (C16, C18) are decided from them (holds, does not
hold or insufficient data, never "not run"), and a run the TCG guest cannot carry (the 100 Mb/s bottleneck) is
kept out of the figures with its measured reason instead of failing the pipeline.
"""
import copy
import csv
import json
import os
import shutil
import signal
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from analysis.tests.test_r import CLAIM_IDS   # one row per claim of analysis/claims.yaml, in its order
from contract import rundir
from qdisc.tools import favor_trace
from orchestrate import matrix
from orchestrate.config import read_config
from tests.test_pipeline import require_guest, snakemake

REPO = Path(__file__).resolve().parents[1]
# Per section of config/figures.yaml, what the cut changes. Loads are 0.25 wherever a section may choose, so
# that its DropTail and FaQ runs at buffer 8, IW 2 and mean 30 are table1's (made once, counted by both).
CUT = {
    # F23/F24 fit the model at loads 0.25 and 0.85 (Section 7)
    "table1": {"loads": [0.25, 0.85]},
    # one run: in a TCG guest it may come back invalid (cpu_busy, as the four of `./favorlab figures` did);
    # F3/F4 are drawn either way, valid or not
    "bottleneck-100": {"loads": [0.25], "aqms": ["favor"]},
    "sizes": {"loads": [0.25], "keep": ("sizes", 2)},
    "buffer-sweep": {"loads": [0.25], "keep": ("bottlenecks", 2)},
    "iw": {"loads": [0.25]},
}
# left out of CI's cut (the module's docstring says why and where they are tested): section -> the claims only it
# decides (its figures are config/figures.yaml's)
OMITTED = {"persistent": ["C8"], "chain": ["C17"]}
SHORT = {"duration_s": 20, "warmup_s": 4, "drain_s": 10}


def cut_config(full: dict, testbed: dict, name: str = "figures-ci", cut: dict = CUT) -> dict:
    """config/figures.yaml cut down: only the sections in `cut`, each changed as `cut` says, short runs."""
    cfg = copy.deepcopy(full)
    cfg.update(name=name, testbed=testbed, **SHORT)
    missing = [s["name"] for s in cfg["sections"] if s["name"] not in CUT and s["name"] not in OMITTED]
    assert not missing, (f"config/figures.yaml has sections {missing} this cut does not know: add each to CUT in "
                         f"{Path(__file__).name} so that CI makes it")
    cfg["sections"] = [sec for sec in cfg["sections"] if sec["name"] in cut]
    # two attempts, not three: the forced-invalid run needs its second; a run the guest cannot carry (100 Mb/s)
    # costs one attempt less
    cfg["attempts"] = 2
    for sec in cfg["sections"]:
        change = dict(cut[sec["name"]])
        if "keep" in change:
            axis, n = change.pop("keep")
            sec[axis] = sec[axis][:n]
        sec.update(change)
    return cfg


# CI's own pipeline run (`./favorlab test`): table1 at two light loads, DropTail and FaQ on each load's schedule. It
# tests the pipeline's mechanics on the guest: interrupted and resumed, a forced-invalid attempt redone, networks
# kept between runs, tables, verdict and report. Two runs are too few: the interruption kills the second run's
# adoption, and the forced attempt fails its probes, so it parks no network for its retry. The figures of every
# section need the whole cut, a long test.
SMOKE = {"table1": {"loads": [0.25, 0.45]}}


def _pipeline(shared_guest, tmp_path, name: str, cut: dict) -> tuple[Path, Path, str]:
    """The cut `cut` of config/figures.yaml through the pipeline on the shared guest, interrupted as soon as its
    first run is complete and resumed; returns its results folder, its config file and when it was interrupted."""
    require_guest()
    full = yaml.safe_load((REPO / "config" / "figures.yaml").read_text())
    # runs of one topology share its network (testbed/README.md, "A kept topology"), across the interruption below
    testbed = {"kind": "local-vm", "vm_name": shared_guest["vm_name"], "keep_running": True, "reuse_topology": True}
    cfgfile = tmp_path / f"{name}.yaml"
    cfgfile.write_text(yaml.safe_dump(cut_config(full, testbed, name, cut), sort_keys=False))
    results = REPO / "results" / name
    shutil.rmtree(results, ignore_errors=True)

    # the run whose first attempt is made invalid: table1's FaQ run at load 0.25
    forced = next(r.run_id for r in matrix.runs(read_config(cfgfile))
                  if r.section == "table1" and r.aqm == "favor" and r.load == 0.25)
    runs_dir = results / "runs"

    # 1. start, and interrupt as soon as the first run is complete and recorded by Snakemake
    t0 = time.monotonic()
    log1 = tmp_path / "first.log"
    with open(log1, "w") as f:
        p = snakemake(cfgfile, forced, stdout=f, stderr=subprocess.STDOUT)
    first = None
    deadline = time.time() + 1800
    while time.time() < deadline and p.poll() is None:
        done = [d for d in runs_dir.glob("*") if d.is_dir() and not d.name.endswith(".partial")]
        if done:
            first = done[0]
            break
        time.sleep(2)
    assert first is not None, log1.read_text()[-3000:]
    # A run is finished for the pipeline once Snakemake has recorded the job (its directory appears a
    # moment before): interrupting in between makes --rerun-incomplete redo it, as it should.
    while time.time() < deadline and p.poll() is None and \
            "(Rule: run)" not in "".join(l for l in log1.read_text().splitlines(True) if l.startswith("Finished jobid")):
        time.sleep(0.5)
    interrupted_utc = datetime.now(timezone.utc).isoformat(timespec="seconds")
    os.killpg(p.pid, signal.SIGINT)  # our own process group only
    try:
        p.wait(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    stamp = (first / "DONE").stat()
    manifest = json.loads((first / "manifest.json").read_text())
    up_log = results / "logs" / "testbeds" / f"up-{shared_guest['vm_name']}.log"
    assert "already provisioned with this code" in up_log.read_text(), up_log.read_text()[-3000:]
    # nothing half-done is counted: every run directory without .partial is complete
    for d in runs_dir.glob("*"):
        if not d.name.endswith(".partial"):
            assert (d / "DONE").exists(), f"{d} is visible but incomplete"
    assert not (results / "report.html").exists()

    # 2. resume: finishes, and the first run is not redone
    log = tmp_path / "second.log"
    with open(log, "w") as f:
        rc = snakemake(cfgfile, forced, stdout=f, stderr=subprocess.STDOUT).wait(timeout=3600)
    wall = time.monotonic() - t0
    assert rc == 0, log.read_text()[-5000:]
    assert (first / "DONE").stat().st_mtime_ns == stamp.st_mtime_ns
    assert json.loads((first / "manifest.json").read_text()) == manifest

    print(f"{name}: pipeline {wall / 60:.1f} min")
    return results, cfgfile, interrupted_utc


def _check_runs(results: Path, cfgfile: Path, interrupted_utc: str) -> tuple[list[Path], dict]:
    """What every pipeline run on the guest must give: each run directory complete, table1's two AQMs on one
    schedule, the forced-invalid attempt redone, each attempt's phases, kept networks adopted, a verdict row
    for every claim and the report. Returns the run directories and the verdict's rows by claim."""
    runs = [d for d in (results / "runs").iterdir() if d.is_dir()]
    # the run-directory contract, for every run
    for d in runs:
        assert not d.name.endswith(".partial")
        for name in ("run.json", "schedule.csv", "manifest.json", "fidelity.json", "DONE"):
            assert (d / name).is_file(), f"{d.name}: {name} missing"
        assert (d / "pcap" / "bneck-in.pcap").stat().st_size > 24, f"{d.name}: bneck-in.pcap empty"
        fid = json.loads((d / "fidelity.json").read_text())
        assert isinstance(fid["valid"], bool) and "checks" in fid
        flows = results / "tables" / d.name / "flows.csv"
        assert flows.is_file() and len(flows.read_text().splitlines()) > 2, d.name
    # table1's two AQMs replayed the same schedule; the FaQ run ran sch_favor at the bottleneck, traced
    table1 = {r.aqm: r.run_id for r in matrix.runs(read_config(cfgfile))
              if r.section == "table1" and r.load == 0.25}
    dt, faq = (results / "runs" / table1["droptail"]), (results / "runs" / table1["favor"])
    assert (dt / "schedule.csv").read_bytes() == (faq / "schedule.csv").read_bytes()
    favor_manifest = json.loads((faq / "manifest.json").read_text())
    assert favor_manifest["sch_favor"] and favor_manifest["module_version"].startswith("sch_favor "), \
        favor_manifest.get("sch_favor")
    assert any(q.get("kind") == "favor" for q in json.loads((faq / "qdisc" / "after.json").read_text())["rl"])
    assert not any(q.get("kind") == "favor" for q in json.loads((dt / "qdisc" / "after.json").read_text())["rl"])
    raw = faq / "qdisc" / "favor-trace.txt"      # recorded unparsed (--raw), complete
    trace = list(favor_trace.read_raw(raw))
    assert len(trace) > 10 and raw.read_text().endswith("\n# lost_events=0\n") \
        and {r[2] for r in trace} <= set(favor_trace.VERDICTS), trace[:3]

    # the forced-invalid first attempt was redone; both attempts are kept and the last one is the run
    tries = json.loads((faq / "attempts.json").read_text())
    assert len(tries) >= 2 and tries[0]["valid"] is False and any(r.startswith("rtt_") for r in tries[0]["reasons"]), tries
    first_try = json.loads((faq / "attempts" / "1" / "run.json").read_text())
    assert first_try["fidelity"]["rtt_tolerance_ms"] == 0 and (faq / "attempts" / "1" / "pcap" / "bneck-in.pcap").exists()
    assert json.loads((faq / "run.json").read_text())["fidelity"]["rtt_tolerance_ms"] == 3
    assert tries[-1]["valid"] == json.loads((faq / "fidelity.json").read_text())["valid"]
    with open(results / "tables" / faq.name / "run.csv", newline="") as f:
        assert next(csv.DictReader(f))["valid"] == str(int(tries[-1]["valid"]))    # the tables use the last

    # every attempt says where its wall time went (attempts.json), and the report gives the medians per phase
    for d in runs:
        for t in json.loads((d / "attempts.json").read_text()):
            assert t["phases_s"][rundir.TRAFFIC_PHASE] > 0 and 0 < t["overhead_s"] < t["wall_s"] + 60, (d.name, t)
    assert "Where an attempt's wall time went" in (results / "report.html").read_text()

    # every attempt that followed, on the guest, one of the same topology which parked its network adopted it:
    # reset instead of built, the builder's probes judged by its own thresholds (the forced attempt above was
    # invalid on a kept network too). The pairs that span the interruption are not judged: its killed attempt
    # took the network down and left no directory.
    tries = []
    for d in runs:
        for t in [d, *sorted((d / "attempts").glob("*"))]:
            m = json.loads((t / "manifest.json").read_text())
            tries.append((m["start_utc"], t, m, json.loads((t / "run.json").read_text())["topology"]))
    tries.sort(key=lambda x: x[0])
    judged = []
    for (t0, n0, m0, topo0), (t1, n1, m1, topo1) in zip(tries, tries[1:]):
        if "time_wait_left" in m0["kept_topology"] and topo0 == topo1 and not t0 < interrupted_utc <= t1:
            judged.append(n1)
            assert m1["kept_topology"]["built_by"] == m0["kept_topology"]["built_by"], (n0, n1, m1["kept_topology"])
            assert "kept topology reset" in m1["phases_s"] and "topology up" not in m1["phases_s"], (n1, m1["phases_s"])
            rate = json.loads((n1 / "fidelity.json").read_text())["checks"]["bottleneck_rate_mbps"]
            assert rate["probed_by"] == m1["kept_topology"]["built_by"], (n1, rate)
    print(f"{results.name}: {len(judged)} of {len(tries)} attempts on a network an earlier one kept")
    assert judged, [(t, str(n), m["kept_topology"]) for t, n, m, _ in tries]

    # the verdict has a row for every claim, and the report says which points took retries
    with open(results / "verdict.csv", newline="") as f:
        verdict = {r["claim"]: r for r in csv.DictReader(f)}
    assert list(verdict) == CLAIM_IDS, list(verdict)
    report = (results / "report.html").read_text()
    assert (results / "report.html").stat().st_size > 10_000
    assert "verdict.csv missing" not in report and "C11" in report and "after retries" in report
    return runs, verdict


@pytest.mark.guest
@pytest.mark.slow
def test_pipeline_interrupted_resumed_and_retried_on_kept_networks(shared_guest, tmp_path):
    results, cfgfile, interrupted_utc = _pipeline(shared_guest, tmp_path, "pipeline-ci", SMOKE)
    runs, _ = _check_runs(results, cfgfile, interrupted_utc)
    assert len(runs) == 4, [d.name for d in runs]


@pytest.mark.guest
@pytest.mark.slow
@pytest.mark.long
def test_figures_config_cut_draws_every_figure(shared_guest, tmp_path):
    results, cfgfile, interrupted_utc = _pipeline(shared_guest, tmp_path, "figures-ci", CUT)
    runs, verdict = _check_runs(results, cfgfile, interrupted_utc)
    full = yaml.safe_load((REPO / "config" / "figures.yaml").read_text())
    with open(results / "figures" / "index.csv", newline="") as f:
        index = {r["figure"]: r for r in csv.DictReader(f)}
    print(f"figures cut: {len(runs)} runs")

    # every figure of the paper (analysis/figures.yaml: the ids with a number), each some section's: in the
    # index, drawn, its image written
    figs = yaml.safe_load((REPO / "analysis" / "figures.yaml").read_text())
    paper_figs = [f for f, v in figs.items() if "number" in v]
    assert {fig for s in full["sections"] for fig in s["figures"]} == set(paper_figs), paper_figs
    left_out = {f for s in full["sections"] if s["name"] in OMITTED for f in s["figures"]} - \
        {f for s in full["sections"] if s["name"] not in OMITTED for f in s["figures"]}
    paper_figs = [f for f in paper_figs if f not in left_out]
    not_drawn = {f: index.get(f, {}).get("detail", "missing from index.csv") for f in paper_figs
                 if index.get(f, {}).get("status") != "drawn"}
    assert not not_drawn, not_drawn
    images = {p.name for p in (results / "figures").iterdir()}
    for fig in paper_figs:
        assert any(n.startswith(f"{fig}.") or n.startswith(f"{fig}-") for n in images if n.endswith(".png")), fig

    # the claims only these sections decide: decided from their runs, whichever way
    for claim in ("C16", "C18"):
        assert verdict[claim]["status"] in ("holds", "does not hold", "insufficient data"), verdict[claim]
    for claim in (c for claims in OMITTED.values() for c in claims):
        assert verdict[claim]["status"] == "not run", verdict[claim]

    # the 100 Mb/s run: valid (a guest that keeps up), or kept out with the check that failed it, in the report
    fast = [d for d in runs if "-100M-" in d.name]
    assert len(fast) == 1, [d.name for d in runs]
    with open(results / "tables" / fast[0].name / "run.csv", newline="") as f:
        valid = next(csv.DictReader(f))["valid"]
    if valid == "0":
        assert fast[0].name in (results / "report.html").read_text()
