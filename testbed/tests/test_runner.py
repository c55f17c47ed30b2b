"""Runner: run.json validation, the TCP profile, the initial-RTO program, and (guest) one real run."""
import copy
import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed.runner import bpf, run as runmod, spec as specmod
from topologies import dumbbell

REPO = Path(__file__).resolve().parents[2]

SPEC = {
    "run_id": "dumbbell-10M_droptail_load0.3_iw2_rep0", "config_name": "test", "scenario": "dumbbell",
    "topology": {"kind": "dumbbell", "bottleneck_mbps": 10, "buffer_pkts": 8, "access_mbps": 100,
                 "left_delays_ms": [0, 12, 25], "right_delays_ms": [2, 37, 75], "central_delay_ms": 0,
                 "reverse_buffer_pkts": 8, "mtu": 1500},
    "aqm": {"name": "droptail", "forward": {"kind": "pfifo", "args": ["limit", "8"]},
            "reverse": {"kind": "pfifo", "args": ["limit", "8"]}},
    "tcp": {"profile": "paper", "iw": 2, "congestion_control": "reno", "sack": False, "timestamps": False,
            "delayed_ack": False, "tlp": False, "rack": False, "initial_rto_ms": 3000, "ecn": False},
    "load": 0.3, "reverse_load": 0.1, "replication": 0, "seed": 1234,
    "duration_s": 20, "warmup_s": 5, "drain_s": 10, "schedule": "schedule.csv",
    "capture": {"snaplen": 128, "points": ["senders", "bneck-in", "bneck-out"]}, "trace_favor": False,
}


@pytest.mark.parametrize("path,value", [
    ("topology.bottleneck_mbps", -1), ("topology.bottleneck_mbps", None), ("tcp.iw", 0),
    ("tcp.profile", "ns2"), ("aqm.forward.kind", "pfifo; rm"), ("capture.snaplen", 10),
    ("run_id", "a/b"), ("topology.kind", "chain"), ("tcp.initial_rto_ms", 5),
])
def test_validation_names_the_field(path, value):
    s = copy.deepcopy(SPEC)
    cur = s
    *head, last = path.split(".")
    for k in head:
        cur = cur[k]
    cur[last] = value
    with pytest.raises(specmod.SpecError, match=path.replace(".", r"\.")):
        specmod.validate(s)


def test_missing_field_and_central_delay_named():
    s = copy.deepcopy(SPEC)
    del s["aqm"]["reverse"]
    with pytest.raises(specmod.SpecError, match=r"aqm\.reverse\.kind is missing"):
        specmod.validate(s)
    s = copy.deepcopy(SPEC)
    s["topology"]["central_delay_ms"] = 5
    with pytest.raises(specmod.SpecError, match="central_delay_ms"):
        specmod.validate(s)
    assert specmod.validate(copy.deepcopy(SPEC))


def test_load_requires_schedule(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps(SPEC))
    with pytest.raises(specmod.SpecError, match="schedule"):
        specmod.load(tmp_path)
    (tmp_path / "schedule.csv").write_text("flow_id\n")
    assert specmod.load(tmp_path)["run_id"] == SPEC["run_id"]


def test_paper_profile_sysctls_and_routes():
    s = runmod.tcp_sysctls(SPEC["tcp"])
    assert s["net.ipv4.tcp_congestion_control"] == "reno"
    assert s["net.ipv4.tcp_sack"] == 0 and s["net.ipv4.tcp_early_retrans"] == 0
    assert s["net.ipv4.tcp_recovery"] == 0 and s["net.ipv4.tcp_no_metrics_save"] == 1
    r = runmod.route_opts(SPEC["tcp"])
    assert r[:2] == ["initcwnd", "2"] and "quickack" in r


def test_linux_profile_keeps_kernel_defaults():
    tcp = dict(SPEC["tcp"], profile="linux", congestion_control="cubic", delayed_ack=True)
    assert runmod.tcp_sysctls(tcp) == {"net.ipv4.tcp_no_metrics_save": 1}
    assert "quickack" not in runmod.route_opts(tcp)


def test_initial_rto_program_encoding():
    assert bpf.ms_to_jiffies(3000, 250) == 750
    assert bpf.ms_to_jiffies(3000, 1000) == 3000
    code = bpf.program(750)
    assert len(code) == 7 * 8
    insns = [struct.unpack("<BBhi", code[i:i + 8]) for i in range(0, len(code), 8)]
    assert insns[3] == (0xb7, 3, 0, 750)          # mov r3, 750 when op == TIMEOUT_INIT
    assert insns[2][0] == 0x55 and insns[2][3] == bpf.BPF_SOCK_OPS_TIMEOUT_INIT
    assert insns[-1][0] == 0x95


def test_initial_rto_program_passes_the_verifier():
    """Load (never attach) the program into this kernel: the verifier accepts it."""
    if os.geteuid() != 0:
        pytest.skip("loading a BPF program needs root")
    r = bpf.InitialRto(3000, hz=250)
    import ctypes
    code = bpf.program(r.jiffies)
    insns = ctypes.create_string_buffer(code, len(code))
    lic = ctypes.create_string_buffer(b"GPL")
    attr = ctypes.create_string_buffer(128)
    struct.pack_into("<IIQQ", attr, 0, bpf.BPF_PROG_TYPE_SOCK_OPS, len(code) // 8,
                     ctypes.addressof(insns), ctypes.addressof(lic))
    try:
        fd = bpf._bpf(bpf.BPF_PROG_LOAD, attr)
    except OSError as e:
        if e.errno in (1, 38):  # EPERM/ENOSYS: no BPF in this kernel/container
            pytest.skip(f"this kernel refuses BPF program loading: {e}")
        raise
    os.close(fd)


def test_cpu_check_flags_sustained_saturation():
    c = runmod.CpuSampler()
    c.samples = [0.5] * 80 + [0.95] * 20
    assert not c.check()["cpu_busy"]["ok"]
    c.samples = [0.5] * 95 + [0.99] * 5
    assert c.check()["cpu_busy"]["ok"]
