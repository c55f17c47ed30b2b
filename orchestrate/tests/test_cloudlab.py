"""orchestrate.cloudlab: a manifest RSpec -> the ssh-hosts inventory, and every bad input refused with
the problem and the fix, leaving an existing inventory untouched."""
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from orchestrate import cloudlab, inventory
from orchestrate.inventory import REPO

MANIFEST = Path(__file__).parent / "data" / "cloudlab-manifest.xml"
EXAMPLE = REPO / "ansible" / "inventories" / "ssh-hosts" / "hosts.example.yml"


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FAVORLAB_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def key(tmp_path):
    k = tmp_path / "id_ed25519"
    k.write_text("not a real key\n")
    (tmp_path / "id_ed25519.pub").write_text("ssh-ed25519 AAAA test\n")
    return k


def convert(tmp_path, *args, out=None):
    out = out or tmp_path / "inv" / "hosts.yml"
    rc = cloudlab.main([str(a) for a in args] + ["-o", str(out)])
    return rc, out


def test_inventory_host_by_host(tmp_path, key, capsys):
    rc, out = convert(tmp_path, MANIFEST, "--user", "carol", "--key", key)
    assert rc == 0, capsys.readouterr().err
    inv = yaml.safe_load(out.read_text())
    group = inv["all"]["children"]["ssh_hosts"]
    assert list(group["hosts"]) == ["node0", "node1"]
    for name, pc in (("node0", "pc512"), ("node1", "pc547")):
        assert group["hosts"][name] == {
            "ansible_host": f"{pc}.emulab.net", "ansible_port": 22, "ansible_user": "carol",
            "ansible_become": True, "ansible_ssh_private_key_file": str(key),
            # the node's key in a known_hosts file of its own, the one the pipeline uses for it
            "ansible_ssh_common_args": inventory.known_hosts_args(name, out)}
        assert "UserKnownHostsFile=" in group["hosts"][name]["ansible_ssh_common_args"]
    assert group["vars"] == {"ansible_python_interpreter": "/usr/bin/python3", "testbed_apt_update": True}
    assert "node0: carol@pc512.emulab.net port 22" in capsys.readouterr().out


def test_same_shape_as_the_ssh_hosts_example(tmp_path, key):
    """The group and its vars are those of the hand-written example that site.yml is used with."""
    example = yaml.safe_load(EXAMPLE.read_text())["all"]["children"]
    rc, out = convert(tmp_path, MANIFEST, "--user", "alice", "--key", key)
    ours = yaml.safe_load(out.read_text())["all"]["children"]
    assert rc == 0 and ours.keys() == example.keys() == {"ssh_hosts"}
    assert ours["ssh_hosts"]["vars"] == example["ssh_hosts"]["vars"]


def test_ansible_reads_it(tmp_path, key):
    """ansible-inventory, which orchestrate/testbeds.py asks for a host's SSH coordinates."""
    exe = Path(sys.executable).with_name("ansible-inventory")
    if not exe.exists():
        pytest.skip("ansible-inventory is not in this venv (pip install -r requirements.txt)")
    rc, out = convert(tmp_path, MANIFEST, "--user", "dmitri", "--key", key)
    r = subprocess.run([str(exe), "-i", str(out), "--host", "node1"], capture_output=True, text=True,
                       cwd=REPO / "ansible", timeout=120)
    assert r.returncode == 0, r.stderr
    hv = yaml.safe_load(r.stdout)
    assert (hv["ansible_host"], hv["ansible_port"], hv["ansible_user"]) == ("pc547.emulab.net", 22, "dmitri")
    assert hv["ansible_python_interpreter"] == "/usr/bin/python3"


def test_port_from_the_login_and_no_key(tmp_path):
    xml = MANIFEST.read_text().replace('port="22" username="bob"', 'port="29042" username="bob"')
    inv = cloudlab.convert(xml, "bob", None)
    hosts = inv["all"]["children"]["ssh_hosts"]["hosts"]
    assert [h["ansible_port"] for h in hosts.values()] == [29042, 29042]
    assert all("ansible_ssh_private_key_file" not in h for h in hosts.values())


def test_single_user_needs_no_flag():
    xml = "\n".join(line for line in MANIFEST.read_text().splitlines()
                    if "<login" not in line or 'username="alice"' in line)
    hosts = cloudlab.convert(xml, None, None)["all"]["children"]["ssh_hosts"]["hosts"]
    assert {h["ansible_user"] for h in hosts.values()} == {"alice"}


REQUEST = """<rspec xmlns="http://www.geni.net/resources/rspec/3" type="request">
  <node client_id="node0" exclusive="true"><sliver_type name="raw-pc"/><hardware_type name="d430"/></node>
</rspec>"""


@pytest.mark.parametrize("xml,args,message", [
    ("<html><body>Manifest</body>", ["--user", "alice"], "is not XML"),
    ("", ["--user", "alice"], "is not XML"),
    ('<rspec xmlns="http://www.protogeni.net/resources/rspec/2"/>', ["--user", "alice"], "is not a GENI v3 RSpec"),
    (REQUEST, ["--user", "alice"], "the experiment is not ready yet"),
    (REQUEST, ["--user", "alice"], "you pasted the request RSpec"),
    ('<rspec xmlns="http://www.geni.net/resources/rspec/3" type="manifest"/>', ["--user", "alice"], "has no nodes"),
    (None, ["--user", "mallory"], "user mallory has no login on node0, node1"),
    (None, ["--user", "mallory"], "give --user with your CloudLab username"),
    (None, [], "lists logins for 4 users (alice, bob, carol, dmitri); give --user"),
])
def test_bad_input_names_problem_and_fix(tmp_path, capsys, xml, args, message):
    src = MANIFEST
    if xml is not None:
        src = tmp_path / "manifest.xml"
        src.write_text(xml)
    rc, out = convert(tmp_path, src, *args)
    assert rc == 1
    assert message in capsys.readouterr().err
    assert not out.exists() and not out.parent.exists()


def test_a_node_not_ready_yet(tmp_path, capsys):
    lines = MANIFEST.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if 'client_id="node1"' in line)
    xml = "\n".join(line for i, line in enumerate(lines) if i < start or "<login" not in line)
    src = tmp_path / "m.xml"
    src.write_text(xml)
    assert convert(tmp_path, src, "--user", "alice")[0] == 1
    assert "nodes node1 in" in capsys.readouterr().err


def test_missing_files_and_public_key(tmp_path, key, capsys):
    assert convert(tmp_path, tmp_path / "nope.xml", "--user", "alice")[0] == 1
    assert "cannot read" in capsys.readouterr().err
    assert convert(tmp_path, MANIFEST, "--user", "alice", "--key", tmp_path / "missing")[0] == 1
    assert "not found" in capsys.readouterr().err
    assert convert(tmp_path, MANIFEST, "--user", "alice", "--key", f"{key}.pub")[0] == 1
    assert f"give the private key beside it ({key})" in capsys.readouterr().err


def test_never_overwrites_without_force(tmp_path, key, capsys):
    out = tmp_path / "hosts.yml"
    out.write_text("# the inventory of hosts in use\n")
    assert convert(tmp_path, MANIFEST, "--user", "alice", out=out)[0] == 1
    assert "exists; pass --force" in capsys.readouterr().err
    assert out.read_text() == "# the inventory of hosts in use\n"
    bad = tmp_path / "bad.xml"
    bad.write_text(REQUEST)
    assert convert(tmp_path, bad, "--user", "alice", "--force", out=out)[0] == 1
    assert out.read_text() == "# the inventory of hosts in use\n", "bad input must not touch it, even with --force"
    assert convert(tmp_path, MANIFEST, "--user", "alice", "--force", out=out)[0] == 0
    assert yaml.safe_load(out.read_text())["all"]["children"]["ssh_hosts"]["hosts"]["node0"]["ansible_user"] == "alice"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_cli_as_a_module(tmp_path, key):
    out = tmp_path / "hosts.yml"
    r = subprocess.run([sys.executable, "-m", "orchestrate.cloudlab", str(MANIFEST), "--user", "bob",
                        "--key", str(key), "-o", str(out)], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "next: cd ansible && ../.venv/bin/ansible-playbook" in r.stdout
    assert yaml.safe_load(out.read_text())["all"]["children"]["ssh_hosts"]["hosts"]["node1"]["ansible_user"] == "bob"
