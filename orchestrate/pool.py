"""A config's testbeds as a pool: the testbed section expanded into members, member ids, machine-wide
leases, the members a pipeline left out, and each member's known_hosts file.

A member is one testbed: a local QEMU guest (`favorlab`, `favorlab-2`, ...) or one host of an Ansible
inventory. expand_pool (called by orchestrate.config.validate) expands a config's `testbed` section into its
members (dicts with an "id" and what orchestrate.testbeds needs: kind, vm_name or inventory + host); a run
job leases one with lease(), runs there and releases it.

Leases are `filelock` locks in ${FAVORLAB_CACHE:-~/.cache/favorlab}/leases/<member-id>.lock: an flock
held for as long as the job uses the testbed and dropped by the kernel when the process dies, so a
killed job never leaves a testbed leased. They are machine-wide (every checkout and every pipeline on
this machine uses the same cache), so two pipelines never run on one guest at once.

A member that died or stopped answering is left out for the rest of the pipeline: exclude() writes
results/<config>/testbeds/excluded/<member-id> (JSON: member, reason, time), and lease() skips it.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from orchestrate import atomic

REPO = Path(__file__).resolve().parents[1]

# A local guest has 2 vCPUs (testbed/README.md, "vCPUs": 2 measured against 1 and 3), and a guest whose
# vCPUs share a host core with another guest's is slowed in every run: one guest per 2 host cores.
CORES_PER_GUEST = 2
POLL_S = 5.0          # between rounds of non-blocking tries while every member is leased
# A virtual-clock guest (testbed.clock, testbed/README.md "The virtual clock") is another testbed than a
# real-clock one: its members are named apart (favorlab-virtual, favorlab-virtual-2, ...), so that a lease,
# a running guest and its provisioning are never shared between the two clocks.
VIRTUAL_SUFFIX = "-virtual"


class NoTestbedLeft(RuntimeError):
    """Every member of the pool was left out: the message names each one and why."""


def cache_root() -> Path:
    return Path(os.environ.get("FAVORLAB_CACHE") or Path.home() / ".cache" / "favorlab")


def now_utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def default_vm_count() -> int:
    """How many local guests this machine runs at once when a config does not say: one per
    CORES_PER_GUEST host cores, at least one."""
    return max(1, (os.cpu_count() or 1) // CORES_PER_GUEST)


def vm_names(base: str, count: int) -> list[str]:
    """Member 0 keeps the plain name (its cache and state stay where they were), then base-2 .. base-N."""
    return [base] + [f"{base}-{i}" for i in range(2, count + 1)]


def _safe(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._@+-]", "_", s)


def ssh_member_id(host: str, inventory: str | Path) -> str:
    """<host>@<hash of the inventory's absolute path>: node0 of two CloudLab experiments' inventories
    are two testbeds (and two known_hosts files)."""
    h = hashlib.sha256(str(Path(inventory).expanduser().resolve()).encode()).hexdigest()[:10]
    return _safe(f"{host}@{h}")


def member_id(member: dict) -> str:
    if member.get("id"):
        return member["id"]
    if member["kind"] == "local-vm":
        return member.get("vm_name", "favorlab")
    return ssh_member_id(member["host"], member["inventory"])


def known_hosts_file(mid: str) -> Path:
    """The known_hosts file of an ssh member: ssh records the host's key there on first contact
    (StrictHostKeyChecking=accept-new) and refuses a different key later. Never ~/.ssh/known_hosts."""
    return cache_root() / "known_hosts" / mid


def lease_dir() -> Path:
    return cache_root() / "leases"


# ------------------------------------------------------------------ leases

class Lease:
    """One member held by this process. Released by release() or at exit (the kernel drops the flock)."""

    def __init__(self, member: dict, lock, what: str):
        self.member, self.lock, self.what = member, lock, what
        self.id = member_id(member)
        self.acquired_utc = now_utc()
        self.released_utc: str | None = None
        self._holder = lease_dir() / f"{self.id}.holder"
        try:   # who holds it, for the "waiting" message of others (informational only)
            atomic.write_json(self._holder, {"pid": os.getpid(), "machine": socket.gethostname(),
                                             "cwd": os.getcwd(), "what": what,
                                             "acquired_utc": self.acquired_utc})
        except OSError:
            pass

    def release(self) -> None:
        if self.released_utc is None:
            # the holder file goes first: once the lock is free, a new holder writes its own
            self._holder.unlink(missing_ok=True)
            self.lock.release()
            self.released_utc = now_utc()

    def record(self, target: dict | None = None) -> dict:
        """The lease as controller.json keeps it."""
        t = target or {}
        rec = {"member": self.id, "kind": self.member.get("kind"), "host": t.get("host"),
               "port": t.get("port"), "acquired_utc": self.acquired_utc, "released_utc": self.released_utc}
        if self.member.get("kind") == "local-vm":   # what drove the guest's clock (favorvm --clock)
            rec["clock"] = self.member.get("clock", "real")
        return rec

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


def try_lease(member: dict, what: str = "") -> Lease | None:
    """The member's lease if nobody holds it, else None (never waits)."""
    from filelock import FileLock, Timeout
    lease_dir().mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(lease_dir() / f"{member_id(member)}.lock"), thread_local=False)
    try:
        lock.acquire(blocking=False)
    except Timeout:
        return None
    return Lease(member, lock, what)


def holder(mid: str) -> str:
    try:
        h = json.loads((lease_dir() / f"{mid}.holder").read_text())
        return f"{mid} (pid {h['pid']}, {h.get('what') or h.get('cwd')}, since {h['acquired_utc']})"
    except (OSError, ValueError, KeyError):
        return mid


def lease(members: list[dict], excluded_dir: Path | None, what: str = "", poll_s: float = POLL_S,
          log=print, max_wait_s: float | None = None) -> Lease:
    """Lease the first free member that is not excluded: a non-blocking try on each, then a pause, until
    one is free. Says once that it waits, and for whom. NoTestbedLeft when every member is excluded."""
    said = False
    t0 = time.monotonic()
    while True:
        out = excluded(excluded_dir)
        left = [m for m in members if member_id(m) not in out]
        if not left:
            raise NoTestbedLeft(no_testbed_left_message(members, out))
        for m in left:
            got = try_lease(m, what)
            if got:
                if said:
                    log(f"testbed: leased {got.id} after {time.monotonic() - t0:.0f} s")
                return got
        if not said:
            log(f"testbed: all {len(left)} testbed(s) of the pool are leased, waiting for one: "
                + "; ".join(holder(member_id(m)) for m in left))
            said = True
        if max_wait_s is not None and time.monotonic() - t0 > max_wait_s:
            raise TimeoutError(f"no testbed was free within {max_wait_s} s")
        time.sleep(poll_s)


# ------------------------------------------------------------------ members left out

def exclude(excluded_dir: Path, mid: str, reason: str) -> dict:
    rec = {"member": mid, "reason": reason, "excluded_utc": now_utc()}
    atomic.write_json(excluded_dir / mid, rec)
    return rec


def excluded(excluded_dir: Path | None) -> dict[str, dict]:
    """member id -> its exclusion record. A file that is not JSON (written by hand, or cut short) still
    counts, with its text as reason: leaving a member out errs on the safe side, and lasts only until the
    next pipeline start."""
    if not excluded_dir or not Path(excluded_dir).is_dir():
        return {}
    out = {}
    for p in Path(excluded_dir).iterdir():
        if p.name.startswith(".") or not p.is_file():
            continue
        try:
            out[p.name] = json.loads(p.read_text())
        except (OSError, ValueError):
            out[p.name] = {"member": p.name, "reason": p.read_text(errors="replace").strip(), "excluded_utc": "?"}
    return out


def no_testbed_left_message(members: list[dict], out: dict[str, dict]) -> str:
    lines = [f"  {mid}: {r.get('reason')} (at {r.get('excluded_utc')})" for mid, r in sorted(out.items())
             if mid in {member_id(m) for m in members}]
    return (f"no testbed left: all {len(members)} of the pool were left out by this pipeline:\n"
            + "\n".join(lines) + "\nFix: bring them back (a dead local guest restarts on the next "
            "pipeline start; check an ssh host with ssh or the provider's portal) and run the pipeline "
            "again; each start gives every member a new chance.")


# ------------------------------------------------------------------ a config's testbed section as a pool

class PoolError(ValueError):
    """A testbed section that names no usable pool: the message names the key and the fix."""


def pool_problems(tb: dict, source: str) -> list[str]:
    p = []
    if tb["kind"] != "local-vm" and tb.get("clock", "real") != "real":
        p.append(f"{source}: testbed.clock {tb['clock']!r} is for kind 'local-vm' (QEMU guests); a real host's "
                 f"clock is its own. Fix: remove testbed.clock, or set kind: local-vm.")
    if tb["kind"] == "local-vm":
        for key in ("inventory", "host", "hosts", "group"):
            if key in tb:
                p.append(f"{source}: testbed.{key} is for kind 'ssh' (hosts of an inventory); kind 'local-vm' "
                         f"runs QEMU guests on this machine. Fix: remove testbed.{key}, or set kind: ssh.")
        return p
    if "count" in tb:
        p.append(f"{source}: testbed.count is for kind 'local-vm'; an ssh pool is the hosts it names. Fix: "
                 f"remove count and list the hosts (testbed.hosts: [node0, node1]) or name an inventory "
                 f"group (testbed.group: ssh_hosts).")
    if "inventory" not in tb:
        p.append(f"{source}: testbed: kind 'ssh' needs 'inventory'. Fix: add testbed.inventory "
                 f"(see ansible/inventories/ssh-hosts/).")
    elif not inventory_path(tb["inventory"]).exists():
        p.append(f"{source}: testbed.inventory {tb['inventory']!r} does not exist. "
                 f"Fix: point it at an inventory file.")
    given = [k for k in ("host", "hosts", "group") if k in tb]
    if not given:
        p.append(f"{source}: testbed: kind 'ssh' needs 'host' (one host), 'hosts' (a list) or 'group' "
                 f"(an inventory group). Fix: add testbed.host: node0, testbed.hosts: [node0, node1] or "
                 f"testbed.group: ssh_hosts.")
    elif len(given) > 1:
        p.append(f"{source}: testbed has {' and '.join(given)}: name the hosts one way. Fix: keep one of "
                 f"host, hosts, group.")
    return p


def inventory_path(inv: str) -> Path:
    """A config's inventory path: relative to the repository (as the shipped examples are), else as given."""
    p = Path(inv).expanduser()
    return p if p.is_absolute() or not (REPO / p).exists() else REPO / p


def inventory_groups(inv: Path) -> dict:
    """`ansible-inventory --list` of an inventory: {group: {"hosts": [...], "children": [...]}, ...}."""
    exe = Path(sys.executable).parent / "ansible-inventory"
    out = subprocess.run([str(exe) if exe.exists() else "ansible-inventory", "-i", str(inv), "--list"],
                         capture_output=True, text=True, cwd=REPO / "ansible", stdin=subprocess.DEVNULL)
    if out.returncode != 0:
        raise PoolError(f"testbed.inventory {inv}: ansible-inventory cannot read it: "
                        f"{out.stderr.strip()[-500:]}. Fix: correct the inventory file.")
    return json.loads(out.stdout)


def group_hosts(groups: dict, group: str) -> list[str]:
    """Every host of a group and of its child groups, each once, in the order ansible-inventory lists them."""
    seen, out = set(), []

    def walk(g):
        if g in seen:
            return
        seen.add(g)
        for h in groups.get(g, {}).get("hosts", []):
            if h not in out:
                out.append(h)
        for c in groups.get(g, {}).get("children", []):
            walk(c)
    walk(group)
    return out


def expand_pool(tb: dict, source: str = "config", warn=None) -> dict:
    """The testbed section -> {"members": [member, ...], "size": N, "retries": R}; each member is a dict
    orchestrate.testbeds takes (kind, vm_name and clock or inventory + host, keep_running, p4) with its id
    (the VM name, or host@<inventory path hash>). tb: a validated testbed section, its defaults filled in."""
    common = {"keep_running": tb["keep_running"], "reuse_topology": tb.get("reuse_topology", False)}
    if tb.get("p4"):
        common["p4"] = True
    if tb["kind"] == "local-vm":
        rule = default_vm_count()
        count = tb.get("count", rule)
        if count > rule and warn:
            warn(f"{source}: testbed.count {count} is above this machine's {rule} (one guest per "
                 f"{CORES_PER_GUEST} of its {os.cpu_count()} cores): the guests will share CPU, which "
                 f"slows every run, and the fidelity checks (CPU, start lateness) may reject runs.")
        clock = tb.get("clock", "real")
        base = tb["vm_name"] + (VIRTUAL_SUFFIX if clock == "virtual" else "")
        members = [dict(common, id=n, kind="local-vm", vm_name=n, clock=clock) for n in vm_names(base, count)]
    else:
        inv = inventory_path(tb["inventory"])
        groups = inventory_groups(inv)
        known = group_hosts(groups, "all")
        if "group" in tb:
            if tb["group"] not in groups:
                raise PoolError(f"{source}: testbed.group {tb['group']!r} is not a group of {tb['inventory']} "
                                f"(it has {', '.join(sorted(g for g in groups if g != '_meta'))}). Fix: "
                                f"name one of those.")
            hosts = group_hosts(groups, tb["group"])
            if not hosts:
                raise PoolError(f"{source}: testbed.group {tb['group']!r} of {tb['inventory']} has no hosts. "
                                f"Fix: add hosts to it, or name another group.")
        else:
            hosts = tb["hosts"] if "hosts" in tb else [tb["host"]]
            missing = [h for h in hosts if h not in known]
            if missing:
                raise PoolError(f"{source}: testbed: {', '.join(missing)} not in {tb['inventory']} (its hosts: "
                                f"{', '.join(known) or 'none'}). Fix: name hosts of that inventory.")
        members = [dict(common, id=ssh_member_id(h, inv), kind="ssh", inventory=str(inv), host=h)
                   for h in hosts]
    return {"members": members, "size": len(members), "retries": tb["retries"]}
