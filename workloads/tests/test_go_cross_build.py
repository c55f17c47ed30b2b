"""favorflow for the testbed hosts' machine types: workloads/go/build MACHINE cross-compiles a static Linux
binary per `uname -m` name (Ansible's ansible_architecture), and the favorlab_code role ships each host the one
built for its own machine, so an aarch64 host gets an ARM binary from an x86-64 controller."""
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from favorlab_testing import CI, GUEST, unavailable

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "workloads" / "go" / "build"
BIN = REPO / "workloads" / "go" / "bin"
ROLE_TASKS = REPO / "ansible" / "roles" / "favorlab_code" / "tasks" / "main.yml"


def build(*machines: str) -> subprocess.CompletedProcess:
    if shutil.which("go") is None:
        unavailable("no `go` on PATH: apt-get install golang-go to cross-build favorflow", required_by=GUEST + CI)
    return subprocess.run(["nice", "-n", "19", str(BUILD), *machines], capture_output=True, text=True, timeout=600)


# machine -> (what `file` says, the ELF header's e_machine: x86-64 is 62, AArch64 183)
MACHINES = {"x86_64": ("x86-64", 62), "aarch64": ("ARM aarch64", 183)}


@pytest.fixture(scope="module")
def built():
    r = build(*MACHINES)
    assert r.returncode == 0, r.stdout + r.stderr
    return {m: BIN / f"favorflow-{m}" for m in MACHINES}


@pytest.mark.parametrize("machine", MACHINES)
def test_each_machine_gets_a_linux_elf_of_its_own_architecture(built, machine):
    """Read from the ELF header itself, so this holds where `file` is not installed."""
    head = built[machine].read_bytes()[:20]
    assert head[:4] == b"\x7fELF" and head[4] == 2 and head[5] == 1, "not a 64-bit little-endian ELF"
    assert head[7] in (0, 3), "OS ABI is neither System V nor Linux"
    assert int.from_bytes(head[18:20], "little") == MACHINES[machine][1]


@pytest.mark.parametrize("machine", MACHINES)
def test_file_names_each_binary_static_and_of_its_machine(built, machine):
    if shutil.which("file") is None:
        pytest.skip("no `file` command here (Debian's `file`); the ELF header test above checks the same "
                    "architecture; runs where `file` is installed")
    out = subprocess.run(["file", "-b", str(built[machine])], capture_output=True, text=True, check=True).stdout
    assert out.startswith("ELF 64-bit LSB executable") and MACHINES[machine][0] in out, out
    assert "statically linked" in out, out


def test_an_unknown_machine_is_refused_with_the_known_ones():
    r = build("sparc64")
    assert r.returncode != 0
    assert "no Go port known for machine 'sparc64'" in r.stderr and "aarch64" in r.stderr, r.stderr


def test_the_role_builds_for_the_play_hosts_machines_and_gives_each_host_its_own():
    """The role's build step names every play host's ansible_architecture, adds the file the build writes for
    each (bin/favorflow-<machine>) to that machine type's tarball as the path the runner starts
    (testbed/runner/traffic.py: workloads/go/bin/favorflow), and each host unpacks the tarball of its own."""
    tasks = yaml.safe_load(ROLE_TASKS.read_text())
    tarball = next(t for t in tasks if t.get("register") == "favorlab_tarball")
    sh = tarball["ansible.builtin.shell"]
    assert 'workloads/go/build "${machines[@]}"' in sh and "machines=({{ favorlab_machines" in sh
    assert "'ansible_architecture'" in tarball["vars"]["favorlab_machines"]
    assert "ansible_play_hosts" in tarball["vars"]["favorlab_machines"]
    assert '"workloads/go/bin/favorflow-$m"' in sh and "workloads/go/bin/favorflow," in sh and "--mode=0755" in sh
    unpack = next(t["ansible.builtin.unarchive"] for t in tasks if "ansible.builtin.unarchive" in t)
    assert unpack["src"] == "{{ favorlab_tarball.stdout }}/favorlab-{{ ansible_architecture }}.tar"
    assert unpack["dest"] == "{{ favorlab_root }}"


PLAYBOOK = REPO / ".venv" / "bin" / "ansible-playbook"


def test_the_role_installs_this_hosts_own_build_and_again_changes_nothing(tmp_path):
    """The role's tarball, directory, unpack and clean-up tasks run by Ansible against this machine (local
    connection, a scratch favorlab_root, no owner change so it runs unprivileged): the host gets the tracked files,
    the binary built for its ansible_architecture (mode 0755) and the list of the copy's files, and a second run
    reports no change (the guest test's changed=0 relies on it: the list is made anew each run)."""
    if not PLAYBOOK.exists():
        unavailable("ansible-playbook is not in .venv (requirements.txt: scripts/bootstrap)", required_by=CI)
    if shutil.which("go") is None:
        unavailable("no `go` on PATH: apt-get install golang-go", required_by=GUEST + CI)
    wanted = ("favorlab_tarball", "root directory exists", "unpack", "controller's tarballs")
    tasks = [t for t in yaml.safe_load(ROLE_TASKS.read_text())
             if any(w in t.get("name", "") or w == t.get("register") for w in wanted)]
    for t in tasks:
        for module in ("ansible.builtin.file", "ansible.builtin.unarchive"):
            for k in ("owner", "group"):
                t.get(module, {}).pop(k, None)
    assert len(tasks) == 4, [t.get("name") for t in tasks]
    (tmp_path / "tasks.yml").write_text(yaml.safe_dump(tasks, sort_keys=False))
    root = tmp_path / "root"
    (tmp_path / "play.yml").write_text(yaml.safe_dump([{
        "hosts": "all", "gather_subset": ["min"],
        "vars": {"favorlab_src": str(REPO), "favorlab_root": str(root)},
        "tasks": [{"name": "the role's favorflow tasks", "ansible.builtin.include_tasks": str(tmp_path / "tasks.yml")}]}]))

    def play() -> str:
        r = subprocess.run(["nice", "-n", "19", str(PLAYBOOK), "-i", "localhost,", "-c", "local",
                            "-e", f"ansible_python_interpreter={PLAYBOOK.parent / 'python'}", str(tmp_path / "play.yml")],
                           cwd=REPO / "ansible", capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
        return r.stdout

    play()
    machine = subprocess.run(["uname", "-m"], capture_output=True, text=True, check=True).stdout.strip()
    installed = root / "workloads" / "go" / "bin" / "favorflow"
    assert installed.read_bytes() == (BIN / f"favorflow-{machine}").read_bytes()
    assert installed.stat().st_mode & 0o777 == 0o755
    assert (root / "README.md").read_bytes() == (REPO / "README.md").read_bytes()
    listed = (root / ".favorlab-files").read_text().splitlines()
    assert "workloads/go/bin/favorflow" in listed and "README.md" in listed
    assert "changed=0" in play()
