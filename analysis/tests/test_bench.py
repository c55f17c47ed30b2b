import os

from analysis import bench, crosscheck


def test_bench_pcap_reads_back_every_packet(tmp_path):
    p = str(tmp_path / "b.pcap")
    bench.make_pcap(p, 2500)
    n, flows = crosscheck.fast_counts(p)
    assert (n, flows) == (2500, 3)


def test_reader_same_packets_from_pcap_nanosecond_pcap_and_pcapng(tmp_path):
    """The struct walk over classic pcap (both timestamp units) gives what dpkt's pcapng path gives."""
    import dpkt
    from analysis.pcapread import read_pcap
    p = str(tmp_path / "b.pcap")
    bench.make_pcap(p, 300)
    with open(p, "rb") as f:
        recs = list(dpkt.pcap.Reader(f))
    for name, mk in [("n.pcap", lambda f: dpkt.pcap.Writer(f, snaplen=128, nano=True)),
                     ("g.pcapng", lambda f: dpkt.pcapng.Writer(f, snaplen=128))]:
        q = str(tmp_path / name)
        with open(q, "wb") as f:
            w = mk(f)
            for ts, buf in recs:
                w.writepkt(buf, ts=ts)
        a, b = list(read_pcap(p)), list(read_pcap(q))
        assert len(a) == len(b) == 300
        assert [x[1:] for x in a] == [x[1:] for x in b]
        assert all(abs(x.t - y.t) < 1e-6 for x, y in zip(a, b))
