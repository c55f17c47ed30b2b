"""One smoke run reached the way CloudLab and FABRIC hosts are: a login that is not root and has
passwordless sudo, through a jump host (ProxyJump), with nothing but an Ansible inventory.

The local guest plays both hosts. Its sshd, reached from here at 127.0.0.1:<forwarded port>, is the jump
host, logged into as `bastion` (no sudo, like FABRIC's bastion); through it, the experiment host is
127.0.0.1:22 as the guest itself sees it, logged into as `experimenter` (passwordless sudo, like a
CloudLab or FABRIC login). From this machine, 127.0.0.1:22 is not the guest: a run can only reach it
through the jump. The inventory names the jump in its ansible_ssh_common_args (`-F <ssh config>
-o ProxyJump=<alias>`), and the pipeline is started on a config of `kind: ssh` naming that inventory:
provisioning (Ansible with become), the marker, the run (orchestrate.remote: sudo -n, rsync with sudo) and
the copy-back all go through it.

The guest is the suites' shared one (conftest.py): the test adds the two logins and removes the
provisioning marker (so the pipeline provisions again, through the jump), and removes the logins after.
That second provisioning of a guest already provisioned with this code is also the roles' idempotence
check: its Ansible recap must say changed=0 (the first one, the shared guest's, changed things).
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_pipeline import require_guest

from orchestrate import testbeds

REPO = Path(__file__).resolve().parents[1]
FAVORVM = REPO / "testbed" / "vm" / "favorvm"
NAME = "smoke-jump"
JUMP_ALIAS = "favorlab-test-bastion"
RUN_ID = "dumbbell-10M-buf8-lomax30-paper-reno_droptail_load0.75_iw2_rep0"


def vm(*args, check=True):
    return subprocess.run([str(FAVORVM), *args], capture_output=True, text=True, check=check,
                          stdin=subprocess.DEVNULL, timeout=1800)


def as_root(name: str, cmd: str) -> str:
    p = vm("ssh", "--name", name, cmd, check=False)
    assert p.returncode == 0, f"guest: {cmd}\n{p.stdout}\n{p.stderr}"
    return p.stdout


USERS = r"""set -e
for u in bastion experimenter; do
  id -u $u >/dev/null 2>&1 || useradd --create-home --shell /bin/sh $u
  install -d -m 700 -o $u -g $u /home/$u/.ssh
  install -m 600 -o $u -g $u /root/.ssh/authorized_keys /home/$u/.ssh/authorized_keys
done
echo 'experimenter ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/experimenter
chmod 440 /etc/sudoers.d/experimenter
rm -f /run/favorlab/provisioned
"""
NO_USERS = r"""set -e
rm -f /etc/sudoers.d/experimenter
for u in bastion experimenter; do
  if id -u $u >/dev/null 2>&1; then pkill -KILL -u $u || true; userdel --remove $u; fi
done
"""


@pytest.fixture
def jump(shared_guest, tmp_path):
    require_guest()
    name = shared_guest["vm_name"]
    try:
        st = json.loads(vm("status", "--name", name).stdout)
        as_root(name, USERS)
        # what a real site hands out: sudo for the experimenter, none for the bastion's user
        assert as_root(name, "sudo -l -U bastion || true").find("not allowed") >= 0
        cfg = tmp_path / "ssh_config"
        cfg.write_text(f"Host {JUMP_ALIAS}\n  HostName 127.0.0.1\n  Port {st['ssh_port']}\n  User bastion\n"
                       f"  IdentityFile {st['ssh_key']}\n  IdentitiesOnly yes\n  BatchMode yes\n"
                       f"  UserKnownHostsFile {st['known_hosts']}\n  StrictHostKeyChecking yes\n")
        inv = tmp_path / "hosts.yml"
        inv.write_text(yaml.safe_dump({"all": {"children": {"ssh_hosts": {"hosts": {"experiment": {
            "ansible_host": "127.0.0.1", "ansible_port": 22, "ansible_user": "experimenter",
            "ansible_become": True, "ansible_ssh_private_key_file": st["ssh_key"],
            "ansible_ssh_common_args": f"-F {cfg} -o ProxyJump={JUMP_ALIAS}"}}}}}}))
        yield inv, st
    finally:
        as_root(name, NO_USERS)


@pytest.mark.guest
@pytest.mark.slow
@pytest.mark.long
def test_smoke_run_as_a_sudo_user_through_a_jump_host(jump, shared_guest, tmp_path):
    inv, st = jump
    cfg = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    cfg.update(name=NAME, aqms=["droptail"], testbed={"kind": "ssh", "inventory": str(inv), "host": "experiment"})
    cfgfile = tmp_path / f"{NAME}.yaml"
    cfgfile.write_text(yaml.safe_dump(cfg))
    results = REPO / "results" / NAME
    shutil.rmtree(results, ignore_errors=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # the run only (its directory is the target): the analysis of one run is the smoke test's
    p = subprocess.run([sys.executable, "-m", "snakemake", "--configfile", str(cfgfile), "--cores", "2",
                        "--resources", "testbed=1", "--show-failed-logs", f"results/{NAME}/runs/{RUN_ID}"],
                       cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=3600)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]

    # provisioned again through the jump: every role idempotent, nothing changed on the guest
    up_logs = list((results / "logs" / "testbeds").glob("up-*.log"))
    assert len(up_logs) == 1, up_logs
    up_log = up_logs[0].read_text()
    assert "provisioning experiment with Ansible" in up_log, up_log[-3000:]
    recap = testbeds.ansible_recap(up_log)
    print(f"provisioning again through the jump: {recap}")
    assert recap["changed"] == 0 and recap["failed"] == 0, \
        "provisioning again changed something (a role is not idempotent):\n" + up_log[-4000:]
    first = shared_guest["provision_log"]
    if "changed=" in first:                 # the shared guest was provisioned in this session
        assert testbeds.ansible_recap(first)["changed"] > 0

    run = results / "runs" / RUN_ID
    assert (run / "DONE").is_file() and (run / "fidelity.json").is_file()
    ctl = json.loads((run / "controller.json").read_text())
    assert ctl["lease"]["kind"] == "ssh" and ctl["lease"]["host"] == "127.0.0.1" and ctl["lease"]["port"] == 22
    # (the runner exits at once unless it is root: a complete run directory says sudo -n worked)
    # provisioned through the jump, as the experimenter with become: the marker is root's, the code is there
    assert as_root(st["name"], "stat -c %U /run/favorlab/provisioned").strip() == "root"
    assert as_root(st["name"], "test -f /opt/favorlab/testbed/runner/run.py && echo ok").strip() == "ok"
    # every login of the experimenter came from inside the guest (through the jump), none from outside
    log = as_root(st["name"], "journalctl -o cat _COMM=sshd | grep 'Accepted publickey for experimenter' || true")
    froms = {line.split(" from ")[1].split()[0] for line in log.splitlines() if " from " in line}
    assert froms == {"127.0.0.1"}, log
    # the host key of the experiment host went into its own known_hosts file in the cache, not root's
    kh = Path(os.environ.get("FAVORLAB_CACHE", Path.home() / ".cache" / "favorlab")) / "known_hosts"
    assert any(f.read_text().strip() for f in kh.glob("experiment@*")), list(kh.glob("*"))
    shutil.rmtree(results, ignore_errors=True)
