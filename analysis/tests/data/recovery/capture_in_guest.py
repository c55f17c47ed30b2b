"""Host side: remake the recovery captures in the project's QEMU guest (Debian 12, kernel 6.1).

    python -m analysis.tests.data.recovery.capture_in_guest [CASE ...]     (from the repository root, as root)

Boots a guest named 'recov' (testbed/vm/favorvm; the cached image), copies make_captures.py into it, runs
it (all cases, or the named ones), copies the pcaps back, keeps each as text next to this file
(<case>.pcap.txt, pcaptext.py) and stops the guest, also on failure. The expected classes (expected.json) are written by hand from what each case drops, not by
the classifier; check them again if a case changes.
"""
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[3]
FAVORVM = REPO / "testbed" / "vm" / "favorvm"
NAME = "recov"


def main(cases):
    sys.path.insert(0, str(REPO))
    from orchestrate import remote
    from analysis.tests.data.recovery import pcaptext
    subprocess.run([str(FAVORVM), "start", "--name", NAME], check=True)
    try:
        ssh = remote.Ssh(**remote.vm_target(NAME))
        ssh.run("rm -rf /root/recov && mkdir -p /root/recov")
        ssh.rsync(str(HERE / "make_captures.py"), f"{ssh.dest}:/root/recov/")
        if ssh.run("cd /root/recov && python3 make_captures.py out " + " ".join(cases), stream=True):
            raise SystemExit("make_captures.py failed in the guest")
        out = Path(tempfile.mkdtemp())
        ssh.rsync(f"{ssh.dest}:/root/recov/out/", str(out) + "/")
        for f in sorted(out.iterdir()):
            if f.suffix == ".pcap":
                (HERE / (f.name + ".txt")).write_text(pcaptext.to_text(f.read_bytes()))
            else:
                shutil.copy(f, HERE / f.name)
        shutil.rmtree(out)
    finally:
        subprocess.run([str(FAVORVM), "stop", "--name", NAME])


if __name__ == "__main__":
    main(sys.argv[1:])
