"""Reserve FABRIC VMs as testbed hosts and write their Ansible inventory; delete them again.

    python -m orchestrate.fabric create --name favorlab --nodes 2 --cores 4 --ram 16 --disk 50 \\
        --image default_debian_12 [--site STAR] [--lease-hours H] -o ansible/inventories/fabric/hosts.yml [--dry-run] [--force]
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

from orchestrate import dryrun, images, inventory, pool
from orchestrate.inventory import InventoryError

DEFAULT_OUT = "ansible/inventories/fabric/hosts.yml"
# The images a slice may boot, each with its login user (orchestrate/images.py: which are supported)
IMAGES = {name: info["user"] for name, info in images.FABRIC.items()}
# FABRIC's longest lease: two weeks (its user documentation); a submit or renew past it is refused by FABRIC
MAX_LEASE_H = 14 * 24
DEFAULT_LEASE_H = 24   # what fablib's submit() asks for without lease_in_hours
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
    # IdentitiesOnly: the bastion is offered only its key, not every key of the user's agent first (sshd
    # closes the connection after MaxAuthTries, 6, failed keys: "Too many authentication failures")
    return (f'-o ProxyCommand="ssh -i {bastion["key"]} -o IdentitiesOnly=yes -o UserKnownHostsFile={kh} '
            f'{inventory.ACCEPT_NEW} '
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
    lease = f", lease {a.lease_hours} h" if getattr(a, "lease_hours", None) else f", fablib's default lease ({DEFAULT_LEASE_H} h)"
    return (f"slice {a.name}: {a.nodes} node(s) node0..node{a.nodes - 1} at site {site}, each "
            f"{a.cores} cores, {a.ram} GB RAM, {a.disk} GB disk, image {a.image}{lease}")


def load_fablib():
    """fablib only when it is needed: it is heavy, and only FABRIC users install it."""
    try:
        from fabrictestbed_extensions.fablib.fablib import FablibManager
    except ImportError as e:
        raise InventoryError(f"fablib is not installed ({e}): .venv/bin/pip install -r "
                             f"requirements-fabric.txt") from None
    return FablibManager


def manager(a):
    """fablib's FablibManager, or for --dry-run a dryrun.Dry that prints the calls (no fablib needed)."""
    if getattr(a, "dry_run", False):
        return dryrun.Dry(f"FablibManager({'fabric_rc=' + repr(a.fabric_rc) if a.fabric_rc else ''})")
    FablibManager = load_fablib()
    return FablibManager(fabric_rc=a.fabric_rc) if a.fabric_rc else FablibManager()


# A dry run's bastion and keys: fablib's defaults as placeholders (they pass the ProxyCommand's path check)
PLACEHOLDER_BASTION = {"host": "bastion.fabric-testbed.net", "user": "YOUR_BASTION_LOGIN",
                       "key": "~/work/fabric_config/fabric_bastion_key"}
PLACEHOLDER_SLICE_KEY = "~/work/fabric_config/slice_key"


def settings(fm) -> tuple[dict, str]:
    """The bastion and the slice key, from fablib's configuration, checked before anything is
    reserved: VMs that end up without an inventory are easy to forget. A dry run's are placeholders."""
    bastion = {"host": fm.get_bastion_host(), "user": fm.get_bastion_username(),
               "key": fm.get_bastion_key_location()}
    key = fm.get_default_slice_private_key_file()
    if dryrun.is_dry(fm):
        return dict(PLACEHOLDER_BASTION), PLACEHOLDER_SLICE_KEY
    if bastion["key"]:
        bastion["key"] = inventory.private_key(bastion["key"])
    proxy_args(bastion)
    if not key:
        raise InventoryError("the slice key is not set: add FABRIC_SLICE_PRIVATE_KEY_FILE and "
                             "FABRIC_SLICE_PUBLIC_KEY_FILE to fabric_rc")
    return bastion, inventory.private_key(key)


def node_records(sl, names: list[str], slice_key: str) -> list[dict]:
    """The inventory's node records of a submitted slice: each VM's address, login user and key."""
    records = []
    for n in names:
        node = sl.get_node(name=n)
        key = node.get_private_key_file()
        if dryrun.is_dry(sl):
            key = None
        records.append({"name": n, "address": str(node.get_management_ip()), "user": str(node.get_username()),
                        "key": inventory.private_key(key) if key else slice_key})
    return records


def write_inventory(sl, names: list[str], bastion: dict, slice_key: str, output: str, head: str,
                    force: bool) -> list[dict]:
    """The slice's inventory at output (a dry run prints it, with placeholders, instead)."""
    records = node_records(sl, names, slice_key)
    inv = fabric_inventory(records, bastion)
    if dryrun.is_dry(sl):
        exists = output != "-" and Path(output).exists()
        print("dry run: addresses, bastion login and key paths below are placeholders; the real run "
              "takes them from the slice and fabric_rc")
        print(f"dry run: would write {output}" + (" (it exists: the real run needs --force)" if exists else "") + ":\n")
        print(inventory.render(inventory.with_host_keys(inv, output) if output != "-" else inv, head), end="")
    else:
        inventory.write(inv, output, head, force=force)
    return records


def create(a, fm=None) -> int:
    """Reserve the slice (a.nodes VMs, a.lease_hours), wait for it, write its inventory. fm: fablib's
    FablibManager or a dryrun.Dry (default: manager(a))."""
    names = [f"node{i}" for i in range(a.nodes)]
    if a.dry_run:
        print(f"dry run: would create {plan(a)}")
    elif a.output != "-" and Path(a.output).exists() and not a.force:
        raise InventoryError(f"{a.output} exists; pass --force to replace it (or -o another path)")
    fm = fm or manager(a)
    bastion, slice_key = settings(fm)
    if not a.dry_run:
        print(f"creating {plan(a)}; this waits until the VMs answer SSH (minutes)", file=sys.stderr, flush=True)
    a.reserving = True                     # from here on a failure may leave a slice behind
    sl = fm.new_slice(name=a.name)
    for n in names:
        sl.add_node(name=n, site=a.site, cores=a.cores, ram=a.ram, disk=a.disk, image=a.image)
    # without lease_in_hours fablib submits for its default 24 h, too short for a campaign
    sl.submit(**({"lease_in_hours": a.lease_hours} if getattr(a, "lease_hours", None) else {}))
    try:
        records = write_inventory(sl, names, bastion, slice_key, a.output, header(a), a.force)
    except InventoryError as e:
        raise InventoryError(f"{e}\nThe slice {a.name} is up without an inventory: delete it with "
                             f"python -m orchestrate.fabric delete --name {a.name}") from None
    if a.dry_run:
        return 0
    for r in records:
        print(f"{r['name']}: {r['user']}@{r['address']}", file=sys.stderr)
    if a.output != "-":
        print(f"wrote {a.output}; next: cd ansible && ../.venv/bin/ansible-playbook -i "
              f"{Path(a.output).resolve()} site.yml")
    return 0


def status(fm, name: str) -> dict:
    """The slice's state and lease end as fablib reports them (strings; a dry run's stand-ins)."""
    sl = fm.get_slice(name=name)
    return {"state": sl.get_state(), "lease_end": sl.get_lease_end()}


def renew(fm, name: str, days: int) -> dict:
    """Extend the slice's lease to `days` days from now (fablib renews in whole days), then its status."""
    sl = fm.get_slice(name=name)
    sl.renew(days=days)
    return {"state": sl.get_state(), "lease_end": sl.get_lease_end()}


def delete(a, fm=None) -> int:
    (fm or manager(a)).delete_slice(slice_name=a.name)
    if not a.dry_run:
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
        p.add_argument("--dry-run", action="store_true", help="print the fablib calls; reserve or delete nothing")
    c.add_argument("--nodes", type=bounded(1, 16), default=1, help="VMs, each a whole testbed (default 1)")
    c.add_argument("--cores", type=bounded(2, 64), default=4, help="cores per VM (default 4)")
    c.add_argument("--ram", type=bounded(4, 384), default=16, help="GB of RAM per VM (default 16)")
    c.add_argument("--disk", type=bounded(20, 2000), default=50, help="GB of disk per VM (default 50)")
    c.add_argument("--image", choices=sorted(IMAGES), default=images.FABRIC_DEFAULT,
                   help=f"the VMs' image (default {images.FABRIC_DEFAULT}; docs/testbed-images.md)")
    c.add_argument("--lease-hours", type=bounded(1, MAX_LEASE_H), help=f"the slice's lease (default: fablib's {DEFAULT_LEASE_H} h)")
    c.add_argument("--site", type=str.upper, help="FABRIC site, e.g. STAR, TACC (default: fablib picks)")
    c.add_argument("-o", "--output", default=DEFAULT_OUT, help=f"inventory to write, - for stdout (default {DEFAULT_OUT})")
    c.add_argument("--force", action="store_true", help="replace an existing inventory")
    a = ap.parse_args(argv)
    why = images.unsupported_warning(a.image, images.FABRIC) if a.cmd == "create" else None
    if why:
        print(f"fabric: warning: {why}", file=sys.stderr)
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
