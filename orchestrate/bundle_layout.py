"""What a results bundle may hold (docs/contracts.md, "Results bundle"): its layout, names and caps.

A bundle comes from someone else, so every name is held to a strict allow-list before anything is written:
runs/<run_id>/..., tables/<run_id>/<table>, config/<file>, BUNDLE.json, SHA256SUMS, run ids as the
pipeline's wildcard constraint has them (contract.rundir); only regular files and directories; the member
count and total size capped. What analyse makes itself (figures/, logs/, verdict.csv, report.html,
Snakemake's stamps) is never taken from a bundle. Packing (orchestrate.bundle) and unpacking
(orchestrate.bundle_unpack) both check what they handle here.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import sys
from pathlib import Path

from contract import rundir
from contract.rundir import PCAP_DIR, RUN_ID, RUN_ID_PATTERN, TABLE_FILES

SUMS = "SHA256SUMS"
INFO = "BUNDLE.json"
# Snakemake's stamp of a directory output: bookkeeping of the pipeline that made the run, not a result
SKIP = {".snakemake_timestamp"}
# what `analyse` makes in the directory it analyses (workflow/rules/analysis.smk's outputs): never in a
# bundle, always made afresh. An unpacked bundle analysed before holds them beside its bundled files; they
# are left where they are and not copied.
ANALYSIS_OUTPUTS = ("figures", "logs", "verdict.csv", "report.html", rundir.RUN_LIST)

# One path component inside a run directory: what the runner and the controller write (contracts.md, "Run
# directory": run.json, flows/client-a1.csv, attempts/2/pcap/bneck-in.pcap, ...). Never hidden, never '..'.
PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
# the config file a bundle carries (config/<file>): a plain YAML file name
CONFIG_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\.ya?ml")
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


def refuse(cmd: str, e: Exception) -> int:
    """The error on one line, whatever a hostile name in it held; the exit status of a refused input."""
    print(f"favorlab {cmd}: {e}".replace("\n", "\\n").replace("\r", "\\r"), file=sys.stderr)
    return 2


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def human(n: int) -> str:
    for unit in ["B", "KiB", "MiB", "GiB"]:
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


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


def walk(root: Path) -> tuple[list[str], list[str]]:
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


def files_under(root: Path) -> list[Path]:
    """Every regular file under root, relative, sorted (archives and checksum lists in a fixed order);
    refuses symlinks and special files, skips Snakemake's stamps."""
    return [Path(f) for f in walk(root)[0] if Path(f).name not in SKIP]


def finished_runs(results: Path) -> tuple[list[str], list[str]]:
    """(finished, incomplete) run ids of results/runs: a run is finished when its directory has DONE and
    is not the runner's <run_id>.partial (testbed.smk). Symlinks are never followed."""
    rdir = results / "runs"
    if not rdir.is_dir() or rdir.is_symlink():
        return [], []
    done, partial = [], []
    for d in sorted(rdir.iterdir()):
        if d.is_dir() and not d.is_symlink():
            (done if rundir.is_finished(d) else partial).append(d.name)
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
        for rel in files_under(src):
            # the run's captures, and its earlier attempts' (attempts/<n>/pcap/)
            if pcaps or PCAP_DIR not in rel.parts[:-1]:
                files.append((src / rel, f"runs/{rid}/{rel.as_posix()}"))
        tdir = results / "tables" / rid
        if tdir.is_dir() and not tdir.is_symlink():
            files += [(tdir / rel, f"tables/{rid}/{rel.as_posix()}") for rel in files_under(tdir)]
    for _, name in files:
        check_name(name)
    return done, files


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


def check_list(where: str, files: dict[str, int], dirs: set[str], sums: dict[str, str] | None,
                max_members: int, max_bytes: int, free_under: Path | None) -> None:
    """The whole member list against the caps, the layout's shape and SHA256SUMS, before anything is written.
    files: name -> size; sums None for a results directory (no list to hold them to)."""
    if len(files) + len(dirs) > max_members:
        raise BundleError(f"{where}: too many members ({len(files) + len(dirs)}, the cap is {max_members}). "
                          f"Fix: if the bundle is genuine, raise the cap with --max-files")
    total = sum(files.values())
    if total > max_bytes:
        raise BundleError(f"{where}: its files total {human(total)}, above the cap of {human(max_bytes)}. "
                          f"Fix: if the bundle is genuine, raise the cap with --max-size")
    if free_under is not None:
        free = shutil.disk_usage(free_under).free
        if total + FREE_MARGIN > free:
            raise BundleError(f"{where}: its files total {human(total)} but {free_under} has {human(free)} free. "
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
