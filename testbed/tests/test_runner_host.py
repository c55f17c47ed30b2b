"""Runner: the host's state (TCP profile, initial-RTO program, qdisc modules, kernel log), the CPU and
memory sampling, and starting a process in the run's cgroup."""
import json
import os
import shutil
import shlex
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from contract.tests.examples import SPEC
from testbed.runner import bpf, cpu, hoststate, processes
from topologies import tc


REPO = Path(__file__).resolve().parents[2]


def test_paper_profile_sysctls_and_routes():
    s = hoststate.tcp_sysctls(SPEC["tcp"])
    assert s["net.ipv4.tcp_congestion_control"] == "reno"
    assert s["net.ipv4.tcp_sack"] == 0 and s["net.ipv4.tcp_early_retrans"] == 0
    assert s["net.ipv4.tcp_recovery"] == 0 and s["net.ipv4.tcp_no_metrics_save"] == 1
    r = hoststate.route_opts(SPEC["tcp"])
    assert r[:2] == ["initcwnd", "2"] and "quickack" in r


def test_linux_profile_keeps_kernel_defaults():
    tcp = dict(SPEC["tcp"], profile="linux", congestion_control="cubic", delayed_ack=True)
    assert hoststate.tcp_sysctls(tcp) == {"net.ipv4.tcp_no_metrics_save": 1, "net.ipv4.tcp_congestion_control": "cubic"}
    # the congestion control is an axis for both profiles
    assert hoststate.tcp_sysctls(dict(tcp, congestion_control="bbr"))["net.ipv4.tcp_congestion_control"] == "bbr"
    assert "quickack" not in hoststate.route_opts(tcp)


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


def test_stale_module_fails_the_run_naming_both_versions(tmp_path):
    """Issue 15: modinfo's srcversion is the file on disk; a run must not go on with an older build still
    loaded (the role ignores a failed rmmod), and the manifest records what is loaded."""
    d = tmp_path / "module" / "sch_favor"
    d.mkdir(parents=True)
    (d / "srcversion").write_text("AAAA1111\n")
    assert hoststate.check_loaded_module("sch_favor", tmp_path, modinfo="AAAA1111\n") == "AAAA1111"
    with pytest.raises(hoststate.StaleModule, match=r"sch_favor: the loaded module \(srcversion AAAA1111\) is not the "
                                                 r"installed one \(BBBB2222\).*rmmod sch_favor"):
        hoststate.check_loaded_module("sch_favor", tmp_path, modinfo="BBBB2222\n")
    with pytest.raises(hoststate.StaleModule, match="modinfo found none"):
        hoststate.check_loaded_module("sch_favor", tmp_path, modinfo="")
    # not loaded (or built in): nothing to compare
    assert hoststate.check_loaded_module("sch_las", tmp_path, modinfo="CCCC") is None
    # the manifest names the module as loaded (sysfs), whatever file is on disk
    (d / "version").write_text("0.9.0\n")
    assert hoststate.loaded_module("sch_favor", tmp_path) == {"version": "0.9.0", "srcversion": "AAAA1111"}
    assert hoststate.loaded_module("sch_las", tmp_path) is None


def test_kernel_log_sees_only_what_came_after_it(tmp_path):
    """A fifo stands in for /dev/kmsg: what is read is each record's level and message; WARNING lines fail."""
    kmsg = tmp_path / "kmsg"
    os.mkfifo(kmsg)
    w = os.open(kmsg, os.O_RDWR | os.O_NONBLOCK)
    log = hoststate.KernelLog(str(kmsg))
    os.write(w, b"6,101,5000,-;eth0: link up\n")
    os.write(w, b"4,102,5001,-;WARNING: CPU: 0 PID: 1 at net/sched/sch_generic.c:1 dev_watchdog\n")
    c = log.check()["kernel_warnings"]
    os.close(w)
    assert c["ok"] is False and c["measured"]["lines"] == 1 and c["measured"]["first"][0].startswith("<4> WARNING")


def test_cpu_check_flags_sustained_saturation():
    c = cpu.CpuSampler()
    c.samples = [0.5] * 80 + [0.95] * 20
    assert not c.check()["cpu_busy"]["ok"]
    c.samples = [0.5] * 95 + [0.99] * 5
    assert c.check()["cpu_busy"]["ok"]


def test_sampler_keeps_the_most_memory_in_use(monkeypatch):
    """The peak, not the last sample: the guest's memory size is chosen from it."""
    seq = iter([(2000, 300), (2000, 900), (2000, 400)])
    monkeypatch.setattr(cpu, "mem_used_mib", lambda: next(seq))
    c = cpu.CpuSampler()
    c.halt.wait = lambda t, _n=iter([False, False, True]): next(_n)   # two samples, then halt
    c.run()
    assert (c.mem_total, c.mem_peak) == (2000, 900)


def test_slab_growth_judges_the_unreclaimable_slab_and_records_the_caches_beside_it(monkeypatch):
    """A leak (kmalloc, skbs) grows SUnreclaim; the caches an hour of captures fills (SReclaimable) are
    recorded, not judged."""
    meminfo = "Slab:  102400 kB\nSReclaimable:   61440 kB\nSUnreclaim:   40960 kB\n"
    assert cpu.slab_mib(meminfo=meminfo) == 40.0 and cpu.slab_mib("SReclaimable", meminfo) == 60.0
    assert cpu.slab_mib("Nope", meminfo) != cpu.slab_mib("Nope", meminfo)       # nan: not there
    for unreclaimable, ok in ((45.0, True), (40.0 + cpu.SLAB_GROWTH_MIB + 1, False)):
        vals = {"SUnreclaim": iter([40.0, unreclaimable]), "SReclaimable": iter([60.0, 200.0])}
        monkeypatch.setattr(cpu, "slab_mib", lambda field="SUnreclaim", meminfo=None: next(vals[field]))
        monkeypatch.setattr(cpu, "mem_used_mib", lambda: (2000, 500))
        c = cpu.CpuSampler().check()["slab_growth"]
        assert c["ok"] is ok and c["measured"]["reclaimable_end_mib"] == 200.0, c


def test_mem_used_reads_this_host():
    total, used = cpu.mem_used_mib()
    assert 0 < used < total


def test_cpu_breakdown_charges_each_process_group_its_own_ticks():
    """cpu.json is what the report's CPU breakdown is read from: the shares must be each group's ticks
    over all ticks, a process that started inside the window counted from zero, a reused PID not mixed up."""
    modes0, modes1 = [100, 0, 50, 850, 0, 0, 0, 0], [400, 0, 150, 1150, 0, 0, 300, 0]   # 1000 ticks
    procs0 = {(10, "5"): ("python3", "python3 -m workloads.client --host a1", 100, 10),
              (11, "6"): ("tcpdump", "tcpdump -i a1-eth0", 5, 5),
              (12, "7"): ("python3", "python3 -m workloads.server", 0, 0)}
    procs1 = {(10, "5"): ("python3", "python3 -m workloads.client --host a1", 300, 60),
              (11, "6"): ("tcpdump", "tcpdump -i a1-eth0", 25, 85),
              (12, "900"): ("python3", "python3 -m workloads.client --host a2", 40, 0),   # same PID, new process
              (13, "8"): ("ksoftirqd/1", cpu.KTHREAD, 0, 50)}
    b = cpu.cpu_breakdown(modes0, modes1, procs0, procs1)
    assert b["window_ticks"] == 1000
    assert b["modes"]["user"] == 0.3 and b["modes"]["softirq"] == 0.3 and b["modes"]["idle"] == 0.3
    g = {r["group"]: r for r in b["processes"]}
    assert g["workload client"]["share"] == round((200 + 50 + 40) / 1000, 4) and g["workload client"]["processes"] == 2
    assert g["tcpdump"] == {"group": "tcpdump", "user": 0.02, "system": 0.08, "share": 0.1, "processes": 1}
    assert g["kernel threads (ksoftirqd)"]["share"] == 0.05
    assert "workload server" not in g      # it ended before the window closed and used nothing in it
    assert [r["group"] for r in b["processes"]][0] == "workload client"


def test_proc_ticks_reads_this_process():
    me = [v for (pid, _), v in cpu.proc_ticks().items() if pid == os.getpid()]
    assert len(me) == 1 and me[0][2] + me[0][3] > 0    # pytest has used CPU by now


def test_an_exited_process_keeps_its_group():
    """A client that has exited but is not reaped yet shows an empty command line: its time must stay
    with the workload client, not become a nameless group."""
    procs = {(10, "5"): ("python3", "python3 -m workloads.client --host a1", 100, 10)}
    cpu.merge_ticks(procs, {(10, "5"): ("python3", "", 300, 60), (11, "6"): ("tcpdump", "tcpdump -i x", 1, 1)})
    assert procs[(10, "5")] == ("python3", "python3 -m workloads.client --host a1", 300, 60)
    assert cpu.process_group("python3", "") == "python3"        # never taken for a kernel thread
    me = [v for (pid, _), v in cpu.proc_ticks().items() if pid == os.getpid()][0]
    assert me[1] != cpu.KTHREAD
    kthreads = [v for v in cpu.proc_ticks().values() if v[1] == cpu.KTHREAD]
    assert any(v[0] == "kthreadd" for v in kthreads)                # PID 2, the kernel threads' parent


def test_popen_in_a_cgroup_moves_the_process_itself_before_it_runs(tmp_path):
    """The shell writes its own PID to cgroup.procs and then execs the command (same PID), so the
    workload's first socket is already the cgroup's. A plain file stands in for cgroup.procs here."""
    (tmp_path / "cgroup.procs").write_text("")
    p = processes.popen(["true"], cgroup=tmp_path)
    assert p.wait(timeout=10) == 0
    assert (tmp_path / "cgroup.procs").read_text().split() == [str(p.pid)]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                    reason="needs root and unshare(1) for a network namespace of the test's own")
def test_a_hosts_tcp_profile_sets_every_sysctl_and_route_and_reads_them_back_in_one_shell():
    """tcp_host_script in a network namespace of its own (a veth port standing in for a1-eth0): every
    sysctl of the profile set, both routes carrying the initial window, the values read back in
    readback_keys' order; a value the kernel refuses ends the script with an error."""
    info = {"intf": "a1-eth0", "ip": "10.0.1.1", "gw": "10.0.1.254"}
    tcp = dict(SPEC["tcp"], iw=10)
    setup = ("ip link add a1-eth0 type veth peer name a1-peer && ip link set a1-peer up && ip addr add 10.0.1.1/24 dev a1-eth0 && ip link set a1-eth0 up && "
             "ip route add default via 10.0.1.254 dev a1-eth0")
    p = subprocess.run(["unshare", "-n", "sh", "-c", f"{setup} && sh -c {shlex.quote(hoststate.tcp_host_script(tcp, info))}"
                        " && echo == && ip route show"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    values, _, routes = p.stdout.partition("==\n")
    got = dict(zip(hoststate.readback_keys(tcp), values.splitlines()))
    assert {k: got[k] for k in hoststate.tcp_sysctls(tcp)} == {k: str(v) for k, v in hoststate.tcp_sysctls(tcp).items()}
    assert "reno" in got["net.ipv4.tcp_available_congestion_control"].split()
    route = dict((l.split()[0], l) for l in routes.splitlines())
    for r in (route["default"], route["10.0.1.0/24"]):
        assert "initcwnd 10 " in r + " " and "initrwnd 10" in r, r
    bad = subprocess.run(["unshare", "-n", "sh", "-c", f"{setup} && sh -c "
                          f"{shlex.quote(hoststate.tcp_host_script(dict(tcp, congestion_control='nosuchcc'), info))}"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and not bad.stdout.strip(), (bad.stdout, bad.stderr)
    # a kept network's reset of the host first, in the same shell: its output kept off the values, and a reset
    # that fails ends the script before the profile; the TCP metrics a connection before it cached are flushed
    reset = tc.node_script([(["tc", "qdisc", "replace", "dev", "a1-eth0", "root", "pfifo", "limit", "7"], True, None),
                            (["echo", "noise"], True, None),
                            (["tc", "qdisc", "del", "dev", "a1-eth0", "root"], True, None),
                            (["tc", "qdisc", "add", "dev", "a1-eth0", "root", "pfifo", "limit", "9"], True, None)])
    connection = ("import socket; s = socket.socket(); s.bind(('10.0.1.1', 5000)); s.listen(); "
                  "c = socket.create_connection(('10.0.1.1', 5000)); a, _ = s.accept(); c.sendall(b'x' * 100000); "
                  "a.recv(100000); c.close(); a.close()")
    kept = subprocess.run(["unshare", "-n", "sh", "-c", f"{setup} && ip link set lo up && {sys.executable} -c "
                           f"{shlex.quote(connection)} && sleep 0.2 && ip tcp_metrics show && echo == && "
                           f"sh -c {shlex.quote(hoststate.tcp_host_script(tcp, info, reset))}"
                           " && echo == && tc qdisc show dev a1-eth0 && echo == && ip tcp_metrics show"],
                          capture_output=True, text=True, timeout=60)
    assert kept.returncode == 0, kept.stderr
    cached, values, qdisc, left = kept.stdout.split("==\n")
    assert cached.startswith("10.0.1.1 ") and not left.strip(), (cached, left)
    assert dict(zip(hoststate.readback_keys(tcp), values.splitlines())) == got and "noise" in kept.stderr
    assert "pfifo" in qdisc and "limit 9" in qdisc, qdisc
    broken = tc.node_script([(["tc", "qdisc", "del", "dev", "a1-eth0", "root"], True, None)])    # none to delete
    bad = subprocess.run(["unshare", "-n", "sh", "-c", f"{setup} && sh -c {shlex.quote(hoststate.tcp_host_script(tcp, info, broken))}"
                          " ; cat /proc/sys/net/ipv4/tcp_sack"], capture_output=True, text=True, timeout=60)
    assert hoststate.tcp_sysctls(tcp)["net.ipv4.tcp_sack"] == 0
    assert "failed: tc qdisc del dev a1-eth0 root" in bad.stderr and bad.stdout.split() == ["1"], (bad.stdout, bad.stderr)


def test_the_state_before_and_after_reads_every_router_at_once_and_each_hosts_counters(monkeypatch, tmp_path):
    """qdisc_stats_and_nstat: tc's JSON per router, all in flight together (the slowest read bounds the
    wait), a read that is not JSON kept as raw text; each host's counters from its namespace's /proc/<pid>/net
    (a folder standing in for it here), a host whose namespace is gone named in "raw"."""
    import threading
    from testbed.runner import hoststate
    inflight, most = [0], [0]
    lock = threading.Lock()

    def fake_out(argv, node=None, env=None, **kw):
        with lock:
            inflight[0] += 1
            most[0] = max(most[0], inflight[0])
        time.sleep(0.2)
        with lock:
            inflight[0] -= 1
        assert argv[0] == "tc" and env["TC_LIB_DIR"] == "/usr/local/lib/favorlab/tc"
        return "tc: broken" if node.name == "r1" else '[{"kind": "pfifo", "node": "%s"}]' % node.name
    monkeypatch.setattr(hoststate, "out", fake_out)
    (tmp_path / "proc").mkdir()
    for pid in (11, 12):
        d = tmp_path / "proc" / str(pid) / "net"
        d.mkdir(parents=True)
        (d / "snmp").write_text(f"Tcp: RtoMin ActiveOpens\nTcp: 200 {pid}\n")
        (d / "netstat").write_text("TcpExt: TCPTimeouts\nTcpExt: 4\n")
    monkeypatch.setattr(hoststate, "proc_net", lambda node: tmp_path / "proc" / str(node.pid) / "net")
    nodes = {n: type("Node", (), {"name": n, "pid": pid})() for n, pid in (("rl", 1), ("rr", 2), ("r1", 3),
                                                                            ("a1", 11), ("a2", 12), ("b1", 13))}
    net = type("Net", (), {"get": staticmethod(nodes.get)})()
    t = time.time()
    q, n = hoststate.qdisc_stats_and_nstat(net, ("rl", "rr", "r1"), ["a1", "a2", "b1"])
    assert time.time() - t < 0.5 and most[0] == 3
    assert list(q) == ["rl", "rr", "r1"] and q["rr"] == [{"kind": "pfifo", "node": "rr"}] and q["r1"] == {"raw": "tc: broken"}
    assert n["a1"] == {"kernel": {"TcpActiveOpens": 11, "TcpExtTCPTimeouts": 4}} and n["a2"]["kernel"]["TcpActiveOpens"] == 12
    assert "/proc/13/net" in n["b1"]["raw"]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("nstat"),
                    reason="needs root, unshare(1) and nstat(8) for a network namespace of the test's own")
def test_a_hosts_counters_are_what_nstat_prints_for_its_namespace():
    """snmp_counters reads /proc/<pid>/net itself instead of starting nstat in each host: in a namespace of the
    test's own, idle (so its counters stand still), the same counters with the same values as
    `nstat -a -z -j`, the constants nstat leaves out left out alike."""
    holder = subprocess.Popen(["unshare", "-n", "sleep", "60"])
    try:
        for _ in range(100):
            if os.readlink(f"/proc/{holder.pid}/ns/net") != os.readlink("/proc/self/ns/net"):
                break
            time.sleep(0.05)
        got = hoststate.snmp_counters(Path(f"/proc/{holder.pid}/net"))
        p = subprocess.run(["nsenter", "-t", str(holder.pid), "-n", "nstat", "-a", "-z", "-j"], capture_output=True,
                           text=True, env=dict(os.environ, NSTAT_HISTORY="/dev/null"), timeout=30)
        want = json.loads(p.stdout)
    finally:
        holder.kill()
        holder.wait()
    assert got == want and len(got["kernel"]) > 100 and "TcpExtTCPTimeouts" in got["kernel"]

def test_the_runners_work_counters_read_this_machines_cpu_time_and_forks():
    a = cpu.work_counters()
    subprocess.run(["true"], check=True)
    b = cpu.work_counters()
    assert b["forks"] >= a["forks"] + 1 and b["cpu_s"] >= a["cpu_s"] > 0
