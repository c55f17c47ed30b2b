"""python3 -m testbed.runner --run-dir DIR   (as root on the testbed host; DIR holds run.json + schedule.csv)"""
import argparse
import os
import sys
from pathlib import Path

from testbed.runner.run import Runner


def main() -> int:
    ap = argparse.ArgumentParser(prog="python3 -m testbed.runner", description=__doc__)
    ap.add_argument("--run-dir", required=True, type=Path)
    ap.add_argument("--lock-wait", type=float, metavar="SECONDS",
                    help="wait at most this long for the host lock while another run holds it (default: until "
                         "10 min past the holder's expected end, at least 10 min)")
    ap.add_argument("--reuse-topology", action="store_true",
                    help="keep the network up for the next run of the same topology section, and adopt one the "
                         "run before kept (testbed/runner/kept.py; the testbed option reuse_topology)")
    a = ap.parse_args()
    if not a.run_dir.is_dir():
        sys.exit(f"runner: --run-dir {a.run_dir} is not a directory (the controller copies run.json there)")
    if os.geteuid() != 0:
        sys.exit("runner: must run as root on the testbed host (it builds a Mininet network)")
    return Runner(a.run_dir, lock_wait_s=a.lock_wait, reuse_topology=a.reuse_topology).run()


if __name__ == "__main__":
    sys.exit(main())
