"""What the fake fablibs of test_fabric.py (orchestrate.fabric) and test_lifecycle.py (./favorlab testbed)
share: a FABRIC account's bastion and keys as fablib's FablibManager reports them, the fake installed in
place of the module `fabrictestbed_extensions.fablib.fablib`, and the real package for the tests that bind
the recorded calls to its signatures. Each test file keeps the slices and nodes of its own fake."""
import sys
import types
from pathlib import Path

import pytest

BASTION_HOST = "bastion.fabric-testbed.net"
BASTION_USER = "alice_0000012345"
FABLIB = "fabrictestbed_extensions.fablib.fablib"
# the getters FablibAccount answers, whose real signatures test_calls_fit_the_real_fablib checks
ACCOUNT_GETTERS = ("get_bastion_host", "get_bastion_username", "get_bastion_key_location",
                   "get_default_slice_private_key_file")


def fabric_keys(tmp_path: Path) -> Path:
    """A fabric_config folder holding a bastion key and a slice key (neither a real key)."""
    keydir = tmp_path / "fabric_config"
    keydir.mkdir()
    for k in ("fabric_bastion_key", "slice_key"):
        (keydir / k).write_text("not a real key\n")
    return keydir


class FablibAccount:
    """The account side of a fake FablibManager: a subclass sets keydir (fabric_keys) and adds the slices."""
    keydir: Path

    def get_bastion_host(self):
        return BASTION_HOST

    def get_bastion_username(self):
        return BASTION_USER

    def get_bastion_key_location(self):
        return str(self.keydir / "fabric_bastion_key")

    def get_default_slice_private_key_file(self):
        return str(self.keydir / "slice_key")


def install_fablib(monkeypatch, manager: type) -> types.ModuleType:
    """A module holding the fake FablibManager, imported in place of fablib's for the test's duration."""
    mod = types.ModuleType(FABLIB)
    mod.FablibManager = manager
    for name in ("fabrictestbed_extensions", "fabrictestbed_extensions.fablib"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, FABLIB, mod)
    return mod


def real_fablib() -> dict[str, type]:
    """fablib's FablibManager, Slice and Node, the fake put aside; skips where the package is not installed."""
    for name in ("fabrictestbed_extensions", "fabrictestbed_extensions.fablib", FABLIB):
        sys.modules.pop(name, None)
    try:
        from fabrictestbed_extensions.fablib.fablib import FablibManager
        from fabrictestbed_extensions.fablib.node import Node
        from fabrictestbed_extensions.fablib.slice import Slice
    except ImportError as e:
        pytest.skip(f"fabrictestbed-extensions is not installed ({e}); runs where requirements-fabric.txt is "
                    "installed (pip install -r requirements-fabric.txt)")
    return {"FablibManager": FablibManager, "Slice": Slice, "Node": Node}
