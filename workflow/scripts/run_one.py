"""Execute one run of the matrix on the config's testbed and bring its run directory back.

Called by the Snakemake rule `run`. The run directory appears at --run-dir only when complete
(testbed.remote works in <run-dir>.partial and renames it after DONE arrives).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import testbed_ctl  # noqa: E402

REPO = testbed_ctl.REPO


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--testbed", required=True, help="the config's testbed section, as JSON")
    ap.add_argument("--spec", required=True, type=Path, help="run.json of this run")
    ap.add_argument("--schedule", required=True, type=Path, help="schedule.csv of this run")
    ap.add_argument("--run-dir", required=True, type=Path, help="final run directory")
    a = ap.parse_args()

    tb = json.loads(a.testbed)
    testbed_ctl.up(tb)
    t = testbed_ctl.target(tb)
    cmd = [sys.executable, "-m", "testbed.remote",
           "--ssh-host", t["host"], "--ssh-port", str(t["port"]), "--ssh-user", t["user"],
           "--spec", str(a.spec.resolve()), "--schedule", str(a.schedule.resolve()),
           "--run-dir", str(a.run_dir.resolve())]
    if t.get("key"):
        cmd += ["--ssh-key", t["key"]]
    print(f"run: {json.loads(a.spec.read_text())['run_id']} on {t['host']}:{t['port']}", flush=True)
    sys.exit(subprocess.run(cmd, cwd=REPO).returncode)


if __name__ == "__main__":
    main()
