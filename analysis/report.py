"""Self-contained HTML report (figures embedded as base64 PNG, verdict table, runs, fidelity).

    python -m analysis.report --results results/quick --out results/quick/report.html

Reads RESULTS/verdict.csv, RESULTS/figures/*.png with their *.caption.txt, RESULTS/figures/ranking.csv (the
AQM ranking, shown with three AQMs or more), RESULTS/tables/*/run.csv and
RESULTS/runs/<run_id>/{run.json,manifest.json,fidelity.json}. Opens with what a reader needs to trust the
rest: provenance (favorlab commit, config, scenarios, software), the verdict's counts, and the flows each
run left unfinished (which every comparison leaves out).
"""
import argparse
import base64
import html
import json
import os
import re
import sys
from collections import Counter

from analysis.aa import report_section as aa_report_section
from analysis.overhead import overhead_section
from analysis.report_io import aqm_name, read_result, table  # noqa: F401 (aqm_name: the report's API)
from analysis.report_ranking import ranking_cell, ranking_section  # noqa: F401 (the report's API)
from analysis.report_view import figure_view, view_scripts
from contract import rundir
from orchestrate.provenance import container_image, favorlab_commit, r_versions, snakemake_version

STYLE = """body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:collapse;font-size:13px}
td,th{border:1px solid #ccc;padding:3px 6px}.holds{background:#d9f2d9}.does-not-hold{background:#f7d4d4}
.not-run{background:#eee}.not-drawn{background:#eee}.insufficient-data{background:#fdf3c8}img{max-width:100%}
.summary{font-size:15px}.caption{font-size:13px;color:#333;margin-top:2px}"""
STATUSES = ["holds", "does not hold", "insufficient data", "not run"]


def runs_section(rdir, only=None):
    """One row per finished run under rdir (those named in `only`, the pipeline's run list, when given)."""
    rows = []
    if os.path.isdir(rdir):
        for rid in sorted(os.listdir(rdir)):
            if only is not None and rid not in only:
                continue
            d = os.path.join(rdir, rid)
            if not os.path.exists(os.path.join(d, rundir.DONE)):
                continue
            spec = rundir.read_json(d, rundir.SPEC, {})
            man = rundir.read_manifest(d, {})
            fid = rundir.read_fidelity(d, {"valid": False, "reasons": [f"{rundir.FIDELITY} missing"]})
            tries = rundir.read_json(d, rundir.ATTEMPTS, None) or [{"attempt": 1}]
            wall = [a["wall_s"] for a in tries if isinstance(a.get("wall_s"), (int, float))]
            aqm = spec.get("aqm", {})
            rows.append(dict(run=rid, aqm=aqm_name(aqm.get("name", "") if isinstance(aqm, dict) else aqm), load=spec.get("load", ""),
                             iw=spec.get("tcp", {}).get("iw", ""), profile=spec.get("tcp", {}).get("profile", ""),
                             rep=spec.get("replication", ""), kernel=man.get("kernel", ""),
                             module=man.get("module", man.get("module_version", "")),
                             start=man.get("start", man.get("start_utc", "")), valid="yes" if fid.get("valid") else "NO",
                             reasons="; ".join(fid.get("reasons", [])), attempts=len(tries),
                             earlier="; ".join(f"{a['attempt']}: {', '.join(a.get('reasons', [])) or 'valid'}"
                                               for a in tries[:-1]),
                             warnings="; ".join(fid.get("warnings", [])), manifest=man, checks=fid.get("checks", {}),
                             wall_s=sum(wall) if len(wall) == len(tries) else None,
                             cpu=rundir.read_json(d, rundir.CPU, None),
                             first_started=min((a["started_utc"] for a in tries if a.get("started_utc")), default=""),
                             tries=tries,
                             commits=sorted({a["favorlab_commit"] for a in tries if a.get("favorlab_commit")})))
    return rows


def nstat_section(rows):
    cols = ["run_id", "valid", "flows_in_metrics", "ours_RTO", "nstat_TcpExtTCPTimeouts", "ours_syn_retrans",
            "nstat_TcpExtTCPSynRetrans", "ours_R", "nstat_TcpRetransSegs", "ours_FR", "nstat_TcpExtTCPFastRetrans",
            "ours_TLP", "nstat_TcpExtTCPLossProbes", "ours_other_rec"]
    note = ("<p><code>ours_other_rec</code>: recovery episodes opened by a retransmission that is neither FR, TLP "
            "nor RTO (e.g. RACK's reordering-window retransmission); nstat has no counter for them.</p>")
    return note + table(rows, cols) if rows else "<p>no tables (run <code>python -m analysis.extract</code>)</p>"


def run_tables(tdir, only=None):
    rows = []
    for root, _, files in sorted(os.walk(tdir)) if os.path.isdir(tdir) else []:
        if only is not None and os.path.basename(root) not in only:
            continue
        if "run.csv" in files:
            rows += read_result(os.path.join(root, "run.csv"), [])
    return rows


def provenance(runs, tables):
    """Where the numbers come from: one line per fact, the distinct values over all runs."""
    def distinct(vals):
        v = sorted({str(x) for x in vals if x not in (None, "")})
        return ", ".join(v) if v else "not recorded"
    mans = [r["manifest"] for r in runs]
    scen = [" ".join(str(t.get(k, "")) for k in ("topology", "bottleneck_mbps", "buffer_pkts", "iw", "profile", "cc",
                                                 "size_dist", "size_mean_pkts", "dataplane", "hops", "aqm_hops", "flood_x")).strip()
            + (f" HTTP closed loop {t['http_connections']}conn/path" if t.get("http_connections") else "")
            for t in tables]
    facts = [("favorlab commit of the runs", distinct(c for r in runs for c in r.get("commits", []))),
             ("favorlab commit of this report", favorlab_commit()),
             ("container image of this report (containers/)", container_image()),
             ("R and the R packages the analysis loads", "; ".join(f"{k} {v}" for k, v in r_versions().items())),
             ("Snakemake", snakemake_version()),
             ("config", distinct(t.get("config_name") for t in tables) + " (config/<name>.yaml)"),
             ("scenarios (topology, Mb/s, buffer, IW, profile, cc, sizes, mean, dataplane; a chain's hops and AQM hops; "
              "the HTTP workload's connections, workloads/README.md)",
              distinct(scen)),
             ("AQMs", distinct(r["aqm"] for r in runs)), ("loads", distinct(r["load"] for r in runs)),
             ("guest kernel", distinct(m.get("kernel") for m in mans)),
             ("sch_favor", distinct(m.get("module_version") for m in mans)),
             ("tc / tcpdump / Mininet / Python", " | ".join(distinct(m.get(k) for m in mans) for k in ("tc", "tcpdump", "mininet", "python"))),
             ("testbed hosts", distinct(m.get("hostname") for m in mans)),
             ("accelerator (KVM or TCG)", distinct(m.get("accel") for m in mans)),
             ("first run started, last run ended", distinct([min((m.get("start_utc", "") for m in mans), default=""),
                                        max((m.get("end_utc", "") for m in mans), default="")]))]
    return "<table>" + "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in facts) + "</table>"


def summary(v, runs):
    n = Counter(r["status"] for r in v or [])
    valid = sum(r["valid"] == "yes" for r in runs)
    retried = sum(r["valid"] == "yes" and r["attempts"] > 1 for r in runs)
    claims = ", ".join(f"<b>{n.get(s, 0)}</b> {s}" for s in STATUSES)
    return (f"<p class='summary'>Claims: {claims} (of {len(v or [])} verdict rows).<br>Runs: <b>{valid}</b> valid, "
            f"<b>{len(runs) - valid}</b> invalid (left out of every figure and claim) of {len(runs)}; "
            f"valid at the first attempt {valid - retried}, after retries {retried}, never {len(runs) - valid}."
            f"<br>{wall_time(runs)}</p>")


def wall_time(runs, now=None):
    """The runs' wall time as the controller measured it (every attempt: connect, run, copy back), and the
    span from the first attempt's start to this report, which adds provisioning and analysis (not the
    bootstrap or the image build before the first run)."""
    from datetime import datetime, timezone
    known = [r for r in runs if r.get("wall_s") is not None]
    if not known:
        return "Wall time: not recorded (runs made before favorlab recorded it)."
    total = sum(r["wall_s"] for r in known)
    txt = (f"Wall time: <b>{total / 60:.1f} min</b> of runs, all attempts included"
           + (f" ({len(runs) - len(known)} run(s) without a record left out)" if len(known) < len(runs) else ""))
    starts = [r["first_started"] for r in known if r.get("first_started")]
    if starts:
        now = now or datetime.now(timezone.utc)
        span = (now - datetime.fromisoformat(min(starts))).total_seconds()
        txt += f"; <b>{span / 60:.1f} min</b> from the first run's start to this report."
    return txt


def unfinished_section(tables):
    """Flows scheduled inside the measurement window that had not finished when the capture ended."""
    rows = [t for t in tables if t.get("flows_window", "") != ""]
    if not rows:
        return "<p>these tables predate the unfinished-flow counts: run the extraction again</p>"
    cols = ["aqm", "load", "realized_load", "valid", "flows_window", "flows_unfinished", "unfinished_share",
            "unfinished_bytes_share", "in_system_mean", "in_system_drift", "in_system_noise_sd", "steady"]
    unsteady = [f"{aqm_name(r['aqm'])} at load {r['load']}" for r in rows if r.get("steady") == "0"]
    fmt = [{k: (f"{float(r[k]):.3g}" if k in ("realized_load", "unfinished_share", "unfinished_bytes_share") and r.get(k)
                else aqm_name(r[k]) if k == "aqm" else r.get(k, "")) for k in cols}
           for r in sorted(rows, key=lambda r: (r["aqm"], float(r["load"] or 0)))]
    return ("<p>Window: flows scheduled to start in [warm-up, duration) of each run; a flow that had not received "
            "its last byte when the capture ended (drain included) is unfinished. Comparisons between AQMs use "
            "the flows that finished under both; these are the ones they leave out. <code>realized_load</code> is "
            "what the schedule offered in the window (configured: <code>load</code>). <code>steady</code>: the "
            "number of flows in the system did not rise across the window by more than twice its noise "
            "(least-squares line through once-a-second samples; <code>in_system_drift</code> is its rise); "
            "a run that is not steady never reached the steady state the paper measures.</p>"
            + (f"<p><b>Not steady: {len(unsteady)} run(s)</b>: " + html.escape(", ".join(unsteady)) + "</p>" if unsteady else "")
            + table(fmt, cols))


def cpu_section(runs, top=4):
    """Per run: the CPU's busy share by mode and the process groups that used most of it. A run invalid on
    cpu_busy is explained here: the testbed, not the network, ran out."""
    rows = []
    for r in runs:
        c = r.get("cpu")
        if not c:
            continue
        m = c.get("modes", {})
        rows.append({"run": r["run"], "valid": r["valid"],
                     "busy": f"{1 - m.get('idle', 0) - m.get('iowait', 0):.0%}",
                     **{k: f"{m.get(k, 0):.0%}" for k in ("user", "system", "softirq")},
                     "memory peak": (f"{c['mem_peak_used_mib']} of {c['mem_total_mib']} MiB"
                                     if "mem_peak_used_mib" in c else "not recorded"),
                     "top process groups": "; ".join(f"{g['group']} {g['share']:.0%}" for g in c.get("processes", [])[:top])})
    if not rows:
        return "<p>no cpu.json in these runs (made before the runner recorded it)</p>"
    return ("<p>Shares of all CPU time of all the testbed's CPUs over the traffic window; softirq is the kernel's "
            "packet processing, charged to no process.</p>"
            + table(rows, ["run", "valid", "busy", "user", "system", "softirq", "memory peak", "top process groups"]))


def trace_vs_counters(tc):
    """favor_trace_counts' outcome in words: the decisions traced, and any the counters saw after the trace."""
    m = tc.get("measured")
    if not tc:
        return "not compared"
    if not isinstance(m, dict):
        return str(m)
    if not tc.get("ok"):
        return "; ".join(f"{k}: trace {v['trace']}, counters {v['counters_at_stop']} at its stop, {v['counters_after']} after"
                         for k, v in m.items()) + " (FAILED)"
    later = m.get("after_the_trace", {})
    return ("all traced: " + ", ".join(f"{k} {v}" for k, v in m.items() if k != "after_the_trace")
            + ("; after the trace stopped: " + ", ".join(f"{k} {v}" for k, v in later.items()) if later else ""))


def kernel_health_section(runs):
    """Per run, the testbed kernel's own checks (testbed/runner/hoststate.py, cpu.py): warnings in its log, slab memory over
    the run, favor's counters against one another and against its trace. A soak (config/soak.yaml) is read
    here: an hour at load 0.95 must show no warning, flat slab and consistent counts."""
    def ck(r, name):
        return r["checks"].get(name) or {}

    def mark(c):
        return "" if not c or c.get("ok", True) else " (FAILED)"

    rows = []
    for r in runs:
        kw, slab, fc, tr, tc = (ck(r, n) for n in ("kernel_warnings", "slab_growth", "favor_counts", "favor_trace",
                                                  "favor_trace_counts"))
        if not (kw or slab):
            continue
        m = slab.get("measured") or {}
        counts = fc.get("measured") if isinstance(fc.get("measured"), list) else []
        trc = tc.get("measured")
        rows.append({
            "run": r["run"], "valid": r["valid"],
            "kernel log": (f"{kw['measured']} warnings" if isinstance(kw.get("measured"), int) else
                           json.dumps(kw.get("measured"))) + mark(kw) if kw else "not checked",
            "unreclaimable slab MiB start / end (max)": (f"{m.get('start_mib')} / {m.get('end_mib')} ({m.get('max_mib')})"
                                                         + mark(slab)) if m else "not checked",
            "reclaimable slab MiB start / end": (f"{m['reclaimable_start_mib']} / {m['reclaimable_end_mib']}"
                                                 if "reclaimable_start_mib" in m else "not recorded"),
            "favor: enqueued = sent + pushed out + trimmed + queued": "; ".join(
                f"{c['router']} {c['enqueued']} = {c['sent_pushed_trimmed_queued']}" for c in counts) + mark(fc)
            if counts else "no favor queue",
            "trace lost events": tr.get("measured", "not traced") if tr else "not traced",
            "trace against counters": trace_vs_counters(tc)})
    if not rows:
        return "<p>no run of these results recorded the kernel checks (runs made before the runner had them)</p>"
    return ("<p>From each run's fidelity report: kernel log lines with WARNING, BUG, Oops or a lockup during the run; "
            "unreclaimable slab memory (where a leak shows) at the start and end of the traffic (warning above 32 MiB "
            "of growth), the reclaimable caches beside it; favor's counters at the end; its trace, complete when no "
            "event was lost, against the counters' change up to its stop and up to the run's end.</p>"
            + table(rows, ["run", "valid", "kernel log", "unreclaimable slab MiB start / end (max)",
                           "reclaimable slab MiB start / end", "favor: enqueued = sent + pushed out + trimmed + queued",
                           "trace lost events", "trace against counters"]))


def figure_caption(stem):
    """The caption figures.R wrote beside the figure (<id>.caption.txt: the paper's figure, then ours, computed
    from the figure's own table), or a line saying there is none."""
    path = stem + ".caption.txt"
    if not os.path.exists(path):
        return "<p class='caption'><i>no caption (figures drawn before captions existed: run figures.R again)</i></p>"
    with open(path) as f:
        return f"<p class='caption'>{html.escape(f.read().strip())}</p>"


def figure_index(fdir):
    """Every figure of the paper: drawn (with the flows and runs its caption counts) or not, and why
    (figures/index.csv, written by figures.R), beside what the paper's figure shows."""
    idx = read_result(os.path.join(fdir, "index.csv"))
    if not idx:
        return "<p>no figure index (figures drawn before figures.R wrote index.csv: run it again)</p>"
    paper = [r for r in idx if r.get("number") not in ("", "NA", None)]
    drawn = sum(r["status"] == "drawn" for r in paper)
    beyond = [r for r in idx if r not in paper]
    more = (f" Beyond the paper: {sum(r['status'] == 'drawn' for r in beyond)} of {len(beyond)} drawn." if beyond else "")
    return (f"<p>The paper's figures: <b>{drawn}</b> of {len(paper)} drawn here.{more} Each one not drawn says why.</p>"
            + table(idx, ["figure", "title", "status", "detail", "paper"], "status"))


VERDICT_COLS = ["claim", "what", "scenario", "paper", "ours", "interval", "method", "test", "margin", "n", "min_sample",
                "status", "realized_load", "steady", "runs", "note"]
# The interval methods of analysis/R/bootstrap.R, told apart by their method text: what each one estimates
# and what it does not (docs/statistics.md).
ONE_SCHEDULE = r"one schedule per load"
INTERVAL_METHODS = [
    (r"^jackknife over \d+ replications", "jackknife over replications (t, R - 1 degrees of freedom)",
     "carries the variation between schedules"),
    (r"widened to the jackknife", "block bootstrap over flow start time within each schedule, widened to the "
     "jackknife over 2-4 replications where wider", "carries the variation between schedules, with few degrees of freedom"),
    (ONE_SCHEDULE, "block bootstrap over flow start time within one schedule per load",
     "does <b>not</b> estimate the variation between schedules: another schedule of the same load may give "
     "another value, so such a row is about the schedule run; its coverage is below 95 % (docs/statistics.md)"),
]


# How a claim of several parts is decided (analysis/claims.yaml's header holds the full rule).
DECISION_RULE = ("Each part of a claim is a one-sided test at 2.5 %, decided exactly when the 95 % interval "
                 "in its row decides it; a <i>no worse</i> or <i>similar</i> part uses the <i>margin</i> shown in its "
                 "row, and the paper's numbers (bands) are judged only on its own 10 Mb/s scenario. A claim holds when "
                 "every part holds (an intersection-union test: no correction needed); it does not hold when Holm's "
                 "step-down over its parts rejects one, so a true claim of many parts is called false with chance "
                 "at most 2.5 %.")


def one_schedule_status(v):
    """The verdict's rows as the report shows them: a decided status whose intervals came from one schedule per
    load says so ("holds (one schedule)"), since the decision is about the schedule run, not the load; the
    row keeps its colour (status_class). verdict.csv keeps the plain status."""
    return [dict(r, status_class=r["status"],
                 status=f"{r['status']} (one schedule)" if r["status"] in ("holds", "does not hold")
                 and re.search(ONE_SCHEDULE, r.get("method") or "") else r["status"]) for r in v]


def interval_methods(v):
    """The verdict header's account of its intervals: each method the rows used (their method column), how
    many rows, and what it does not estimate."""
    if not v or "method" not in v[0]:
        return "<p>Intervals are 95 %; this verdict does not say how each was made (made before rows named their method).</p>"
    counts, other = Counter(), Counter()
    for r in v:
        if not r["method"]:
            continue
        kind = next((i for i, (pat, _, _) in enumerate(INTERVAL_METHODS) if re.search(pat, r["method"])), None)
        (counts if kind is not None else other)[kind if kind is not None else r["method"]] += 1
    items = [f"<li><b>{n}</b> row(s): {INTERVAL_METHODS[k][1]}: {INTERVAL_METHODS[k][2]}.</li>" for k, n in sorted(counts.items())]
    items += [f"<li><b>{n}</b> row(s): {html.escape(m)} (the claim's own method).</li>" for m, n in sorted(other.items())]
    return ("<p>Intervals are two-sided 95 %; each row's <i>method</i> says how its intervals were made "
            "(docs/statistics.md):</p><ul>" + "".join(items) + "</ul>")


def render(results, only=None):
    """The report of results' runs (those named in `only`, the pipeline's run list, when given: run and
    table directories of other runs are left out and counted)."""
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>favorlab report</title><style>{STYLE}</style></head><body>",
             f"<h1>favorlab report: {html.escape(os.path.basename(os.path.abspath(results)))}</h1>"]
    v = read_result(os.path.join(results, "verdict.csv"))
    runs = runs_section(os.path.join(results, "runs"), only)
    tables = run_tables(os.path.join(results, "tables"), only)
    if only is not None:
        tdir = os.path.join(results, "tables")
        other = sorted(set(os.listdir(tdir)) - only) if os.path.isdir(tdir) else []
        if other:
            parts.append(f"<p>Tables of {len(other)} run(s) that are not among this config's runs were left out of "
                         f"every table, figure and claim: {html.escape(', '.join(other))}</p>")
    parts.append(summary(v, runs))
    parts.append("<h2>Provenance</h2>" + provenance(runs, tables))
    parts.append("<h2>The measurement window: unfinished flows (left out of every DropTail/FaQ comparison) and "
                 "steady state</h2>" + unfinished_section(tables))
    parts.append("<h2>Verdict (analysis/claims.yaml; docs/paper-targets.md)</h2>")
    parts.append("<p>Each claim is judged on one scenario with the test and minimum sample it states. "
                 "<i>insufficient data</i>: too few flows, or an interval that does not decide.</p>" + interval_methods(v)
                 + "<p>" + DECISION_RULE + "</p>")
    parts.append(table(one_schedule_status(v), [c for c in VERDICT_COLS if c in v[0]], "status_class") if v
                 else "<p>verdict.csv missing: run <code>Rscript analysis/R/verdict.R</code>.</p>")
    aa = aa_report_section(results)
    if aa:
        parts.append("<h2>The A/A replay: false decisions of the verdict (aa/families.csv)</h2>" + aa)
    rank = ranking_section(os.path.join(results, "figures"))
    if rank:
        parts.append("<h2>AQM ranking (figures/ranking.csv)</h2>" + rank)
    bad = [r for r in runs if r["valid"] != "yes"]
    parts.append(f"<h2>Invalid runs ({len(bad)}), left out of every figure and of the verdict</h2>")
    parts.append(table(bad, ["run", "attempts", "reasons", "earlier"]) if bad else "<p>none</p>")
    parts.append("<h2>Recoveries: ours (captures) vs the senders' nstat counters</h2>")
    parts.append(nstat_section(tables))
    fdir = os.path.join(results, "figures")
    figs = sorted((f for f in os.listdir(fdir) if f.endswith(".png")), key=lambda f: int(re.sub(r"\D", "", f) or 0)) \
        if os.path.isdir(fdir) else []
    parts.append(f"<h2>Figures ({len(figs)})</h2>" + figure_index(fdir))
    for f in figs:
        with open(os.path.join(fdir, f), "rb") as fh:
            b = base64.b64encode(fh.read()).decode()
        parts.append(f"<h3 id='{html.escape(f[:-4])}'>{html.escape(f[:-4])}</h3><img alt='{html.escape(f)}' src='data:image/png;base64,{b}'>"
                     + figure_caption(os.path.join(fdir, f[:-4])) + figure_view(fdir, f[:-4]))
    if figs:
        parts.append(view_scripts())
    parts.append("<h2>Where an attempt's wall time went (attempts.json, phases_s)</h2>" + overhead_section(runs))
    parts.append("<h2>Where the testbed's CPU went (cpu.json, traffic window)</h2>" + cpu_section(runs))
    parts.append("<h2>The testbed kernel's health (kernel log, slab memory, favor's counters and trace)</h2>"
                 + kernel_health_section(runs))
    parts.append(f"<h2>Runs ({len(runs)}): manifest and fidelity</h2>")
    parts.append(table(runs, ["run", "aqm", "load", "iw", "profile", "rep", "kernel", "module", "start", "valid", "reasons",
                              "attempts", "earlier", "warnings"], None))
    parts.append("</body></html>")
    return "\n".join(parts)


def main(argv=None):
    ap = argparse.ArgumentParser(description="favorlab HTML report")
    ap.add_argument("--results", required=True, help="results/<config> directory")
    ap.add_argument("--out", required=True, help="HTML file to write")
    ap.add_argument("--runs", help="the run list (analysis-runs.txt): report on these runs only")
    a = ap.parse_args(argv)
    if not os.path.isdir(a.results):
        sys.exit(f"report: {a.results} is not a directory (expected results/<config>)")
    with open(a.out, "w") as f:
        f.write(render(a.results, set(rundir.read_run_list(a.runs)) if a.runs else None))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
