"""RuN2C's core (run2c_core.h, the code sch_run2c.c runs) against an independent model written from the
description of RuN2C (Avrachenkov et al. 2004, as the FavorQueue paper uses it: threshold 20 packets, push-out
to protect the short flows' packets), on every branch and on long random sequences."""
import ctypes
import random

import pytest

from qdisc.tests import harness

HIGH, LOW, _, DROP_HIGH, DROP_LOW = range(5)      # enum favor_verdict: favored = high, standard = low
COUNTERS = ["high", "low", "pushouts", "drop_high", "drop_low", "drop_limit", "syns", "unknown_flow", "no_tcp",
            "takeovers"]
MSS = 1448
ISN = 1_000_000


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return harness.build(tmp_path_factory, "run2c_harness")


class Core(harness.Core):
    """The C core; packets are ints."""
    COUNTERS = COUNTERS

    def __init__(self, lib, limit, buckets=1024, threshold=20, mss=MSS):
        super().__init__(lib)
        assert lib.h_init(limit, buckets, threshold, mss) == 0

    def enqueue(self, pid, bucket, tcp=True, syn=False, seq=0, tag=None):
        v = ctypes.c_int()
        tag = bucket if tag is None else tag
        verdict = self.lib.h_enqueue(pid, bucket, int(tcp), int(syn), ctypes.c_uint32(seq % 2**32),
                                     ctypes.c_uint32(tag), ctypes.byref(v))
        return verdict, (v.value if v.value >= 0 else None)

    def set_threshold(self, threshold, mss=MSS):
        self.lib.h_set_threshold(threshold, mss)

    def high_qlen(self):
        return self.lib.h_high_qlen()


class Model:
    """RuN2C as described: a packet whose running number in its flow is below the threshold is high,
    others low; high served first; a high arrival to a full buffer pushes out a low packet (the last
    one). The running number is the sequence number minus the ISN seen in the flow's SYN (kept per table
    entry, as the qdisc can only keep it). One Python list in service order, scanned."""

    def __init__(self, limit, threshold=20, mss=MSS):
        self.limit, self.threshold, self.mss = limit, threshold, mss
        self.q = []                  # [pid, high] in service order
        self.isn = {}                # bucket -> (tag, isn)
        self.c = dict.fromkeys(COUNTERS, 0)

    def is_high(self, bucket, tcp, syn, seq, tag):
        if not tcp:
            self.c["no_tcp"] += 1
            return False
        if syn:
            if self.isn.get(bucket, (tag,))[0] != tag:
                self.c["takeovers"] += 1
            self.isn[bucket] = (tag, seq % 2**32)
            self.c["syns"] += 1
            return True
        if self.isn.get(bucket, (None,))[0] != tag:
            self.c["unknown_flow"] += 1
            return False
        running = (seq - self.isn[bucket][1] - 1) % 2**32     # the first data byte is number 0
        return running < self.threshold * self.mss

    def enqueue(self, pid, bucket, tcp=True, syn=False, seq=0, tag=None):
        high = self.is_high(bucket, tcp, syn, seq, bucket if tag is None else tag)
        full = len(self.q) >= self.limit
        if high:
            victim = None
            if full:
                lows = [i for i, (_, h) in enumerate(self.q) if not h]
                if not lows:
                    self.c["drop_high"] += 1
                    return DROP_HIGH, None
                victim = self.q.pop(lows[-1])[0]
                self.c["pushouts"] += 1
            first_low = next((i for i, (_, h) in enumerate(self.q) if not h), len(self.q))
            self.q.insert(first_low, [pid, True])
            self.c["high"] += 1
            return HIGH, victim
        if full:
            self.c["drop_low"] += 1
            return DROP_LOW, None
        self.q.append([pid, False])
        self.c["low"] += 1
        return LOW, None

    def dequeue(self):
        return self.q.pop(0)[0] if self.q else None

    def set_limit(self, limit):
        """Excess dropped low packets first (newest first), then high (newest first)."""
        self.limit, out = limit, []
        while len(self.q) > limit:
            lows = [i for i, (_, h) in enumerate(self.q) if not h]
            out.append(self.q.pop(lows[-1] if lows else len(self.q) - 1)[0])
            self.c["drop_limit"] += 1
        return out


def data(k, isn=ISN):
    """The sequence number of a flow's k-th full-sized data segment (k = 0 first)."""
    return isn + 1 + k * MSS


# ---------------------------------------------------------------- every branch, by hand

def test_first_threshold_packets_of_a_flow_are_high_the_rest_low(lib):
    c = Core(lib, limit=100)
    assert c.enqueue(0, 5, syn=True, seq=ISN) == (HIGH, None)          # the SYN-ACK: ISN learnt
    verdicts = [c.enqueue(1 + k, 5, seq=data(k))[0] for k in range(22)]
    assert verdicts == [HIGH] * 20 + [LOW] * 2
    assert c.counters()["syns"] == 1


def test_the_threshold_is_in_bytes_of_sequence_space(lib):
    c = Core(lib, limit=100, threshold=2, mss=1000)
    c.enqueue(0, 1, syn=True, seq=ISN)
    assert c.enqueue(1, 1, seq=ISN + 1 + 1999)[0] == HIGH            # last byte number below 2000
    assert c.enqueue(2, 1, seq=ISN + 1 + 2000)[0] == LOW
    c.set_threshold(3, 1000)                                         # tc qdisc change applies at once
    assert c.enqueue(3, 1, seq=ISN + 1 + 2000)[0] == HIGH


def test_high_is_served_before_low_fifo_within_each(lib):
    c = Core(lib, limit=100, threshold=1)
    c.enqueue(0, 1, syn=True, seq=ISN)                 # high
    c.enqueue(1, 1, seq=data(1))                       # low (past the first packet)
    c.enqueue(2, 1, seq=data(2))                       # low
    c.enqueue(3, 2, syn=True, seq=7)                   # another flow's SYN-ACK: high
    c.enqueue(4, 2, seq=8)                             # its first data packet: high
    assert [c.dequeue() for _ in range(6)] == [0, 3, 4, 1, 2, None]


def test_flow_whose_syn_was_not_seen_is_low(lib):
    c = Core(lib, limit=10)
    assert c.enqueue(1, 3, seq=data(0))[0] == LOW
    assert c.counters()["unknown_flow"] == 1


def test_packet_without_tcp_header_is_low(lib):
    c = Core(lib, limit=10)
    assert c.enqueue(1, 3, tcp=False)[0] == LOW
    assert c.counters()["no_tcp"] == 1


def test_sequence_numbers_wrap(lib):
    c = Core(lib, limit=100)
    isn = 2**32 - 100
    c.enqueue(0, 1, syn=True, seq=isn)
    assert c.enqueue(1, 1, seq=(isn + 1 + 3 * MSS) % 2**32)[0] == HIGH     # past the wrap, packet 4
    assert c.enqueue(2, 1, seq=(isn + 1 + 25 * MSS) % 2**32)[0] == LOW
    assert c.enqueue(3, 1, seq=isn)[0] == LOW           # before the first data byte: not of this flow's start


def test_retransmission_of_an_early_packet_overtakes_the_flows_low_packets(lib):
    """RuN2C reorders a flow on purpose: a retransmitted early segment goes to the high class."""
    c = Core(lib, limit=100, threshold=2)
    c.enqueue(0, 1, syn=True, seq=ISN)
    c.enqueue(1, 1, seq=data(5))                       # low
    assert c.enqueue(2, 1, seq=data(1))[0] == HIGH      # retransmission of packet 2
    assert [c.dequeue() for _ in range(3)] == [0, 2, 1]


def test_another_flows_syn_in_the_same_bucket_takes_the_entry(lib):
    """A hash collision: the later SYN's flow is followed, the earlier flow's packets read as unknown, and
    `takeovers` counts it; the same flow's SYN again (same tag) is no takeover."""
    c = Core(lib, limit=100, buckets=1)
    c.enqueue(0, 0, syn=True, seq=ISN, tag=111)
    c.enqueue(1, 0, syn=True, seq=ISN, tag=111)        # the SYN retransmitted
    assert c.counters()["takeovers"] == 0
    assert c.enqueue(2, 0, seq=data(0), tag=111)[0] == HIGH
    c.enqueue(3, 0, syn=True, seq=5, tag=222)          # collision: flow 222 now owns the entry
    assert c.enqueue(4, 0, seq=data(1), tag=111)[0] == LOW
    assert c.enqueue(5, 0, seq=6, tag=222)[0] == HIGH
    assert {k: c.counters()[k] for k in ("syns", "takeovers", "unknown_flow")} == \
        {"syns": 3, "takeovers": 1, "unknown_flow": 1}


def test_high_arrival_to_full_queue_pushes_out_the_last_low_packet(lib):
    c = Core(lib, limit=3, threshold=1)
    c.enqueue(0, 1, syn=True, seq=ISN)                 # high
    c.enqueue(1, 1, seq=data(3))                       # low
    c.enqueue(2, 1, seq=data(4))                       # low
    assert c.enqueue(3, 2, syn=True, seq=9) == (HIGH, 2)
    assert c.counters()["pushouts"] == 1
    assert [c.dequeue() for _ in range(4)] == [0, 3, 1, None]


def test_high_arrival_dropped_when_only_high_packets_queued(lib):
    c = Core(lib, limit=2)
    c.enqueue(0, 1, syn=True, seq=ISN)
    c.enqueue(1, 2, syn=True, seq=ISN)
    assert c.enqueue(2, 3, syn=True, seq=ISN) == (DROP_HIGH, None)
    assert c.counters()["drop_high"] == 1


def test_low_arrival_dropped_when_full(lib):
    c = Core(lib, limit=1)
    c.enqueue(0, 1, tcp=False)
    assert c.enqueue(1, 1, tcp=False) == (DROP_LOW, None)
    assert c.counters()["drop_low"] == 1


def test_lowering_limit_drops_low_newest_first_then_high(lib):
    c = Core(lib, limit=10, threshold=1)
    c.enqueue(0, 1, syn=True, seq=ISN)                 # high
    c.enqueue(1, 1, seq=data(2))                       # low
    c.enqueue(2, 1, seq=data(3))                       # low
    c.enqueue(3, 2, syn=True, seq=1)                   # high
    assert c.set_limit(1) == [2, 1, 3]
    assert c.counters()["drop_limit"] == 3
    assert [c.dequeue() for _ in range(2)] == [0, None]


# ---------------------------------------------------------------- random sequences vs the model

def run_random(lib, seed, steps=3000):
    rng = random.Random(seed)
    limit = rng.choice([1, 2, 3, 5, 8, 16, 83, 200])
    threshold = rng.choice([1, 2, 20, 50])
    nflows = rng.choice([1, 3, 10, 100])
    buckets = rng.choice([1, 4, 64, 1024])
    core, model = Core(lib, limit, buckets, threshold), Model(limit, threshold)
    isn = {f: rng.randrange(2**32) for f in range(nflows)}
    sent = dict.fromkeys(range(nflows), 0)             # next segment number per flow
    p_arrive = rng.uniform(0.3, 0.9)
    for pid in range(steps):
        if rng.random() < p_arrive:
            flow = rng.randrange(nflows)
            kind = rng.random()
            if kind < 0.03:
                args = dict(tcp=False)
            elif kind < 0.10 or sent[flow] == 0:
                if rng.random() < 0.3:                  # a new connection reuses the flow's slot
                    isn[flow] = rng.randrange(2**32)
                args = dict(syn=True, seq=isn[flow])
                sent[flow] = max(sent[flow], 1)
            else:
                k = rng.randrange(sent[flow]) if rng.random() < 0.1 else sent[flow]    # a retransmission
                sent[flow] = max(sent[flow], k + 1)
                args = dict(seq=(isn[flow] + 1 + k * MSS) % 2**32)
            bucket, tag = flow % buckets, 1000 + flow
            got, want = core.enqueue(pid, bucket, tag=tag, **args), model.enqueue(pid, bucket, tag=tag, **args)
            assert got == want, f"seed {seed} step {pid}: enqueue flow {flow} {args}: core {got} model {want}"
        else:
            peeked, qlen = core.peek(), core.qlen()
            assert core.qlen() == qlen
            got, want = core.dequeue(), model.dequeue()
            assert peeked == got and got == want, f"seed {seed} step {pid}: peek {peeked} core {got} model {want}"
        if rng.random() < 0.002:
            new = rng.choice([1, 2, 5, limit, limit * 2])
            assert core.set_limit(new) == model.set_limit(new), f"seed {seed}: set_limit {new}"
        assert core.qlen() == len(model.q)
        assert core.high_qlen() == sum(h for _, h in model.q)
    while (got := core.dequeue()) is not None:
        assert got == model.dequeue()
    assert model.dequeue() is None
    assert core.counters() == model.c
    return model.c


@pytest.mark.parametrize("seed", range(40))
def test_random_sequences_match_model(lib, seed):
    run_random(lib, seed)


def test_random_sequences_exercise_every_branch(lib):
    total = harness.every_branch_total(run_random, lib, range(40), COUNTERS)
    assert all(total[k] > 0 for k in total), total
