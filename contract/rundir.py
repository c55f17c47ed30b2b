"""The run directory (docs/contracts.md, "Run directory"): its file names and small readers.

The runner writes results/<config>/runs/<run_id>/ on a testbed host, the controller brings it back and adds
its own bookkeeping, the analysis and the bundle read it; every one of them names the files from here.
"""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

# The pipeline's run ids: <scenario and topology>_<aqm>_load<load>_iw<iw>_rep<n>. The Snakemake wildcard
# constraint (workflow/rules/common.smk) imports this, analysis/R/load.R holds the same pattern (a test holds
# the two equal), and a bundle's runs/ and tables/ directories must match it: no space, no shell
# metacharacter, no path separator, never '.' or '..'.
# Each field: what comes before it and what it may hold.
RUN_ID_PARTS = (("scenario", "", r"[A-Za-z0-9.-]+"), ("aqm", "_", r"[a-z0-9_-]+"), ("load", "_load", r"[0-9.]+"),
                ("iw", "_iw", r"[0-9]+"), ("rep", "_rep", r"[0-9]+"))
RUN_ID_PATTERN = "".join(before + chars for _, before, chars in RUN_ID_PARTS)
RUN_ID = re.compile(RUN_ID_PATTERN)
# The same pattern with its fields named, for readers that need a field of an id (the AQM of a bundle's run,
# which has no config).
RUN_ID_FIELDS = re.compile("".join(f"{before}(?P<{name}>{chars})" for name, before, chars in RUN_ID_PARTS))


def run_id_fields(run_id: str) -> dict[str, str]:
    """scenario, aqm, load, iw and rep of a run id; ValueError naming the id when it is none."""
    m = RUN_ID_FIELDS.fullmatch(run_id)
    if not m:
        raise ValueError(f"{run_id!r} is not a run id (<scenario>_<aqm>_load<load>_iw<iw>_rep<n>)")
    return m.groupdict()


# The analysis's run list (RESULTS/analysis-runs.txt): the run ids a config's or a bundle's analysis reads,
# one a line (analysis/R/load.R reads the same file).
RUN_LIST = "analysis-runs.txt"


def write_run_list(path: Path, run_ids) -> bool:
    """The run list at path, written only when it differs from what the file holds, so that its mtime says
    when the list last changed (the pipeline marks what it feeds stale by it); True when written."""
    text = "".join(f"{r}\n" for r in run_ids)
    path = Path(path)
    if path.is_file() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return True


def read_run_list(path) -> list[str]:
    """The run ids of a run list, in its order."""
    return [line.strip() for line in Path(path).read_text().splitlines() if line.strip()]


# written by the runner
SPEC = "run.json"
SCHEDULE = "schedule.csv"
MANIFEST = "manifest.json"
FIDELITY = "fidelity.json"
HOSTS = "hosts.json"
CPU = "cpu.json"
RUNNER_LOG = "log/runner.log"
PCAP_DIR = "pcap"
# sch_favor's per-packet verdicts (qdisc/tools/favor_trace.py): the runner records them unparsed (its --raw),
# the analysis parses them; runs made before that hold the CSV
FAVOR_TRACE = "qdisc/favor-trace.txt"
FAVOR_TRACE_CSV = "qdisc/favor-trace.csv"
PERSISTENT_PLAN = "persistent/plan.json"  # the persistent flows: groups of iperf3 streams, their hosts and start
DONE = "DONE"               # written last: a directory without it is no run
PARTIAL = ".partial"        # <run_id>.partial/ while the run is made, renamed to <run_id>/ when complete
# The manifest's phases_s: seconds per phase of the run, in order; this one is the traffic and its drain,
# every other phase (of the runner and of the controller, in controller.json) is overhead around it
TRAFFIC_PHASE = "traffic and drain"


class Phases:
    """The seconds of each phase, in order (phases_s), for the runner and the controller alike: a mark ends
    the phase under way and begins the next (None ends it only), so marks at each step's start time a
    whole sequence without nesting; a phase entered twice adds up.

    `counters`, when given, reads numbers that only grow ({name: value}, such as the CPU time spent and the
    forks made so far); each phase then also gets what they grew by during it (`work`)."""

    def __init__(self, counters=None):
        self.s: dict[str, float] = {}
        self.work: dict[str, dict[str, float]] = {}
        self._counters = counters
        self._at: tuple[str, float, dict] | None = None

    def mark(self, name: str | None) -> None:
        now = time.monotonic()
        read = self._counters() if self._counters else {}
        if self._at is not None:
            done, since, before = self._at
            self.s[done] = round(self.s.get(done, 0.0) + now - since, 2)
            if read:
                acc = self.work.setdefault(done, {})
                for k, v in read.items():
                    acc[k] = round(acc.get(k, 0) + v - before.get(k, v), 2)
        self._at = (name, now, read) if name else None


# written by the controller (orchestrate.remote, then orchestrate.run_step): the attempt's wall time and
# its phases_s (the controller's own, then the runner's from the manifest)
CONTROLLER = "controller.json"
ATTEMPTS = "attempts.json"
ATTEMPTS_DIR = "attempts"
CONTROLLER_LOG = "controller.log"
# what extraction writes per run under tables/<run_id>/
TABLE_FILES = ("flows.csv", "run.csv", "persistent.csv", "packets.csv.gz")


class RunDirError(ValueError):
    """A run directory's file that is missing or not what its writer writes; the message names the file."""


def partial_of(run_dir: Path) -> Path:
    """Where a run is made before it is complete: <run_dir>.partial beside it."""
    return run_dir.with_name(run_dir.name + PARTIAL)


def is_finished(run_dir: Path) -> bool:
    """A finished run: a directory (not a symlink, not <run_id>.partial) holding the file DONE."""
    run_dir = Path(run_dir)
    done = run_dir / DONE
    return (run_dir.is_dir() and not run_dir.is_symlink() and not run_dir.name.endswith(PARTIAL)
            and done.is_file() and not done.is_symlink())


_NO_DEFAULT = object()


def read_json(run_dir: Path, name: str, default=_NO_DEFAULT):
    """The JSON file `name` of a run directory; default when it does not exist (RunDirError without one),
    RunDirError when it cannot be read or parsed."""
    path = Path(run_dir) / name
    try:
        text = path.read_text()
    except FileNotFoundError:
        if default is not _NO_DEFAULT:
            return default
        raise RunDirError(f"{path}: missing from the run directory") from None
    except (OSError, UnicodeDecodeError) as e:
        raise RunDirError(f"{path}: cannot be read ({e})") from None
    try:
        return json.loads(text)
    except ValueError as e:
        raise RunDirError(f"{path}: not valid JSON ({e})") from None


def read_spec(run_dir: Path) -> dict:
    """run.json: the run spec the runner was given."""
    return read_json(run_dir, SPEC)


def read_manifest(run_dir: Path, default=_NO_DEFAULT):
    return read_json(run_dir, MANIFEST, default)


def read_fidelity(run_dir: Path, default=_NO_DEFAULT):
    return read_json(run_dir, FIDELITY, default)
