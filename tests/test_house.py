"""The house rules a newcomer relies on when walking the code: files small enough to hold one idea, history
in git and measurements in docs/measurements.md rather than in comments, and product code that stands
without the tests."""
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 500
# the controller, the host runner, the analysis and the contract they share
SMALL_FILE_DIRS = ("orchestrate/", "testbed/", "analysis/", "contract/")
# where a date is data, not history: the measurements page and generated lock files
DATED_OK = ("docs/measurements.md",)
DATED_OK_SUFFIXES = (".lock",)


def tracked(*pathspec: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--", *pathspec], cwd=ROOT, capture_output=True,
                         check=True).stdout.decode()
    return [f for f in out.split("\0") if f and (ROOT / f).is_file()]


def is_test_code(path: str) -> bool:
    parts = Path(path).parts
    return "tests" in parts or Path(path).name in ("conftest.py", "favorlab_testing.py")


def test_python_files_of_the_controller_runner_and_analysis_hold_at_most_500_lines():
    long = [f"{f}: {n} lines" for f in tracked("*.py") if f.startswith(SMALL_FILE_DIRS)
            for n in [len((ROOT / f).read_text().splitlines())] if n > MAX_LINES]
    assert not long, "split these by idea: " + ", ".join(long)


def test_no_dated_or_ci_history_line_outside_the_measurements_page():
    # "CI[ ]saw": the pattern written so that this line does not match it
    r = subprocess.run(["git", "grep", "-nE", r"CI[ ]saw|20[0-9]{2}-[01][0-9]-[0-3][0-9]"], cwd=ROOT,
                       capture_output=True, text=True)
    found = [line for line in r.stdout.splitlines()
             if not line.startswith(DATED_OK) and not line.split(":", 1)[0].endswith(DATED_OK_SUFFIXES)]
    assert not found, "history belongs in git, measurements in docs/measurements.md:\n" + "\n".join(found)


def test_product_code_imports_no_test_module():
    imports_tests = re.compile(r"^\s*(from\s+[\w.]*\btests\b[\w.]*\s+import|import\s+[\w.]*\btests\b)", re.M)
    found = [f for f in tracked("*.py") if not is_test_code(f) and imports_tests.search((ROOT / f).read_text())]
    assert not found, found


def test_product_code_reads_no_test_hook():
    found = [f for f in tracked("*.py", "*.smk", "Snakefile", "favorlab", "scripts/*")
             if not is_test_code(f) and "FAVORLAB_TEST_" in (ROOT / f).read_text(errors="replace")]
    assert not found, f"a test drives product code from the test side, not through a hook in it: {found}"
