"""Crafted run directories with known answers (dpkt writes the pcaps)."""
import json
import os
import struct

import dpkt

from analysis.tables.favor import FAVOR_COLS
from qdisc.tools import favor_trace

MSS = 1460
D = 0.05      # one-way delay sender capture -> receiver capture
Q = 0.002     # queueing delay at the bottleneck
E = 1e-5      # bneck-in capture -> the favor qdisc's enqueue (same router, same clock)
HOSTS = {"a1": "10.0.1.1", "b1": "10.0.2.1"}
PATH_RTT_MS = 4   # hosts.json's configured RTT of the path a1-b1 (2 * (0 + 2) ms, the paper's dumbbell)
FORWARD_KIND = {"droptail": "pfifo", "favor": "favor"}  # config/aqms.yaml's forward qdisc of each AQM


def _frame(src, dst, sport, dport, flags, seq, ack, payload, ipid, sack=()):
    tcp = dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq % (1 << 32), ack=ack % (1 << 32), flags=flags,
                       win=65535, data=payload)
    if sack:
        opts = b"\x01\x01\x05" + bytes([2 + 8 * len(sack)]) + b"".join(struct.pack("!II", a, b) for a, b in sack)
        tcp.opts = opts
        tcp.off = 5 + len(opts) // 4
    ip = dpkt.ip.IP(src=bytes(map(int, src.split("."))), dst=bytes(map(int, dst.split("."))), p=6,
                    id=ipid, ttl=64, data=tcp)
    ip.len = len(ip)
    return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=0x0800, data=ip))


class Flow:
    """One push flow a1 -> b1; methods record packets into the capture points with known fates."""

    def __init__(self, run, fid, sport, nseg, isn=1000):
        self.run, self.fid, self.sport, self.nseg, self.isn = run, fid, sport, nseg, isn
        self.ipid = 100
        self.s, self.r = HOSTS["a1"], HOSTS["b1"]
        self.dport = 5001       # the flow server's port; an iperf3 server's for a persistent flow

    def _send(self, t, flags, seq, ack, payload, lost=False, at_bneck=True, verdict=None, pushes_out=None):
        """verdict: the favor trace's enqueue verdict (SyntheticRun(trace=True)); default standard, or
        drop_standard for a lost packet. pushes_out: the flow whose queued packet this arrival pushes out
        (its pushout_victim event comes first, as sch_favor emits them)."""
        self.ipid += 1
        f = _frame(self.s, self.r, self.sport, self.dport, flags, seq, ack, payload, self.ipid)
        self.run.add("sender-a1", t, f)
        if at_bneck:
            self.run.add("bneck-in", t + D / 2, f)
            if self.run.trace:
                if pushes_out is not None:
                    pushes_out.event(t + D / 2 + E, "pushout_victim")
                self.event(t + D / 2 + E, verdict or ("drop_standard" if lost else "standard"))
        if not lost:
            if at_bneck:
                self.run.add("bneck-out", t + D / 2 + Q, f)
            self.run.add("sender-b1", t + D, f)

    def event(self, t, verdict):
        self.run.favor.append((f"{t:.6f}", "rl-eth1", verdict, self.s, self.r, self.sport, self.dport, 6, 0))

    def _recv(self, t, flags, seq, ack, lost=False, sack=()):
        f = _frame(self.r, self.s, self.dport, self.sport, flags, seq, ack, b"", 7, sack)
        self.run.add("sender-b1", t, f)
        if not lost:
            self.run.add("sender-a1", t + D, f)

    def syn(self, t, lost=False, verdict=None):
        self._send(t, dpkt.tcp.TH_SYN, self.isn, 0, b"", lost, verdict=verdict)

    def synack(self, t, lost=False):
        self._recv(t, dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK, 5000, self.isn + 1, lost)

    def data(self, t, i, lost=False, verdict=None, pushes_out=None):
        payload = bytearray(MSS)
        if i == 0:
            payload[:16] = struct.pack("!QQ", self.fid, self.nseg * MSS)
        self._send(t, dpkt.tcp.TH_ACK, self.isn + 1 + i * MSS, 5001, bytes(payload), lost, verdict=verdict,
                   pushes_out=pushes_out)

    def ack(self, t, nseg_acked, lost=False, sack_segs=None):
        """Cumulative ACK of nseg_acked segments; sack_segs=(first, last) adds one SACK block."""
        sack = ()
        if sack_segs:
            sack = ((self.isn + 1 + sack_segs[0] * MSS, self.isn + 1 + (sack_segs[1] + 1) * MSS),)
        self._recv(t, dpkt.tcp.TH_ACK, 5001, self.isn + 1 + nseg_acked * MSS, lost, sack)

    def fin(self, t, verdict=None):
        self._send(t, dpkt.tcp.TH_FIN | dpkt.tcp.TH_ACK, self.isn + 1 + self.nseg * MSS, 5001, b"", verdict=verdict)


class SyntheticRun:
    """A run directory crafted packet by packet (captures, schedule, run.json, favor trace) whose tables are
    known. trace=True: every packet entering the bottleneck also gets its favor-trace enqueue event."""

    def __init__(self, path, profile="paper", warmup_s=1.0, duration_s=40.0, trace=False):
        self.path, self.profile, self.warmup, self.duration, self.trace = path, profile, warmup_s, duration_s, trace
        self.caps = {k: [] for k in ["sender-a1", "sender-b1", "bneck-in", "bneck-out"]}
        self.sched = []
        self.favor = []  # favor-trace rows, columns FAVOR_COLS

    def add(self, point, t, frame):
        self.caps[point].append((t, frame))

    def scheduled(self, fid, nseg, start_s, src="a1", dst="b1", direction="forward"):
        """A schedule row only: the client never started it (nothing on any capture)."""
        self.sched.append((fid, start_s, nseg * MSS, nseg, src, dst, direction, "web"))

    def flow(self, fid, sport, nseg, start_s):
        self.scheduled(fid, nseg, start_s)
        return Flow(self, fid, sport, nseg)

    def write(self, aqm="droptail", valid=True, load=0.5, rep=0, iw=2, buffer_pkts=8, mean_pkts=30):
        os.makedirs(os.path.join(self.path, "pcap"), exist_ok=True)
        os.makedirs(os.path.join(self.path, "qdisc"), exist_ok=True)
        for k, v in self.caps.items():
            with open(os.path.join(self.path, "pcap", k + ".pcap"), "wb") as f:
                w = dpkt.pcap.Writer(f, snaplen=128)
                for t, fr in sorted(v, key=lambda x: x[0]):
                    w.writepkt(fr[:128], ts=t)
        with open(os.path.join(self.path, "schedule.csv"), "w") as f:
            f.write("# seed=1\nflow_id,start_s,size_bytes,size_pkts,src,dst,direction,kind\n")
            for r in sorted(self.sched, key=lambda r: r[1]):
                f.write(",".join(map(str, r)) + "\n")
        forward = "p4" if aqm.startswith("p4-") else FORWARD_KIND.get(aqm, aqm)
        spec = {"run_id": os.path.basename(self.path), "config_name": "test", "scenario": "dumbbell",
                "topology": {"kind": "dumbbell", "bottleneck_mbps": 10, "buffer_pkts": buffer_pkts, "mtu": 1500},
                "aqm": {"name": aqm, "forward": {"kind": forward}},
                "tcp": {"profile": self.profile, "iw": iw, "congestion_control": "reno"}, "load": load,
                "replication": rep, "seed": 1, "duration_s": self.duration, "warmup_s": self.warmup, "drain_s": 20,
                "sizes": {"distribution": "lomax", "shape": 1.3, "mean_pkts": mean_pkts}, "schedule": "schedule.csv"}
        json.dump(spec, open(os.path.join(self.path, "run.json"), "w"))
        json.dump({"hosts": {h: {"ip": ip} for h, ip in HOSTS.items()}, "paths_rtt_ms": {"a1-b1": PATH_RTT_MS}},
                  open(os.path.join(self.path, "hosts.json"), "w"))
        json.dump({"valid": valid, "reasons": [] if valid else ["rate off"], "checks": {}},
                  open(os.path.join(self.path, "fidelity.json"), "w"))
        json.dump({"kernel": "test"}, open(os.path.join(self.path, "manifest.json"), "w"))
        if self.favor:
            with open(os.path.join(self.path, "qdisc", "favor-trace.txt"), "w") as f:
                # as the runner records it (favor_trace.py --raw): trace_pipe's lines, unparsed; they come in
                # time order, and sorted() is stable, so a push-out's victim row stays before the arrival's row
                f.write(f"{favor_trace.RAW_HEADER}0.0\n")
                for r in sorted(self.favor, key=lambda r: float(r[0])):
                    fields = " ".join(f"{k}={v}" for k, v in zip(FAVOR_COLS[1:], r[1:]))
                    f.write(f"          python3-312     [000] b..1. {float(r[0]):.6f}: favor_enqueue: {fields}\n")
                f.write("# lost_events=0\n")
        os.makedirs(os.path.join(self.path, "nstat"), exist_ok=True)
        for h, (b, a) in {"a1": (10, 13), "b1": (0, 1)}.items():
            json.dump({"before": {"kernel": {"TcpExtTCPTimeouts": b, "TcpExtTCPSynRetrans": 0}},
                       "after": {"kernel": {"TcpExtTCPTimeouts": a, "TcpExtTCPSynRetrans": 1}}},
                      open(os.path.join(self.path, "nstat", h + ".json"), "w"))
        open(os.path.join(self.path, "DONE"), "w").close()
        return self.path


def clean(fl, t, acks=True, verdicts=None):
    """Handshake then all segments, each acked one RTT later; returns time after FIN.
    verdicts: favor-trace verdicts of the SYN, each data segment and the FIN (SyntheticRun(trace=True))."""
    v = verdicts or [None] * (fl.nseg + 2)
    fl.syn(t, verdict=v[0])
    fl.synack(t + D)
    t += 2 * D
    for i in range(fl.nseg):
        fl.data(t + i * 0.001, i, verdict=v[1 + i])
    for i in range(fl.nseg):
        fl.ack(t + D + i * 0.001 + 0.0005, i + 1)
    fl.fin(t + 2 * D + 0.01, verdict=v[-1])
    return t + 2 * D + 0.01


def standard_run(path, profile="paper"):
    """Seven flows whose answers are known (see test_extract.py)."""
    run = SyntheticRun(path, profile)
    # 0: clean, 3 segments
    clean(run.flow(0, 40000, 3, 2.0), 2.0)
    # 1: SYN lost once, retransmitted after 3 s
    f = run.flow(1, 40001, 2, 3.0)
    f.syn(3.0, lost=True)
    clean(f, 6.0)
    # 2: tail loss recovered by RTO (second of 2 segments lost, retransmitted after 1 s)
    f = run.flow(2, 40002, 2, 10.0)
    f.syn(10.0); f.synack(10.0 + D); t = 10.0 + 2 * D
    f.data(t, 0); f.data(t + 0.001, 1, lost=True)
    f.ack(t + D, 1)
    f.data(t + 1.2, 1)
    f.ack(t + 1.2 + D, 2)
    f.fin(t + 1.2 + 2 * D)
    # 3: fast retransmit: 6 segments, segment 1 lost, 4 dupacks, then retransmission
    f = run.flow(3, 40003, 6, 15.0)
    f.syn(15.0); f.synack(15.0 + D); t = 15.0 + 2 * D
    for i in range(6):
        f.data(t + i * 0.001, i, lost=(i == 1))
    f.ack(t + D, 1)
    for i in range(2, 6):
        f.ack(t + D + i * 0.001, 1)
    f.data(t + 2 * D + 0.006, 1)
    f.ack(t + 3 * D + 0.006, 6)
    f.fin(t + 3 * D + 0.01)
    # 4: spurious retransmission: all data arrives but the ACK is lost, RTO resends segment 0
    f = run.flow(4, 40004, 1, 20.0)
    f.syn(20.0); f.synack(20.0 + D); t = 20.0 + 2 * D
    f.data(t, 0)
    f.ack(t + D, 1, lost=True)
    f.data(t + 1.0, 0)
    f.ack(t + 1.0 + D, 1)
    f.fin(t + 1.0 + 2 * D)
    # 5: warm-up flow (start 0.5 < warmup 1.0), clean
    clean(run.flow(5, 40005, 2, 0.5), 0.5)
    # 6: cut by the end of the capture: 4 segments, only 2 sent
    f = run.flow(6, 40006, 4, 30.0)
    f.syn(30.0); f.synack(30.0 + D); t = 30.0 + 2 * D
    f.data(t, 0); f.data(t + 0.001, 1)
    return run


def linux_run(path):
    """linux profile: SACK-triggered fast retransmit (1 dupack with SACK) and a tail-loss probe."""
    run = SyntheticRun(path, "linux")
    # 0: 4 segments, segment 1 lost; one SACKed dupack then the retransmission -> FR (SACK-indicated)
    f = run.flow(0, 41000, 4, 2.0)
    f.syn(2.0); f.synack(2.0 + D); t = 2.0 + 2 * D
    for i in range(4):
        f.data(t + i * 0.001, i, lost=(i == 1))
    f.ack(t + D, 1)
    f.ack(t + D + 0.002, 1, sack_segs=(2, 2))
    f.data(t + 2 * D + 0.003, 1)   # the SACKed dupack reaches the sender at t + 2D + 0.002
    f.ack(t + 3 * D + 0.004, 4)
    f.fin(t + 2 * D + 0.01)
    # 1: 3 segments, last lost, probe after 2 RTT (0.2 s) without dupacks -> TLP, not RTO
    f = run.flow(1, 41001, 3, 5.0)
    f.syn(5.0); f.synack(5.0 + D); t = 5.0 + 2 * D
    for i in range(3):
        f.data(t + i * 0.001, i, lost=(i == 2))
    f.ack(t + D + 0.001, 2)
    f.data(t + D + 0.001 + 2 * 2 * D, 2)
    f.ack(t + D + 0.001 + 2 * 2 * D + 2 * D, 3)
    f.fin(t + 1.0)
    return run
