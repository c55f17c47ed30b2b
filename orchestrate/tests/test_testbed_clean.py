"""`./favorlab testbed clean` (orchestrate/testbeds.py, ansible/clean.yml) offline: the play is valid
Ansible, the command built for a host is the right one, what clean refuses, and the host's record of what
provisioning installed (ansible/roles/testbed_base/tasks/record.yml, files/found.py) keeps the host as it
was before favorlab. orchestrate/tests/test_testbed_clean_guest.py runs the play in check mode on the shared guest."""
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrate import pool, testbeds

REPO = Path(__file__).resolve().parents[2]
ANSIBLE = REPO / "ansible"
BIN = REPO / ".venv" / "bin"
FOUND = ANSIBLE / "roles" / "testbed_base" / "files" / "found.py"

needs_ansible = pytest.mark.skipif(not (BIN / "ansible-playbook").exists(),
                                   reason="ansible-playbook is not in .venv (scripts/bootstrap installs it)")


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    c = tmp_path / "cache"
    monkeypatch.setenv("FAVORLAB_CACHE", str(c))
    return c


@pytest.fixture
def inventory(tmp_path):
    inv = tmp_path / "my hosts" / "hosts.yml"        # a space in the path: it must stay one argument
    inv.parent.mkdir()
    inv.write_text("all:\n  children:\n    ssh_hosts:\n      hosts:\n"
                   "        node0: {ansible_host: 192.0.2.10, ansible_user: alice, ansible_become: true}\n"
                   "        node1: {ansible_host: 192.0.2.11}\n")
    return inv


def cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "orchestrate.testbeds", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, **(env or {})))


@needs_ansible
@pytest.mark.parametrize("playbook", ["clean.yml", "site.yml"])
def test_the_plays_are_valid_ansible(playbook):
    p = subprocess.run([str(BIN / "ansible-playbook"), "--syntax-check", "-i", "localhost,", playbook],
                       cwd=ANSIBLE, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr


@needs_ansible
@pytest.mark.parametrize("check", [False, True])
def test_the_command_for_an_inventory_host(inventory, cache, check):
    p = cli("clean", "node0", "--inventory", str(inventory), "--dry-run", *(["--check"] if check else []))
    assert p.returncode == 0, p.stderr
    line = p.stdout.strip().splitlines()[-1]
    assert line.startswith(f"(cd {shlex.quote(str(ANSIBLE))} && ") and line.endswith(")")
    cmd = shlex.split(line[line.index("&& ") + 3:-1])
    # the strategy ansible-playbook runs with (orchestrate/testbeds.py's ansible_env), as shell assignments
    strategy = {k: v for k, v in testbeds.ansible_env().items()
                if k.startswith("ANSIBLE_STRATEGY") and os.environ.get(k) != v}
    assert cmd[:len(strategy)] == [f"{k}={v}" for k, v in strategy.items()] and strategy
    cmd = cmd[len(strategy):]
    kh = pool.known_hosts_file(pool.ssh_member_id("node0", inventory))
    assert cmd == [str(BIN / "ansible-playbook"), "-i", str(inventory), "--limit", "node0",
                   *(["--check"] if check else []),
                   "-e", json.dumps({"ansible_ssh_common_args":
                                     f"-o UserKnownHostsFile={kh} -o StrictHostKeyChecking=accept-new"}),
                   "clean.yml"]


@needs_ansible
@pytest.mark.parametrize("host", ["node7", "ssh_hosts", "all", "node0,node1", "node*"])
def test_clean_refuses_what_is_not_one_host_of_the_inventory(inventory, host):
    p = cli("clean", host, "--inventory", str(inventory), "--dry-run")
    assert p.returncode != 0 and f"cannot read host {host} from inventory {inventory}" in p.stderr
    assert "ansible-playbook" not in p.stdout


def test_clean_refuses_an_unknown_target_and_a_missing_inventory(tmp_path):
    p = cli("clean", "nosuchguest")
    assert p.returncode != 0 and "'nosuchguest' is not a config file" in p.stderr and "--inventory" in p.stderr
    p = cli("clean", "node0", "--inventory", str(tmp_path / "none.yml"))
    assert p.returncode != 0 and "none.yml not found" in p.stderr
    p = cli("clean", str(tmp_path / "none.yaml"))
    assert p.returncode != 0 and "no such config file" in p.stderr


def test_a_stopped_local_guest_has_nothing_to_clean():
    p = cli("clean", "config/smoke.yaml")
    assert p.returncode == 0, p.stderr
    assert "favorlab-smoke: nothing to clean" in p.stdout and "ansible-playbook" not in p.stdout


def test_clean_waits_for_no_run_it_refuses_a_leased_testbed(inventory, monkeypatch):
    """A run holds its testbed's lease from before its first attempt to after its last: cleaning the host
    under it would pull the modules and /opt/favorlab from a running experiment."""
    member = testbeds.clean_members("node0", str(inventory))[0]
    ran = []
    monkeypatch.setattr(testbeds, "clean_command", lambda tb, check=False: ["true"])
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: ran.append(a) or subprocess.CompletedProcess(a, 0))
    with pool.try_lease(member, what="a run"):
        with pytest.raises(SystemExit, match=r"node0@\w+ is in use \(.*a run"):
            testbeds.clean(member)
    assert ran == []
    assert testbeds.clean(member) == 0 and len(ran) == 1       # free again: it runs


# ------------------------------------------------------------------ the host's record

def found(record: Path, *keys) -> dict:
    p = subprocess.run([sys.executable, str(FOUND), str(record), *keys], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_found_reads_the_record_and_the_sysctls(tmp_path):
    rec = tmp_path / "installed.json"
    rec.write_text(json.dumps({"packages": ["iperf3"]}))
    f = found(rec, "net.core.somaxconn", "net.nonexistent.key")
    assert f["record"] == {"packages": ["iperf3"]} and f["record_problem"] == ""
    assert f["sysctls"] == {"net.core.somaxconn": Path("/proc/sys/net/core/somaxconn").read_text().strip()}
    assert found(tmp_path / "none.json")["record"] == {}


def test_found_names_the_missing_packages_and_nginx_as_systemctl_says(tmp_path):
    """Provisioning's one look at the host also says which packages are not installed (dpkg's word: a name it does
    not know is missing, apt resolves it) and nginx's service state as `systemctl is-enabled/is-active` print it."""
    import shutil
    if not shutil.which("dpkg-query"):
        pytest.skip("no dpkg-query on this machine (a Debian or Ubuntu host has it)")
    have = subprocess.run(["dpkg-query", "-W", "-f=${Package}\\t${Status}\\n", "coreutils"], capture_output=True,
                          text=True).stdout
    assert "install ok installed" in have, "this test reads coreutils as installed"
    f = found(tmp_path / "none.json", "net.core.somaxconn", "--missing", "coreutils", "favorlab-no-such-package")
    assert f["missing"] == ["favorlab-no-such-package"]
    assert f["sysctls"].keys() == {"net.core.somaxconn"}
    assert set(f["nginx_service"]) == {"enabled", "active"}
    if shutil.which("systemctl") is None:
        assert f["nginx_service"] == {"enabled": "", "active": ""}
    assert "missing" not in found(tmp_path / "none.json") and found(tmp_path / "none.json", "--missing")["missing"] == []


@pytest.mark.parametrize("content, says", [(b"", "is empty"), (b'{"packages": ["ip', "is not valid JSON"),
                                           (b"[1, 2]", "not a JSON object"), (b"\xff\xfe", "is not valid JSON")])
def test_a_broken_record_reads_as_empty_and_says_so(tmp_path, content, says):
    """Empty: clean then removes no package (only those a record names go) and provisioning records afresh."""
    rec = tmp_path / "installed.json"
    rec.write_bytes(content)
    f = found(rec)
    assert f["record"] == {} and str(rec) in f["record_problem"] and says in f["record_problem"]


RECORD_PLAY = """- hosts: all
  gather_facts: false
  tasks:
    - name: the record as provisioning finds it
      ansible.builtin.set_fact:
        favorlab_record: "{{ lookup('file', record_file) | from_json if record_exists else {} }}"
    - name: merge
      ansible.builtin.include_role:
        name: testbed_base
        tasks_from: record
      vars:
        testbed_record_file: "{{ record_file }}"
"""


@needs_ansible
def test_the_record_keeps_the_host_as_it_was_and_adds_packages(tmp_path):
    """The first provisioning sees the host before favorlab (its sysctl values are the ones to put back);
    a later one sees it provisioned and must not overwrite them; packages accumulate; an unchanged record
    is not rewritten (a second site.yml reports changed=0)."""
    rec = tmp_path / "installed.json"
    play = tmp_path / "play.yml"
    play.write_text(RECORD_PLAY)

    def provision(new: dict) -> str:
        p = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(play), "-e",
                            json.dumps({"record_file": str(rec), "record_exists": rec.exists(),
                                        "favorlab_record_new": new, "ansible_python_interpreter": sys.executable})],
                           cwd=ANSIBLE, capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, ANSIBLE_ROLES_PATH=str(ANSIBLE / "roles")))
        assert p.returncode == 0, p.stdout + p.stderr
        return p.stdout
    provision({"sysctls_before": {"net.core.rmem_max": "212992"}, "packages": ["wrk", "iperf3"]})
    assert json.loads(rec.read_text()) == {"sysctls_before": {"net.core.rmem_max": "212992"},
                                           "packages": ["iperf3", "wrk"]}
    provision({"sysctls_before": {"net.core.rmem_max": "8388608"}, "packages": ["libiperf0", "wrk"],
               "p4_repository_added": True})
    assert json.loads(rec.read_text()) == {"sysctls_before": {"net.core.rmem_max": "212992"},
                                           "packages": ["iperf3", "libiperf0", "wrk"], "p4_repository_added": True}
    out = provision({"sysctls_before": {"net.core.rmem_max": "8388608"}, "packages": []})
    assert testbeds.ansible_recap(out)["changed"] == 0
