"""A CloudLab experiment's manifest RSpec -> the Ansible inventory of its nodes.

    python -m orchestrate.cloudlab manifest.xml --user alice --key ~/.ssh/id_ed25519 \\
        -o ansible/inventories/cloudlab/hosts.yml [--force]

The manifest is the XML the portal shows once the experiment is ready (Manifest tab, or List View ->
Download Manifest). Each node's <services> lists one <login> per project member; the one for --user
gives the host and port to SSH to. CloudLab users have passwordless sudo, hence ansible_become.
The node's client_id (node0, node1, ... from testbed/cloudlab/profile.py) becomes the inventory host.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

from orchestrate import inventory
from orchestrate.inventory import InventoryError

GENI = "{http://www.geni.net/resources/rspec/3}"
DEFAULT_OUT = "ansible/inventories/cloudlab/hosts.yml"


def nodes_of(xml_text: str, source: str = "the manifest") -> dict[str, list[dict]]:
    """{client_id: [ssh logins as {hostname, port, username}]} in document order."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as e:
        raise InventoryError(f"{source} is not XML ({e}); save the manifest's XML itself (Manifest tab, "
                             f"or List View -> Download Manifest), not the web page") from None
    if root.tag != GENI + "rspec":
        raise InventoryError(f"{source} is not a GENI v3 RSpec (its root is <{root.tag}>); save the "
                             f"experiment's manifest from the portal's Manifest tab")
    nodes = {}
    for node in root.findall(GENI + "node"):
        name = node.get("client_id")
        if not name:
            raise InventoryError(f"{source} has a <node> without client_id; save the manifest again")
        nodes[name] = [{"hostname": lg.get("hostname"), "port": int(lg.get("port") or 22),
                        "username": lg.get("username")}
                       for lg in node.findall(f"{GENI}services/{GENI}login")
                       if lg.get("authentication", "ssh-keys") == "ssh-keys" and lg.get("hostname")]
    if not nodes:
        raise InventoryError(f"{source} has no nodes; is it the manifest of an experiment made from "
                             f"testbed/cloudlab/profile.py?")
    pending = [n for n, logins in nodes.items() if not logins]
    if len(pending) == len(nodes):
        raise InventoryError(f"{source} has no SSH logins: either the experiment is not ready yet (wait "
                             f"until every node is ready, then copy the manifest again) or you pasted "
                             f"the request RSpec (the profile's output) instead of the manifest")
    if pending:
        raise InventoryError(f"nodes {', '.join(pending)} in {source} have no SSH login yet: the "
                             f"experiment is not ready; wait until every node is ready and copy the "
                             f"manifest again")
    return nodes


def pick_user(nodes: dict[str, list[dict]], user: str | None) -> str:
    """--user, or the only username the manifest lists; it must have a login on every node."""
    names = list(dict.fromkeys(lg["username"] for logins in nodes.values() for lg in logins))
    if user is None:
        if len(names) != 1:
            raise InventoryError(f"the manifest lists logins for {len(names)} users ({', '.join(names)}); "
                                 f"give --user with your CloudLab username")
        user = names[0]
    missing = [n for n, logins in nodes.items() if user not in {lg["username"] for lg in logins}]
    if missing:
        raise InventoryError(f"user {user} has no login on {', '.join(missing)}; the manifest lists "
                             f"{', '.join(names)}: give --user with your CloudLab username (the one "
                             f"in the portal's ssh commands)")
    return user


def hosts(nodes: dict[str, list[dict]], user: str, key: str | None) -> dict[str, dict]:
    out = {}
    for name, logins in nodes.items():
        login = next(lg for lg in logins if lg["username"] == user)
        hv = {"ansible_host": login["hostname"], "ansible_port": login["port"],
              "ansible_user": user, "ansible_become": True}
        if key:
            hv["ansible_ssh_private_key_file"] = key
        out[name] = hv
    return out


def convert(xml_text: str, user: str | None, key: str | None, source: str = "the manifest") -> dict:
    nodes = nodes_of(xml_text, source)
    return inventory.ssh_inventory(hosts(nodes, pick_user(nodes, user), key))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m orchestrate.cloudlab", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("manifest", help="the experiment's manifest RSpec (XML)")
    ap.add_argument("--user", help="your CloudLab username (default: the only one the manifest lists)")
    ap.add_argument("--key", help="SSH private key for the nodes (default: ssh's own: agent, ~/.ssh/id_*)")
    ap.add_argument("-o", "--output", default=DEFAULT_OUT, help=f"inventory to write, - for stdout (default {DEFAULT_OUT})")
    ap.add_argument("--force", action="store_true", help="replace an existing inventory")
    a = ap.parse_args(argv)
    try:
        try:
            text = Path(a.manifest).read_text()
        except OSError as e:
            raise InventoryError(f"cannot read {a.manifest}: {e.strerror}; save the manifest XML there first") from None
        key = inventory.private_key(a.key) if a.key else None
        inv = convert(text, a.user, key, source=a.manifest)
        header = (f"Written by python -m orchestrate.cloudlab {a.manifest}: regenerate it, do not edit.\n"
                  f"Provision: cd ansible && ../.venv/bin/ansible-playbook -i <this file> site.yml\n"
                  f"Config: testbed: {{kind: ssh, inventory: <this file>, host: node0}}")
        inventory.write(inv, a.output, header, force=a.force)
    except InventoryError as e:
        print(f"cloudlab: {e}", file=sys.stderr)
        return 1
    if a.output != "-":
        for name, hv in inv["all"]["children"][inventory.GROUP]["hosts"].items():
            print(f"{name}: {hv['ansible_user']}@{hv['ansible_host']} port {hv['ansible_port']}")
        print(f"wrote {a.output}; next: cd ansible && ../.venv/bin/ansible-playbook "
              f"-i {Path(a.output).resolve()} site.yml")
    return 0


if __name__ == "__main__":
    sys.exit(main())
