"""`./favorlab testbed clean --check` on the provisioned shared guest: the plan lists every removal, and the
guest is still provisioned afterwards. Check mode, not a real clean: the shared guest is provisioned once
per session and the suites after this one use it (a real clean would pull its modules and /opt/favorlab,
and a second provisioning under TCG costs minutes). What provisioning recorded there is checked too."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from orchestrate import testbeds

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.guest


def changed_tasks(out: str) -> dict[str, list[str]]:
    """Ansible's default output -> {task name: [items]} of the tasks that reported changed (or would have)."""
    tasks, task = {}, None
    for line in out.splitlines():
        m = re.match(r"TASK \[(.*)\] \*+", line)
        if m:
            task = m.group(1)
            continue
        m = re.match(r"changed: \[[^]]+\](?: => \(item=(.*)\))?", line)
        if m and task:
            tasks.setdefault(task, [])
            if m.group(1):
                tasks[task].append(m.group(1))
    return tasks


STATE = ("cat /run/favorlab/provisioned; ls /opt/favorlab | wc -l; dkms status -m sch_favor; "
         "grep -c '^sch_favor ' /proc/modules; cat /etc/sysctl.d/60-favorlab.conf; ls /usr/local/lib/favorlab/tc")


def test_clean_check_lists_the_removals_and_changes_nothing(shared_guest):
    tb = testbeds.members_of({"kind": "local-vm", "vm_name": shared_guest["vm_name"]})[0]
    ssh = testbeds.connect(testbeds.target(tb))
    before = ssh.capture(STATE, timeout=120)
    assert before.returncode == 0 and "installed" in before.stdout, before.stderr

    # provisioning recorded the host as it was: the image holds every package (none installed, none to
    # purge), and the sysctls the drop-in raises with their values before
    rec = json.loads(ssh.capture("cat /var/lib/favorlab/installed.json", timeout=120).stdout)
    defaults = yaml.safe_load((REPO / "ansible/roles/testbed_base/defaults/main.yml").read_text())
    assert rec["packages"] == []
    assert set(rec["sysctls_before"]) == set(defaults["testbed_sysctls"])

    p = subprocess.run([sys.executable, "-m", "orchestrate.testbeds", "clean", tb["vm_name"], "--check"],
                       cwd=REPO, capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    plan = changed_tasks(p.stdout)
    version = yaml.safe_load((REPO / "ansible/roles/favorlab_qdiscs/defaults/main.yml").read_text())["sch_favor_version"]
    assert f"favorlab_qdiscs : dkms remove sch_favor for every kernel, version {version}" in plan, plan
    assert "favor" in plan["favorlab_qdiscs : unload favorlab's qdisc modules"]
    assert {f"/usr/src/sch_favor-{version}", "/usr/local/lib/favorlab", "/usr/local/share/man/man8/tc-favor.8"} \
        <= set(plan["favorlab_qdiscs : the DKMS sources, the tc plugins and the man pages"])
    assert "favorlab_code : the repository copy /opt/favorlab" in plan
    assert "testbed_base : the sysctl drop-in" in plan
    assert {"/run/favorlab", "/var/lib/favorlab"} \
        <= set(plan["testbed_base : the provisioning marker and favorlab's state directory with its record"])
    assert "testbed_base : purge the packages provisioning installed" not in plan   # it installed none

    after = ssh.capture(STATE, timeout=120)
    assert after.stdout == before.stdout          # check mode: the guest is provisioned as it was
