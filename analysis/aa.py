"""The A/A replay: how often the verdict decides a difference that cannot exist.

    python -m analysis.aa --results results/aa-replay [--out results/aa-replay/aa]

A results folder whose runs include A/A twins (config/aqms.yaml `twin_of`: one qdisc under a second name, on
the same schedules) is judged by the whole verdict (analysis/R/verdict.R) once per twin, with the twin in the
side its `verdict_role` names and its original in the other: DropTail against its twin playing FaQ, FaQ's
twin playing DropTail against FaQ. Every part of a claim whose statistic compares the two sides (the
verdict's `parts` column, `between`) has a known truth there: no difference. A decision on such a part is
false when it says otherwise:
  - better, trend, above, t, interval (a difference in one direction): any decision, "holds" (FaQ's side
    better) or "does not hold" (FaQ's side worse);
  - no_worse, equivalent ("no worse", "similar"): "does not hold";
  - band (the paper's size of an effect, such as "G about 30 %"): "holds".
Parts about one AQM's own value (C2's tau, C1's DropTail peak) are not comparisons and are left out.

When both originals and both twins ran, their two pairings (DropTail vs FaQ, and the twins) are two replays of
the same comparison on the same schedules; `agreement.csv` lists every claim and flags one that holds in one
and does not hold in the other.

Writes to --out: parts.csv (every judged comparison part of every A/A verdict, and whether its decision is
false), families.csv (per family of tests: parts judged, decisions, false decisions, the rate and its exact
95 % upper bound, and the same per claim), agreement.csv, jitter.csv (analysis/R/aa_jitter.R: |latency difference| of the same flow
between the two names) and summary.md (what the report shows). docs/statistics.md, "The A/A replay".
"""
import argparse
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

from scipy.stats import beta

from contract import rundir
from orchestrate.runspec import read_aqms

REPO = Path(__file__).resolve().parents[1]
R_DIR = REPO / "analysis" / "R"
# the families of a part's test (verdict_status.R's kinds), and which decisions of each are false in an A/A
FAMILIES = {"better": ("better", "trend", "above", "t", "interval"), "no worse": ("no_worse",),
            "equivalent": ("equivalent",), "band": ("band",)}
FALSE_WHEN = {"better": {"holds", "does not hold"}, "no worse": {"does not hold"}, "equivalent": {"does not hold"},
              "band": {"holds"}}
DECIDED = {"holds", "does not hold"}


class AAError(Exception):
    pass


def family_of(kind: str) -> str | None:
    return next((f for f, kinds in FAMILIES.items() if kind in kinds), None)


def is_false(kind: str, status: str) -> bool:
    fam = family_of(kind)
    return fam is not None and status in FALSE_WHEN[fam]


def run_aqms(results: Path, run_ids: list[str]) -> dict[str, list[str]]:
    """AQM key -> its run ids, from each run's tables (run.csv)."""
    by_aqm: dict[str, list[str]] = {}
    for rid in run_ids:
        p = results / "tables" / rid / "run.csv"
        if p.exists():
            with open(p) as f:
                for row in csv.DictReader(f):
                    by_aqm.setdefault(row["aqm"], []).append(rid)
    return by_aqm


def pairings(by_aqm: dict, aqms: dict) -> list[dict]:
    """The A/A pairings (a twin against its original, in its verdict role) and, when both pairs ran, the two
    replays of the DropTail/FaQ comparison (originals, twins)."""
    out = []
    twins = {k: e for k, e in aqms.items() if "twin_of" in e and k in by_aqm and e["twin_of"] in by_aqm}
    for twin, e in sorted(twins.items()):
        if e.get("verdict_role") not in ("droptail", "favorqueue"):
            raise AAError(f"config/aqms.yaml: {twin}: verdict_role must be droptail or favorqueue")
        dt, faq = (e["twin_of"], twin) if e["verdict_role"] == "favorqueue" else (twin, e["twin_of"])
        out.append({"replay": f"A/A {aqms[e['twin_of']].get('paper_name', e['twin_of'])}", "kind": "aa", "droptail": dt, "favorqueue": faq})
    of = {e["twin_of"]: k for k, e in twins.items()}
    if {"droptail", "favor"} <= set(of):
        out.append({"replay": "DropTail vs FaQ", "kind": "comparison", "droptail": "droptail", "favorqueue": "favor"})
        out.append({"replay": "DropTail vs FaQ (twins)", "kind": "comparison", "droptail": of["droptail"], "favorqueue": of["favor"]})
    return out


def rscript(script: str, results: Path, runs_file: Path, roles: str, out: Path, log: Path) -> None:
    cmd = ["Rscript", str(R_DIR / script), "--tables", str(results / "tables"), "--runs", str(runs_file),
           "--roles", roles, "--out", str(out)]
    with open(log, "w") as f:
        if subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode != 0:
            raise AAError(f"{' '.join(cmd)} failed: see {log}")


def judge(results: Path, out: Path, pairing: dict, by_aqm: dict) -> list[dict]:
    """The verdict of one pairing (its two AQMs' runs only, as a config of those two would have them)."""
    name = pairing["droptail"] + "-vs-" + pairing["favorqueue"]
    runs_file = out / f"runs-{name}.txt"
    ids = sorted(set(by_aqm[pairing["droptail"]]) | set(by_aqm[pairing["favorqueue"]]))
    rundir.write_run_list(runs_file, ids)
    roles = f"droptail={pairing['droptail']},favorqueue={pairing['favorqueue']}"
    verdict = out / f"verdict-{name}.csv"
    rscript("verdict.R", results, runs_file, roles, verdict, out / f"verdict-{name}.log")
    if pairing["kind"] == "aa":
        rscript("aa_jitter.R", results, runs_file, roles, out / f"jitter-{name}.csv", out / f"jitter-{name}.log")
    with open(verdict) as f:
        return list(csv.DictReader(f))


def judged_parts(replay: str, rows: list[dict]) -> list[dict]:
    """Every comparison part the verdict judged (not reported, not absent) with its A/A truth."""
    out = []
    for row in rows:
        for p in json.loads(row.get("parts") or "[]"):
            fam = family_of(p["kind"])
            if not p["between"] or fam is None or p["status"] in ("reported", "not run"):
                continue
            out.append({"replay": replay, "claim": row["claim"], "scenario": row["scenario"], "part": p["label"],
                        "family": fam, "status": p["status"], "false_decision": int(is_false(p["kind"], p["status"]))})
    return out


def upper_bound(false: int, n: int) -> float:
    """Clopper-Pearson one-sided 95 % upper bound on the false-decision rate."""
    return 1.0 if n == 0 else (1.0 if false == n else float(beta.ppf(0.95, false + 1, n - false)))


def families(parts: list[dict]) -> list[dict]:
    """Per family: the parts judged, decided and falsely decided, their rate and exact bound; and the same per
    claim (one replay's claim in one scenario, false when any of its parts of the family is). The parts of one
    claim share their runs and flows (C4's per-load tests and its trend read the same pairs), so they are not
    independent trials and the per-part bound is too narrow; the claims of a replay share less, and their bound
    is the one to read."""
    out = []
    for fam in FAMILIES:
        mine = [p for p in parts if p["family"] == fam]
        n, decided = len(mine), sum(p["status"] in DECIDED for p in mine)
        false = sum(p["false_decision"] for p in mine)
        units: dict = {}
        for p in mine:
            units.setdefault((p["replay"], p["claim"], p["scenario"]), []).append(p["false_decision"])
        nc, false_c = len(units), sum(any(v) for v in units.values())
        out.append({"family": fam, "false_when": " or ".join(sorted(FALSE_WHEN[fam])), "parts_judged": n,
                    "decided": decided, "false_decisions": false, "rate": f"{false / n:.3f}" if n else "",
                    "upper95": f"{upper_bound(false, n):.3f}" if n else "",
                    "claims_judged": nc, "claims_false": false_c, "claim_rate": f"{false_c / nc:.3f}" if nc else "",
                    "claim_upper95": f"{upper_bound(false_c, nc):.3f}" if nc else "",
                    "claims": " ".join(sorted({p["claim"] for p in mine}))})
    return out


def schedules(run_ids: list[str]) -> int:
    """The schedules (load and replication) the replay's runs cover: what each A/A pairing replays."""
    fields = [rundir.run_id_fields(r) for r in run_ids]
    return len({(f["load"], f["rep"]) for f in fields})


def agreement(a: list[dict], b: list[dict]) -> list[dict]:
    """Each claim (and scenario) in two replays of one comparison; conflict when one holds and one does not."""
    key = lambda r: (r["claim"], r["scenario"])
    bs = {key(r): r["status"] for r in b}
    out = []
    for r in a:
        other = bs.get(key(r), "absent")
        out.append({"claim": r["claim"], "scenario": r["scenario"], "originals": r["status"], "twins": other,
                    "conflict": int({r["status"], other} == DECIDED)})
    return out


def write_csv(path: Path, rows: list[dict], cols: list[str]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)


def summary_md(pairs: list[dict], fams: list[dict], agree: list[dict], replays: list[str], n_schedules: int = 0) -> str:
    lines = [f"A/A replays: {', '.join(replays)}, each on {n_schedules} schedules (loads x replications). Only parts "
             "whose statistic compares the two sides count. A claim is false when any of its parts in the family is; "
             "its parts share their data, so the per-claim bound is the one to read.", "",
             "| family | a decision is false when | parts judged | decided | false | rate | 95 % upper bound | "
             "claims judged | false | rate | 95 % upper bound | claims |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {f['family']} | {f['false_when']} | {f['parts_judged']} | {f['decided']} | {f['false_decisions']} | "
              f"{f['rate'] or '-'} | {f['upper95'] or '-'} | {f['claims_judged']} | {f['claims_false']} | "
              f"{f['claim_rate'] or '-'} | {f['claim_upper95'] or '-'} | {f['claims']} |" for f in fams]
    false = [p for p in pairs if p["false_decision"]]
    lines += ["", "False decisions: " + ("; ".join(f"{p['replay']} {p['claim']} {p['part']}: {p['status']}" for p in false) or "none") + "."]
    if agree:
        conflicts = [r for r in agree if r["conflict"]]
        lines += ["", f"DropTail vs FaQ replayed twice on the same schedules (originals, twins): {len(agree)} claim rows, "
                  f"{sum(r['originals'] == r['twins'] for r in agree)} with the same status, {len(conflicts)} holding in one and "
                  "not holding in the other" + (": " + ", ".join(r["claim"] for r in conflicts) if conflicts else "") + "."]
    return "\n".join(lines) + "\n"


def report_section(results: str) -> str:
    """The report's account of an A/A replay (analysis/report.py), or "" when the results have none."""
    out = Path(results) / "aa"
    if not (out / "families.csv").exists():
        return ""
    import html
    with open(out / "families.csv") as f:
        fams = list(csv.DictReader(f))
    head = list(fams[0]) if fams else []     # the columns families() makes, in its order
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(r.get(c, ''))}</td>" for c in head) + "</tr>" for r in fams)
    text = (out / "summary.md").read_text().split("\n\n") if (out / "summary.md").exists() else []
    notes = "".join(f"<p>{html.escape(t.strip())}</p>" for t in text if t.strip() and not t.lstrip().startswith("|"))
    return ("<p>The verdict run on an A/A replay (analysis/aa.py): two names of one qdisc on the same schedules, "
            "where no difference can exist. Per family of tests, how often a comparison part decided one anyway "
            "(aa/parts.csv has every part).</p><table><tr>" + "".join(f"<th>{c}</th>" for c in head) + "</tr>"
            + rows + "</table>" + notes)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", required=True, type=Path)
    ap.add_argument("--runs", type=Path, help="the pipeline's run list (default RESULTS/analysis-runs.txt)")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    runs_file = a.runs or a.results / rundir.RUN_LIST
    out = a.out or a.results / "aa"
    try:
        if not runs_file.exists():
            raise AAError(f"{runs_file} does not exist: run the pipeline's analysis first (./favorlab analyse {a.results})")
        run_ids = rundir.read_run_list(runs_file)
        by_aqm = run_aqms(a.results, run_ids)
        plan = pairings(by_aqm, read_aqms())
        if not any(p["kind"] == "aa" for p in plan):
            raise AAError(f"{a.results}: no A/A twin ran beside its original (config/aqms.yaml twin_of); "
                          "fix: run a config with one, such as config/aa-replay.yaml")
        out.mkdir(parents=True, exist_ok=True)
        verdicts = {p["replay"]: judge(a.results, out, p, by_aqm) for p in plan}
    except AAError as e:
        print(f"aa: {e}", file=sys.stderr)
        return 2
    replays = [p["replay"] for p in plan if p["kind"] == "aa"]
    parts = [x for r in replays for x in judged_parts(r, verdicts[r])]
    fams = families(parts)
    agree = agreement(verdicts["DropTail vs FaQ"], verdicts["DropTail vs FaQ (twins)"]) if "DropTail vs FaQ" in verdicts else []
    write_csv(out / "parts.csv", parts, ["replay", "claim", "scenario", "part", "family", "status", "false_decision"])
    write_csv(out / "families.csv", fams, list(fams[0]))
    write_csv(out / "agreement.csv", agree, ["claim", "scenario", "originals", "twins", "conflict"])
    analysed = sorted({r for ids in by_aqm.values() for r in ids})     # the listed runs that have tables
    (out / "summary.md").write_text(summary_md(parts, fams, agree, replays, schedules(analysed)))
    sys.stdout.write((out / "summary.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
