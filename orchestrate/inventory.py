"""The Ansible inventory for real testbed hosts, in the shape of
ansible/inventories/ssh-hosts/hosts.example.yml: group ssh_hosts under all.children, one entry per host
with its SSH coordinates, the group's vars as there. One writer for CloudLab and FABRIC so the two
cannot drift from the shape that ansible/site.yml and testbed: {kind: ssh} read."""
from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
GROUP = "ssh_hosts"
GROUP_VARS = {"ansible_python_interpreter": "/usr/bin/python3", "testbed_apt_update": True}
# Fresh nodes have host keys nobody knows yet, and the pipeline's own ssh runs with BatchMode (no
# prompt): accept a host's key on first contact, refuse it if it changes later, each host's key in a
# known_hosts file of its own (orchestrate/pool.py: the testbed's member id), never ~/.ssh/known_hosts,
# where a new reservation reusing a name or address would meet the old key ("host key changed").
ACCEPT_NEW = "-o StrictHostKeyChecking=accept-new"


def known_hosts_args(host: str, inventory_path: str | Path) -> str:
    """The ssh options that keep `host` of the inventory at inventory_path in its own known_hosts file:
    the same file the pipeline uses for that testbed (orchestrate.remote.Ssh, for the runs and for orchestrate.testbeds)."""
    from orchestrate import pool
    kh = pool.known_hosts_file(pool.ssh_member_id(host, inventory_path))
    return f"-o UserKnownHostsFile={shlex.quote(str(kh))} {ACCEPT_NEW}"


def with_host_keys(inv: dict, inventory_path: str | Path) -> dict:
    """inv with each host's known_hosts options first in its ansible_ssh_common_args (ssh keeps the first
    value of an option), so Ansible run by hand checks the keys where the pipeline does."""
    out = json.loads(json.dumps(inv))
    for host, hv in out["all"]["children"][GROUP]["hosts"].items():
        rest = hv.get("ansible_ssh_common_args")
        hv["ansible_ssh_common_args"] = known_hosts_args(host, inventory_path) + (f" {rest}" if rest else "")
    return out


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
    """Write the inventory to `out` ("-": stdout, without known_hosts options: the pipeline adds its
    own). An existing file is kept unless force: it may be the inventory of running hosts, and
    regenerating it from the wrong input would lose them. A new inventory is new hosts (a new
    experiment or slice): the host keys recorded for its hosts' names at this path are forgotten."""
    if out == "-":
        sys.stdout.write(render(inv, header))
        return
    path = Path(out)
    if path.exists() and not force:
        raise InventoryError(f"{out} exists; pass --force to replace it (or -o another path)")
    from orchestrate import pool
    for host in inv["all"]["children"][GROUP]["hosts"]:
        pool.known_hosts_file(pool.ssh_member_id(host, path)).unlink(missing_ok=True)
    from orchestrate import atomic
    atomic.write_text(path, render(with_host_keys(inv, path), header))
