"""Runner: run.json validation, the TCP profile, the initial-RTO program, and (guest) one real run."""
import copy
import json
import os
import re
import shlex
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


@pytest.mark.parametrize("workload, words", [
    ({"kind": "bulk"}, "workload="), ({"kind": "persistent", "start_s": 5}, "workload.flows"),
    ({"kind": "persistent", "flows": 10, "start_s": 20}, "workload.start_s"),
])
def test_workload_validation_names_the_field(workload, words):
    with pytest.raises(specmod.SpecError, match=re.escape(words)):
        specmod.validate(dict(copy.deepcopy(SPEC), workload=workload))
    assert specmod.validate(dict(copy.deepcopy(SPEC), workload={"kind": "persistent", "flows": 3, "start_s": 5}))


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
    assert runmod.tcp_sysctls(tcp) == {"net.ipv4.tcp_no_metrics_save": 1, "net.ipv4.tcp_congestion_control": "cubic"}
    # the congestion control is an axis for both profiles
    assert runmod.tcp_sysctls(dict(tcp, congestion_control="bbr"))["net.ipv4.tcp_congestion_control"] == "bbr"
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


def test_sampler_keeps_the_most_memory_in_use(monkeypatch):
    """The peak, not the last sample: the guest's memory size is chosen from it."""
    seq = iter([(2000, 300), (2000, 900), (2000, 400)])
    monkeypatch.setattr(runmod, "mem_used_mib", lambda: next(seq))
    c = runmod.CpuSampler()
    c.halt.wait = lambda t, _n=iter([False, False, True]): next(_n)   # two samples, then halt
    c.run()
    assert (c.mem_total, c.mem_peak) == (2000, 900)


def test_mem_used_reads_this_host():
    total, used = runmod.mem_used_mib()
    assert 0 < used < total


def test_rtt_probe_checks_every_path_against_its_own_rtt_and_probes_them_at_once(monkeypatch):
    import time as _t
    hostsj = {"hosts": {h: {"ip": f"10.0.0.{i}"} for i, h in enumerate(["a1", "a2", "b1", "b2"], 1)},
              "paths_rtt_ms": {"a1-b1": 4.0, "a1-b2": 74.0, "a2-b1": 28.0, "a2-b2": 98.0}}
    measured = {("a1", "10.0.0.3"): 4.8, ("a1", "10.0.0.4"): 75.1, ("a2", "10.0.0.3"): 35.0, ("a2", "10.0.0.4"): None}

    def fake_ping(net, src, ip, count=4):
        _t.sleep(0.2)
        return measured[(src, ip)]
    monkeypatch.setattr(runmod, "ping_rtt", fake_ping)
    t = _t.monotonic()
    c = runmod.probe_rtts(None, hostsj, tolerance_ms=3.0)
    assert _t.monotonic() - t < 0.8                    # 4 paths x 2 pings x 0.2 s one after another: 1.6 s
    assert {k: v["ok"] for k, v in c.items()} == {"rtt_a1-b1_ms": True, "rtt_a1-b2_ms": True,
                                                    "rtt_a2-b1_ms": False, "rtt_a2-b2_ms": False}
    assert c["rtt_a2-b1_ms"]["measured"] == 35.0 and c["rtt_a2-b1_ms"]["tolerance_ms"] == 3.56


def test_rate_probe_retries_a_low_probe_and_keeps_every_attempt(monkeypatch):
    """A stalled probe is tried again and the best kept; a link that stays slow fails after 3 probes."""
    def probes(*rates):
        it = iter(rates)
        monkeypatch.setattr(runmod, "probe_rate_once", lambda *a: (next(it), 0.0))
    probes(8.1, 9.8, 5.0)
    c = runmod.probe_rate(None, {}, 10.0, print)["bottleneck_rate_mbps"]
    assert c["ok"] and c["measured"] == 9.8 and [a["measured"] for a in c["attempts"]] == [8.1, 9.8]
    probes(9.5)
    c = runmod.probe_rate(None, {}, 10.0, print)["bottleneck_rate_mbps"]
    assert c["ok"] and len(c["attempts"]) == 1
    probes(6.0, None, 7.0)
    c = runmod.probe_rate(None, {}, 10.0, print)["bottleneck_rate_mbps"]
    assert not c["ok"] and c["measured"] == 7.0 and len(c["attempts"]) == 3
    probes(None, None, None)
    c = runmod.probe_rate(None, {}, 10.0, print)["bottleneck_rate_mbps"]
    assert not c["ok"] and c["measured"] is None


@pytest.mark.slow
def test_runner_in_private_netns(tmp_path):
    """The whole runner on this machine in a network namespace of its own: run-directory contract,
    the htb + AQM leaf at the bottleneck, the bottleneck rate probe within 10 %, everything torn down."""
    import shutil
    if os.geteuid() != 0 or not shutil.which("mnexec") or not shutil.which("tcpdump") \
            or not shutil.which("iperf3") or not shutil.which("brctl"):
        pytest.skip("needs root and Debian's mininet, bridge-utils, tcpdump, iperf3 (inside the guest they exist)")
    if subprocess.run(["/usr/bin/python3", "-c", "import mininet.net"], capture_output=True).returncode:
        pytest.skip("Debian's python3 cannot import mininet (apt-get install mininet)")
    ns = f"fl-runner-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        p = subprocess.run(["ip", "netns", "exec", ns, "/usr/bin/python3",
                            str(REPO / "testbed/tests/netns_smoke.py"), str(REPO), str(tmp_path)],
                           capture_output=True, text=True, timeout=300)
        links = subprocess.run(["ip", "netns", "exec", ns, "ip", "-o", "link"], capture_output=True, text=True)
    finally:
        subprocess.run(["ip", "netns", "del", ns])
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert len(links.stdout.strip().splitlines()) == 1, f"left behind: {links.stdout}"  # only lo remains
    for f in ("DONE", "manifest.json", "fidelity.json", "hosts.json", "qdisc/before.json", "qdisc/after.json",
              "log/runner.log"):
        assert (tmp_path / f).is_file(), f
    for h in dumbbell.HOSTS:
        assert set(json.loads((tmp_path / "nstat" / f"{h}.json").read_text())) == {"before", "after"}
        assert (tmp_path / "pcap" / f"sender-{h}.pcap").is_file()
    kinds = [q["kind"] for q in json.loads((tmp_path / "qdisc/after.json").read_text())["rl"]]
    assert "htb" in kinds and "pfifo" in kinds
    fid = json.loads((tmp_path / "fidelity.json").read_text())
    rate = fid["checks"]["bottleneck_rate_mbps"]["measured"]
    assert abs(rate - 10) <= 1.0, rate
    assert len([k for k in fid["checks"] if k.startswith("rtt_")]) == 9
    man = json.loads((tmp_path / "manifest.json").read_text())
    assert man["sha256"]["run.json"] and man["kernel"]


# ---------------------------------------------------------------- guest tests (QEMU guest, real kernel)

FAVORVM = REPO / "testbed" / "vm" / "favorvm"
VM_NAME = "runner"


def _no_guest(reason):
    if os.environ.get("FAVORLAB_REQUIRE_GUEST") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def guest():
    """Boot our own guest (name 'runner'), copy the repository to /opt/favorlab, stop it afterwards."""
    from orchestrate import remote
    if not FAVORVM.is_file():
        _no_guest(f"{FAVORVM} does not exist yet (the VM part provides it)")
    p = subprocess.run([str(FAVORVM), "start", "--name", VM_NAME], capture_output=True, text=True, timeout=900)
    if p.returncode:
        _no_guest(f"the guest does not boot here: {p.stderr.strip()[-400:]}")
    try:
        t = remote.vm_target(VM_NAME)
        ssh = remote.Ssh(**t)
        assert ssh.run("mkdir -p /opt/favorlab") == 0
        for d in ("topologies", "testbed", "workloads"):
            if (REPO / d).is_dir():
                ssh.rsync(f"{REPO / d}", f"{ssh.dest}:/opt/favorlab/")
        yield ssh, t
    finally:
        subprocess.run([str(FAVORVM), "stop", "--name", VM_NAME], capture_output=True, timeout=120)


def _schedule(path: Path, load: float, duration: float, mbps: float = 10, seed: int = 7):
    """A small Poisson/exponential forward schedule in the contract's format (the generator is workloads')."""
    import random
    rng = random.Random(seed)
    mean_pkts, mss = 30, 1448
    rate = load * mbps * 1e6 / 8 / (mean_pkts * 1500)   # flows per second
    rows, t, i = [], 0.0, 0
    while True:
        t += rng.expovariate(rate)
        if t >= duration:
            break
        pkts = max(1, int(rng.expovariate(1 / mean_pkts)))
        rows.append(f"{i},{t:.6f},{pkts * mss},{pkts},a{rng.randint(1, 3)},b{rng.randint(1, 3)},forward,web")
        i += 1
    path.write_text("# generator=test seed=%d load=%g\nflow_id,start_s,size_bytes,size_pkts,src,dst,direction,kind\n"
                    % (seed, load) + "\n".join(rows) + "\n")


@pytest.mark.guest
@pytest.mark.slow
def test_short_real_run_end_to_end(guest, tmp_path):
    from orchestrate import remote
    ssh, t = guest
    spec = tmp_path / "run.json"
    spec.write_text(json.dumps(SPEC))
    sched = tmp_path / "schedule.csv"
    _schedule(sched, 0.3, SPEC["duration_s"])
    run_dir = tmp_path / "runs" / SPEC["run_id"]
    t0 = time.time()
    remote.execute(ssh, run_dir, spec, sched)
    print(f"wall time of a {SPEC['duration_s']} s run: {time.time() - t0:.0f} s")
    for f in ("run.json", "schedule.csv", "manifest.json", "fidelity.json", "qdisc/before.json",
              "qdisc/after.json", "log/runner.log", "DONE"):
        assert (run_dir / f).is_file(), f
    for h in dumbbell.HOSTS:
        assert (run_dir / "pcap" / f"sender-{h}.pcap").stat().st_size > 24
        assert set(json.loads((run_dir / "nstat" / f"{h}.json").read_text())) == {"before", "after"}
        assert (run_dir / "flows" / f"client-{h}.csv").is_file()
    for p in ("bneck-in", "bneck-out"):
        assert (run_dir / "pcap" / f"{p}.pcap").stat().st_size > 24
    fid = json.loads((run_dir / "fidelity.json").read_text())
    checks = fid["checks"]
    for path, conf in dumbbell.hosts_json(SPEC["topology"])["paths_rtt_ms"].items():
        meas = checks[f"rtt_{path}_ms"]["measured"]
        print(f"idle RTT {path}: configured {conf} measured {meas}")
        assert abs(meas - conf) < 5
    rate = checks["bottleneck_rate_mbps"]["measured"]
    print(f"bottleneck rate: {rate:.2f} Mb/s; cpu {checks['cpu_busy']['measured']}")
    assert abs(rate - 10) <= 1.0
    # the initial-RTO program went to the run's own cgroup (not the root), which is gone afterwards
    log = (run_dir / "log" / "runner.log").read_text()
    assert "/favorlab-run-" in log and "where the flow clients and servers run" in log
    assert ssh.run("ls -d /sys/fs/cgroup/favorlab-run-* 2>/dev/null") != 0
    groups = {g["group"] for g in json.loads((run_dir / "cpu.json").read_text())["processes"]}
    assert {"workload client", "workload server"} <= groups, groups


@pytest.mark.guest
@pytest.mark.slow
def test_persistent_flows_start_late_and_all_report(guest, tmp_path):
    """Scenario persistent (paper Section 5.3): the iperf3 flows start start_s after t0, beside the
    schedule's short flows, run to the end of the traffic, and every stream reports its throughput."""
    from orchestrate import remote
    from workloads import persistent
    ssh, t = guest
    spec = dict(copy.deepcopy(SPEC), run_id="persistent-10M_droptail_load0.2_iw2_rep0", scenario="persistent",
                workload={"kind": "persistent", "flows": 10, "start_s": 6}, duration_s=16, drain_s=5)
    # and the congestion-control axis: cubic under the paper profile, applied in every host and read back
    spec["tcp"]["congestion_control"] = "cubic"
    (tmp_path / "run.json").write_text(json.dumps(spec))
    sched = tmp_path / "schedule.csv"
    _schedule(sched, 0.2, spec["duration_s"])
    run_dir = tmp_path / "runs" / spec["run_id"]
    remote.execute(ssh, run_dir, tmp_path / "run.json", sched)
    fid = json.loads((run_dir / "fidelity.json").read_text())
    assert fid["checks"]["persistent_flows"] == {"configured": 10, "measured": 10, "ok": True}, fid["checks"]
    applied = fid["checks"]["tcp_applied"]
    assert applied["ok"] and {h["net.ipv4.tcp_congestion_control"] for h in applied["measured"].values()} == {"cubic"}
    plan = json.loads((run_dir / "persistent" / "plan.json").read_text())
    assert sum(g["streams"] for g in plan["groups"]) == 10 and len(plan["groups"]) == 9
    total = 0.0
    for g in plan["groups"]:
        raw = json.loads((run_dir / "persistent" / f"iperf3-{g['src']}-{g['dst']}.json").read_text())
        started = raw["start"]["timestamp"]["timesecs"] - plan["t0_unix"]
        print(f"{g['src']}-{g['dst']}: {g['streams']} stream(s) from t0 + {started:.2f} s")
        assert 5 <= started <= 8, started        # whole seconds in iperf3's timestamp
        got = persistent.parse_iperf3_json(json.dumps(raw))
        assert len(got["streams"]) == g["streams"] and all(st["bytes"] > 0 for st in got["streams"])
        assert got["congestion"] == "cubic"
        total += got["received_mbps"]
    print(f"persistent flows: {total:.2f} Mb/s together")
    assert 3 <= total <= 10.5       # they fill most of the 10 Mb/s bottleneck beside a 0.2 load of short flows
    assert (run_dir / "flows" / "client-a1.csv").is_file()


# AQMs whose traffic test is elsewhere: sch_favor's in the qdisc package's guest suite (qdisc/tests/test_guest.py)
# and the smoke pipeline, the P4 programs' on BMv2 (p4/tests)
AQMS_TESTED_ELSEWHERE = {"favor", "favourtail", "p4-favorqueue", "p4-droptail"}


def _linux_aqms() -> dict:
    from orchestrate import experiment
    topo = dict(SPEC["topology"])
    return {n: experiment.aqm_setup(n, topo)["forward"] for n in experiment.load_aqms()
            if n not in AQMS_TESTED_ELSEWHERE}


def test_every_aqm_has_a_traffic_test():
    """A new entry in config/aqms.yaml is put through traffic in the guest (test_linux_aqms_carry_traffic)
    unless its own suite does it."""
    from orchestrate import experiment
    assert set(_linux_aqms()) | AQMS_TESTED_ELSEWHERE == set(experiment.load_aqms())
    assert {"droptail", "choke", "red", "sfb", "pie", "codel", "fq_codel", "cake", "sfq", "fq"} <= set(_linux_aqms())


@pytest.mark.guest
def test_linux_aqms_carry_traffic(guest):
    """Each AQM entry with the arguments derived from the Table 1 topology (8-packet buffer, 10 Mb/s): tc
    accepts them under the htb rate limit, TCP traffic goes through the AQM (its counters move) at the
    bottleneck's rate, and what it dropped or marked is in its statistics."""
    ssh, t = guest
    entries = [dict(v, name=n) for n, v in _linux_aqms().items()]
    out = ssh.capture(f"python3 /opt/favorlab/testbed/tests/aqm_probe.py /opt/favorlab "
                      f"{shlex.quote(json.dumps(entries))}", timeout=60 * len(entries) + 60)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    for e in entries:
        r = got[e["name"]]
        assert r["error"] is None, (e["name"], r["error"])
        leaf = [q for q in r["qdisc"] if q.get("kind") == e["kind"]]
        assert leaf, (e["name"], r["qdisc"])
        q = leaf[0]
        print(f"{e['name']:9s} {' '.join(e['args']):90s} {r['received_mbps']:.2f} Mb/s, {q['packets']} pkts, "
              f"{q['drops']} drops, backlog {q.get('backlog')} B")
        # 4 s of 4 TCP streams at 10 Mb/s: about 3300 full-size packets through the leaf
        assert q["packets"] > 2000, (e["name"], q)
        assert 8.0 <= r["received_mbps"] <= 10.5, (e["name"], r["received_mbps"])
        assert "drops" in q and "overlimits" in q


def _parse_rto(out: str):
    line = [l for l in out.splitlines() if l.startswith("RESULT")]
    assert line, out
    return [None if x == "None" else float(x) for x in line[0].split()[1:]]


def _assert_rto(with_prog, without):
    print(f"first SYN retry: {with_prog} s with the program, {without} s without")
    assert with_prog is not None and 2.7 <= with_prog <= 3.6
    assert without is not None and 0.8 <= without <= 1.4


# shell run as root: a private cgroup v2 mount + child cgroup and a private netns, removed afterwards
PROBE_SH = """set -e
d=$(mktemp -d); mkdir $d/cg; mount -t cgroup2 none $d/cg
mkdir $d/cg/favorlab-rto; ip netns add fl-rto-$$
trap 'ip netns del fl-rto-$$; sleep 0.5; rmdir $d/cg/favorlab-rto; umount $d/cg; rm -r $d' EXIT
ip netns exec fl-rto-$$ python3 {repo}/testbed/tests/rto_probe.py {repo} $d/cg/favorlab-rto
"""


def test_initial_rto_program_here():
    """On this machine's kernel (own netns and cgroup): the first SYN retry comes after ~3 s, not 1 s."""
    import shutil
    if os.geteuid() != 0 or not shutil.which("tcpdump"):
        pytest.skip("needs root and tcpdump to create a netns, a cgroup and capture the SYNs")
    p = subprocess.run(["sh", "-c", PROBE_SH.format(repo=REPO)], capture_output=True, text=True, timeout=60)
    if "RESULT" not in p.stdout and ("Operation not permitted" in p.stderr or "mount" in p.stderr):
        pytest.skip(f"this machine does not allow the netns/cgroup/BPF set-up: {p.stderr.strip()[-300:]}")
    _assert_rto(*_parse_rto(p.stdout + p.stderr))


@pytest.mark.guest
def test_initial_rto_in_guest(guest):
    """The same check in the guest's stock Debian kernel (HZ from /boot/config-*)."""
    ssh, t = guest
    out = subprocess.run(["ssh", *ssh.opts, ssh.dest, PROBE_SH.format(repo="/opt/favorlab")],
                         capture_output=True, text=True, timeout=120)
    _assert_rto(*_parse_rto(out.stdout + out.stderr))


def test_cpu_breakdown_charges_each_process_group_its_own_ticks():
    """cpu.json is what testbed/README.md's breakdown is read from: the shares must be each group's ticks
    over all ticks, a process that started inside the window counted from zero, a reused PID not mixed up."""
    modes0, modes1 = [100, 0, 50, 850, 0, 0, 0, 0], [400, 0, 150, 1150, 0, 0, 300, 0]   # 1000 ticks
    procs0 = {(10, "5"): ("python3", "python3 -m workloads.client --host a1", 100, 10),
              (11, "6"): ("tcpdump", "tcpdump -i a1-eth0", 5, 5),
              (12, "7"): ("python3", "python3 -m workloads.server", 0, 0)}
    procs1 = {(10, "5"): ("python3", "python3 -m workloads.client --host a1", 300, 60),
              (11, "6"): ("tcpdump", "tcpdump -i a1-eth0", 25, 85),
              (12, "900"): ("python3", "python3 -m workloads.client --host a2", 40, 0),   # same PID, new process
              (13, "8"): ("ksoftirqd/1", runmod.KTHREAD, 0, 50)}
    b = runmod.cpu_breakdown(modes0, modes1, procs0, procs1)
    assert b["window_ticks"] == 1000
    assert b["modes"]["user"] == 0.3 and b["modes"]["softirq"] == 0.3 and b["modes"]["idle"] == 0.3
    g = {r["group"]: r for r in b["processes"]}
    assert g["workload client"]["share"] == round((200 + 50 + 40) / 1000, 4) and g["workload client"]["processes"] == 2
    assert g["tcpdump"] == {"group": "tcpdump", "user": 0.02, "system": 0.08, "share": 0.1, "processes": 1}
    assert g["kernel threads (ksoftirqd)"]["share"] == 0.05
    assert "workload server" not in g      # it ended before the window closed and used nothing in it
    assert [r["group"] for r in b["processes"]][0] == "workload client"


def test_proc_ticks_reads_this_process():
    me = [v for (pid, _), v in runmod.proc_ticks().items() if pid == os.getpid()]
    assert len(me) == 1 and me[0][2] + me[0][3] > 0    # pytest has used CPU by now


def test_workload_impl_picks_the_flow_client_and_server(monkeypatch, tmp_path):
    assert runmod.workload_cmd("client", {}) == [sys.executable, "-m", "workloads.client"]
    fake = tmp_path / "favorflow"
    monkeypatch.setattr(runmod, "FAVORFLOW", fake)
    with pytest.raises(RuntimeError, match="workloads/go/build"):     # the error names the fix
        runmod.workload_cmd("server", {"workload_impl": "go"})
    fake.write_text("")
    assert runmod.workload_cmd("server", {"workload_impl": "go"}) == [str(fake), "server"]
    bad = copy.deepcopy(SPEC)
    bad["workload_impl"] = "rust"
    with pytest.raises(specmod.SpecError, match="workload_impl"):
        specmod.validate(bad)


def test_popen_in_a_cgroup_moves_the_process_itself_before_it_runs(tmp_path):
    """The shell writes its own PID to cgroup.procs and then execs the command (same PID), so the
    workload's first socket is already the cgroup's. A plain file stands in for cgroup.procs here."""
    (tmp_path / "cgroup.procs").write_text("")
    p = runmod.popen(["true"], cgroup=tmp_path)
    assert p.wait(timeout=10) == 0
    assert (tmp_path / "cgroup.procs").read_text().split() == [str(p.pid)]


def test_trace_check_reads_the_recorders_last_line(tmp_path):
    f = tmp_path / "favor-trace.csv"
    f.write_text("t,dev,verdict\n1.0,rl-eth1,favored\n# lost_events=0\n")
    assert runmod.trace_check(f)["ok"]
    f.write_text("t,dev,verdict\n1.0,rl-eth1,favored\n# lost_events=12\n")
    c = runmod.trace_check(f)
    assert not c["ok"] and c["measured"] == 12 and c["severity"] == "warning"
    f.write_text("t,dev,verdict\n1.0,rl-eth1,favored\n")      # killed before it could finish
    assert not runmod.trace_check(f)["ok"]
    assert not runmod.trace_check(tmp_path / "missing.csv")["ok"]


def test_an_exited_process_keeps_its_group():
    """A client that has exited but is not reaped yet shows an empty command line: its time must stay
    with the workload client, not become a nameless group."""
    procs = {(10, "5"): ("python3", "python3 -m workloads.client --host a1", 100, 10)}
    runmod.merge_ticks(procs, {(10, "5"): ("python3", "", 300, 60), (11, "6"): ("tcpdump", "tcpdump -i x", 1, 1)})
    assert procs[(10, "5")] == ("python3", "python3 -m workloads.client --host a1", 300, 60)
    assert runmod.process_group("python3", "") == "python3"        # never taken for a kernel thread
    me = [v for (pid, _), v in runmod.proc_ticks().items() if pid == os.getpid()][0]
    assert me[1] != runmod.KTHREAD
    kthreads = [v for v in runmod.proc_ticks().values() if v[1] == runmod.KTHREAD]
    assert any(v[0] == "kthreadd" for v in kthreads)                # PID 2, the kernel threads' parent
