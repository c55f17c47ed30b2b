"""python3 -m testbed.runner --run-dir DIR   (as root on the testbed host; DIR holds run.json + schedule.csv)"""
import argparse
import os
import sys
from pathlib import Path

from testbed.runner.run import Run


def main() -> int:
    ap = argparse.ArgumentParser(prog="python3 -m testbed.runner", description=__doc__)
    ap.add_argument("--run-dir", required=True, type=Path)
    a = ap.parse_args()
    if not a.run_dir.is_dir():
        sys.exit(f"runner: --run-dir {a.run_dir} is not a directory (the controller copies run.json there)")
    if os.geteuid() != 0:
        sys.exit("runner: must run as root on the testbed host (it builds a Mininet network)")
    return Run(a.run_dir).run()


if __name__ == "__main__":
    sys.exit(main())
