"""Results bundles: what the analysis needs from a finished config, in one archive a reviewer can
re-analyse without a testbed (issue 16).

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
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from orchestrate import experiment
from orchestrate.provenance import REPO, favorlab_commit

SUMS = "SHA256SUMS"
INFO = "BUNDLE.json"
# a run directory's packet captures (contracts.md): left out unless --pcaps, then extraction can be redone
PCAP_DIR = "pcap"
# Snakemake's stamp of a directory output: bookkeeping of the pipeline that made the run, not a result
SKIP = {".snakemake_timestamp"}
# what `analyse` adds to an unpacked bundle (workflow/rules/analysis.smk's outputs): an analysed directory
# still verifies, and is analysed again from its bundled files only
ANALYSIS_OUTPUTS = ("figures", "logs", "verdict.csv", "report.html")


class BundleError(Exception):
    """A refusal: the message says what is wrong and what to do."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _files(root: Path) -> list[Path]:
    """Every regular file under root, relative, sorted (archives and checksum lists in a fixed order)."""
    out = []
    for d, dirs, names in os.walk(root):
        dirs.sort()
        for n in sorted(names):
            p = Path(d, n)
            if n not in SKIP and p.is_file() and not p.is_symlink():
                out.append(p.relative_to(root))
    return out


def finished_runs(results: Path) -> tuple[list[str], list[str]]:
    """(finished, incomplete) run ids of results/runs: a run is finished when its directory has DONE and
    is not the runner's <run_id>.partial (testbed.smk)."""
    rdir = results / "runs"
    if not rdir.is_dir():
        return [], []
    done, partial = [], []
    for d in sorted(rdir.iterdir()):
        if d.is_dir():
            (done if (d / "DONE").is_file() and not d.name.endswith(".partial") else partial).append(d.name)
    return done, partial


def has_pcaps(run_dir: Path) -> bool:
    return any((run_dir / PCAP_DIR).glob("*.pcap"))


def contents(results: Path, pcaps: bool) -> tuple[list[str], list[tuple[Path, str]]]:
    """(run ids, [(source file, name in the bundle)]) of a results directory's finished runs and their
    tables. Refuses a results directory with no finished run, and a run with no tables when its pcaps
    stay behind (nothing could be analysed from it)."""
    done, partial = finished_runs(results)
    if not done:
        raise BundleError(f"{results}: no finished run (a run is finished when runs/<run_id>/ holds DONE; "
                          f"{len(partial)} incomplete). Run the config first (./favorlab run CONFIG).")
    untabled = [r for r in done if not (results / "tables" / r / "flows.csv").is_file()]
    if untabled and not pcaps:
        raise BundleError(f"{len(untabled)} finished run(s) have no tables ({results}/tables/<run_id>/): "
                          f"{', '.join(untabled)}. Fix: let the pipeline's analysis extract them, or "
                          f"bundle with --pcaps so that `analyse` extracts them.")
    files = []
    for rid in done:
        src = results / "runs" / rid
        for rel in _files(src):
            # the run's captures, and its earlier attempts' (attempts/<n>/pcap/)
            if pcaps or PCAP_DIR not in rel.parts[:-1]:
                files.append((src / rel, f"runs/{rid}/{rel.as_posix()}"))
        tdir = results / "tables" / rid
        if tdir.is_dir():
            files += [(tdir / rel, f"tables/{rid}/{rel.as_posix()}") for rel in _files(tdir)]
    for _, name in files:
        # sha256sum escapes such names, which would make SHA256SUMS differ from its format
        if "\n" in name or "\\" in name:
            raise BundleError(f"{name}: a file name with a newline or backslash cannot go into {SUMS}")
    return done, files


def _human(n: int) -> str:
    for unit in ["B", "KiB", "MiB", "GiB"]:
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def bundle(config: str | Path, out: str | Path | None = None, pcaps: bool = False,
           results: str | Path | None = None, log=print) -> Path:
    """Write the bundle of config's results (default results/<name>/) to out; returns its path."""
    config = Path(config)
    try:
        cfg = experiment.load(config, warn=lambda _m: None)
    except experiment.ConfigError as e:
        raise BundleError(str(e)) from e
    name = cfg["name"]
    results = Path(results) if results else REPO / "results" / name
    runs, files = contents(results, pcaps)
    out = Path(out) if out else REPO / "results" / f"{name}-bundle{'-pcaps' if pcaps else ''}.tar.gz"
    if out.exists():
        raise BundleError(f"{out} exists: remove it or give --out another file")
    # the config's matrix names the runs its analysis would read; others in the directory (an earlier
    # version of the config) go in too, as the R scripts read every table there, but are named
    matrix = {r.run_id for r in experiment.runs(cfg)}
    extra = [r for r in runs if r not in matrix]
    info = {"name": name, "config": config.name, "runs": runs, "pcaps": pcaps,
            "favorlab_commit": favorlab_commit(), "made_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    members = [(config, f"config/{config.name}")] + files
    sums = "".join(f"{_sha256(src)}  {arc}\n" for src, arc in members)
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
        f"{'with' if pcaps else 'without'} pcaps, {len(members) + 2} files, {_human(size)}")
    if extra:
        log(f"  {len(extra)} run(s) not in the config's matrix, bundled as the analysis reads their tables: "
            f"{', '.join(extra)}")
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


def _read_sums(path: Path) -> dict[str, str]:
    sums = {}
    for i, line in enumerate(path.read_text().splitlines(), 1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64:
            raise BundleError(f"{path}:{i}: not a sha256sum line: {line!r}")
        sums[name] = digest
    return sums


def verify(root: Path) -> dict[str, str]:
    """Check every file under root against root/SHA256SUMS: a file that differs, is missing or is not
    listed is an error naming it. Returns the list."""
    if not (root / SUMS).is_file():
        raise BundleError(f"{root}: no {SUMS}; not a favorlab bundle")
    sums = _read_sums(root / SUMS)
    for name, digest in sums.items():
        p = root / name
        if not p.is_file():
            raise BundleError(f"{name}: listed in {SUMS} but missing from the bundle")
        if _sha256(p) != digest:
            raise BundleError(f"{name}: checksum mismatch (the file differs from the one bundled); "
                              f"the bundle is damaged or was changed")
    present = {p.as_posix() for p in _files(root) if p.parts[0] not in ANALYSIS_OUTPUTS} - {SUMS}
    unlisted = sorted(present - set(sums))
    if unlisted:
        raise BundleError(f"{unlisted[0]}: in the bundle but not in {SUMS}"
                          + (f" (and {len(unlisted) - 1} more)" if len(unlisted) > 1 else ""))
    return sums


def _safe_members(tar: tarfile.TarFile, bundle: Path) -> tuple[str, list[tarfile.TarInfo]]:
    """The archive's one top directory and its members: regular files and directories only, no absolute
    path and no '..' (nothing lands outside the directory it is unpacked into)."""
    tops, members = set(), []
    for m in tar.getmembers():
        parts = Path(m.name).parts
        if m.name.startswith("/") or ".." in parts or not (m.isfile() or m.isdir()):
            raise BundleError(f"{bundle}: member {m.name!r} is not a plain file under the bundle's directory")
        tops.add(parts[0])
        members.append(m)
    if len(tops) != 1:
        raise BundleError(f"{bundle}: not a favorlab bundle (expected one top directory, found {sorted(tops)})")
    return tops.pop(), members


def default_out(source: Path) -> Path:
    """Beside the source: the bundle's name without .tar.gz, or the results directory's name + -analysis."""
    name = source.name
    for ext in (".tar.gz", ".tgz"):
        if name.endswith(ext):
            return source.with_name(name[: -len(ext)])
    return source.with_name(name + "-analysis")


def unpack(source: Path, out: Path) -> dict[str, str] | None:
    """source (bundle, unpacked bundle or results directory) -> out, a new results directory, verified.
    Returns the bundle's checksums (None for a results directory)."""
    if out.exists():
        raise BundleError(f"{out} exists: analyse never writes over a directory. Fix: remove it, or give "
                          f"--out a new directory")
    if source.is_file():
        with tarfile.open(source, "r:*") as tar:
            top, members = _safe_members(tar, source)
            out.mkdir(parents=True)
            try:
                for m in members:
                    rel = Path(m.name).relative_to(top)
                    if m.isdir() or not rel.parts:
                        continue
                    dest = out / rel
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    with tar.extractfile(m) as src, open(dest, "wb") as dst:
                        shutil.copyfileobj(src, dst, 1 << 20)
                    os.utime(dest, (m.mtime, m.mtime))
                return verify(out)
            except BaseException:
                shutil.rmtree(out)
                raise
    if not source.is_dir():
        raise BundleError(f"{source}: no such bundle or results directory")
    if (source / SUMS).is_file():
        # an unpacked bundle: checked where it is, then copied (the source is never written)
        sums = verify(source)
        files = [(source / name, name) for name in [SUMS, *sums]]
    else:
        # a results directory: its finished runs and their tables, pcaps included where they are
        sums, (_, files) = None, contents(source, pcaps=True)
    out.mkdir(parents=True)
    try:
        for src, arc in files:
            (out / arc).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, out / arc)
    except BaseException:
        shutil.rmtree(out)
        raise
    return sums


def analyse(source: str | Path, out: str | Path | None = None, cores: int | None = None, log=print) -> Path:
    """Unpack source into out (a new directory) and regenerate tables, figures, ranking, verdict and
    report there with the pipeline's analysis rules. Returns out."""
    source = Path(source).resolve()
    out = Path(out).resolve() if out else default_out(source)
    sums = unpack(source, out)
    runs, _ = finished_runs(out)
    if not runs:
        raise BundleError(f"{source}: no finished run to analyse")
    with_pcaps = [r for r in runs if has_pcaps(out / "runs" / r)]
    tabled = [r for r in runs if r not in with_pcaps]
    missing = [r for r in tabled if not (out / "tables" / r / "flows.csv").is_file()]
    if missing:
        raise BundleError(f"{len(missing)} run(s) have neither pcaps nor tables: {', '.join(missing)}")
    # Snakemake redoes a table older than its run directory, and the unpacked directories are as new as
    # the unpacking: the bundled tables are made newer than them, so they are used and not extracted again
    # from pcaps that are not there.
    for r in tabled:
        for f in (out / "tables" / r).iterdir():
            os.utime(f)
    log(f"favorlab analyse: {len(runs)} run(s) in {out}")
    if with_pcaps:
        log(f"  extracted again from their pcaps: {len(with_pcaps)} run(s): {', '.join(with_pcaps)}")
    if tabled:
        log(f"  from the bundled tables (no pcaps): {len(tabled)} run(s): {', '.join(tabled)}")
    t0 = time.monotonic()
    r = subprocess.run(snakemake_command(out, with_pcaps, cores), cwd=REPO)
    if r.returncode:
        raise BundleError(f"the analysis failed (exit {r.returncode}); the rules' logs are in {out}/logs/")
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
        bad = [n.rsplit("/", 1)[1] for n in names if not (out / n).is_file() or _sha256(out / n) != sums[n]]
        if names and not bad:
            same.append(rid)
        else:
            differ.append(f"{rid} ({', '.join(bad) if names else 'none bundled'})")
    return same, differ


def snakemake_command(results: Path, reextract: list[str], cores: int | None = None) -> list[str]:
    """The pipeline's Snakefile on results alone: the outputs missing (figures, verdict, report: never
    bundled) are made, and the runs with pcaps are extracted again (--forcerun on their tables).
    --drop-metadata: Snakemake runs in the checkout, whose .snakemake/ then keeps no record of a directory
    analysed elsewhere."""
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
           "--config", f"analyse_results={results}", "--cores", str(cores or os.cpu_count() or 1),
           "--drop-metadata", "--printshellcmds", "--show-failed-logs"]
    if reextract:
        cmd += ["--forcerun"] + [f"{results}/tables/{r}/flows.csv" for r in reextract]
    return cmd


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="favorlab", description="results bundles (issue 16)")
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
    args = ap.parse_args(argv)
    try:
        if args.cmd == "bundle":
            bundle(args.config, args.out, args.pcaps, args.results)
        else:
            analyse(args.source, args.out, args.cores)
    except BundleError as e:
        print(f"favorlab {args.cmd}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
