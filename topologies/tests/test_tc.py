"""The tc commands both topologies share (pure; running them needs the guest)."""
import os

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
