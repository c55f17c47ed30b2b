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
import time
from pathlib import Path

import pytest

from favorlab_testing import CONTAINERS, unavailable
from orchestrate.tests.test_bundle import made, analysed, _figure_tables  # noqa: F401 (made, analysed: fixtures)

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


def _fake_docker(folder, version, buildx):
    folder.mkdir()
    (folder / "docker").write_text(f"#!/bin/sh\n[ \"$1\" = buildx ] && exit {0 if buildx else 1}\necho {version}\n")
    (folder / "docker").chmod(0o755)
    return str(folder / "docker")


def test_docker_builds_with_the_first_client_on_path_that_has_buildkit(tmp_path, monkeypatch):
    new_without_buildx = _fake_docker(tmp_path / "a", "28.2.2", buildx=False)
    debian = _fake_docker(tmp_path / "b", "20.10.24+dfsg1", buildx=False)
    monkeypatch.setenv("PATH", f"{tmp_path / 'a'}:{tmp_path / 'b'}")
    assert cb.engine_cmd("docker") == [debian]
    monkeypatch.setenv("PATH", f"{tmp_path / 'b'}:{tmp_path / 'a'}")
    assert cb.engine_cmd("docker") == [debian]
    monkeypatch.setenv("PATH", str(tmp_path / "a"))
    with pytest.raises(cb.BuildError, match="apt-get install docker.io"):
        cb.engine_cmd("docker")
    with_buildx = _fake_docker(tmp_path / "c", "28.2.2", buildx=True)
    monkeypatch.setenv("PATH", f"{tmp_path / 'a'}:{tmp_path / 'c'}")
    assert cb.engine_cmd("docker") == [with_buildx] and new_without_buildx != with_buildx


def test_docker_gets_the_ca_bundle_as_a_build_secret_for_the_pip_step_only(tmp_path, monkeypatch):
    ca = tmp_path / "ca.crt"
    ca.write_text("a CA\n")
    monkeypatch.setenv("PIP_CERT", str(ca))
    args = cb.pip_ca_args(build=True, secret=True)
    assert "-v" not in args and args[args.index("--secret") + 1] == f"id={cb.PIP_CA_SECRET},src={ca}"
    assert f"PIP_CERT={cb.HOST_CA}" in args
    original = (REPO / "containers" / "analysis" / "Containerfile").read_text().splitlines()
    rewritten = cb.docker_containerfile("analysis", tmp_path).read_text().splitlines()
    mount = f"RUN --mount=type=secret,id={cb.PIP_CA_SECRET},target={cb.HOST_CA} "
    changed = [(a, b) for a, b in zip(original, rewritten) if a != b]
    assert len(original) == len(rewritten) and len(changed) == 1, "one step, the pip install, mounts the CA"
    assert changed[0][1] == changed[0][0].replace("RUN ", mount, 1) and "PIP_CERT" in changed[0][0]
    controller = REPO / "containers" / "controller" / "Containerfile"
    assert cb.docker_containerfile("controller", tmp_path).read_text() == controller.read_text()


# ---- with a container engine -------------------------------------------------------------------------------

ENGINES = ["podman", "docker"]
# where the test's own Docker daemon keeps its images (layers cached from one run to the next), socket and state
DOCKER_ROOT = Path(os.environ.get("FAVORLAB_DOCKER_ROOT", "/var/tmp/favorlab-docker"))


def _no_engine(why):
    unavailable(f"no container engine runs here: {why}; runs wherever podman or docker does, as root",
                required_by=CONTAINERS)


def _cgroup_v1_cpu(parent: str) -> Path:
    return Path("/sys/fs/cgroup/cpu") / parent.lstrip("/")


def _start_dockerd(dockerd):
    """A Docker daemon of the test's own, on a socket of its own, with no bridge, no firewall rules and no IP
    forwarding (the host's network stays as found, as `built` checks). Returns its process and DOCKER_HOST."""
    DOCKER_ROOT.mkdir(parents=True, exist_ok=True)
    host = f"unix://{DOCKER_ROOT / 'docker.sock'}"
    log = open(DOCKER_ROOT / "dockerd.log", "w")
    proc = subprocess.Popen([dockerd, "--host", host, "--data-root", str(DOCKER_ROOT / "data"),
                             "--exec-root", str(DOCKER_ROOT / "exec"), "--pidfile", str(DOCKER_ROOT / "dockerd.pid"),
                             "--bridge", "none", "--iptables=false", "--ip6tables=false", "--ip-forward=false",
                             "--ip-masq=false",
                             # BuildKit's steps (buildkit/<id>) follow the daemon's parent, not the build's flag
                             *cb.cgroup_parent_args()], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(60):
        if proc.poll() is not None:
            break
        if subprocess.run([cb.engine_cmd("docker")[0], "info"], capture_output=True,
                          env=dict(os.environ, DOCKER_HOST=host)).returncode == 0:
            return proc, host
        time.sleep(1)
    proc.terminate()
    proc.wait(30)
    last = [l for l in (DOCKER_ROOT / "dockerd.log").read_text().splitlines() if "level=error" in l or
            "level=fatal" in l] or ["(no error in its log)"]
    _no_engine(f"dockerd does not start here: {last[-1]} ({DOCKER_ROOT / 'dockerd.log'})")


@pytest.fixture(scope="module", params=ENGINES)
def engine(request):
    """The engine's command (Podman, or Docker with a daemon: the running one, else one the test starts and
    stops, by its PID) and the environment its commands need. Where Docker is missing or cannot start, the
    reason is the skip (containers/README.md, 'Engines')."""
    name, env, daemon = request.param, dict(os.environ), None
    if not shutil.which(name):
        _no_engine(f"no {name} on PATH (apt-get install {'docker.io' if name == 'docker' else 'podman runc'}; "
                   f"containers/README.md, 'Engines')")
    if os.geteuid() != 0:
        _no_engine("the base image is made by debootstrap, which needs root")
    try:
        eng = cb.engine_cmd(name)
    except cb.BuildError as e:
        _no_engine(str(e))
    if subprocess.run([*eng, "info"], capture_output=True).returncode:
        if name != "docker" or not shutil.which("dockerd"):
            _no_engine(f"`{' '.join(eng)} info` fails: the engine does not run here")
        daemon, env["DOCKER_HOST"] = _start_dockerd(shutil.which("dockerd"))
    yield eng, env
    if daemon:
        daemon.terminate()
        daemon.wait(60)


def _host_network_state():
    """What an engine's bridge network changes on the host: IP forwarding, and firewall chains of its own."""
    chains = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout if shutil.which("iptables-save") else ""
    return {"ip_forward": Path("/proc/sys/net/ipv4/ip_forward").read_text().strip(),
            "engine_chains": sorted({l.split()[0] for l in chains.splitlines() if l.startswith(":") and
                                     re.search("NETAVARK|CNI-|DOCKER", l)})}


@pytest.fixture(scope="module")
def built(engine):
    """The images built from the lock files by `engine` (cached by the engine's layers: seconds when nothing
    changed): both with Podman; the analysis image with Docker, which the byte-identical test uses (the
    controller image runs privileged on the host's network, which the project runs under Podman).
    Building and using them leaves the host's network as it was: no engine bridge, so no IP forwarding
    turned on and no NAT chains added (a forwarding host once looped a test's SYNs 64 times)."""
    eng, env = engine
    docker = Path(eng[0]).name == "docker"
    image = "analysis" if docker else "controller"
    host_before = _host_network_state()
    p = subprocess.run([str(BUILD), image, "--engine", Path(eng[0]).name], capture_output=True, text=True,
                       timeout=3600, env=env)
    # the build's own log (what each step ran and how long it took) where pytest -s shows it
    print(p.stderr[-3000:])
    assert p.returncode == 0, p.stderr[-4000:]
    parent = os.environ.get(cb.CGROUP_PARENT)
    if parent and docker and env.get("DOCKER_HOST", "").startswith(f"unix://{DOCKER_ROOT}"):
        # the test's own daemon: its BuildKit steps ran in the caller's group, not beside it in /docker
        assert (_cgroup_v1_cpu(parent) / "buildkit").is_dir(), f"BuildKit's steps were not under {parent}"
    ids = {n: (REPO / "containers" / n / "IMAGE_ID").read_text().split() for n in cb.PARENT}
    yield eng, env, ids
    assert _host_network_state() == host_before, "the container engine changed the host's network"


@pytest.mark.slow
@pytest.mark.container
def test_analysis_image_gives_the_hosts_verdict_and_figure_tables_byte_for_byte(built, analysed, tmp_path):
    eng, env, ids = built
    plain, host, _ = analysed
    b = Path(shutil.copy(plain, tmp_path / plain.name))
    p = subprocess.run([str(REPO / "containers" / "run"), "analysis", "analyse", f"/data/{b.name}", "--out",
                        "/data/image", "--cores", "1"], cwd=tmp_path, capture_output=True, text=True, timeout=1800,
                       env=dict(env, FAVORLAB_ENGINE=Path(eng[0]).name, FAVORLAB_DATA=str(tmp_path)))
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
@pytest.mark.parametrize("engine", ["podman"], indirect=True)
def test_controller_image_bootstraps_with_nothing_to_install_and_no_network(built):
    eng, env, ids = built
    tag = ids["controller"][0]
    p = subprocess.run([*eng, "run", "--rm", *cb.ulimit_args(), *cb.cgroup_parent_args(), "--network", "none",
                        "--entrypoint", "bash", tag, "-c",
                        "scripts/bootstrap && ./favorlab help && command -v qemu-system-x86_64 debootstrap go "
                        "Rscript tshark && .venv/bin/python -c 'import snakemake, ansible' && cat /proc/self/cgroup"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "installing" not in p.stdout and "bootstrap: ready" in p.stdout
    parent = os.environ.get(cb.CGROUP_PARENT)
    if parent:
        # cgroup v1 has no cgroup namespace of the container's own here: the line is the host's path
        cpu = [l.split(":", 2)[2] for l in p.stdout.splitlines() if re.match(r"\d+:([^:]*,)?cpu(,[^:]*)?:", l)]
        assert cpu and cpu[0].startswith(parent + "/"), f"the container's cpu cgroup {cpu} is not under {parent}"
