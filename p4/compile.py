"""Compile favorlab's P4 programs: `python3 -m p4.compile [favorqueue droptail]` -> p4/build/<name>.json.
Prints `compiled NAME` or `up to date NAME` per program (Ansible's changed_when reads it)."""
from __future__ import annotations

import sys

from p4 import control, switch


def main(argv: list[str]) -> int:
    for name in argv or list(control.PROGRAMS):
        out = switch.BUILD_DIR / f"{name}.json"
        before = out.stat().st_mtime if out.is_file() else None
        path = switch.compile_program(name)
        print(f"{'up to date' if before == path.stat().st_mtime else 'compiled'} {name} -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
