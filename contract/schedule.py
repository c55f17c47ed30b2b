"""The schedule file (docs/contracts.md, "Schedule file"): its columns, reader and writer. Standard library only.

The client on a testbed host reads schedules with this module, so it must not import numpy.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

COLUMNS = ("flow_id", "start_s", "size_bytes", "size_pkts", "src", "dst", "direction", "kind")
DIRECTIONS = ("forward", "reverse")
HEADER_BYTES = 16  # flow id + size, big-endian u64 each (the flow protocol's header)


class ScheduleError(ValueError):
    """A schedule file that does not follow the contract; the message names the line and the fix."""


@dataclass(frozen=True)
class Flow:
    flow_id: int
    start_s: float
    size_bytes: int
    size_pkts: int
    src: str
    dst: str
    direction: str
    kind: str

    def row(self) -> list:
        return [self.flow_id, f"{self.start_s:.6f}", self.size_bytes, self.size_pkts, self.src, self.dst,
                self.direction, self.kind]


def format_schedule(meta: dict, flows: list[Flow]) -> str:
    """The file's text: `# key=value` comments (in meta's order), the header, one row per flow."""
    out = io.StringIO()
    for k, v in meta.items():
        if "\n" in f"{k}{v}" or "=" in str(k):
            raise ScheduleError(f"metadata key {k!r} / value {v!r} cannot hold '=' in the key or a newline")
        out.write(f"# {k}={v}\n")
    w = csv.writer(out, lineterminator="\n")
    w.writerow(COLUMNS)
    for f in flows:
        w.writerow(f.row())
    return out.getvalue()


def write_schedule(path: str | Path, meta: dict, flows: list[Flow]) -> None:
    Path(path).write_text(format_schedule(meta, flows))


def _parse_row(path, lineno: int, r: dict) -> Flow:
    def field(name, conv):
        try:
            return conv(r[name])
        except (TypeError, ValueError):
            raise ScheduleError(f"{path}:{lineno}: column {name} = {r[name]!r} is not a valid "
                                f"{conv.__name__}; regenerate the schedule with python -m orchestrate.schedule")
    f = Flow(field("flow_id", int), field("start_s", float), field("size_bytes", int), field("size_pkts", int),
             r["src"] or "", r["dst"] or "", r["direction"] or "", r["kind"] or "")
    problems = []
    if f.flow_id < 0:
        problems.append("flow_id must be >= 0")
    if not f.start_s >= 0:
        problems.append("start_s must be >= 0")
    if f.size_bytes < HEADER_BYTES:
        problems.append(f"size_bytes must be >= {HEADER_BYTES} (the flow header)")
    if f.size_pkts < 1:
        problems.append("size_pkts must be >= 1")
    if not f.src or not f.dst:
        problems.append("src and dst must name hosts")
    if f.direction not in DIRECTIONS:
        problems.append(f"direction must be one of {DIRECTIONS}")
    if not f.kind:
        problems.append("kind must not be empty")
    if problems:
        raise ScheduleError(f"{path}:{lineno}: " + "; ".join(problems))
    return f


def read_schedule(path: str | Path) -> tuple[dict, list[Flow]]:
    """(meta, flows) from a schedule file, validated: columns, types, unique flow ids, rows sorted by start_s.

    meta holds the `# key=value` comment lines as strings.
    """
    path = Path(path)
    if not path.is_file():
        raise ScheduleError(f"{path}: no such schedule file (make one with python -m orchestrate.schedule)")
    meta, body, lineno0 = {}, [], None
    with path.open(newline="") as fh:
        for n, line in enumerate(fh, 1):
            if line.startswith("#"):
                k, sep, v = line[1:].strip().partition("=")
                if sep:
                    meta[k.strip()] = v.strip()
                continue
            if lineno0 is None:
                lineno0 = n
            body.append(line)
    if not body:
        raise ScheduleError(f"{path}: no header line; expected {','.join(COLUMNS)}")
    rows = csv.DictReader(body)
    missing = [c for c in COLUMNS if c not in (rows.fieldnames or [])]
    if missing:
        raise ScheduleError(f"{path}:{lineno0}: header lacks columns {missing}; expected {','.join(COLUMNS)}")
    flows, seen, last = [], set(), 0.0
    for i, r in enumerate(rows):
        lineno = lineno0 + 1 + i
        if None in r or any(r[c] is None for c in COLUMNS):
            raise ScheduleError(f"{path}:{lineno}: expected {len(COLUMNS)} columns, got a different count")
        f = _parse_row(path, lineno, r)
        if f.flow_id in seen:
            raise ScheduleError(f"{path}:{lineno}: flow_id {f.flow_id} appears twice; flow ids must be unique")
        if f.start_s < last:
            raise ScheduleError(f"{path}:{lineno}: start_s {f.start_s} is before the previous row's {last}; "
                                "rows must be sorted by start_s")
        seen.add(f.flow_id)
        last = f.start_s
        flows.append(f)
    return meta, flows
