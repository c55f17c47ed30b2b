"""What reaches ansible-playbook when a testbed is provisioned (orchestrate/testbeds.py) and what the roles
accept as favorlab_root, the tree they write and clean as root. Offline: Ansible runs on this machine
with a local connection, and only asserts and prints, never a change."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrate import testbeds

REPO = Path(__file__).resolve().parents[2]
ANSIBLE = REPO / "ansible"
PLAYBOOK = REPO / ".venv" / "bin" / "ansible-playbook"

pytestmark = pytest.mark.skipif(not PLAYBOOK.exists(), reason="ansible-playbook is not in .venv (scripts/bootstrap)")


def run_local(play: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """A play against localhost over a local connection, from ansible/ (its ansible.cfg and roles)."""
    pb = tmp_path / "play.yml"
    pb.write_text(play)
    return subprocess.run([str(PLAYBOOK), "-i", "localhost,", "-c", "local", *args, str(pb)],
                          cwd=ANSIBLE, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, ANSIBLE_ROLES_PATH=str(ANSIBLE / "roles"), ANSIBLE_CALLBACK_RESULT_FORMAT="json",
                                   ANSIBLE_PYTHON_INTERPRETER=sys.executable))


@pytest.fixture
def tarball(tmp_path, monkeypatch):
    """A prebuilt P4 prefix at a path with spaces, one of them followed by `favorlab_root=`."""
    t = tmp_path / "my cache favorlab_root=" / "p4lang.tar.gz"
    t.parent.mkdir()
    t.write_bytes(b"not really a tarball")
    monkeypatch.setenv("FAVORLAB_P4_TARBALL", str(t))
    return t


def test_extra_vars_are_one_json_object_with_each_value_whole(tarball):
    cmd = testbeds.playbook_command("site.yml", "/inv/hosts.yml", "node0",
                                    testbeds.site_vars({"kind": "ssh", "p4": True}, ["-o", "UserKnownHostsFile=/k h"]))
    assert cmd[-1] == "site.yml" and cmd[cmd.index("--limit") + 1] == "node0"
    es = [cmd[i + 1] for i, a in enumerate(cmd) if a in ("-e", "--extra-vars")]
    assert len(es) == 1
    assert json.loads(es[0]) == {"favorlab_p4": True, "p4_toolchain_tarball": str(tarball),
                                 "ansible_ssh_common_args": "-o 'UserKnownHostsFile=/k h'"}


def test_ansible_reads_the_hostile_path_as_one_value_and_sets_nothing_else(tarball, tmp_path):
    ev = testbeds.site_vars({"kind": "ssh", "p4": True}, [])
    del ev["ansible_ssh_common_args"]      # a local connection here
    play = """- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.debug:
        msg: "TARBALL={{ p4_toolchain_tarball }}|ROOT={{ favorlab_root | default('unset') }}|X={{ x | default('unset') }}"
"""
    p = run_local(play, tmp_path, "-e", json.dumps(ev))
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"TARBALL={tarball}|ROOT=unset|X=unset" in p.stdout
    # what the key=value form did: the path cut at its first space, favorlab_root set from its tail
    p = run_local(play, tmp_path, "-e", f"p4_toolchain_tarball={tarball}")
    assert "ROOT=/p4lang.tar.gz|" in p.stdout and f"TARBALL={tarball}|" not in p.stdout


@pytest.mark.parametrize("host", ["node0,node1", "all", "!node0", "node*", "~n.*", "node0:&x", ""])
def test_a_host_pattern_is_refused(host):
    with pytest.raises(SystemExit, match="plain inventory host name"):
        testbeds.playbook_command("site.yml", "/inv/hosts.yml", host, {})


VALIDATE = """- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: favorlab_code
        tasks_from: validate_root
        public: true
    - ansible.builtin.debug:
        msg: "ROOT OK {{ favorlab_root }}"
"""


@pytest.mark.parametrize("root", ["/", "/opt", "/opt/", "/opt/../etc", "/opt/favorlab/../../etc", "opt/favorlab",
                                  "/etc/favorlab", "/opt/fav lab", "/opt/favorlab'; rm -rf /;'", "/opt//favorlab",
                                  "/opt/.", "/opt/favorlab/", "", "/home/u/favorlab"])
def test_the_roles_refuse_a_favorlab_root_outside_opt(root, tmp_path):
    p = run_local(VALIDATE, tmp_path, "-e", json.dumps({"favorlab_root": root}))
    assert p.returncode != 0
    assert "favorlab_root=" in p.stdout and "is refused" in p.stdout and "ROOT OK" not in p.stdout


@pytest.mark.parametrize("root", [None, "/opt/favorlab", "/opt/favorlab-2/tree", "/opt/fav_lab.1"])
def test_the_roles_accept_a_plain_root_under_opt(root, tmp_path):
    p = run_local(VALIDATE, tmp_path, *(["-e", json.dumps({"favorlab_root": root})] if root else []))
    assert p.returncode == 0, p.stdout
    assert f"ROOT OK {root or '/opt/favorlab'}" in p.stdout


def test_every_role_that_uses_favorlab_root_validates_it_first():
    """The favorlab_code role's first task is the validation; favorlab_qdiscs asserts its sources' path first."""
    code = (ANSIBLE / "roles/favorlab_code/tasks/main.yml").read_text()
    first = code[code.index("\n- "):].split("\n- ")[1]
    assert "import_tasks: validate_root.yml" in first
    sch = (ANSIBLE / "roles/favorlab_qdiscs/tasks/main.yml").read_text()
    first = next(l for l in sch.splitlines() if l.startswith("- "))
    assert "plain absolute path" in first


def test_plays_run_with_mitogens_strategy_unless_the_caller_chose_one(tmp_path, monkeypatch):
    """ansible-playbook gets Mitogen's mitogen_linear (installed from requirements.txt) and a plugin path that
    holds it, and Ansible accepts the pair: a local play runs under it. A strategy in the caller's environment
    is left as it is."""
    monkeypatch.delenv("ANSIBLE_STRATEGY", raising=False)
    env = testbeds.ansible_env()
    assert env["ANSIBLE_STRATEGY"] == "mitogen_linear", "mitogen is not installed in .venv (requirements.txt)"
    assert any((Path(d) / "mitogen_linear.py").is_file() for d in env["ANSIBLE_STRATEGY_PLUGINS"].split(os.pathsep))
    pb = tmp_path / "play.yml"
    pb.write_text("- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.command: echo ran\n"
                  "      changed_when: false\n    - ansible.builtin.debug: {var: ansible_play_batch}\n")
    p = subprocess.run([str(PLAYBOOK), "-i", "localhost,", "-c", "local", str(pb)], cwd=ANSIBLE, capture_output=True,
                       text=True, timeout=120, env=dict(env, ANSIBLE_PYTHON_INTERPRETER=sys.executable))
    assert p.returncode == 0 and "failed=0" in p.stdout, p.stdout[-2000:] + p.stderr[-2000:]
    monkeypatch.setenv("ANSIBLE_STRATEGY", "linear")
    assert testbeds.ansible_env()["ANSIBLE_STRATEGY"] == "linear"
