"""Results bundles (orchestrate/bundle.py): what goes in, its checksums, the refusals, and the analysis of
a bundle through the pipeline's own rules, twice to the same verdict.csv. The run directories are
analysis/tests/synth.py's crafted runs, extracted the way the R tests extract them."""
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from analysis import extract as ex
from analysis.tests import synth
from orchestrate import bundle as bd

NAME = "bundle-test"
# run ids as the config's matrix names them (_config: smoke.yaml at load 0.5 with two replications)
RUN_IDS = [f"dumbbell-10M-buf8-lomax30-paper-reno_{aqm}_load0.50_iw2_rep{rep}" for aqm in ["droptail", "favor"]
           for rep in [0, 1]]
# a finished run the config's matrix does not have (an earlier version of the config): never bundled
STALE = "dumbbell-10M-buf8-lomax30-paper-reno_favor_load0.90_iw2_rep0"
# Rscript: skipped where it is missing, failed under CI (the root conftest's fixture)
need_r = pytest.mark.usefixtures("rscript")


def _config(path: Path) -> Path:
    cfg = yaml.safe_load(open(Path(__file__).resolve().parents[2] / "config" / "smoke.yaml"))
    cfg["name"] = NAME
    cfg["loads"], cfg["replications"] = [0.5], 2
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A config and its results directory: four finished runs with tables (FaQ's replication 1 invalid),
    one run cut off (<run_id>.partial) and one without DONE."""
    root = tmp_path_factory.mktemp("made")
    res = root / "results" / NAME
    for rid in RUN_IDS + [STALE]:
        aqm, rep = rid.split("_")[1], int(rid[-1])
        run = synth.standard_run(str(res / "runs" / rid))
        ex.extract(run.write(aqm=aqm, rep=rep, valid=not (aqm == "favor" and rep == 1)), str(res / "tables" / rid))
    for cut in [RUN_IDS[3].replace("rep1", "rep2.partial"), RUN_IDS[3].replace("rep1", "rep3")]:
        (res / "runs" / cut).mkdir()
        (res / "runs" / cut / "run.json").write_text("{}")
    (res / "runs" / RUN_IDS[0] / ".snakemake_timestamp").write_text("")
    # an earlier attempt kept in the run directory (contracts.md), with its own captures
    shutil.copytree(res / "runs" / RUN_IDS[3], res / "runs" / RUN_IDS[3] / "attempts" / "1")
    return _config(root / f"{NAME}.yaml"), res


def _bundle(made, tmp_path, **kw):
    cfg, res = made
    return bd.bundle(cfg, tmp_path / "b.tar.gz", results=res, log=lambda _m: None, **kw)


@pytest.fixture(scope="module")
def analysed(made, tmp_path_factory, rscript):
    """The plain bundle of `made` and its analysis (its folder `one`, the lines analyse logged): the reference
    the analyses of other names, of the analysed folder and in the container image must match, made once
    (an analysis is about half a minute of R)."""
    root = tmp_path_factory.mktemp("analysed")
    b = _bundle(made, root)
    lines = []
    one = bd.analyse(b, root / "one", cores=1, log=lines.append)
    return b, one, lines


def _names(path):
    with tarfile.open(path) as t:
        return [m.name for m in t.getmembers()]


def test_bundle_holds_the_finished_runs_their_tables_and_the_config_with_checksums(made, tmp_path):
    out = _bundle(made, tmp_path)
    names = _names(out)
    assert all(n.startswith(f"{NAME}/") for n in names)
    rel = {n[len(NAME) + 1:] for n in names}
    assert {"SHA256SUMS", "BUNDLE.json", f"config/{NAME}.yaml"} <= rel
    for rid in RUN_IDS:
        for f in ["DONE", "run.json", "manifest.json", "fidelity.json", "schedule.csv", "hosts.json", "nstat/a1.json"]:
            assert f"runs/{rid}/{f}" in rel
        for t in ["flows.csv", "run.csv", "persistent.csv", "packets.csv.gz"]:
            assert f"tables/{rid}/{t}" in rel
    # incomplete runs never, nor a run the config no longer has, pcaps only when asked (an earlier
    # attempt's neither), no Snakemake bookkeeping
    assert not any("rep2" in n or "rep3" in n or STALE in n or "/pcap/" in n or "snakemake" in n for n in rel)
    assert f"runs/{RUN_IDS[3]}/attempts/1/fidelity.json" in rel
    with tarfile.open(out) as t:
        t.extractall(tmp_path / "x")
    top = tmp_path / "x" / NAME
    info = json.loads((top / "BUNDLE.json").read_text())
    assert info["runs"] == RUN_IDS and info["pcaps"] is False and info["config"] == f"{NAME}.yaml"
    # SHA256SUMS lists every other file, in sha256sum's format (`sha256sum -c` checks it)
    sums = {}
    for line in (top / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split("  ", 1)
        sums[name] = digest
    assert set(sums) == rel - {"SHA256SUMS"}
    for name, digest in sums.items():
        assert hashlib.sha256((top / name).read_bytes()).hexdigest() == digest
    if shutil.which("sha256sum"):
        r = subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=top, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr


def test_bundle_with_pcaps_holds_the_captures(made, tmp_path):
    rel = {n[len(NAME) + 1:] for n in _names(_bundle(made, tmp_path, pcaps=True))}
    for rid in RUN_IDS:
        assert f"runs/{rid}/pcap/bneck-in.pcap" in rel and f"runs/{rid}/pcap/sender-a1.pcap" in rel
    assert f"runs/{RUN_IDS[3]}/attempts/1/pcap/bneck-in.pcap" in rel


def test_bundle_of_a_config_without_finished_runs_is_an_error(made, tmp_path):
    cfg, _ = made
    empty = tmp_path / "results"
    (empty / "runs" / f"{RUN_IDS[2]}.partial").mkdir(parents=True)
    with pytest.raises(bd.BundleError, match=r"no finished run .*1 incomplete"):
        bd.bundle(cfg, tmp_path / "b.tar.gz", results=empty, log=lambda _m: None)
    assert not (tmp_path / "b.tar.gz").exists()
    with pytest.raises(bd.BundleError, match="no finished run"):
        bd.bundle(cfg, tmp_path / "b.tar.gz", results=tmp_path / "nowhere", log=lambda _m: None)
    # the CLI says so and exits 2
    assert bd.main(["bundle", str(cfg), "--results", str(empty), "--out", str(tmp_path / "c.tar.gz")]) == 2


def test_bundle_refuses_a_run_without_tables_unless_its_pcaps_go_in(made, tmp_path):
    cfg, res = made
    copy = tmp_path / "res"
    shutil.copytree(res, copy)
    shutil.rmtree(copy / "tables" / RUN_IDS[1])
    with pytest.raises(bd.BundleError, match=f"no tables.*{RUN_IDS[1]}.*--pcaps"):
        bd.bundle(cfg, tmp_path / "b.tar.gz", results=copy, log=lambda _m: None)
    bd.bundle(cfg, tmp_path / "b.tar.gz", results=copy, pcaps=True, log=lambda _m: None)


def _retar(src: Path, dst: Path, change):
    """A copy of the bundle src with change(name, data) -> data applied to every member."""
    with tarfile.open(src) as t, tarfile.open(dst, "w:gz") as o:
        for m in t.getmembers():
            data = change(m.name, t.extractfile(m).read())
            m.size = len(data)
            o.addfile(m, io.BytesIO(data))
    return dst


def test_analyse_refuses_a_tampered_file_naming_it(made, tmp_path):
    good = _bundle(made, tmp_path)
    victim = f"runs/{RUN_IDS[2]}/fidelity.json"
    bad = _retar(good, tmp_path / "bad.tar.gz",
                 lambda n, d: d.replace(b"true", b"false") if n == f"{NAME}/{victim}" else d)
    with pytest.raises(bd.BundleError, match=f"{victim}: checksum mismatch"):
        bd.analyse(bad, tmp_path / "out", log=lambda _m: None)
    assert not (tmp_path / "out").exists()      # nothing half-unpacked is left behind
    # a file slipped in, or one taken out, is named too
    with tarfile.open(good) as t:
        t.extractall(tmp_path / "unpacked")
    top = tmp_path / "unpacked" / NAME
    (top / "runs" / RUN_IDS[0] / "extra.csv").write_text("x\n")
    with pytest.raises(bd.BundleError, match=f"runs/{RUN_IDS[0]}/extra.csv: in the bundle but not in SHA256SUMS"):
        bd.analyse(top, tmp_path / "out2", log=lambda _m: None)
    (top / "runs" / RUN_IDS[0] / "extra.csv").unlink()
    (top / "runs" / RUN_IDS[0] / "manifest.json").unlink()
    with pytest.raises(bd.BundleError, match=f"runs/{RUN_IDS[0]}/manifest.json: listed in SHA256SUMS but missing"):
        bd.analyse(top, tmp_path / "out3", log=lambda _m: None)


def test_analyse_never_writes_over_an_existing_directory(made, tmp_path):
    b = _bundle(made, tmp_path)
    (tmp_path / "there").mkdir()
    (tmp_path / "there" / "keep").write_text("mine")
    with pytest.raises(bd.BundleError, match="exists: analyse never writes over a directory"):
        bd.analyse(b, tmp_path / "there", log=lambda _m: None)
    assert [p.name for p in (tmp_path / "there").iterdir()] == ["keep"]
    # the default is beside the bundle, named after it: refused too once it exists
    (tmp_path / "b").mkdir()
    with pytest.raises(bd.BundleError, match=f"{tmp_path / 'b'} exists"):
        bd.analyse(b, log=lambda _m: None)


def test_analyse_refuses_members_outside_the_bundle_directory(made, tmp_path):
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as t:
        ti = tarfile.TarInfo(f"{NAME}/../escaped")
        ti.size = 1
        t.addfile(ti, io.BytesIO(b"x"))
    with pytest.raises(bd.BundleError, match=r"'\.\.'"):
        bd.analyse(evil, tmp_path / "out", log=lambda _m: None)
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "out").exists()


def _figure_tables(d: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted((d / "figures").glob("*.csv"))}


@need_r
@pytest.mark.slow
def test_analyse_a_bundle_twice_gives_the_same_verdict_and_figure_tables(analysed, tmp_path):
    b, one, lines = analysed
    assert any("from the bundled tables (no pcaps): 4 run(s)" in x for x in lines)
    for f in ["verdict.csv", "report.html", "figures/ranking.csv", "figures/index.csv"]:
        assert (one / f).is_file(), f
    rows = list(csv.DictReader(open(one / "verdict.csv")))
    assert rows and all(r["claim"] for r in rows)
    # a dumbbell's scenario key has no hops: run.csv's empty chain columns are not read as "NA"
    assert all("NA" not in r["scenario"].split() for r in rows), {r["scenario"] for r in rows}
    assert RUN_IDS[3] in (one / "figures" / "invalid-runs.csv").read_text()
    assert "<h1>favorlab report: one</h1>" in (one / "report.html").read_text()
    # the bundle's tables were used as they are, not extracted again
    assert not any((one / "logs").glob("extract-*.log"))
    two = bd.analyse(b, tmp_path / "two", cores=1, log=lambda _m: None)
    assert (one / "verdict.csv").read_bytes() == (two / "verdict.csv").read_bytes()
    assert _figure_tables(one) == _figure_tables(two) and len(_figure_tables(one)) > 5
    # an analysed directory still verifies, and is analysed again from its bundled files alone
    three = bd.analyse(one, tmp_path / "three", cores=1, log=lambda _m: None)
    assert (three / "verdict.csv").read_bytes() == (one / "verdict.csv").read_bytes()


@need_r
@pytest.mark.slow
def test_analyse_extracts_again_the_runs_whose_pcaps_came_along(made, tmp_path):
    lines = []
    out = bd.analyse(_bundle(made, tmp_path, pcaps=True), tmp_path / "out", cores=1, log=lines.append)
    assert any("extracted again from their pcaps: 4 run(s)" in x for x in lines)
    # byte for byte, packets.csv.gz included (no time in its gzip header)
    assert any("tables extracted again identical to the bundled ones: 4 of 4 run(s)" == x.strip() for x in lines), lines
    assert sorted(p.name for p in (out / "logs").glob("extract-*.log")) == [f"extract-{r}.log" for r in RUN_IDS]
    # the same extraction as the one bundled
    _, res = made
    for rid in RUN_IDS:
        for t in ["flows.csv", "run.csv", "persistent.csv"]:
            assert (out / "tables" / rid / t).read_bytes() == (res / "tables" / rid / t).read_bytes()
    assert (out / "verdict.csv").is_file() and (out / "report.html").is_file()


@need_r
@pytest.mark.slow
def test_analyse_a_results_directory_leaves_it_untouched(made, tmp_path):
    _, res = made
    before = sorted(str(p.relative_to(res)) for p in res.rglob("*"))
    out = bd.analyse(res, tmp_path / "out", cores=1, log=lambda _m: None)
    assert (out / "verdict.csv").is_file()
    assert sorted(str(p.relative_to(res)) for p in res.rglob("*")) == before
    assert not (out / "runs" / f"{RUN_IDS[3].replace('rep1', 'rep2')}.partial").exists()


@need_r
@pytest.mark.slow
def test_analyse_a_bundle_whose_file_name_and_folder_hold_spaces_and_shell_metacharacters(analysed, tmp_path):
    """A browser's `quick-bundle (1).tar.gz`, a name with `;`, and an --out with spaces and `$(...)`: the
    analysis runs (every name on the rules' command lines quoted, the default folder a plain name) to the
    same verdict as the plainly named bundle, and no payload runs."""
    plain_bundle, plain, _ = analysed
    odd = tmp_path / "dl"
    odd.mkdir()
    b = odd / "quick-bundle (1); touch CANARY.tar.gz"
    shutil.copy(plain_bundle, b)
    one = bd.analyse(b, cores=1, log=lambda _m: None)
    assert one == odd / "quick-bundle-1-touch-CANARY"
    spaced = bd.analyse(b, odd / "my results; $(touch CANARY)", cores=1, log=lambda _m: None)
    for d in (one, spaced):
        assert (d / "verdict.csv").read_bytes() == (plain / "verdict.csv").read_bytes()
        assert _figure_tables(d) == _figure_tables(plain)
    assert not any(p.name == "CANARY" for p in tmp_path.rglob("*"))
    assert not (bd.REPO / "CANARY").exists()


def test_bundle_refuses_results_it_could_not_pack_safely(made, tmp_path):
    """bundle holds the results it packs to the rules analyse holds a bundle to: a symlink in a run
    directory, or a file name with a space or a shell metacharacter, is refused in one line naming it."""
    cfg, res = made
    for name, make, keyword in [
            ("link", lambda d: os.symlink("/etc/passwd", d / "manifest2.json"), "symlink"),
            ("space", lambda d: (d / "log" / "a b.log").write_text("x"), "not in the bundle layout"),
            ("shell", lambda d: (d / "$(touch CANARY).json").write_text("{}"), "not in the bundle layout")]:
        copy = tmp_path / name
        shutil.copytree(res, copy, symlinks=True)
        (copy / "runs" / RUN_IDS[0] / "log").mkdir(exist_ok=True)
        make(copy / "runs" / RUN_IDS[0])
        with pytest.raises(bd.BundleError, match=keyword):
            bd.bundle(cfg, tmp_path / f"{name}.tar.gz", results=copy, log=lambda _m: None)
        assert not (tmp_path / f"{name}.tar.gz").exists() and not (tmp_path / f"{name}.tar.gz.partial").exists()
    assert not any(p.name == "CANARY" for p in tmp_path.rglob("*"))
