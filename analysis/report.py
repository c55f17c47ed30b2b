"""Self-contained HTML report (figures embedded as base64 PNG, verdict table, runs, fidelity).

    python -m analysis.report --results results/quick --out results/quick/report.html

Reads RESULTS/verdict.csv, RESULTS/figures/*.png, RESULTS/runs/<run_id>/{run.json,manifest.json,fidelity.json}.
"""
import argparse
import base64
import csv
import html
import json
import os
import re
import sys

STYLE = """body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:collapse;font-size:13px}
td,th{border:1px solid #ccc;padding:3px 6px}.holds{background:#d9f2d9}.does-not-hold{background:#f7d4d4}
.not-run{background:#eee}img{max-width:100%}"""


def _read(path, default=None):
    if not os.path.exists(path):
        return default
    with open(path) as f:
        return json.load(f) if path.endswith(".json") else list(csv.DictReader(f))


def table(rows, cols, cls_col=None):
    h = ["<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in cols) + "</tr>"]
    for r in rows:
        cls = re.sub(r"\W+", "-", r.get(cls_col, "")) if cls_col else ""
        h.append(f'<tr class="{cls}">' + "".join(f"<td>{html.escape(str(r.get(c, '')))}</td>" for c in cols) + "</tr>")
    return "\n".join(h + ["</table>"])


def runs_section(rdir):
    rows = []
    if os.path.isdir(rdir):
        for rid in sorted(os.listdir(rdir)):
            d = os.path.join(rdir, rid)
            if not os.path.exists(os.path.join(d, "DONE")):
                continue
            spec = _read(os.path.join(d, "run.json"), {})
            man = _read(os.path.join(d, "manifest.json"), {})
            fid = _read(os.path.join(d, "fidelity.json"), {"valid": False, "reasons": ["fidelity.json missing"]})
            aqm = spec.get("aqm", {})
            rows.append(dict(run=rid, aqm=aqm.get("name", "") if isinstance(aqm, dict) else aqm, load=spec.get("load", ""),
                             iw=spec.get("tcp", {}).get("iw", ""), profile=spec.get("tcp", {}).get("profile", ""),
                             rep=spec.get("replication", ""), kernel=man.get("kernel", ""),
                             module=man.get("module", man.get("module_version", "")),
                             start=man.get("start", man.get("start_utc", "")), valid="yes" if fid.get("valid") else "NO",
                             reasons="; ".join(fid.get("reasons", [])),
                             warnings="; ".join(fid.get("warnings", []))))
    return rows


def nstat_section(tdir):
    rows = []
    for root, _, files in sorted(os.walk(tdir)) if os.path.isdir(tdir) else []:
        if "run.csv" in files:
            rows += _read(os.path.join(root, "run.csv"), [])
    cols = ["run_id", "valid", "flows_in_metrics", "ours_RTO", "nstat_TcpExtTCPTimeouts", "ours_syn_retrans",
            "nstat_TcpExtTCPSynRetrans", "ours_R", "nstat_TcpRetransSegs", "ours_FR", "nstat_TcpExtTCPFastRetrans",
            "ours_TLP", "nstat_TcpExtTCPLossProbes"]
    return table(rows, cols) if rows else "<p>no tables (run <code>python -m analysis.extract</code>)</p>"


def render(results):
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>favorlab report</title><style>{STYLE}</style></head><body>",
             f"<h1>favorlab report: {html.escape(os.path.basename(os.path.abspath(results)))}</h1>"]
    v = _read(os.path.join(results, "verdict.csv"))
    parts.append("<h2>Verdict (paper-targets.md claims)</h2>")
    parts.append(table(v, ["claim", "what", "paper", "ours", "tolerance", "status", "runs", "note"], "status") if v
                 else "<p>verdict.csv missing: run <code>Rscript analysis/R/verdict.R</code>.</p>")
    runs = runs_section(os.path.join(results, "runs"))
    bad = [r for r in runs if r["valid"] != "yes"]
    parts.append(f"<h2>Invalid runs ({len(bad)}), left out of every figure and of the verdict</h2>")
    parts.append(table(bad, ["run", "reasons"]) if bad else "<p>none</p>")
    parts.append("<h2>Recoveries: ours (captures) vs the senders' nstat counters</h2>")
    parts.append(nstat_section(os.path.join(results, "tables")))
    fdir = os.path.join(results, "figures")
    figs = sorted((f for f in os.listdir(fdir) if f.endswith(".png")), key=lambda f: int(re.sub(r"\D", "", f) or 0)) \
        if os.path.isdir(fdir) else []
    parts.append(f"<h2>Figures ({len(figs)})</h2>")
    for f in figs:
        with open(os.path.join(fdir, f), "rb") as fh:
            b = base64.b64encode(fh.read()).decode()
        parts.append(f"<h3>{html.escape(f[:-4])}</h3><img alt='{html.escape(f)}' src='data:image/png;base64,{b}'>")
    parts.append(f"<h2>Runs ({len(runs)}): manifest and fidelity</h2>")
    parts.append(table(runs, ["run", "aqm", "load", "iw", "profile", "rep", "kernel", "module", "start", "valid", "reasons", "warnings"], None))
    parts.append("</body></html>")
    return "\n".join(parts)


def main(argv=None):
    ap = argparse.ArgumentParser(description="favorlab HTML report")
    ap.add_argument("--results", required=True, help="results/<config> directory")
    ap.add_argument("--out", required=True, help="HTML file to write")
    a = ap.parse_args(argv)
    if not os.path.isdir(a.results):
        sys.exit(f"report: {a.results} is not a directory (expected results/<config>)")
    with open(a.out, "w") as f:
        f.write(render(a.results))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
