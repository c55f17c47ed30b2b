"""The Snakemake profile workflow/profiles/default holds the pipeline's flags: a plain
`snakemake --profile workflow/profiles/default --configfile CONFIG` plans the same jobs as ./favorlab, and the
Snakefile takes the config's pool size itself. Dry runs only (-n): nothing is run, booted or written to results/.
That finished runs survive a code change is checked with real executions in tests/test_reruns.py."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
PROFILE = REPO / "workflow" / "profiles" / "default"


def jobs(out: str) -> set[tuple[str, str]]:
    """A dry run's jobs as (rule, its outputs), from Snakemake's job listing."""
    found, rule = set(), None
    for line in out.splitlines():
        s = line.strip()
        if s.startswith("rule ") and s.endswith(":"):
            rule = s[5:-1]
            found.add((rule, ""))
        elif rule and s.startswith("output:"):
            found.discard((rule, ""))
            found.add((rule, s.split(":", 1)[1].strip()))
    return found


def dry_run(cmd: list[str], tmp: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, FAVORLAB_CACHE=str(tmp / "cache"), FAVORLAB_P4_TARBALL=str(tmp / "p4.tar.gz"))
    env.pop("FAVORLAB_FORCE", None)
    (tmp / "p4.tar.gz").write_bytes(b"")
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    return p


@pytest.mark.parametrize("name", ["smoke", "quick"])
def test_the_plain_profile_call_plans_what_the_wrapper_plans(name, tmp_path):
    """Both into results folders of the test's own (--directory), from the same config."""
    if not (REPO / ".venv" / "bin" / "snakemake").exists():
        pytest.skip("no .venv; runs after scripts/bootstrap")
    via_wrapper = dry_run([str(REPO / "favorlab"), name, "-n", "--directory", str(tmp_path / "a")], tmp_path)
    plain = dry_run([sys.executable, "-m", "snakemake", "--profile", "workflow/profiles/default",
                     "--configfile", f"config/{name}.yaml", "-n", "--directory", str(tmp_path / "b")], tmp_path)
    a, b = jobs(via_wrapper.stdout + via_wrapper.stderr), jobs(plain.stdout + plain.stderr)
    assert any(rule == "run" for rule, _ in a) and ("all", "") in a, a
    assert a == b
    assert "Using profile workflow/profiles/default" in plain.stdout + plain.stderr


def test_the_snakefile_gives_the_pool_size_unless_the_command_line_does(tmp_path):
    """A pool of 3 local guests: 3 runs at once with no --resources, 1 when the command line says so."""
    cfg = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    cfg.update(name="profile-pool", testbed={"kind": "local-vm", "vm_name": "profile-pool", "count": 3})
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    # a Snakefile of the test's own: the project's, then what Snakemake's scheduler will take as the limit
    (tmp_path / "Snakefile").write_text(f'include: "{REPO / "Snakefile"}"\n'
                                        'print("testbed resource:", workflow.global_resources.get("testbed"))\n')
    base = [sys.executable, "-m", "snakemake", "--profile", str(PROFILE), "--snakefile", str(tmp_path / "Snakefile"),
            "--configfile", str(path), "-n", "--directory", str(tmp_path / "w")]
    assert "testbed resource: 3\n" in dry_run(base, tmp_path).stdout
    assert "testbed resource: 1\n" in dry_run(base + ["--resources", "testbed=1"], tmp_path).stdout


def test_the_profile_holds_the_flags_that_protect_finished_runs():
    prof = yaml.safe_load((PROFILE / "config.yaml").read_text())
    assert prof["rerun-incomplete"] is True
    assert "code" not in prof["rerun-triggers"] and {"params", "input"} <= set(prof["rerun-triggers"])
    wrapper = (REPO / "favorlab").read_text()
    # the wrapper leaves every flag to the profile: none of them is spelt there again
    for flag in prof:
        assert f"--{flag}" not in wrapper, flag


def test_analyse_takes_the_pipeline_flags_from_the_same_profile(tmp_path):
    """`./favorlab analyse` drives the same Snakefile: its command picks the profile and spells none of its
    flags again, so a flag added to the profile reaches the analysis of a bundle too."""
    from orchestrate import bundle
    prof = yaml.safe_load((PROFILE / "config.yaml").read_text())
    for cores in (None, 2):
        cmd = bundle.snakemake_command(tmp_path, ["some-run"], cores)
        assert "--profile" in cmd and cmd[cmd.index("--profile") + 1] == str(PROFILE), cmd
        assert not [flag for flag in prof if f"--{flag}" in cmd and flag != "cores"], cmd
        assert ("--cores" in cmd) == (cores is not None), cmd
