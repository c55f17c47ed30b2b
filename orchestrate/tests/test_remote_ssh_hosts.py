"""Real testbed hosts over SSH (CloudLab, FABRIC: orchestrate/): a login with sudo instead of root, the
inventory's ssh options (FABRIC's ProxyCommand through its bastion, one option with spaces), and IPv6
management addresses. The commands are checked as built; nothing connects anywhere."""
import shlex
import subprocess

import pytest

from orchestrate import remote, testbeds

PROXY = 'ProxyCommand=ssh -i /keys/bastion -W [%h]:%p alice_0000012345@bastion.fabric-testbed.net'
FABRIC_ARGS = f'-o StrictHostKeyChecking=accept-new -o "{PROXY}"'


@pytest.fixture
def argvs(monkeypatch, tmp_path):
    monkeypatch.setenv("FAVORLAB_CACHE", str(tmp_path / "cache"))
    seen = []

    def fake_run(argv, *a, **kw):
        seen.append(argv)
        return subprocess.CompletedProcess(argv, 0, stdout="", stderr="")
    monkeypatch.setattr(subprocess, "run", fake_run)
    return seen


def own_known_hosts(host_port: str) -> list[str]:
    """Without --known-hosts: a file of the host's own in the cache, key accepted on first contact."""
    return ["-o", f"UserKnownHostsFile={remote.cache_root() / 'known_hosts' / host_port}",
            "-o", "StrictHostKeyChecking=accept-new"]


def test_fabric_host_ipv6_behind_the_bastion(argvs):
    ssh = remote.Ssh("2001:db8:a0::10", 22, "ubuntu", key="/keys/slice", ssh_args=FABRIC_ARGS)
    # the host-key options first (ssh keeps the first value: the inventory's accept-new does not
    # send the key to ~/.ssh/known_hosts), then the inventory's, the ProxyCommand whole
    assert ssh.opts[:8] == [*own_known_hosts("2001_db8_a0__10_22"), "-o", "StrictHostKeyChecking=accept-new", "-o", PROXY]
    assert ssh.dest == "ubuntu@2001:db8:a0::10"                 # ssh takes it bare
    assert ssh.at("/var/lib/favorlab/runs/r1/") == "ubuntu@[2001:db8:a0::10]:/var/lib/favorlab/runs/r1/"
    ssh.run("cd /opt/favorlab && python3 -m testbed.runner --run-dir /var/lib/favorlab/runs/r1")
    assert argvs[-1][-2:] == ["ubuntu@2001:db8:a0::10",
                              "sudo -n sh -c 'cd /opt/favorlab && python3 -m testbed.runner --run-dir /var/lib/favorlab/runs/r1'"]
    ssh.rsync("/tmp/run.json", ssh.at("/var/lib/favorlab/runs/r1/"))
    argv = argvs[-1]
    assert "--rsync-path=sudo -n rsync" in argv
    assert shlex.split(argv[argv.index("-e") + 1])[1:] == ssh.opts   # rsync honours the quotes too


def test_root_login_unchanged(argvs):
    """The local VM and root logins: no sudo, no rsync path, the host as it was."""
    ssh = remote.Ssh("127.0.0.1", 2222, "root", key="/k", known_hosts="/kh")
    assert ssh.at("/x/") == "root@127.0.0.1:/x/"
    assert ssh.opts[:6] == ["-o", "UserKnownHostsFile=/kh", "-o", "StrictHostKeyChecking=yes", "-p", "2222"]
    ssh.run("rm -rf /x")
    assert argvs[-1][-1] == "rm -rf /x"
    ssh.rsync("/a", ssh.at("/x/"))
    assert not any(a.startswith("--rsync-path") for a in argvs[-1])


def test_remote_cli_passes_ssh_args(monkeypatch, tmp_path):
    monkeypatch.setenv("FAVORLAB_CACHE", str(tmp_path / "cache"))
    got = {}
    monkeypatch.setattr(remote, "execute", lambda ssh, *a: got.setdefault("ssh", ssh))
    assert remote.main(["--ssh-host", "192.0.2.7", "--ssh-user", "alice", f"--ssh-args={FABRIC_ARGS}",
                        "--run-dir", str(tmp_path / "r")]) == 0
    assert got["ssh"].opts[:8] == [*own_known_hosts("192.0.2.7_22"), "-o", "StrictHostKeyChecking=accept-new", "-o", PROXY]
    assert got["ssh"].sudo


def test_testbeds_ssh_keeps_the_proxy_whole_and_uses_sudo(argvs):
    """The controller's own ssh (the provisioning marker, the liveness probe) is orchestrate.remote's."""
    t = {"host": "2001:db8:a0::10", "port": 22, "user": "ubuntu", "key": "/keys/slice", "ssh_args": FABRIC_ARGS,
         "known_hosts": "/c/known_hosts/m", "host_key_checking": "accept-new"}
    testbeds.connect(t).capture("mkdir -p $(dirname /run/favorlab/provisioned) && echo h > /run/favorlab/provisioned")
    argv = argvs[-1]
    assert argv[1:7] == ["-o", "UserKnownHostsFile=/c/known_hosts/m", "-o", "StrictHostKeyChecking=accept-new",
                         "-o", "StrictHostKeyChecking=accept-new"]
    assert PROXY in argv and "BatchMode=yes" in argv
    assert argv[-2:] == ["ubuntu@2001:db8:a0::10", "sudo -n sh -c 'mkdir -p $(dirname /run/favorlab/provisioned) "
                                                   "&& echo h > /run/favorlab/provisioned'"]


def test_testbeds_ssh_for_the_vm_as_root(argvs):
    t = {"host": "127.0.0.1", "port": 40123, "user": "root", "key": "/k", "ssh_args": "",
         "known_hosts": "/c/known_hosts", "host_key_checking": "yes"}
    testbeds.connect(t).capture("cat /m")
    argv = argvs[-1]
    assert argv[1:5] == ["-o", "UserKnownHostsFile=/c/known_hosts", "-o", "StrictHostKeyChecking=yes"]
    assert argv[argv.index("-p") + 1] == "40123" and argv[argv.index("-i") + 1] == "/k"
    assert argv[-2:] == ["root@127.0.0.1", "cat /m"]


def test_ansible_recap_reads_the_last_play_recap():
    """The idempotence check (tests/test_jump_host_guest.py) reads changed= from here: the last recap
    line counts, not an earlier play's; output without a recap is an error, not zero changes."""
    out = ("PLAY RECAP *********\nfavorlab-vm : ok=40 changed=12 unreachable=0 failed=0 skipped=3 rescued=0 ignored=0\n"
           "PLAY RECAP *********\nexperiment : ok=41 changed=0 unreachable=0 failed=0 skipped=3 rescued=0 ignored=1\n")
    assert testbeds.ansible_recap(out) == {"ok": 41, "changed": 0, "unreachable": 0, "failed": 0, "skipped": 3,
                                           "rescued": 0, "ignored": 1}
    with pytest.raises(ValueError, match="no PLAY RECAP"):
        testbeds.ansible_recap("fatal: [experiment]: UNREACHABLE!\n")
