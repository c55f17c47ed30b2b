"""Bring a config's testbeds up (booted and provisioned by Ansible) or down, and say how to reach them.

    python -m orchestrate.testbeds up   --testbed '{"kind": "local-vm", "vm_name": "favorlab"}'
    python -m orchestrate.testbeds down --testbed '...'
    python -m orchestrate.testbeds target --testbed '...'   # JSON: host, port, user, key, ssh_args,
                                                                    # known_hosts, host_key_checking
    python -m orchestrate.testbeds up-all --pool '<experiment pool JSON>' [--limit N]
                [--excluded-dir results/<config>/testbeds/excluded] [--log-dir DIR]
    python -m orchestrate.testbeds down-all --pool '...'
    python -m orchestrate.testbeds clean CONFIG.yaml | VM_NAME | HOST --inventory INV [--check] [--dry-run]

`--testbed` is one member of a pool (orchestrate.pool.expand_pool), or a config's testbed section naming one
testbed; `--pool` is the pool (a list of members, or orchestrate.pool.expand_pool's {"members": [...]}).

`up` is idempotent and cheap when nothing changed: the host records the hash of the code it was
provisioned with in /run/favorlab/provisioned (tmpfs: a rebooted host is provisioned again), and
Ansible runs only when that differs. The same roles provision the local VM and real SSH hosts.
`up-all` brings every member up at once, one thread per member, each under the member's lease
(orchestrate/pool.py): the pipeline calls it once before its runs (onstart, workflow/rules/testbed.smk).
A member another pipeline holds is left to it; one that cannot be brought up and does not answer is
left out of this pipeline (--excluded-dir). `down-all` stops the pool's local guests (unless
keep_running) that no other pipeline holds.

`clean` (./favorlab testbed clean) undoes the provisioning of a host with ansible/clean.yml, under the
testbed's lease: what provisioning installed and changed, as the host's record says
(/var/lib/favorlab/installed.json), and the marker, so the next run provisions it again. --check runs
the play in Ansible's check mode (the removals it would make are reported as changed); --dry-run only
prints the command.

Host keys: a local guest's known_hosts file is written by favorvm at each start from the image's host
key (StrictHostKeyChecking=yes); an ssh member's is ${FAVORLAB_CACHE:-~/.cache/favorlab}/known_hosts/
<member-id>, filled on first contact (accept-new) and checked from then on. orchestrate.remote.Ssh puts these
first, ahead of the inventory's own ssh args, for every ssh this controller makes: the marker check
here, Ansible (its ansible_ssh_common_args) and orchestrate.remote (the runs).
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

from orchestrate import atomic, pool
from orchestrate.config import ConfigError, p4_tarball, read_config
from orchestrate.remote import Ssh

REPO = Path(__file__).resolve().parents[1]
FAVORVM = REPO / "testbed" / "vm" / "favorvm"
VENV_BIN = Path(sys.executable).parent
MARKER = "/run/favorlab/provisioned"


def ansible_recap(out: str) -> dict:
    """The counts of ansible-playbook's last PLAY RECAP line ("host : ok=3 changed=0 ... failed=0"):
    how idempotence is read back (a second provisioning must report changed=0)."""
    lines = [l for l in out.splitlines() if "ok=" in l and "changed=" in l]
    if not lines:
        raise ValueError("no PLAY RECAP line in the Ansible output")
    return {k: int(v) for k, v in (kv.split("=") for kv in lines[-1].split(":", 1)[1].split())}


def log(msg: str, out=None) -> None:
    print(f"testbed: {msg}", flush=True, file=out or sys.stdout)


def members_of(value) -> list[dict]:
    """A pool (list of members, or orchestrate.pool.expand_pool's {"members": [...]}) or one testbed dict -> members with ids."""
    if isinstance(value, dict) and "members" in value:
        value = value["members"]
    if isinstance(value, dict):
        value = [value]
    return [dict(m, id=pool.member_id(m)) for m in value]


def code_hash() -> str:
    """Hash of the repository's tracked content as it is now (HEAD plus uncommitted changes)."""
    head = subprocess.run(["git", "rev-parse", "HEAD^{tree}"], cwd=REPO, capture_output=True, text=True)
    diff = subprocess.run(["git", "diff", "HEAD"], cwd=REPO, capture_output=True)
    h = hashlib.sha256(head.stdout.encode() + diff.stdout)
    return h.hexdigest()[:16]


def vm_state(name: str) -> dict:
    out = subprocess.run([str(FAVORVM), "status", "--name", name], capture_output=True, text=True)
    try:
        return json.loads(out.stdout) if out.returncode == 0 else {}
    except json.JSONDecodeError:
        return {}


def inventory(tb: dict, state: dict | None = None) -> tuple[str, str]:
    """(inventory path, host name) for Ansible."""
    if tb["kind"] == "local-vm":
        state = state if state is not None else vm_state(tb["vm_name"])
        inv = state.get("inventory")
        if not inv:
            sys.exit(f"testbed: VM {tb['vm_name']} is not running or has no inventory; "
                     f"start it with testbed/vm/favorvm start --name {tb['vm_name']}")
        return inv, state.get("inventory_host", "favorlab-vm")
    inv = tb["inventory"]
    return (inv if Path(inv).is_absolute() else str(REPO / inv)), tb["host"]


def host_vars(inv: str, host: str, whole_file: bool = False) -> dict:
    """The host's variables as Ansible resolves them (ansible-inventory --host: about 1 s of Python, once
    or twice in every run job). whole_file: the inventory is one file that holds everything about the host
    (favorvm writes a local guest's so, anew at each boot), so the answer is kept in the cache under a hash
    of the file's text and the host, and read from there while the file is unchanged."""
    cached = None
    if whole_file:
        key = hashlib.sha256(Path(inv).read_bytes() + b"\0" + host.encode()).hexdigest()[:24]
        cached = pool.cache_root() / "inventory-hosts" / f"{key}.json"
        if cached.is_file():
            try:
                return json.loads(cached.read_text())
            except ValueError:
                pass
    out = subprocess.run([str(VENV_BIN / "ansible-inventory"), "-i", inv, "--host", host],
                         capture_output=True, text=True, cwd=REPO / "ansible", stdin=subprocess.DEVNULL)
    if out.returncode != 0:
        sys.exit(f"testbed: cannot read host {host} from inventory {inv}: {out.stderr.strip()}")
    hv = json.loads(out.stdout)
    if cached is not None:
        atomic.write_json(cached, hv)
    return hv


def target(tb: dict, state: dict | None = None) -> dict:
    """SSH coordinates of the experiment host, from the Ansible inventory (one source of truth), and the
    known_hosts file that holds its host key (see the module's docstring). state: a local guest's
    vm_state() when the caller has just read it."""
    if tb["kind"] == "local-vm" and state is None:
        state = vm_state(tb["vm_name"])
    inv, host = inventory(tb, state)
    hv = host_vars(inv, host, whole_file=state is not None)
    if state is not None:                 # favorvm wrote it from the image's host key at this boot
        known_hosts, checking = state.get("known_hosts"), "yes"
    else:
        kh = pool.known_hosts_file(pool.member_id(tb))
        kh.parent.mkdir(parents=True, exist_ok=True)
        known_hosts, checking = str(kh), "accept-new"
    return {"host": hv.get("ansible_host", host), "port": int(hv.get("ansible_port", 22)),
            "user": hv.get("ansible_user", "root"),
            "key": hv.get("ansible_ssh_private_key_file"),
            "ssh_args": hv.get("ansible_ssh_common_args", ""),
            "known_hosts": known_hosts, "host_key_checking": checking}


def connect(t: dict) -> Ssh:
    """The ssh client for target(): orchestrate.remote's, which the runs use too (sudo for a non-root
    login, the member's known_hosts ahead of the inventory's ssh args)."""
    return Ssh(**t)


def dead_reason(tb: dict) -> str | None:
    """Why the testbed is dead or not answering, or None when it answers SSH (then a failure was the
    run's or the provisioning's own, not the testbed's)."""
    if tb["kind"] == "local-vm":
        st = vm_state(tb["vm_name"])
        if not st.get("running"):
            return (f"VM {tb['vm_name']} is not running (its QEMU process"
                    + (f", pid {st['pid']}," if st.get("pid") else "") + " is gone)")
    try:
        t = target(tb)
    except SystemExit as e:
        return f"its SSH coordinates cannot be read ({e})"
    try:
        r = connect(t).capture("true", timeout=90)
    except subprocess.TimeoutExpired:
        return f"does not answer SSH at {t['host']}:{t['port']} (no answer within 90 s)"
    if r.returncode == 255:
        last = (r.stderr.strip().splitlines() or ["ssh exit 255"])[-1]
        return f"does not answer SSH at {t['host']}:{t['port']} ({last})"
    return None


class TestbedError(SystemExit):
    """Bad input for a testbed command: the message names the problem and the fix (a SystemExit, as the
    other refusals here: the command line prints it as one line, run_step records it as a failed up)."""


# An Ansible host pattern is a language (",", ":", "!", "&", "*", "~regex"): a host name that is not a
# plain name could select other hosts of the inventory than the one meant
HOST_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")


def site_vars(tb: dict, ssh_common_args: list[str]) -> dict:
    """The extra vars of site.yml for this testbed."""
    ev = {}
    if tb.get("p4"):   # a config with a P4 AQM: the toolchain and the programs too (role p4_toolchain)
        ev["favorlab_p4"] = True
        tarball = p4_tarball()
        if tarball:
            ev["p4_toolchain_tarball"] = str(Path(tarball).resolve())
    # the member's host-key options ahead of the inventory's own (Ssh.common_args): as an extra var it
    # replaces the inventory's ansible_ssh_common_args for this one host (--limit)
    ev["ansible_ssh_common_args"] = shlex.join(ssh_common_args)
    return ev


def playbook_command(playbook: str, inv: str, host: str, extra_vars: dict, *more: str) -> list[str]:
    """ansible-playbook for one host of an inventory (run from ansible/). The extra vars go as one JSON
    object: Ansible splits a `-e key=value` string at spaces and reads further `key=value` words in it as
    more variables, so a path with a space would be cut and could set favorlab_root; JSON keeps each
    value whole."""
    if not HOST_NAME.fullmatch(host) or host in ("all", "ungrouped"):
        raise TestbedError(f"host name {host!r}: use a plain inventory host name (letters, digits, '.', "
                           f"'_', '-'), not an Ansible pattern")
    return [str(VENV_BIN / "ansible-playbook"), "-i", inv, "--limit", host, *more,
            "-e", json.dumps(extra_vars), playbook]


def ansible_env() -> dict[str, str]:
    """The environment ansible-playbook runs in: Mitogen's strategy (mitogen_linear, requirements.txt) unless the
    caller chose one (`ANSIBLE_STRATEGY=linear` gives Ansible's own). Each task of the linear strategy starts a
    Python in the host and unpacks its module there, 3-7 s apiece in the TCG guest; Mitogen keeps one interpreter
    per host for the whole play: the guest's provisioning 185 -> 89 s, `clean --check` 202 -> 24 s, the same tasks
    and results (docs/measurements.md, "Ansible's strategy"). Where Mitogen is not installed, Ansible's own."""
    env = dict(os.environ)
    found = importlib.util.find_spec("ansible_mitogen")
    if "ANSIBLE_STRATEGY" in env or found is None or not found.submodule_search_locations:
        return env
    plugins = Path(next(iter(found.submodule_search_locations))) / "plugins" / "strategy"
    env["ANSIBLE_STRATEGY"] = "mitogen_linear"
    env["ANSIBLE_STRATEGY_PLUGINS"] = os.pathsep.join(p for p in (str(plugins), env.get("ANSIBLE_STRATEGY_PLUGINS")) if p)
    return env


def up(tb: dict, out=None) -> dict:
    """Boot (a local guest) and provision the testbed with this checkout's code unless it already is;
    returns its target(). out: a file for the output of favorvm and Ansible (up-all: one per member), else
    ours."""
    st = None
    if tb["kind"] == "local-vm":
        st, clock = vm_state(tb["vm_name"]), tb.get("clock", "real")
        if st.get("running") and st.get("clock", "real") != clock:
            raise TestbedError(f"testbed: VM {tb['vm_name']} runs with the {st.get('clock', 'real')} clock and "
                               f"this config asks for the {clock} one. Fix: stop it (testbed/vm/favorvm stop "
                               f"--name {tb['vm_name']}) or give the config another testbed.vm_name")
        if not st.get("running"):
            log(f"starting the local VM {tb['vm_name']} ({clock} clock; first boot builds the guest image)", out)
            subprocess.run([str(FAVORVM), "start", "--name", tb["vm_name"], "--clock", clock], check=True,
                           stdin=subprocess.DEVNULL, stdout=out, stderr=out)
            st = None       # read again: the boot wrote it
    t = target(tb, state=st)
    ssh = connect(t)
    want = code_hash() + ("+p4" if tb.get("p4") else "")
    have = ssh.capture(f"cat {MARKER} 2>/dev/null", timeout=120).stdout.strip()
    if have == want:
        log(f"{t['host']}:{t['port']} already provisioned with this code ({want})", out)
        return t
    inv, host = inventory(tb)
    log(f"provisioning {host} with Ansible (ansible/site.yml)", out)
    subprocess.run(playbook_command("site.yml", inv, host, site_vars(tb, ssh.common_args)),
                   check=True, cwd=REPO / "ansible", env=ansible_env(), stdin=subprocess.DEVNULL, stdout=out,
                   stderr=out)
    r = ssh.capture(f"mkdir -p $(dirname {MARKER}) && echo {want} > {MARKER}", timeout=120)
    if r.returncode != 0:
        sys.exit(f"testbed: could not record provisioning on {host}: {r.stderr.strip()}")
    return t


def clean_members(target: str, inventory_path: str | None = None) -> list[dict]:
    """The testbeds `clean TARGET` means: TARGET a host of --inventory; a config file (every member of its
    pool); or a local guest's name."""
    if inventory_path:
        if not Path(inventory_path).is_file():
            raise TestbedError(f"testbed: inventory {inventory_path} not found; give the Ansible inventory that "
                               f"names {target} (e.g. ansible/inventories/cloudlab/hosts.yml)")
        return members_of({"kind": "ssh", "inventory": str(Path(inventory_path).resolve()), "host": target})
    if target.endswith((".yaml", ".yml")):
        try:
            cfg = read_config(target, warn=lambda m: None)
        except ConfigError as e:
            raise TestbedError(f"testbed: {e}") from None
        return members_of(cfg["pool"])
    if (pool.cache_root() / "vm" / "run" / target).is_dir():
        return members_of({"kind": "local-vm", "vm_name": target})
    raise TestbedError(f"testbed: {target!r} is not a config file (.yaml), nor a local guest favorvm knows "
                       f"(testbed/vm/favorvm list). Fix: give a config, a guest's name, or an inventory host "
                       f"with its inventory: clean HOST --inventory INVENTORY")


def clean_command(tb: dict, check: bool = False) -> list[str]:
    """ansible-playbook clean.yml for the testbed: the same host, inventory and ssh options as up()'s
    provisioning. check: Ansible's --check (nothing changes; the tasks that would, say changed)."""
    t = target(tb)
    inv, host = inventory(tb)
    return playbook_command("clean.yml", inv, host, {"ansible_ssh_common_args": shlex.join(connect(t).common_args)},
                            *(["--check"] if check else []))


def clean(tb: dict, check: bool = False, dry_run: bool = False) -> int:
    """Undo the provisioning of one testbed (ansible/clean.yml) under its lease: never while a run uses it.
    The play also removes the provisioning marker, so the next run provisions the host again."""
    if tb["kind"] == "local-vm" and not vm_state(tb["vm_name"]).get("running"):
        log(f"{tb['id']}: nothing to clean: a local guest keeps nothing once stopped (its disk overlay is dropped)")
        return 0
    cmd = clean_command(tb, check)
    if dry_run:
        strategy = {k: v for k, v in ansible_env().items()
                    if k.startswith("ANSIBLE_STRATEGY") and os.environ.get(k) != v}
        print(f"(cd {shlex.quote(str(REPO / 'ansible'))} && "
              f"{''.join(f'{k}={shlex.quote(v)} ' for k, v in strategy.items())}{shlex.join(cmd)})")
        return 0
    got = pool.try_lease(tb, what="orchestrate.testbeds clean")
    if got is None:
        raise TestbedError(f"testbed: {tb['id']} is in use ({pool.holder(tb['id'])}); clean it when that is done")
    with got:
        log(f"{'checking what cleaning would remove from' if check else 'cleaning'} {tb['id']} "
            f"(ansible/clean.yml)")
        return subprocess.run(cmd, cwd=REPO / "ansible", env=ansible_env(), stdin=subprocess.DEVNULL).returncode


def down(tb: dict) -> None:
    if tb["kind"] == "local-vm" and not tb.get("keep_running") and vm_state(tb["vm_name"]).get("running"):
        log(f"stopping the local VM {tb['vm_name']}")
        subprocess.run([str(FAVORVM), "stop", "--name", tb["vm_name"]], check=False)


def up_all(members: list[dict], limit: int | None = None, excluded_dir: Path | None = None,
           log_dir: Path | None = None, up_one=None) -> int:
    """Bring up to `limit` members up and provisioned at once, each in a thread of its own under the
    member's lease. 0 when every member taken came up; 1 when one failed (a dead one is excluded)."""
    up_one = up_one or up
    out = pool.excluded(excluded_dir)
    leases = []
    for m in members:
        if limit is not None and len(leases) >= limit:
            break
        if m["id"] in out:
            continue
        got = pool.try_lease(m, what="orchestrate.testbeds up-all")
        if got is None:
            log(f"{m['id']} is leased ({pool.holder(m['id'])}): its holder keeps it up")
            continue
        leases.append(got)
    if not leases:
        return 0
    if log_dir:
        Path(log_dir).mkdir(parents=True, exist_ok=True)
    log(f"bringing up {', '.join(l.id for l in leases)} at once"
        + (f" (output: {log_dir}/up-<member>.log)" if log_dir else ""))
    results: dict[str, str] = {}

    def work(lease):
        f = open(Path(log_dir) / f"up-{lease.id}.log", "w") if log_dir else None
        t0 = time.monotonic()
        try:
            up_one(lease.member, out=f)
            results[lease.id] = f"up in {time.monotonic() - t0:.0f} s"
        except BaseException as e:   # sys.exit and CalledProcessError from up() too: the thread reports
            why = dead_reason(lease.member)
            what = f"{type(e).__name__}: {e}"
            if why and excluded_dir:
                pool.exclude(Path(excluded_dir), lease.id, f"could not be brought up ({what}): {why}")
                log(f"testbed {lease.id} left out for the rest of this pipeline: could not be brought up: {why}")
            results[lease.id] = f"FAILED after {time.monotonic() - t0:.0f} s ({what})"
        finally:
            lease.release()
            if f:
                f.close()
    threads = [threading.Thread(target=work, args=(l,), name=f"up-{l.id}") for l in leases]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    log("up-all: " + "; ".join(f"{k} {v}" for k, v in results.items()))
    return 0 if all(v.startswith("up ") for v in results.values()) else 1


def down_all(members: list[dict]) -> None:
    """Stop the pool's local guests, except those another pipeline holds (it is still running there)."""
    for m in members:
        if m["kind"] != "local-vm" or m.get("keep_running"):
            continue
        got = pool.try_lease(m, what="orchestrate.testbeds down-all")
        if got is None:
            log(f"{m['id']} is leased ({pool.holder(m['id'])}): left running")
            continue
        with got:
            down(m)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m orchestrate.testbeds", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["up", "down", "target", "up-all", "down-all", "clean"])
    ap.add_argument("what", nargs="?", help="clean: a config file, a local guest's name, or a host of --inventory")
    ap.add_argument("-i", "--inventory", help="clean: the Ansible inventory that names the host")
    ap.add_argument("--check", action="store_true", help="clean: Ansible's --check: say what would go, change nothing")
    ap.add_argument("--dry-run", action="store_true", help="clean: print the ansible-playbook command, run nothing")
    ap.add_argument("--testbed", help="one testbed (a pool member or a one-testbed section), as JSON")
    ap.add_argument("--pool", help="up-all, down-all: the pool, as JSON")
    ap.add_argument("--limit", type=int, help="up-all: bring at most this many members up")
    ap.add_argument("--excluded-dir", type=Path, help="up-all: results/<config>/testbeds/excluded")
    ap.add_argument("--log-dir", type=Path, help="up-all: one log per member here (else on stdout)")
    a = ap.parse_args(argv)
    if a.action == "clean":
        if not a.what:
            ap.error("clean needs what to clean: a config file, a local guest's name, or HOST --inventory INVENTORY")
        rc = 0
        for m in clean_members(a.what, a.inventory):
            rc = clean(m, check=a.check, dry_run=a.dry_run) or rc
        return rc
    if a.what or a.inventory or a.check or a.dry_run:
        ap.error(f"{a.action} takes --testbed or --pool; a target, --inventory, --check and --dry-run are clean's")
    if a.action in ("up-all", "down-all"):
        if not a.pool:
            ap.error(f"{a.action} needs --pool")
        members = members_of(json.loads(a.pool))
        if a.action == "down-all":
            down_all(members)
            return 0
        return up_all(members, a.limit, a.excluded_dir, a.log_dir)
    if not a.testbed:
        ap.error(f"{a.action} needs --testbed")
    tb = members_of(json.loads(a.testbed))[0]
    if a.action == "up":
        up(tb)
    elif a.action == "down":
        down(tb)
    else:
        print(json.dumps(target(tb)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
