"""orchestrate.fabric: the inventory of FABRIC VMs behind the bastion, the dry run (no fablib, no
credentials, no file), and the real create/delete path against a fake fablib.

The fake checks our use of fablib's API as documented (FablibManager.new_slice, Slice.add_node/submit/
get_node, Node.get_management_ip/get_username/get_private_key_file, the bastion getters); it cannot
show that FABRIC accepts the slice. test_calls_fit_the_real_fablib binds every call the fake recorded
to the signature of the real method, where fabrictestbed-extensions is installed."""
import inspect
import os
import shlex
import shutil
import subprocess
import sys

import pytest
import yaml

from orchestrate import fabric, inventory, pool
from orchestrate.inventory import REPO, InventoryError
from orchestrate.tests.fakes import ACCOUNT_GETTERS, FablibAccount, fabric_keys, install_fablib, real_fablib

BASTION = {"host": "bastion.fabric-testbed.net", "user": "alice_0000012345", "key": "/keys/fabric_bastion_key"}
CACHE = "/cache/favorlab"
# the bastion's host key in a known_hosts file of its own (not ~/.ssh/known_hosts)
PROXY = (f"ProxyCommand=ssh -i /keys/fabric_bastion_key -o IdentitiesOnly=yes -o UserKnownHostsFile={CACHE}/known_hosts/"
         "fabric-bastion@bastion.fabric-testbed.net -o StrictHostKeyChecking=accept-new "
         "-W [%h]:%p alice_0000012345@bastion.fabric-testbed.net")


@pytest.fixture(autouse=True)
def cache(monkeypatch):
    monkeypatch.setenv("FAVORLAB_CACHE", CACHE)


def test_inventory_field_by_field_ipv6_ipv4():
    nodes = [{"name": "node0", "address": "2001:db8:a0::10", "user": "ubuntu", "key": "/keys/slice_key"},
             {"name": "node1", "address": "[2001:db8:a0::11]", "user": "ubuntu", "key": "/keys/slice_key"},
             {"name": "node2", "address": "192.0.2.7", "user": "debian", "key": "/keys/other"}]
    inv = fabric.fabric_inventory(nodes, BASTION)
    group = inv["all"]["children"]["ssh_hosts"]
    assert group["vars"] == {"ansible_python_interpreter": "/usr/bin/python3", "testbed_apt_update": True}
    assert list(group["hosts"]) == ["node0", "node1", "node2"]
    for name, addr, user, key in (("node0", "2001:db8:a0::10", "ubuntu", "/keys/slice_key"),
                                  ("node1", "2001:db8:a0::11", "ubuntu", "/keys/slice_key"),
                                  ("node2", "192.0.2.7", "debian", "/keys/other")):
        hv = group["hosts"][name]
        assert hv["ansible_host"] == addr          # bare, no brackets: what Ansible and ssh take
        assert hv["ansible_user"] == user
        assert hv["ansible_become"] is True
        assert hv["ansible_ssh_private_key_file"] == key
        # each node's own known_hosts options are added when the inventory is written (a file: its path
        # is part of the testbed's id), see test_written_inventory_keeps_host_keys_per_node
        assert shlex.split(hv["ansible_ssh_common_args"]) == ["-o", PROXY]
        assert set(hv) == {"ansible_host", "ansible_user", "ansible_become", "ansible_ssh_private_key_file",
                           "ansible_ssh_common_args"}


@pytest.mark.skipif(shutil.which("ssh") is None, reason="no ssh client to parse the options")
def test_ssh_parses_the_proxy_for_an_ipv6_host():
    """ssh -G only parses (no connection): the outer options, and the inner -W with %h of an IPv6
    address, which ssh refuses unbracketed ("Bad stdio forwarding specification")."""
    hv = fabric.fabric_inventory([{"name": "n", "address": "2001:db8::10", "user": "ubuntu", "key": "/k"}],
                                 BASTION)["all"]["children"]["ssh_hosts"]["hosts"]["n"]
    outer = subprocess.run(["ssh", "-G", *shlex.split(hv["ansible_ssh_common_args"]), f"ubuntu@{hv['ansible_host']}"],
                           capture_output=True, text=True, timeout=30)
    assert outer.returncode == 0, outer.stderr
    inner = PROXY.split("=", 1)[1].replace("%h", hv["ansible_host"]).replace("%p", "22")
    r = subprocess.run(shlex.split(inner.replace("ssh ", "ssh -G ", 1)), capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    bare = subprocess.run(["ssh", "-G", "-W", "2001:db8::10:22", "x@bastion"], capture_output=True, text=True, timeout=30)
    assert bare.returncode != 0, "the reason for the brackets"


@pytest.mark.parametrize("bastion,message", [
    (dict(BASTION, user=None), "FABRIC_BASTION_USERNAME"),
    (dict(BASTION, key=""), "FABRIC_BASTION_KEY_LOCATION"),
    (dict(BASTION, key="/my keys/bastion"), "has spaces or quotes"),
])
def test_bad_bastion_settings(bastion, message):
    with pytest.raises(InventoryError, match=message):
        fabric.fabric_inventory([{"name": "n", "address": "192.0.2.1", "user": "u", "key": "/k"}], bastion)


def test_node_without_address():
    with pytest.raises(InventoryError, match="node node0 has no management address"):
        fabric.fabric_inventory([{"name": "node0", "address": None, "user": "u", "key": "/k"}], BASTION)


def test_dry_run_needs_no_fablib_nor_credentials(tmp_path):
    """A fablib that explodes on import and an environment without FABRIC_* or a home config."""
    poison = tmp_path / "poison" / "fabrictestbed_extensions"
    poison.mkdir(parents=True)
    (poison / "__init__.py").write_text("raise RuntimeError('the dry run imported fablib')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FABRIC")}
    env.update(HOME=str(tmp_path / "home"), PYTHONPATH=f"{poison.parent}{os.pathsep}{REPO}")
    out = tmp_path / "inv" / "hosts.yml"
    r = subprocess.run([sys.executable, "-m", "orchestrate.fabric", "create", "--name", "favorlab", "--nodes", "2",
                        "--cores", "4", "--ram", "16", "--disk", "50", "--image", "default_debian_12",
                        "--site", "tacc", "--lease-hours", "30", "-o", str(out), "--dry-run"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert r.returncode == 0, r.stderr
    assert ("would create slice favorlab: 2 node(s) node0..node1 at site TACC, each 4 cores, 16 GB RAM, "
            "50 GB disk, image default_debian_12, lease 30 h") in r.stdout
    # every fablib call the real run makes, printed as it would be made
    calls = [l.split("would call ", 1)[1] for l in r.stdout.splitlines() if l.startswith("dry run: would call ")]
    slice_ = "FablibManager().new_slice(name='favorlab')"
    assert calls[4:9] == ["FablibManager().new_slice(name='favorlab')",
                          f"{slice_}.add_node(name='node0', site='TACC', cores=4, ram=16, disk=50, image='default_debian_12')",
                          f"{slice_}.add_node(name='node1', site='TACC', cores=4, ram=16, disk=50, image='default_debian_12')",
                          f"{slice_}.submit(lease_in_hours=30)", f"{slice_}.get_node(name='node0')"]
    assert f"would write {out}" in r.stdout
    inv = yaml.safe_load(r.stdout.split(":\n\n", 1)[1])
    hosts = inv["all"]["children"]["ssh_hosts"]["hosts"]
    assert list(hosts) == ["node0", "node1"]
    assert hosts["node1"]["ansible_host"] == f"<{slice_}.get_node(name='node1').get_management_ip()>"
    assert hosts["node1"]["ansible_user"] == f"<{slice_}.get_node(name='node1').get_username()>"
    assert "-W [%h]:%p YOUR_BASTION_LOGIN@bastion.fabric-testbed.net" in hosts["node0"]["ansible_ssh_common_args"]
    assert not out.exists() and not out.parent.exists()


def test_cli_refuses_bad_sizes(capsys):
    for args in (["--nodes", "0"], ["--nodes", "17"], ["--cores", "1"], ["--image", "default_rocky_9"]):
        with pytest.raises(SystemExit):
            fabric.main(["create", "--name", "x", "--dry-run", *args])
    with pytest.raises(SystemExit):
        fabric.main(["create", "--name", "my slice", "--dry-run"])
    assert "letters, digits, - and _ only" in capsys.readouterr().err


# ---- a fake fablib that records the calls and hands out VMs ----

class Recorder:
    def __init__(self):
        self.calls = []          # (class, method, args, kwargs)

    def __call__(self, cls, method, *args, **kwargs):
        self.calls.append((cls, method, args, kwargs))


def fake_fablib_manager(rec: Recorder, keydir, addresses) -> type:
    class Node:
        def __init__(self, name, image):
            self.name, self.image, self.ip = name, image, None

        def get_management_ip(self):
            rec("Node", "get_management_ip")
            return self.ip

        def get_username(self):
            rec("Node", "get_username")
            return fabric.IMAGES[self.image]

        def get_private_key_file(self):
            rec("Node", "get_private_key_file")
            return str(keydir / "slice_key")

    class Slice:
        def __init__(self):
            self.nodes, self.submitted = {}, False

        def add_node(self, name, site=None, cores=2, ram=8, disk=10, image=None):
            rec("Slice", "add_node", name=name, site=site, cores=cores, ram=ram, disk=disk, image=image)
            self.nodes[name] = Node(name, image)
            return self.nodes[name]

        def submit(self, wait=True, lease_in_hours=None):
            rec("Slice", "submit", wait=wait, lease_in_hours=lease_in_hours)
            for node, ip in zip(self.nodes.values(), addresses):
                node.ip = ip
            self.submitted = True
            return "slice-id"

        def get_node(self, name):
            rec("Slice", "get_node", name=name)
            assert self.submitted, "get_node before submit"
            return self.nodes[name]

    class FablibManager(FablibAccount):
        def __init__(self, fabric_rc=None):
            rec("FablibManager", "__init__", **({"fabric_rc": fabric_rc} if fabric_rc else {}))
            self.slices, self.keydir = {}, keydir

        def new_slice(self, name):
            rec("FablibManager", "new_slice", name=name)
            self.slices[name] = Slice()
            return self.slices[name]

        def delete_slice(self, slice_name=None):
            rec("FablibManager", "delete_slice", slice_name=slice_name)

    return FablibManager


@pytest.fixture
def fake(monkeypatch, tmp_path):
    keydir, rec = fabric_keys(tmp_path), Recorder()
    install_fablib(monkeypatch, fake_fablib_manager(rec, keydir, ["2001:db8:a0::10", "192.0.2.7"]))
    return rec, keydir


CREATE = ["create", "--name", "favorlab", "--nodes", "2", "--cores", "4", "--ram", "16", "--disk", "50",
          "--image", "default_debian_12", "--site", "STAR", "--lease-hours", "30"]


def test_create_against_fake_fablib(fake, tmp_path, capsys):
    rec, keydir = fake
    out = tmp_path / "inv" / "hosts.yml"
    assert fabric.main(CREATE + ["-o", str(out)]) == 0, capsys.readouterr().err
    made = [(c, m, kw) for c, m, _, kw in rec.calls if m in ("new_slice", "add_node", "submit")]
    assert made == [
        ("FablibManager", "new_slice", {"name": "favorlab"}),
        ("Slice", "add_node", dict(name="node0", site="STAR", cores=4, ram=16, disk=50, image="default_debian_12")),
        ("Slice", "add_node", dict(name="node1", site="STAR", cores=4, ram=16, disk=50, image="default_debian_12")),
        ("Slice", "submit", {"wait": True, "lease_in_hours": 30})]
    hosts = yaml.safe_load(out.read_text())["all"]["children"]["ssh_hosts"]["hosts"]
    assert hosts["node0"]["ansible_host"] == "2001:db8:a0::10" and hosts["node1"]["ansible_host"] == "192.0.2.7"
    for hv in hosts.values():
        assert hv["ansible_user"] == "debian" and hv["ansible_become"] is True
        assert hv["ansible_ssh_private_key_file"] == str(keydir / "slice_key")
        assert f"ssh -i {keydir / 'fabric_bastion_key'} " in hv["ansible_ssh_common_args"]
        assert "-W [%h]:%p alice_0000012345@bastion.fabric-testbed.net" in hv["ansible_ssh_common_args"]
    for name, hv in hosts.items():     # each node's key in its own file, the one the pipeline uses
        kh = pool.known_hosts_file(pool.ssh_member_id(name, out))
        assert shlex.split(hv["ansible_ssh_common_args"])[:4] == \
            ["-o", f"UserKnownHostsFile={kh}", "-o", "StrictHostKeyChecking=accept-new"]
    assert "node0: debian@2001:db8:a0::10" in capsys.readouterr().err


def test_written_inventory_keeps_host_keys_per_node(tmp_path, monkeypatch):
    """inventory.write puts each host's known_hosts file (the testbed's, orchestrate/pool.py) ahead of
    its other ssh options, and forgets the keys recorded for those names at that path before: a new
    slice reuses node0, never its host key."""
    monkeypatch.setenv("FAVORLAB_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "hosts.yml"
    inv = fabric.fabric_inventory([{"name": "node0", "address": "192.0.2.1", "user": "u", "key": "/k"}], BASTION)
    kh = pool.known_hosts_file(pool.ssh_member_id("node0", out))
    kh.parent.mkdir(parents=True)
    kh.write_text("192.0.2.1 ssh-ed25519 AAAAold\n")
    inventory.write(inv, str(out), "test", force=True)
    assert not kh.exists()
    args = shlex.split(yaml.safe_load(out.read_text())["all"]["children"]["ssh_hosts"]["hosts"]["node0"]["ansible_ssh_common_args"])
    assert args[:4] == ["-o", f"UserKnownHostsFile={kh}", "-o", "StrictHostKeyChecking=accept-new"]
    assert args[4:6] == ["-o", PROXY.replace(CACHE, str(tmp_path / "cache"))]
    assert not any("known_hosts" in a for a in args if "ProxyCommand" not in a and "UserKnownHostsFile" not in a)


def test_existing_inventory_stops_before_any_reservation(fake, tmp_path, capsys):
    rec, _ = fake
    out = tmp_path / "hosts.yml"
    out.write_text("# hosts in use\n")
    assert fabric.main(CREATE + ["-o", str(out)]) == 1
    assert "exists; pass --force" in capsys.readouterr().err
    assert rec.calls == [] and out.read_text() == "# hosts in use\n"


def test_missing_bastion_key_stops_before_any_reservation(fake, tmp_path, capsys):
    rec, keydir = fake
    (keydir / "fabric_bastion_key").unlink()
    assert fabric.main(CREATE + ["-o", str(tmp_path / "hosts.yml")]) == 1
    assert "fabric_bastion_key not found" in capsys.readouterr().err
    assert [m for _, m, _, _ in rec.calls] == ["__init__"]


def test_delete_and_fabric_rc(fake, tmp_path, capsys):
    rec, _ = fake
    assert fabric.main(["--fabric-rc", str(tmp_path / "rc"), "delete", "--name", "favorlab"]) == 0
    assert [(m, kw) for _, m, _, kw in rec.calls] == [("__init__", {"fabric_rc": str(tmp_path / "rc")}),
                                                      ("delete_slice", {"slice_name": "favorlab"})]
    assert "deleted slice favorlab" in capsys.readouterr().out


def test_without_fablib_installed(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "fabrictestbed_extensions", None)
    assert fabric.main(CREATE + ["-o", str(tmp_path / "hosts.yml")]) == 1
    assert "pip install -r requirements-fabric.txt" in capsys.readouterr().err


def test_calls_fit_the_real_fablib(fake, tmp_path):
    """Every call the fake recorded, bound to the real method's signature (fabrictestbed-extensions
    2.0.9, requirements-fabric.txt): the methods exist and take our arguments by these names."""
    rec, _ = fake
    assert fabric.main(CREATE + ["-o", str(tmp_path / "hosts.yml")]) == 0
    assert fabric.main(["delete", "--name", "favorlab"]) == 0
    calls = list(rec.calls)
    real = real_fablib()
    for cls, method, args, kwargs in calls:
        inspect.signature(getattr(real[cls], method)).bind(None, *args, **kwargs)
    for getter in ACCOUNT_GETTERS:
        inspect.signature(getattr(real["FablibManager"], getter)).bind(None)


def test_fablib_errors_say_whether_a_slice_may_be_left(fake, monkeypatch, tmp_path, capsys):
    mod = sys.modules["fabrictestbed_extensions.fablib.fablib"]
    init = mod.FablibManager.__init__

    def no_token(self, fabric_rc=None):
        raise RuntimeError("Token file not found")
    monkeypatch.setattr(mod.FablibManager, "__init__", no_token)
    assert fabric.main(CREATE + ["-o", str(tmp_path / "a.yml")]) == 1
    err = capsys.readouterr().err
    assert "RuntimeError: Token file not found" in err and "Check fabric_rc" in err and "delete" not in err

    monkeypatch.setattr(mod.FablibManager, "__init__", init)
    slice_cls = type(mod.FablibManager().new_slice("probe"))

    def no_room(self, wait=True, lease_in_hours=None):
        raise RuntimeError("insufficient resources at STAR")
    monkeypatch.setattr(slice_cls, "submit", no_room)
    assert fabric.main(CREATE + ["-o", str(tmp_path / "b.yml")]) == 1
    err = capsys.readouterr().err
    assert "insufficient resources" in err and "python -m orchestrate.fabric delete --name favorlab" in err
    assert not (tmp_path / "b.yml").exists()
