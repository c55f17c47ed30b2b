"""Where a run job finds its testbed (orchestrate/testbeds.py): the host's variables from its inventory."""
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrate import testbeds


def test_a_local_guests_host_vars_are_read_once_per_inventory_text(tmp_path, monkeypatch):
    """A local guest's inventory (one file favorvm writes at each boot): ansible-inventory's answer is kept
    under a hash of the file and the host, reused while the file is the same, read again when it changes;
    an inventory of other files (whole_file False) is read every time."""
    if not (Path(sys.executable).parent / "ansible-inventory").exists():
        pytest.skip("ansible-inventory is not in this venv (pip install -r requirements.txt)")
    monkeypatch.setenv("FAVORLAB_CACHE", str(tmp_path / "cache"))
    inv = tmp_path / "inventory.yml"
    inv.write_text("all:\n  hosts:\n    vm:\n      ansible_host: 127.0.0.1\n      ansible_port: 40001\n")
    real_run, runs = subprocess.run, []

    def counting_run(argv, *a, **kw):
        runs.append(argv)
        return real_run(argv, *a, **kw)
    monkeypatch.setattr(testbeds.subprocess, "run", counting_run)
    assert testbeds.host_vars(str(inv), "vm", whole_file=True)["ansible_port"] == 40001
    assert testbeds.host_vars(str(inv), "vm", whole_file=True)["ansible_port"] == 40001
    assert len(runs) == 1 and len(list((tmp_path / "cache" / "inventory-hosts").iterdir())) == 1
    inv.write_text(inv.read_text().replace("40001", "40002"))          # the next boot's port
    assert testbeds.host_vars(str(inv), "vm", whole_file=True)["ansible_port"] == 40002
    assert testbeds.host_vars(str(inv), "vm")["ansible_port"] == 40002
    assert len(runs) == 3
