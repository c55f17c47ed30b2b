"""The CloudLab profile (testbed/cloudlab/profile.py) run offline with geni-lib, as the portal runs it.

Outside the portal geni-lib's portal.Context takes each parameter as a command-line option named after
it (--node_count 3) and prints the request RSpec on stdout; bad parameters go to stderr as JSON and the
script exits with 100 + the number of errors.

geni-lib 0.9.9.4, the newest on PyPI, is not quite Python 3 code (CloudLab's portal runs its own, newer
geni-lib): geni/portal.py has four Python 2 `print` statements (in the interactive prompt and the dict
binding, neither on the command-line path), so it does not compile, and Request.writeXML writes lxml's
bytes to sys.stdout. The launcher below compiles the installed geni/portal.py after lib2to3's print
fixer (the only change: those four lines) and gives the profile a stdout that takes bytes; everything
else, the parameters, their checks and the RSpec, is the installed geni-lib as it is.
"""
import importlib.util
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from orchestrate import images

pytest.importorskip("geni.rspec.pg", reason="geni-lib is not installed (pip install -r requirements.txt)")

PROFILE = Path(__file__).resolve().parents[1] / "cloudlab" / "profile.py"
GENI = "{http://www.geni.net/resources/rspec/3}"
# the profile's default image is orchestrate/images.py's (the portal runs the profile without that module)
DEFAULT_IMAGE = images.CLOUDLAB_DEFAULT

LAUNCHER = r"""
import importlib.util, runpy, sys, warnings
with warnings.catch_warnings():
    warnings.simplefilter("ignore")              # lib2to3 is deprecated (gone in Python 3.13)
    from lib2to3.refactor import RefactoringTool
spec = importlib.util.find_spec("geni.portal")
src = open(spec.origin).read()
try:
    compile(src, spec.origin, "exec")
except SyntaxError:
    src = str(RefactoringTool(["lib2to3.fixes.fix_print"]).refactor_string(src, spec.origin))
mod = importlib.util.module_from_spec(spec)
sys.modules["geni.portal"] = mod
exec(compile(src, spec.origin, "exec"), mod.__dict__)
class BytesStdout:                              # Request.writeXML: Python 2's str is bytes
    def write(self, s):
        sys.__stdout__.flush()
        sys.__stdout__.buffer.write(s if isinstance(s, bytes) else s.encode())
    def flush(self):
        sys.__stdout__.flush()
sys.stdout = BytesStdout()
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def run_profile(*args):
    if importlib.util.find_spec("lib2to3") is None:
        pytest.skip("this Python has no lib2to3 to load PyPI geni-lib's Python 2 portal.py")
    return subprocess.run([sys.executable, "-c", LAUNCHER, str(PROFILE), *args],
                          capture_output=True, text=True, timeout=60)


def nodes_of(rspec_xml):
    root = ET.fromstring(rspec_xml)
    assert root.tag == GENI + "rspec" and root.get("type") == "request"
    return root.findall(GENI + "node")


@pytest.mark.parametrize("count,hwtype", [(1, "d430"), (3, "m510")])
def test_n_nodes_with_type_and_image(count, hwtype):
    r = run_profile("--node_count", str(count), "--hardware_type", hwtype)
    assert r.returncode == 0, r.stderr
    nodes = nodes_of(r.stdout)
    assert [n.get("client_id") for n in nodes] == [f"node{i}" for i in range(count)]
    for n in nodes:
        assert n.get("exclusive") == "true"
        sliver = n.find(GENI + "sliver_type")
        assert sliver.get("name") in ("raw", "raw-pc")     # PyPI geni-lib writes "raw", the portal's "raw-pc"
        assert sliver.find(GENI + "disk_image").get("name") == DEFAULT_IMAGE
        assert [h.get("name") for h in n.findall(GENI + "hardware_type")] == [hwtype]
    # no LAN: each node is a testbed of its own
    assert nodes_of(r.stdout)[0].find(GENI + "interface") is None
    assert ET.fromstring(r.stdout).find(GENI + "link") is None


def test_defaults_any_hardware_and_the_docstring_as_tour():
    r = run_profile()
    assert r.returncode == 0, r.stderr
    nodes = nodes_of(r.stdout)
    assert len(nodes) == 1 and nodes[0].find(GENI + "hardware_type") is None
    tour = ET.fromstring(r.stdout).find("{http://www.protogeni.net/resources/rspec/ext/apt-tour/1}rspec_tour")
    assert tour is not None, "the docstring should become the portal's description and instructions"
    texts = {el.tag.split("}")[1]: el.text for el in tour}
    assert "network namespaces" in texts["description"]
    assert "./favorlab testbed inventory" in texts["instructions"]   # the manifest-to-inventory step


def test_other_image():
    image = "urn:publicid:IDN+emulab.net+image+emulab-ops//UBUNTU20-64-STD"
    r = run_profile("--node_count", "2", "--disk_image", image)
    assert r.returncode == 0, r.stderr
    assert [n.find(f"{GENI}sliver_type/{GENI}disk_image").get("name") for n in nodes_of(r.stdout)] == [image] * 2


@pytest.mark.parametrize("args,message", [
    (["--node_count", "0"], "node_count must be 1 to 16 (got 0)"),
    (["--node_count", "17"], "node_count must be 1 to 16 (got 17)"),
    (["--disk_image", "ubuntu22"], "disk_image must be an image URN"),
    (["--hardware_type", "d430 m510"], "is not a CloudLab type name"),
])
def test_bad_parameters_fail_with_the_profiles_message(args, message):
    r = run_profile(*args)
    assert r.returncode == 101, (r.returncode, r.stderr)
    assert message in r.stderr
    assert "<rspec" not in r.stdout
