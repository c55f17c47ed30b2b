"""The DRR/TDRR/QSDRR queueing core (qsdrr_core.h, the code sch_qsdrr.c runs) against an independent model
written from Kantawala and Turner's Section 2 and Figure 1 and from Shreedhar and Varghese's DRR, on every
branch of each discard policy and on long random sequences."""
import collections
import ctypes
import random

import pytest

from qdisc.tests import harness

QSDRR, TDRR, DRR = range(3)                              # enum qsdrr_policy
POLICIES = {"qsdrr": QSDRR, "tdrr": TDRR, "drr": DRR}
COUNTERS = ["enqueued", "front_drops", "drop_own", "drop_limit", "new_flows", "turns",
            "q_set", "q_reselect", "q_kept", "rescales"]
SECOND = 10**9


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    lib = harness.build(tmp_path_factory, "qsdrr_harness")
    lib.h_init.argtypes = [ctypes.c_uint32] * 4 + [ctypes.c_uint64]
    lib.h_dequeue.argtypes = [ctypes.c_uint64]
    lib.h_thr.restype = ctypes.c_uint64
    lib.h_qlen.restype = lib.h_flows.restype = lib.h_deficit.restype = ctypes.c_uint32
    return lib


class Core(harness.Core):
    """The C core; packets are ints."""
    COUNTERS = COUNTERS

    def __init__(self, lib, limit, policy=QSDRR, buckets=1024, quantum=1500, halflife=SECOND):
        super().__init__(lib)
        assert lib.h_init(limit, buckets, quantum, policy, halflife) == 0

    def enqueue(self, pid, bucket, length=1000):
        v = self.lib.h_enqueue(pid, bucket, length)
        return None if v < 0 else v

    def dequeue(self, now=0):
        r = self.lib.h_dequeue(now)
        return None if r < 0 else r

    def set_quantum(self, quantum):
        self.lib.h_set_quantum(quantum)

    def reset(self):
        self.lib.h_reset()

    def flows(self):
        return self.lib.h_flows()

    def q(self):
        r = self.lib.h_q()
        return None if r < 0 else r

    def thr(self, bucket):
        return self.lib.h_thr(bucket)

    def check(self):
        return self.lib.h_check()


class Model:
    """The three policies from the paper, on Python lists (every choice scanned, no heaps).

    DRR: the non-empty queues in a round robin list; when a queue's turn comes its deficit grows by the
    quantum and it sends head packets while they fit in the deficit; then the next queue's turn. An empty
    queue leaves the list with deficit 0; a queue that gets a packet joins the list's end.
    Full buffer (limit packets): the policy picks a non-empty queue, its oldest packet is dropped, the
    arrival is queued. drr: the longest (packets); tdrr: the highest throughput; qsdrr: Figure 1's Q.
    Ties: the lowest bucket. Throughput: bytes served, halved with every half-life that passes, kept as
    whole bytes at the scale of a base epoch moved every 16 half-lives (rounded down then)."""

    def __init__(self, limit, policy=QSDRR, quantum=1500, halflife=SECOND):
        self.limit, self.policy, self.quantum, self.halflife = limit, policy, quantum, halflife
        self.queue = collections.defaultdict(collections.deque)   # bucket -> [(pid, len)], oldest first
        self.round = []                                  # the non-empty queues, the one whose turn it is first
        self.begun = False                               # round[0]'s turn has begun
        self.deficit = collections.defaultdict(int)
        self.Q = None
        self.thr = collections.defaultdict(int)
        self.base = 0
        self.c = dict.fromkeys(COUNTERS, 0)

    def qlen(self):
        return sum(len(x) for x in self.queue.values())

    def nonempty(self):
        return [b for b, x in self.queue.items() if x]

    def longest(self):
        return max(self.nonempty(), key=lambda b: (len(self.queue[b]), -b))

    def choose(self):
        if self.policy == DRR:
            return self.longest()
        if self.policy == TDRR:
            return max(self.nonempty(), key=lambda b: (self.thr[b], -b))
        if self.Q is None:
            self.Q = self.longest()
            self.c["q_set"] += 1
        elif all(len(self.queue[self.Q]) < len(self.queue[o]) for o in self.nonempty() if o != self.Q):
            self.Q = self.longest()
            self.c["q_reselect"] += 1
        else:
            self.c["q_kept"] += 1
        return self.Q

    def emptied(self, b):
        if self.round[0] == b:
            self.begun = False
        self.round.remove(b)
        self.deficit[b] = 0
        if self.Q == b:
            self.Q = None

    def drop_front(self, b):
        pid, _ = self.queue[b].popleft()
        if not self.queue[b]:
            self.emptied(b)
        return pid

    def enqueue(self, pid, bucket, length=1000):
        victim = None
        if self.qlen() >= self.limit:
            b = self.choose()
            victim = self.drop_front(b)
            self.c["front_drops"] += 1
            self.c["drop_own"] += b == bucket
        self.queue[bucket].append((pid, length))
        if len(self.queue[bucket]) == 1:
            self.round.append(bucket)
            self.c["new_flows"] += 1
        self.c["enqueued"] += 1
        return victim

    def next_queue(self):
        while True:
            b = self.round[0]
            if not self.begun:
                self.deficit[b] += self.quantum
                self.begun = True
                self.c["turns"] += 1
            if self.queue[b][0][1] <= self.deficit[b]:
                return b
            self.begun = False
            self.round.append(self.round.pop(0))

    def peek(self):
        return self.queue[self.next_queue()][0][0] if self.round else None

    def dequeue(self, now=0):
        if not self.round:
            return None
        b = self.next_queue()
        pid, length = self.queue[b].popleft()
        self.deficit[b] -= length
        if self.policy == TDRR:
            epoch = now // self.halflife
            if epoch - self.base >= 16:
                for x in self.thr:
                    self.thr[x] >>= epoch - self.base
                self.base = epoch
                self.c["rescales"] += 1
            self.thr[b] += length * 2 ** max(epoch - self.base, 0)
        if not self.queue[b]:
            self.emptied(b)
        return pid

    def set_limit(self, limit):
        self.limit, out = limit, []
        while self.qlen() > limit:
            out.append(self.drop_front(self.choose()))
            self.c["drop_limit"] += 1
        return out

    def reset(self):
        for b in list(self.round):
            while self.queue[b]:
                self.drop_front(b)
        self.thr.clear()
        self.base = 0


# ---------------------------------------------------------------- DRR, by hand

def test_round_robin_with_deficits(lib):
    c = Core(lib, limit=10, quantum=1500)
    for pid, bucket in [(1, 1), (2, 1), (3, 1), (4, 2), (5, 2), (6, 2)]:
        c.enqueue(pid, bucket, 1000)
    # A: 1500 -> sends 1, 500 left; B: sends 4; A: 2000 -> 2, 3; B: 2000 -> 5, 6
    assert [c.dequeue() for _ in range(7)] == [1, 4, 2, 3, 5, 6, None]
    assert c.counters()["turns"] == 4 and c.counters()["new_flows"] == 2
    assert c.check() == 0


def test_fifo_within_a_flow(lib):
    c = Core(lib, limit=10)
    for pid, length in [(1, 1500), (2, 40), (3, 576), (4, 1500)]:
        c.enqueue(pid, 5, length)
    assert c.flows() == 1
    assert [c.dequeue() for _ in range(5)] == [1, 2, 3, 4, None]


def test_a_queue_joins_the_end_of_the_round(lib):
    c = Core(lib, limit=10, quantum=1000)
    for pid, bucket in [(1, 1), (2, 1), (3, 2), (4, 2)]:
        c.enqueue(pid, bucket)
    assert c.dequeue() == 1                              # A's turn ends (deficit 0 < 1000)
    c.enqueue(5, 3)                                      # C joins behind B
    assert [c.dequeue() for _ in range(5)] == [3, 5, 2, 4, None]


def test_an_emptied_queue_loses_its_deficit(lib):
    c = Core(lib, limit=10, quantum=1500)
    c.enqueue(1, 1, 100)
    c.enqueue(2, 2, 1500)
    assert c.dequeue() == 1 and lib.h_deficit(1) == 0    # A emptied with 1400 left: reset
    c.enqueue(3, 1, 1500)
    c.enqueue(4, 1, 1500)
    assert [c.dequeue() for _ in range(4)] == [2, 3, 4, None]


@pytest.mark.parametrize("quantum", [300, 1500, 4000])
def test_drr_byte_shares_of_backlogged_flows_within_one_quantum(lib, quantum):
    sizes = {1: 64, 2: 576, 3: 1500, 4: 1000}
    c = Core(lib, limit=4000, quantum=quantum)
    pid, owner = 0, {}
    for b, size in sizes.items():
        for _ in range(50):
            pid += 1
            owner[pid] = b
            c.enqueue(pid, b, size)
    served = dict.fromkeys(sizes, 0)
    prev = None
    for _ in range(3000):
        p = c.dequeue()
        b = owner[p]
        if b == 1 and prev != 1:
            # a round begins: every flow had k turns, k quanta less a deficit smaller than its next packet
            # (and than the quantum, as long as a packet fits in one)
            assert max(served.values()) - min(served.values()) < max(quantum, 1500), served
        served[b] += sizes[b]
        prev = b
        pid += 1                                         # refilled: every flow stays backlogged
        owner[pid] = b
        c.enqueue(pid, b, sizes[b])
    assert c.qlen() > 0                                  # backlogged throughout


# ---------------------------------------------------------------- discard policies, by hand

def fill(c, spec):
    """spec: [(bucket, packets)], packet ids bucket*100 + i, in that order."""
    for bucket, n in spec:
        for i in range(n):
            c.enqueue(bucket * 100 + i, bucket)


def test_drr_drops_the_front_of_the_longest_queue(lib):
    c = Core(lib, limit=6, policy=DRR)
    fill(c, [(1, 2), (2, 3), (3, 1)])
    assert c.enqueue(900, 4) == 200                      # B's oldest packet
    assert c.enqueue(901, 3) == 100                      # A, B at 2: the lower bucket
    assert c.counters()["front_drops"] == 2 and c.counters()["drop_own"] == 0
    assert c.check() == 0


def test_the_arrivals_own_queue_loses_its_front_and_the_arrival_is_queued(lib):
    c = Core(lib, limit=4, policy=DRR)
    fill(c, [(1, 3), (2, 1)])
    assert c.enqueue(900, 1) == 100
    assert c.counters()["drop_own"] == 1
    assert [c.dequeue() for _ in range(5)] == [101, 200, 102, 900, None]   # quantum 1500, 1000-byte packets


def test_qsdrr_keeps_dropping_from_q_until_q_is_the_shortest(lib):
    c = Core(lib, limit=10, policy=QSDRR)
    fill(c, [(1, 5), (2, 3), (3, 2)])
    drops = [c.enqueue(900 + i, 4) for i in range(5)]
    # Q := A (5). A 4 vs 3 2 1: keep; A 3 vs 3 2 2: keep; A 2 vs 3 2 3, tied with C: keep;
    # A 1 < 3 2 4: Q := the longest now, D (its own queue)
    assert drops == [100, 101, 102, 103, 900]
    assert c.counters()["q_set"] == 1 and c.counters()["q_kept"] == 3 and c.counters()["q_reselect"] == 1
    assert c.q() == 4 and c.counters()["drop_own"] == 1
    d = Core(lib, limit=10, policy=DRR)                  # plain DRR drops from the longest each time
    fill(d, [(1, 5), (2, 3), (3, 2)])
    assert [d.enqueue(900 + i, 4) for i in range(5)] == [100, 101, 102, 200, 900]


def test_qsdrr_q_alone_is_reselected_to_itself(lib):
    c = Core(lib, limit=2, policy=QSDRR)
    fill(c, [(1, 2)])
    assert c.enqueue(900, 1) == 100 and c.q() == 1       # q_set
    assert c.enqueue(901, 1) == 101 and c.q() == 1       # no other queue: shorter than all of none
    assert c.counters()["q_reselect"] == 1


def test_qsdrr_q_is_undefined_once_its_queue_empties(lib):
    c = Core(lib, limit=4, policy=QSDRR, quantum=3000)
    fill(c, [(1, 3), (2, 1)])
    assert c.enqueue(900, 2) == 100 and c.q() == 1
    assert [c.dequeue() for _ in range(2)] == [101, 102]  # A served empty
    assert c.q() is None
    fill(c, [(1, 2)])                                    # a new flow in the same bucket
    assert c.enqueue(901, 3) == 100                      # Q set anew: A and B at 2, A the lower bucket
    assert c.counters()["q_set"] == 2


def test_tdrr_drops_from_the_queue_of_highest_throughput(lib):
    c = Core(lib, limit=6, policy=TDRR, quantum=3000)
    fill(c, [(1, 3), (2, 1)])
    assert [c.dequeue(10) for _ in range(3)] == [100, 101, 102]   # A served 3000 bytes
    assert c.thr(1) == 3000 and c.thr(2) == 0
    for pid, bucket in [(110, 1), (210, 2), (211, 2), (212, 2), (300, 3)]:
        c.enqueue(pid, bucket)                           # A 1, B 4 (the longest), C 1
    assert c.enqueue(900, 3) == 110                      # A had the highest throughput
    assert c.enqueue(901, 3) == 200                      # A gone: B and C at 0, B the lower bucket


def test_tdrr_throughput_halves_every_halflife(lib):
    c = Core(lib, limit=10, policy=TDRR, quantum=10**6, halflife=1000)
    fill(c, [(1, 4), (2, 4)])
    c.dequeue(0)                                         # A: 1000 in epoch 0
    c.dequeue(999)                                       # A: 2000
    c.dequeue(2000)                                      # A: + 1000 << 2 (two half-lives later)
    assert c.thr(1) == 6000                              # 1500 bytes at epoch 2 (250 + 250 + 1000), times 4
    for _ in range(5):
        c.dequeue(2000)                                  # A's last, then B's 4
    assert (c.thr(1), c.thr(2)) == (10000, 16000)
    c.enqueue(1, 1)
    c.enqueue(2, 2)
    c.dequeue(16000)                                     # epoch 16: both shifted by 16 (to 0), then A's 1000
    assert (c.thr(1), c.thr(2), c.counters()["rescales"]) == (1000, 0, 1)
    c.enqueue(3, 1)                                      # behind B's 2 in the round
    c.dequeue(16999)                                     # B's 2, the same epoch: weight 1
    assert (c.thr(1), c.thr(2)) == (1000, 1000)
    c.dequeue(2**62)                                     # far later: everything before is 0; A's 3
    assert (c.thr(1), c.thr(2), c.counters()["rescales"]) == (1000, 0, 2)


def test_limit_trimming_drops_by_the_policy(lib):
    for policy, want in [(DRR, [100, 200, 101]), (QSDRR, [100, 101, 102]), (TDRR, [100, 101, 102])]:
        c = Core(lib, limit=10, policy=policy)
        fill(c, [(1, 3), (2, 3), (3, 1)])
        assert c.set_limit(4) == want, policy
        assert c.counters()["drop_limit"] == 3 and c.qlen() == 4 and c.check() == 0


def test_limit_one(lib):
    for policy in (QSDRR, TDRR, DRR):
        c = Core(lib, limit=1, policy=policy)
        assert c.enqueue(1, 1) is None
        assert c.enqueue(2, 2) == 1                      # the only queue loses its packet
        assert c.enqueue(3, 2) == 2                      # own queue
        assert c.qlen() == 1 and c.flows() == 1
        assert [c.dequeue() for _ in range(2)] == [3, None]


def test_peek_is_the_next_dequeue(lib):
    c = Core(lib, limit=10, quantum=1000)
    assert c.peek() is None
    fill(c, [(1, 2), (2, 1)])
    for want in (100, 200, 101):
        assert c.peek() == c.peek() == want
        assert c.dequeue() == want
    assert c.peek() is None


def test_reset_empties_the_queue_and_forgets_throughput(lib):
    c = Core(lib, limit=10, policy=TDRR)
    fill(c, [(1, 2), (2, 1)])
    c.dequeue(5)
    counters = c.counters()
    c.reset()
    assert (c.qlen(), c.flows(), c.peek(), c.thr(1), c.q()) == (0, 0, None, 0, None)
    assert c.counters() == counters
    assert c.check() == 0


# ---------------------------------------------------------------- random sequences vs the model

def run_random(lib, seed, steps=3000):
    rng = random.Random(seed)
    policy = (QSDRR, TDRR, DRR)[seed % 3]                # 20 seeds each
    limit = rng.choice([1, 2, 3, 5, 8, 16, 83, 200])
    nflows = rng.choice([1, 2, 3, 10, 50, 500])
    buckets = rng.choice([1, 2, 7, 64]) if rng.random() < 0.3 else 1024
    quantum = rng.choice([256, 300, 1500, 4000])
    halflife = rng.choice([1000, 50_000, SECOND])
    fixed = rng.random() < 0.4                           # one packet length: many equal throughputs
    homes = [rng.randrange(buckets) for _ in range(nflows)]
    core, model = Core(lib, limit, policy, buckets, quantum, halflife), Model(limit, policy, quantum, halflife)
    p_arrive = rng.uniform(0.3, 0.9)
    now = rng.choice([0, 2**40])
    for pid in range(steps):
        now += rng.choice([0, 1, 100, 5000, 100_000]) if rng.random() < 0.99 else 2**40
        if rng.random() < p_arrive:
            f = min(int(rng.paretovariate(1.2)) - 1, nflows - 1) if rng.random() < 0.5 else rng.randrange(nflows)
            length = 1500 if fixed else rng.randint(40, 1500)
            got, want = core.enqueue(pid, homes[f], length), model.enqueue(pid, homes[f], length)
            assert got == want, f"seed {seed} step {pid}: enqueue flow {f}: core {got} model {want}"
        else:
            # peek (what tbf/hfsc parents call) runs the round as far as the dequeue would, in both
            peeked = (core.peek(), model.peek()) if rng.random() < 0.3 else None
            assert peeked is None or peeked[0] == peeked[1], f"seed {seed} step {pid}: peek {peeked}"
            got, want = core.dequeue(now), model.dequeue(now)
            assert peeked is None or peeked[0] == got, f"seed {seed} step {pid}: peek {peeked} then dequeue {got}"
            assert got == want, f"seed {seed} step {pid}: dequeue core {got} model {want}"
        if rng.random() < 0.003:
            new = rng.choice([1, 2, 5, limit, limit * 2])
            assert core.set_limit(new) == model.set_limit(new), f"seed {seed}: set_limit {new}"
        if rng.random() < 0.002:
            quantum = rng.choice([256, 1500, 3000])
            core.set_quantum(quantum)
            model.quantum = quantum
        if rng.random() < 0.0005:
            core.reset()
            model.reset()
        assert core.qlen() == model.qlen() and core.flows() == len(model.round), f"seed {seed} step {pid}"
        assert core.q() == model.Q, f"seed {seed} step {pid}"
        assert core.counters() == model.c, f"seed {seed} step {pid}"
        assert core.check() == 0, f"seed {seed} step {pid}: invariant {core.check()}"
    assert all(core.thr(b) == model.thr[b] for b in set(homes))
    while (got := core.dequeue(now)) is not None:
        assert got == model.dequeue(now)
    assert model.dequeue(now) is None
    assert core.counters() == model.c
    return model.c


@pytest.mark.parametrize("seed", range(60))
def test_random_sequences_match_model(lib, seed):
    run_random(lib, seed)


SHARED = ["enqueued", "front_drops", "drop_own", "drop_limit", "new_flows", "turns"]
OWN = {QSDRR: ["q_set", "q_reselect", "q_kept"], TDRR: ["rescales"], DRR: []}


@pytest.mark.parametrize("policy", [QSDRR, TDRR, DRR])
def test_random_sequences_exercise_every_branch(lib, policy):
    total = harness.every_branch_total(run_random, lib, range(policy, 60, 3), COUNTERS)
    assert all(total[k] > 0 for k in SHARED + OWN[policy]), total
    assert all(total[k] == 0 for k in set(COUNTERS) - set(SHARED + OWN[policy])), total
