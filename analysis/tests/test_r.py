import os
import subprocess
from pathlib import Path

import pytest

from analysis import extract as ex
from analysis.tests import synth

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the verdict's rows, one per claim of analysis/claims.yaml in its order (C4b, FaQ against CHOKe, LAS and RuN2C, after C4;
# C19b, the bounded FaQ under a SYN flood, after C19; then F13's, F16's variance and the model's statements)
CLAIM_IDS = [f"C{i}" for i in range(1, 5)] + ["C4b"] + [f"C{i}" for i in range(5, 20)] + ["C19b", "C20", "C21", "C22"]
R_TESTS = sorted((Path(ROOT) / "analysis" / "R" / "tests").glob("test_*.R"))


pytestmark = pytest.mark.usefixtures("rscript")


def test_r_libraries_define_each_name_once():
    """common.R sources every library of analysis/R into one environment, in file name order: a name two
    files define would silently take the later file's meaning (a function, not only a constant)."""
    import re
    r_dir = Path(ROOT) / "analysis" / "R"
    where = {}
    for p in sorted(r_dir.glob("*.R")):
        text = p.read_text()
        if text.startswith("#!") or p.name == "common.R":
            continue
        for name in re.findall(r"^([A-Za-z_.][A-Za-z0-9_.]*|`[^`]+`)\s*<-", text, flags=re.M):
            where.setdefault(name, []).append(p.name)
    assert where, r_dir
    assert {n: files for n, files in where.items() if len(files) > 1} == {}


def test_r_unit_tests_pass():
    """analysis/R/tests/run.R runs every test_*.R there (testthat's summary names each by its context)."""
    assert R_TESTS
    r = subprocess.run(["Rscript", "analysis/R/tests/run.R"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    ran = {line.split(":", 1)[0] for line in r.stdout.splitlines() if ":" in line}
    assert {p.stem[len("test_"):] for p in R_TESTS} <= ran, r.stdout


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    d = tmp_path_factory.mktemp("results")
    for aqm in ["droptail", "favor"]:
        for rep in [0, 1]:
            rid = f"dumbbell_{aqm}_load0.5_rep{rep}"
            run = synth.standard_run(str(d / "runs" / rid))
            ex.extract(run.write(aqm=aqm, rep=rep, valid=not (aqm == "favor" and rep == 1)), str(d / "tables" / rid))
    return d


def test_figures_and_verdict_from_tables(results):
    d = results
    r = subprocess.run(["Rscript", "analysis/R/figures.R", "--tables", str(d / "tables"), "--out", str(d / "figures")],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for fig in ["F2", "F3", "F10", "F19", "F20"]:
        assert (d / "figures" / f"{fig}.png").stat().st_size > 1000 and (d / "figures" / f"{fig}.pdf").exists()
    assert "dumbbell_favor_load0.5_rep1" in (d / "figures" / "invalid-runs.csv").read_text()
    # the figure index: every figure of the paper, drawn with its counts or not drawn with the reason
    import csv
    idx = {r["figure"]: r for r in csv.DictReader(open(d / "figures" / "index.csv"))}
    assert list(idx) == [f"F{i}" for i in range(2, 28) if i != 25] + ["X1"] + [f"B{i}" for i in range(1, 7)]
    # X1 (beyond the paper, the SYN flood) has no paper number and says why it is not drawn here
    assert idx["X1"]["number"] in ("", "NA") and idx["X1"]["status"] == "not drawn"
    assert "synflood.rates_x" in idx["X1"]["detail"]
    assert idx["F3"]["status"] == "drawn" and idx["F3"]["detail"].startswith("n = 5 flows from 1 run")
    assert idx["F9"]["status"] == "not drawn" and idx["F9"]["detail"] == "needs runs at several buffer sizes of one scenario and load"
    # F5 on the common flows of replication 0 (FaQ's replication 1 is invalid), its path's RTT from hosts.json
    assert idx["F5"]["status"] == "drawn" and idx["F5"]["detail"] == "n = 1-2 flows from 1 run per point and AQM"
    assert {r["rtt"] for r in csv.DictReader(open(d / "figures" / "F5.csv"))} == {f"RTT {synth.PATH_RTT_MS} ms"}
    # F6 offers every window flow of both schedules, finished or not (flow 6 is cut): each schedule once
    assert idx["F6"]["status"] == "drawn" and idx["F6"]["detail"] == "n = 12 flows from 2 schedules per distribution"
    assert idx["F7"]["status"] == "not drawn" and "one size distribution per scenario" in idx["F7"]["detail"]
    assert idx["F14"]["status"] == "not drawn" and "needs valid runs of the persistent scenario" in idx["F14"]["detail"]
    assert idx["F23"]["status"] == "not drawn" and "load 0.25" in idx["F23"]["detail"]
    assert all(r["paper"] and r["title"] for r in idx.values())
    assert {r["figure"] for r in idx.values() if r["status"] == "drawn"} == \
        {p.stem for p in (d / "figures").glob("*.png") if p.stem[0] in "FB"}
    r = subprocess.run(["Rscript", "analysis/R/verdict.R", "--tables", str(d / "tables"), "--out", str(d / "verdict.csv")],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    import csv
    rows = list(csv.DictReader(open(d / "verdict.csv")))
    assert [x["claim"] for x in rows] == CLAIM_IDS
    by = {x["claim"]: x for x in rows}
    # identical DT and FaQ flows say nothing about FaQ: no claim of the scenario is decided on them
    assert by["C12"]["status"] == "insufficient data" and "same outcome" in by["C12"]["note"]
    assert not any(x["status"] in ("holds", "does not hold") for x in rows)
    assert by["C3"]["scenario"].startswith("dumbbell 10Mb/s buf8 IW2 paper")
    assert "dumbbell_favor_load0.5_rep1" not in by["C3"]["runs"]


def test_report_embeds_figures_verdict_and_invalid_runs(results):
    from analysis import report
    d = results
    subprocess.run(["Rscript", "analysis/R/figures.R", "--tables", str(d / "tables"), "--out", str(d / "figures")], cwd=ROOT, check=True,
                   capture_output=True)
    subprocess.run(["Rscript", "analysis/R/verdict.R", "--tables", str(d / "tables"), "--out", str(d / "verdict.csv")], cwd=ROOT,
                   check=True, capture_output=True)
    import json
    (d / "runs" / "dumbbell_droptail_load0.5_rep0" / "attempts.json").write_text(json.dumps(
        [{"attempt": 1, "valid": False, "reasons": ["cpu_busy: 40% of samples"]}, {"attempt": 2, "valid": True, "reasons": []}]))
    report.main(["--results", str(d), "--out", str(d / "report.html")])
    h = (d / "report.html").read_text()
    assert "valid at the first attempt 2, after retries 1, never 1" in h and "1: cpu_busy: 40% of samples" in h
    assert h.count("data:image/png;base64,") >= 5
    assert "<td>C18</td>" in h and "Invalid runs (1)" in h and "rate off" in h
    # the top says what stands behind the verdict: counts, provenance, unfinished flows
    top = h[:h.index("<h2>Verdict")]
    assert "<b>3</b> valid, <b>1</b> invalid" in top and "<b>0</b> holds" in top and "insufficient data" in top
    assert "favorlab commit" in top and "test" in top          # config name and guest kernel of the runs
    assert "unfinished flows" in top and "<th>flows_unfinished</th>" in top and "<th>steady</th>" in top
    assert "nstat_TcpExtTCPTimeouts" in h
    assert "src='figures/" not in h  # self-contained
    # the figure index names every figure of the paper, and why one is not drawn
    # beyond the paper: X1 (no flood runs here) and the benchmark figures B1-B6, each drawn when its png is there
    beyond = 1 + 6
    bench_drawn = len(list((d / "figures").glob("B*.png")))
    assert f"of 25 drawn here. Beyond the paper: {bench_drawn} of {beyond} drawn. Each one not drawn says why." in h
    assert "<td>F26</td>" in h and "needs valid runs of the chain scenario" in h
    # each figure has its caption under it: the paper's figure, then ours from the figure's table
    f3 = h[h.index("<h3 id='F3'>F3</h3>"):]
    f3 = f3[:f3.index("<h3 ", 5)]
    assert "<p class='caption'>Paper (Fig. 3): FaQ&#x27;s mean latency stays below" in f3
    assert "Here: FaQ below DropTail at 0 of 1 loads, equal at 1. n = 5 flows from 1 run per point and AQM." in f3


def test_ranking_from_tables(results):
    """R/ranking.R on extracted tables: one row per (scenario, load, AQM, metric); FaQ's replication 1 is invalid,
    so that schedule is left out for both AQMs and the rows say so; two AQMs: the report shows no ranking."""
    import csv
    from analysis import report
    d = results
    out = d / "figures" / "ranking.csv"
    r = subprocess.run(["Rscript", "analysis/R/ranking.R", "--tables", str(d / "tables"), "--out", str(out)],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(open(out)))
    assert list(rows[0]) == ["scenario", "load", "aqm", "aqm_name", "metric", "better", "schedules", "flows_counted", "min_flows",
                             "estimate", "low", "high", "interval", "rank", "rank_median", "rank_lo", "rank_hi", "rank_label", "p_first",
                             "rank_resamples", "rank_method", "window_flows", "unfinished", "left_out", "note"]
    assert len(rows) == 2 * 9 and {x["aqm_name"] for x in rows} == {"DropTail", "FaQ"}
    assert {x["schedules"] for x in rows} == {"1"}
    assert all("replication(s) 1 left out" in x["note"] for x in rows)
    assert not any(x["rank"] for x in rows)                   # 5 flows: below every metric's minimum (30 or 100), never ranked
    assert report.ranking_section(str(d / "figures")) is None


def test_verdict_on_runs_without_flows_says_not_run(tmp_path):
    run = synth.SyntheticRun(str(tmp_path / "runs" / "empty"))
    ex.extract(run.write(), str(tmp_path / "tables" / "empty"))
    r = subprocess.run(["Rscript", "analysis/R/verdict.R", "--tables", str(tmp_path / "tables"), "--out", str(tmp_path / "v.csv")],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert f"{len(CLAIM_IDS)} not run" in r.stderr and "0 holds" in r.stderr


def test_scenario_figures_appear_when_their_runs_exist(tmp_path):
    for aqm in ["droptail", "favor"]:
        for iw, buf in [(2, 8), (10, 8), (2, 60)]:
            rid = f"{aqm}_iw{iw}_b{buf}"
            ex.extract(synth.standard_run(str(tmp_path / "runs" / rid)).write(aqm=aqm, iw=iw, buffer_pkts=buf),
                       str(tmp_path / "tables" / rid), False)
    r = subprocess.run(["Rscript", "analysis/R/figures.R", "--tables", str(tmp_path / "tables"), "--out", str(tmp_path / "f")],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for fig in ["F9", "F13", "F27"]:
        assert (tmp_path / "f" / f"{fig}.png").exists(), r.stderr


def test_size_distribution_figures_from_two_distributions(tmp_path):
    """F5, F6 and F7 from extracted runs at two size distributions (run.json sizes.mean_pkts 10 and 30): F7 is
    drawn once a scenario has two, F6 draws one CCDF per distribution, F5 draws the Table 1 one only."""
    import csv
    for aqm in ["droptail", "favor"]:
        for mean in [10, 30]:
            rid = f"{aqm}_mean{mean}"
            ex.extract(synth.standard_run(str(tmp_path / "runs" / rid)).write(aqm=aqm, mean_pkts=mean),
                       str(tmp_path / "tables" / rid), False)
    r = subprocess.run(["Rscript", "analysis/R/figures.R", "--tables", str(tmp_path / "tables"), "--out", str(tmp_path / "f")],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    idx = {x["figure"]: x for x in csv.DictReader(open(tmp_path / "f" / "index.csv"))}
    assert {k: (idx[k]["status"], idx[k]["detail"]) for k in ("F5", "F6", "F7")} == {
        "F5": ("drawn", "n = 1-2 flows from 1 run per point and AQM"),
        "F6": ("drawn", "n = 6 flows from 1 schedule per distribution"),
        "F7": ("drawn", "n = 5 flows from 1 run per point and AQM")}
    # the six window flows of one schedule per distribution, sizes 3, 2, 2, 6, 1, 4 packets (flow 6 unfinished)
    f6 = list(csv.DictReader(open(tmp_path / "f" / "F6.csv")))
    for mean in ("10", "30"):
        got = {int(x["L"]): float(x["ccdf"]) for x in f6 if x["mean_pkts"] == mean}
        assert got == pytest.approx({1: 1, 2: 5 / 6, 3: 3 / 6, 4: 2 / 6, 6: 1 / 6})
    f7 = list(csv.DictReader(open(tmp_path / "f" / "F7.csv")))
    assert sorted((x["dist"], x["aqm_name"]) for x in f7) == [(f"lomax, mean {m} packets", a) for m in (10, 30)
                                                               for a in ("DropTail", "FaQ")]
    assert len({x["mean"] for x in f7}) == 1          # the same flows replayed: one mean latency everywhere
    # F5 is a Table 1 figure (figures.yaml scope: table1): the mean-10 runs add no panel to it
    assert {x["scen"] for x in csv.DictReader(open(tmp_path / "f" / "F5.csv"))} == \
        {"dumbbell 10Mb/s buf8 IW2 paper/reno lomax-mean30 kernel"}
    for fig in ("F5", "F6", "F7"):
        assert (tmp_path / "f" / f"{fig}.png").stat().st_size > 1000


def test_dataplane_comparison_pairs_kernel_and_p4_runs(results, tmp_path):
    """compare_dataplanes.R: the same metrics per dataplane, AQM and load, and FaQ's gain on each."""
    import csv
    p4 = tmp_path / "p4-tables"
    for aqm in ["p4-droptail", "p4-favorqueue"]:
        rid = f"dumbbell_{aqm}_load0.5_rep0"
        run = synth.standard_run(str(tmp_path / "runs" / rid))
        ex.extract(run.write(aqm=aqm, rep=0), str(p4 / rid))
    out = tmp_path / "dataplanes.csv"
    r = subprocess.run(["Rscript", "analysis/R/compare_dataplanes.R", "--kernel", str(results / "tables"),
                        "--p4", str(p4), "--out", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(open(out)))
    got = {(x["dataplane"], x["aqm_role"], x["metric"]) for x in rows}
    for dp in ("kernel", "p4"):
        for role in ("droptail", "favorqueue"):
            assert (dp, role, "latency_s") in got and (dp, role, "drop_ratio") in got
        assert (dp, "favorqueue", "faq_latency_gain") in got
    # the synthetic DT and FaQ runs are the same flows: no gain on either dataplane
    for x in rows:
        if x["metric"] == "faq_latency_gain":
            assert abs(float(x["value"])) < 1e-9, x
    assert "| 0.50 |" in r.stdout
    # the kernel FaQ's second replication is invalid: left out, unless asked for and then marked
    flows = {(x["dataplane"], x["aqm_role"]): float(x["value"]) for x in rows if x["metric"] == "flows"}
    r = subprocess.run(["Rscript", "analysis/R/compare_dataplanes.R", "--kernel", str(results / "tables"),
                        "--p4", str(p4), "--out", str(out), "--include-invalid"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "INVALID RUNS INCLUDED: 1" in r.stdout and "| 0.50! |" in r.stdout
    rows_all = list(csv.DictReader(open(out)))
    got_all = {(x["dataplane"], x["aqm_role"], x["metric"]): float(x["value"]) for x in rows_all}
    assert got_all[("kernel", "favorqueue", "invalid_runs")] == 1
    assert got_all[("kernel", "favorqueue", "flows")] == 2 * flows[("kernel", "favorqueue")]
    # the directories swapped: refused with the fix
    r = subprocess.run(["Rscript", "analysis/R/compare_dataplanes.R", "--kernel", str(p4), "--p4",
                        str(results / "tables"), "--out", str(tmp_path / "x.csv")], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode != 0 and "fix: --kernel results/quick/tables" in r.stderr


def test_figure_tables_hold_the_known_answers(results):
    """Each figure writes what it draws beside it; on the crafted runs the values are known: DropTail and FaQ
    replay the same six in-window flows, five finish (flow 6 is cut by the capture's end)."""
    import csv
    d = results
    subprocess.run(["Rscript", "analysis/R/figures.R", "--tables", str(d / "tables"), "--out", str(d / "figures")],
                   cwd=ROOT, check=True, capture_output=True)
    f3 = list(csv.DictReader(open(d / "figures" / "F3.csv")))
    # FaQ's replication 1 is invalid: that schedule is left out for DropTail too, so one run per AQM remains
    assert {(r["aqm"], r["aqm_name"], r["runs"], r["flows"]) for r in f3} == {("droptail", "DropTail", "1", "5"),
                                                                             ("favor", "FaQ", "1", "5")}
    assert len({r["mean"] for r in f3}) == 1                      # the same flows, the same outcome
    f10 = list(csv.DictReader(open(d / "figures" / "F10.csv")))
    assert len(f10) == 5 and all(float(r["delta"]) == 0 for r in f10)
    assert {(r["flows"], r["runs"]) for r in f10} == {("5", "1")}   # 5 flow pairs from 1 DropTail/FaQ run pair
    # per length (log axis, each class at its flows' geometric mean length): flows 0..4 have 3, 2, 2, 6, 1 packets
    f8 = list(csv.DictReader(open(d / "figures" / "F8.csv")))
    assert {(r["aqm_name"], float(r["L_mean"]), r["flows"], r["runs"]) for r in f8} == {
        (a, L, n, "1") for a in ("DropTail", "FaQ") for L, n in ((1, "1"), (2, "2"), (3, "1"), (6, "1"))}
    assert "FaQ below DropTail at 0 of 4 length classes, equal at 4" in (d / "figures" / "F8.caption.txt").read_text()
    cens = [r for r in csv.DictReader(open(d / "figures" / "unfinished-flows.csv"))]
    assert sum(int(r["unfinished"]) for r in cens) == 3           # flow 6 in each of the 3 valid runs
    assert sum(int(r["flows"]) for r in cens) == 18


def chain_run(path, aqm, n, unfinished=0, nseg=3):
    """A chain run as the runner leaves it (docs/contracts.md, "Scenario chain"): the reference user's flows
    us -> ur one after the other (each due 50 ms after the previous one's end), its schedule.csv written
    from them, captures sender-us and sender-ur; `unfinished` more flows that only send their SYN. nseg: the
    flows' segments (DropTail and FaQ runs whose every flow has the same latency would be one run given twice)."""
    import json
    run = synth.SyntheticRun(path, duration_s=40.0)
    t = 2.0
    for i in range(n):
        t = synth.clean(run.flow(i, 41000 + i, nseg, t), t) + 0.05
    for i in range(n, n + unfinished):
        run.flow(i, 41000 + i, 3, t).syn(t)
        t += 3.0
    d = run.write(aqm=aqm, load=0.0)
    for old, new in (("a1", "us"), ("b1", "ur")):
        os.rename(os.path.join(d, "pcap", f"sender-{old}.pcap"), os.path.join(d, "pcap", f"sender-{new}.pcap"))
    sched = open(os.path.join(d, "schedule.csv")).read().replace(",a1,b1,forward,web", ",us,ur,forward,reference")
    open(os.path.join(d, "schedule.csv"), "w").write("# generator=workloads.reference\n" + sched)
    json.dump({"kind": "chain", "hosts": {"us": {"ip": synth.HOSTS["a1"], "lan": 0}, "ur": {"ip": synth.HOSTS["b1"], "lan": 5}},
               "paths_rtt_ms": {"us-ur": 110}}, open(os.path.join(d, "hosts.json"), "w"))
    spec = json.load(open(os.path.join(d, "run.json")))
    spec.update(scenario="chain", topology=dict(spec["topology"], kind="chain"), workload={"kind": "reference"})
    json.dump(spec, open(os.path.join(d, "run.json"), "w"))
    return d


def test_chain_figure_and_claim_from_extracted_runs(tmp_path):
    """F26 and C17 read what extraction writes for a chain run: the reference flows by flow id, the window,
    the seed. 8 flows with DropTail (one more left unfinished), 12 with FaQ: drawn, and too few to judge."""
    import csv
    for aqm, n, u, nseg in (("droptail", 8, 1, 3), ("favor", 12, 0, 2)):
        rid = f"chain-10M-buf8-pareto30-paper-reno_{aqm}_load0.00_iw2_rep0"
        ex.extract(chain_run(str(tmp_path / "runs" / rid), aqm, n, u, nseg), str(tmp_path / "tables" / rid), False)
    r = subprocess.run(["Rscript", "analysis/R/figures.R", "--tables", str(tmp_path / "tables"), "--out", str(tmp_path / "f")],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    idx = {x["figure"]: x for x in csv.DictReader(open(tmp_path / "f" / "index.csv"))}
    assert idx["F26"]["status"] == "drawn" and idx["F26"]["detail"] == "n = 8-12 flows from 1 run per AQM", idx["F26"]
    counts = {x["aqm"]: x for x in csv.DictReader(open(tmp_path / "f" / "F26-completed.csv"))}
    assert (counts["droptail"]["completed"], counts["droptail"]["unfinished"], counts["favor"]["completed"]) == ("8", "1", "12")
    assert counts["favor"]["window_s"] == "39" and counts["favor"]["aqm_name"] == "FaQ"
    # the chain's flows are in no Table 1 figure
    assert idx["F3"]["status"] == "not drawn"
    r = subprocess.run(["Rscript", "analysis/R/verdict.R", "--tables", str(tmp_path / "tables"), "--out", str(tmp_path / "v.csv")],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    c17 = next(x for x in csv.DictReader(open(tmp_path / "v.csv")) if x["claim"] == "C17")
    assert c17["status"] == "insufficient data" and c17["note"].startswith("fewer than 30 completed reference flows"), c17
    assert "completed DT 8, FaQ 12; unfinished DT 1, FaQ 0" in c17["n"] and c17["scenario"].startswith("chain 10Mb/s")
