"""BMv2's thrift control port is reachable from loopback only: simple_switch binds it on every address of
its network namespace (it has no bind-address option), so p4/switch.py runs it in a namespace of its own
holding only loopback and its two ports, and its CLI there too. Offline: the commands it runs. As root
(skipped elsewhere): a stand-in for simple_switch that binds its port as BMv2 does, started by
p4.switch.Switch inside namespaces this test makes, answers from its own namespace and from nowhere
else; the ports come back where they were."""
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from p4 import control
from p4 import switch as p4switch

REPO = Path(__file__).resolve().parents[2]
PARAMS = {"program": "droptail", "limit": 8}


def test_the_switch_and_its_cli_run_in_its_own_namespace(monkeypatch, tmp_path):
    ran, started = [], []
    monkeypatch.setattr(p4switch, "compile_program", lambda program: tmp_path / f"{program}.json")
    monkeypatch.setattr(p4switch, "tool", lambda name: f"/opt/p4lang/bin/{name}")
    monkeypatch.setattr(p4switch, "remove_stale_netns", lambda: None)

    def run(argv, **kw):
        ran.append(list(argv))
        return subprocess.CompletedProcess(argv, 0, stdout="", stderr="")

    class Proc:
        pid, returncode = 4242, None

        def __init__(self, argv, **kw):
            started.append(list(argv))

        def poll(self):
            return None

        def wait(self, timeout=None):
            return 0
    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.setattr(subprocess, "Popen", Proc)
    monkeypatch.setattr(os, "killpg", lambda pid, sig: None)
    sw = p4switch.Switch(PARAMS, 10, "s1-eth1", "s1-eth2")
    sw.start()
    ns = f"favorlab-p4-{os.getpid()}"
    # the ports go into the namespace before the switch starts, loopback comes up there
    assert ran[:7] == [["ip", "netns", "delete", ns],
                       ["ip", "netns", "add", ns], ["ip", "-n", ns, "link", "set", "lo", "up"],
                       ["ip", "link", "set", "dev", "s1-eth1", "netns", ns], ["ip", "-n", ns, "link", "set", "dev", "s1-eth1", "up"],
                       ["ip", "link", "set", "dev", "s1-eth2", "netns", ns], ["ip", "-n", ns, "link", "set", "dev", "s1-eth2", "up"]]
    assert started == [["ip", "netns", "exec", ns, "/opt/p4lang/bin/simple_switch", "--device-id", "0",
                        "--thrift-port", "9090", "-i", "1@s1-eth1", "-i", "2@s1-eth2", str(tmp_path / "droptail.json"),
                        "--", "--priority-queues", "2"]]
    cli = [a for a in ran[7:] if "simple_switch_CLI" in " ".join(a)]
    assert cli and all(a[:4] == ["ip", "netns", "exec", ns] and a[-2:] == ["--thrift-port", "9090"] for a in cli)
    del ran[:]
    sw.stop()
    pid = str(os.getpid())
    assert ran == [["ip", "-n", ns, "link", "set", "dev", "s1-eth1", "netns", pid], ["ip", "link", "set", "dev", "s1-eth1", "up"],
                   ["ip", "-n", ns, "link", "set", "dev", "s1-eth2", "netns", pid], ["ip", "link", "set", "dev", "s1-eth2", "up"],
                   ["ip", "netns", "delete", ns]]


def test_a_given_namespace_is_used_as_it_is():
    """The BMv2 tests put the ports in a namespace of their own first: nothing is moved then."""
    sw = p4switch.Switch(PARAMS, 10, "s1", "s2", netns="p4ts")
    assert sw._wrap(["simple_switch"]) == ["ip", "netns", "exec", "p4ts", "simple_switch"]


# ------------------------------------------------------------------ as root, with a stand-in switch

FAKE_SWITCH = """\
import socket, sys, time
port = int(sys.argv[sys.argv.index("--thrift-port") + 1])
s = socket.socket()          # bm_runtime's TServerSocket(port): every address of the namespace
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", port))
s.listen()
while True:
    s.accept()[0].close()
"""
FAKE_CLI = """\
import socket, sys
port = int(sys.argv[sys.argv.index("--thrift-port") + 1])
try:
    socket.create_connection(("127.0.0.1", port), timeout=2).close()
except OSError:
    print("Could not connect to thrift client on port", port)
"""
# runs inside the "host" namespace: moves happen relative to it, never to the real host's
DRIVER = """\
import json, socket, sys
from pathlib import Path
from p4 import switch as p4switch
p4switch.compile_program = lambda program: Path(sys.argv[1])
sw = p4switch.Switch({"program": "droptail", "limit": 8}, 10, "s1-eth1", "s1-eth2")
sw.start(timeout=20)

def reaches(addr):
    try:
        socket.create_connection((addr, 9090), timeout=2).close()
        return True
    except OSError:
        return False
seen = {"from_host_loopback": reaches("127.0.0.1"), "from_host_address": reaches("192.0.2.1"),
        "switch_ns": sw.own_netns}
sw.stop()
print(json.dumps(seen))
"""


def sh(*argv, check=True):
    p = subprocess.run(list(argv), capture_output=True, text=True)
    if check and p.returncode:
        raise RuntimeError(f"{' '.join(argv)}: {p.stderr.strip()}")
    return p


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip"), reason="makes network namespaces: needs root and iproute2")
def test_the_thrift_port_answers_in_the_switch_namespace_only(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, text in (("simple_switch", FAKE_SWITCH), ("simple_switch_CLI", FAKE_CLI)):
        (bindir / name).write_text(f"#!{sys.executable}\n{text}")
        (bindir / name).chmod(0o755)
    (tmp_path / "driver.py").write_text(DRIVER)
    tag = f"p4nt{os.getpid() % 100000}"
    host, peer = f"{tag}h", f"{tag}p"
    try:
        for ns in (host, peer):
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        # the host namespace stands for the testbed host: an address of its own, the switch's two ports
        sh("ip", "-n", host, "link", "add", "up0", "type", "veth", "peer", "name", "up1", "netns", peer)
        sh("ip", "-n", host, "addr", "add", "192.0.2.1/24", "dev", "up0")
        sh("ip", "-n", host, "link", "set", "up0", "up")
        for i in (1, 2):
            sh("ip", "-n", host, "link", "add", f"s1-eth{i}", "type", "veth", "peer", "name", f"r{i}", "netns", peer)
        p = subprocess.run(["ip", "netns", "exec", host, sys.executable, str(tmp_path / "driver.py"),
                            str(tmp_path / "droptail.json")], cwd=REPO, capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", PYTHONPATH=str(REPO)))
        assert p.returncode == 0, p.stderr
        seen = json.loads(p.stdout.strip().splitlines()[-1])
        # the CLI reached it (start() returned), from inside; the host reaches it on none of its addresses
        assert seen["switch_ns"].startswith(control.NETNS_PREFIX)
        assert (seen["from_host_loopback"], seen["from_host_address"]) == (False, False)
        # the ports are back in the host namespace, up, and the switch's namespace is gone
        links = sh("ip", "-n", host, "-o", "link", "show").stdout
        assert "s1-eth1@" in links and "s1-eth2@" in links
        assert seen["switch_ns"] not in sh("ip", "netns", "list").stdout
    finally:
        for ns in (host, peer):
            sh("ip", "netns", "delete", ns, check=False)
