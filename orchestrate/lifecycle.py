"""A config's FABRIC slice or CloudLab experiment from reservation to deletion: ./favorlab testbed ACTION CONFIG.

    ./favorlab testbed create    CONFIG.yaml [--dry-run] [--force]   reserve, wait, write the config's inventory
    ./favorlab testbed status    CONFIG.yaml                         state, lease end, whether it covers the plan
    ./favorlab testbed renew     CONFIG.yaml [--dry-run]             extend the lease to the plan's length from now
    ./favorlab testbed inventory CONFIG.yaml [--force]               (re)write the inventory of the running nodes
    ./favorlab testbed delete    CONFIG.yaml [--dry-run]             release the nodes

The config names the nodes: its testbed is {kind: ssh, inventory: ..., hosts: [node0, ...]} (or host:, or
group: with --nodes N), and the inventory's path says the testbed (ansible/inventories/fabric/... or
.../cloudlab/...; --on fabric|cloudlab otherwise). The slice or experiment is named after the config (--name).
The lease comes from the config's projected wall time with as many testbeds as nodes (orchestrate/plan.py),
times LEASE_FACTOR plus LEASE_SETUP_H for provisioning, analysis and retries; on FABRIC at least fablib's
default 24 h and at most FABRIC's two-week maximum (renew extends it before it ends). --dry-run prints every
API call the command would make and makes none; it needs neither fablib nor portal-tools nor credentials.
"""
from __future__ import annotations

import argparse
import math
import re
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import yaml

from contract import rundir
from orchestrate import cloudlab_portal, fabric, images, inventory, matrix, plan
from orchestrate.config import REPO, ConfigError, resolve_extends, validate
from orchestrate.inventory import InventoryError

# The lease is the projected wall time of the runs times this, plus LEASE_SETUP_H: the projection leaves out
# provisioning a fresh host (minutes), the analysis and attempts beyond the measured mean
LEASE_FACTOR = 1.5
LEASE_SETUP_H = 2
FABRIC_TIME = "%Y-%m-%d %H:%M:%S %z"   # fablib's Constants.LEASE_TIME_FORMAT
ACTIONS = ("create", "status", "renew", "inventory", "delete")


class LifecycleError(ValueError):
    """Bad input: the message names the problem and the fix."""


@dataclass
class Want:
    """What a config asks of its testbed: where, which nodes, how long."""
    config: str
    service: str                      # fabric | cloudlab
    name: str                         # the slice's or experiment's name
    names: list[str]                  # the nodes, as the inventory names them
    inventory: str                    # the inventory the config reads
    lease_h: int = 0
    plan_lines: list[str] = field(default_factory=list)
    project: str | None = None        # CloudLab only
    profile: str | None = None


def service_of(inv: str, on: str | None) -> str:
    if on:
        return on
    parts = Path(inv).parts
    found = [s for s in ("fabric", "cloudlab") if s in parts]
    if len(found) != 1:
        raise LifecycleError(f"testbed.inventory {inv!r} does not say whether it is FABRIC's or CloudLab's "
                             f"(a folder named fabric or cloudlab). Fix: give --on fabric or --on cloudlab")
    return found[0]


def node_names(tb: dict, nodes: int | None, service: str) -> list[str]:
    if "hosts" in tb or "host" in tb:
        names = list(tb["hosts"]) if "hosts" in tb else [tb["host"]]
        if nodes is not None and nodes != len(names):
            raise LifecycleError(f"--nodes {nodes} but the config's testbed names {len(names)} host(s) "
                                 f"({', '.join(names)}). Fix: drop --nodes, or list that many hosts")
    elif nodes:
        names = [f"node{i}" for i in range(nodes)]
    else:
        raise LifecycleError("the config's testbed is an inventory group, whose hosts are not known before the "
                             "inventory exists. Fix: give --nodes N (node0..node<N-1>) or list testbed.hosts")
    bad = [n for n in names if not re.fullmatch(r"[A-Za-z][A-Za-z0-9-]*", n)]
    if bad:
        raise LifecycleError(f"host names {bad}: use letters, digits and '-' (node0, node1, ...)")
    if service == "cloudlab" and names != [f"node{i}" for i in range(len(names))]:
        raise LifecycleError(f"CloudLab's profile names its nodes node0..node{len(names) - 1}; the config names "
                             f"{', '.join(names)}. Fix: testbed.hosts: [node0, ...]")
    return names


def lease_hours(cfg: dict, n: int, results_root: Path) -> tuple[int, list[str]]:
    """(hours, lines saying how): the projected wall time of the config's runs not finished yet under
    results_root (a resumed campaign needs the lease for what is left) on n testbeds, with the margin."""
    runs = matrix.runs(cfg)
    left = [r for r in runs if not rundir.is_finished(results_root / cfg["name"] / "runs" / r.run_id)]
    traffic = [(lambda s: s["duration_s"] + s["drain_s"])(matrix.section_of(cfg, r)) for r in left]
    nums, lines = plan.project(traffic, "ssh", [n], results_root)
    if nums["overhead_s"] is None:   # no run on a real host yet: the guest's overheads, an upper bound for one
        nums, lines = plan.project(traffic, "local-vm", [n], results_root)
        lines = [lines[0] + " (no run on an ssh host yet: the guest's overhead, which a real host does not exceed)",
                 *lines[1:]]
    wall_h = nums["wall_s"][n] / 3600
    hours = max(1, math.ceil(wall_h * LEASE_FACTOR + LEASE_SETUP_H))
    return hours, lines + [f"lease: {wall_h:.1f} h of runs ({len(left)} of {len(runs)} not finished) x "
                           f"{LEASE_FACTOR} + {LEASE_SETUP_H} h for set-up and analysis = {hours} h"]


def want_of(config: str, a) -> Want:
    """Read the config: its testbed section as it is written (its inventory need not exist before create),
    and its runs through validate, with a local testbed standing in for the nodes not made yet."""
    path = Path(config)
    try:
        raw = yaml.safe_load(path.read_text())
        raw = resolve_extends(raw, path, config)
    except OSError as e:
        raise LifecycleError(f"{config}: {e.strerror}. Fix: give a config file (config/quick.yaml, ...)") from None
    except (yaml.YAMLError, ConfigError) as e:
        raise LifecycleError(f"{config}: {e}") from None
    tb = raw.get("testbed") if isinstance(raw, dict) else None
    if not isinstance(tb, dict) or tb.get("kind") != "ssh" or "inventory" not in tb:
        raise LifecycleError(f"{config}: its testbed is not an inventory of FABRIC or CloudLab nodes. Fix: set "
                             f"testbed: {{kind: ssh, inventory: ansible/inventories/fabric/hosts.yml, "
                             f"hosts: [node0]}} (or .../cloudlab/hosts.yml)")
    service = service_of(tb["inventory"], a.on)
    names = node_names(tb, a.nodes, service)
    try:
        cfg = validate(dict(raw, testbed={"kind": "local-vm", "count": 1}), config, warn=lambda m: None, origin=path)
    except ConfigError as e:
        raise LifecycleError(str(e)) from None
    name = a.name or re.sub(r"[^A-Za-z0-9-]+", "-", cfg["name"]).strip("-")
    if service == "cloudlab" and len(name) > 16:
        raise LifecycleError(f"experiment name {name!r} is longer than the portal's 16 characters. Fix: --name")
    inv = Path(tb["inventory"]).expanduser()   # relative: to the repository, where the pipeline reads it
    w = Want(config, service, name, names, str(inv if inv.is_absolute() else REPO / inv))
    w.lease_h, w.plan_lines = lease_hours(cfg, len(names), a.results)
    if service == "fabric" and w.lease_h < fabric.DEFAULT_LEASE_H:
        w.plan_lines.append(f"lease: {fabric.DEFAULT_LEASE_H} h, fablib's own default, as the least asked for")
        w.lease_h = fabric.DEFAULT_LEASE_H
    if service == "fabric" and w.lease_h > fabric.MAX_LEASE_H:
        w.plan_lines.append(f"lease: capped at FABRIC's maximum, {fabric.MAX_LEASE_H} h: renew before it ends "
                            f"(./favorlab testbed renew {config})")
        w.lease_h = fabric.MAX_LEASE_H
    w.project, w.profile = getattr(a, "project", None), getattr(a, "profile", None)
    return w


# ------------------------------------------------------------------ FABRIC

def fabric_args(w: Want, a) -> argparse.Namespace:
    """orchestrate.fabric's arguments for this config's slice."""
    return argparse.Namespace(name=w.name, nodes=len(w.names), cores=a.cores, ram=a.ram, disk=a.disk,
                              image=a.image or images.FABRIC_DEFAULT, site=a.site, output=w.inventory,
                              force=a.force, dry_run=a.dry_run, fabric_rc=a.fabric_rc, lease_hours=w.lease_h)


def hours_left(lease_end, now: datetime) -> float | None:
    try:
        return (datetime.strptime(str(lease_end), FABRIC_TIME) - now).total_seconds() / 3600
    except ValueError:
        return None


def on_fabric(action: str, w: Want, a, fm=None, now: datetime | None = None) -> int:
    fa = fabric_args(w, a)
    now = now or datetime.now(timezone.utc)
    if action == "create":
        why = images.unsupported_warning(fa.image, images.FABRIC)
        if why:
            print(f"testbed: warning: {why}", file=sys.stderr)
        if w.names != [f"node{i}" for i in range(len(w.names))]:
            raise LifecycleError(f"orchestrate.fabric names its VMs node0..node{len(w.names) - 1}; the config names "
                                 f"{', '.join(w.names)}. Fix: testbed.hosts: [node0, ...]")
        return fabric.create(fa, fm)
    if action == "delete":
        return fabric.delete(fa, fm)
    fm = fm or fabric.manager(fa)
    if action == "inventory":
        bastion, slice_key = fabric.settings(fm)
        fabric.write_inventory(fm.get_slice(name=w.name), w.names, bastion, slice_key, w.inventory,
                               fabric.header(fa), a.force)
        if not a.dry_run:
            print(f"wrote {w.inventory} ({len(w.names)} host(s) of slice {w.name})")
        return 0
    if action == "status":
        st = fabric.status(fm, w.name)
    else:
        days = min(math.ceil(w.lease_h / 24), fabric.MAX_LEASE_H // 24)
        st = fabric.status(fm, w.name)
        left = hours_left(st["lease_end"], now)
        if left is not None and left <= 0:
            raise LifecycleError(f"slice {w.name}'s lease ended at {st['lease_end']}: it cannot be renewed. "
                                 f"Fix: ./favorlab testbed create {w.config}")
        if left is not None and left >= days * 24:
            print(f"slice {w.name}: its lease ends {st['lease_end']} ({left:.0f} h from now), no sooner than "
                  f"the {days * 24} h a renewal would give: nothing to renew")
            return 0
        st = fabric.renew(fm, w.name, days)
    left = hours_left(st["lease_end"], now)
    print(f"slice {w.name}: state {st['state']}, lease ends {st['lease_end']}"
          + (f" ({left:.0f} h from now)" if left is not None else ""))
    if action == "status" and left is not None and left < w.lease_h:
        print(f"slice {w.name}: the plan needs {w.lease_h} h from now; renew: ./favorlab testbed renew {w.config}")
    return 0


# ------------------------------------------------------------------ CloudLab

def on_cloudlab(action: str, w: Want, a, now: datetime | None = None) -> int:
    image = a.image or images.CLOUDLAB_DEFAULT
    if action == "inventory" and a.manifest:      # the manifest saved by hand: no API at all
        try:
            text = Path(a.manifest).read_text()
        except OSError as e:
            raise LifecycleError(f"cannot read {a.manifest}: {e.strerror}. Fix: save the experiment's manifest "
                                 f"XML there (Manifest tab)") from None
        return write_cloudlab_inventory(w, a, [text])
    if not w.project:
        raise LifecycleError("CloudLab needs the project the experiment belongs to. Fix: give --project")
    if action == "create" and not w.profile:
        raise LifecycleError("create needs the portal profile made from testbed/cloudlab/profile.py. Fix: give "
                             "--profile PROJECT,PROFILE_NAME (upload the file once: docs/testbeds.md, On CloudLab)")
    try:
        portal = cloudlab_portal.Portal(a.cert, dry=a.dry_run)
    except cloudlab_portal.Unreachable as e:
        print(cloudlab_portal.by_hand(action, w, image, str(e)), end="")
        return 1
    if action == "create":
        why = images.unsupported_warning(image, images.CLOUDLAB)
        if why:
            print(f"testbed: warning: {why}", file=sys.stderr)
        if not a.dry_run and Path(w.inventory).exists() and not a.force:
            raise LifecycleError(f"{w.inventory} exists; pass --force to replace it once the experiment is up")
        cloudlab_portal.start(portal, w, image, a.hardware_type, a.cluster)
        cloudlab_portal.wait_ready(portal, w, a.wait_minutes)
        return write_cloudlab_inventory(w, a, cloudlab_portal.manifests(portal, w))
    if action == "inventory":
        return write_cloudlab_inventory(w, a, cloudlab_portal.manifests(portal, w))
    if action == "delete":
        cloudlab_portal.terminate(portal, w)
        if not a.dry_run:
            print(f"terminated experiment {w.name}; {w.inventory} now names hosts that are gone")
        return 0
    st = cloudlab_portal.status(portal, w)
    if action == "renew":
        hours = cloudlab_portal.extension_hours(st, w.lease_h, now) if st else w.lease_h
        if hours == 0:
            print(f"experiment {w.name}: it expires {st.get('expires')}, after the {w.lease_h} h the plan needs")
            return 0
        cloudlab_portal.extend(portal, w, hours, f"favorlab config {Path(w.config).name}: its runs are projected "
                                                 f"to need {w.lease_h} h from now")
        st = cloudlab_portal.status(portal, w)
    if not a.dry_run:
        print(f"experiment {w.name}: status {st.get('status')}, expires {st.get('expires', 'unknown')}")
        end = cloudlab_portal.expires(st)
        if end is not None and (end - (now or datetime.now(timezone.utc))).total_seconds() / 3600 < w.lease_h:
            print(f"experiment {w.name}: the plan needs {w.lease_h} h from now; renew: ./favorlab testbed renew "
                  f"{w.config} --project {w.project}")
    return 0


def write_cloudlab_inventory(w: Want, a, xml_texts: list[str]) -> int:
    """The inventory of the manifests at the config's path (a dry run prints it, or without manifests,
    which only the real run fetches, says where it would go)."""
    if a.dry_run and not xml_texts:
        print(f"dry run: would write {w.inventory} from the experiment's manifests")
        return 0
    key = inventory.private_key(a.key) if a.key else None
    inv = cloudlab_portal.inventory_of(xml_texts, a.user, key, w.names)
    head = (f"Written by ./favorlab testbed inventory {w.config} (CloudLab experiment {w.name}): regenerate it, "
            f"do not edit.\nDelete the nodes: ./favorlab testbed delete {w.config}")
    if a.dry_run:
        print(f"dry run: would write {w.inventory}:\n")
        print(inventory.render(inventory.with_host_keys(inv, w.inventory), head), end="")
        return 0
    inventory.write(inv, w.inventory, head, force=a.force)
    print(f"wrote {w.inventory} ({len(w.names)} host(s) of experiment {w.name})")
    return 0


# ------------------------------------------------------------------ command line

def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="./favorlab testbed", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=ACTIONS)
    ap.add_argument("config", help="the config whose testbed section names the nodes and their inventory")
    ap.add_argument("--on", choices=["fabric", "cloudlab"], help="the testbed (default: from the inventory's path)")
    ap.add_argument("--name", help="the slice's or experiment's name (default: the config's name)")
    ap.add_argument("--nodes", type=int, help="the number of nodes, for a config whose testbed is a group")
    ap.add_argument("--dry-run", action="store_true", help="print every API call; make none")
    ap.add_argument("--force", action="store_true", help="replace an existing inventory")
    ap.add_argument("--image", help=f"the nodes' image (FABRIC default {images.FABRIC_DEFAULT}, CloudLab "
                                    f"default {images.CLOUDLAB_DEFAULT}; docs/testbed-images.md)")
    ap.add_argument("--results", type=Path, default=REPO / "results",
                    help="the results folder: its finished runs are left out of the lease, its attempts give the "
                         "overhead per run (default results/)")
    f = ap.add_argument_group("FABRIC")
    f.add_argument("--fabric-rc", help="fablib's configuration file (default: fablib's own lookup)")
    f.add_argument("--site", type=str.upper, help="FABRIC site (default: fablib picks)")
    f.add_argument("--cores", type=fabric.bounded(2, 64), default=4)
    f.add_argument("--ram", type=fabric.bounded(4, 384), default=16, help="GB")
    f.add_argument("--disk", type=fabric.bounded(20, 2000), default=50, help="GB")
    c = ap.add_argument_group("CloudLab")
    c.add_argument("--project", help="your CloudLab project")
    c.add_argument("--profile", help="create: the profile made from testbed/cloudlab/profile.py, as PROJECT,NAME")
    c.add_argument("--cert", default=cloudlab_portal.DEFAULT_CERT, help="your portal certificate (emulab.pem)")
    c.add_argument("--cluster", help="create: the cluster's aggregate URN (default: the portal picks)")
    c.add_argument("--hardware-type", help="create: e.g. d430, m510 (default: any)")
    c.add_argument("--wait-minutes", type=float, default=60, help="create: how long to wait for ready")
    c.add_argument("--manifest", help="inventory: a manifest saved from the portal, instead of the API")
    c.add_argument("--user", help="inventory: your CloudLab login (default: the only one the manifest lists)")
    c.add_argument("--key", help="inventory: the SSH private key for the nodes (default: ssh's own)")
    return ap


def main(argv=None) -> int:
    a = parser().parse_args(argv)
    try:
        w = want_of(a.config, a)
        print("\n".join(w.plan_lines), file=sys.stderr)
        return on_fabric(a.action, w, a) if w.service == "fabric" else on_cloudlab(a.action, w, a)
    except (LifecycleError, InventoryError) as e:
        print(f"testbed: {e}", file=sys.stderr)
        return 2
    except cloudlab_portal.PortalError as e:
        print(f"testbed: {e}", file=sys.stderr)
        return 1
    except Exception as e:   # fablib's own errors: credentials, quota, a site without room, an unknown slice
        print(f"testbed: {type(e).__name__}: {e}\nCheck fabric_rc or the portal certificate (docs/testbeds.md)"
              + (f"; a slice may be left: ./favorlab testbed delete {a.config}" if a.action == "create" else ""),
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
