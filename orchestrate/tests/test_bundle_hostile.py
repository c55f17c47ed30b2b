"""A results bundle is someone else's: `./favorlab analyse` (orchestrate/bundle.py) refuses every crafted
bundle of this corpus with one line naming the problem, writes nothing outside --out (nor --out itself)
and runs nothing. The bundles are made here, in a tmp directory: tar.gz archives written member by member
with tarfile (which writes symlink, hard link, device, FIFO and sparse headers without root) and
directory sources (an unpacked bundle) made with os.symlink / os.mkfifo. Payloads in names try to
`touch` a canary file; it must never appear."""
import gzip
import hashlib
import io
import json
import os
import re
import tarfile
import time
from pathlib import Path

import pytest

from contract.rundir import RUN_ID_PATTERN
from orchestrate import bundle as bd
from orchestrate import bundle_layout as layout
from orchestrate import bundle_unpack

RID = "dumbbell-10M-buf8-pareto30-paper-reno_favor_load0.50_iw2_rep0"
TOP = "b"


def good_files() -> dict[str, bytes]:
    """A small bundle's files in the layout of docs/contracts.md (enough for the checks, which all come
    before any analysis)."""
    return {
        "BUNDLE.json": json.dumps({"name": TOP, "config": "b.yaml", "runs": [RID], "pcaps": False}).encode(),
        "config/b.yaml": b"name: b\n",
        f"runs/{RID}/DONE": b"",
        f"runs/{RID}/run.json": json.dumps({"run_id": RID, "schedule": "schedule.csv"}).encode(),
        f"runs/{RID}/fidelity.json": b'{"valid": true}',
        f"tables/{RID}/flows.csv": b"run_id,flow_id\n",
        f"tables/{RID}/run.csv": b"run_id\n",
    }


def sums_of(files: dict[str, bytes], extra: str = "") -> bytes:
    return ("".join(f"{hashlib.sha256(d).hexdigest()}  {n}\n" for n, d in files.items()) + extra).encode()


def _file(name, data=b"", **kw):
    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime, ti.mode = len(data), kw.pop("mtime", int(time.time())), 0o644
    for k, v in kw.items():
        setattr(ti, k, v)
    return ti, io.BytesIO(data)


def write_tar(path: Path, files: dict[str, bytes] | None = None, extra=(), sums: bytes | None = None,
              fmt=tarfile.PAX_FORMAT) -> Path:
    """A tar.gz of TOP/<files> with its SHA256SUMS (sums_of(files) unless given), then the extra members:
    (TarInfo, data or None) pairs, names as they are (not under TOP unless they say so)."""
    files = good_files() if files is None else files
    with tarfile.open(path, "w:gz", format=fmt) as t:
        t.addfile(*_file(f"{TOP}/SHA256SUMS", sums if sums is not None else sums_of(files)))
        for n, d in files.items():
            t.addfile(*_file(f"{TOP}/{n}", d))
        for ti, data in extra:
            t.addfile(ti, data)
    return path


def special(name, kind, target=""):
    ti = tarfile.TarInfo(name)
    ti.type = {"sym": tarfile.SYMTYPE, "lnk": tarfile.LNKTYPE, "chr": tarfile.CHRTYPE, "blk": tarfile.BLKTYPE,
               "fifo": tarfile.FIFOTYPE, "dir": tarfile.DIRTYPE}[kind]
    ti.linkname, ti.mode = target, 0o755
    if kind in ("chr", "blk"):
        ti.devmajor, ti.devminor = 1, 3
    return ti, None


def huge_member_gz(path: Path, declared: int) -> Path:
    """A tiny gzip whose one tar header declares a member of `declared` bytes (its data absent)."""
    ti = tarfile.TarInfo(f"{TOP}/runs/{RID}/pcap/bneck-in.pcap")
    ti.size = declared
    path.write_bytes(gzip.compress(ti.tobuf(tarfile.GNU_FORMAT) + b"\0" * 1024))
    return path


def sparse_tar(path: Path) -> Path:
    """A GNU sparse member (type 'S') whose real size is 1 TiB: a few hundred bytes on the wire."""
    ti = tarfile.TarInfo(f"{TOP}/runs/{RID}/pcap/bneck-in.pcap")
    ti.type, ti.size = tarfile.GNUTYPE_SPARSE, 0
    buf = bytearray(ti.tobuf(tarfile.GNU_FORMAT))
    # realsize (offset 483, 12 bytes octal) of the old GNU sparse header; fix the checksum after
    buf[483:495] = b"%011o\0" % (1 << 40)
    buf[148:156] = b" " * 8
    buf[148:156] = b"%06o\0 " % sum(buf[:512])
    path.write_bytes(gzip.compress(bytes(buf) + b"\0" * 1024))
    return path


def pax_sparse_tar(path: Path) -> Path:
    ti = tarfile.TarInfo(f"{TOP}/runs/{RID}/pcap/bneck-out.pcap")
    ti.pax_headers = {"GNU.sparse.size": str(1 << 40), "GNU.sparse.numblocks": "1",
                      "GNU.sparse.offset": "0", "GNU.sparse.numbytes": "1"}
    ti.size = 1
    return write_tar(path, extra=[(ti, io.BytesIO(b"x"))])


def write_dir(root: Path, files: dict[str, bytes] | None = None, sums: bytes | None = None) -> Path:
    files = good_files() if files is None else files
    for n, d in files.items():
        (root / n).parent.mkdir(parents=True, exist_ok=True)
        (root / n).write_bytes(d)
    (root / "SHA256SUMS").write_bytes(sums if sums is not None else sums_of(files))
    return root


def with_(**more) -> dict[str, bytes]:
    return {**good_files(), **{k.replace("__", "/"): v for k, v in more.items()}}


# ------------------------------------------------------------------ the corpus
# Each case: (id, keyword the one-line refusal must hold, make(tmp, canary) -> source path[, extra CLI args])

def _tar_cases():
    c = []

    def add(cid, keyword, make, args=()):
        c.append(pytest.param(make, keyword, args, id=cid))

    # traversal and absolute names, in members and in SHA256SUMS
    add("member-dotdot", "'..'", lambda t, k: write_tar(t / "x.tar.gz", extra=[_file(f"{TOP}/../escaped", b"x")]))
    add("member-deep-dotdot", "'..'", lambda t, k: write_tar(
        t / "x.tar.gz", extra=[_file(f"{TOP}/runs/{RID}/../../../../escaped", b"x")]))
    add("member-absolute", "absolute", lambda t, k: write_tar(t / "x.tar.gz", extra=[_file(f"{t}/abs-escaped", b"x")]))
    add("member-absolute-first", "absolute", lambda t, k: write_tar(
        t / "x.tar.gz", files={}, sums=b"", extra=[_file(f"{t}/abs-first", b"x")]))
    add("pax-path-absolute", "absolute", lambda t, k: write_tar(t / "x.tar.gz", extra=[
        _file(f"{TOP}/runs/{RID}/ok.json", b"x", pax_headers={"path": f"{t}/pax-escaped"})]))
    add("sums-dotdot", "'..'", lambda t, k: write_tar(
        t / "x.tar.gz", sums=sums_of(good_files(), f"{hashlib.sha256(b'secret').hexdigest()}  ../secret\n")))
    add("sums-absolute", "absolute", lambda t, k: write_tar(
        t / "x.tar.gz", sums=sums_of(good_files(), f"{hashlib.sha256(b'').hexdigest()}  /etc/passwd\n")))
    add("member-backslash", "backslash", lambda t, k: write_tar(
        t / "x.tar.gz", extra=[_file(f"{TOP}/runs/{RID}\\..\\..\\escaped", b"x")]))
    add("sums-backslash", "backslash", lambda t, k: write_tar(
        t / "x.tar.gz", sums=sums_of(good_files(), f"{hashlib.sha256(b'').hexdigest()}  runs\\..\\..\\x\n")))
    add("member-newline", "control character", lambda t, k: write_tar(
        t / "x.tar.gz", extra=[_file(f"{TOP}/runs/{RID}/a\nb", b"x")]))
    add("two-top-directories", "one top directory", lambda t, k: write_tar(
        t / "x.tar.gz", extra=[_file("other/escaped", b"x")]))
    # links and special files
    add("symlink-file-outside", "symlink", lambda t, k: write_tar(
        t / "x.tar.gz", extra=[special(f"{TOP}/runs/{RID}/manifest.json", "sym", "/etc/passwd")]))
    add("symlink-dir-inside", "symlink", lambda t, k: write_tar(
        t / "x.tar.gz", extra=[special(f"{TOP}/runs/{RID}/sub", "sym", "..")]))
    add("symlink-dir-then-write-through", "symlink", lambda t, k: write_tar(t / "x.tar.gz", extra=[
        special(f"{TOP}/runs/{RID}/out", "sym", str(t)), _file(f"{TOP}/runs/{RID}/out/through", b"x")]))
    add("hardlink-outside", "hard link", lambda t, k: write_tar(
        t / "x.tar.gz", extra=[special(f"{TOP}/runs/{RID}/manifest.json", "lnk", "/etc/passwd")]))
    add("hardlink-inside", "hard link", lambda t, k: write_tar(
        t / "x.tar.gz", extra=[special(f"{TOP}/runs/{RID}/copy.json", "lnk", f"{TOP}/runs/{RID}/run.json")]))
    add("char-device", "character device", lambda t, k: write_tar(
        t / "x.tar.gz", extra=[special(f"{TOP}/runs/{RID}/null", "chr")]))
    add("block-device", "block device", lambda t, k: write_tar(
        t / "x.tar.gz", extra=[special(f"{TOP}/runs/{RID}/disk", "blk")]))
    add("fifo", "FIFO", lambda t, k: write_tar(t / "x.tar.gz", extra=[special(f"{TOP}/runs/{RID}/pipe", "fifo")]))
    # sizes and counts
    add("gnu-sparse-1TiB", "sparse", lambda t, k: sparse_tar(t / "x.tar.gz"))
    add("pax-sparse", "sparse", lambda t, k: pax_sparse_tar(t / "x.tar.gz"))
    add("declares-1TiB", "declares", lambda t, k: huge_member_gz(t / "x.tar.gz", 1 << 40))
    add("total-over-cap", "above the cap", lambda t, k: write_tar(
        t / "x.tar.gz", files=with_(**{f"runs__{RID}__big.bin": b"\0" * 4096})), ("--max-size", str(2048 / (1 << 30))))
    add("too-many-members", "too many members", lambda t, k: write_tar(
        t / "x.tar.gz", files=with_(**{f"runs__{RID}__f{i}.json": b"{}" for i in range(40)})), ("--max-files", "20"))
    # shell metacharacters and spaces in every kind of name
    add("run-id-shell", "not a run id", lambda t, k: write_tar(
        t / "x.tar.gz", files=with_(**{f"runs__x; touch {k}; echo __DONE": b""})))
    add("table-dir-shell", "not a run id", lambda t, k: write_tar(
        t / "x.tar.gz", files=with_(**{f"tables__x; touch {k}; echo __run__run.csv": b"run_id\n"})))
    add("run-id-space", "not a run id", lambda t, k: write_tar(
        t / "x.tar.gz", files=with_(**{"runs__dumbbell a_favor_load0.50_iw2_rep0__DONE": b""})))
    add("config-name-shell", "not in the bundle layout", lambda t, k: write_tar(
        t / "x.tar.gz", files=with_(**{"config__q; touch CANARY.yaml": b"name: q\n"})))
    add("run-file-name-shell", "not in the bundle layout", lambda t, k: write_tar(
        t / "x.tar.gz", files=with_(**{f"runs__{RID}__$(touch CANARY).json": b"{}"})))
    add("top-dir-shell", "top directory", lambda t, k: _renamed_top(t / "x.tar.gz", f"b; touch {k.name}"))
    add("bundle-file-name-shell", "symlink", lambda t, k: write_tar(
        t / f"quick-bundle (1); touch {k.name}.tar.gz",
        extra=[special(f"{TOP}/runs/{RID}/manifest.json", "sym", "/etc/passwd")]))
    add("not-in-layout", "not in the bundle layout", lambda t, k: write_tar(
        t / "x.tar.gz", files=with_(**{"evil.sh": b"touch CANARY\n"})))
    add("table-not-a-table", "not in the bundle layout", lambda t, k: write_tar(
        t / "x.tar.gz", files=with_(**{f"tables__{RID}__x.sh": b"touch CANARY\n"})))
    # the analysis's own outputs shipped, dated in the future so that Snakemake would keep them
    future = int(time.time()) + 10 * 365 * 86400
    for cid, name in [("shipped-verdict", "verdict.csv"), ("shipped-report", "report.html"),
                      ("shipped-figures", "figures/F3.csv"), ("shipped-logs", "logs/figures.log"),
                      ("shipped-run-list", "analysis-runs.txt"),
                      ("shipped-snakemake-stamp", f"runs/{RID}/.snakemake_timestamp")]:
        add(cid, "derived output", lambda t, k, name=name: write_tar(
            t / "x.tar.gz", extra=[_file(f"{TOP}/{name}", b"claim,status\nC1,holds\n", mtime=future)]))
    add("shipped-verdict-listed", "derived output", lambda t, k: write_tar(
        t / "x.tar.gz", files=with_(**{"verdict.csv": b"claim,status\nC1,holds\n"})))
    # duplicates and clashes
    add("same-member-twice", "twice", lambda t, k: write_tar(
        t / "x.tar.gz", extra=[_file(f"{TOP}/runs/{RID}/fidelity.json", b'{"valid": false}')]))
    add("file-and-directory", "both a file and a directory", lambda t, k: write_tar(
        t / "x.tar.gz", extra=[_file(f"{TOP}/runs/{RID}/DONE/x", b"x")]))
    add("directory-member-and-file", "twice", lambda t, k: write_tar(
        t / "x.tar.gz", extra=[special(f"{TOP}/runs/{RID}/fidelity.json", "dir")]))
    add("sums-lists-twice", "twice", lambda t, k: write_tar(
        t / "x.tar.gz", sums=sums_of(good_files()) + sums_of({"config/b.yaml": b"name: b\n"})))
    add("bundle-json-other-runs", "BUNDLE.json", lambda t, k: write_tar(t / "x.tar.gz", files=with_(
        **{"BUNDLE.json": json.dumps({"runs": [RID.replace("rep0", "rep9")]}).encode()})))
    add("not-a-tar", "not a readable tar archive", lambda t, k: _garbage(t / "x.tar.gz"))
    add("checksum-mismatch", "checksum mismatch", lambda t, k: write_tar(t / "x.tar.gz", sums=sums_of(
        {**good_files(), "config/b.yaml": b"name: other\n"})))
    return c


def _garbage(p: Path) -> Path:
    p.write_bytes(gzip.compress(b"touch CANARY\n" * 100))
    return p


def _renamed_top(p: Path, top: str) -> Path:
    files = good_files()
    with tarfile.open(p, "w:gz") as t:
        t.addfile(*_file(f"{top}/SHA256SUMS", sums_of(files)))
        for n, d in files.items():
            t.addfile(*_file(f"{top}/{n}", d))
    return p


def _dir_cases():
    c = []

    def add(cid, keyword, make):
        c.append(pytest.param(make, keyword, (), id="dir-" + cid))

    def symlinked(t, k, name, target):
        d = write_dir(t / "src")
        os.symlink(target, d / name)
        return d

    add("symlink-file-outside", "symlink", lambda t, k: symlinked(t, k, f"runs/{RID}/manifest.json", "/etc/passwd"))
    add("symlink-listed-file", "symlink", lambda t, k: _listed_symlink(t))
    add("symlink-dir-inside", "symlink", lambda t, k: symlinked(t, k, f"runs/{RID}/up", ".."))
    add("symlink-run-dir-outside", "symlink", lambda t, k: _symlinked_run(t))
    add("fifo", "FIFO", lambda t, k: _fifo(t))
    add("sums-dotdot", "'..'", lambda t, k: _secret_oracle(t))
    add("sums-absolute", "absolute", lambda t, k: write_dir(
        t / "src", sums=sums_of(good_files(), f"{hashlib.sha256(b'').hexdigest()}  /etc/passwd\n")))
    add("run-id-shell", "not a run id", lambda t, k: write_dir(
        t / "src", files=with_(**{f"runs__x; touch {k.name}; echo a b__DONE": b""})))
    add("shipped-verdict-listed", "derived output", lambda t, k: write_dir(
        t / "src", files=with_(**{"verdict.csv": b"claim,status\nC1,holds\n"})))
    add("unlisted-file", "not in SHA256SUMS", lambda t, k: _unlisted(t))
    add("results-dir-symlink", "symlink", lambda t, k: _results_dir_symlink(t))
    return c


def _listed_symlink(t):
    # the link's target has the listed checksum: only the refusal of symlinks stops the read outside
    secret = t / "secret"
    secret.write_bytes(b"secret")
    files = with_(**{f"runs__{RID}__manifest.json": b"secret"})
    d = write_dir(t / "src", files=files)
    (d / "runs" / RID / "manifest.json").unlink()
    os.symlink(secret, d / "runs" / RID / "manifest.json")
    return d


def _symlinked_run(t):
    elsewhere = t / "elsewhere" / RID
    elsewhere.mkdir(parents=True)
    files = good_files()
    d = write_dir(t / "src", files={n: v for n, v in files.items() if not n.startswith("runs/")},
                  sums=sums_of(files))
    for n, v in files.items():
        if n.startswith("runs/"):
            (elsewhere / n.split("/", 2)[2]).write_bytes(v)
    (d / "runs").mkdir()
    os.symlink(elsewhere, d / "runs" / RID)
    return d


def _fifo(t):
    d = write_dir(t / "src")
    os.mkfifo(d / "runs" / RID / "pipe")
    return d


def _secret_oracle(t):
    (t / "secret").write_bytes(b"secret")
    return write_dir(t / "src", sums=sums_of(good_files(), f"{hashlib.sha256(b'secret').hexdigest()}  ../secret\n"))


def _unlisted(t):
    d = write_dir(t / "src")
    (d / "runs" / RID / "extra.json").write_text("{}")
    return d


def _results_dir_symlink(t):
    # a results directory (no SHA256SUMS): its runs are walked without following links
    d = t / "src"
    for n, v in good_files().items():
        if n.startswith(("runs/", "tables/")):
            (d / n).parent.mkdir(parents=True, exist_ok=True)
            (d / n).write_bytes(v)
    os.symlink("/etc", d / "runs" / RID / "etc")
    return d


def snapshot(root: Path) -> dict:
    """Every path under root with its type and, for files, size and mtime (a directory's mtime moves when
    --out is made and removed in it, which a refusal after the list's checks may do)."""
    out = {}
    for d, dirs, names in os.walk(root):
        for n in dirs + names:
            p = Path(d, n)
            st = os.lstat(p)
            out[str(p)] = (st.st_mode,) if n in dirs else (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


@pytest.mark.parametrize("make, keyword, args", _tar_cases() + _dir_cases())
def test_a_hostile_bundle_is_refused_in_one_line_and_leaves_nothing(make, keyword, args, tmp_path, capsys):
    work = tmp_path / "work"
    work.mkdir()
    canary = tmp_path / "CANARY"
    src = make(work, canary)
    # a parent of --out that does not exist yet: made by analyse, so removed by it too
    out = work / "new" / "out"
    before = snapshot(tmp_path)
    rc = bd.main(["analyse", str(src), "--out", str(out), *args])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2, err
    assert len(lines) == 1 and lines[0].startswith("favorlab analyse: "), err
    assert keyword in lines[0], lines[0]
    assert "Fix" in lines[0], lines[0]
    assert not out.exists() and not out.parent.exists()
    assert snapshot(tmp_path) == before
    assert not canary.exists() and not (Path.cwd() / "CANARY").exists() and not (bd.REPO / "CANARY").exists()


def test_the_corpus_holds_at_least_thirty_bundles():
    assert len(_tar_cases()) + len(_dir_cases()) >= 30


def test_a_hostile_bundle_s_default_folder_is_absent_too(tmp_path, capsys):
    """Without --out the folder beside the bundle, named after it (made safe), is never left behind."""
    src = write_tar(tmp_path / "quick-bundle (1).tar.gz", extra=[special(f"{TOP}/runs/{RID}/x", "fifo")])
    before = snapshot(tmp_path)
    assert bd.main(["analyse", str(src)]) == 2
    assert "FIFO" in capsys.readouterr().err
    assert snapshot(tmp_path) == before and not (tmp_path / "quick-bundle-1").exists()


def test_a_tiny_archive_declaring_a_huge_member_is_refused_before_any_write(tmp_path, monkeypatch):
    src = huge_member_gz(tmp_path / "x.tar.gz", 1 << 40)
    assert src.stat().st_size < 200
    with pytest.raises(bd.BundleError, match="declares 1024.0 GiB"):
        bundle_unpack.unpack(src, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    # below the one-file cap, its data cut short: every header is read before a write, and the cut found
    with pytest.raises(bd.BundleError, match="not a readable tar archive"):
        bundle_unpack.unpack(huge_member_gz(tmp_path / "y.tar.gz", 20 * layout.GIB), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_bundle_larger_than_the_free_disk_is_refused_before_any_write(tmp_path, monkeypatch):
    src = write_tar(tmp_path / "x.tar.gz", files=with_(**{f"runs__{RID}__big.bin": b"\0" * 4096}))
    usage = layout.shutil.disk_usage(tmp_path)
    # the disk as full as it would be for a bundle of tens of GB: the free space less than the margin kept
    monkeypatch.setattr(layout.shutil, "disk_usage", lambda _p: usage._replace(free=layout.FREE_MARGIN))
    with pytest.raises(bd.BundleError, match=r"total \d+\.\d KiB but .* has 1\.0 GiB free"):
        bundle_unpack.unpack(src, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name, folder", [
    ("quick-bundle.tar.gz", "quick-bundle"),             # the naming that was safe already stays
    ("quick-bundle (1).tar.gz", "quick-bundle-1"),       # a browser's second download
    ("a; touch CANARY; b.tgz", "a-touch-CANARY-b"),
    ("$(reboot)`id`.tar.gz", "reboot-id"),
    ("results dir", "results-dir-analysis"),
    ("...tar.gz", "bundle"),
])
def test_the_default_folder_is_a_plain_name(name, folder, tmp_path):
    out = bundle_unpack.default_out(tmp_path / name)
    assert out == tmp_path / folder
    assert re.fullmatch(r"[A-Za-z0-9._-]+", out.name)


def test_out_with_braces_is_refused(tmp_path, capsys):
    src = write_tar(tmp_path / "x.tar.gz")
    assert bd.main(["analyse", str(src), "--out", str(tmp_path / "{run_id}")]) == 2
    assert "braces" in capsys.readouterr().err and not (tmp_path / "{run_id}").exists()


def test_the_layout_admits_what_bundle_writes():
    """Every name a run directory and its tables hold (contracts.md) passes; the neighbours that must not
    pass are refused."""
    for n in ["SHA256SUMS", "BUNDLE.json", "config/quick.yaml", f"runs/{RID}/DONE", f"runs/{RID}/flows/client-a1.csv",
              f"runs/{RID}/attempts/2/pcap/bneck-in.pcap", f"runs/{RID}/qdisc/p4-before.json",
              f"runs/{RID}/persistent/iperf3-a1-b2.json", f"tables/{RID}/packets.csv.gz"]:
        layout.check_name(n)
    for n in [f"runs/{RID}/.hidden", f"tables/{RID}/sub/flows.csv", "config/a/b.yaml", "config/x.sh", "runs",
              f"runs/{RID}/a b", "tables/x/run.csv", "SHA256SUMS/x", f"runs/{RID}/" + "/".join(["d"] * 8)]:
        with pytest.raises(bd.BundleError):
            layout.check_name(n)


def test_common_smk_and_load_r_use_the_one_run_id_pattern():
    """The allow-list's run ids are the pipeline's: common.smk's wildcard constraint is contract.rundir's
    pattern, and analysis/R/load.R holds the same one."""
    smk = (bd.REPO / "workflow" / "rules" / "common.smk").read_text()
    assert re.search(r"^from contract\.rundir import .*\bRUN_ID_PATTERN\b", smk, re.M)
    assert re.search(r"^\s+run_id=RUN_ID_PATTERN,$", smk, re.M)
    load_r = (bd.REPO / "analysis" / "R" / "load.R").read_text()
    assert f'RUN_ID_RE <- "{RUN_ID_PATTERN}"' in load_r


# ------------------------------------------------------------------ paths named inside a run's own files

def _run_dir(tmp_path):
    from analysis.tests import synth
    return synth.standard_run(str(tmp_path / "runs" / RID)).write(aqm="favor")


@pytest.mark.parametrize("schedule", ["/etc/passwd", "../../secret.csv", "sub/../../secret.csv", "..\\secret.csv",
                                      "link.csv"])
def test_extraction_refuses_a_schedule_path_outside_the_run_directory(schedule, tmp_path):
    """run.json's `schedule` is opened by extraction: an absolute path, a '..' or a symlink leading out of the
    run directory is refused with the fix, never read."""
    from analysis import extract as ex
    rundir = Path(_run_dir(tmp_path))
    secret = tmp_path / "secret.csv"
    secret.write_text((rundir / "schedule.csv").read_text())     # a valid schedule: only the path is wrong
    os.symlink(secret, rundir / "link.csv")
    spec = json.loads((rundir / "run.json").read_text())
    spec["schedule"] = schedule
    (rundir / "run.json").write_text(json.dumps(spec))
    with pytest.raises(ValueError, match="run.json's schedule .* fix: name a file of the run directory"):
        ex.extract(str(rundir), str(tmp_path / "tables"))
    assert not (tmp_path / "tables").exists()
    # the run's own schedule by its plain name is read
    spec["schedule"] = "schedule.csv"
    (rundir / "run.json").write_text(json.dumps(spec))
    ex.extract(str(rundir), str(tmp_path / "tables"))


def test_extraction_refuses_plan_json_host_names_that_are_paths(tmp_path):
    """persistent/plan.json's hosts make the iperf3 report's file name: a host named as a path is refused."""
    from analysis.tables.persistent import persistent_rows
    rundir = Path(_run_dir(tmp_path))
    (tmp_path / "iperf3-x-y.json").write_text('{"end": {"streams": []}}')
    (rundir / "persistent").mkdir()
    (rundir / "persistent" / "plan.json").write_text(json.dumps(
        {"t0_unix": 0, "groups": [{"src": "../../../iperf3-x", "dst": "y", "port": 5201}]}))
    with pytest.raises(ValueError, match="plan.json names hosts '../../../iperf3-x'"):
        persistent_rows(str(rundir), json.loads((rundir / "run.json").read_text()))
