"""Reserve FABRIC VMs as testbed hosts and write their Ansible inventory; delete them again.

    python -m orchestrate.fabric create --name favorlab --nodes 2 --cores 4 --ram 16 --disk 50 \\
        --image default_ubuntu_22 [--site STAR] -o ansible/inventories/fabric/hosts.yml [--dry-run] [--force]
    python -m orchestrate.fabric delete --name favorlab

Uses fablib (pip install -r requirements-fabric.txt) with its usual configuration: fabric_rc
(~/work/fabric_config/fabric_rc or --fabric-rc) or the FABRIC_* environment variables, which name the
token, project, bastion login and key, and the slice key. FABRIC VMs are reached only through the
bastion host, so each inventory host carries a ProxyCommand through it; management addresses are often
IPv6, hence -W [%h]:%p (ssh cannot parse a bare IPv6 address followed by :port). --dry-run shows the
slice and the inventory with placeholders, touching neither fablib nor any credentials.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from orchestrate import inventory, pool
from orchestrate.inventory import InventoryError

DEFAULT_OUT = "ansible/inventories/fabric/hosts.yml"
# The images the testbed roles support, with their login user (fablib's Constants.IMAGE_NAMES)
IMAGES = {"default_ubuntu_22": "ubuntu", "default_debian_12": "debian"}
SAFE_PATH = re.compile(r"^[\w@%+=:,./~-]+$")   # goes into a ProxyCommand unquoted


def proxy_args(bastion: dict) -> str:
    for what in ("host", "user", "key"):
        if not bastion.get(what):
            var = dict(host="HOST", user="USERNAME", key="KEY_LOCATION")[what]
            raise InventoryError(f"the FABRIC bastion {what} is not set: add FABRIC_BASTION_{var} to "
                                 f"fabric_rc (bastion login and keys: the FABRIC portal's user profile)")
    if not SAFE_PATH.match(bastion["key"]):
        raise InventoryError(f"bastion key path {bastion['key']!r} has spaces or quotes; move the key "
                             f"to a plain path (it goes into an ssh ProxyCommand)")
    # the bastion's own host key: accepted once into a known_hosts file of its own (the nodes' files
    # are added by inventory.write, per host)
    kh = pool.known_hosts_file(f"fabric-bastion@{bastion['host']}")
    if not SAFE_PATH.match(str(kh)):
        raise InventoryError(f"the known_hosts path {kh} has spaces or quotes; set FAVORLAB_CACHE to a "
                             f"plain path (it goes into an ssh ProxyCommand)")
    return (f'-o ProxyCommand="ssh -i {bastion["key"]} -o UserKnownHostsFile={kh} {inventory.ACCEPT_NEW} '
            f'-W [%h]:%p {bastion["user"]}@{bastion["host"]}"')


def fabric_inventory(nodes: list[dict], bastion: dict) -> dict:
    """Node records {name, address, user, key} + bastion {host, user, key} -> the inventory.
    ansible_host is the bare address: Ansible and ssh take IPv6 without brackets there."""
    common = proxy_args(bastion)
    hosts = {}
    for n in nodes:
        if not n.get("address"):
            raise InventoryError(f"node {n['name']} has no management address: fablib reported none "
                                 f"(the slice's page in the FABRIC portal shows its state)")
        hosts[n["name"]] = {"ansible_host": str(n["address"]).strip("[]"), "ansible_user": n["user"],
                            "ansible_become": True, "ansible_ssh_private_key_file": n["key"],
                            "ansible_ssh_common_args": common}
    return inventory.ssh_inventory(hosts)


def header(a) -> str:
    return (f"Written by python -m orchestrate.fabric create --name {a.name}: regenerate it, do not edit.\n"
            f"Provision: cd ansible && ../.venv/bin/ansible-playbook -i <this file> site.yml\n"
            f"Config: testbed: {{kind: ssh, inventory: <this file>, host: node0}}\n"
            f"Delete the VMs: python -m orchestrate.fabric delete --name {a.name}")


def plan(a) -> str:
    site = a.site or "any (fablib picks one per node)"
    return (f"slice {a.name}: {a.nodes} node(s) node0..node{a.nodes - 1} at site {site}, each "
            f"{a.cores} cores, {a.ram} GB RAM, {a.disk} GB disk, image {a.image}")


def load_fablib():
    """fablib only when it is needed: it is heavy, and only FABRIC users install it."""
    try:
        from fabrictestbed_extensions.fablib.fablib import FablibManager
    except ImportError as e:
        raise InventoryError(f"fablib is not installed ({e}): .venv/bin/pip install -r "
                             f"requirements-fabric.txt") from None
    return FablibManager


def manager(a):
    FablibManager = load_fablib()
    return FablibManager(fabric_rc=a.fabric_rc) if a.fabric_rc else FablibManager()


def dry_run(a, names: list[str]) -> int:
    # fablib's defaults as placeholders (they must pass the ProxyCommand's path check)
    placeholder = {"host": "bastion.fabric-testbed.net", "user": "YOUR_BASTION_LOGIN",
                   "key": "~/work/fabric_config/fabric_bastion_key"}
    records = [{"name": n, "address": f"<{n} management IP>", "user": IMAGES[a.image],
                "key": "~/work/fabric_config/slice_key"} for n in names]
    exists = a.output != "-" and Path(a.output).exists()
    print(f"dry run: would create {plan(a)}")
    print("dry run: addresses, bastion login and key paths below are placeholders; the real run "
          "takes them from the slice and fabric_rc")
    print(f"dry run: would write {a.output}" + (" (it exists: the real run needs --force)" if exists else "") + ":\n")
    inv = fabric_inventory(records, placeholder)
    print(inventory.render(inventory.with_host_keys(inv, a.output) if a.output != "-" else inv, header(a)), end="")
    return 0


def settings(fm) -> tuple[dict, str]:
    """The bastion and the slice key, from fablib's configuration, checked before anything is
    reserved: VMs that end up without an inventory are easy to forget."""
    bastion = {"host": fm.get_bastion_host(), "user": fm.get_bastion_username(),
               "key": fm.get_bastion_key_location()}
    if bastion["key"]:
        bastion["key"] = inventory.private_key(bastion["key"])
    proxy_args(bastion)
    if not fm.get_default_slice_private_key_file():
        raise InventoryError("the slice key is not set: add FABRIC_SLICE_PRIVATE_KEY_FILE and "
                             "FABRIC_SLICE_PUBLIC_KEY_FILE to fabric_rc")
    return bastion, inventory.private_key(fm.get_default_slice_private_key_file())


def create(a) -> int:
    names = [f"node{i}" for i in range(a.nodes)]
    if a.dry_run:
        return dry_run(a, names)
    if a.output != "-" and Path(a.output).exists() and not a.force:
        raise InventoryError(f"{a.output} exists; pass --force to replace it (or -o another path)")
    fm = manager(a)
    bastion, slice_key = settings(fm)
    print(f"creating {plan(a)}; this waits until the VMs answer SSH (minutes)", file=sys.stderr, flush=True)
    a.reserving = True                     # from here on a failure may leave a slice behind
    sl = fm.new_slice(name=a.name)
    for n in names:
        sl.add_node(name=n, site=a.site, cores=a.cores, ram=a.ram, disk=a.disk, image=a.image)
    sl.submit()
    try:
        records = []
        for n in names:
            node = sl.get_node(name=n)
            key = node.get_private_key_file()
            records.append({"name": n, "address": node.get_management_ip(), "user": node.get_username(),
                            "key": inventory.private_key(key) if key else slice_key})
        inventory.write(fabric_inventory(records, bastion), a.output, header(a), force=a.force)
    except InventoryError as e:
        raise InventoryError(f"{e}\nThe slice {a.name} is up without an inventory: delete it with "
                             f"python -m orchestrate.fabric delete --name {a.name}") from None
    for r in records:
        print(f"{r['name']}: {r['user']}@{r['address']}", file=sys.stderr)
    if a.output != "-":
        print(f"wrote {a.output}; next: cd ansible && ../.venv/bin/ansible-playbook -i "
              f"{Path(a.output).resolve()} site.yml")
    return 0


def delete(a) -> int:
    manager(a).delete_slice(slice_name=a.name)
    print(f"deleted slice {a.name}; its inventory (e.g. {DEFAULT_OUT}) now names hosts that are gone")
    return 0


def slice_name(s: str) -> str:
    if not re.match(r"^[A-Za-z0-9_-]+$", s):
        raise argparse.ArgumentTypeError(f"{s!r}: letters, digits, - and _ only")
    return s


def bounded(lo, hi):
    def check(s):
        v = int(s)
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{v} is not in {lo}..{hi}")
        return v
    return check


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m orchestrate.fabric", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fabric-rc", help="fablib's configuration file (default: fablib's own lookup)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("create", help="reserve the VMs, wait for them, write the inventory")
    d = sub.add_parser("delete", help="delete the slice and its VMs")
    for p in (c, d):
        p.add_argument("--name", required=True, type=slice_name, help="the slice's name")
    c.add_argument("--nodes", type=bounded(1, 16), default=1, help="VMs, each a whole testbed (default 1)")
    c.add_argument("--cores", type=bounded(2, 64), default=4, help="cores per VM (default 4)")
    c.add_argument("--ram", type=bounded(4, 384), default=16, help="GB of RAM per VM (default 16)")
    c.add_argument("--disk", type=bounded(20, 2000), default=50, help="GB of disk per VM (default 50)")
    c.add_argument("--image", choices=sorted(IMAGES), default="default_ubuntu_22")
    c.add_argument("--site", type=str.upper, help="FABRIC site, e.g. STAR, TACC (default: fablib picks)")
    c.add_argument("-o", "--output", default=DEFAULT_OUT, help=f"inventory to write, - for stdout (default {DEFAULT_OUT})")
    c.add_argument("--force", action="store_true", help="replace an existing inventory")
    c.add_argument("--dry-run", action="store_true", help="show the slice and inventory; reserve nothing")
    a = ap.parse_args(argv)
    try:
        return create(a) if a.cmd == "create" else delete(a)
    except InventoryError as e:
        print(f"fabric: {e}", file=sys.stderr)
        return 1
    except Exception as e:   # fablib's own errors: credentials, quota, a site without room, timeouts
        left = (f"; the slice may exist: python -m orchestrate.fabric delete --name {a.name}"
                if getattr(a, "reserving", False) else "")
        print(f"fabric: {type(e).__name__}: {e}\nCheck fabric_rc (token, project, bastion and slice keys: "
              f"docs/testbeds.md, 'On FABRIC'){left}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
