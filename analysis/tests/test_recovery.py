"""Recovery classification (analysis.tcp.sender_side) on captures of the guest's real Linux 6.1 TCP.

The captures (kept as text, <case>.pcap.txt, turned back into pcap files here) and the script that made them
are in data/recovery (make_captures.py runs inside the guest,
capture_in_guest.py drives it); expected.json says what each case drops and the classes that follow.
"""
import json
import os

import pytest

from analysis.tcp import group_connections, sender_side
from analysis.pcapread import Pkt, read_pcap, ACK
from analysis.tests.data.recovery import pcaptext

DATA = os.path.join(os.path.dirname(__file__), "data", "recovery")
with open(os.path.join(DATA, "expected.json")) as f:
    EXPECTED = {k: v for k, v in json.load(f).items() if not k.startswith("_")}
KEYS = ["syn_retrans", "retrans", "rto", "fr", "tlp", "other_rec"]


def classify(name, profile, tmp_path):
    pcap = tmp_path / (name + ".pcap")
    with open(os.path.join(DATA, name + ".pcap.txt")) as f:
        pcap.write_bytes(pcaptext.to_pcap(f.read()))
    conns = group_connections(read_pcap(str(pcap)))
    assert len(conns) == 1, f"{name}: {len(conns)} connections"
    (key, pkts), = conns.items()
    return sender_side(pkts, key, profile)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_capture_classes(name, tmp_path):
    exp = EXPECTED[name]
    got = classify(name, exp["profile"], tmp_path)
    assert {k: got[k] for k in KEYS if k in exp} == {k: exp[k] for k in KEYS if k in exp}, exp["why"]


# A window update is not a duplicate ACK (RFC 5681): synthetic, a receiver reopening its window three
# times while 2 segments are outstanding, then the head re-sent 300 ms after the last new ACK: an RTO.
def _pkt(t, fwd, flags, seq, ack, plen=0, win=100):
    a, b = ("10.0.0.1", 40000), ("10.0.0.2", 5001)
    (s, sp), (d, dp) = (a, b) if fwd else (b, a)
    return Pkt(t, s, d, sp, dp, flags, seq, ack, 0, plen, win, (), None)


def test_window_updates_are_not_dupacks():
    pk = [_pkt(0.0, True, 2, 1000, 0), _pkt(0.1, False, 0x12, 5000, 1001), _pkt(0.1, True, ACK, 1001, 5001),
          _pkt(0.10, True, ACK, 1001, 5001, 1000), _pkt(0.10, True, ACK, 2001, 5001, 1000),
          _pkt(0.11, True, ACK, 3001, 5001, 1000), _pkt(0.2, False, ACK, 5001, 2001, win=10)]
    pk += [_pkt(0.25 + 0.01 * i, False, ACK, 5001, 2001, win=20 + 10 * i) for i in range(3)]
    pk += [_pkt(0.5, True, ACK, 2001, 5001, 1000)]
    key = ("10.0.0.1", 40000, "10.0.0.2", 5001, 1000)
    got = sender_side(pk, key, "paper")
    assert (got["fr"], got["rto"], got["other_rec"]) == (0, 1, 0)
