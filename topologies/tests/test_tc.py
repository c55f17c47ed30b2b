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
