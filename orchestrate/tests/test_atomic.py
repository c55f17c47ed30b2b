"""Bookkeeping files written whole or not at all (orchestrate/atomic.py), and readers that meet one a crash
left empty or cut short: favorvm's state file (the VM is then not running, and the next start boots it)."""
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrate import atomic, pool

REPO = Path(__file__).resolve().parents[2]
FAVORVM = REPO / "testbed" / "vm" / "favorvm"


def test_write_replaces_the_whole_file_and_leaves_no_temp_file(tmp_path):
    p = tmp_path / "controller.json"
    atomic.write_json(p, {"wall_s": 1.5})
    atomic.write_json(p, {"wall_s": 2.5, "lease": {"member": "favorlab"}}, indent=1)
    assert json.loads(p.read_text()) == {"wall_s": 2.5, "lease": {"member": "favorlab"}}
    assert [q.name for q in tmp_path.iterdir()] == ["controller.json"]


def test_a_write_cut_short_keeps_the_old_file(tmp_path, monkeypatch):
    p = tmp_path / "state.json"
    atomic.write_json(p, {"pid": 1})

    def crash(*a, **k):
        raise KeyboardInterrupt("killed while writing")
    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        atomic.write_json(p, {"pid": 2})
    assert json.loads(p.read_text()) == {"pid": 1}
    assert [q.name for q in tmp_path.iterdir()] == ["state.json"]


def test_permissions_are_kept_or_readable_by_default(tmp_path):
    new = atomic.write_text(tmp_path / "new.yml", "x: 1\n")
    assert stat.S_IMODE(new.stat().st_mode) == 0o644      # not mkstemp's 0600
    secret = tmp_path / "key"
    secret.write_text("a")
    secret.chmod(0o600)
    atomic.write_text(secret, "b")
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600 and secret.read_text() == "b"


@pytest.mark.parametrize("content, says", [(b"", "is empty"), (b"  \n", "is empty"),
                                           (b'{"pid": 12', "is not valid JSON"),
                                           (b"\xff\xfe{", "is not valid JSON")])   # not even UTF-8
def test_an_empty_or_cut_short_file_reads_as_absent_with_a_warning(tmp_path, content, says):
    p = tmp_path / "attempts.json"
    p.write_bytes(content)
    warned = []
    assert atomic.read_json(p, default={}, what="its fields are left out", warn=warned.append) == {}
    assert len(warned) == 1 and str(p) in warned[0] and says in warned[0]
    assert "its fields are left out" in warned[0]


def test_a_missing_file_reads_as_the_default_silently(tmp_path):
    warned = []
    assert atomic.read_json(tmp_path / "none.json", default=None, warn=warned.append) is None
    assert warned == []


def test_the_pool_writes_its_records_atomically(tmp_path, monkeypatch):
    monkeypatch.setenv("FAVORLAB_CACHE", str(tmp_path / "cache"))
    ex = tmp_path / "excluded"
    pool.exclude(ex, "favorlab-2", "does not answer SSH")
    assert pool.excluded(ex)["favorlab-2"]["reason"] == "does not answer SSH"
    assert [p.name for p in ex.iterdir()] == ["favorlab-2"]
    with pool.try_lease({"kind": "local-vm", "vm_name": "favorlab"}, what="test") as lease:
        assert f"pid {os.getpid()}" in pool.holder(lease.id)


def favorvm(cache: Path, *args):
    return subprocess.run([sys.executable, str(FAVORVM), *args], capture_output=True, text=True,
                          env=dict(os.environ, FAVORLAB_CACHE=str(cache)), timeout=60)


@pytest.mark.parametrize("content", ["", '{"name": "favorlab", "pid": 4', "not json"])
def test_favorvm_status_treats_a_broken_state_file_as_not_running(tmp_path, content):
    d = tmp_path / "vm" / "run" / "favorlab"
    d.mkdir(parents=True)
    (d / "state.json").write_text(content)
    p = favorvm(tmp_path, "status", "--name", "favorlab")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {"name": "favorlab", "running": False}
    assert f"{d / 'state.json'}" in p.stderr and "treated as not running" in p.stderr


def test_favorvm_status_reads_a_whole_state_file(tmp_path):
    d = tmp_path / "vm" / "run" / "favorlab"
    d.mkdir(parents=True)
    atomic.write_json(d / "state.json", {"name": "favorlab", "pid": 2 ** 22 + 7, "ssh_port": 2222})
    p = favorvm(tmp_path, "status", "--name", "favorlab")
    assert p.returncode == 0 and p.stderr == ""
    assert json.loads(p.stdout) == {"name": "favorlab", "pid": 2 ** 22 + 7, "ssh_port": 2222, "running": False}


def test_favorvm_stop_ends_the_qemu_of_a_vm_whose_state_file_is_lost(tmp_path):
    """Without its state the guest cannot be reached (its ssh port is in the state): stop ends the QEMU
    running its overlay (found by its command line) instead of leaving it running, unreachable."""
    d = tmp_path / "vm" / "run" / "favorlab"
    d.mkdir(parents=True)
    overlay = d / "overlay.qcow2"
    overlay.write_bytes(b"")
    (d / "state.json").write_text('{"name": "favorlab", "pid": 12')
    qemu = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "qemu-system-x86_64",
                             "-drive", f"file={overlay},if=virtio"])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "qemu-system-x86_64",
                              "-drive", f"file={tmp_path / 'another.qcow2'},if=virtio"])
    try:
        p = favorvm(tmp_path, "stop", "--name", "favorlab")
        assert p.returncode == 0, p.stderr
        assert qemu.wait(timeout=30) == -15                      # SIGTERM, as favorvm ends its own QEMU
        assert f"killing its QEMU pid {qemu.pid}" in p.stderr
        assert other.poll() is None                              # another VM's QEMU is left alone
        assert not overlay.exists()
        assert json.loads((d / "state.json").read_text()) == {"name": "favorlab", "running": False}
    finally:
        for proc in (qemu, other):
            proc.kill()
            proc.wait()
