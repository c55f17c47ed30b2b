"""./favorlab testbed create|status|renew|inventory|delete (orchestrate/lifecycle.py) for FABRIC and CloudLab,
offline: each testbed's API client is replaced at its boundary by a fake that serves recorded responses
(data/fabric-slice.json, data/cloudlab-portal.json: written by hand from the libraries' documented shapes,
as their headers say) and records the calls. fablib and Emulab's portal-tools are not installed here, and
these tests need neither: the fakes stand in for the modules `fabrictestbed_extensions.fablib.fablib` and
`emulab_sslxmlrpc`. What they cannot show is that FABRIC or CloudLab accepts the calls;
test_calls_fit_the_real_fablib binds the FABRIC calls to the real signatures where fablib is installed."""
import inspect
import json
import math
import sys
import types
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from contract import rundir
from orchestrate import cloudlab_portal, fabric, images, lifecycle, matrix
from orchestrate.inventory import REPO
from orchestrate.tests.fakes import FablibAccount, fabric_keys, install_fablib, real_fablib

DATA = Path(__file__).parent / "data"
FABRIC_REC = json.loads((DATA / "fabric-slice.json").read_text())
PORTAL_REC = json.loads((DATA / "cloudlab-portal.json").read_text())
FABRIC_TIME = lifecycle.FABRIC_TIME


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FAVORLAB_CACHE", str(tmp_path / "cache"))


def config(tmp_path, service, hosts=("node0", "node1"), base="quick", name=None):
    """A config extending a shipped one, its testbed the nodes of an inventory not made yet."""
    p = tmp_path / f"{service}-{base}.yaml"
    p.write_text(yaml.safe_dump({"extends": str(REPO / "config" / f"{base}.yaml"), "name": name or f"{base}-{service[:2]}",
                                 "testbed": {"kind": "ssh", "inventory": str(tmp_path / service / "hosts.yml"),
                                             "hosts": list(hosts)}}))
    return p


def run(tmp_path, *args):
    return lifecycle.main([*map(str, args), "--results", str(tmp_path / "results")])


def hosts_of(inv: Path) -> dict:
    return yaml.safe_load(inv.read_text())["all"]["children"]["ssh_hosts"]["hosts"]


# ------------------------------------------------------------------ the lease

def test_lease_covers_the_projection_with_its_margin_and_fabric_bounds(tmp_path):
    """The lease is the plan's projection on as many testbeds as nodes, times the factor, plus set-up; FABRIC
    asks for no less than fablib's default and no more than its maximum."""
    a = lifecycle.parser().parse_args(["status", "x", "--results", str(tmp_path / "results")])
    small = lifecycle.want_of(str(config(tmp_path, "cloudlab")), a)
    wall_h = float(small.plan_lines[-1].split("lease: ")[1].split(" h")[0])
    assert small.lease_h == math.ceil(wall_h * lifecycle.LEASE_FACTOR + lifecycle.LEASE_SETUP_H) > wall_h
    assert "2 testbeds" in small.plan_lines[1]           # as many testbeds as nodes
    assert lifecycle.want_of(str(config(tmp_path, "fabric")), a).lease_h == fabric.DEFAULT_LEASE_H
    big = lifecycle.want_of(str(config(tmp_path, "fabric", hosts=["node0"], base="paper")), a)
    assert big.lease_h == fabric.MAX_LEASE_H and "capped at FABRIC's maximum" in big.plan_lines[-1]


def test_the_lease_counts_only_the_runs_not_finished(tmp_path):
    """A resumed campaign: runs with DONE under results/<config>/runs are not in the lease."""
    a = lifecycle.parser().parse_args(["status", "x", "--results", str(tmp_path / "results")])
    cfg_path = config(tmp_path, "cloudlab", hosts=["node0"])    # one node: half the runs is hours less
    before = lifecycle.want_of(str(cfg_path), a)
    raw = yaml.safe_load(cfg_path.read_text())
    cfg = lifecycle.validate(dict(raw, testbed={"kind": "local-vm", "count": 1}), "t", warn=lambda m: None)
    runs = matrix.runs(cfg)
    for r in runs[: len(runs) // 2]:
        done = tmp_path / "results" / cfg["name"] / "runs" / r.run_id / rundir.DONE
        done.parent.mkdir(parents=True)
        done.write_text("")
    after = lifecycle.want_of(str(cfg_path), a)
    assert f"({len(runs) - len(runs) // 2} of {len(runs)} not finished)" in after.plan_lines[-1]
    assert f"({len(runs)} of {len(runs)} not finished)" in before.plan_lines[-1]
    assert after.lease_h < before.lease_h


@pytest.mark.parametrize("testbed,nodes,message", [
    ({"kind": "local-vm"}, None, "not an inventory of FABRIC or CloudLab nodes"),
    ({"kind": "ssh", "inventory": "ansible/inventories/ssh-hosts/hosts.yml", "host": "node0"}, None, "--on fabric"),
    ({"kind": "ssh", "inventory": "x/fabric/hosts.yml", "group": "ssh_hosts"}, None, "give --nodes N"),
    ({"kind": "ssh", "inventory": "x/cloudlab/hosts.yml", "hosts": ["a", "b"]}, None, "node0..node1"),
    ({"kind": "ssh", "inventory": "x/fabric/hosts.yml", "hosts": ["node0"]}, 3, "--nodes 3"),
])
def test_a_config_that_names_no_nodes_is_refused_with_the_fix(tmp_path, capsys, testbed, nodes, message):
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump({"extends": str(REPO / "config" / "quick.yaml"), "testbed": testbed}))
    assert run(tmp_path, "create", p, "--dry-run", *(["--nodes", nodes] if nodes else [])) == 2
    assert message in capsys.readouterr().err


# ------------------------------------------------------------------ FABRIC, fablib faked

class Calls(list):
    def __call__(self, what, **kw):
        self.append((what, kw))


def fake_fablib_manager(calls: Calls, keydir: Path, now: datetime) -> tuple[type, dict]:
    rec = json.loads(json.dumps(FABRIC_REC))
    rec["slice"]["lease_end"] = (now + timedelta(hours=rec["slice"].pop("lease_end_in_hours"))).strftime(FABRIC_TIME)

    class Node:
        def __init__(self, name):
            self.name = name

        def get_management_ip(self):
            return rec["nodes"][self.name]["management_ip"]

        def get_username(self):
            return rec["nodes"][self.name]["username"]

        def get_private_key_file(self):
            return None                      # fablib's answer for a node without a key of its own

    class Slice:
        def __init__(self, name):
            self.name = name

        def add_node(self, name, site=None, cores=2, ram=8, disk=10, image=None):
            calls("Slice.add_node", name=name, site=site, cores=cores, ram=ram, disk=disk, image=image)

        def submit(self, wait=True, lease_in_hours=None):
            calls("Slice.submit", lease_in_hours=lease_in_hours)
            rec["slice"]["lease_end"] = (now + timedelta(hours=lease_in_hours or 24)).strftime(FABRIC_TIME)

        def get_node(self, name):
            return Node(name)

        def get_state(self):
            return rec["slice"]["state"]

        def get_lease_end(self):
            return rec["slice"]["lease_end"]

        def renew(self, end_date=None, days=None):
            calls("Slice.renew", days=days)
            rec["slice"]["lease_end"] = (now + timedelta(days=days)).strftime(FABRIC_TIME)

    class FablibManager(FablibAccount):
        def __init__(self, fabric_rc=None):
            calls("FablibManager", fabric_rc=fabric_rc)
            self.keydir = keydir

        def new_slice(self, name):
            calls("new_slice", name=name)
            return Slice(name)

        def get_slice(self, name=None):
            calls("get_slice", name=name)
            if name != rec["slice"]["name"]:
                raise Exception(f"Unable to find slice {name} for user")   # fablib's words
            return Slice(name)

        def delete_slice(self, slice_name=None):
            calls("delete_slice", slice_name=slice_name)

    return FablibManager, rec


@pytest.fixture
def fablib(monkeypatch, tmp_path):
    calls, now = Calls(), datetime.now(timezone.utc)
    manager, rec = fake_fablib_manager(calls, fabric_keys(tmp_path), now)
    install_fablib(monkeypatch, manager)
    return calls, rec, now


def fabric_config(tmp_path):
    return config(tmp_path, "fabric", name="quick-fabric")


def test_fabric_create_reserves_the_nodes_for_the_lease_and_writes_the_inventory(fablib, tmp_path, capsys):
    calls, rec, _ = fablib
    cfg = fabric_config(tmp_path)
    assert run(tmp_path, "create", cfg) == 0, capsys.readouterr().err
    want = lifecycle.want_of(str(cfg), lifecycle.parser().parse_args(["create", str(cfg), "--results", str(tmp_path / "results")]))
    assert [c for c in calls if c[0] in ("new_slice", "Slice.add_node", "Slice.submit")] == [
        ("new_slice", {"name": "quick-fabric"}),
        ("Slice.add_node", dict(name="node0", site=None, cores=4, ram=16, disk=50, image=images.FABRIC_DEFAULT)),
        ("Slice.add_node", dict(name="node1", site=None, cores=4, ram=16, disk=50, image=images.FABRIC_DEFAULT)),
        ("Slice.submit", {"lease_in_hours": want.lease_h})]
    hosts = hosts_of(tmp_path / "fabric" / "hosts.yml")
    assert {n: h["ansible_host"] for n, h in hosts.items()} == \
        {n: v["management_ip"] for n, v in rec["nodes"].items()}
    assert all(h["ansible_user"] == images.FABRIC[images.FABRIC_DEFAULT]["user"] for h in hosts.values())


def test_fabric_status_shows_state_and_lease_end(fablib, tmp_path, capsys):
    calls, rec, now = fablib
    assert run(tmp_path, "status", fabric_config(tmp_path)) == 0
    out = capsys.readouterr().out
    assert f"slice quick-fabric: state {rec['slice']['state']}, lease ends {rec['slice']['lease_end']}" in out
    assert "the plan needs" not in out                                    # 50 h left, the plan asks 24
    assert [c[0] for c in calls] == ["FablibManager", "get_slice"]        # reads, changes nothing
    rec["slice"]["lease_end"] = (now + timedelta(hours=3)).strftime(FABRIC_TIME)
    assert run(tmp_path, "status", fabric_config(tmp_path)) == 0
    assert f"the plan needs {fabric.DEFAULT_LEASE_H} h from now; renew" in capsys.readouterr().out


def test_fabric_renew_extends_a_lease_that_ends_too_soon_and_only_then(fablib, tmp_path, capsys):
    calls, rec, now = fablib
    cfg = fabric_config(tmp_path)
    assert run(tmp_path, "renew", cfg) == 0          # the recorded lease ends later than a renewal would
    assert "nothing to renew" in capsys.readouterr().out and not [c for c in calls if c[0] == "Slice.renew"]
    rec["slice"]["lease_end"] = (now + timedelta(hours=2)).strftime(FABRIC_TIME)
    assert run(tmp_path, "renew", cfg) == 0
    (renewed,) = [kw for what, kw in calls if what == "Slice.renew"]
    assert renewed == {"days": math.ceil(fabric.DEFAULT_LEASE_H / 24)}
    assert f"lease ends {rec['slice']['lease_end']}" in capsys.readouterr().out
    rec["slice"]["lease_end"] = (now - timedelta(hours=1)).strftime(FABRIC_TIME)
    assert run(tmp_path, "renew", cfg) == 2
    assert "cannot be renewed" in capsys.readouterr().err


def test_fabric_inventory_of_a_running_slice_never_overwrites_without_force(fablib, tmp_path, capsys):
    calls, rec, _ = fablib
    cfg = fabric_config(tmp_path)
    assert run(tmp_path, "inventory", cfg) == 0
    inv = tmp_path / "fabric" / "hosts.yml"
    assert set(hosts_of(inv)) == {"node0", "node1"}
    inv.write_text("# hosts in use\n")
    assert run(tmp_path, "inventory", cfg) == 2 and "--force" in capsys.readouterr().err
    assert inv.read_text() == "# hosts in use\n"
    assert run(tmp_path, "inventory", cfg, "--force") == 0 and "node1" in hosts_of(inv)
    assert run(tmp_path, "inventory", config(tmp_path, "fabric", name="other")) == 1
    assert "Unable to find slice other" in capsys.readouterr().err


def test_fabric_delete_deletes_the_configs_slice(fablib, tmp_path, capsys):
    calls, _, _ = fablib
    assert run(tmp_path, "delete", fabric_config(tmp_path), "--fabric-rc", tmp_path / "rc") == 0
    assert calls == [("FablibManager", {"fabric_rc": str(tmp_path / "rc")}), ("delete_slice", {"slice_name": "quick-fabric"})]


@pytest.mark.parametrize("action,expected", [
    ("create", ["submit(lease_in_hours=24)", "get_node(name='node1').get_management_ip()"]),
    ("status", ["FablibManager().get_slice(name='quick-fabric').get_lease_end()"]),
    ("renew", ["FablibManager().get_slice(name='quick-fabric').renew(days=1)"]),
    ("inventory", ["FablibManager().get_slice(name='quick-fabric').get_node(name='node0').get_management_ip()"]),
    ("delete", ["FablibManager().delete_slice(slice_name='quick-fabric')"]),
])
def test_fabric_dry_run_prints_every_call_and_needs_no_fablib(monkeypatch, tmp_path, capsys, action, expected):
    monkeypatch.setitem(sys.modules, "fabrictestbed_extensions", None)     # importing fablib would fail
    assert run(tmp_path, action, fabric_config(tmp_path), "--dry-run") == 0, capsys.readouterr().err
    printed = [l.split("would call ", 1)[1] for l in capsys.readouterr().out.splitlines() if "would call " in l]
    assert all(any(e in p for p in printed) for e in expected), printed
    assert not (tmp_path / "fabric" / "hosts.yml").exists()


def test_calls_fit_the_real_fablib(fablib, tmp_path):
    """The calls the lifecycle makes, bound to the real methods' signatures (fabrictestbed-extensions 2.0.9,
    requirements-fabric.txt), where fablib is installed."""
    real = real_fablib()
    FablibManager, Slice = real["FablibManager"], real["Slice"]
    inspect.signature(FablibManager.get_slice).bind(None, name="x")
    inspect.signature(FablibManager.delete_slice).bind(None, slice_name="x")
    inspect.signature(Slice.renew).bind(None, days=2)
    inspect.signature(Slice.submit).bind(None, lease_in_hours=30)
    for getter in (Slice.get_state, Slice.get_lease_end):
        inspect.signature(getter).bind(None)


# ------------------------------------------------------------------ CloudLab, portal-tools faked

@pytest.fixture
def portal(monkeypatch, tmp_path):
    """emulab_sslxmlrpc with api.<method>(server, params).apply() serving the recorded responses."""
    calls, rec = Calls(), json.loads(json.dumps(PORTAL_REC))
    now = datetime.now(timezone.utc)
    for st in rec["experimentStatus"]:
        st["expires"] = (now + timedelta(hours=st.pop("expires_in_hours"))).isoformat()
    statuses = iter(rec["experimentStatus"])

    class Response:
        def __init__(self, value):
            self.value, self.output = value, ""

    def method(name):
        class Method:
            def __init__(self, server, params):
                self.params = params

            def apply(self):
                calls(name, **self.params)
                if name == "experimentStatus":
                    return 0, Response(json.dumps(next(statuses, rec["experimentStatus"][-1])))
                if name == "experimentManifests":
                    return 0, Response(json.dumps({k: (DATA / v[1:]).read_text() for k, v in rec[name].items()}))
                return 0, Response(rec[name])
        return Method

    api = types.ModuleType("emulab_sslxmlrpc.client.api")
    for name in ("startExperiment", "experimentStatus", "extendExperiment", "experimentManifests",
                 "terminateExperiment"):
        setattr(api, name, method(name))
    xmlrpc = types.ModuleType("emulab_sslxmlrpc.xmlrpc")
    xmlrpc.EmulabXMLRPC = lambda cfg: calls("EmulabXMLRPC", **cfg)
    for name, mod in (("emulab_sslxmlrpc", types.ModuleType("emulab_sslxmlrpc")),
                      ("emulab_sslxmlrpc.client", types.ModuleType("emulab_sslxmlrpc.client")),
                      ("emulab_sslxmlrpc.client.api", api), ("emulab_sslxmlrpc.xmlrpc", xmlrpc)):
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setattr(cloudlab_portal, "POLL_S", 0)
    cert = tmp_path / "emulab.pem"
    cert.write_text("not a real certificate\n")
    return calls, rec, cert


def cl(tmp_path, action, cert, *more):
    return run(tmp_path, action, config(tmp_path, "cloudlab", name="quick-cl"), "--project", "favorlab",
               "--cert", cert, *more)


def test_cloudlab_create_starts_the_profile_waits_and_writes_the_inventory(portal, tmp_path, capsys):
    calls, rec, cert = portal
    assert cl(tmp_path, "create", cert, "--profile", "favorlab,favorlab-hosts", "--user", "alice") == 0, \
        capsys.readouterr().err
    (start,) = [kw for what, kw in calls if what == "startExperiment"]
    cfg = config(tmp_path, "cloudlab", name="quick-cl")
    want = lifecycle.want_of(str(cfg), lifecycle.parser().parse_args(["create", str(cfg), "--results", str(tmp_path / "results")]))
    assert start == {"profile": "favorlab,favorlab-hosts", "proj": "favorlab", "name": "quick-cl",
                     "duration": want.lease_h,
                     "bindings": json.dumps({"node_count": "2", "disk_image": images.CLOUDLAB_DEFAULT})}
    assert [w for w, _ in calls].count("experimentStatus") == 2        # provisioning, then ready
    hosts = hosts_of(tmp_path / "cloudlab" / "hosts.yml")
    assert {n: (h["ansible_host"], h["ansible_user"]) for n, h in hosts.items()} == \
        {"node0": ("pc512.emulab.net", "alice"), "node1": ("pc547.emulab.net", "alice")}
    assert ("EmulabXMLRPC", {"certificate": str(cert)}) in calls


def test_cloudlab_status_shows_status_and_expiry(portal, tmp_path, capsys):
    calls, rec, cert = portal
    assert cl(tmp_path, "status", cert) == 0
    first = rec["experimentStatus"][0]
    out = capsys.readouterr().out
    assert f"experiment quick-cl: status {first['status']}, expires {first['expires']}" in out
    assert "the plan needs" not in out            # 60 h left, more than the plan asks
    assert [kw for w, kw in calls if w == "experimentStatus"] == [{"experiment": "favorlab,quick-cl", "asjson": 1}]
    rec["experimentStatus"][-1]["expires"] = datetime.now(timezone.utc).isoformat()
    assert cl(tmp_path, "status", cert) == 0
    assert "the plan needs" in capsys.readouterr().out


def test_cloudlab_renew_asks_for_the_hours_the_plan_lacks(portal, tmp_path, capsys):
    calls, rec, cert = portal
    assert cl(tmp_path, "renew", cert) == 0                 # the recorded expiry is later than the lease asks
    assert "after the" in capsys.readouterr().out and not [c for c in calls if c[0] == "extendExperiment"]
    now = datetime.now(timezone.utc)
    for st in rec["experimentStatus"]:
        st["expires"] = (now + timedelta(hours=1)).isoformat()
    assert cloudlab_portal.extension_hours(rec["experimentStatus"][0], 10, now) == 9
    assert cloudlab_portal.extension_hours({"status": "ready"}, 10, now) == 10     # expiry unknown: all of it


def test_cloudlab_renew_calls_extend(portal, tmp_path, capsys, monkeypatch):
    calls, rec, cert = portal
    monkeypatch.setattr(cloudlab_portal, "extension_hours", lambda st, want_h, now=None: 7)
    assert cl(tmp_path, "renew", cert) == 0
    (ext,) = [kw for w, kw in calls if w == "extendExperiment"]
    assert ext["experiment"] == "favorlab,quick-cl" and ext["wanted"] == 7 and "projected" in ext["reason"]


def test_cloudlab_inventory_from_the_api_and_from_a_saved_manifest(portal, tmp_path, capsys, monkeypatch):
    calls, rec, cert = portal
    assert cl(tmp_path, "inventory", cert, "--user", "bob") == 0
    inv = tmp_path / "cloudlab" / "hosts.yml"
    assert {h["ansible_user"] for h in hosts_of(inv).values()} == {"bob"}
    assert [kw for w, kw in calls if w == "experimentManifests"] == [{"experiment": "favorlab,quick-cl", "asjson": 1}]
    monkeypatch.setitem(sys.modules, "emulab_sslxmlrpc", None)        # the saved manifest needs no API
    assert cl(tmp_path, "inventory", cert, "--user", "carol", "--force", "--manifest",
              DATA / "cloudlab-manifest.xml") == 0
    assert {h["ansible_user"] for h in hosts_of(inv).values()} == {"carol"}
    inv.unlink()
    assert cl(tmp_path, "inventory", cert, "--user", "carol", "--dry-run", "--manifest",
              DATA / "cloudlab-manifest.xml") == 0
    assert not inv.exists() and "ansible_host: pc547.emulab.net" in capsys.readouterr().out
    three = config(tmp_path, "cloudlab", hosts=["node0", "node1", "node2"], name="quick-cl")
    assert run(tmp_path, "inventory", three, "--project", "p", "--user", "bob", "--force",
               "--manifest", DATA / "cloudlab-manifest.xml") == 2
    assert "no node node2" in capsys.readouterr().err
    assert cl(tmp_path, "inventory", cert, "--manifest", tmp_path / "nowhere.xml") == 2
    assert "cannot read" in capsys.readouterr().err


def test_cloudlab_delete_terminates_the_experiment(portal, tmp_path, capsys):
    calls, _, cert = portal
    assert cl(tmp_path, "delete", cert) == 0
    assert [(w, kw) for w, kw in calls if w != "EmulabXMLRPC"] == [("terminateExperiment", {"experiment": "favorlab,quick-cl"})]


@pytest.mark.parametrize("action,expected", [
    ("create", ["startExperiment({'profile': 'favorlab,favorlab-hosts', 'proj': 'favorlab', 'name': 'quick-cl'",
                "experimentStatus(", "experimentManifests("]),
    ("status", ["experimentStatus({'experiment': 'favorlab,quick-cl', 'asjson': 1})"]),
    ("renew", ["extendExperiment({'experiment': 'favorlab,quick-cl', 'wanted': "]),
    ("inventory", ["experimentManifests({'experiment': 'favorlab,quick-cl', 'asjson': 1})"]),
    ("delete", ["terminateExperiment({'experiment': 'favorlab,quick-cl'})"]),
])
def test_cloudlab_dry_run_prints_every_call_and_needs_no_portal_tools(monkeypatch, tmp_path, capsys, action, expected):
    monkeypatch.setitem(sys.modules, "emulab_sslxmlrpc", None)
    assert cl(tmp_path, action, tmp_path / "no.pem", "--profile", "favorlab,favorlab-hosts", "--dry-run") == 0
    printed = [l.split("would call portal ", 1)[1] for l in capsys.readouterr().out.splitlines() if "would call portal " in l]
    assert all(any(p.startswith(e) for p in printed) for e in expected), printed
    assert not (tmp_path / "cloudlab" / "hosts.yml").exists()


def test_cloudlab_without_portal_tools_prints_the_steps_by_hand(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "emulab_sslxmlrpc", None)
    assert cl(tmp_path, "create", tmp_path / "no.pem", "--profile", "favorlab,favorlab-hosts") == 1
    out = capsys.readouterr().out
    assert "portal-tools (emulab_sslxmlrpc) are not installed" in out
    assert f"Number of nodes 2, Disk image {images.CLOUDLAB_DEFAULT}, name quick-cl" in out
    assert "./favorlab testbed inventory" in out and "--manifest manifest.xml" in out


def test_the_wrapper_routes_each_action_here(tmp_path):
    """./favorlab testbed ACTION runs this module (without root: no bootstrap once .venv exists)."""
    import subprocess
    for action in lifecycle.ACTIONS:
        r = subprocess.run([str(REPO / "favorlab"), "testbed", action, str(fabric_config(tmp_path)), "--dry-run",
                            "--results", str(tmp_path / "results")], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert "dry run: would call FablibManager()" in r.stdout
