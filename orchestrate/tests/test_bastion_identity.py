"""The ssh to FABRIC's bastion offers the bastion key alone: with IdentitiesOnly, ssh does not try the
agent's keys first, which a bastion counts against MaxAuthTries ("Too many authentication failures")
before the right key is reached. Read back with `ssh -G` (parses, never connects)."""
import shlex
import shutil
import subprocess

import pytest

from orchestrate import fabric

BASTION = {"host": "bastion.fabric-testbed.net", "user": "alice_0000012345"}


def test_the_bastion_hop_offers_only_the_bastion_key(tmp_path, monkeypatch):
    if shutil.which("ssh") is None:
        pytest.skip("no ssh client to parse the options; runs where openssh-client is installed")
    monkeypatch.setenv("FAVORLAB_CACHE", str(tmp_path))
    key = tmp_path / "fabric_bastion_key"   # ssh lists an identity file only when it exists
    key.write_text("")
    bastion = dict(BASTION, key=str(key))
    outer = shlex.split(fabric.proxy_args(bastion))
    assert outer[0] == "-o" and outer[1].startswith("ProxyCommand=")
    inner = shlex.split(outer[1].split("=", 1)[1].replace("%h", "2001:db8::10").replace("%p", "22"))
    assert inner[0] == "ssh"
    r = subprocess.run(["ssh", "-G", "-F", "/dev/null", *inner[1:]], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    conf = dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)
    assert conf["identitiesonly"] == "yes"
    assert str(key) in [line.split(" ", 1)[1] for line in r.stdout.splitlines() if line.startswith("identityfile ")]
    assert conf["hostname"] == BASTION["host"] and conf["user"] == BASTION["user"]
