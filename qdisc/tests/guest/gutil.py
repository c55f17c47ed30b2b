"""What the guest-side test scripts (crafted.py, parents.py, nlfuzz.py) share: running a command with
favorlab's tc plugins found. Standard library only: these scripts run in the guest with its python3 alone.
"""
import os
import subprocess
import sys

# the tc plugins the favorlab_qdiscs role installs (q_favor.so, q_las.so, ...): tc finds them through TC_LIB_DIR
TC_ENV = dict(os.environ, TC_LIB_DIR=os.environ.get("TC_LIB_DIR", "/usr/local/lib/favorlab/tc"))


def sh(*cmd):
    """Run cmd with the plugins found; its stdout. A failure ends the script, naming the command and what
    it printed (the test reads the guest script's exit status and stderr)."""
    r = subprocess.run(cmd, capture_output=True, text=True, env=TC_ENV)
    if r.returncode:
        sys.exit(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return r.stdout

