"""The Ansible inventory for real testbed hosts, in the shape of
ansible/inventories/ssh-hosts/hosts.example.yml: group ssh_hosts under all.children, one entry per host
with its SSH coordinates, the group's vars as there. One writer for CloudLab and FABRIC so the two
cannot drift from the shape that ansible/site.yml and testbed: {kind: ssh} read."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
GROUP = "ssh_hosts"
GROUP_VARS = {"ansible_python_interpreter": "/usr/bin/python3", "testbed_apt_update": True}
# Fresh nodes have host keys nobody knows yet, and the pipeline's own ssh runs with BatchMode (no
# prompt): accept a host's key on first contact, refuse it if it changes later.
ACCEPT_NEW = "-o StrictHostKeyChecking=accept-new"


class InventoryError(ValueError):
    """Bad input: the message names the problem and the fix."""


def ssh_inventory(hosts: dict[str, dict]) -> dict:
    return {"all": {"children": {GROUP: {"hosts": hosts, "vars": dict(GROUP_VARS)}}}}


def private_key(path: str) -> str:
    """The key as an absolute path: the inventory is read from ansible/ (Ansible) and from the
    repository (the pipeline), so a relative path would mean two different files."""
    p = Path(os.path.expanduser(path)).resolve()
    if p.suffix == ".pub":
        raise InventoryError(f"{path} is a public key; give the private key beside it ({p.with_suffix('')})")
    if not p.is_file():
        raise InventoryError(f"SSH key {path} not found; give the private key whose public half the "
                             f"testbed knows (ssh-keygen -t ed25519 makes a pair)")
    return str(p)


def render(inv: dict, header: str) -> str:
    lines = "".join(f"# {line}\n".replace("# \n", "#\n") for line in header.splitlines())
    return lines + yaml.safe_dump(inv, sort_keys=False, default_flow_style=False, width=1000)


def write(inv: dict, out: str, header: str, force: bool = False) -> None:
    """Write the inventory to `out` ("-": stdout). An existing file is kept unless force: it may be
    the inventory of running hosts, and regenerating it from the wrong input would lose them."""
    text = render(inv, header)
    if out == "-":
        sys.stdout.write(text)
        return
    path = Path(out)
    if path.exists() and not force:
        raise InventoryError(f"{out} exists; pass --force to replace it (or -o another path)")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
