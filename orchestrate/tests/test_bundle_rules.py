"""The analysis rules on a results directory whose path holds spaces and shell metacharacters (where
`./favorlab analyse` unpacks a bundle), and the run list they hand to R and the report."""
import shlex
import subprocess
import sys

from contract import rundir
from orchestrate.bundle import REPO

RIDS = [f"dumbbell-10M-buf8-pareto30-paper-reno_{aqm}_load0.50_iw2_rep0" for aqm in ["droptail", "favor"]]


def _plan(results):
    r = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--config", f"analyse_results={results}",
                        "--cores", "1"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return [line.split("Shell command: ", 1)[1] for line in (r.stdout + r.stderr).splitlines()
            if line.startswith("Shell command: ") and line != "Shell command: None"]


def test_every_shell_command_keeps_a_hostile_results_path_one_word(tmp_path):
    """The shell reads each path of the rules' commands as one word: split as the shell splits, every
    argument that names the results directory holds it whole (unquoted, its `;` and spaces would cut it)."""
    results = tmp_path / "x; touch CANARY; $(touch CANARY2) `id` a b"
    for rid in RIDS:
        (results / "runs" / rid).mkdir(parents=True)
        (results / "runs" / rid / "DONE").write_text("")
    # a directory that is no run id is not one of the runs analysed
    (results / "runs" / "x y").mkdir()
    (results / "runs" / "x y" / "DONE").write_text("")
    cmds = _plan(results)
    assert len(cmds) == 2 + 3       # two extractions, figures (and ranking), verdict, report
    for cmd in cmds:
        words = shlex.split(cmd)
        named = [w for w in words if str(results) in w]
        assert named, cmd
        assert all(w.startswith(str(results)) for w in named), cmd
        # nothing of the path outside its quotes: the shell's own split of the line matches ours
        r = subprocess.run(["bash", "-n", "-c", cmd], capture_output=True, text=True)
        assert r.returncode == 0, (cmd, r.stderr)
    assert not any("x y" in c for c in cmds)
    rscript = [c for c in cmds if c.startswith("Rscript")]
    assert rscript and all("--runs" in c and "analysis-runs.txt" in c for c in rscript)
    assert any("analysis.report" in c and "--runs" in c for c in cmds)


def test_the_report_covers_the_run_list_and_counts_the_tables_it_left_out(tmp_path):
    from analysis import report
    for rid in RIDS + [RIDS[0].replace("load0.50", "load0.90")]:
        (tmp_path / "runs" / rid).mkdir(parents=True)
        (tmp_path / "runs" / rid / "DONE").write_text("")
        (tmp_path / "runs" / rid / "run.json").write_text('{"load": 0.5}')
        (tmp_path / "tables" / rid).mkdir(parents=True)
        (tmp_path / "tables" / rid / "run.csv").write_text(f"run_id,valid\n{rid},1\n")
    lst = tmp_path / "analysis-runs.txt"
    lst.write_text("".join(f"{r}\n" for r in RIDS))
    h = report.render(str(tmp_path), set(rundir.read_run_list(lst)))
    assert "Tables of 1 run(s) that are not among this config's runs were left out" in h
    assert f"<td>{RIDS[0]}</td>" in h and f"<td>{RIDS[0].replace('load0.50', 'load0.90')}</td>" not in h
    assert "<h2>Runs (2): manifest and fidelity</h2>" in h
    # without the list, every run under runs/ is reported
    assert "<h2>Runs (3): manifest and fidelity</h2>" in report.render(str(tmp_path))
