"""What provisioning finds on a testbed host before it changes anything, as one JSON object on stdout:
the record of what earlier provisionings installed or changed (/var/lib/favorlab/installed.json, the
file ansible/clean.yml undoes), the current values of the sysctls testbed_base is about to raise, and
and nginx's default site (a link or a file). Read by testbed_base (the record's first values are kept: they
are the host as it was before favorlab) and by clean.yml.

    python3 found.py RECORD_FILE [SYSCTL_KEY ...]

A record that is empty or not JSON (cut short by a crash) is reported in "record_problem" and read as
empty: provisioning then records afresh, and clean removes no package it cannot name."""
import json
import os
import sys

record_file, keys = sys.argv[1], sys.argv[2:]
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
print(json.dumps(out))
