"""Runner: whole runs, in a private network namespace here and (guest) on the shared QEMU guest through
the controller's path (orchestrate.remote); every AQM with traffic; the initial RTO in the guest's kernel."""
import copy
import json
import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from contract.tests.examples import SPEC, chain_spec
from testbed.tests.test_runner_host import PROBE_SH, _assert_rto, _parse_rto
from topologies import dumbbell


REPO = Path(__file__).resolve().parents[2]


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
    # the log's "t0 in X s" is when t0 is: counted from the end of the client start-up it times first, not
    # from its start (a slow guest's start-up of 10 s once made the log 10 s wrong)
    from datetime import datetime
    line = next(l for l in (tmp_path / "log" / "runner.log").read_text().splitlines() if ": t0 in " in l)
    said = datetime.fromisoformat(line.split()[0]).timestamp() + float(line.split(": t0 in ")[1].split()[0])
    assert abs(said - man["t0_unix"]) <= 0.2, (line, man["t0_unix"])


@pytest.fixture(scope="module")
def guest(shared_guest):
    """The suites' shared guest (conftest.py): provisioned, so /opt/favorlab holds this checkout's tracked
    files, the runner among them."""
    from orchestrate import remote
    t = remote.vm_target(shared_guest["vm_name"])
    return remote.Ssh(**t), t


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


def _made_again_if_its_probes_failed(ssh, spec_file: Path, schedule: Path, run_dir: Path) -> Path:
    """The run made on the guest (orchestrate.remote, the controller's path) into run_dir, and made once more,
    into again/<run id> beside it, when the runner found its probes (the rate and RTT checks) failed; returns the
    folder the test reads. The shared guest runs beside the host part of the test session, and CPU work on the
    host lowers what a real-clock TCG guest's emulated links carry whatever the host part's CPU share
    (docs/measurements.md, "The rate probe beside the host's work"), which the runner rightly reports as a run
    invalid by its probes; a pipeline's job makes such an attempt again too. A run invalid for any other
    reason is the test's to judge, as before."""
    from orchestrate import remote
    from testbed.runner.kept import PROBE_CHECKS
    remote.execute(ssh, run_dir, spec_file, schedule)
    fid = json.loads((run_dir / "fidelity.json").read_text())
    failed = sorted(k for k, v in fid["checks"].items() if not v.get("ok") and PROBE_CHECKS.fullmatch(k))
    if not failed:
        return run_dir
    print(f"the run's probes failed ({', '.join(failed)}): {fid['reasons']}; made once more")
    again = run_dir.parent / "again" / run_dir.name
    remote.execute(ssh, again, spec_file, schedule)
    return again


def test_a_run_whose_probes_failed_is_made_once_more_and_no_other(monkeypatch, tmp_path):
    """The guest tests' helper, with the controller's execute standing in: a run whose rate probe failed is
    made once more and the second is the one read; a run invalid by its CPU only, or valid, is kept."""
    from orchestrate import remote
    made = []

    def fake_execute(ssh, run_dir, spec, schedule):
        made.append(run_dir)
        checks = {"rtt_a1-b1_ms": {"ok": True}, "bottleneck_rate_mbps": {"ok": outcomes[len(made) - 1] != "rate"},
                  "cpu_busy": {"ok": outcomes[len(made) - 1] != "cpu"}}
        run_dir.mkdir(parents=True)
        (run_dir / "fidelity.json").write_text(json.dumps({"checks": checks, "reasons": ["..."]}))
    monkeypatch.setattr(remote, "execute", fake_execute)
    for outcomes, want in ((["rate", "ok"], 2), (["cpu"], 1), (["ok"], 1), (["rate", "rate"], 2)):
        made.clear()
        run_dir = tmp_path / "-".join(outcomes) / "runs" / "r"
        got = _made_again_if_its_probes_failed(None, tmp_path / "run.json", tmp_path / "schedule.csv", run_dir)
        assert len(made) == want and got == made[-1] and got.name == "r", (outcomes, made)


@pytest.mark.guest
@pytest.mark.slow
def test_short_real_run_end_to_end(guest, tmp_path):
    ssh, t = guest
    spec = tmp_path / "run.json"
    spec.write_text(json.dumps(SPEC))
    sched = tmp_path / "schedule.csv"
    _schedule(sched, 0.3, SPEC["duration_s"])
    run_dir = tmp_path / "runs" / SPEC["run_id"]
    t0 = time.time()
    run_dir = _made_again_if_its_probes_failed(ssh, spec, sched, run_dir)
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
    # only the experiment's packets in the captures (a DHCP client on the veth ports would put its own there)
    assert checks["foreign_traffic_bottleneck"]["measured"] == 0, checks["foreign_traffic_bottleneck"]
    assert checks["foreign_traffic_elsewhere"]["measured"] == 0, checks["foreign_traffic_elsewhere"]
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
    # RFC 6298's 1 s initial RTO instead of the paper's 3 s (test_initial_rto_in_guest covers that one): the
    # groups' set-ups lose SYNs in the full buffer (below), and with 3 s a third loss in a row (at t0 + 6,
    # 9 and 15 s) leaves a group unconnected when the traffic ends; with 1 s it takes four (6, 7, 9, 13 s).
    spec["tcp"]["initial_rto_ms"] = 1000
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
    ips = {h: v["ip"] for h, v in dumbbell.hosts_json(spec["topology"])["hosts"].items()}
    total = 0.0
    for g in plan["groups"]:
        raw = json.loads((run_dir / "persistent" / f"iperf3-{g['src']}-{g['dst']}.json").read_text())
        started = raw["start"]["timestamp"]["timesecs"] - plan["t0_unix"]
        syns, connected = _control_handshake(run_dir / "pcap" / f"sender-{g['src']}.pcap", ips[g["src"]], ips[g["dst"]],
                                             g["port"])
        syns = [t - plan["t0_unix"] for t in syns]
        connected -= plan["t0_unix"]
        print(f"{g['src']}-{g['dst']}: {g['streams']} stream(s); control SYN(s) at t0 + "
              f"{', '.join(f'{t:.2f}' for t in syns)} s, connected at {connected:.2f} s, iperf3 start {started:.2f} s")
        # The runner's part: each client is launched at start_s, never before (the shell's sleep ends then; 1.5 s
        # allows for its wake-up in a busy guest). Then iperf3's exec and start-up, before its first SYN: 0.5-0.6 s
        # in a TCG guest on a quiet host, 2.6 s on a slower one, while six flow clients replay the schedule. That
        # is the guest's speed, not the runner's: printed, not bounded.
        start_s = spec["workload"]["start_s"]
        launched = float((run_dir / "persistent" / f"iperf3-{g['src']}-{g['dst']}.launched").read_text()) - \
            plan["t0_unix"]
        print(f"  launched at t0 + {launched:.2f} s, first SYN {syns[0] - launched:.2f} s later")
        assert start_s <= launched <= start_s + 1.5, launched
        assert launched <= syns[0], (launched, syns)
        # The network's part: the nine groups connect at once through the 8-packet buffer beside the short
        # flows, so a set-up can lose its SYN or SYN-ACK and wait out the initial RTO, backing off, once or
        # more (CI, with 3 s, saw groups connect 6 s and 9 s late). That is TCP, not the runner, so the test does not
        # bound it; it asks that iperf3's start stamp (whole seconds) is the captured handshake's, i.e. no
        # delay other than the network's, and that the group connected before the traffic ended.
        assert connected - 1 <= started <= connected + 1, (started, connected)
        assert connected < spec["duration_s"], connected
        got = persistent.parse_iperf3_json(json.dumps(raw))
        assert len(got["streams"]) == g["streams"] and all(st["bytes"] > 0 for st in got["streams"])
        assert got["congestion"] == "cubic"
        total += got["received_mbps"]
    print(f"persistent flows: {total:.2f} Mb/s together")
    assert 3 <= total <= 10.5       # they fill most of the 10 Mb/s bottleneck beside a 0.2 load of short flows
    assert (run_dir / "flows" / "client-a1.csv").is_file()


def _control_handshake(pcap: Path, src_ip: str, dst_ip: str, port: int) -> tuple[list[float], float]:
    """From a sender's capture: the times of the SYNs of an iperf3 client's control connection (its first
    connection to dst_ip:port) and of the first ACK that completes that connection's handshake."""
    from analysis.pcapread import ACK, SYN, read_pcap
    sport, syns = None, []
    for p in read_pcap(pcap):
        if p.src != src_ip or p.dst != dst_ip or p.dport != port:
            continue
        if sport is None and p.flags & SYN:
            sport = p.sport
        if p.sport != sport:
            continue
        if p.flags & SYN:
            syns.append(p.t)
        elif p.flags & ACK:
            return syns, p.t
    raise AssertionError(f"{pcap.name}: no completed handshake {src_ip} -> {dst_ip}:{port} (SYNs at {syns})")


@pytest.mark.guest
@pytest.mark.slow
def test_chain_run_end_to_end(guest, tmp_path):
    """Scenario chain (Section 8) in the guest: five 10 Mb/s hops, the AQM at hop 1 only, two cross flows per
    hop (the paper has ten; two keep the TCG guest's CPU in budget), the reference user for 30 s. This
    module's guest is the bare image (no sch_favor: the pipeline's provisioning builds it), so hop 1 runs
    FQ-CoDel, a qdisc of the stock kernel that no other hop has, to show where the AQM sits."""
    from topologies import chain
    from orchestrate import schedule
    from contract.schedule import read_schedule, write_schedule
    ssh, t = guest
    spec = chain_spec(hops=5, cross_flows_per_hop=2, cross_delays_ms=[10, 50])
    spec.update(duration_s=30, warmup_s=5, drain_s=10, trace_favor=False,
                run_id="chain-10M-buf8-pareto30-paper-reno_fq_codel_load0.00_iw2_rep0",
                aqm={"name": "fq_codel", "forward": {"kind": "fq_codel", "args": ["limit", "8"]},
                     "reverse": {"kind": "pfifo", "args": ["limit", "8"]}})
    spec["workload"]["warmup_cross_s"] = 5
    (tmp_path / "run.json").write_text(json.dumps(spec))
    meta, flows = schedule.generate(0, 10, spec["duration_s"], spec["seed"], "pareto:shape=1.3,mean_pkts=30",
                                    reverse_load=0, topology="chain")
    write_schedule(tmp_path / "schedule.csv", meta, flows)
    run_dir = tmp_path / "runs" / spec["run_id"]
    t0 = time.time()
    run_dir = _made_again_if_its_probes_failed(ssh, tmp_path / "run.json", tmp_path / "schedule.csv", run_dir)
    print(f"wall time of a {spec['duration_s']} s chain run: {time.time() - t0:.0f} s")
    hj = chain.hosts_json(spec["topology"])
    for f in ("run.json", "schedule.csv", "hosts.json", "manifest.json", "fidelity.json", "cpu.json",
              "qdisc/before.json", "qdisc/after.json", "log/runner.log", "flows/client-us.csv",
              "flows/server-ur.csv", "cross/plan.json", "DONE"):
        assert (run_dir / f).is_file(), f
    for p in chain.capture_points(spec["topology"]):
        assert (run_dir / "pcap" / f"{p}.pcap").stat().st_size > 24, p
    for h in hj["hosts"]:
        assert set(json.loads((run_dir / "nstat" / f"{h}.json").read_text())) == {"before", "after"}
    fid = json.loads((run_dir / "fidelity.json").read_text())
    checks = fid["checks"]
    print(json.dumps({k: v.get("measured") for k, v in checks.items() if k not in ("tcp_applied",)}, default=str))
    rtt = checks["rtt_us-ur_ms"]["measured"]
    print(f"reference path idle RTT: {rtt} ms (configured 110)")
    # The delays are the topology's (topologies/tests/test_chain.py reads them from its tc commands). Measured,
    # the idle RTT is never below them, and within 5 ms of them unless the run's own RTT check failed the run: a
    # starved TCG guest delays every ping (120.4 ms once, in CI on a slow host), and such a run is no result.
    assert rtt >= 110 - 0.5, rtt
    assert abs(rtt - 110) < 5 or (not checks["rtt_us-ur_ms"]["ok"] and fid["valid"] is False), (rtt, fid)
    rate = checks["bottleneck_rate_mbps"]["measured"]
    print(f"hop rate (x1s1 -> x1r): {rate:.2f} Mb/s")
    assert abs(rate - 10) <= 1.0
    assert checks["cross_flows"] == {"configured": 10, "measured": 10, "ok": True}, checks["cross_flows"]
    assert checks["reference_loop"]["ok"], checks["reference_loop"]
    import csv
    with open(run_dir / "flows" / "client-us.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    done = [r for r in rows if r["outcome"] == "completed"]
    print(f"reference user: {len(done)} of {len(rows)} flows completed")
    assert len(done) >= 5
    # schedule.csv is now the reference user's flows, by flow id, as extraction joins them
    smeta, sflows = read_schedule(run_dir / "schedule.csv")
    assert smeta["generator"] == "workloads.reference" and int(smeta["seed"]) == spec["seed"]
    assert [f.flow_id for f in sflows] == [int(r["flow_id"]) for r in rows]
    assert {(f.src, f.dst, f.kind) for f in sflows} == {("us", "ur", "reference")}
    # the AQM's leaf sits at hop 1 only (r0-next), and it carried the reference and cross traffic; every
    # other hop's queue is pfifo
    after = json.loads((run_dir / "qdisc" / "after.json").read_text())
    aqm = [(r, q) for r, qs in after.items() for q in qs if q.get("kind") == "fq_codel"]
    assert [(r, q["dev"]) for r, q in aqm] == [("r0", "r0-next")], aqm
    assert aqm[0][1]["packets"] > 1000, aqm
    for k in range(2, 6):
        kinds = {q["kind"] for q in after[f"r{k - 1}"] if q.get("dev") == f"r{k - 1}-next"}
        assert "pfifo" in kinds and "htb" in kinds, (k, kinds)


# AQMs whose traffic test is elsewhere: favorlab's qdiscs (sch_favor, sch_run2c, sch_las, sch_riops, sch_qsdrr) in the qdisc
# package's guest suite
# (qdisc/tests/test_guest.py)
# and the smoke pipeline, the P4 programs' on BMv2 (p4/tests)
# and the A/A twins, whose dataplane is their original's (config/aqms.yaml twin_of)
AQMS_TESTED_ELSEWHERE = {"favor", "favourtail", "favor_burst1", "run2c", "las", "riops", "qsdrr", "tdrr", "p4-favorqueue", "p4-droptail",
                         "droptail_twin", "favor_twin"}


def _linux_aqms() -> dict:
    from orchestrate import runspec
    topo = dict(SPEC["topology"])
    return {n: runspec.aqm_setup(n, topo)["forward"] for n in runspec.read_aqms()
            if n not in AQMS_TESTED_ELSEWHERE}


def test_every_aqm_has_a_traffic_test():
    """A new entry in config/aqms.yaml is put through traffic in the guest (test_linux_aqms_carry_traffic)
    unless its own suite does it."""
    from orchestrate import runspec
    assert set(_linux_aqms()) | AQMS_TESTED_ELSEWHERE == set(runspec.read_aqms())
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


@pytest.mark.guest
def test_initial_rto_in_guest(guest):
    """The same check in the guest's stock Debian kernel (HZ from /boot/config-*)."""
    ssh, t = guest
    out = subprocess.run(["ssh", *ssh.opts, ssh.dest, PROBE_SH.format(repo="/opt/favorlab")],
                         capture_output=True, text=True, timeout=120)
    _assert_rto(*_parse_rto(out.stdout + out.stderr))
