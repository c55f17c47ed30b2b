"""What every section of the HTML report (analysis/report.py and the modules it draws sections from) reads and
writes the same way: the AQMs' paper names, a results file, an HTML table."""
import csv
import functools
import html
import json
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@functools.cache
def paper_names():
    import yaml
    with open(os.path.join(REPO, "config", "aqms.yaml")) as f:
        return {k: v.get("paper_name", k) for k, v in (yaml.safe_load(f) or {}).items()}


def aqm_name(key):
    """The paper's name of an AQM (config/aqms.yaml `paper_name`), as the figures show it; else the key."""
    return paper_names().get(key, key)


def read_result(path, default=None):
    """A results file: a JSON file as its value, any other as CSV rows (dicts); `default` when it is absent."""
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
