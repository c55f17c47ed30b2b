"""A CloudLab experiment through the portal's API: start it, read its status, extend it, turn its manifests
into the inventory, terminate it (./favorlab testbed create|status|renew|inventory|delete, orchestrate/lifecycle.py).

The API is the portal's XML-RPC interface as Emulab's portal-tools speak it (Python package emulab_sslxmlrpc,
from Emulab's portal-tools repository; it is not on PyPI, so it is the user's to install), authenticated with
the user's portal certificate (the portal's Download Credentials: emulab.pem, by default ~/.ssl/emulab.pem).
Each call is `api.<method>(server, params).apply()` -> (exit code, EmulabResponse), the response's value a JSON
string where params ask `asjson`. The experiment is made from a profile stored in the portal: the user uploads
testbed/cloudlab/profile.py once as a profile of the project, and `create` instantiates it with the config's
node count and image as the profile's parameters.

Without portal-tools or the certificate, each subcommand prints the portal steps that do the same by hand;
the manifest-to-inventory step stays automatic (`inventory --manifest manifest.xml`).
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from orchestrate import cloudlab, inventory
from orchestrate.inventory import InventoryError

DEFAULT_CERT = "~/.ssl/emulab.pem"
# Statuses experimentStatus reports on the way to ready, and the two that end the wait
READY, FAILED = "ready", "failed"
POLL_S = 30


class PortalError(RuntimeError):
    """The portal refused a call: the message names the call, its code and what the portal said."""


class Unreachable(RuntimeError):
    """The API cannot be used from here (no portal-tools, no certificate): the message says which."""


class Portal:
    """The portal API with the user's certificate; dry: print each call instead of making it."""

    def __init__(self, cert: str, dry: bool = False, out=None):
        self.dry, self.out = dry, out or sys.stdout
        self.cert = str(Path(os.path.expanduser(cert)))
        if dry:
            return
        try:
            import emulab_sslxmlrpc.client.api as api
            import emulab_sslxmlrpc.xmlrpc as xmlrpc
        except ImportError as e:
            raise Unreachable(f"Emulab's portal-tools (emulab_sslxmlrpc) are not installed ({e})") from None
        if not Path(self.cert).is_file():
            raise Unreachable(f"no portal certificate at {self.cert} (the portal's Download Credentials; "
                              f"or give --cert)")
        self.api, self.codes = api, xmlrpc
        self.server = xmlrpc.EmulabXMLRPC({"certificate": self.cert})

    def call(self, method: str, params: dict):
        """The call's value (parsed JSON where params ask asjson); None in a dry run, which prints it."""
        if self.dry:
            print(f"dry run: would call portal {method}({params!r})", file=self.out, flush=True)
            return None
        code, response = getattr(self.api, method)(self.server, params).apply()
        if code:
            said = getattr(response, "output", "") or getattr(response, "value", "") or response
            raise PortalError(f"portal {method} for {params.get('experiment') or params.get('name')}: "
                              f"code {code}: {said}")
        value = getattr(response, "value", response)
        return json.loads(value) if params.get("asjson") and isinstance(value, str) else value


def experiment(project: str, name: str) -> str:
    return f"{project},{name}"


def start(portal: Portal, w, image: str, hardware_type: str | None, cluster: str | None) -> None:
    """startExperiment of the profile with the config's nodes and image, for w.lease_h hours."""
    bindings = {"node_count": str(len(w.names)), "disk_image": image}
    if hardware_type:
        bindings["hardware_type"] = hardware_type
    params = {"profile": w.profile, "proj": w.project, "name": w.name, "duration": w.lease_h,
              "bindings": json.dumps(bindings)}
    if cluster:
        params["aggregate"] = cluster
    portal.call("startExperiment", params)


def status(portal: Portal, w) -> dict:
    """experimentStatus as JSON: {"status": ..., "expires": ...} and more (a dry run: {})."""
    return portal.call("experimentStatus", {"experiment": experiment(w.project, w.name), "asjson": 1}) or {}


def wait_ready(portal: Portal, w, minutes: float, sleep=time.sleep, out=None) -> dict:
    """Poll the status until the experiment is ready (or failed, or the wait is over)."""
    deadline = time.monotonic() + minutes * 60
    while True:
        st = status(portal, w)
        if portal.dry or st.get("status") == READY:
            return st
        if st.get("status") == FAILED:
            raise PortalError(f"experiment {w.name} failed to start: {st.get('failure') or st}; terminate it "
                              f"with ./favorlab testbed delete {w.config}")
        if time.monotonic() > deadline:
            raise PortalError(f"experiment {w.name} is still {st.get('status')!r} after {minutes:g} min; see "
                              f"./favorlab testbed status {w.config}, then ./favorlab testbed inventory once ready")
        print(f"cloudlab: {w.name} is {st.get('status')}; waiting", file=out or sys.stderr, flush=True)
        sleep(POLL_S)


def expires(st: dict) -> datetime | None:
    """The experiment's expiry from its status, when the portal gives one this parses."""
    raw = st.get("expires")
    if not raw:
        return None
    try:
        t = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def extension_hours(st: dict, want_h: int, now: datetime | None = None) -> int:
    """Hours to ask for so the experiment lasts want_h hours from now: 0 when its expiry is already
    later; want_h when the expiry is unknown."""
    end = expires(st)
    if end is None:
        return want_h
    now = now or datetime.now(timezone.utc)
    short = (now - end).total_seconds() / 3600 + want_h
    return max(0, math.ceil(short))


def extend(portal: Portal, w, hours: int, reason: str) -> None:
    portal.call("extendExperiment", {"experiment": experiment(w.project, w.name), "wanted": hours,
                                     "reason": reason})


def manifests(portal: Portal, w) -> list[str]:
    """The experiment's manifests (one per cluster it spans), as XML texts."""
    got = portal.call("experimentManifests", {"experiment": experiment(w.project, w.name), "asjson": 1})
    return list((got or {}).values())


def inventory_of(xml_texts: list[str], user: str | None, key: str | None, names: list[str]) -> dict:
    """The inventory of the nodes of one or more manifests; every node the config names must be there."""
    nodes = {}
    for i, text in enumerate(xml_texts):
        nodes.update(cloudlab.nodes_of(text, source=f"manifest {i + 1} of the experiment"))
    missing = [n for n in names if n not in nodes]
    if missing:
        raise InventoryError(f"the experiment has no node {', '.join(missing)} (it has {', '.join(nodes)}): "
                             f"the config's testbed hosts must be node0..node<N-1> of the profile")
    return inventory.ssh_inventory(cloudlab.hosts(nodes, cloudlab.pick_user(nodes, user), key))


def terminate(portal: Portal, w) -> None:
    portal.call("terminateExperiment", {"experiment": experiment(w.project, w.name)})


def by_hand(action: str, w, image: str, why: str) -> str:
    """The portal steps that do `action` by hand, for when the API cannot be used from here."""
    page = f"the experiment's page (Experiments -> My Experiments -> {w.name})"
    inv = (f"./favorlab testbed inventory {w.config} --manifest manifest.xml --user YOUR_CLOUDLAB_USER "
           f"--key ~/.ssh/id_ed25519")
    steps = {
        "create": [f"Experiments -> Create Experiment Profile: upload testbed/cloudlab/profile.py to project "
                   f"{w.project or 'YOUR_PROJECT'} (once)",
                   f"instantiate it with Number of nodes {len(w.names)}, Disk image {image}, name {w.name}, "
                   f"duration {w.lease_h} hours",
                   "wait until every node is ready, then save the Manifest tab's XML as manifest.xml",
                   inv],
        "status": [f"open {page}: its state and expiration"],
        "renew": [f"on {page}, Extend: ask for {w.lease_h} more hours, with the reason it prints"],
        "inventory": ["save the Manifest tab's XML of the experiment as manifest.xml", inv],
        "delete": [f"on {page}, Terminate"],
    }[action]
    return (f"cloudlab: the portal API cannot be used from here ({why}); by hand:\n"
            + "".join(f"  {i}. {s}\n" for i, s in enumerate(steps, 1)))
