"""containers/: the frozen toolchain images.

The lock files are checked on every machine: they hold what the images are asked to hold, and the
controller image holds everything scripts/bootstrap would install. Where a container engine runs
(podman or docker, as root), the images are built from the lock files and used: the analysis image
turns a results bundle into the very verdict.csv and figure tables the host makes from it, with no
network, and the controller image's own bootstrap finds nothing to install. Skipped with the reason
where no engine runs; failing instead when FAVORLAB_REQUIRE_CONTAINERS=1 (CI)."""
import csv
import importlib.machinery
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from favorlab_testing import CONTAINERS, unavailable
from orchestrate import bundle as bd
from orchestrate.tests.test_bundle import made, _bundle, _figure_tables  # noqa: F401 (made is a fixture)

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / "containers" / "build"


def _build_module():
    loader = importlib.machinery.SourceFileLoader("containers_build", str(BUILD))
    spec = importlib.util.spec_from_loader("containers_build", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


cb = _build_module()


def _lock(name):
    return {l.split("\t")[0]: l.split("\t")[1] for l in cb.body(cb.apt_lock(name)).splitlines()}


def _packages(path):
    return {p for line in path.read_text().splitlines() for p in line.split("#", 1)[0].split()}


@pytest.mark.parametrize("name", sorted(cb.PARENT))
def test_apt_lock_pins_every_package_the_image_asks_for(name):
    lock = _lock(name)
    assert len(lock) > 50, "a whole image's packages, the base's among them"
    assert all(re.fullmatch(r"[0-9][\w.+:~-]*", v) for v in lock.values()), "every package has its version"
    missing = [p for p in cb.apt_wanted(name) if p not in lock]
    assert not missing, f"apt.txt asks for {missing}, which {name}'s apt.lock lacks: containers/build {name} --relock"


def test_controller_image_holds_what_its_parent_holds_at_the_same_versions():
    analysis, controller = _lock("analysis"), _lock("controller")
    differ = {p: (v, controller.get(p)) for p, v in analysis.items() if controller.get(p) != v}
    assert not differ, f"the controller image is built on the analysis image; its lock disagrees: {differ}"


def test_controller_image_holds_every_package_bootstrap_installs():
    wanted = set().union(*(_packages(p) for p in [REPO / "apt-packages.txt", *REPO.glob("*/apt-packages.txt")]))
    missing = sorted(wanted - set(_lock("controller")))
    assert not missing, f"scripts/bootstrap would install {missing} inside the controller image (from the mirror " \
                        f"of that day): add them to containers/controller/apt.txt and relock"


def test_requirements_lock_pins_every_requirement_at_its_version():
    def pins(path):
        return {re.sub(r"[-_.]+", "-", n).lower(): v for n, v in
                re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", path.read_text(), re.M)}
    want, got = pins(REPO / "requirements.txt"), pins(cb.REQUIREMENTS_LOCK)
    assert want and len(got) > len(want)
    assert {n: (v, got.get(n)) for n, v in want.items() if got.get(n) != v} == {}


def test_build_without_an_engine_says_how_to_get_one(tmp_path):
    p = subprocess.run([sys.executable, str(BUILD), "analysis"], capture_output=True, text=True,
                       env={"PATH": str(tmp_path)})
    assert p.returncode == 2
    assert "no container engine" in p.stderr and "apt-get install podman" in p.stderr


def test_a_malformed_base_conf_names_the_line(tmp_path):
    conf = tmp_path / "base.conf"
    conf.write_text("suite = bookworm\nmirror http://deb.debian.org/debian\n")
    with pytest.raises(cb.BuildError, match=r"base.conf:2: .* is not `key = value`"):
        cb.read_conf(conf)
    conf.write_text("suite = bookworm\nmirror = http://deb.debian.org/debian\n")
    with pytest.raises(cb.BuildError, match="no 'security'"):
        cb.read_conf(conf)


# ---- with a container engine -------------------------------------------------------------------------------

def _engine():
    why = None
    eng = shutil.which("podman") or shutil.which("docker")
    if not eng:
        why = "no podman or docker on PATH (apt-get install podman; README, 'Containers')"
    elif os.geteuid() != 0:
        why = "the base image is made by debootstrap, which needs root"
    elif subprocess.run([eng, "info"], capture_output=True).returncode:
        why = f"`{eng} info` fails: the engine does not run here"
    if why:
        unavailable(f"no container engine runs here: {why}; runs wherever podman or docker does, as root",
                    required_by=CONTAINERS)
    return eng


def _host_network_state():
    """What an engine's bridge network changes on the host: IP forwarding, and firewall chains of its own."""
    chains = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout if shutil.which("iptables-save") else ""
    return {"ip_forward": Path("/proc/sys/net/ipv4/ip_forward").read_text().strip(),
            "engine_chains": sorted({l.split()[0] for l in chains.splitlines() if l.startswith(":") and
                                     re.search("NETAVARK|CNI-|DOCKER", l)})}


@pytest.fixture(scope="module")
def built():
    """Both images built from the lock files (cached by the engine's layers: seconds when nothing changed).
    Building and using them leaves the host's network as it was: no engine bridge, so no IP forwarding
    turned on and no NAT chains added (a forwarding host once looped a test's SYNs 64 times)."""
    eng = _engine()
    host_before = _host_network_state()
    p = subprocess.run([str(BUILD), "controller", "--engine", Path(eng).name], capture_output=True, text=True,
                       timeout=3600)
    # the build's own log (what each step ran and how long it took) where pytest -s shows it
    print(p.stderr[-3000:])
    assert p.returncode == 0, p.stderr[-4000:]
    ids = {n: (REPO / "containers" / n / "IMAGE_ID").read_text().split() for n in cb.PARENT}
    yield eng, ids
    assert _host_network_state() == host_before, "the container engine changed the host's network"


@pytest.mark.slow
@pytest.mark.container
def test_analysis_image_gives_the_hosts_verdict_and_figure_tables_byte_for_byte(built, made, tmp_path):
    eng, ids = built
    b = _bundle(made, tmp_path)
    host = bd.analyse(b, tmp_path / "host", cores=1, log=lambda _m: None)
    p = subprocess.run([str(REPO / "containers" / "run"), "analysis", "analyse", f"/data/{b.name}", "--out",
                        "/data/image", "--cores", "1"], cwd=tmp_path, capture_output=True, text=True, timeout=1800,
                       env=dict(os.environ, FAVORLAB_ENGINE=eng, FAVORLAB_DATA=str(tmp_path)))
    assert p.returncode == 0, p.stderr[-4000:]
    image = tmp_path / "image"
    assert (image / "verdict.csv").read_bytes() == (host / "verdict.csv").read_bytes()
    assert list(csv.DictReader(open(image / "verdict.csv")))
    assert _figure_tables(image) == _figure_tables(host) and len(_figure_tables(host)) > 5
    report = (image / "report.html").read_text()
    tag, digest = ids["analysis"]
    assert tag in report and digest in report, "the report names the image it was made in"
    assert "none: on the host" in (host / "report.html").read_text()


@pytest.mark.slow
@pytest.mark.container
def test_controller_image_bootstraps_with_nothing_to_install_and_no_network(built):
    eng, ids = built
    tag = ids["controller"][0]
    p = subprocess.run([*cb.engine_cmd(eng), "run", "--rm", *cb.ulimit_args(), "--network", "none", "--entrypoint", "bash", tag, "-c",
                        "scripts/bootstrap && ./favorlab help && command -v qemu-system-x86_64 debootstrap go "
                        "Rscript tshark && .venv/bin/python -c 'import snakemake, ansible'"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "installing" not in p.stdout and "bootstrap: ready" in p.stdout
