"""./favorlab compare A B (orchestrate/compare.py, analysis/R/compare.R): on synthetic tables bundled the way
`./favorlab bundle` bundles them, the same results twice differ by nothing, a DropTail result against a FaQ
result shows FaQ's lower latency where the tables have it, what does not pair is listed, and bad input gets
one line naming the fix."""
import csv
import hashlib
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from orchestrate import bundle as bd
from orchestrate import matrix as run_matrix
from orchestrate.config import read_config

REPO = Path(__file__).resolve().parents[2]
# five replications: the comparison's interval is then the replication jackknife, quick to compute
REPLICATIONS = 5
FLOWS = 60
RUN_COLS = ["run_id", "aqm", "load", "iw", "profile", "replication", "seed", "bottleneck_mbps", "buffer_pkts",
            "dataplane", "cc", "size_dist", "size_mean_pkts", "topology", "scenario", "valid", "window_start_s",
            "window_end_s", "schedule_sha256"]
FLOW_COLS = ["run_id", "flow_id", "direction", "start_s", "L", "latency_s", "complete", "seen", "in_window",
             "in_metrics", "syn_retrans", "R", "RTO", "FR", "bneck_in", "drops"]

pytestmark = pytest.mark.usefixtures("rscript")


def _flow_rows(rid, aqm, rep):
    """One schedule per replication (the same flows under every AQM); FaQ takes 0.6 of DropTail's time on
    flows under 10 packets, as the paper's mechanism would, and the rest alike up to a small noise."""
    sched = random.Random(rep)
    noise = random.Random(f"{aqm}-{rep}")
    rows = []
    for fid in range(FLOWS):
        L = max(1, int(sched.paretovariate(1.3) * 3))
        base = 0.1 * (1 + L ** 0.5) * sched.lognormvariate(0, 0.3)
        latency = base * (0.6 if aqm == "favor" and L < 10 else 1) * noise.lognormvariate(0, 0.02)
        drops = sched.randint(0, 1) if L > 5 else 0
        rows.append({"run_id": rid, "flow_id": fid, "direction": "forward", "start_s": 2 + 0.5 * fid, "L": L,
                     "latency_s": latency, "complete": 1, "seen": 1, "in_window": 1, "in_metrics": 1,
                     "syn_retrans": sched.randint(0, 1) if fid % 7 == 0 else 0, "R": drops, "RTO": drops,
                     "FR": 0, "bneck_in": L + 2 + drops, "drops": drops})
    return rows


def _write(path, cols, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)


def make_results(root: Path, name: str, aqms, loads=(0.5,), drop=(), seed=7) -> tuple[Path, Path]:
    """A config of smoke's scenario and its results folder: every run of its matrix finished, with tables
    (flows.csv, run.csv) as extraction writes them. drop: run ids left out (never run); seed: the config's,
    from which each replication's seed and schedule follow."""
    cfg = yaml.safe_load(open(REPO / "config" / "smoke.yaml"))
    cfg.update(name=name, aqms=list(aqms), loads=list(loads), replications=REPLICATIONS)
    root.mkdir(parents=True, exist_ok=True)
    config = root / f"{name}.yaml"
    config.write_text(yaml.safe_dump(cfg))
    res = root / "results" / name
    for run in run_matrix.runs(read_config(config, warn=lambda _m: None)):
        rid = run.run_id
        if rid in drop:
            continue
        aqm, load, rep = rid.split("_")[1], float(rid.split("_load")[1].split("_")[0]), int(rid.rsplit("rep", 1)[1])
        (res / "runs" / rid).mkdir(parents=True)
        (res / "runs" / rid / "DONE").write_text("")
        _write(res / "tables" / rid / "run.csv", RUN_COLS, [{
            "run_id": rid, "aqm": aqm, "load": load, "iw": 2, "profile": "paper", "replication": rep,
            "seed": seed + rep, "bottleneck_mbps": 10, "buffer_pkts": 8, "dataplane": "kernel", "cc": "reno",
            "size_dist": "lomax", "size_mean_pkts": 30, "topology": "dumbbell", "scenario": "dumbbell", "valid": 1,
            "window_start_s": 2, "window_end_s": 40,
            "schedule_sha256": hashlib.sha256(f"{seed} {load} {rep}".encode()).hexdigest()}])
        _write(res / "tables" / rid / "flows.csv", FLOW_COLS, _flow_rows(rid, aqm, rep))
    return config, res


def bundle_of(root: Path, name: str, aqms, **kw) -> Path:
    config, res = make_results(root, name, aqms, **kw)
    return bd.bundle(config, root / f"{name}-bundle.tar.gz", results=res, log=lambda _m: None)


def run_compare(a, b, out):
    return subprocess.run([sys.executable, "-m", "orchestrate.compare", str(a), str(b), "--out", str(out),
                           "--resamples", "200"],   # the tests' bootstrap, as analysis/R/tests lower it
                          cwd=REPO, capture_output=True, text=True)


def read_rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare")
    return {"both": bundle_of(root / "one", "same", ["droptail", "favor"]),
            "both again": bundle_of(root / "two", "same", ["droptail", "favor"]),
            "droptail": bundle_of(root, "dt", ["droptail"]),
            "favor": bundle_of(root, "faq", ["favor"]),
            "root": root}


def test_two_bundles_of_the_same_config_differ_by_nothing(bundles, tmp_path):
    r = run_compare(bundles["both"], bundles["both again"], tmp_path / "out")
    assert r.returncode == 0, r.stderr
    rows = read_rows(tmp_path / "out" / "compare.csv")
    # each AQM against itself: two AQMs x one load x five metrics
    assert {(x["aqm_a"], x["aqm_b"]) for x in rows} == {("droptail", "droptail"), ("favor", "favor")}
    assert len(rows) == 2 * 5
    for x in rows:
        assert float(x["diff"]) == 0 and float(x["diff_lo"]) == 0 and float(x["diff_hi"]) == 0, x
        assert x["verdict"] == "no difference shown", x
        assert int(x["flows"]) == REPLICATIONS * FLOWS and int(x["replications"]) == REPLICATIONS
        assert x["method"].startswith(f"jackknife over {REPLICATIONS} replications")
    assert read_rows(tmp_path / "out" / "unpaired.csv") == []
    assert "no difference shown" in r.stdout and "paired: 10 run pairs" in r.stdout
    assert (tmp_path / "out" / "summary.md").read_text().startswith("# Comparison")


def _mean_latency(tables: Path, short=False):
    lat = [float(f["latency_s"]) for p in sorted(tables.glob("*/flows.csv")) for f in read_rows(p)
           if not short or int(f["L"]) < 10]
    return sum(lat) / len(lat)


def test_droptail_against_faq_shows_faqs_lower_latency_as_the_verdict_does(bundles, tmp_path):
    r = run_compare(bundles["droptail"], bundles["favor"], tmp_path / "out")
    assert r.returncode == 0, r.stderr
    rows = {x["metric"]: x for x in read_rows(tmp_path / "out" / "compare.csv")}
    assert {(x["aqm_a"], x["aqm_b"]) for x in rows.values()} == {("droptail", "favor")}
    root = bundles["root"] / "results"
    for metric, short in [("mean latency (s)", False), ("mean latency, short flows (s)", True)]:
        x = rows[metric]
        want = _mean_latency(root / "faq" / "tables", short) - _mean_latency(root / "dt" / "tables", short)
        assert float(x["diff"]) == pytest.approx(want, rel=1e-9)
        assert float(x["diff_hi"]) < 0 and x["verdict"] == "B lower", x
        assert float(x["ratio"]) == pytest.approx(float(x["b"]) / float(x["a"]))
    # the same drops under both: not a difference
    assert rows["drop ratio"]["verdict"] == "no difference shown"


def test_runs_and_flows_that_do_not_pair_are_listed(bundles, tmp_path):
    config, res = make_results(tmp_path, "partial", ["droptail", "favor"],
                               drop={f"dumbbell-10M-buf8-lomax30-paper-reno_favor_load0.50_iw2_rep{REPLICATIONS - 1}"})
    # one flow of one run left unfinished: out of the metrics on that side only
    flows = res / "tables" / "dumbbell-10M-buf8-lomax30-paper-reno_droptail_load0.50_iw2_rep0" / "flows.csv"
    rows = read_rows(flows)
    rows[3].update(complete=0, in_metrics=0)
    _write(flows, FLOW_COLS, rows)
    # a chain run: its closed-loop schedule names other flows by the same ids in every run
    chain = "chain-10M-buf8-lomax30-paper-reno_droptail_load0.50_iw2_rep0"
    src = flows.parent
    _write(res / "tables" / chain / "run.csv", RUN_COLS,
           [dict(r, run_id=chain, topology="chain", scenario="chain") for r in read_rows(src / "run.csv")])
    _write(res / "tables" / chain / "flows.csv", FLOW_COLS, [dict(f, run_id=chain) for f in read_rows(src / "flows.csv")])
    r = run_compare(bundles["both"], res, tmp_path / "out")
    assert r.returncode == 0, r.stderr
    unpaired = read_rows(tmp_path / "out" / "unpaired.csv")
    runs = {(u["side"], u["run_id"]): u["reason"] for u in unpaired if u["flow_id"] == ""}
    assert sorted(runs) == [("A", f"dumbbell-10M-buf8-lomax30-paper-reno_favor_load0.50_iw2_rep{REPLICATIONS - 1}"),
                            ("B", chain)]
    assert "no run of this scenario" in runs["A", f"dumbbell-10M-buf8-lomax30-paper-reno_favor_load0.50_iw2_rep{REPLICATIONS - 1}"]
    assert "closed-loop" in runs["B", chain]
    assert [(u["side"], u["flow_id"]) for u in unpaired if u["flow_id"] != ""] == [("A", "3")]
    favor = [x for x in read_rows(tmp_path / "out" / "compare.csv") if x["aqm_a"] == "favor"]
    assert {int(x["replications"]) for x in favor} == {REPLICATIONS - 1}


def _refusal(r):
    assert r.returncode == 2, r.stdout + r.stderr
    line = r.stderr.strip()
    assert line.startswith("favorlab compare: ") and "\n" not in line and "fix" in line.lower(), line
    return line


def test_bad_input_is_refused_naming_the_fix(bundles, tmp_path):
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"not an archive")
    assert "not a readable tar archive" in _refusal(run_compare(junk, bundles["both"], tmp_path / "o1"))
    empty = tmp_path / "empty-results"
    (empty / "runs").mkdir(parents=True)
    assert "no extracted tables" in _refusal(run_compare(bundles["both"], empty, tmp_path / "o2"))
    assert "no such results folder or bundle" in _refusal(run_compare(tmp_path / "absent", empty, tmp_path / "o3"))
    _, other = make_results(tmp_path, "other-loads", ["droptail", "favor"], loads=(0.9,))
    assert "no run in common" in _refusal(run_compare(bundles["both"], other, tmp_path / "o4"))
    _, chokes = make_results(tmp_path, "choke-pie", ["choke", "pie"])
    assert "none in common" in _refusal(run_compare(bundles["both"], chokes, tmp_path / "o5"))
    # the same labels (scenario, load, replications) on schedules of another seed: their flow ids name other flows
    _, reseeded = make_results(tmp_path, "other-seed", ["droptail", "favor"], seed=8)
    assert "no run in common" in _refusal(run_compare(bundles["both"], reseeded, tmp_path / "o6"))
    assert not any((tmp_path / o).exists() for o in ["o1", "o2", "o3", "o4", "o5", "o6"])


def test_the_wrapper_runs_compare_and_refuses_bad_resamples(bundles, tmp_path):
    if not (REPO / ".venv" / "bin" / "python").exists():
        pytest.skip("no .venv: the wrapper would bootstrap it; runs where scripts/bootstrap has run (CI)")
    r = subprocess.run([str(REPO / "favorlab"), "compare", str(bundles["both"]), str(bundles["both again"]),
                        "--out", str(tmp_path / "out"), "--resamples", "100"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "paired: 10 run pairs" in r.stdout and (tmp_path / "out" / "compare.csv").is_file()
    # a results folder's tables/ folder named directly compares the same
    results = bundles["root"] / "one" / "results" / "same"
    r = subprocess.run([str(REPO / "favorlab"), "compare", str(results / "tables"), str(results), "--out",
                        str(tmp_path / "tables"), "--resamples", "100"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert read_rows(tmp_path / "tables" / "compare.csv") == read_rows(tmp_path / "out" / "compare.csv")
    r = subprocess.run([str(REPO / "favorlab"), "compare", "A", "B", "--resamples", "5"], capture_output=True, text=True)
    assert r.returncode == 2 and "--resamples 5: give 100 or more" in r.stderr, r.stderr


def test_a_changed_unpacked_bundle_is_refused_and_foreign_output_never_written_over(bundles, tmp_path):
    top = tmp_path / "unpacked"
    top.mkdir()
    subprocess.run(["tar", "-xzf", str(bundles["both"]), "-C", str(top)], check=True)
    unpacked = top / "same"
    flows = next((unpacked / "tables").glob("*/flows.csv"))
    flows.write_text(flows.read_text().replace(",forward,", ",forward,1", 1))
    assert "checksum mismatch" in _refusal(run_compare(unpacked, bundles["both"], tmp_path / "o1"))
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    assert "does not write" in _refusal(run_compare(bundles["both"], bundles["both again"], taken))
    assert (taken / "notes.txt").read_text() == "mine"
