"""RIO-PS's core (riops_core.h, the code sch_riops.c runs) against an independent model written from Guo and
Matta, "The war between mice and elephants" (ICNP 2001: Section III.B-C, Appendix I, Table III) and from RED
as ns-2 defines it (queue/red.cc, queue/rio.cc: the averages' estimator with the idle-time decay, the
"gentle_" dropping function, "wait_" drop spacing, the min_th crossing), on every branch and on long random
sequences driven with the time and the random draws."""
import ctypes
import random
from collections import deque

import pytest

from qdisc.tests import harness

ENQUEUED, MARKED, DROP_EARLY, DROP_FORCED, DROP_LIMIT = range(5)       # enum riops_verdict
QUEUED = (ENQUEUED, MARKED)
SHORT, LONG = 0, 1
COUNTERS = ["enqueued_short", "enqueued_long", "early_short", "early_long", "marked_short", "marked_long",
            "forced_short", "forced_long", "drop_limit", "drop_trim", "flows_seen", "collisions"]
STATE = ["lt", "active_short", "active_long", "qshort", "qavg_short", "qavg_total", "count_short",
         "count_long", "old", "next_tc"]
MS, S = 10**6, 10**9
ONE = 2**32                     # probability 1 in the core's units
UNIT = 2**16                    # one packet in the averages' units
TABLE_III = {SHORT: (150_000, 350_000, 50_000), LONG: (150_000, 500_000, 100_000)}   # ppm of B; P_max
DEFAULTS = dict(lt=20, fixed=False, slr=3, tu=1 * S, tc=10 * S, ecn=False, ptime=800_000)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    lib = harness.build(tmp_path_factory, "riops_harness")
    lib.h_qlen.restype = ctypes.c_uint32
    lib.h_init.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint64]
    lib.h_set.argtypes = [ctypes.c_uint32, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint64,
                          ctypes.c_int, ctypes.c_uint64]
    lib.h_enqueue.argtypes = [ctypes.c_int, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int,
                              ctypes.c_uint32]
    lib.h_dequeue.argtypes = [ctypes.c_uint64]
    lib.h_set_next_tc.argtypes = [ctypes.c_uint64]
    return lib


class Core(harness.Core):
    """The C core; packets are ints; times in ns."""
    COUNTERS = COUNTERS

    def __init__(self, lib, limit, buckets=1024, now=0, **params):
        super().__init__(lib)
        assert lib.h_init(limit, buckets, now) == 0
        p = {**DEFAULTS, **params}
        lib.h_set(p["lt"], int(p["fixed"]), p["slr"], p["tu"], p["tc"], int(p["ecn"]), p["ptime"])
        lib.h_set_next_tc(now + p["tc"])
        for cls, red in p.get("red", {}).items():
            lib.h_set_red(cls, *red)

    def enqueue(self, pid, bucket, tag, now, ect=False, rnd=0):
        return self.lib.h_enqueue(pid, bucket, tag, now, int(ect), rnd)

    def dequeue(self, now=0):
        r = self.lib.h_dequeue(now)
        return None if r < 0 else r

    def reset(self):
        self.lib.h_reset()

    def state(self):
        arr = (ctypes.c_uint64 * len(STATE))()
        self.lib.h_state(arr)
        return dict(zip(STATE, arr))

    def thresholds(self):
        arr = (ctypes.c_uint64 * 6)()
        self.lib.h_thresholds(arr)
        return list(arr)


class Red:
    """One class's RED state and parameters (red.cc's edp_ and edv_)."""

    def __init__(self, ppm):
        self.ppm = ppm
        self.count, self.old = 0, False

    def set_limit(self, limit):
        lo, hi, pmax = self.ppm
        self.min = limit * lo * UNIT // 10**6
        self.max = max(limit * hi * UNIT // 10**6, self.min + 1)      # min_th < max_th
        self.pmax = pmax * ONE // 10**6


class Model:
    """RIO-PS from the paper, one Python deque (the FIFO) of (pid, class). Edge: a flow table entry per
    bucket [tag, packets seen, last seen]; an entry unseen for more than T_u is gone; Short while the count
    is <= L_t; every T_c, each tick on its own, L_t moves by the paper's rule. Core: RIO in ns-2's terms."""

    def __init__(self, limit, now=0, **params):
        p = {**DEFAULTS, **params}
        self.limit = limit
        self.lt, self.fixed, self.slr, self.tu, self.tc = p["lt"], p["fixed"], p["slr"], p["tu"], p["tc"]
        self.ecn, self.ptime = p["ecn"], p["ptime"]
        self.red = {cls: Red(p.get("red", {}).get(cls, TABLE_III[cls])) for cls in (SHORT, LONG)}
        for r in self.red.values():
            r.set_limit(limit)
        self.q = deque()
        self.table = {}
        self.next_tick = now + self.tc
        self.active = (0, 0)
        self.avg = {SHORT: 0, "total": 0}
        self.idle = {SHORT: False, "total": False}
        self.idle_since = 0
        self.c = dict.fromkeys(COUNTERS, 0)

    # ---- edge
    def tick(self, t):
        cnt = [0, 0]
        for tag, count, last in self.table.values():
            if count and t - last <= self.tu:
                cnt[SHORT if count <= self.lt else LONG] += 1
        self.active = tuple(cnt)
        if not self.fixed:
            self.lt = max(self.lt - 1, 1) if cnt[SHORT] > cnt[LONG] * self.slr else min(self.lt + 1, 65535)

    def classify(self, bucket, tag, now):
        while now >= self.next_tick:
            self.tick(self.next_tick)
            self.next_tick += self.tc
        e = self.table.get(bucket)
        if e is None or now - e[2] > self.tu:
            e = self.table[bucket] = [tag, 0, now]
            self.c["flows_seen"] += 1
        elif e[0] != tag:
            self.c["collisions"] += 1
        e[1], e[2] = min(e[1] + 1, 2**32 - 1), now
        return SHORT if e[1] <= self.lt else LONG

    # ---- core
    @staticmethod
    def ewma(avg, sample, m):
        for _ in range(m):                      # m packets found the queue empty
            if avg // 512 == 0:                 # a step would change nothing
                break
            avg -= avg // 512
        return avg - avg // 512 + sample * UNIT // 512

    def average(self, which, sample, now):
        m = (now - self.idle_since) // self.ptime if self.idle[which] and now > self.idle_since else 0
        self.idle[which] = False
        self.avg[which] = self.ewma(self.avg[which], sample, m)
        return self.avg[which]

    def decide(self, cls, avg, backlog, ect, rnd):
        r = self.red[cls]
        r.count = min(r.count + 1, 2**32 - 1)
        if not (avg >= r.min and backlog > 1):
            r.old = False
            return ENQUEUED
        if avg >= 2 * r.max:
            return DROP_FORCED
        if not r.old:
            r.count, r.old = 1, True
            return ENQUEUED
        if avg < r.max:
            pb = r.pmax * (avg - r.min) // (r.max - r.min)
        else:                                   # gentle: P_max at max_th to 1 at 2 max_th
            pb = r.pmax + (ONE - r.pmax) * (avg - r.max) // r.max
        cp = r.count * pb                       # wait_: no drop while count * p_b < 1
        pa = 0 if cp < ONE else ONE if cp >= 2 * ONE else min(ONE, pb * ONE // (2 * ONE - cp))
        if rnd >= pa:
            return ENQUEUED
        r.count = 0
        if avg >= r.max:
            return DROP_FORCED
        return MARKED if self.ecn and ect else DROP_EARLY

    def enqueue(self, pid, bucket, tag, now, ect=False, rnd=0):
        cls = self.classify(bucket, tag, now)
        qlen, qshort = len(self.q), sum(1 for _, c in self.q if c == SHORT)
        total = self.average("total", qlen, now)
        if cls == SHORT:
            v = self.decide(SHORT, self.average(SHORT, qshort, now), qshort, ect, rnd)
        else:
            v = self.decide(LONG, total, qlen, ect, rnd)
        if qlen >= self.limit:
            v = DROP_LIMIT
        name = "short" if cls == SHORT else "long"
        if v in QUEUED:
            self.q.append((pid, cls))
            self.c["enqueued_" + name] += 1
            if v == MARKED:
                self.c["marked_" + name] += 1
        else:
            if v in (DROP_FORCED, DROP_LIMIT):
                self.red[cls].count = 0
            key = {DROP_EARLY: "early_" + name, DROP_FORCED: "forced_" + name, DROP_LIMIT: "drop_limit"}[v]
            self.c[key] += 1
        return v

    def dequeue(self, now=0):
        if self.q:
            return self.q.popleft()[0]
        if not self.idle["total"]:
            self.idle = {SHORT: True, "total": True}
            self.idle_since = now
        return None

    def set_limit(self, limit):
        self.limit, out = limit, []
        for r in self.red.values():
            r.set_limit(limit)
        while len(self.q) > limit:
            out.append(self.q.pop()[0])
            self.c["drop_trim"] += 1
        return out

    def reset(self):
        self.q.clear()
        self.table.clear()
        self.avg = {SHORT: 0, "total": 0}
        self.idle = {SHORT: False, "total": False}
        for r in self.red.values():
            r.count, r.old = 0, False

    def state(self):
        return {"lt": self.lt, "active_short": self.active[SHORT], "active_long": self.active[LONG],
                "qshort": sum(1 for _, c in self.q if c == SHORT), "qavg_short": self.avg[SHORT],
                "qavg_total": self.avg["total"], "count_short": self.red[SHORT].count,
                "count_long": self.red[LONG].count,
                "old": int(self.red[SHORT].old) | int(self.red[LONG].old) << 1, "next_tc": self.next_tick}


class Both:
    """Drives the core and the model with the same calls and checks they agree after each one."""

    def __init__(self, lib, limit, buckets=1024, now=0, **params):
        self.core, self.model = Core(lib, limit, buckets, now, **params), Model(limit, now, **params)
        self.pid = 0

    def check(self, what):
        assert self.core.counters() == self.model.c, what
        assert self.core.state() == self.model.state(), what
        assert self.core.qlen() == len(self.model.q) and self.core.lib.h_check() == 0, what

    def enqueue(self, bucket, now, tag=None, ect=False, rnd=0):
        self.pid += 1
        tag = bucket + 1 if tag is None else tag
        got = self.core.enqueue(self.pid, bucket, tag, now, ect, rnd)
        want = self.model.enqueue(self.pid, bucket, tag, now, ect, rnd)
        assert got == want, f"enqueue {self.pid} bucket {bucket} at {now}: core {got} model {want}"
        self.check(f"after enqueue {self.pid}")
        return got

    def dequeue(self, now=0):
        got, want = self.core.dequeue(now), self.model.dequeue(now)
        assert got == want, f"dequeue at {now}: core {got} model {want}"
        self.check(f"after dequeue at {now}")
        return got

    def set_limit(self, limit):
        assert self.core.set_limit(limit) == self.model.set_limit(limit)
        self.check(f"after set_limit {limit}")

    def reset(self):
        self.core.reset()
        self.model.reset()
        self.check("after reset")


# ---------------------------------------------------------------- by hand

def test_table_iii_thresholds_in_the_cores_units(lib):
    c = Core(lib, limit=100)
    assert c.thresholds() == [15 * UNIT, 35 * UNIT, ONE // 20, 15 * UNIT, 50 * UNIT, ONE // 10]
    c.set_limit(1)                                       # 0.15 and 0.35 of a packet, floors
    assert c.thresholds() == [9830, 22937, ONE // 20, 9830, 32768, ONE // 10]
    c.lib.h_set_red(SHORT, 1, 2, 1_000_000)               # min_th and max_th meet: max_th = min_th + 1
    assert c.thresholds()[:3] == [0, 1, ONE]


def test_first_lt_packets_of_a_flow_are_short(lib):
    b = Both(lib, limit=100, lt=3)
    assert [b.enqueue(7, now=i) for i in range(5)] == [ENQUEUED] * 5
    c = b.core.counters()
    assert (c["enqueued_short"], c["enqueued_long"], c["flows_seen"]) == (3, 2, 1)
    assert b.core.state()["qshort"] == 3


def test_a_flow_unseen_for_more_than_tu_starts_over(lib):
    b = Both(lib, limit=100, lt=2, tu=1 * S)
    for t in (0, 1, 2):                                  # short, short, long
        b.enqueue(5, now=t)
    b.enqueue(5, now=2 + 1 * S)                          # exactly T_u later: the same flow, long
    assert b.core.counters()["enqueued_long"] == 2
    b.enqueue(5, now=3 + 2 * S + 1)                      # more than T_u: a new flow, short again
    assert b.core.counters()["enqueued_short"] == 3 and b.core.counters()["flows_seen"] == 2


def test_another_flow_in_an_active_entry_shares_it(lib):
    b = Both(lib, limit=100, lt=2)
    b.enqueue(0, now=0, tag=0xA)
    b.enqueue(0, now=1, tag=0xB)                         # collision: its first packet is the entry's second
    b.enqueue(0, now=2, tag=0xB)                         # third packet of the entry: long
    c = b.core.counters()
    assert (c["collisions"], c["flows_seen"], c["enqueued_short"], c["enqueued_long"]) == (2, 1, 2, 1)


def test_lt_controller_steps_down_up_and_stops_at_one(lib):
    b = Both(lib, limit=1000, lt=2, tc=10 * MS, tu=100 * MS)
    for f in range(4):                                   # four one-packet flows
        b.enqueue(f, now=f)
        b.dequeue(now=f)
    b.enqueue(0, now=10 * MS)                            # tick: 4 short > 0 long * 3: L_t 2 -> 1
    st = b.core.state()
    assert (st["lt"], st["active_short"], st["active_long"]) == (1, 4, 0)
    assert b.core.counters()["enqueued_long"] == 1       # flow 0's second packet, 2 > L_t
    b.enqueue(1, now=20 * MS)                            # tick: 3 short (1, 2, 3), 1 long (0): 3 > 3 no: up
    st = b.core.state()
    assert (st["lt"], st["active_short"], st["active_long"]) == (2, 3, 1)
    for f in range(20, 40):
        b.enqueue(f, now=25 * MS + f)
    b.enqueue(0, now=30 * MS)                            # 24 short, 0 long: down to 1
    b.enqueue(0, now=40 * MS)                            # 22 short, 2 long: 22 > 6, but L_t stays at 1
    st = b.core.state()
    assert (st["lt"], st["active_short"], st["active_long"]) == (1, 22, 2)


def test_lt_goes_up_when_long_flows_dominate(lib):
    b = Both(lib, limit=1000, lt=1, tc=10 * MS, tu=100 * MS)
    for t in range(3):                                   # one flow with 3 packets: long
        b.enqueue(0, now=t)
        b.dequeue(now=t)
    b.enqueue(0, now=10 * MS)                            # 0 short, 1 long: up
    assert b.core.state()["lt"] == 2
    b.enqueue(0, now=20 * MS)
    assert b.core.state()["lt"] == 3


def test_ticks_after_an_idle_gap_count_each_and_then_add_up(lib):
    b = Both(lib, limit=1000, lt=5, tc=10 * MS, tu=15 * MS)
    for f in range(8):                                   # 8 short flows at ~0
        b.enqueue(f, now=f)
    b.enqueue(0, now=1 * S + 5 * MS)                     # 100 ticks: at 10 ms 8 short > 0: down; from 20 ms
    # on nothing seen within T_u: up, 99 ticks at once
    assert b.core.state()["lt"] == 5 - 1 + 99
    assert b.core.state()["next_tc"] == 1 * S + 10 * MS


def test_fixed_lt_does_not_move_but_counts(lib):
    b = Both(lib, limit=1000, lt=4, fixed=True, tc=10 * MS)
    for f in range(10):
        b.enqueue(f, now=f)
    b.enqueue(0, now=10 * MS)
    st = b.core.state()
    assert (st["lt"], st["active_short"]) == (4, 10)
    b.enqueue(0, now=5 * S)
    assert b.core.state()["lt"] == 4


def test_lt_cap(lib):
    b = Both(lib, limit=10, lt=65530, tc=1 * MS, tu=MS // 10)
    b.enqueue(0, now=0)
    b.enqueue(0, now=1 * S)                              # a thousand ticks up from 65530
    assert b.core.state()["lt"] == 65535


def fill(b, bucket, n, now, **kw):
    for i in range(n):
        b.enqueue(bucket, now=now, **kw)


def test_crossing_min_th_drops_nothing_then_drops_start(lib):
    red = {SHORT: (10_000, 500_000, 1_000_000)}         # B=100: min_th 1 packet, max_th 50
    b = Both(lib, limit=100, lt=1000, fixed=True, red=red)
    fill(b, 0, 40, now=0, rnd=0)                         # rnd 0: any p_a > 0 drops
    assert b.core.state()["old"] & 1 and b.core.state()["qavg_short"] >= UNIT   # crossed min_th
    assert b.core.counters()["enqueued_short"] == 40     # and nothing dropped: count * p_b < 1
    fill(b, 0, 40, now=0, rnd=0)
    assert b.core.counters()["early_short"] > 0


def test_wait_spaces_the_drops(lib):
    # p_b fixed by the average; no drop while count * p_b < 1 whatever the draw
    red = {SHORT: (10_000, 990_000, 1_000_000)}
    b = Both(lib, limit=1000, lt=10**4, fixed=True, red=red)
    for t in range(300):                                 # queue 200..: avg ~ tens of packets
        b.enqueue(0, now=t, rnd=2**32 - 1 if t < 250 else 0)
    c = b.core.counters()
    assert c["early_short"] >= 1
    drops_at = []
    for t in range(300, 700):
        before = b.core.counters()["early_short"]
        b.enqueue(0, now=t, rnd=0)                       # rnd 0 drops as soon as p_a > 0
        if b.core.counters()["early_short"] > before:
            drops_at.append(t)
        b.dequeue(now=t)
    gaps = [y - x for x, y in zip(drops_at, drops_at[1:])]
    assert gaps and min(gaps) > 1                        # never two in a row: count restarts at 0


def test_wait_drops_exactly_when_count_times_pb_reaches_one(lib):
    # checked on the core's own state, not the model: with rnd 0 an arrival in the early region is
    # dropped iff count * p_b >= 1 (then p_a = p_b / (2 - count p_b) > 0); with the largest draw iff
    # p_a = 1, that is count * p_b >= 2 - p_b
    for rnd, extra, need in [(0, 0, ONE), (2**32 - 1, 1, 2 * ONE)]:
        b = Both(lib, limit=1000, lt=10**4, fixed=True, red={SHORT: (10_000, 990_000, 200_000)})
        lo, hi, pmax = b.core.thresholds()[:3]
        checked = 0
        for t in range(900):
            st, early = b.core.state(), b.core.counters()["early_short"]
            b.enqueue(0, now=t, rnd=rnd)
            after = b.core.state()
            avg, count = after["qavg_short"], st["count_short"] + 1
            if not (st["old"] & 1 and lo <= avg < hi and st["qshort"] > 1):
                continue
            pb = pmax * (avg - lo) // (hi - lo)
            dropped = b.core.counters()["early_short"] > early
            assert dropped == ((count + extra) * pb >= need), (t, count, pb)
            checked += 1
        assert checked > 100 and b.core.counters()["early_short"] > 3


def test_gentle_region_drops_and_beyond_2_max_th_forced(lib):
    red = {LONG: (10_000, 20_000, 100_000)}             # B=1000: 10 and 20 packets; gentle to 40
    b = Both(lib, limit=1000, lt=1, fixed=True, ecn=True, red=red)
    b.enqueue(0, now=0)                                  # the flow's first packet is short
    forced_seen_gentle = False
    for t in range(1, 3000):
        v = b.enqueue(0, now=t, ect=True, rnd=0)
        avg = b.core.state()["qavg_total"]
        if v == DROP_FORCED and 20 * UNIT <= avg < 40 * UNIT:
            forced_seen_gentle = True                    # ECT, but in the gentle region: dropped
        if avg >= 40 * UNIT:
            assert v in (DROP_FORCED, DROP_LIMIT)
    c = b.core.counters()
    assert forced_seen_gentle and c["marked_long"] > 0 and c["early_long"] == 0


def test_ecn_marks_ect_and_drops_not_ect(lib):
    red = {LONG: (1_000, 900_000, 1_000_000)}
    for ecn, ect, want in [(True, True, "marked_long"), (True, False, "early_long"), (False, True, "early_long")]:
        b = Both(lib, limit=1000, lt=1, fixed=True, ecn=ecn, red=red)
        for t in range(400):
            b.enqueue(0, now=t, ect=ect, rnd=0)
        c = b.core.counters()
        other = {"marked_long", "early_long"} - {want}
        assert c[want] > 0 and all(c[k] == 0 for k in other), (ecn, ect, c)


def test_full_queue_drops_the_arrival_whatever_the_average(lib):
    b = Both(lib, limit=3, lt=1000, fixed=True)
    assert [b.enqueue(f, now=0) for f in range(4)] == [ENQUEUED] * 3 + [DROP_LIMIT]
    assert b.core.counters()["drop_limit"] == 1
    assert [b.dequeue() for _ in range(4)] == [1, 2, 3, None]


def test_idle_decay(lib):
    b = Both(lib, limit=1000, lt=1000, fixed=True, ptime=1000)
    fill(b, 0, 200, now=0)
    before = b.core.state()["qavg_total"]
    while b.dequeue(now=10) is not None:
        pass
    b.enqueue(1, now=10 + 300 * 1000)                   # 300 packet times idle
    want = before
    for _ in range(300):
        want -= want // 512
    want -= want // 512
    assert b.core.state()["qavg_total"] == want
    b.dequeue(now=20 + 300 * 1000)
    b.dequeue(now=30 + 300 * 1000)
    b.enqueue(1, now=10**13)                             # idle for ever: the decay stops at a fixed point
    assert b.core.state()["qavg_total"] < 512


def test_one_fifo_never_reorders_a_flow(lib):
    b = Both(lib, limit=100, lt=3)
    for t in range(10):                                  # short then long packets of one flow, another flow
        b.enqueue(t % 2, now=t)
    assert [b.dequeue() for _ in range(11)] == list(range(1, 11)) + [None]


def test_lowering_the_limit_trims_the_newest(lib):
    b = Both(lib, limit=10, lt=2)
    fill(b, 0, 6, now=0)
    b.set_limit(2)
    assert b.core.counters()["drop_trim"] == 4 and b.core.state()["qshort"] == 2
    assert [b.dequeue() for _ in range(3)] == [1, 2, None]


def test_reset_forgets_flows_and_averages_keeps_lt(lib):
    b = Both(lib, limit=10, lt=2)
    fill(b, 0, 5, now=0)
    b.reset()
    st = b.core.state()
    assert (b.core.qlen(), st["qshort"], st["qavg_total"], st["lt"]) == (0, 0, 0, 2)
    b.enqueue(0, now=1)
    assert b.core.counters()["flows_seen"] == 2


# ---------------------------------------------------------------- random sequences vs the model

def run_random(lib, seed, steps=3000):
    rng = random.Random(seed)
    limit = rng.choice([1, 2, 5, 20, 60, 200])
    buckets = rng.choice([1, 4, 16, 64, 256])
    nflows = rng.choice([1, 3, 10, 40, 200])
    params = dict(lt=rng.choice([1, 3, 20, 100, 5000]), fixed=rng.random() < 0.3, slr=rng.choice([1, 3, 6]),
                  tu=rng.choice([1, 5, 30]) * MS, tc=rng.choice([2, 10, 50]) * MS, ecn=rng.random() < 0.5,
                  ptime=rng.choice([1, 10, 120]) * 1000)
    if rng.random() < 0.5:                               # thresholds other than Table III's
        params["red"] = {cls: tuple(sorted(rng.sample(range(0, 1_000_001), 2))) + (rng.randint(1, 10**6),)
                         for cls in (SHORT, LONG)}
    now = rng.randrange(2**40)
    b = Both(lib, limit, buckets, now, **params)
    tags = [rng.getrandbits(32) for _ in range(nflows)]
    homes = [rng.randrange(buckets) for _ in range(nflows)]
    p_arrive = rng.uniform(0.5, 0.9)                     # mostly overload: the averages climb
    ect_share = rng.random()
    for _ in range(steps):
        now += rng.choice([0, 1, 10, 100, 1000, 10_000, 50_000])
        if rng.random() < 0.003:
            now += rng.choice([1, 20, 300]) * MS         # an idle gap, ticks pass
        if rng.random() < p_arrive:
            f = min(int(rng.paretovariate(1.1)) - 1, nflows - 1) if rng.random() < 0.5 else rng.randrange(nflows)
            if rng.random() < 0.01:
                tags[f] = rng.getrandbits(32)            # a new flow in that flow's bucket
            rnd = rng.getrandbits(32) if rng.random() < 0.7 else rng.choice([0, 2**31, 2**32 - 1])
            b.enqueue(homes[f], now, tag=tags[f], ect=rng.random() < ect_share, rnd=rnd)
        else:
            assert b.core.peek() == (b.model.q[0][0] if b.model.q else None)
            b.dequeue(now)
        if rng.random() < 0.002:
            b.set_limit(rng.choice([1, 2, 5, limit, limit * 2]))
        if rng.random() < 0.0005:
            b.reset()
    while b.dequeue(now) is not None:
        pass
    return b.model.c


@pytest.mark.parametrize("seed", range(40))
def test_random_sequences_match_model(lib, seed):
    run_random(lib, seed)


def test_random_sequences_exercise_every_branch(lib):
    total = harness.every_branch_total(run_random, lib, range(60), COUNTERS)
    assert all(total[k] > 0 for k in total), total
