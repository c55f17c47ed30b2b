"""The whole pipeline on the local QEMU guest: the smoke config end to end, interrupted and resumed.

This is the CI smoke run. It starts the pipeline, interrupts it as soon as the first run directory is
complete, checks that nothing half-done is visible, restarts it, and checks that the finished run was
not redone and that the results (run directories, tables, figures, report) are all there. The FaQ run's
first attempt is made invalid on purpose (an idle-RTT tolerance of 0 that no path can meet): the
pipeline must redo it, keep both attempts, and use the last.
"""
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from analysis.tests.test_r import CLAIM_IDS   # one row per claim of analysis/claims.yaml, in its order

REPO = Path(__file__).resolve().parents[1]
NAME = "smoke-ci"
RESULTS = REPO / "results" / NAME
FORCED_INVALID = "dumbbell-10M-buf8-pareto30-paper-reno_favor_load0.75_iw2_rep0"


def guest_possible() -> str | None:
    """Why the guest cannot run here, or None."""
    for tool in ("qemu-system-x86_64", "debootstrap", "Rscript"):
        if not shutil.which(tool):
            return f"{tool} is not installed (./favorlab test installs it)"
    if os.geteuid() != 0:
        return "building the guest image needs root (debootstrap)"
    return None


def require_guest():
    why = guest_possible()
    if why:
        if os.environ.get("FAVORLAB_REQUIRE_GUEST") == "1":
            pytest.fail(f"the guest is required here but cannot run: {why}")
        pytest.skip(f"the QEMU guest cannot run on this machine: {why}; runs wherever qemu and root are")


def snakemake(cfg: Path, **kw) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "snakemake", "--configfile", str(cfg), "--cores", "2",
           "--resources", "testbed=1", "--rerun-incomplete", "--show-failed-logs"]
    # unbuffered: the test watches the log for Snakemake's "Finished jobid" lines as they happen (with
    # the log a file, Python buffered them, the test missed the first run and saw the whole pipeline end)
    env = {**os.environ, "PYTHONUNBUFFERED": "1",
           "FAVORLAB_TEST_FIRST_ATTEMPT": json.dumps({"run_id": FORCED_INVALID, "fidelity": {"rtt_tolerance_ms": 0}})}
    # SIGINT back to its default in the child: a test run started in the background (nohup ... &) inherits
    # it ignored, and Snakemake would then never see the interruption this test makes
    return subprocess.Popen(cmd, cwd=REPO, start_new_session=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **kw)


@pytest.mark.guest
@pytest.mark.slow
def test_smoke_pipeline_interrupted_and_resumed(shared_guest, tmp_path):
    require_guest()
    cfg = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    cfg["name"] = NAME
    # the suites' guest, already provisioned with this code: the pipeline's up-all finds its marker and
    # provisions nothing (conftest.py); keep_running, as the other suites still use it
    cfg["testbed"] = {"kind": "local-vm", "vm_name": shared_guest["vm_name"], "keep_running": True}
    cfgfile = tmp_path / "smoke-ci.yaml"
    cfgfile.write_text(yaml.safe_dump(cfg))
    shutil.rmtree(RESULTS, ignore_errors=True)
    runs_dir = RESULTS / "runs"

    # 1. start, and interrupt as soon as the first run is complete
    log1 = open(tmp_path / "first.log", "w")
    p = snakemake(cfgfile, stdout=log1, stderr=subprocess.STDOUT)
    first = None
    deadline = time.time() + 1800
    while time.time() < deadline and p.poll() is None:
        done = [d for d in runs_dir.glob("*") if d.is_dir() and not d.name.endswith(".partial")]
        if done:
            first = done[0]
            break
        time.sleep(2)
    assert first is not None, (tmp_path / "first.log").read_text()[-3000:]
    # A run is finished for the pipeline once Snakemake has recorded the job (its directory appears a
    # moment before): interrupting in between makes --rerun-incomplete redo it, as it should.
    while time.time() < deadline and p.poll() is None and \
            "(Rule: run)" not in "".join(l for l in (tmp_path / "first.log").read_text().splitlines(True)
                                         if l.startswith("Finished jobid")):
        time.sleep(0.5)
    os.killpg(p.pid, signal.SIGINT)  # our own process group only
    try:
        p.wait(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    log1.close()
    stamp = (first / "DONE").stat()
    up_log = RESULTS / "logs" / "testbeds" / f"up-{shared_guest['vm_name']}.log"
    assert "already provisioned with this code" in up_log.read_text(), up_log.read_text()[-3000:]
    manifest = json.loads((first / "manifest.json").read_text())

    # nothing half-done is counted: every run directory without .partial is complete
    for d in runs_dir.glob("*"):
        if not d.name.endswith(".partial"):
            assert (d / "DONE").exists(), f"{d} is visible but incomplete"
    assert not (RESULTS / "report.html").exists()

    # 2. resume: finishes, and the first run is not redone
    log2 = tmp_path / "second.log"
    with open(log2, "w") as f:
        p2 = snakemake(cfgfile, stdout=f, stderr=subprocess.STDOUT)
        rc = p2.wait(timeout=2400)
    assert rc == 0, log2.read_text()[-5000:]
    assert (first / "DONE").stat().st_mtime_ns == stamp.st_mtime_ns
    assert json.loads((first / "manifest.json").read_text()) == manifest

    # 3. the run-directory contract, for every run
    runs = sorted(d for d in runs_dir.iterdir() if d.is_dir())
    assert [d.name.split("_")[1] for d in runs] == ["droptail", "favor"]
    for d in runs:
        assert not d.name.endswith(".partial")
        for f in ("run.json", "schedule.csv", "manifest.json", "fidelity.json", "DONE"):
            assert (d / f).is_file(), f"{d.name}: {f} missing"
        for pcap in ("bneck-in.pcap", "bneck-out.pcap", "sender-a1.pcap"):
            assert (d / "pcap" / pcap).stat().st_size > 24, f"{d.name}: {pcap} empty"
        fid = json.loads((d / "fidelity.json").read_text())
        assert isinstance(fid["valid"], bool) and "checks" in fid
        assert list((d / "flows").glob("client-*.csv"))
    # the same schedule was replayed under both AQMs
    assert (runs[0] / "schedule.csv").read_bytes() == (runs[1] / "schedule.csv").read_bytes()
    # the FavorQueue run really ran sch_favor at the bottleneck: module recorded, qdisc shown, trace kept
    favor_manifest = json.loads((runs[1] / "manifest.json").read_text())
    assert favor_manifest["sch_favor"] and favor_manifest["module_version"].startswith("sch_favor "), \
        favor_manifest.get("sch_favor")
    rl_after = json.loads((runs[1] / "qdisc" / "after.json").read_text())["rl"]
    assert any(q.get("kind") == "favor" for q in rl_after), rl_after
    assert not any(q.get("kind") == "favor" for q in json.loads((runs[0] / "qdisc" / "after.json").read_text())["rl"])
    trace = [l for l in (runs[1] / "qdisc" / "favor-trace.csv").read_text().splitlines() if not l.startswith("#")]
    assert len(trace) > 10 and "verdict" in trace[0], trace[:3]

    # 3b. the forced-invalid first attempt was redone; both attempts are kept and the last one is the run
    faq = RESULTS / "runs" / FORCED_INVALID
    tries = json.loads((faq / "attempts.json").read_text())
    assert len(tries) >= 2 and tries[0]["valid"] is False and any(r.startswith("rtt_") for r in tries[0]["reasons"]), tries
    first_try = json.loads((faq / "attempts" / "1" / "run.json").read_text())
    assert first_try["fidelity"]["rtt_tolerance_ms"] == 0 and (faq / "attempts" / "1" / "pcap" / "bneck-in.pcap").exists()
    assert json.loads((faq / "run.json").read_text())["fidelity"]["rtt_tolerance_ms"] == 3
    assert tries[-1]["valid"] == json.loads((faq / "fidelity.json").read_text())["valid"]
    with open(RESULTS / "tables" / FORCED_INVALID / "run.csv", newline="") as f:
        assert next(csv.DictReader(f))["valid"] == str(int(tries[-1]["valid"]))    # the tables use the last
    assert not (RESULTS / "attempts").exists() or not any((RESULTS / "attempts").iterdir())

    # 4. analysis outputs
    for d in runs:
        flows = RESULTS / "tables" / d.name / "flows.csv"
        assert flows.is_file() and len(flows.read_text().splitlines()) > 10
    figs = {p.name for p in (RESULTS / "figures").iterdir()}
    for fig in ("F2", "F3", "F4"):
        assert any(n.startswith(fig) and n.endswith(".png") for n in figs), (fig, figs)
    assert (RESULTS / "report.html").stat().st_size > 10_000
    with open(RESULTS / "verdict.csv", newline="") as f:
        verdict = list(csv.DictReader(f))
    assert [r["claim"] for r in verdict] == CLAIM_IDS, verdict
    assert any(r["status"] != "not run" for r in verdict), "the smoke runs decide no claim at all"
    report = (RESULTS / "report.html").read_text()
    assert "verdict.csv missing" not in report and "C11" in report and "after retries" in report
