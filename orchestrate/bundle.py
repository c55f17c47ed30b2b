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
every member name must fit the run-directory layout (a strict allow-list: runs/<run_id>/..., tables/<run_id>/<table>,
config/<file>, BUNDLE.json, SHA256SUMS, run ids as the pipeline's wildcard constraint has them), only regular
files and directories, no sparse or oversized member, the member count and total size capped; the whole
member list is checked before anything is written, every file is created new (O_EXCL, O_NOFOLLOW) under --out
and its checksum compared while it is written. What analyse makes (figures/, logs/, verdict.csv,
report.html, Snakemake's stamps) is refused in a bundle: analyse always makes it afresh. A refusal is one
line naming the problem and the fix, and leaves nothing behind.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import time
import zlib
from pathlib import Path

from orchestrate import matrix as run_matrix
from orchestrate.config import ConfigError, read_config
from orchestrate.provenance import REPO, favorlab_commit

SUMS = "SHA256SUMS"
INFO = "BUNDLE.json"
# a run directory's packet captures (contracts.md): left out unless --pcaps, then extraction can be redone
PCAP_DIR = "pcap"
# Snakemake's stamp of a directory output: bookkeeping of the pipeline that made the run, not a result
SKIP = {".snakemake_timestamp"}
# what `analyse` makes in the directory it analyses (workflow/rules/analysis.smk's outputs): never in a
# bundle, always made afresh. An unpacked bundle analysed before holds them beside its bundled files; they
# are left where they are and not copied.
ANALYSIS_OUTPUTS = ("figures", "logs", "verdict.csv", "report.html", "analysis-runs.txt")

# The pipeline's run ids (workflow/rules/common.smk's wildcard constraint imports this one; analysis/R/load.R
# holds the same pattern, and a test holds the two equal). A bundle's runs/ and tables/ directories must be
# named so: no space, no shell metacharacter, no path separator, never '.' or '..'.
RUN_ID_PATTERN = r"[A-Za-z0-9.-]+_[a-z0-9_-]+_load[0-9.]+_iw[0-9]+_rep[0-9]+"
RUN_ID = re.compile(RUN_ID_PATTERN)
# One path component inside a run directory: what the runner and the controller write (contracts.md, "Run
# directory": run.json, flows/client-a1.csv, attempts/2/pcap/bneck-in.pcap, ...). Never hidden, never '..'.
PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
# the config file a bundle carries (config/<file>): a plain YAML file name
CONFIG_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\.ya?ml")
# what analysis/extract.py writes per run (contracts.md, "Results bundle")
TABLE_FILES = ("flows.csv", "run.csv", "persistent.csv", "packets.csv.gz")
# runs/<run_id>/attempts/<n>/pcap/<point>.pcap is the deepest a run directory goes
MAX_DEPTH = 8

GIB = 1 << 30
# Caps on what a bundle may hold. A paper-scale bundle with --pcaps (config/paper.yaml: 2524 runs of a few
# dozen files each, their earlier attempts' and their captures) is some 10^5 files and tens of GB, its
# largest capture well under 2 GB; each cap sits an order of magnitude above that, so a real bundle never
# meets it while a hostile one cannot fill the disk or a directory. `analyse --max-files/--max-size` raise
# them for a bundle that truly is larger. Besides the caps the declared total must fit in the free space
# where the bundle is unpacked (with FREE_MARGIN left over).
MAX_MEMBERS = 1_000_000
MAX_TOTAL_BYTES = 512 * GIB
MAX_MEMBER_BYTES = 32 * GIB
FREE_MARGIN = 1 * GIB
# SHA256SUMS and BUNDLE.json are read whole: a paper-scale list is a few MB
MAX_LIST_BYTES = 256 << 20


# the fix for a bundle that is not what `./favorlab bundle` makes, or no longer is
NOT_OURS = "not a favorlab bundle. Fix: ask its sender for a bundle made by `./favorlab bundle`"
DAMAGED = "the bundle is damaged or was changed. Fix: ask its sender for the bundle again"


class BundleError(Exception):
    """A refusal: the message says what is wrong and what to do."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def derived(name: str) -> bool:
    """A name analyse makes itself (or Snakemake's bookkeeping): never taken from a bundle."""
    parts = name.split("/")
    return parts[0] in ANALYSIS_OUTPUTS or any(p.startswith(".snakemake") or p.endswith("_timestamp") for p in parts)


def check_name(name: str, is_dir: bool = False) -> None:
    """Refuse a name (relative to the bundle's directory) that is not in the bundle layout of
    docs/contracts.md: SHA256SUMS, BUNDLE.json, config/<file>.yaml, runs/<run_id>/..., tables/<run_id>/<table>.
    A directory may be any prefix of such a name."""
    fix = "Fix: ask its sender for a bundle made by `./favorlab bundle`"
    if "\\" in name:
        raise BundleError(f"{name!r}: a name with a backslash is not in the bundle layout. {fix}")
    if name.startswith("/"):
        raise BundleError(f"{name!r}: an absolute path; every name must be relative to the bundle's directory. {fix}")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise BundleError(f"{name!r}: a control character in a name. {fix}")
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise BundleError(f"{name!r}: a '..', '.' or empty part in a name (it could point outside the bundle). {fix}")
    if derived(name):
        raise BundleError(f"{name!r}: a derived output (figures/, logs/, verdict.csv, report.html, Snakemake's "
                          f"stamps) in the bundle; analyse makes these itself and never takes them from a bundle. "
                          f"Fix: remove it from the bundle and from {SUMS}")
    top, n = parts[0], len(parts)
    if top in ("runs", "tables") and n >= 2 and not RUN_ID.fullmatch(parts[1]):
        raise BundleError(f"{name!r}: {parts[1]!r} is not a run id of the pipeline "
                          f"(workflow/rules/common.smk: {RUN_ID_PATTERN}). {fix}")
    if n > MAX_DEPTH:
        raise BundleError(f"{name!r}: nested deeper than a run directory goes ({MAX_DEPTH} parts). {fix}")
    ok = False
    if name in (SUMS, INFO):
        ok = not is_dir
    elif top == "config":
        ok = n == 1 and is_dir or n == 2 and CONFIG_FILE.fullmatch(parts[1]) is not None
    elif top in ("runs", "tables"):
        if top == "tables":
            ok = n <= 2 and is_dir or n == 3 and not is_dir and parts[2] in TABLE_FILES
        else:
            ok = n <= 2 and is_dir or n >= 3 and all(PART.fullmatch(p) for p in parts[2:])
    if not ok:
        raise BundleError(f"{name!r}: not in the bundle layout (SHA256SUMS, BUNDLE.json, config/<file>.yaml, "
                          f"runs/<run_id>/..., tables/<run_id>/{{{','.join(TABLE_FILES)}}}). {fix}")


def _walk(root: Path) -> tuple[list[str], list[str]]:
    """(files, directories) under root, relative, sorted, never following a symlink: a symlink, device,
    FIFO or socket anywhere is refused (it could make a read or a copy leave the tree)."""
    files, dirs_out = [], []
    for d, dirs, names in os.walk(root, followlinks=False):
        dirs.sort()
        for n in sorted(dirs) + sorted(names):
            p = Path(d, n)
            mode = os.lstat(p).st_mode
            rel = p.relative_to(root).as_posix()
            if stat.S_ISLNK(mode):
                raise BundleError(f"{root}: {rel!r} is a symlink; a bundle or results directory holds plain files "
                                  f"only. Fix: replace it by the file it points to, or remove it")
            if stat.S_ISDIR(mode):
                dirs_out.append(rel)
            elif stat.S_ISREG(mode):
                files.append(rel)
            else:
                raise BundleError(f"{root}: {rel!r} is a device, FIFO or socket, not a plain file. Fix: remove it")
    return sorted(files), sorted(dirs_out)


def _files(root: Path) -> list[Path]:
    """Every regular file under root, relative, sorted (archives and checksum lists in a fixed order);
    refuses symlinks and special files, skips Snakemake's stamps."""
    return [Path(f) for f in _walk(root)[0] if Path(f).name not in SKIP]


def finished_runs(results: Path) -> tuple[list[str], list[str]]:
    """(finished, incomplete) run ids of results/runs: a run is finished when its directory has DONE and
    is not the runner's <run_id>.partial (testbed.smk). Symlinks are never followed."""
    rdir = results / "runs"
    if not rdir.is_dir() or rdir.is_symlink():
        return [], []
    done, partial = [], []
    for d in sorted(rdir.iterdir()):
        if d.is_dir() and not d.is_symlink():
            fin = (d / "DONE").is_file() and not (d / "DONE").is_symlink() and not d.name.endswith(".partial")
            (done if fin else partial).append(d.name)
    return done, partial


def has_pcaps(run_dir: Path) -> bool:
    return any((run_dir / PCAP_DIR).glob("*.pcap"))


def contents(results: Path, pcaps: bool, only: set[str] | None = None) -> tuple[list[str], list[tuple[Path, str]]]:
    """(run ids, [(source file, name in the bundle)]) of a results directory's finished runs (those of
    `only` when given) and their tables. Refuses a results directory with no finished run, a run with no
    tables when its pcaps stay behind (nothing could be analysed from it), and any name outside the
    bundle layout, symlink or special file."""
    done, partial = finished_runs(results)
    if only is not None:
        done = [r for r in done if r in only]
    if not done:
        raise BundleError(f"{results}: no finished run (a run is finished when runs/<run_id>/ holds DONE; "
                          f"{len(partial)} incomplete). Run the config first (./favorlab run CONFIG).")
    for rid in done:
        check_name(f"runs/{rid}", is_dir=True)
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
        if tdir.is_dir() and not tdir.is_symlink():
            files += [(tdir / rel, f"tables/{rid}/{rel.as_posix()}") for rel in _files(tdir)]
    for _, name in files:
        check_name(name)
    return done, files


def _human(n: int) -> str:
    for unit in ["B", "KiB", "MiB", "GiB"]:
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


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


HEX64 = re.compile(r"[0-9a-f]{64}")


def parse_sums(text: bytes, where: str) -> dict[str, str]:
    """SHA256SUMS (sha256sum's "<hex>  <name>" lines) -> {name: hex}; every name checked against the bundle
    layout, none twice."""
    try:
        lines = text.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise BundleError(f"{where}: {SUMS} is not UTF-8 text; {NOT_OURS}") from None
    sums = {}
    for i, line in enumerate(lines, 1):
        digest, sep, name = line.partition("  ")
        if not sep or not HEX64.fullmatch(digest):
            raise BundleError(f"{where}: {SUMS} line {i} is not a sha256sum line: {line[:120]!r}; {NOT_OURS}")
        check_name(name)
        if name in (SUMS,):
            raise BundleError(f"{where}: {SUMS} lists itself (line {i}); {NOT_OURS}")
        if name in sums:
            raise BundleError(f"{where}: {name!r} is listed twice in {SUMS}; {NOT_OURS}")
        sums[name] = digest
    return sums


def _check_list(where: str, files: dict[str, int], dirs: set[str], sums: dict[str, str] | None,
                max_members: int, max_bytes: int, free_under: Path | None) -> None:
    """The whole member list against the caps, the layout's shape and SHA256SUMS, before anything is written.
    files: name -> size; sums None for a results directory (no list to hold them to)."""
    if len(files) + len(dirs) > max_members:
        raise BundleError(f"{where}: too many members ({len(files) + len(dirs)}, the cap is {max_members}). "
                          f"Fix: if the bundle is genuine, raise the cap with --max-files")
    total = sum(files.values())
    if total > max_bytes:
        raise BundleError(f"{where}: its files total {_human(total)}, above the cap of {_human(max_bytes)}. "
                          f"Fix: if the bundle is genuine, raise the cap with --max-size")
    if free_under is not None:
        free = shutil.disk_usage(free_under).free
        if total + FREE_MARGIN > free:
            raise BundleError(f"{where}: its files total {_human(total)} but {free_under} has {_human(free)} free. "
                              f"Fix: free some space or give --out a directory on a larger disk")
    # a name both a file and a directory (a/b as a file and a/b/c): one of them could not be written
    parents = {"/".join(n.split("/")[:k]) for n in files for k in range(1, n.count("/") + 1)}
    clash = sorted((set(files) & (parents | dirs)))
    if clash:
        raise BundleError(f"{where}: {clash[0]!r} is both a file and a directory in the bundle; {NOT_OURS}")
    if sums is None:
        return
    missing = sorted(set(sums) - set(files))
    if missing:
        raise BundleError(f"{missing[0]}: listed in {SUMS} but missing from the bundle"
                          + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "") + f"; {DAMAGED}")
    unlisted = sorted(set(files) - set(sums) - {SUMS})
    if unlisted:
        raise BundleError(f"{unlisted[0]}: in the bundle but not in {SUMS}"
                          + (f" (and {len(unlisted) - 1} more)" if len(unlisted) > 1 else "") + f"; {DAMAGED}")


def _create(out: Path, name: str) -> int:
    """A new file out/name (its parents made), checked to lie under out once resolved; opened with O_EXCL
    and O_NOFOLLOW, so nothing existing is written through or over."""
    dest = out / name
    dest.parent.mkdir(parents=True, exist_ok=True)
    real = dest.parent.resolve() / dest.name
    if not real.is_relative_to(out.resolve()):
        raise BundleError(f"{name!r}: would be written outside {out}; {NOT_OURS}")
    return os.open(real, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)


def _copy_checked(src, out: Path, name: str, size: int, digest: str | None) -> None:
    """Write size bytes of src to out/name, hashing them; refuses more bytes than declared and a checksum
    that differs from digest."""
    h, n = hashlib.sha256(), 0
    with os.fdopen(_create(out, name), "wb") as dst:
        for block in iter(lambda: src.read(1 << 20), b""):
            n += len(block)
            if n > size:
                raise BundleError(f"{name}: longer than its declared {size} bytes; {DAMAGED}")
            h.update(block)
            dst.write(block)
    if digest is not None and h.hexdigest() != digest:
        raise BundleError(f"{name}: checksum mismatch (the file differs from the one bundled); "
                          f"{DAMAGED}")


def _tar_members(tar: tarfile.TarFile, where: str, out: Path, max_members: int, max_bytes: int):
    """(top directory, {name: member} of files, directory names) of an archive, every header read and
    checked before anything is written: regular files and directories only (no symlink, hard link, device,
    FIFO, sparse member), each name once, in the layout, under one top directory."""
    top, files, dirs, n = None, {}, set(), 0
    while True:
        try:
            m = tar.next()
        except (tarfile.TarError, EOFError, OSError, zlib.error) as e:
            raise BundleError(f"{where}: not a readable tar archive ({e}). Fix: ask its sender for the bundle again")
        if m is None:
            break
        n += 1
        if n > max_members:
            raise BundleError(f"{where}: too many members (more than the cap of {max_members}). "
                              f"Fix: if the bundle is genuine, raise the cap with --max-files")
        name = m.name
        kind = ("symlink" if m.issym() else "hard link" if m.islnk() else "character device" if m.ischr() else
                "block device" if m.isblk() else "FIFO" if m.isfifo() else None)
        if kind:
            raise BundleError(f"{where}: member {name!r} is a {kind}; a bundle holds plain files only. "
                              f"Fix: ask its sender for a bundle made by `./favorlab bundle`")
        if m.sparse is not None or m.type == tarfile.GNUTYPE_SPARSE or \
                any(k.startswith("GNU.sparse") for k in m.pax_headers):
            raise BundleError(f"{where}: member {name!r} is a sparse file (it could expand far beyond the archive). "
                              f"Fix: ask its sender for a bundle made by `./favorlab bundle`")
        if m.type not in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE):
            raise BundleError(f"{where}: member {name!r} is of tar type {m.type!r}, not a plain file or directory. "
                              f"Fix: ask its sender for a bundle made by `./favorlab bundle`")
        if m.size > MAX_MEMBER_BYTES or m.size < 0:
            raise BundleError(f"{where}: member {name!r} declares {_human(m.size)}, above the cap of "
                              f"{_human(MAX_MEMBER_BYTES)} for one file; {NOT_OURS}")
        name = name.rstrip("/") if m.isdir() else name
        if name.startswith("/") or "\\" in name:
            check_name(name)        # names the problem: an absolute path or a backslash
        head, _, rel = name.partition("/")
        if top is None:
            top = head
            if not PART.fullmatch(top):
                raise BundleError(f"{where}: its top directory {top!r} is not a plain name. Fix: ask its sender "
                                  f"for a bundle made by `./favorlab bundle`")
        if head != top or "\\" in head:
            raise BundleError(f"{where}: member {name!r} is outside the bundle's one top directory {top!r}; "
                              f"{NOT_OURS}")
        if not rel:
            if not m.isdir():
                raise BundleError(f"{where}: member {name!r} is a file where the bundle's top directory should be; "
                                  f"{NOT_OURS}")
            continue
        check_name(rel, is_dir=m.isdir())
        if rel in files or rel in dirs:
            raise BundleError(f"{where}: member {rel!r} appears twice in the archive; {NOT_OURS}")
        if hasattr(tarfile, "data_filter"):
            # Python's own extraction filter (3.11.4+) as a second opinion on every member; the checks above
            # do not rely on it, as older Pythons lack it
            try:
                tarfile.data_filter(m.replace(name=rel, deep=False), str(out))
            except tarfile.FilterError as e:
                raise BundleError(f"{where}: member {name!r} refused by tarfile's data filter ({e}); "
                                  f"{NOT_OURS}") from None
        if m.isdir():
            dirs.add(rel)
        else:
            files[rel] = m
    if top is None:
        raise BundleError(f"{where}: an empty archive; {NOT_OURS}")
    return top, files, dirs


def _read_member(tar: tarfile.TarFile, m: tarfile.TarInfo, what: str, where: str) -> bytes:
    if m.size > MAX_LIST_BYTES:
        raise BundleError(f"{where}: its {what} declares {_human(m.size)}, above {_human(MAX_LIST_BYTES)}; {NOT_OURS}")
    try:
        return tar.extractfile(m).read()
    except (tarfile.TarError, EOFError, OSError, zlib.error) as e:
        raise BundleError(f"{where}: its {what} cannot be read ({e}); {DAMAGED}") from None


def unpack_archive(source: Path, out: Path, max_members: int = MAX_MEMBERS,
                   max_bytes: int = MAX_TOTAL_BYTES) -> dict[str, str]:
    """A bundle archive -> out (created here), every member checked before anything is written and every
    file's checksum while it is written. Returns SHA256SUMS."""
    try:
        tar = tarfile.open(source, "r:*")
    except (tarfile.TarError, EOFError, OSError, zlib.error) as e:
        raise BundleError(f"{source}: not a readable tar archive ({e}). Fix: give a bundle made by "
                          f"`./favorlab bundle` (.tar.gz) or a results directory")
    with tar:
        top, files, dirs = _tar_members(tar, str(source), out, max_members, max_bytes)
        if SUMS not in files:
            raise BundleError(f"{source}: no {SUMS}; {NOT_OURS}")
        sums = parse_sums(_read_member(tar, files[SUMS], SUMS, str(source)), str(source))
        _check_list(str(source), {k: m.size for k, m in files.items()}, dirs, sums, max_members, max_bytes,
                    _existing_parent(out))
        made = _new_top(out)
        out.mkdir(parents=True)
        try:
            for name, m in files.items():
                with tar.extractfile(m) as src:
                    _copy_checked(src, out, name, m.size, sums.get(name))
        except BaseException as e:
            shutil.rmtree(made)
            if isinstance(e, (tarfile.TarError, EOFError, zlib.error)):
                raise BundleError(f"{source}: the archive cannot be read to its end ({e}); {DAMAGED}") from None
            raise
    return sums


def _new_top(out: Path) -> Path:
    """The outermost directory that making out will create (out itself, or a missing parent of it): what a
    refusal removes, so that nothing is left where nothing was."""
    while not out.parent.exists():
        out = out.parent
    return out


def _existing_parent(p: Path) -> Path:
    while not p.exists():
        p = p.parent
    return p


def verify(root: Path, max_members: int = MAX_MEMBERS, max_bytes: int = MAX_TOTAL_BYTES,
           free_under: Path | None = None) -> dict[str, str]:
    """Check an unpacked bundle where it lies: the names in SHA256SUMS and the files under root against the
    layout (no symlink, no special file), and every file against its checksum. Derived outputs of an earlier
    analysis (ANALYSIS_OUTPUTS) beside the bundled files are left out; listed in SHA256SUMS they are refused.
    Returns SHA256SUMS."""
    sums_path = root / SUMS
    if not sums_path.is_file() or sums_path.is_symlink():
        raise BundleError(f"{root}: no {SUMS}; {NOT_OURS}")
    all_files, all_dirs = _walk(root)
    files = {f: os.lstat(root / f).st_size for f in all_files if not derived(f)}
    dirs = {d for d in all_dirs if not derived(d)}
    for f in files:
        check_name(f)
    for d in dirs:
        check_name(d, is_dir=True)
    if files[SUMS] > MAX_LIST_BYTES:
        raise BundleError(f"{root}: its {SUMS} is {_human(files[SUMS])}, above {_human(MAX_LIST_BYTES)}; {NOT_OURS}")
    sums = parse_sums(sums_path.read_bytes(), str(root))
    _check_list(str(root), files, dirs, sums, max_members, max_bytes, free_under)
    for name, digest in sums.items():
        if _sha256(root / name) != digest:
            raise BundleError(f"{name}: checksum mismatch (the file differs from the one bundled); "
                              f"{DAMAGED}")
    return sums


def default_out(source: Path) -> Path:
    """Beside the source: the bundle's name without .tar.gz, or the results directory's name + -analysis;
    anything but letters, digits and '._-' becomes '-' (`quick-bundle (1).tar.gz` -> quick-bundle-1), so a
    bundle's file name never reaches a command line as anything but a plain word."""
    name = source.name
    for ext in (".tar.gz", ".tgz"):
        if name.endswith(ext):
            name = name[: -len(ext)]
            break
    else:
        name += "-analysis"
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "bundle"
    return source.with_name(name)


def unpack(source: Path, out: Path, max_members: int = MAX_MEMBERS, max_bytes: int = MAX_TOTAL_BYTES
           ) -> dict[str, str] | None:
    """source (bundle, unpacked bundle or results directory) -> out, a new results directory, verified.
    Returns the bundle's checksums (None for a results directory). Refused: out removed, if made here."""
    if out.exists() or out.is_symlink():
        raise BundleError(f"{out} exists: analyse never writes over a directory. Fix: remove it, or give "
                          f"--out a new directory")
    if source.is_file():
        return unpack_archive(source, out, max_members, max_bytes)
    if not source.is_dir():
        raise BundleError(f"{source}: no such bundle or results directory. Fix: give a bundle (.tar.gz), an "
                          f"unpacked bundle or a results directory")
    if (source / SUMS).exists():
        # an unpacked bundle: checked where it is, then copied (the source is never written)
        sums = verify(source, max_members, max_bytes, _existing_parent(out))
        files = [(source / name, name, os.lstat(source / name).st_size, digest)
                 for name, digest in [(SUMS, None), *sums.items()]]
    else:
        # a results directory: its finished runs and their tables, pcaps included where they are
        sums, (_, found) = None, contents(source, pcaps=True)
        files = [(src, arc, os.lstat(src).st_size, None) for src, arc in found]
        _check_list(str(source), {arc: size for _, arc, size, _ in files}, set(), None,
                    max_members, max_bytes, _existing_parent(out))
    made = _new_top(out)
    out.mkdir(parents=True)
    try:
        for src, arc, size, digest in files:
            with os.fdopen(os.open(src, os.O_RDONLY | os.O_NOFOLLOW), "rb") as f:
                _copy_checked(f, out, arc, size, digest)
    except BaseException:
        shutil.rmtree(made)
        raise
    return sums


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
    made = _new_top(out)
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
        # one line, whatever a hostile name held
        print(f"favorlab {args.cmd}: {e}".replace("\n", "\\n").replace("\r", "\\r"), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
