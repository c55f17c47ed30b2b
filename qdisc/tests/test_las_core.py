"""The LAS queueing core (las_core.h, the code sch_las.c runs) against an independent model of Least
Attained Service written from its definition, on every branch and on long random sequences."""
import ctypes
import random

import pytest

from qdisc.tests import harness

ENQUEUED, DROP_ARRIVAL, PUSHOUT_VICTIM = range(3)      # enum las_verdict
COUNTERS = ["enqueued", "drop_arrival", "pushouts", "drop_limit", "flow_resets"]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    lib = harness.build(tmp_path_factory, "las_harness")
    lib.h_served.restype = ctypes.c_uint64
    lib.h_qlen.restype = lib.h_flows.restype = ctypes.c_uint32
    return lib


class Core(harness.Core):
    """The C core; packets are ints."""
    COUNTERS = COUNTERS

    def __init__(self, lib, limit, buckets=1024):
        super().__init__(lib)
        assert lib.h_init(limit, buckets) == 0

    def enqueue(self, pid, bucket, tag, length=1000):
        v = ctypes.c_int()
        verdict = self.lib.h_enqueue(pid, bucket, ctypes.c_uint32(tag), length, ctypes.byref(v))
        return verdict, (v.value if v.value >= 0 else None)

    def reset(self):
        self.lib.h_reset()

    def set_seq(self, seq):
        self.lib.h_set_seq(ctypes.c_uint32(seq))

    def flows(self):
        return self.lib.h_flows()

    def served(self, bucket):
        return self.lib.h_served(bucket)

    def check(self):
        return self.lib.h_check()


class Model:
    """LAS from its definition, on one Python list of the queued packets (scanned, no heaps).

    A packet's priority value p is its flow's attained service (bytes served) plus its bytes queued
    when it arrives. Dequeue: the smallest (p, arrival); full queue: the largest (p, arrival) is
    dropped, the arrival if it is that packet. A bucket with nothing queued that a packet of another
    tag reaches starts over (served 0); a bucket is shared while packets are queued (a collision)."""

    def __init__(self, limit):
        self.limit = limit
        self.q = []                 # [pid, bucket, p, arrival, len]
        self.served, self.tag = {}, {}
        self.arrivals = 0
        self.c = dict.fromkeys(COUNTERS, 0)

    def enqueue(self, pid, bucket, tag, length=1000):
        mine = [e for e in self.q if e[1] == bucket]
        if not mine and self.tag.get(bucket, 0) != tag:
            self.served[bucket], self.tag[bucket] = 0, tag
            self.c["flow_resets"] += 1
        p = self.served.get(bucket, 0) + sum(e[4] for e in mine)
        arrival, self.arrivals = self.arrivals, self.arrivals + 1
        victim = None
        if len(self.q) >= self.limit:
            last = max(self.q, key=lambda e: (e[2], e[3]))
            if (p, arrival) > (last[2], last[3]):          # the arrival is the one LAS serves last
                self.c["drop_arrival"] += 1
                return DROP_ARRIVAL, None
            self.q.remove(last)
            victim = last[0]
            self.c["pushouts"] += 1
        self.q.append([pid, bucket, p, arrival, length])
        self.c["enqueued"] += 1
        return ENQUEUED, victim

    def dequeue(self):
        if not self.q:
            return None
        first = min(self.q, key=lambda e: (e[2], e[3]))
        self.q.remove(first)
        self.served[first[1]] += first[4]
        return first[0]

    def set_limit(self, limit):
        self.limit, out = limit, []
        while len(self.q) > limit:
            last = max(self.q, key=lambda e: (e[2], e[3]))
            self.q.remove(last)
            out.append(last[0])
            self.c["drop_limit"] += 1
        return out

    def reset(self):
        self.q, self.served, self.tag = [], {}, {}

    def flows(self):
        return len({e[1] for e in self.q})


# ---------------------------------------------------------------- every branch, by hand

A, B, C = 0xA, 0xB, 0xC                                  # tags; bucket n is used with tag n


def test_new_flow_is_served_before_an_old_one(lib):
    c = Core(lib, limit=10)
    for pid in (1, 2, 3):                                # flow A: p = 0, 1000, 2000
        c.enqueue(pid, 1, A)
    assert c.dequeue() == 1                              # A has 1000 bytes of service
    assert c.enqueue(4, 2, B) == (ENQUEUED, None)        # new flow B: p = 0
    assert [c.dequeue() for _ in range(4)] == [4, 2, 3, None]
    assert c.served(1) == 3000 and c.served(2) == 1000
    assert c.check() == 0


def test_fifo_within_a_flow(lib):
    c = Core(lib, limit=10)
    for pid, length in [(1, 1500), (2, 40), (3, 576), (4, 1500)]:
        c.enqueue(pid, 5, A, length)
    assert c.flows() == 1
    assert [c.dequeue() for _ in range(5)] == [1, 2, 3, 4, None]
    assert c.served(5) == 1500 + 40 + 576 + 1500


def test_equal_priorities_leave_in_arrival_order(lib):
    c = Core(lib, limit=10)
    for pid, bucket in [(1, 3), (2, 1), (3, 2)]:         # three new flows, p = 0 each
        c.enqueue(pid, bucket, bucket)
    c.enqueue(4, 1, 1, 500)                              # p 1000
    c.enqueue(5, 2, 2, 1000)                             # p 1000, later
    assert [c.dequeue() for _ in range(5)] == [1, 2, 3, 4, 5]


def test_overflow_drops_the_arrival_with_the_largest_priority(lib):
    c = Core(lib, limit=2)
    c.enqueue(1, 1, A)                                   # p 0
    c.enqueue(2, 2, B)                                   # p 0
    c.dequeue()                                          # A served 1000
    c.enqueue(3, 3, C)                                   # p 0
    assert c.enqueue(4, 1, A) == (DROP_ARRIVAL, None)    # p 1000 > every queued p
    assert c.counters()["drop_arrival"] == 1
    assert [c.dequeue() for _ in range(3)] == [2, 3, None]


def test_overflow_ties_drop_the_arrival(lib):
    c = Core(lib, limit=2)
    c.enqueue(1, 1, A)
    c.enqueue(2, 2, B)
    assert c.enqueue(3, 3, C) == (DROP_ARRIVAL, None)    # p 0 like both queued: the newest loses
    assert c.counters()["flow_resets"] == 3              # the dropped packet's flow took bucket 3


def test_overflow_pushes_out_the_tail_of_the_most_served_flow(lib):
    c = Core(lib, limit=4)
    for pid in (1, 2, 3):                                # A: p 0, 1000, 2000
        c.enqueue(pid, 1, A)
    c.enqueue(4, 2, B, 500)                              # B: p 0
    assert c.enqueue(5, 3, C) == (ENQUEUED, 3)           # C p 0 < 2000: A's tail goes
    assert c.enqueue(6, 2, B) == (ENQUEUED, 2)           # B p 500 < 1000, A's new tail
    assert c.enqueue(7, 3, C) == (DROP_ARRIVAL, None)    # C p 1000 > 500, B's tail
    assert c.counters()["pushouts"] == 2
    assert c.check() == 0
    assert [c.dequeue() for _ in range(5)] == [1, 4, 5, 6, None]
    assert c.served(1) == 1000                           # pushed-out packets are not service


def test_arrival_of_the_flow_with_the_largest_priority_is_dropped(lib):
    c = Core(lib, limit=3)
    c.enqueue(1, 1, A)
    c.enqueue(2, 1, A)                                   # A's tail: p 1000
    c.enqueue(3, 2, B, 40)
    assert c.enqueue(4, 1, A, 40) == (DROP_ARRIVAL, None)   # its own flow holds the largest p
    assert c.enqueue(5, 2, B, 40) == (ENQUEUED, 2)       # B p 40 < 1000
    assert [c.dequeue() for _ in range(4)] == [1, 3, 5, None]


def test_a_flow_resuming_with_the_same_tag_keeps_its_service(lib):
    c = Core(lib, limit=10)
    c.enqueue(1, 1, A, 1500)
    c.dequeue()                                          # bucket 1 idle, A served 1500
    c.enqueue(2, 2, B, 1000)
    c.enqueue(3, 2, B, 1000)                             # B: p 0, 1000
    assert c.enqueue(4, 1, A, 100) == (ENQUEUED, None)   # A resumes: p 1500
    assert c.counters()["flow_resets"] == 2              # A's and B's first packets only
    assert c.served(1) == 1500
    assert [c.dequeue() for _ in range(3)] == [2, 3, 4]


def test_another_tag_on_an_idle_bucket_starts_a_new_flow(lib):
    c = Core(lib, limit=10)
    c.enqueue(1, 1, A, 1500)
    c.dequeue()                                          # bucket 1 idle, A served 1500
    c.enqueue(2, 2, B, 1000)
    c.enqueue(3, 2, B, 1000)                             # B: p 0, 1000
    assert c.enqueue(4, 1, C, 100) == (ENQUEUED, None)   # C takes bucket 1: p 0
    assert c.counters()["flow_resets"] == 3
    assert c.served(1) == 0
    assert [c.dequeue() for _ in range(3)] == [2, 4, 3]
    assert c.enqueue(5, 1, A) == (ENQUEUED, None)        # A is back: a new flow again
    assert c.counters()["flow_resets"] == 4 and c.served(1) == 0


def test_collision_with_queued_packets_shares_the_state(lib):
    c = Core(lib, limit=10, buckets=1)
    c.enqueue(1, 0, A)                                   # p 0
    c.enqueue(2, 0, B)                                   # other flow, same bucket, A queued: p 1000
    assert c.counters()["flow_resets"] == 1 and c.flows() == 1
    assert c.dequeue() == 1
    c.enqueue(3, 0, A)                                   # p 2000 (B's bytes count)
    assert [c.dequeue() for _ in range(3)] == [2, 3, None]
    assert c.served(0) == 3000
    assert c.enqueue(4, 0, A) == (ENQUEUED, None)        # A still owns the bucket: no reset
    assert c.counters()["flow_resets"] == 1 and c.served(0) == 3000


def test_limit_one(lib):
    c = Core(lib, limit=1)
    assert c.enqueue(1, 1, A) == (ENQUEUED, None)
    assert c.enqueue(2, 1, A) == (DROP_ARRIVAL, None)    # own flow
    assert c.enqueue(3, 2, B) == (DROP_ARRIVAL, None)    # tie at p 0
    assert c.dequeue() == 1
    c.enqueue(4, 1, A)                                   # p 1000
    assert c.enqueue(5, 2, B) == (ENQUEUED, 4)           # p 0 pushes it out
    assert c.qlen() == 1 and c.flows() == 1
    assert [c.dequeue() for _ in range(2)] == [5, None]


def test_lowering_the_limit_drops_the_largest_priorities_first(lib):
    c = Core(lib, limit=10)
    for pid, bucket in [(1, 1), (2, 1), (3, 1), (4, 2), (5, 2), (6, 3)]:
        c.enqueue(pid, bucket, bucket)                   # p: 1:0 2:1000 3:2000 4:0 5:1000 6:0
    assert c.set_limit(2) == [3, 5, 2, 6]                # 2000; 1000 newest first; then 0 newest
    assert c.counters()["drop_limit"] == 4
    assert c.flows() == 2 and c.check() == 0
    assert [c.dequeue() for _ in range(3)] == [1, 4, None]


def test_peek_is_the_next_dequeue_and_changes_nothing(lib):
    c = Core(lib, limit=10)
    assert c.peek() is None
    c.enqueue(1, 1, A)
    c.enqueue(2, 1, A)
    c.enqueue(3, 2, B)
    for want in (1, 3, 2):
        before = (c.qlen(), c.flows(), c.served(1), c.served(2), c.counters())
        assert c.peek() == c.peek() == want
        assert (c.qlen(), c.flows(), c.served(1), c.served(2), c.counters()) == before
        assert c.dequeue() == want
    assert c.peek() is None


def test_reset_empties_the_queue_and_forgets_service(lib):
    c = Core(lib, limit=10)
    c.enqueue(1, 1, A)
    c.enqueue(2, 1, A)
    c.dequeue()
    c.enqueue(3, 2, B)
    counters = c.counters()
    c.reset()
    assert (c.qlen(), c.flows(), c.peek(), c.served(1)) == (0, 0, None, 0)
    assert c.counters() == counters                      # neither served nor dropped
    assert c.enqueue(4, 1, A) == (ENQUEUED, None)        # A starts over as a new flow
    assert c.counters()["flow_resets"] == counters["flow_resets"] + 1


def test_sequence_numbers_wrap(lib):
    c = Core(lib, limit=3)
    c.set_seq(2**32 - 2)
    for pid, bucket in [(1, 1), (2, 2), (3, 3)]:         # seq 2^32-2, 2^32-1, 0; p 0 each
        c.enqueue(pid, bucket, bucket)
    assert c.enqueue(4, 4, 4) == (DROP_ARRIVAL, None)    # tie: the newest loses
    assert [c.dequeue() for _ in range(4)] == [1, 2, 3, None]   # seq 0 is after 2^32-1
    c = Core(lib, limit=3)
    c.set_seq(2**32 - 1)
    for pid, bucket in [(1, 1), (2, 2), (3, 3)]:         # seq 2^32-1, 0, 1
        c.enqueue(pid, bucket, bucket)
    assert c.set_limit(1) == [3, 2]                      # newest first across the wrap


# ---------------------------------------------------------------- random sequences vs the model

def run_random(lib, seed, steps=3000):
    rng = random.Random(seed)
    limit = rng.choice([1, 2, 3, 5, 8, 16, 83, 200, 1000])
    nflows = rng.choice([1, 2, 3, 10, 50, 500])
    buckets = rng.choice([1, 2, 7, 64]) if rng.random() < 0.3 else 1024   # few buckets: collisions
    fixed = rng.random() < 0.4                           # one packet length: many equal priorities
    renew = rng.choice([0, 0.01, 0.1])                   # a flow's slot taken by a new flow (new tag)
    tags = [rng.getrandbits(32) for _ in range(nflows)]
    homes = [rng.randrange(buckets) for _ in range(nflows)]
    core, model = Core(lib, limit, buckets), Model(limit)
    if rng.random() < 0.3:
        core.set_seq(2**32 - rng.randrange(1, 2 * steps))   # the tie-break crosses the wrap
    p_arrive = rng.uniform(0.3, 0.9)                     # underload and overload
    for pid in range(steps):
        if rng.random() < p_arrive:
            f = min(int(rng.paretovariate(1.2)) - 1, nflows - 1) if rng.random() < 0.5 else rng.randrange(nflows)
            if rng.random() < renew:
                tags[f] = rng.getrandbits(32)
            length = 1500 if fixed else rng.randint(40, 1500)
            got = core.enqueue(pid, homes[f], tags[f], length)
            want = model.enqueue(pid, homes[f], tags[f], length)
            assert got == want, f"seed {seed} step {pid}: enqueue flow {f}: core {got} model {want}"
        else:
            # peek (what tbf/hfsc parents call) names the packet dequeue then returns, changing nothing
            peeked, qlen, flows = core.peek(), core.qlen(), core.flows()
            assert (core.qlen(), core.flows()) == (qlen, flows)
            got, want = core.dequeue(), model.dequeue()
            assert peeked == got, f"seed {seed} step {pid}: peek {peeked} then dequeue {got}"
            assert got == want, f"seed {seed} step {pid}: dequeue core {got} model {want}"
        if rng.random() < 0.002:
            new = rng.choice([1, 2, 5, limit, limit * 2])
            assert core.set_limit(new) == model.set_limit(new), f"seed {seed}: set_limit {new}"
        if rng.random() < 0.0005:
            core.reset()
            model.reset()
        assert core.qlen() == len(model.q) and core.flows() == model.flows(), f"seed {seed} step {pid}"
        assert core.counters() == model.c, f"seed {seed} step {pid}"
        assert core.check() == 0, f"seed {seed} step {pid}: invariant {core.check()}"
    assert all(core.served(b) == model.served.get(b, 0) for b in set(homes))
    while (got := core.dequeue()) is not None:
        assert got == model.dequeue()
    assert model.dequeue() is None
    assert core.counters() == model.c
    return model.c


@pytest.mark.parametrize("seed", range(60))
def test_random_sequences_match_model(lib, seed):
    run_random(lib, seed)


def test_random_sequences_exercise_every_branch(lib):
    total = harness.every_branch_total(run_random, lib, range(60), COUNTERS)
    assert all(total[k] > 0 for k in total), total
