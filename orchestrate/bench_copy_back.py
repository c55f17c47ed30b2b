"""Copying a run back out of a testbed host, with the controller's own rsync command and the same command
without compression, in turn, on the same files:

    python -m orchestrate.bench_copy_back VM_NAME RUN_DIR [--reps 2]

RUN_DIR is a finished run's directory (its captures are what weigh); it is copied onto the guest VM_NAME
(testbed/vm/favorvm start --name VM_NAME) once, then copied back REPS times each way into temporary folders,
checked identical to RUN_DIR. Prints each copy's seconds and MB/s and the ratio of the medians
(docs/measurements.md, "Copying a run back")."""
import argparse
import filecmp
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from orchestrate import remote

BENCH_DIR = "/var/tmp/favorlab-bench-copy-back"


def same_tree(a: Path, b: Path) -> bool:
    c = filecmp.dircmp(a, b)
    if c.left_only or c.right_only or filecmp.cmpfiles(a, b, c.common_files, shallow=False)[1:] != ([], []):
        return False
    return all(same_tree(a / d, b / d) for d in c.common_dirs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("vm")
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args()
    ssh = remote.Ssh(**remote.vm_target(a.vm))
    ssh.capture(f"rm -rf {BENCH_DIR} && mkdir -p {BENCH_DIR}", timeout=60)
    ssh.rsync(f"{a.run_dir}/", ssh.at(f"{BENCH_DIR}/"))
    size = sum(f.stat().st_size for f in a.run_dir.rglob("*") if f.is_file())
    times = {"compressed": [], "uncompressed": []}     # compressed: the controller's own command
    try:
        for _ in range(a.reps):
            for kind in times:
                with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
                    argv = ssh.rsync_argv(ssh.at(f"{BENCH_DIR}/"), f"{d}/")
                    if kind == "uncompressed":
                        argv = [x for x in argv if x not in remote.COMPRESS]
                    t = time.monotonic()
                    subprocess.run(argv, check=True, capture_output=True)
                    w = time.monotonic() - t
                    ok = same_tree(a.run_dir, Path(d))
                times[kind].append(w)
                print(f"{kind:12s} {size / 1e6:7.1f} MB {w:6.1f} s {size / 1e6 / w:6.2f} MB/s identical={ok}",
                      flush=True)
                if not ok:
                    raise SystemExit("the copy differs from RUN_DIR")
    finally:
        ssh.capture(f"rm -rf {BENCH_DIR}", timeout=60)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"median: compressed {med['compressed']:.1f} s, uncompressed {med['uncompressed']:.1f} s; "
          f"uncompressed / compressed = {med['uncompressed'] / med['compressed']:.2f}")


if __name__ == "__main__":
    main()
