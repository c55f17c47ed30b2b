"""The runner (python3 -m testbed.runner, orchestrate/remote.py), the topologies and the Python flow client,
server and reference user run on a testbed host's own Python, and a host on Ubuntu 22.04 (CloudLab's and
FABRIC's long-standing default) has 3.10: no module they load may need a newer Python, so the host's Python
is never why an image is unsupported (orchestrate/images.py). Checked statically by vermin (PyPI,
requirements.txt) rather than with a python3.10 interpreter because Debian 12 ships none, so a fresh CI
machine has only 3.11; vermin knows each standard-library member's first version (asyncio.timeout: 3.11)
and each syntax's (except*, 3.11)."""
import ast
import subprocess
import sys
from pathlib import Path

from favorlab_testing import CI, unavailable

REPO = Path(__file__).resolve().parents[2]
VERMIN = Path(sys.executable).parent / "vermin"
OLDEST = "3.10"


def host_modules() -> list[Path]:
    """The host side's own modules and every repository module they import, transitively (contract.schedule, ...)."""
    roots = ("workloads", "testbed/runner", "topologies")
    todo, seen = sorted(p for d in roots for p in (REPO / d).glob("*.py")), set()
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     # `from contract import sizes` imports the module contract/sizes.py as well as the package
                     else [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                     if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
            for name in names:
                for cand in (REPO / (name.replace(".", "/") + ".py"), REPO / name.replace(".", "/") / "__init__.py"):
                    if cand.is_file():
                        todo.append(cand)
    return sorted(seen)


def vermin(*files: Path) -> subprocess.CompletedProcess:
    if not VERMIN.exists():
        unavailable(f"vermin is not installed in {VERMIN.parent} (requirements.txt has it: scripts/bootstrap)", CI)
    return subprocess.run([str(VERMIN), "-q", f"-t={OLDEST}-", "--violations", "--no-tips", "--eval-annotations",
                           *map(str, files)], capture_output=True, text=True, timeout=120)


def test_the_host_side_modules_include_what_the_client_imports():
    mods = {str(p.relative_to(REPO)) for p in host_modules()}
    assert {"workloads/client.py", "workloads/server.py", "workloads/reference.py", "contract/schedule.py",
            "contract/sizes.py", "testbed/runner/__main__.py", "testbed/runner/run.py",
            "topologies/dumbbell.py"} <= mods


def test_no_host_side_module_needs_a_python_newer_than_3_10():
    r = vermin(*host_modules())
    assert r.returncode == 0, f"a module the testbed hosts run needs Python > {OLDEST}:\n{r.stdout}{r.stderr}"


def test_the_check_sees_an_api_added_after_3_10(tmp_path):
    """What the client used before (asyncio.timeout, 3.11) is caught: the check can fail."""
    f = tmp_path / "newer.py"
    f.write_text("import asyncio\n\nasync def f():\n    async with asyncio.timeout(1):\n        pass\n")
    r = vermin(f)
    assert r.returncode != 0 and "asyncio.timeout" in r.stdout, r.stdout + r.stderr
