"""Unpacking a results bundle that came from someone else, or verifying one unpacked where it lies.

Every member of an archive is read and checked (orchestrate.bundle_layout) before anything is written;
every file is then created new (O_EXCL, O_NOFOLLOW) under the output directory and its checksum compared
while it is written. A refusal removes what was made, so nothing is left where nothing was.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import tarfile
import zlib
from pathlib import Path

from orchestrate.bundle_layout import (DAMAGED, MAX_LIST_BYTES, MAX_MEMBER_BYTES, MAX_MEMBERS, MAX_TOTAL_BYTES,
                                       NOT_OURS, PART, SUMS, BundleError, check_list, check_name, contents, derived,
                                       human, parse_sums, sha256_file, walk)


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
            raise BundleError(f"{where}: member {name!r} declares {human(m.size)}, above the cap of "
                              f"{human(MAX_MEMBER_BYTES)} for one file; {NOT_OURS}")
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
        raise BundleError(f"{where}: its {what} declares {human(m.size)}, above {human(MAX_LIST_BYTES)}; {NOT_OURS}")
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
        check_list(str(source), {k: m.size for k, m in files.items()}, dirs, sums, max_members, max_bytes,
                    existing_parent(out))
        made = new_top(out)
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


def new_top(out: Path) -> Path:
    """The outermost directory that making out will create (out itself, or a missing parent of it): what a
    refusal removes, so that nothing is left where nothing was."""
    while not out.parent.exists():
        out = out.parent
    return out


def existing_parent(p: Path) -> Path:
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
    all_files, all_dirs = walk(root)
    files = {f: os.lstat(root / f).st_size for f in all_files if not derived(f)}
    dirs = {d for d in all_dirs if not derived(d)}
    for f in files:
        check_name(f)
    for d in dirs:
        check_name(d, is_dir=True)
    if files[SUMS] > MAX_LIST_BYTES:
        raise BundleError(f"{root}: its {SUMS} is {human(files[SUMS])}, above {human(MAX_LIST_BYTES)}; {NOT_OURS}")
    sums = parse_sums(sums_path.read_bytes(), str(root))
    check_list(str(root), files, dirs, sums, max_members, max_bytes, free_under)
    for name, digest in sums.items():
        if sha256_file(root / name) != digest:
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
        sums = verify(source, max_members, max_bytes, existing_parent(out))
        files = [(source / name, name, os.lstat(source / name).st_size, digest)
                 for name, digest in [(SUMS, None), *sums.items()]]
    else:
        # a results directory: its finished runs and their tables, pcaps included where they are
        sums, (_, found) = None, contents(source, pcaps=True)
        files = [(src, arc, os.lstat(src).st_size, None) for src, arc in found]
        check_list(str(source), {arc: size for _, arc, size, _ in files}, set(), None,
                    max_members, max_bytes, existing_parent(out))
    made = new_top(out)
    out.mkdir(parents=True)
    try:
        for src, arc, size, digest in files:
            with os.fdopen(os.open(src, os.O_RDONLY | os.O_NOFOLLOW), "rb") as f:
                _copy_checked(f, out, arc, size, digest)
    except BaseException:
        shutil.rmtree(made)
        raise
    return sums
