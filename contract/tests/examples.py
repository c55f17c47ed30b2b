"""Example run specs (run.json as the config module writes it) for the tests of the spec and of the runner."""
import copy


SPEC = {
    "run_id": "dumbbell-10M_droptail_load0.3_iw2_rep0", "config_name": "test", "scenario": "dumbbell",
    "topology": {"kind": "dumbbell", "bottleneck_mbps": 10, "buffer_pkts": 8, "access_mbps": 100,
                 "left_delays_ms": [0, 12, 25], "right_delays_ms": [2, 37, 75], "central_delay_ms": 0,
                 "reverse_buffer_pkts": 8, "mtu": 1500},
    "aqm": {"name": "droptail", "forward": {"kind": "pfifo", "args": ["limit", "8"]},
            "reverse": {"kind": "pfifo", "args": ["limit", "8"]}},
    "tcp": {"profile": "paper", "iw": 2, "congestion_control": "reno", "sack": False, "timestamps": False,
            "delayed_ack": False, "tlp": False, "rack": False, "initial_rto_ms": 3000, "ecn": False},
    "load": 0.3, "reverse_load": 0.1, "replication": 0, "seed": 1234,
    "duration_s": 20, "warmup_s": 5, "drain_s": 10, "schedule": "schedule.csv",
    "capture": {"snaplen": 128, "points": ["senders", "bneck-in", "bneck-out"]}, "trace_favor": False,
}


def chain_spec(**topo) -> dict:
    """A chain run.json as orchestrate.runspec writes it: chain.validate's topology (the paper's
    defaults), the reference workload, load 0."""
    from topologies import chain
    s = copy.deepcopy(SPEC)
    s.update(run_id="chain-10M-buf8-pareto30-paper-reno_favor_load0.00_iw2_rep0", scenario="chain", load=0.0,
             reverse_load=0.0, workload={"kind": "reference", "warmup_cross_s": 10.0},
             sizes={"distribution": "pareto", "shape": 1.3, "mean_pkts": 30},
             topology=chain.validate(dict({"bottleneck_mbps": 10, "hop_mbps": 10}, **topo)),
             aqm={"name": "favor", "forward": {"kind": "favor", "args": ["limit", "8"]},
                  "reverse": {"kind": "pfifo", "args": ["limit", "8"]}})
    s["capture"]["points"] = ["sender-us", "sender-ur", "bneck-in", "bneck-out"]
    return s
