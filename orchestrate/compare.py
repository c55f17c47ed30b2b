"""Two results compared: `./favorlab compare A B [--out DIR]`.

  python -m orchestrate.compare A B [--out DIR] [--resamples N]

A and B are results folders (results/<name>/, or their tables/ folder), bundles (.tar.gz, from
`./favorlab bundle`) or unpacked bundles. The comparison itself is R (analysis/R/compare.R, on the metrics and intervals of the verdict):
this module only finds each side's extracted tables. A bundle comes from someone else, so it goes through
the same checks as `analyse` (orchestrate/bundle_unpack.py): an archive is unpacked, every member checked,
into a temporary directory removed afterwards; an unpacked bundle is verified against its SHA256SUMS where
it lies. A results folder is this machine's own and is read where it is. Nothing in A or B is written.

Writes DIR/compare.csv, DIR/unpaired.csv and DIR/summary.md (default results/compare-<A>-<B>/) and prints
a one-screen summary; docs/compare.md says what is paired and what the intervals carry.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from orchestrate.bundle_layout import MAX_MEMBERS, MAX_TOTAL_BYTES, SUMS, BundleError, finished_runs, has_pcaps, refuse
from orchestrate.bundle_unpack import unpack_archive, verify
from orchestrate.provenance import REPO

# the files compare.R writes: a directory holding only these (or nothing) is one --out may write over
OUTPUTS = {"compare.csv", "unpaired.csv", "summary.md"}
# fewest block bootstrap resamples --resamples takes: the 2.5 % and 97.5 % quantiles need a few dozen
MIN_RESAMPLES = 100


def label(source: Path) -> str:
    """A plain word naming a source in the default output directory (as bundle_unpack.default_out does: a
    bundle's file name never reaches a path or command line as anything but letters, digits and '._-')."""
    name = source.name
    for ext in (".tar.gz", ".tgz"):
        if name.endswith(ext):
            name = name[: -len(ext)]
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "results"


def tabled(d: Path) -> bool:
    """d holds extracted tables: a folder with a <run_id>/run.csv."""
    return d.is_dir() and any((t / "run.csv").is_file() for t in d.iterdir())


def tables_of(source: Path, scratch: Path) -> Path:
    """The tables directory of source (results folder, bundle or unpacked bundle); a bundle archive is
    unpacked under scratch. Refuses what holds no tables, naming the fix."""
    if source.is_file():
        root = scratch / "unpacked"
        unpack_archive(source, root, MAX_MEMBERS, MAX_TOTAL_BYTES)
    elif source.is_dir():
        root = source
        if (source / SUMS).exists():
            verify(source, MAX_MEMBERS, MAX_TOTAL_BYTES)
    else:
        raise BundleError(f"{source}: no such results folder or bundle. Fix: give a results folder "
                          f"(results/<name>/), a bundle (.tar.gz) or an unpacked bundle")
    # a results folder's tables/, or (a results folder's own tables folder given) the folder itself
    tables = root if source.is_dir() and not (root / "tables").exists() and tabled(root) else root / "tables"
    if not tabled(tables):
        runs, _ = finished_runs(root)
        pcaps_only = [r for r in runs if has_pcaps(root / "runs" / r)]
        fix = (f"Fix: run `./favorlab analyse {source}` first (it extracts the tables from the {len(pcaps_only)} "
               f"run(s) with captures) and compare its output folder" if pcaps_only else
               "Fix: give the results folder of a config whose runs have finished and been analysed, or a "
               "bundle made by `./favorlab bundle`")
        raise BundleError(f"{source}: no extracted tables (tables/<run_id>/run.csv). {fix}")
    return tables


def output_dir(out: Path) -> Path:
    """out, refused when it holds anything compare did not write (it is written into, never cleared)."""
    if out.is_symlink() or out.exists() and not out.is_dir():
        raise BundleError(f"{out}: not a directory. Fix: give --out a new directory")
    if out.is_dir():
        foreign = sorted(p.name for p in out.iterdir() if p.name not in OUTPUTS)
        if foreign:
            raise BundleError(f"{out} holds files compare does not write ({', '.join(foreign[:3])}). "
                              f"Fix: give --out a new or empty directory")
    return out


def compare(a: str | Path, b: str | Path, out: str | Path | None = None, resamples: int | None = None) -> Path:
    """Compare results a and b into out; returns out. The summary goes to stdout, a refusal raises
    BundleError with one line naming the fix."""
    a, b = Path(a).absolute(), Path(b).absolute()
    out = output_dir(Path(out).absolute() if out else REPO / "results" / f"compare-{label(a)}-{label(b)}")
    with tempfile.TemporaryDirectory(prefix="favorlab-compare-") as scratch:
        scratch = Path(scratch)
        (scratch / "a").mkdir()
        (scratch / "b").mkdir()
        ta, tb = tables_of(a, scratch / "a"), tables_of(b, scratch / "b")
        cmd = ["Rscript", str(REPO / "analysis" / "R" / "compare.R"), "--a", str(ta), "--b", str(tb),
               "--out", str(out), "--label-a", str(a), "--label-b", str(b)]
        if resamples:
            cmd += ["--resamples", str(resamples)]
        if shutil.which("Rscript") is None:
            raise BundleError("Rscript is missing. Fix: run scripts/bootstrap (as root) to install R and its packages")
        r = subprocess.run(cmd, cwd=REPO, stderr=subprocess.PIPE, text=True)
    if r.returncode:
        said = [line for line in r.stderr.splitlines() if line.startswith("favorlab compare: ")]
        raise BundleError(said[-1][len("favorlab compare: "):] if said else
                          f"the comparison failed (exit {r.returncode}): {r.stderr.strip()[-400:]}")
    # the readers' notes (runs split by their settings, table folders ignored) say what was read
    sys.stderr.write(r.stderr)
    print(f"favorlab compare: {out}/compare.csv, {out}/unpaired.csv, {out}/summary.md")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="favorlab compare", description="compare two results folders or bundles "
                                 "flow by flow: B - A per scenario, load, AQM pair and metric, with 95 % intervals")
    ap.add_argument("a", help="results folder, bundle (.tar.gz) or unpacked bundle: the reference")
    ap.add_argument("b", help="results folder, bundle or unpacked bundle: compared with A")
    ap.add_argument("--out", help="directory to write (default results/compare-<A>-<B>/)")
    ap.add_argument("--resamples", type=int, help="block bootstrap resamples (default 1000, as the verdict)")
    args = ap.parse_args(argv)
    if args.resamples is not None and args.resamples < MIN_RESAMPLES:
        ap.error(f"--resamples {args.resamples}: give {MIN_RESAMPLES} or more (a percentile interval from fewer "
                 f"resamples is mostly noise)")
    try:
        compare(args.a, args.b, args.out, args.resamples)
    except BundleError as e:
        return refuse("compare", e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
