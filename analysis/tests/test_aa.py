"""The A/A replay's bookkeeping (analysis/aa.py): which decisions are false, which verdicts it runs, and the
whole path on extracted synthetic runs."""
import csv
import json
import subprocess
import sys

import pytest

from analysis import aa
from analysis import extract as ex
from analysis.tests import synth
from orchestrate.runspec import read_aqms

ROOT = aa.REPO


@pytest.mark.parametrize("kind, status, false", [
    ("better", "holds", True), ("better", "does not hold", True), ("better", "insufficient data", False),
    ("trend", "holds", True), ("t", "does not hold", True), ("interval", "holds", True),
    ("no_worse", "holds", False), ("no_worse", "does not hold", True),
    ("equivalent", "holds", False), ("equivalent", "does not hold", True),
    ("band", "holds", True), ("band", "does not hold", False),
    ("below", "holds", False),    # not a family of comparisons: never counted
])
def test_a_decision_is_false_where_identical_qdiscs_cannot_give_it(kind, status, false):
    assert aa.is_false(kind, status) is false


def test_each_twin_plays_the_side_its_verdict_role_names_and_both_pairs_make_two_replays():
    by_aqm = {"droptail": ["r1"], "droptail_twin": ["r2"], "favor": ["r3"], "favor_twin": ["r4"]}
    plan = aa.pairings(by_aqm, read_aqms())
    sides = {(p["kind"], p["droptail"], p["favorqueue"]) for p in plan}
    assert sides == {("aa", "droptail", "droptail_twin"), ("aa", "favor_twin", "favor"),
                     ("comparison", "droptail", "favor"), ("comparison", "droptail_twin", "favor_twin")}
    # a twin without its original is no A/A replay
    assert aa.pairings({"droptail_twin": ["r2"], "favor": ["r3"]}, read_aqms()) == []


def test_family_rates_carry_an_exact_upper_bound():
    parts = [{"family": "better", "status": "insufficient data", "false_decision": 0, "claim": "C3", "replay": "A/A x",
              "scenario": "s"}] * 30
    row = next(f for f in aa.families(parts) if f["family"] == "better")
    assert (row["parts_judged"], row["false_decisions"], row["rate"]) == (30, 0, "0.000")
    assert float(row["upper95"]) == pytest.approx(1 - 0.05 ** (1 / 30), abs=1e-3)    # 0 of 30: 9.5 %
    assert next(f for f in aa.families(parts) if f["family"] == "band")["rate"] == ""


def test_only_comparison_parts_count_and_a_conflict_is_holds_against_does_not_hold():
    parts = [{"label": "DT peak", "kind": "better", "between": False, "status": "holds"},
             {"label": "DT above FaQ", "kind": "better", "between": True, "status": "holds"},
             {"label": "G", "kind": "band", "between": True, "status": "reported"},
             {"label": "latency no worse at 0.25", "kind": "no_worse", "between": True, "status": "holds"}]
    judged = aa.judged_parts("A/A DropTail", [{"claim": "C1", "scenario": "s", "parts": json.dumps(parts)}])
    assert [(p["part"], p["false_decision"]) for p in judged] == [("DT above FaQ", 1), ("latency no worse at 0.25", 0)]
    rows = aa.agreement([{"claim": "C3", "scenario": "s", "status": "holds"}, {"claim": "C5", "scenario": "s", "status": "holds"}],
                        [{"claim": "C3", "scenario": "s", "status": "does not hold"}, {"claim": "C5", "scenario": "s", "status": "insufficient data"}])
    assert [r["conflict"] for r in rows] == [1, 0]


def test_an_aa_replay_runs_the_verdict_with_the_twin_on_the_faq_side(tmp_path):
    """Extracted synthetic runs of DropTail and its twin (the same flows: one outcome twice): the A/A verdict
    pairs the twin against DropTail (its rows say every pair has the same outcome) and decides nothing."""
    ids = []
    for aqm in ("droptail", "droptail_twin"):
        rid = f"dumbbell-10M-buf8-lomax30-paper-reno_{aqm}_load0.5_iw2_rep0"
        ex.extract(synth.standard_run(str(tmp_path / "runs" / rid)).write(aqm=aqm), str(tmp_path / "tables" / rid), False)
        ids.append(rid)
    (tmp_path / "analysis-runs.txt").write_text("".join(f"{r}\n" for r in ids))
    r = subprocess.run([sys.executable, "-m", "analysis.aa", "--results", str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    verdict = list(csv.DictReader(open(tmp_path / "aa" / "verdict-droptail-vs-droptail_twin.csv")))
    assert any("same outcome" in row["note"] for row in verdict), [row["note"] for row in verdict]
    fams = {f["family"]: f for f in csv.DictReader(open(tmp_path / "aa" / "families.csv"))}
    assert {f["false_decisions"] for f in fams.values()} == {"0"}
    assert "A/A DropTail" in (tmp_path / "aa" / "summary.md").read_text()
    assert (tmp_path / "aa" / "jitter-droptail-vs-droptail_twin.csv").exists()


def test_results_without_a_twin_get_an_error_naming_the_fix(tmp_path):
    rid = "dumbbell-10M-buf8-lomax30-paper-reno_droptail_load0.5_iw2_rep0"
    ex.extract(synth.standard_run(str(tmp_path / "runs" / rid)).write(aqm="droptail"), str(tmp_path / "tables" / rid), False)
    (tmp_path / "analysis-runs.txt").write_text(rid + "\n")
    r = subprocess.run([sys.executable, "-m", "analysis.aa", "--results", str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "config/aa-replay.yaml" in r.stderr


def test_a_claim_counts_once_however_many_of_its_parts_decide_falsely():
    """C4's per-load parts and its trend read the same flows: two false parts of one claim are one false claim,
    and the claim-level bound, over fewer units, is the wider one."""
    part = {"family": "better", "scenario": "s"}
    parts = ([dict(part, replay="A/A DropTail", claim="C4", status="holds", false_decision=1)] * 2
             + [dict(part, replay="A/A DropTail", claim="C4", status="insufficient data", false_decision=0)] * 8
             + [dict(part, replay=r, claim=c, status="insufficient data", false_decision=0)
                for r in ("A/A DropTail", "A/A FaQ") for c in ("C3", "C5", "C12")])
    row = next(f for f in aa.families(parts) if f["family"] == "better")
    assert (row["parts_judged"], row["false_decisions"]) == (16, 2)
    assert (row["claims_judged"], row["claims_false"], row["claim_rate"]) == (7, 1, "0.143")
    assert float(row["claim_upper95"]) > float(row["upper95"])


def test_the_summary_says_how_many_schedules_each_replay_rests_on():
    ids = [f"dumbbell-10M-buf8-lomax30-paper-reno_{a}_load{l}_iw2_rep{r}" for a in ("droptail", "droptail_twin")
           for l in ("0.25", "0.55") for r in range(3)]
    assert aa.schedules(ids) == 6
    text = aa.summary_md([], aa.families([]), [], ["A/A DropTail"], aa.schedules(ids))
    assert "each on 6 schedules" in text
