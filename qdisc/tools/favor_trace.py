#!/usr/bin/env python3
"""Record sch_favor's per-packet verdicts (tracepoint favor:favor_enqueue) into a CSV.

    python3 favor_trace.py --out FILE.csv [--dev rl-eth1] [--tracefs /sys/kernel/tracing] [--raw]
                           [--expect-events N]
    python3 favor_trace.py --csv RAW_FILE --out FILE.csv        # a raw trace (--raw) as the CSV below

Runs on the testbed host as root, started by testbed/runner/favortrace.py, stopped with SIGINT or
SIGTERM: it then drains what the kernel still holds, writes a final "# lost_events=N" comment
(events the ring buffer overwrote; 0 means the trace is complete), closes the file and removes
its tracefs instance. It uses its own tracefs instance (instances/favorlab-<pid>) so it does not
disturb other tracing, and filters on the device in the kernel.

CSV columns: t (unix time, s), dev, verdict (favored, standard, pushout_victim, drop_favored,
drop_standard), src, dst (address strings, empty for non-IP), sport, dport, proto (IP protocol
number, 6 = TCP), qlen (queue length after the verdict). A push-out gives two rows: the victim's
pushout_victim row (its own flow key), then the arrival's favored row.

With --raw the file holds the events as the kernel formats them, unparsed: a first line "# favor_trace raw
offset=S" (S turns the trace's monotonic stamps into unix time), one trace_pipe line per event, and the final
"# lost_events=N". The runner records that way: parsing is Python's work per event, seconds of an emulated
guest's time after every traced run, and the analysis parses the raw file where it runs (read_raw).
Python standard library only (it runs in the guest).
"""
import argparse
import csv
import errno
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COLUMNS = ["t", "dev", "verdict", "src", "dst", "sport", "dport", "proto", "qlen"]
VERDICTS = ["favored", "standard", "pushout_victim", "drop_favored", "drop_standard"]   # favor_trace.h's names
EVENT = "favor/favor_enqueue"
LINE = re.compile(r"\s(\d+\.\d+):\s+favor_enqueue:\s+(.*)$")
FIELD = re.compile(r"(\w+)=(\S*)")


def find_tracefs(given=None) -> Path:
    cands = [Path(given)] if given else [Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing")]
    for p in cands:
        if (p / "instances").is_dir():
            return p
    p = cands[0]
    r = subprocess.run(["mount", "-t", "tracefs", "nodev", str(p)], capture_output=True, text=True)
    if (p / "instances").is_dir():
        return p
    sys.exit(f"favor_trace: no tracefs at {p} and mounting it failed ({r.stderr.strip()}); "
             "run as root on a kernel with CONFIG_TRACING")


def parse(line: str, offset: float):
    """One trace_pipe line -> CSV row (list), or None if it is not a favor_enqueue event."""
    m = LINE.search(line)
    if not m:
        return None
    f = dict(FIELD.findall(m.group(2)))
    return [f"{float(m.group(1)) + offset:.6f}", f.get("dev", ""), f.get("verdict", ""), f.get("src", ""),
            f.get("dst", ""), f.get("sport", ""), f.get("dport", ""), f.get("proto", ""), f.get("qlen", "")]


RAW_HEADER = "# favor_trace raw offset="


def read_raw(path):
    """The CSV rows (COLUMNS) of a trace recorded with --raw, in file order (time order); its comment lines
    (the header, the final "# lost_events=N") are not events."""
    with open(path, errors="replace") as f:
        first = f.readline()
        if not first.startswith(RAW_HEADER):
            raise ValueError(f"{path}: not a raw favor trace (its first line is not {RAW_HEADER!r}...)")
        offset = float(first[len(RAW_HEADER):])
        for line in f:
            row = parse(line, offset)
            if row:
                yield row


def lost_events(inst: Path) -> int:
    n = 0
    for st in inst.glob("per_cpu/cpu*/stats"):
        m = re.search(r"^overrun:\s*(\d+)", st.read_text(), re.M)
        n += int(m.group(1)) if m else 0
    return n


def record_cmd_off(root: Path) -> Path | None:
    """Turn tracefs' global record-cmd option off; returns the option's file when it was on (to turn it back
    on), else None. A new instance copies the global options when it is made (trace_array_create), and
    record-cmd cannot be changed inside an instance, so the recorder turns it off for the moment its
    instance is made, then back on: the instance records without task names and the host's option is
    as it was.

    With record-cmd on, enabling an event also hooks sched_switch and sched_wakeup to remember task names,
    and disabling it unhooks them. The CSV never uses task names. Hooking and unhooking live-patch the
    scheduler's code while every CPU runs it, and in the TCG guest that patching has hung the whole guest:
    one vCPU stuck in __schedule on the instruction being patched, the other waiting for it forever in
    text_poke_bp (the serial console shows it; docs/measurements.md, "Checks behind code comments"). Without
    it only favor_enqueue's own call sites are patched, and they are idle when the recorder starts and
    stops (before the traffic and after it)."""
    opt = root / "options" / "record-cmd"
    try:
        if opt.read_text().strip() != "1":
            return None
        opt.write_text("0")
    except OSError:
        return None
    return opt


def restore(opt: Path | None) -> None:
    if opt:
        try:
            opt.write_text("1")
        except OSError:
            pass


# The ring buffer's own framing (kernel/trace/ring_buffer.c): an event is a 4-byte header and its entry rounded up
# to 4 bytes; an entry longer than 112 bytes (RB_MAX_SMALL_DATA) takes one more 4-byte word for its length. A
# page of 4096 bytes starts with a 16-byte header (time stamp and commit).
RB_EVENT_HEADER = 4
RB_MAX_SMALL_DATA = 112
PAGE, PAGE_HEADER = 4096, 16
DEFAULT_BUFFER_KB = 16384
MEMORY_SHARE = 0.25        # the trace buffers of all CPUs together take at most this share of the memory


def event_bytes(format_text: str) -> int:
    """Bytes one event takes in the ring buffer, from the event's tracefs format file (its fields' offsets
    and sizes give the entry's length)."""
    entry = max(int(o) + int(z) for o, z in re.findall(r"offset:(\d+);\s*size:(\d+);", format_text))
    entry = -(-entry // 4) * 4
    return RB_EVENT_HEADER + (4 if entry > RB_MAX_SMALL_DATA else 0) + entry


def buffer_kb_for(expect_events: int, per_event: int, mem_total_kb: int, cpus: int) -> int:
    """The per-CPU buffer that holds the run's expected events twice over (the recorder copies the buffer out
    when it is half full, and that copy is what this sizing avoids: the kernel formats every event copied,
    seconds of CPU inside the measured window), at least the default, at most MEMORY_SHARE of the memory over
    all CPUs. Every CPU gets that size, as the events of a run may all land on one CPU."""
    want = -(-2 * expect_events * per_event * PAGE // (PAGE - PAGE_HEADER) // 1024)
    cap = int(mem_total_kb * MEMORY_SHARE / max(1, cpus))
    return max(DEFAULT_BUFFER_KB, min(want, cap))


def set_buffer_kb(inst: Path, kb: int) -> int:
    """Write the per-CPU buffer size; where the kernel cannot allocate it (ENOMEM), halve it down to the
    default. Returns the size set."""
    while True:
        try:
            (inst / "buffer_size_kb").write_text(str(kb))
            return kb
        except OSError as e:
            if e.errno != errno.ENOMEM or kb <= DEFAULT_BUFFER_KB:
                raise
            kb = max(DEFAULT_BUFFER_KB, kb // 2)


def mem_total_kb() -> int:
    m = re.search(r"^MemTotal:\s*(\d+) kB", Path("/proc/meminfo").read_text(), re.M)
    return int(m.group(1))


def buffer_fill(inst: Path) -> float:
    """The fullest per-CPU ring buffer's share of its size (per_cpu/cpu*/stats 'bytes:')."""
    size = int((inst / "buffer_size_kb").read_text().split()[0]) * 1024
    fill = 0
    for st in inst.glob("per_cpu/cpu*/stats"):
        m = re.search(r"^bytes:\s*(\d+)", st.read_text(), re.M)
        fill = max(fill, int(m.group(1)) if m else 0)
    return fill / size if size else 1.0


def drain(fd: int, spool) -> None:
    """Copy what trace_pipe holds now into the spool file, unparsed."""
    while True:
        try:
            chunk = os.read(fd, 1 << 20)
        except BlockingIOError:
            return
        except InterruptedError:
            continue
        if not chunk:
            return
        spool.write(chunk)


def to_csv(raw: str, out: str) -> None:
    """A raw trace (--raw) written as the CSV, its last line kept when it is the recorder's lost_events."""
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        w.writerows(read_raw(raw))
        with open(raw, "rb") as r:
            r.seek(max(0, os.path.getsize(raw) - 200))
            last = r.read().decode(errors="replace").rstrip("\n").rpartition("\n")[2]
        if last.startswith("# lost_events="):
            f.write(last + "\n")


def write_spool(spool, out, raw: bool, offset: float) -> int:
    """The events drained so far into the output file: copied as they are (raw), or parsed into CSV rows.
    Returns the number of events."""
    spool.seek(0)
    if raw:
        out.write(f"{RAW_HEADER}{offset!r}\n")
        n = 0
        for chunk in iter(lambda: spool.read(1 << 20), b""):
            out.write(chunk.decode(errors="replace"))
            n += chunk.count(b"favor_enqueue:")
        return n
    w = csv.writer(out)
    w.writerow(COLUMNS)
    n = 0
    for line in spool:
        row = parse(line.decode(errors="replace"), offset)
        if row:
            w.writerow(row)
            n += 1
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="file to write: the CSV, or with --raw the unparsed trace")
    ap.add_argument("--raw", action="store_true", help="write the events unparsed (see above); the analysis "
                                                       "parses them")
    ap.add_argument("--csv", metavar="RAW", help="convert this raw trace into the CSV at --out, and exit")
    ap.add_argument("--dev", help="only this device (filtered in the kernel)")
    ap.add_argument("--tracefs", help="tracefs mount point (default /sys/kernel/tracing, mounted if needed)")
    ap.add_argument("--buffer-kb", type=int, help=f"per-CPU ring buffer (default {DEFAULT_BUFFER_KB} KiB, or sized "
                                                  "by --expect-events)")
    ap.add_argument("--expect-events", type=int, default=0,
                    help="events the run may record at most: the buffer is sized to hold them twice over, so that "
                         "nothing is copied out while the run is measured (buffer_kb_for)")
    ap.add_argument("--poll-s", type=float, default=1.0, help="how often the buffer's fill is checked (s)")
    a = ap.parse_args()
    if a.csv:
        to_csv(a.csv, a.out)
        return

    root = find_tracefs(a.tracefs)
    if not (root / "events" / EVENT).is_dir():
        sys.exit(f"favor_trace: {root}/events/{EVENT} missing: load the module first (modprobe sch_favor)")
    inst = root / "instances" / f"favorlab-{os.getpid()}"
    record_cmd = record_cmd_off(root)
    try:
        inst.mkdir()                                      # made without record-cmd (see record_cmd_off)
    finally:
        restore(record_cmd)
    stop = []
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, lambda *_: stop.append(1))
    out = open(a.out, "w", newline="")
    rows, fd = 0, None
    try:
        per_event = event_bytes((root / "events" / EVENT / "format").read_text())
        kb = a.buffer_kb or buffer_kb_for(a.expect_events, per_event, mem_total_kb(), os.cpu_count() or 1)
        kb = set_buffer_kb(inst, kb)
        clocks = (inst / "trace_clock").read_text()
        if "mono" in clocks.replace("[", " ").replace("]", " ").split():
            (inst / "trace_clock").write_text("mono")
            offset = time.time() - time.monotonic()      # trace timestamps -> unix time
        else:
            offset = 0.0
        ev = inst / "events" / EVENT
        if a.dev:
            (ev / "filter").write_text(f'dev == "{a.dev}"')
        (ev / "enable").write_text("1")
        (inst / "tracing_on").write_text("1")
        print(f"favor_trace: recording {EVENT} (dev {a.dev or 'any'}) into {a.out}; {kb} KiB per CPU, "
              f"{per_event} bytes per event", flush=True)
        fd = os.open(inst / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
        # The events stay in the kernel's ring buffer while the run is measured: reading trace_pipe makes the
        # kernel format every event as text, and parsing it costs Python more again (together 16-19 % of
        # the TCG guest's CPU at load 0.75-0.95 in quick's FaQ runs; docs/measurements.md). The buffer is
        # copied out unparsed only when one CPU's buffer is half full (a run longer or faster than
        # --expect-events said), and parsed after the stop signal, outside the measured window.
        with tempfile.TemporaryFile() as spool:
            while not stop:
                time.sleep(a.poll_s)
                if buffer_fill(inst) >= 0.5:
                    drain(fd, spool)
            try:
                (ev / "enable").write_text("0")          # nothing new; read what is left
            except FileNotFoundError:
                # sch_favor was unloaded while recording: its events went with it, what was recorded stays
                print("favor_trace: sch_favor was unloaded while recording; its events end there", flush=True)
            t_stop, during = time.monotonic(), spool.tell()
            drain(fd, spool)
            os.close(fd)
            fd = None
            t_drained = time.monotonic()
            rows = write_spool(spool, out, a.raw, offset)
        lost = lost_events(inst)
        out.write(f"# lost_events={lost}\n")
        print(f"favor_trace: {rows} events written{' unparsed' if a.raw else ''}, {lost} lost; "
              f"{during} bytes copied out during the run; after the stop "
              f"{t_drained - t_stop:.2f} s reading the kernel's buffer, {time.monotonic() - t_drained:.2f} s "
              "writing", flush=True)
    finally:
        out.close()
        if fd is not None:                                # an open trace_pipe keeps the instance busy
            os.close(fd)
        try:
            (inst / "events" / EVENT / "enable").write_text("0")
        except OSError:
            pass
        for _ in range(50):                               # rmdir fails while the pipe is busy
            try:
                inst.rmdir()
                break
            except OSError as e:
                if e.errno != errno.EBUSY:
                    break
                time.sleep(0.1)


if __name__ == "__main__":
    main()
