"""The schedule generator: distributions, load arithmetic, determinism, independent streams, file format."""
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from orchestrate import schedule as S
from contract.schedule import ScheduleError, read_schedule
from contract.sizes import DEFAULT as DEFAULT_SIZES

KS_ALPHA = 0.01   # a fixed seed: the KS p-value of a correct sampler is uniform, so this fails 1 % of seeds


def rng(seed=1):
    return np.random.Generator(np.random.PCG64(seed))


@pytest.mark.parametrize("spec, cdf", [
    ("pareto:shape=1.3,mean_pkts=30", lambda p: stats.pareto(1.3, scale=30 * 0.3 / 1.3).cdf),
    ("pareto:shape=1.3,mean_pkts=10", lambda p: stats.pareto(1.3, scale=10 * 0.3 / 1.3).cdf),
    ("lomax:shape=1.3,mean_pkts=30", lambda p: stats.lomax(1.3, scale=30 * 0.3).cdf),
    ("exponential:mean_pkts=6", lambda p: stats.expon(scale=6).cdf),
    ("bounded_pareto:shape=1.3,min_pkts=2,max_pkts=1000",
     lambda p: stats.truncpareto(1.3, 1000 / 2, scale=2).cdf),
])
def test_continuous_draws_follow_the_distribution(spec, cdf):
    x = S.parse_sizes(spec).draw_continuous(rng(11), 20000)
    assert stats.kstest(x, cdf(None)).pvalue > KS_ALPHA


def test_pareto_shape_and_minimum_by_mle():
    sizes = S.parse_sizes("pareto:shape=1.3,mean_pkts=30")
    x = sizes.draw_continuous(rng(3), 50000)
    xm = 30 * 0.3 / 1.3
    assert x.min() >= xm and x.min() < xm * 1.001
    shape_mle = len(x) / np.sum(np.log(x / x.min()))       # Hill / MLE estimate of the tail index
    assert shape_mle == pytest.approx(1.3, rel=0.03)
    pkts = sizes.draw(rng(3), 50000)
    assert pkts.min() == math.ceil(xm) == 7                   # classic Pareto cannot make 1- or 2-packet flows


def test_lomax_makes_short_flows_with_the_same_mean():
    pkts = S.parse_sizes("lomax:shape=1.3,mean_pkts=30").draw(rng(5), 50000)
    assert (pkts == 1).mean() > 0.05 and (pkts == 2).mean() > 0.05
    assert pkts.min() == 1


def test_table_1_schedules_hold_pareto_ii_packet_counts_with_2_packet_flows():
    """A schedule of the default sizes (Table 1: Pareto II, shape 1.3, mean 30) holds packet counts
    L = max(1, ceil(X)) whose distribution is the discretised Lomax (chi-square over classes of L), with
    the 2-packet flows the paper's F18 and F21 speak of and the flows under 6 packets of F20."""
    meta, flows = S.generate(0.55, 10, 1500, 2013, DEFAULT_SIZES, reverse_load=0)
    assert meta["sizes"] == "lomax:mean_pkts=30,shape=1.3"
    pkts = np.array([f.size_pkts for f in flows])
    assert len(pkts) > 15000
    sf = stats.lomax(1.3, scale=30 * 0.3).sf                   # P(L > k) = P(X > k)
    edges = np.array([0, 1, 2, 3, 5, 7, 10, 20, 50, 100, np.inf])
    observed = np.histogram(pkts, bins=edges + 0.5)[0]           # L in (edges[i], edges[i+1]]
    expected = len(pkts) * -np.diff(np.append(sf(edges[:-1]), 0.0))
    assert observed.sum() == len(pkts)
    assert stats.chisquare(observed, expected).pvalue > KS_ALPHA
    p2 = sf(1) - sf(2)                                           # 10.2 % of flows have 2 packets
    assert abs((pkts == 2).mean() - p2) < 4 * math.sqrt(p2 * (1 - p2) / len(pkts))
    assert (pkts < 6).mean() == pytest.approx(1 - sf(5), abs=0.02)   # 44 % under 6 packets
    assert pkts.min() == 1


def test_a_flow_sends_the_packets_ns2_would_for_its_size():
    """ns-2's one-way TCP sends ceil(bytes / packet size) packets for a transfer: a partial last packet is
    sent whole. A draw under one packet still sends one (a flow always carries data)."""
    class Fixed(S.Sizes):
        def draw_continuous(self, rng, n):
            return np.array([0.0004, 0.9, 1.0, 1.0001, 2.5, 6.92, 29.0])
    assert Fixed("lomax", {}).draw(rng(), 7).tolist() == [1, 1, 1, 2, 3, 7, 29]


@pytest.mark.parametrize("spec", ["exponential:mean_pkts=6", "bounded_pareto:shape=1.3,mean_pkts=30,max_pkts=2000",
                                  "exponential:mean_pkts=100"])
def test_sample_mean_of_packets_matches_the_exact_mean(spec):
    # finite-variance distributions only: the sample mean converges at 1/sqrt(n)
    sizes = S.parse_sizes(spec)
    pkts = sizes.draw(rng(7), 200000)
    se = pkts.std() / math.sqrt(len(pkts))
    assert abs(pkts.mean() - sizes.mean_pkts_effective) < 4 * se


@pytest.mark.parametrize("spec", ["pareto:shape=1.3,mean_pkts=30", "lomax:shape=1.3,mean_pkts=30",
                                  "pareto:shape=2.5,mean_pkts=30"])
def test_exact_mean_of_ceiled_sizes_by_numeric_sum(spec):
    # E[ceil X] = sum_k P(X > k), summed numerically far into the tail plus the analytic tail remainder
    sizes = S.parse_sizes(spec)
    a, m = sizes.params["shape"], sizes.params["mean_pkts"]
    k = np.arange(0, 2_000_000, dtype=float)
    if sizes.name == "pareto":
        xm = m * (a - 1) / a
        surv = np.where(k < xm, 1.0, (xm / np.maximum(k, xm)) ** a)
        tail = xm ** a * k[-1] ** (1 - a) / (a - 1)
    else:
        s = m * (a - 1)
        surv = (1 + k / s) ** -a
        tail = s ** a * (s + k[-1]) ** (1 - a) / (a - 1)
    assert sizes.mean_pkts_effective == pytest.approx(surv.sum() + tail, rel=2e-4)
    assert m < sizes.mean_pkts_effective < m + 1


def test_bounded_pareto_solves_its_minimum_for_the_mean():
    s = S.parse_sizes("bounded_pareto:shape=1.3,mean_pkts=30,max_pkts=10000")
    lo = S._bp_lo(s.params)
    x = s.draw_continuous(rng(2), 20000)
    assert x.min() >= lo and x.max() <= 10000
    assert S._bp_mean(1.3, lo, 10000) == pytest.approx(30)


def test_load_arithmetic():
    # 100 Mb/s at 0.95 with 45000-byte flows: about 264 flows/s (the benchmark's target)
    assert S.flow_rate(0.95, 100, 30) == pytest.approx(0.95 * 100e6 / 8 / 45000)
    assert S.flow_rate(0.95, 100, 30) == pytest.approx(263.9, abs=0.1)
    meta, flows = S.generate(0.5, 10, 2000, 4, "exponential:mean_pkts=6", reverse_load=0.1)
    fwd = [f for f in flows if f.direction == "forward"]
    rev = [f for f in flows if f.direction == "reverse"]
    load = sum(f.size_pkts for f in fwd) * 1500 * 8 / (2000 * 10e6)
    assert load == pytest.approx(0.5, rel=0.03)           # finite variance: the realized load converges
    assert len(rev) / len(fwd) == pytest.approx(0.2, rel=0.08)
    assert float(meta["rate_forward_per_s"]) == pytest.approx(S.flow_rate(0.5, 10, s := 1 / (1 - math.exp(-1 / 6))))
    assert s == pytest.approx(float(meta["mean_pkts_effective"]))


def test_pairs_are_uniform_over_the_nine_rtt_classes_and_reverse_goes_b_to_a():
    _, flows = S.generate(0.9, 100, 60, 8, "pareto", reverse_load=0.3)
    fwd = [(f.src, f.dst) for f in flows if f.direction == "forward"]
    counts = [fwd.count(p) for p in S.TOPOLOGIES["dumbbell"]]
    assert stats.chisquare(counts).pvalue > 0.01
    assert all(f.src.startswith("b") and f.dst.startswith("a") for f in flows if f.direction == "reverse")
    assert all(f.size_bytes == f.size_pkts * 1460 for f in flows)


def cli(tmp_path, name, *extra):
    out = tmp_path / name
    subprocess.run([sys.executable, "-m", "orchestrate.schedule", "--load", "0.55", "--capacity-mbps", "10",
                    "--duration", "60", "--seed", "7", "--sizes", "pareto:shape=1.3,mean_pkts=30",
                    "--out", str(out), *extra], check=True, capture_output=True)
    return out


def test_same_seed_same_bytes_other_seed_differs(tmp_path):
    a = cli(tmp_path, "a.csv").read_bytes()
    b = cli(tmp_path, "b.csv").read_bytes()
    assert a == b
    meta, flows = S.generate(0.55, 10, 60, 8, "pareto:shape=1.3,mean_pkts=30")
    _, flows7 = read_schedule(tmp_path / "a.csv")
    assert [f.start_s for f in flows] != [f.start_s for f in flows7]


def test_header_records_every_parameter(tmp_path):
    meta, flows = read_schedule(cli(tmp_path, "a.csv", "--reverse-load", "0.2", "--mss", "1448"))
    for k, v in {"seed": "7", "load": "0.55", "reverse_load": "0.2", "capacity_mbps": "10.0", "duration_s": "60.0",
                 "sizes": "pareto:mean_pkts=30,shape=1.3", "mss": "1448", "topology": "dumbbell"}.items():
        assert meta[k] == v
    assert all(f.size_bytes == f.size_pkts * 1448 for f in flows)
    assert [f.start_s for f in flows] == sorted(f.start_s for f in flows)
    assert all(0 <= f.start_s < 60 for f in flows)


def test_forward_flows_do_not_move_with_the_reverse_load():
    def fwd(rl):
        _, flows = S.generate(0.55, 10, 120, 9, "pareto", reverse_load=rl)
        return [f for f in flows if f.direction == "forward"]
    assert fwd(0.0) == fwd(0.1) == fwd(0.4)
    assert len(fwd(0.1)) > 100


def test_bad_arguments_are_named(tmp_path):
    for spec, word in [("weibull", "unknown distribution"), ("pareto:shape=0.9", "shape must be > 1"),
                       ("pareto:alpha=2", "bad parameter"), ("pareto:shape=x", "not a number")]:
        with pytest.raises(ValueError, match=word):
            S.parse_sizes(spec)
    with pytest.raises(ValueError, match="--load"):
        S.generate(1.2, 10, 60, 1, "pareto")
    with pytest.raises(ValueError, match="--topology"):
        S.generate(0.5, 10, 60, 1, "pareto", topology="ring")
    p = subprocess.run([sys.executable, "-m", "orchestrate.schedule", "--load", "2", "--capacity-mbps", "10",
                        "--duration", "6", "--seed", "1", "--out", str(tmp_path / "x.csv")], capture_output=True,
                       text=True)
    assert p.returncode == 2 and "--load" in p.stderr and not (tmp_path / "x.csv").exists()


def test_reader_rejects_broken_files(tmp_path):
    good = "# seed=1\nflow_id,start_s,size_bytes,size_pkts,src,dst,direction,kind\n"
    cases = {
        "flow_id,start_s\n0,1.0\n": "header lacks columns",
        good + "0,1.0,1460,1,a1,b1,forward,web\n0,2.0,1460,1,a1,b1,forward,web\n": "appears twice",
        good + "0,2.0,1460,1,a1,b1,forward,web\n1,1.0,1460,1,a1,b1,forward,web\n": "sorted by start_s",
        good + "0,1.0,abc,1,a1,b1,forward,web\n": "size_bytes",
        good + "0,1.0,1460,1,a1,b1,sideways,web\n": "direction must be",
        good + "0,1.0,8,1,a1,b1,forward,web\n": "flow header",
        good + "0,1.0,1460,1,a1\n": "columns",
    }
    for i, (text, word) in enumerate(cases.items()):
        p = tmp_path / f"bad{i}.csv"
        p.write_text(text)
        with pytest.raises(ScheduleError, match=word) as e:
            read_schedule(p)
        assert str(p) in str(e.value)
    with pytest.raises(ScheduleError, match="no such schedule"):
        read_schedule(tmp_path / "missing.csv")


def test_chain_schedule_is_the_header_of_a_closed_loop_workload(tmp_path):
    """Scenario chain (Section 8): the reference user is closed loop, so the controller's schedule holds no
    flows, only what made it; load and reverse load must be 0 (the runner writes the user's flows over it)."""
    out = tmp_path / "c.csv"
    p = subprocess.run([sys.executable, "-m", "orchestrate.schedule", "--load", "0", "--reverse-load", "0",
                        "--capacity-mbps", "10", "--duration", "300", "--seed", "5", "--topology", "chain",
                        "--out", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    meta, flows = read_schedule(out)
    assert flows == [] and meta["topology"] == "chain" and meta["closed_loop"] == "1" and meta["seed"] == "5"
    assert out.read_text().splitlines()[-1] == "flow_id,start_s,size_bytes,size_pkts,src,dst,direction,kind"
    with pytest.raises(ValueError, match="closed loop"):
        S.generate(0.5, 10, 60, 1, "pareto", topology="chain")
