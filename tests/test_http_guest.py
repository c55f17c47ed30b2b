"""The HTTP workload through the whole pipeline on the shared guest: the smoke config (one load, 20 s runs)
with `workload: {kind: http, connections: 1}`, DropTail and FaQ. nginx and wrk run in the guest's hosts in
place of the replay, and their flows reach the tables (flows.csv: one row per object, sent by the left
host), a figure (F6, the sizes offered) and the report, whose scenario key says which workload it was.

About ten minutes on 2 cores besides the guest's bring-up: two runs of 30 s of traffic and their analysis.
"""
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.test_pipeline import PROFILE, require_guest

REPO = Path(__file__).resolve().parents[1]
NAME = "http-guest-ci"
RESULTS = REPO / "results" / NAME


def rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.guest
@pytest.mark.slow
@pytest.mark.long
def test_http_workload_reaches_tables_figure_and_report(shared_guest, tmp_path):
    require_guest()
    cfg = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    cfg.update(name=NAME, workload={"kind": "http", "connections": 1},
               testbed={"kind": "local-vm", "vm_name": shared_guest["vm_name"], "keep_running": True})
    cfgfile = tmp_path / f"{NAME}.yaml"
    cfgfile.write_text(yaml.safe_dump(cfg, sort_keys=False))
    shutil.rmtree(RESULTS, ignore_errors=True)
    log = tmp_path / "snakemake.log"
    with open(log, "w") as out:
        p = subprocess.Popen([sys.executable, "-m", "snakemake", "--profile", str(PROFILE),
                              "--configfile", str(cfgfile), "--cores", "2", "--resources", "testbed=1"],
                             cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                             env={**os.environ, "PYTHONUNBUFFERED": "1"},
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as test_pipeline
        try:
            rc = p.wait(timeout=3600)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGTERM)     # our own process group only
            rc = p.wait(timeout=300)
    assert rc == 0, log.read_text()[-6000:]

    runs = sorted(d for d in (RESULTS / "runs").iterdir() if d.is_dir() and not d.name.endswith(".partial"))
    assert [d.name for d in runs] == [f"dumbbell-10M-buf8-lomax30-paper-reno-http1c_{a}_load0.75_iw2_rep0"
                                      for a in ("droptail", "favor")]
    for d in runs:
        spec = json.loads((d / "run.json").read_text())
        assert spec["workload"] == {"kind": "web", "http": {"connections": 1}}
        checks = json.loads((d / "fidelity.json").read_text())["checks"]
        assert checks["http_requests"]["ok"], checks["http_requests"]
        reports = json.loads((d / "flows" / "wrk.json").read_text())
        assert reports and all(r["requests"] > 0 for r in reports.values()), reports
        # nginx's access log: every request on a connection of its own ($connection_requests 1)
        served = [line.split() for f in sorted((d / "flows").glob("nginx-a*.log"))
                  for line in f.read_text().splitlines()]
        assert served and all(w[2] == "1" for w in served)
        assert not list((d / "flows").glob("client-*.csv"))     # no replay client ran

        flows = rows(RESULTS / "tables" / d.name / "flows.csv")
        metric = [f for f in flows if f["in_metrics"] == "1"]
        assert len(metric) >= 20, (d.name, len(flows), len(metric))
        assert all(f["src"].startswith("a") and f["dst"].startswith("b") and f["direction"] == "forward"
                   and int(f["L"]) >= 1 and float(f["latency_s"]) > 0 for f in metric)
        # as many complete objects in the window as nginx served there, give or take the window's edges
        assert len(metric) <= len(served)
        [run] = rows(RESULTS / "tables" / d.name / "run.csv")
        assert run["http_connections"] == "1" and run["valid"] in ("0", "1")

    index = {r["figure"]: r for r in rows(RESULTS / "figures" / "index.csv")}
    assert index["F6"]["status"] == "drawn", index["F6"]
    assert (RESULTS / "figures" / "F6.png").is_file() and len(rows(RESULTS / "figures" / "F6.csv")) > 1
    assert "HTTP closed loop 1conn/path" in (RESULTS / "report.html").read_text()
