"""Which flow client and server a config gets when it names none: real hosts (testbed kind ssh) run favorflow,
the Go binary the controller builds for each host's machine, so a host's Python (3.10 on Ubuntu 22.04) is
never what replays the schedule; the local guest keeps the schema's default, so no shipped config's runs
change (orchestrate/tests/test_run_specs_unchanged.py)."""
import sys
from pathlib import Path

import pytest
import yaml

from orchestrate.config import validate

REPO = Path(__file__).resolve().parents[2]


def smoke(**over):
    cfg = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    cfg.update(over)
    return cfg


@pytest.fixture
def ssh_testbed(tmp_path):
    if not (Path(sys.executable).parent / "ansible-inventory").exists():
        pytest.skip("ansible-inventory is not in this venv (pip install -r requirements.txt); runs after scripts/bootstrap")
    inv = tmp_path / "hosts.yml"
    inv.write_text(yaml.safe_dump({"all": {"children": {"ssh_hosts": {"hosts": {
        "node0": {"ansible_host": "192.0.2.10"}, "node1": {"ansible_host": "192.0.2.11"}}}}}}))
    return {"kind": "ssh", "inventory": str(inv), "group": "ssh_hosts"}


def test_real_hosts_default_to_the_go_binary(ssh_testbed):
    assert validate(smoke(testbed=ssh_testbed))["workload_impl"] == "go"


def test_a_config_that_names_python_keeps_it_on_real_hosts(ssh_testbed):
    assert validate(smoke(testbed=ssh_testbed, workload_impl="python"))["workload_impl"] == "python"


def test_the_local_guest_keeps_the_schema_default():
    assert validate(smoke())["workload_impl"] == "python"


def test_a_validated_config_validates_to_the_same(ssh_testbed):
    once = validate(smoke(testbed=ssh_testbed))
    assert validate(once)["workload_impl"] == "go"
