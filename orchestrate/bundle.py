"""Results bundles: what the analysis needs from a finished config, in one archive a reviewer can
re-analyse without a testbed.

  python -m orchestrate.bundle bundle CONFIG [--pcaps] [--out FILE] [--results DIR]
  python -m orchestrate.bundle analyse BUNDLE_OR_RESULTS_DIR [--out DIR] [--cores N]

A bundle is a tar.gz holding one directory laid out as results/<name>/ (docs/contracts.md): runs/<run_id>/
(every finished run directory: manifest, fidelity report, run.json, schedule, flow logs, nstat, qdisc
stats, logs; pcap/ only with --pcaps), tables/<run_id>/ (the extracted tables, so figures, verdict and
report can be redone without pcaps), config/<the config file>, BUNDLE.json (what went in) and SHA256SUMS
(sha256sum's format: `cd <name> && sha256sum -c SHA256SUMS` verifies it by hand too).

`analyse` drives Snakemake on the unpacked directory (Snakefile with `--config analyse_results=DIR`, which
leaves the schedule and testbed rules out): the figures, ranking, verdict and report are made by the very
rules of workflow/rules/analysis.smk, so their command lines exist once, and a run whose pcaps came along
is extracted again by the pipeline's own extract rule. Driving the rules, rather than moving their
commands into a Python function both would call, leaves the pipeline's rules, jobs and reruns as they
were, and what is redone is decided by the same DAG. Snakemake runs in the checkout, as the pipeline does
(the rules name analysis/ relative to it); the directory analysed can be anywhere.

A bundle comes from someone else, so `analyse` treats it as hostile (docs/contracts.md, "Results bundle"):
orchestrate/bundle_layout.py holds what a bundle may hold, orchestrate/bundle_unpack.py unpacks or verifies
one against it before anything is analysed. A refusal is one line naming the problem and the fix, and
leaves nothing behind.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from orchestrate import matrix as run_matrix
from orchestrate.bundle_layout import (CONFIG_FILE, DAMAGED, GIB, INFO, MAX_MEMBERS, MAX_TOTAL_BYTES, PART, SUMS,
                                       BundleError, contents, finished_runs, has_pcaps, human, refuse, sha256_file)
from orchestrate.bundle_unpack import default_out, new_top, unpack
from orchestrate.config import ConfigError, read_config
from orchestrate.provenance import REPO, favorlab_commit


def bundle(config: str | Path, out: str | Path | None = None, pcaps: bool = False,
           results: str | Path | None = None, log=print) -> Path:
    """Write the bundle of config's results (default results/<name>/) to out; returns its path. Only the
    config's own runs go in (its matrix, as the pipeline analyses them); others in the directory are named."""
    config = Path(config)
    try:
        cfg = read_config(config, warn=lambda _m: None)
    except ConfigError as e:
        raise BundleError(str(e)) from e
    name = cfg["name"]
    if not PART.fullmatch(name) or not CONFIG_FILE.fullmatch(config.name):
        raise BundleError(f"config {config.name!r} (name {name!r}): a bundle's config file and name are plain "
                          f"names (letters, digits, '._-', a .yaml file). Fix: rename the config file or its name")
    results = Path(results) if results else REPO / "results" / name
    matrix = {r.run_id for r in run_matrix.runs(cfg)}
    done_all, _ = finished_runs(results)
    extra = [r for r in done_all if r not in matrix]
    runs, files = contents(results, pcaps, only=matrix)
    out = Path(out) if out else REPO / "results" / f"{name}-bundle{'-pcaps' if pcaps else ''}.tar.gz"
    if out.exists():
        raise BundleError(f"{out} exists. Fix: remove it or give --out another file")
    info = {"name": name, "config": config.name, "runs": runs, "pcaps": pcaps,
            "favorlab_commit": favorlab_commit(), "made_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    members = [(config, f"config/{config.name}")] + files
    sums = "".join(f"{sha256_file(src)}  {arc}\n" for src, arc in members)
    sums += f"{hashlib.sha256(_info_bytes(info)).hexdigest()}  {INFO}\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial")
    # gzip's own default level, not tarfile's 9: far quicker on hundreds of MB of captures.
    # Written as .partial and renamed when whole, so an interrupted bundle is never taken for one.
    try:
        with tarfile.open(tmp, "w:gz", compresslevel=6, format=tarfile.PAX_FORMAT) as tar:
            _add_bytes(tar, f"{name}/{SUMS}", sums.encode())
            _add_bytes(tar, f"{name}/{INFO}", _info_bytes(info))
            for src, arc in members:
                tar.add(src, arcname=f"{name}/{arc}", recursive=False, filter=_owner_free)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.rename(out)
    size = out.stat().st_size
    log(f"favorlab bundle: {out}: {len(runs)} finished run(s) of {name}, "
        f"{'with' if pcaps else 'without'} pcaps, {len(members) + 2} files, {human(size)}")
    if extra:
        log(f"  {len(extra)} finished run(s) not in the config's matrix left out (the analysis reads the "
            f"config's runs only): {', '.join(extra)}")
    return out


def _info_bytes(info: dict) -> bytes:
    return (json.dumps(info, indent=2) + "\n").encode()


def _owner_free(ti: tarfile.TarInfo) -> tarfile.TarInfo:
    # who packed it is not part of the results
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = ""
    return ti


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime, ti.mode = len(data), int(time.time()), 0o644
    tar.addfile(ti, io.BytesIO(data))


def _check_runs(out: Path, runs: list[str]) -> None:
    """BUNDLE.json's runs are the bundle's finished run directories (a results directory has none)."""
    info_path = out / INFO
    if not info_path.is_file():
        return
    try:
        info = json.loads(info_path.read_text())
        listed = info["runs"]
        assert isinstance(listed, list) and all(isinstance(r, str) for r in listed)
    except (ValueError, KeyError, TypeError, AssertionError):
        raise BundleError(f"{INFO}: not the JSON object `bundle` writes (with a list of runs); "
                          f"{DAMAGED}") from None
    if sorted(listed) != sorted(runs):
        diff = sorted(set(listed) ^ set(runs))
        raise BundleError(f"{INFO} lists other runs than the bundle's finished run directories "
                          f"({len(diff)} differ, e.g. {diff[0]!r}); {DAMAGED}")


def analyse(source: str | Path, out: str | Path | None = None, cores: int | None = None, log=print,
            max_members: int = MAX_MEMBERS, max_bytes: int = MAX_TOTAL_BYTES) -> Path:
    """Unpack source into out (a new directory) and regenerate tables, figures, ranking, verdict and
    report there with the pipeline's analysis rules. Returns out. A refusal leaves no out behind."""
    source = Path(source).absolute()
    out = Path(out).absolute() if out else default_out(source)
    if re.search(r"[{}\x00-\x1f]", str(out)):
        # Snakemake reads braces in a path as wildcards; a control character would break the rules' logs
        raise BundleError(f"{str(out)!r}: braces or control characters in the directory to analyse in. "
                          f"Fix: give --out a path without them")
    made = new_top(out)
    sums = unpack(source, out, max_members, max_bytes)
    try:
        runs, _ = finished_runs(out)
        if not runs:
            raise BundleError(f"{source}: no finished run to analyse (runs/<run_id>/DONE). Fix: bundle a "
                              f"config whose runs have finished")
        _check_runs(out, runs)
        with_pcaps = [r for r in runs if has_pcaps(out / "runs" / r)]
        tabled = [r for r in runs if r not in with_pcaps]
        missing = [r for r in tabled if not (out / "tables" / r / "flows.csv").is_file()]
        if missing:
            raise BundleError(f"{len(missing)} run(s) have neither pcaps nor tables: {', '.join(missing)}. "
                              f"Fix: bundle them with --pcaps or with their tables")
    except BaseException:
        shutil.rmtree(made)
        raise
    ignored = sorted(d.name for d in (out / "tables").iterdir() if d.name not in runs) \
        if (out / "tables").is_dir() else []
    # Snakemake redoes a table older than its run directory: the bundled tables are made newer than the
    # unpacked run directories, so they are used and not extracted again from pcaps that are not there.
    for r in tabled:
        for f in (out / "tables" / r).iterdir():
            os.utime(f)
    log(f"favorlab analyse: {len(runs)} run(s) in {out}")
    if with_pcaps:
        log(f"  extracted again from their pcaps: {len(with_pcaps)} run(s): {', '.join(with_pcaps)}")
    if tabled:
        log(f"  from the bundled tables (no pcaps): {len(tabled)} run(s): {', '.join(tabled)}")
    if ignored:
        log(f"  tables of {len(ignored)} run(s) with no finished run directory, ignored: {', '.join(ignored)}")
    t0 = time.monotonic()
    r = subprocess.run(snakemake_command(out, with_pcaps, cores), cwd=REPO)
    if r.returncode:
        raise BundleError(f"the analysis failed (exit {r.returncode}). Fix: see the rules' logs in {out}/logs/")
    log(f"favorlab analyse: {out}/verdict.csv, {out}/figures/, {out}/report.html "
        f"({time.monotonic() - t0:.0f} s)")
    if sums and with_pcaps:
        same, differ = compare_tables(out, with_pcaps, sums)
        log(f"  tables extracted again identical to the bundled ones: {len(same)} of {len(with_pcaps)} run(s)"
            + (f"; differing: {'; '.join(differ)}" if differ else ""))
    return out


def compare_tables(out: Path, runs: list[str], sums: dict[str, str]) -> tuple[list[str], list[str]]:
    """The runs whose tables, extracted again, have the bytes the bundle lists, and for the others
    which files differ (e.g. tables made by an older extraction)."""
    same, differ = [], []
    for rid in runs:
        names = sorted(n for n in sums if n.startswith(f"tables/{rid}/"))
        bad = [n.rsplit("/", 1)[1] for n in names if not (out / n).is_file() or sha256_file(out / n) != sums[n]]
        if names and not bad:
            same.append(rid)
        else:
            differ.append(f"{rid} ({', '.join(bad) if names else 'none bundled'})")
    return same, differ


# The pipeline's Snakemake settings (Snakefile, cores, rerun triggers, logs), the profile ./favorlab picks too
SNAKEMAKE_PROFILE = REPO / "workflow" / "profiles" / "default"


def snakemake_command(results: Path, reextract: list[str], cores: int | None = None) -> list[str]:
    """The pipeline's Snakefile on results alone: the outputs missing (figures, verdict, report: never
    bundled) are made, and the runs with pcaps are extracted again (--forcerun on their tables).
    Every flag the pipeline's calls share comes from its profile, so analyse and ./favorlab cannot drift;
    only analyse's own are added. --drop-metadata: Snakemake runs in the checkout, whose .snakemake/ then
    keeps no record of a directory analysed elsewhere. cores None: the profile's (this machine's)."""
    cmd = [sys.executable, "-m", "snakemake", "--profile", str(SNAKEMAKE_PROFILE),
           "--config", f"analyse_results={results}", "--drop-metadata"]
    if cores:
        cmd += ["--cores", str(cores)]
    if reextract:
        cmd += ["--forcerun"] + [f"{results}/tables/{r}/flows.csv" for r in reextract]
    return cmd


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="favorlab", description="results bundles")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bundle", help="pack a finished config's results into one archive")
    b.add_argument("config", help="the config file (config/<name>.yaml)")
    b.add_argument("--pcaps", action="store_true", help="include the packet captures (extraction can be redone)")
    b.add_argument("--out", help="archive to write (default results/<name>-bundle[-pcaps].tar.gz)")
    b.add_argument("--results", help="the config's results directory (default results/<name>)")
    a = sub.add_parser("analyse", help="verify, unpack and analyse a bundle or results directory")
    a.add_argument("source", help="a bundle (.tar.gz), an unpacked bundle or a results directory")
    a.add_argument("--out", help="new directory to analyse in (default: beside the source)")
    a.add_argument("--cores", type=int, help="Snakemake's cores (default: this machine's)")
    a.add_argument("--max-files", type=int, default=MAX_MEMBERS,
                   help=f"refuse a bundle with more files and directories (default {MAX_MEMBERS})")
    a.add_argument("--max-size", type=float, default=MAX_TOTAL_BYTES / GIB,
                   help=f"refuse a bundle whose files total more GiB (default {MAX_TOTAL_BYTES // GIB})")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "bundle":
            bundle(args.config, args.out, args.pcaps, args.results)
        else:
            analyse(args.source, args.out, args.cores, max_members=args.max_files,
                    max_bytes=int(args.max_size * GIB))
    except BundleError as e:
        return refuse(args.cmd, e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
