import os

from analysis import bench, crosscheck


def test_bench_pcap_reads_back_every_packet(tmp_path):
    p = str(tmp_path / "b.pcap")
    bench.make_pcap(p, 2500)
    n, flows = crosscheck.fast_counts(p)
    assert (n, flows) == (2500, 3)
