"""Bookkeeping files (state, records, inventories) written whole or not at all, and read back without
failing forever on one that a crash left empty or cut short.

    write_text(path, text)     temp file in the same directory, fsync, os.replace, fsync of the directory
    write_json(path, value)    the same with json.dumps(value) + newline
    read_json(path, default)   the parsed file; `default` when it is missing, and `default` with a
                               warning when it is empty or not JSON (the caller decides where that is safe)

A reader sees the old file or the new one, never a mixture: os.replace is atomic within one filesystem,
hence the temp file beside the target, and the fsyncs make a power cut leave one of the two too.

Standard library only: testbed/vm/favorvm imports it and runs as root before the venv exists.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path


def _warn(msg: str) -> None:
    print(f"favorlab: warning: {msg}", file=sys.stderr, flush=True)


def _fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:          # a filesystem that cannot open directories: the rename itself still holds
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_text(path: str | Path, text: str, mode: int | None = None) -> Path:
    """Replace `path` with `text` atomically. mode: the file's permissions (default: the existing file's,
    else 0644: mkstemp's 0600 would make a state file unreadable to a user that could read it before)."""
    path = Path(path)
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except OSError:
            mode = 0o644
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    return path


def write_json(path: str | Path, value, indent: int | None = None, mode: int | None = None) -> Path:
    return write_text(path, json.dumps(value, indent=indent) + "\n", mode=mode)


def read_json(path: str | Path, default=None, what: str = "", warn=_warn):
    """The JSON in `path`; `default` when the file does not exist; `default` and a warning naming the file
    when it is empty, cut short or not JSON (what: how the caller then treats it, for the warning)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return default
    try:
        text = raw.decode()
        if not text.strip():
            raise ValueError("empty")
        return json.loads(text)
    except ValueError as e:
        warn(f"{path} is {'empty' if str(e) == 'empty' else f'not valid JSON ({e})'}: "
             f"{what or 'treated as absent'}")
        return default
