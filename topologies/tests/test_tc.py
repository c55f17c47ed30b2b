"""The tc commands both topologies share (pure; running them needs the guest)."""
import os
import subprocess

from contract import qdiscs
from topologies import tc


def test_only_the_projects_qdiscs_get_favorlabs_tc_plugins(monkeypatch):
    """favorlab's qdiscs find their tc plugins in its own TC_LIB_DIR; stock tc (netem's delay tables among
    what it reads from its default directory) keeps the environment it has."""
    monkeypatch.delenv("TC_LIB_DIR", raising=False)
    for kind in qdiscs.kinds():
        assert tc.tc_env(kind)["TC_LIB_DIR"] == tc.FAVOR_TC_LIB == "/usr/local/lib/favorlab/tc"
    for kind in ("netem", "tbf", "pfifo", "fq_codel", "htb"):
        assert "TC_LIB_DIR" not in tc.tc_env(kind)
    assert tc.tc_env("pfifo")["PATH"] == os.environ["PATH"]


def test_a_delay_line_holds_netem_limit_packets_at_the_access_rate():
    (cmd,) = tc.netem_port_cmds("sL-a1", 24.5, 100)
    assert cmd == ["tc", "qdisc", "replace", "dev", "sL-a1", "root", "netem", "delay", "24.5ms",
                   "rate", "100000kbit", "limit", str(tc.NETEM_LIMIT)]
    assert tc.rate(2.5) == "2500kbit" and tc.rate(1000) == "1000000kbit"


def test_a_nodes_commands_run_as_one_script_that_names_the_one_that_failed():
    """run_node_scripts' script for one node, run here by sh with stand-in commands: the commands run in
    order, an unchecked failure is silent, a checked one stops the script and names itself; favorlab's
    qdiscs get the tc plugin directory and stock ones do not."""
    script = tc.node_script([(["echo", "one"], True, None), (["false"], False, None), (["echo", "two words"], True, None),
                             (["false", "--flag"], True, None), (["echo", "never"], True, None)])
    p = subprocess.run(["sh", "-c", script], capture_output=True, text=True)
    assert p.returncode == 1 and p.stdout == "one\ntwo words\n" and p.stderr.strip() == "failed: false --flag"
    favor = tc.node_script([(["tc", "qdisc", "add"], True, "favor")])
    assert favor.startswith(f"env TC_LIB_DIR={tc.FAVOR_TC_LIB} tc qdisc add ")
    assert tc.node_script([(["tc", "qdisc", "add"], True, "pfifo")]).startswith("tc qdisc add ")


def test_a_qdisc_plan_goes_after_what_each_node_already_has():
    jobs = {"rl": [(["ip", "link"], True, None)]}
    plan = {"rl": [([["tc", "a"], ["tc", "b"]], "favor")], "root": [([["tc", "c"]], "netem")]}
    assert tc.qdisc_plan_jobs(plan, jobs) == {"rl": [(["ip", "link"], True, None), (["tc", "a"], True, "favor"),
                                                     (["tc", "b"], True, "favor")], None: [(["tc", "c"], True, "netem")]}


def test_every_port_gets_offloads_off_and_its_mtu_and_every_bridge_port_offloads_off():
    class Node:
        def __init__(self, intfs):
            self.names = intfs

        def intfNames(self):
            return self.names

    class Net:
        nodes = {"h1": Node(["lo", "h1-eth0"]), "s1": Node(["lo", "s1-h1"])}

        def get(self, name):
            return self.nodes[name]
    jobs = tc.port_jobs(Net(), ["h1"], ["s1"], {"h1": [(["ip", "a"], True, None)]})
    assert jobs == {"h1": [(["ip", "a"], True, None), (tc.offload_cmd("h1-eth0"), False, None),
                           (["ip", "link", "set", "h1-eth0", "mtu", "1500"], True, None)],
                    None: [(tc.offload_cmd("s1"), False, None), (tc.offload_cmd("s1-h1"), False, None)]}


def test_consecutive_tc_and_ip_commands_run_as_one_batch_each(tmp_path):
    """node_script gives consecutive tc (or ip) commands of one check and environment to one `-batch`
    process, the batch's lines being the commands without the tool's name; unchecked ones with -force and
    silent; a checked batch that fails stops the script naming its lines; an argument a batch line cannot
    carry (a blank) keeps a process of its own. Run by sh with a stand-in tc and ip that log what they get."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in ("tc", "ip"):
        (bin_ / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> {tmp_path}/calls\n'
                                 f'[ "$1" = "-batch" ] || [ "$2" = "-batch" ] && cat >> {tmp_path}/calls\n'
                                 f'grep -q fail {tmp_path}/calls && exit 1 || exit 0\n')
        (bin_ / tool).chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_}:{os.environ['PATH']}")
    script = tc.node_script([(["ip", "neigh", "flush", "all"], False, None), (["ip", "tcp_metrics", "flush", "all"], False, None),
                             (["tc", "qdisc", "del", "dev", "a", "root"], False, None),
                             (["tc", "qdisc", "del", "dev", "b", "root"], False, None),
                             (["tc", "qdisc", "replace", "dev", "a", "root", "htb"], True, "favor"),
                             (["tc", "qdisc", "add", "dev", "a", "parent", "1:1", "favor"], True, "favor"),
                             (["tc", "qdisc", "replace", "dev", "b", "root", "pfifo"], True, "pfifo"),
                             (["tc", "filter", "add", "dev", "b", "u32 match"], True, None)])
    p = subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "calls").read_text().splitlines() == [
        "ip -force -batch -", "neigh flush all", "tcp_metrics flush all",
        "tc -force -batch -", "qdisc del dev a root", "qdisc del dev b root",
        "tc -batch -", "qdisc replace dev a root htb", "qdisc add dev a parent 1:1 favor",
        "tc qdisc replace dev b root pfifo", "tc filter add dev b u32 match"]
    assert script.count(f"env TC_LIB_DIR={tc.FAVOR_TC_LIB} tc -batch -") == 1     # the favor batch alone
    (tmp_path / "calls").unlink()
    failing = tc.node_script([(["tc", "qdisc", "del", "dev", "fail", "root"], False, None),
                              (["tc", "qdisc", "del", "dev", "c", "root"], False, None),
                              (["tc", "qdisc", "add", "dev", "fail", "root", "htb"], True, None),
                              (["tc", "qdisc", "add", "dev", "d", "root", "htb"], True, None),
                              (["ip", "link", "set", "d", "up"], True, None)])
    p = subprocess.run(["sh", "-c", failing], capture_output=True, text=True, env=env)
    assert p.returncode == 1
    assert p.stderr.strip() == "failed: tc -batch: qdisc add dev fail root htb; qdisc add dev d root htb"
    assert "ip link" not in (tmp_path / "calls").read_text()       # the script stopped at the failed batch
