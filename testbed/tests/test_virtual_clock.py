"""testbed.clock: a config's virtual clock reaches favorvm, names its guests apart from real-clock ones,
is recorded with each attempt's lease and redoes a config's runs when it changes; the real clock, the
default, changes nothing for the configs that have it. No guest: favorvm is faked where it would run
(the guest side is test_virtual_clock_guest.py)."""
import subprocess
from pathlib import Path

import pytest
import yaml

from orchestrate import pool, runspec, testbeds
from orchestrate.config import ConfigError, validate
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FAVORLAB_CACHE", str(tmp_path / "cache"))


def smoke(**testbed):
    cfg = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    cfg["testbed"] = testbed
    return cfg


def test_virtual_guests_are_other_members_than_real_ones():
    real = validate(smoke(kind="local-vm", count=2))
    virtual = validate(smoke(kind="local-vm", count=2, clock="virtual"))
    assert real["testbed"]["clock"] == "real"          # the schema's default
    r, v = real["pool"]["members"], virtual["pool"]["members"]
    assert [m["vm_name"] for m in r] == ["favorlab", "favorlab-2"]
    assert [m["vm_name"] for m in v] == ["favorlab-virtual", "favorlab-virtual-2"]
    assert [m["id"] for m in v] == [m["vm_name"] for m in v]     # the lease is the guest's own
    assert {m["clock"] for m in r} == {"real"} and {m["clock"] for m in v} == {"virtual"}


def test_clock_is_a_local_guests_option(tmp_path):
    with pytest.raises(ConfigError, match="clock"):
        validate(smoke(kind="local-vm", clock="fast"), "my.yaml")
    inv = tmp_path / "hosts.yml"
    inv.write_text(yaml.safe_dump({"all": {"hosts": {"node0": {"ansible_host": "192.0.2.10"}}}}))
    with pytest.raises(ConfigError, match=r"testbed.clock 'virtual' is for kind 'local-vm'.*Fix"):
        validate(smoke(kind="ssh", inventory=str(inv), host="node0", clock="virtual"), "my.yaml")


def test_a_change_of_clock_redoes_runs_and_the_real_clock_changes_nothing():
    """The run rule's testbed parameter (a rerun trigger) carries the virtual clock; the real one, what
    every run had before the option, leaves it as it was (orchestrate/tests/test_run_specs_unchanged.py
    holds the shipped configs to that)."""
    assert runspec.testbed_param(validate(smoke(kind="local-vm"))) == {"kind": "local-vm"}
    assert runspec.testbed_param(validate(smoke(kind="local-vm", clock="real"))) == {"kind": "local-vm"}
    assert runspec.testbed_param(validate(smoke(kind="local-vm", clock="virtual"))) == \
        {"kind": "local-vm", "clock": "virtual"}


def test_the_attempts_lease_record_names_the_clock():
    """controller.json's lease (and so attempts.json) says which clock the guest ran on."""
    for clock in ("real", "virtual"):
        member = validate(smoke(kind="local-vm", clock=clock))["pool"]["members"][0]
        with pool.try_lease(member, what="test") as lease:
            assert lease.record({"host": "127.0.0.1", "port": 1})["clock"] == clock


def test_up_starts_the_guest_with_its_clock_and_never_uses_one_of_the_other(monkeypatch):
    member = validate(smoke(kind="local-vm", clock="virtual"))["pool"]["members"][0]
    calls = []
    state = {}
    monkeypatch.setattr(testbeds, "vm_state", lambda name: dict(state))
    monkeypatch.setattr(testbeds.subprocess, "run", lambda cmd, **kw: calls.append(cmd))

    class Stop(Exception):
        pass

    def target(tb, state=None):       # the guest is up: what follows (SSH, Ansible) is not this test's
        raise Stop
    monkeypatch.setattr(testbeds, "target", target)
    with pytest.raises(Stop):
        testbeds.up(member)
    assert calls == [[str(testbeds.FAVORVM), "start", "--name", "favorlab-virtual", "--clock", "virtual"]]
    state.update(running=True, clock="real")            # a same-named guest of the real clock
    calls.clear()
    with pytest.raises(testbeds.TestbedError, match=r"real clock.*virtual one.*favorvm stop"):
        testbeds.up(member)
    assert calls == []


def test_favorvm_start_takes_the_clock():
    p = subprocess.run([str(REPO / "testbed" / "vm" / "favorvm"), "start", "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "--clock {real,virtual}" in p.stdout
