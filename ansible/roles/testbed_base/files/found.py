"""What provisioning finds on a testbed host before it changes anything, as one JSON object on stdout:
the record of what earlier provisionings installed or changed (/var/lib/favorlab/installed.json, the
file ansible/clean.yml undoes), the current values of the sysctls testbed_base is about to raise,
nginx's default site (a link or a file) and its system service (enabled, active), and which of the packages
named after --missing are not installed. Read by testbed_base (the record's first values are kept: they
are the host as it was before favorlab) and by clean.yml. One script for all of it: each Ansible module run
costs 5-10 s of Python start-up in a TCG guest.

    python3 found.py RECORD_FILE [SYSCTL_KEY ...] [--missing PACKAGE ...]

A record that is empty or not JSON (cut short by a crash) is reported in "record_problem" and read as
empty: provisioning then records afresh, and clean removes no package it cannot name."""
import json
import os
import subprocess
import sys

args, packages = sys.argv[1:], None
if "--missing" in args:
    cut = args.index("--missing")
    args, packages = args[:cut], args[cut + 1:]
record_file, keys = args[0], args[1:]
out = {"record": {}, "record_problem": "", "sysctls": {}, "nginx_default_site": None}
raw = b""
try:
    with open(record_file, "rb") as f:
        raw = f.read()
    out["record"] = json.loads(raw.decode())
    if not isinstance(out["record"], dict):
        raise ValueError("not a JSON object")
except FileNotFoundError:
    pass
except ValueError as e:
    out["record"] = {}
    out["record_problem"] = f"{record_file} is {'empty' if not raw.strip() else f'not valid JSON ({e})'}"
for k in keys:
    try:
        with open("/proc/sys/" + k.replace(".", "/")) as f:
            out["sysctls"][k] = " ".join(f.read().split())
    except OSError:
        pass
site = "/etc/nginx/sites-enabled/default"   # testbed_base removes it: clean puts back what was there
if os.path.islink(site):
    out["nginx_default_site"] = {"link": os.readlink(site)}
elif os.path.isfile(site):
    with open(site, errors="replace") as f:
        out["nginx_default_site"] = {"content": f.read()}


def run(*cmd):
    """cmd's stdout, stripped; "" when it cannot run (no systemctl or dpkg-query on this host)."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


# systemctl says "enabled", "masked", "active", "inactive"...; nothing for a unit it does not know
out["nginx_service"] = {"enabled": run("systemctl", "is-enabled", "nginx"), "active": run("systemctl", "is-active", "nginx")}
if packages is not None:
    # dpkg-query instead of apt: opening apt's cache costs about 11 s in the TCG guest, where every package is
    # preinstalled; a name dpkg does not know (a virtual package too) is missing, and apt resolves it
    installed = set()
    if packages:
        for line in run("dpkg-query", "-W", "-f=${Package}\t${Status}\n", *packages).splitlines():
            name, _, status = line.partition("\t")
            if status == "install ok installed":
                installed.add(name)
    out["missing"] = [p for p in packages if p not in installed]
print(json.dumps(out))
