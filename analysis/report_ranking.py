"""The report's AQM ranking section: figures/ranking.csv (analysis/R/ranking.R) as one table per load, each
cell the estimate, its interval and its rank quantiles."""
import html
import os

from analysis.report_io import aqm_name, read_result

# The AQM ranking's metrics (R/ranking_lib.R RANK_METRICS, figures/ranking.csv), in its order: the column
# header and how a value is written (ratios and the normalized goodput in percent).
RANK_METRICS = {
    "latency_mean_short": ("mean latency, short (s)", "{:.3g}"),
    "latency_p99_short": ("p99 latency, short (s)", "{:.3g}"),
    "latency_mean_long": ("mean latency, long (s)", "{:.3g}"),
    "latency_p99_long": ("p99 latency, long (s)", "{:.3g}"),
    "drop_ratio": ("drop ratio", "pct"),
    "syn_loss": ("SYN loss", "pct"),
    "rto_ratio": ("RTO ratio", "pct"),
    "goodput": ("goodput / bottleneck", "pct"),
    "jain_long": ("Jain's index, long flows' goodputs", "{:.3f}"),
}


def _num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def _fmt(v, how):
    if v is None:
        return "NA"
    return f"{100 * v:.3g}%" if how == "pct" else how.format(v)


def ranking_cell(r):
    """'estimate [low, high] rank', the rank a range ('2-4') where the intervals allow several; NA without an
    estimate, and 'not ranked' when there is an estimate but no rank (too few flows, or the AQM's run is
    invalid). Bold (second value) where the intervals allow rank 1."""
    how = RANK_METRICS.get(r["metric"], (r["metric"], "{:.3g}"))[1]
    est = _num(r.get("estimate"))
    if est is None:
        return "NA", False
    txt = f"{_fmt(est, how)} [{_fmt(_num(r.get('low')), how)}, {_fmt(_num(r.get('high')), how)}]"
    label = r.get("rank_label") or ""
    return (f"{txt} {label}" if label else f"{txt} (not ranked)"), label.split("-")[0] == "1"


def ranking_section(fdir):
    """The AQM ranking (figures/ranking.csv, written by R/ranking.R): one table per scenario and load, AQM rows,
    a column per metric. Shown only when the results have three AQMs or more (with two, the verdict and the
    figures already compare them); None otherwise."""
    rows = read_result(os.path.join(fdir, "ranking.csv"))
    if not rows or len({r["aqm"] for r in rows}) < 3:
        return None
    groups = {}
    for r in rows:
        groups.setdefault((r["scenario"], r["load"]), []).append(r)
    parts = ["<p>Per scenario and load, every AQM on the same flows of the same schedules: the forward flows of the "
             "measurement window that finished under every AQM ranked at that load (SYN loss: every window flow seen "
             "under each, finished or not); short flows have fewer than 10 packets, long flows 100 or more; Jain's "
             "fairness index is over the long flows' goodputs. Each cell is the estimate, its 95 % interval "
             "(the claims' method, named under each table) and the rank "
             "(1 = best: lowest, highest for goodput and Jain's index; equal values share the lowest rank). A range such as "
             "<b>2-4</b>: the 95 % interval of its ranks over paired resamples of the same flows under every AQM; in bold "
             "where rank 1 is among them. 'not ranked': too few flows for the metric (30 for a mean or ratio, 100 for a "
             "99th percentile or the SYN loss ratio) or an invalid run, as the notes say. NA: no data (no flow of the class, no bottleneck capture), "
             "never a rank. <code>unfinished</code>: the AQM's window flows that did not finish, left out under every "
             "AQM (figures/ranking.csv has every count).</p>"]
    for (scen, load), rs in groups.items():
        aqms = list(dict.fromkeys(r["aqm"] for r in rs))
        if len(aqms) < 3:
            continue
        by = {(r["aqm"], r["metric"]): r for r in rs}
        metrics = [m for m in RANK_METRICS if any(r["metric"] == m for r in rs)]
        # the same flows for every ranked AQM (an AQM listed but not ranked counts none)
        counted = ", ".join(f"{RANK_METRICS[m][0]} {max(int(_num(r.get('flows_counted')) or 0) for r in rs if r['metric'] == m)}"
                            for m in metrics)
        head = "".join(f"<th>{html.escape(RANK_METRICS[m][0])}</th>" for m in metrics)
        body = []
        for a in aqms:
            al = by.get((a, "drop_ratio")) or next(r for r in rs if r["aqm"] == a)
            cells = []
            for m in metrics:
                txt, best = ranking_cell(by[(a, m)]) if (a, m) in by else ("NA", False)
                cells.append(f"<td>{'<b>' if best else ''}{html.escape(txt)}{'</b>' if best else ''}</td>")
            body.append(f"<tr><td>{html.escape(aqm_name(a))}</td>"
                        f"<td>{html.escape(al.get('unfinished', ''))} of {html.escape(al.get('window_flows', ''))}</td>"
                        + "".join(cells) + "</tr>")
        notes = sorted({r["note"] for r in rs if r.get("note")})
        parts.append(f"<h3>load {html.escape(load)}: {html.escape(scen)}</h3>"
                     f"<p class='caption'>flows counted per AQM: {html.escape(counted)}; "
                     f"{html.escape(rs[0].get('schedules', '?'))} schedule(s); {html.escape(rs[0].get('interval', ''))}</p>"
                     f"<table><tr><th>AQM</th><th>unfinished</th>{head}</tr>" + "\n".join(body) + "</table>"
                     + (f"<p class='caption'>notes: {html.escape('; '.join(notes))}</p>" if notes else ""))
    return "\n".join(parts) if len(parts) > 1 else None
