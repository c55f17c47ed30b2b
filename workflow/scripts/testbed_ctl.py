"""Bring a config's testbed up (booted and provisioned by Ansible) or down, and say how to reach it.

    python workflow/scripts/testbed_ctl.py up   --testbed '{"kind": "local-vm", "vm_name": "favorlab"}'
    python workflow/scripts/testbed_ctl.py down --testbed '...'
    python workflow/scripts/testbed_ctl.py target --testbed '...'   # JSON: host, port, user, key

`up` is idempotent and cheap when nothing changed: the host records the hash of the code it was
provisioned with in /run/favorlab/provisioned (tmpfs: a rebooted host is provisioned again), and
Ansible runs only when that differs. The same roles provision the local VM and real SSH hosts.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FAVORVM = REPO / "testbed" / "vm" / "favorvm"
VENV_BIN = Path(sys.executable).parent
MARKER = "/run/favorlab/provisioned"


def log(msg: str) -> None:
    print(f"testbed: {msg}", flush=True)


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


def inventory(tb: dict) -> tuple[str, str]:
    """(inventory path, host name) for Ansible."""
    if tb["kind"] == "local-vm":
        state = vm_state(tb["vm_name"])
        inv = state.get("inventory")
        if not inv:
            sys.exit(f"testbed: VM {tb['vm_name']} is not running or has no inventory; "
                     f"start it with testbed/vm/favorvm start --name {tb['vm_name']}")
        return inv, state.get("inventory_host", "favorlab-vm")
    inv = tb["inventory"]
    return (inv if Path(inv).is_absolute() else str(REPO / inv)), tb["host"]


def target(tb: dict) -> dict:
    """SSH coordinates of the experiment host, from the Ansible inventory (one source of truth)."""
    inv, host = inventory(tb)
    out = subprocess.run([str(VENV_BIN / "ansible-inventory"), "-i", inv, "--host", host],
                         capture_output=True, text=True, cwd=REPO / "ansible", stdin=subprocess.DEVNULL)
    if out.returncode != 0:
        sys.exit(f"testbed: cannot read host {host} from inventory {inv}: {out.stderr.strip()}")
    hv = json.loads(out.stdout)
    return {"host": hv.get("ansible_host", host), "port": int(hv.get("ansible_port", 22)),
            "user": hv.get("ansible_user", "root"),
            "key": hv.get("ansible_ssh_private_key_file"),
            "ssh_args": hv.get("ansible_ssh_common_args", "")}


def ssh(t: dict, command: str) -> subprocess.CompletedProcess:
    # shlex: a FABRIC ProxyCommand is one quoted option with spaces; sudo: the marker lives in /run,
    # and CloudLab and FABRIC log in as a user with passwordless sudo, not as root
    args = ["ssh", "-p", str(t["port"]), "-o", "BatchMode=yes"]
    if t.get("key"):
        args += ["-i", t["key"]]
    args += shlex.split(t.get("ssh_args") or "")
    if t["user"] != "root":
        command = f"sudo -n sh -c {shlex.quote(command)}"
    # its own stdin: ssh leaves a shared one non-blocking when it dies mid-session (see favorvm's probe)
    return subprocess.run(args + [f"{t['user']}@{t['host']}", command], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)


def up(tb: dict) -> None:
    if tb["kind"] == "local-vm" and not vm_state(tb["vm_name"]).get("running"):
        log(f"starting the local VM {tb['vm_name']} (first boot builds the guest image)")
        subprocess.run([str(FAVORVM), "start", "--name", tb["vm_name"]], check=True, stdin=subprocess.DEVNULL)
    t = target(tb)
    want = code_hash() + ("+p4" if tb.get("p4") else "")
    have = ssh(t, f"cat {MARKER} 2>/dev/null").stdout.strip()
    if have == want:
        log(f"{t['host']}:{t['port']} already provisioned with this code ({want})")
        return
    inv, host = inventory(tb)
    log(f"provisioning {host} with Ansible (ansible/site.yml)")
    extra = []
    if tb.get("p4"):   # a config with a P4 AQM: the toolchain and the programs too (role p4_toolchain)
        import favorconf
        extra = ["-e", "favorlab_p4=true"]
        tarball = favorconf.p4_tarball()
        if tarball:
            extra += ["-e", f"p4_toolchain_tarball={tarball}"]
    subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", inv, "--limit", host, *extra, "site.yml"],
                   check=True, cwd=REPO / "ansible", stdin=subprocess.DEVNULL)
    r = ssh(t, f"mkdir -p $(dirname {MARKER}) && echo {want} > {MARKER}")
    if r.returncode != 0:
        sys.exit(f"testbed: could not record provisioning on {host}: {r.stderr.strip()}")


def down(tb: dict) -> None:
    if tb["kind"] == "local-vm" and not tb.get("keep_running") and vm_state(tb["vm_name"]).get("running"):
        log(f"stopping the local VM {tb['vm_name']}")
        subprocess.run([str(FAVORVM), "stop", "--name", tb["vm_name"]], check=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["up", "down", "target"])
    ap.add_argument("--testbed", required=True, help="the config's testbed section, as JSON")
    a = ap.parse_args()
    tb = json.loads(a.testbed)
    if a.action == "up":
        up(tb)
    elif a.action == "down":
        down(tb)
    else:
        print(json.dumps(target(tb)))


if __name__ == "__main__":
    main()
