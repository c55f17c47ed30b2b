"""The HTTP workload's flows.csv rows (analysis/tables/httpflows.py) from captures of wrk fetching one object
from nginx over its own connection: the server is the flow's sender, the object's size comes from the
request line, the latency runs from wrk's SYN to the response's last byte at wrk's host."""
from analysis.pcapread import ACK, FIN, PSH, SYN, Pkt
from analysis.tables.httpflows import flow_id_base, http_flow_rows, object_pkts
from analysis.tcp import group_connections
from orchestrate import runspec

HOSTS = {"a1": {"ip": "10.0.1.1"}, "b1": {"ip": "10.0.2.1"}}
CLI, SRV, CPORT, PORT, MSS = "10.0.2.1", "10.0.1.1", 40000, 5001, 1460
T0 = 1000.0


def pkt(t, src, flags, seq, ack, plen=0, hdr16=None):
    sport, dport = (CPORT, PORT) if src == CLI else (PORT, CPORT)
    dst = SRV if src == CLI else CLI
    return Pkt(t, src, dst, sport, dport, flags, seq, ack, 0, plen, 65535, (), hdr16)


def exchange(L=3, lost_segment=None, syn_retries=0):
    """One request for obj/<L>.bin and its response (a 200-byte header and L segments), as wrk's host sees it;
    `lost_segment` is sent twice, the second time 0.3 s later (the first copy never arrives)."""
    c_isn, s_isn = 100, 5000
    pk = [pkt(T0 + 5.0 + 3.0 * k, CLI, SYN, c_isn, 0) for k in range(syn_retries + 1)]
    t = T0 + 5.0 + 3.0 * syn_retries
    pk += [pkt(t + 0.05, SRV, SYN | ACK, s_isn, c_isn + 1), pkt(t + 0.1, CLI, ACK, c_isn + 1, s_isn + 1)]
    req = f"GET /obj/{L}.bin HTTP/1.1\r\n".encode()
    pk.append(pkt(t + 0.1, CLI, ACK | PSH, c_isn + 1, s_isn + 1, len(req), req[:16]))
    total = 200 + L * MSS
    seq, tt, sent = s_isn + 1, t + 0.2, []
    while seq < s_isn + 1 + total:
        n = min(MSS, s_isn + 1 + total - seq)
        sent.append((seq, n))
        seq += n
    arrivals = []
    for i, (sq, n) in enumerate(sent):
        if i == lost_segment:
            arrivals.append(pkt(tt + 0.3 + 0.01 * i, SRV, ACK, sq, c_isn + 1 + len(req), n))
        else:
            arrivals.append(pkt(tt + 0.01 * i, SRV, ACK, sq, c_isn + 1 + len(req), n))
    pk += sorted(arrivals, key=lambda p: p.t)
    end = max(p.t for p in arrivals)
    pk.append(pkt(end + 0.001, SRV, FIN | ACK, seq, c_isn + 1 + len(req)))
    return pk, t, end


def rows_of(pk, aqm="droptail"):
    caps = {"b1": group_connections(pk), "a1": group_connections(pk)}
    return http_flow_rows(caps, HOSTS, PORT, T0, "paper", MSS, (2.0, 20.0), aqm)


def test_one_object_is_one_flow_sent_by_the_server():
    pk, syn_ack_t, end = exchange(L=3)
    [r] = rows_of(pk)
    assert (r["src"], r["dst"], r["direction"], r["src_ip"], r["sport"]) == ("a1", "b1", "forward", SRV, PORT)
    assert r["L"] == 3 and r["size_bytes"] == 3 * MSS
    assert r["start_s"] == 5.0 and r["in_window"] == 1 and r["in_metrics"] == 1 and r["complete"] == 1
    assert abs(r["latency_s"] - (end - (T0 + 5.0))) < 1e-9
    assert r["data_pkts"] == 4 and r["R"] == 0 and r["syn_retrans"] == 0


def test_syn_retransmission_and_a_lost_segment_are_counted():
    pk, _, _ = exchange(L=5, lost_segment=2, syn_retries=1)
    [r] = rows_of(pk)
    assert r["syn_retrans"] == 1 and r["RTO"] >= 1
    assert r["data_pkts"] == 6      # the lost copy is not captured here: the server sent each segment once
    assert r["start_s"] == 5.0      # from the first SYN


def test_a_response_cut_short_is_incomplete_and_out_of_the_metrics():
    pk, _, _ = exchange(L=4)
    [r] = rows_of([p for p in pk if not p.flags & FIN][:-1])
    assert r["complete"] == 0 and r["in_metrics"] == 0 and r["latency_s"] == ""


def test_no_two_runs_share_a_flow_id():
    """pair_flows pairs flows by id: a closed loop's n-th connection under two AQMs must not pair."""
    pk, _, _ = exchange()
    a, b = rows_of(pk, "droptail"), rows_of(pk, "favor")
    assert a[0]["flow_id"] != b[0]["flow_id"]
    bases = {n: flow_id_base(n) for n in runspec.read_aqms()}
    clash = {n: b for n, b in bases.items() if list(bases.values()).count(b) > 1}
    assert not clash, f"AQMs of config/aqms.yaml whose HTTP flow ids would meet (rename one): {clash}"
    assert min(bases.values()) >= 1 << 20 and max(bases.values()) + (1 << 20) <= 2**31


def test_object_size_from_the_request_line():
    assert object_pkts([pkt(0, CLI, ACK, 1, 1, 30, b"GET /obj/1234.bi")], CLI) == 1234
    assert object_pkts([pkt(0, CLI, ACK, 1, 1, 30, b"POST /x HTTP/1.1")], CLI) is None


def test_an_http_run_directory_reaches_flows_and_run_tables(tmp_path):
    """analysis.extract on an HTTP run (run.json's workload.http): the connection's row in flows.csv, sent
    by the server, and run.csv saying which workload the run used (the scenario key's http_connections)."""
    import csv
    import json
    import dpkt
    from analysis import extract
    from analysis.tests.synth import _frame
    run = tmp_path / "run"
    (run / "pcap").mkdir(parents=True)
    pk, _, end = exchange(L=3, lost_segment=1)
    req = b"GET /obj/3.bin HTTP/1.1\r\n"
    for host in ("a1", "b1"):
        with open(run / "pcap" / f"sender-{host}.pcap", "wb") as f:
            w = dpkt.pcap.Writer(f, snaplen=128)
            for i, p in enumerate(pk):
                payload = req if p.hdr16 else bytes(p.plen)
                w.writepkt(_frame(p.src, p.dst, p.sport, p.dport, p.flags, p.seq, p.ack, payload, i)[:128], ts=p.t)
    (run / "schedule.csv").write_text("# seed=1\nflow_id,start_s,size_bytes,size_pkts,src,dst,direction,kind\n"
                                      f"0,0.5,{3 * MSS},3,a1,b1,forward,web\n")
    spec = {"run_id": "dumbbell-http1c_droptail", "config_name": "t", "scenario": "dumbbell",
            "topology": {"kind": "dumbbell", "bottleneck_mbps": 10, "buffer_pkts": 8, "mtu": 1500},
            "aqm": {"name": "droptail", "forward": {"kind": "pfifo"}},
            "tcp": {"profile": "paper", "iw": 2, "congestion_control": "reno"}, "load": 0.75, "replication": 0,
            "seed": 1, "duration_s": 20.0, "warmup_s": 2.0, "drain_s": 10, "schedule": "schedule.csv",
            "sizes": {"distribution": "lomax", "shape": 1.3, "mean_pkts": 30},
            "workload": {"kind": "web", "http": {"connections": 1}}}
    for name, obj in (("run.json", spec), ("hosts.json", {"hosts": {h: {"ip": ip} for h, ip in
                                                                    (("a1", SRV), ("b1", CLI))}, "port": PORT}),
                      ("fidelity.json", {"valid": True, "reasons": [], "checks": {}}),
                      ("manifest.json", {"t0_unix": T0})):
        (run / name).write_text(json.dumps(obj))
    (run / "DONE").write_text("")
    extract.extract(str(run), str(tmp_path / "tables"), write_packets=False)
    [f] = list(csv.DictReader(open(tmp_path / "tables" / "flows.csv")))
    assert (f["src"], f["dst"], f["L"], f["in_metrics"], f["complete"]) == ("a1", "b1", "3", "1", "1")
    assert abs(float(f["latency_s"]) - (end - T0 - 5.0)) < 1e-5 and float(f["start_s"]) == 5.0
    [r] = list(csv.DictReader(open(tmp_path / "tables" / "run.csv")))
    assert r["http_connections"] == "1" and r["flows_in_metrics"] == "1"


def test_a_connection_without_a_request_is_no_object():
    """wrk opens and closes a connection per path without a request as it starts: no flow; a connection
    whose SYN was never answered is kept, unfinished, outside the offered load (its object is unknown)."""
    pk, _, _ = exchange()
    handshake = [p for p in pk[:3]] + [pkt(T0 + 5.2, CLI, FIN | ACK, 101, 5001)]
    assert rows_of(handshake) == []
    [r] = rows_of([pkt(T0 + 5.0, CLI, SYN, 100, 0), pkt(T0 + 8.0, CLI, SYN, 100, 0)])
    assert (r["complete"], r["in_window"], r["in_metrics"], r["L"], r["size_bytes"], r["syn_retrans"]) == \
        (0, 0, 0, "", 0, 1)
