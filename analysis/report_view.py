"""The report's interactive view of every figure's table (figures/<id>.csv): a chart beside the static PNG,
with each value on hover and each AQM toggled from the legend.

The charts are drawn by Apache ECharts (npm `echarts`, pinned in analysis/view/package.json and installed by
scripts/bootstrap into analysis/view/node_modules, never committed): one well-kept file of about 1 MB with
tooltips and legend toggling built in, where plotly.js is several times larger and vega needs three packages.
The library and analysis/view/report_view.js are embedded in the page, so the report stays one file that
works offline. Without the library the report is still written, and says how to get the view.
"""
import csv
import html
import json
import os

VIEW_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "view")
ECHARTS = os.path.join(VIEW_DIR, "node_modules", "echarts", "dist", "echarts.min.js")
VIEW_JS = os.path.join(VIEW_DIR, "report_view.js")
# The x and y columns a figure's table uses, in the order they are looked for (the R figures' names); a table
# with none of them falls back to its first numeric columns.
X_COLUMNS = ["t", "time_s", "load", "L_mean", "L_mid", "L", "length", "buffer", "buffer_pkts", "iw", "latency_s", "delta", "x"]
# the x of a distribution's table (a CDF or CCDF): its values, never the load or IW it is split by
DIST_X = ["latency_s", "latency", "delta", "L", "x"]
Y_COLUMNS = ["mean", "cdf", "ccdf", "v", "value", "share", "p", "y"]
# Columns that say how much stands behind a point or bound it: shown on hover, never drawn as the y.
NOT_Y = {"flows", "runs", "n", "lo", "hi", "realized_load", "replication"}
# Rows drawn per figure: a per-flow table (a CDF of every flow) is thinned to this many evenly spaced rows,
# which keeps the page small; the CSV beside the figure keeps every row.
MAX_ROWS = 4000


def _number(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def chart_spec(rows):
    """What to draw of a figure's table: x and y columns and one series per AQM (and scenario, when the table
    holds several), or None when the table has no two numeric columns."""
    if not rows:
        return None
    cols = list(rows[0])
    numeric = [c for c in cols if all(_number(r[c]) is not None for r in rows if r[c] not in ("", "NA"))
               and any(r[c] not in ("", "NA") for r in rows)]
    dist = next((c for c in ("cdf", "ccdf") if c in numeric), None)
    xs = [c for c in (DIST_X if dist else X_COLUMNS) if c in numeric]
    x = next(iter(xs), None) or next(iter(numeric), None)
    # a count over time (flows in the system) is drawn against the time
    count = "n" if x in ("t", "time_s") and "n" in numeric else None
    y = dist or count or next((c for c in Y_COLUMNS if c in numeric and c != x), None) \
        or next((c for c in numeric if c not in (x, *NOT_Y)), None)
    if x is None or y is None:
        return None
    label = "aqm_name" if "aqm_name" in cols else "aqm" if "aqm" in cols else None
    split = [c for c in ("scen", "load", "iw") if c in cols and c != x and len({r[c] for r in rows}) > 1]
    step = max(1, -(-len(rows) // MAX_ROWS))
    series = {}
    for r in rows[::step]:
        xv, yv = _number(r[x]), _number(r[y])
        if xv is None or yv is None:
            continue
        name = " | ".join(([r[label]] if label else []) + [f"{c} {r[c]}" for c in split]) or y
        series.setdefault(name, []).append([xv, yv])
    return {"x": x, "y": y, "series": [{"name": n, "data": sorted(d)} for n, d in series.items()],
            "thinned": step > 1, "rows": len(rows)}


def figure_view(fdir, stem):
    """The chart's container and its data for figure `stem`, or a line saying why there is none."""
    path = os.path.join(fdir, stem + ".csv")
    if not os.path.isfile(path):
        return "<p class='caption'><i>no table beside this figure: no interactive view</i></p>"
    with open(path, newline="") as f:
        spec = chart_spec(list(csv.DictReader(f)))
    if spec is None:
        return "<p class='caption'><i>its table has no two numeric columns to draw: no interactive view</i></p>"
    data = json.dumps(spec, separators=(",", ":")).replace("</", "<\\/")
    return (f"<div class='fig-view' data-figure='{html.escape(stem)}' style='width:100%;height:420px'></div>"
            f"<script type='application/json' class='fig-view-data'>{data}</script>")


def view_scripts():
    """The scripts that draw every .fig-view, embedded; without ECharts installed, a note saying how to get it."""
    if not os.path.isfile(ECHARTS):
        return ("<p><b>Interactive figures missing:</b> the charting library is not installed here "
                f"({html.escape(os.path.relpath(ECHARTS, os.path.dirname(VIEW_DIR)))}); run scripts/bootstrap "
                "(npm ci in analysis/view/) and write the report again.</p>")
    with open(ECHARTS) as f:
        lib = f.read()
    with open(VIEW_JS) as f:
        view = f.read()
    return f"<script>{lib}</script><script>{view}</script>"
