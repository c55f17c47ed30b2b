"""What extraction checks in a run directory beyond contract.rundir: a file name the run's own JSON gives
(a bundle's run directory is someone else's), the host names its files are named after, and the schedule
read as extraction needs it (only the columns it uses; a schedule without direction or kind is read).
"""
import csv
import os
import re


def in_run(rundir, name, what):
    """rundir/name for a file name a run's own JSON gives (run.json's schedule): a run
    directory may come from someone else's results bundle, so a name that leads out of it (absolute, '..',
    a symlink) is refused, never opened."""
    if not isinstance(name, str) or not name or os.path.isabs(name) or "\\" in name or \
            ".." in name.replace("\\", "/").split("/"):
        raise ValueError(f"{rundir}: {what} {name!r} is not a file name inside the run directory; "
                         f"fix: name a file of the run directory (e.g. schedule.csv)")
    path = os.path.join(rundir, name)
    real, root = os.path.realpath(path), os.path.realpath(rundir)
    if os.path.commonpath([real, root]) != root:
        raise ValueError(f"{rundir}: {what} {name!r} leads outside the run directory; fix: name a file of the "
                         f"run directory (e.g. schedule.csv)")
    return path


HOST_NAME = re.compile(r"[A-Za-z0-9_-]+")


def read_schedule(path):
    """flow_id -> row dict (comment lines starting with # are skipped)."""
    with open(path) as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        need = {"flow_id", "start_s", "size_bytes", "size_pkts", "src", "dst"}
        if not need <= set(rows.fieldnames or []):
            raise ValueError(f"{path}: schedule lacks columns {sorted(need - set(rows.fieldnames or []))}")
        return {int(r["flow_id"]): r for r in rows}
