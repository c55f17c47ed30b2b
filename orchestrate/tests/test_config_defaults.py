"""Defaults in one home (the schema's `default:`s, filled in by validation) and `extends:`, which lets a
config state only what differs from another."""
from pathlib import Path

import pytest
import yaml

from contract import sizes as sizes_grammar
from contract import spec as contract_spec
from contract.sizes import format_sizes
from orchestrate import matrix, runspec, schema
from orchestrate.config import ConfigError, read_config, validate

REPO = Path(__file__).resolve().parents[2]
# the least a config must say: everything else has a default
MINIMAL = {"name": "minimal", "scenario": "dumbbell", "aqms": ["droptail"], "loads": [0.5], "iw": [2],
           "tcp_profile": "paper", "replications": 1, "seed": 1, "duration_s": 20, "warmup_s": 2}


def spec_of(cfg: dict) -> dict:
    return runspec.run_spec(cfg, matrix.runs(cfg)[0])


def test_the_fidelity_defaults_are_the_run_contracts():
    """The runner falls back on contract.spec's thresholds for a spec without them; the config fills them
    from the schema: both must be the same numbers."""
    assert schema.defaults()["fidelity"] == contract_spec.FIDELITY_DEFAULTS
    assert spec_of(validate(dict(MINIMAL)))["fidelity"] == contract_spec.FIDELITY_DEFAULTS


def test_table_1_is_the_default_topology_and_sizes():
    spec = spec_of(validate(dict(MINIMAL)))
    assert spec["topology"] == {"kind": "dumbbell", "bottleneck_mbps": 10, "buffer_pkts": 8,
                                "reverse_buffer_pkts": 8, "access_mbps": 100, "left_delays_ms": [0, 12, 25],
                                "right_delays_ms": [2, 37, 75], "central_delay_ms": 0, "mtu": 1500}
    assert spec["sizes"] == {"distribution": "lomax", "shape": 1.3, "mean_pkts": 30}
    # the schema's default and the generator's --sizes default are one distribution
    assert sizes_grammar.parse_sizes(format_sizes(spec["sizes"])) == sizes_grammar.parse_sizes(sizes_grammar.DEFAULT)
    assert (spec["reverse_load"], spec["drain_s"], spec["capture"]["snaplen"], spec["trace_favor"],
            spec["workload_impl"]) == (0.1, 20, 128, True, "python")


def test_runs_of_pareto_i_and_of_table_1s_pareto_ii_never_share_a_name_or_a_schedule():
    """Table 1 once meant Pareto I: a run of it and one of today's default name their distribution in the
    run id and the schedule id (and in run.csv's size_dist, the analysis' scenario key)."""
    old = matrix.runs(validate(dict(MINIMAL, sizes={"distribution": "pareto", "shape": 1.3, "mean_pkts": 30})))[0]
    new = matrix.runs(validate(dict(MINIMAL)))[0]
    assert (old.size_tag, new.size_tag) == ("pareto30", "lomax30")
    assert old.run_id != new.run_id and old.schedule_id != new.schedule_id and old.cell != new.cell


def test_a_key_given_replaces_only_that_default():
    spec = spec_of(validate(dict(MINIMAL, topology={"buffer_pkts": 20}, fidelity={"rate_min_share": 0.8})))
    assert spec["topology"]["buffer_pkts"] == 20 and spec["topology"]["reverse_buffer_pkts"] == 20
    assert spec["topology"]["bottleneck_mbps"] == 10 and spec["topology"]["left_delays_ms"] == [0, 12, 25]
    assert spec["fidelity"] == {"rtt_tolerance_ms": 3.0, "rate_min_share": 0.8}


def test_a_section_takes_the_configs_value_before_the_default():
    """Defaults fill the config's top level only: a section without a key inherits what the config says."""
    cfg = validate(dict(MINIMAL, capture={"snaplen": 256}, drain_s=5,
                        sections=[{"name": "a"}, {"name": "b", "aqms": ["favor"], "capture": {"snaplen": 96}},
                                  {"name": "c", "iw": [10], "capture": {}}]))
    specs = {r.section: runspec.run_spec(cfg, r) for r in matrix.runs(cfg)}
    assert specs["a"]["capture"]["snaplen"] == 256 and specs["b"]["capture"]["snaplen"] == 96
    assert specs["c"]["capture"]["snaplen"] == 256            # an empty mapping in a section is no default
    assert specs["a"]["drain_s"] == specs["b"]["drain_s"] == 5


def test_the_testbed_defaults_to_the_local_guest():
    cfg = validate(dict(MINIMAL))
    assert cfg["testbed"]["kind"] == "local-vm" and cfg["testbed"]["vm_name"] == "favorlab"
    assert cfg["pool"]["members"][0]["vm_name"] == "favorlab" and cfg["pool"]["retries"] == 2


def write(path: Path, cfg: dict) -> Path:
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_extends_merges_mappings_and_replaces_lists(tmp_path):
    write(tmp_path / "base.yaml", dict(MINIMAL, aqms=["droptail", "favor"], topology={"buffer_pkts": 20},
                                       fidelity={"rtt_tolerance_ms": 5}))
    child = write(tmp_path / "child.yaml", {"extends": "base.yaml", "name": "child", "aqms": ["favor"],
                                            "topology": {"bottleneck_mbps": 20, "access_mbps": 200}})
    cfg = read_config(child)
    assert cfg["name"] == "child" and "extends" not in cfg
    assert [r.aqm for r in matrix.runs(cfg)] == ["favor"]                    # a list is replaced whole
    spec = spec_of(cfg)
    assert (spec["topology"]["buffer_pkts"], spec["topology"]["bottleneck_mbps"]) == (20, 20)   # merged
    assert spec["fidelity"]["rtt_tolerance_ms"] == 5 and spec["seed"] == spec_of(read_config(tmp_path / "base.yaml"))["seed"]


def test_extends_is_relative_to_the_file_and_a_chain_of_them_works(tmp_path):
    (tmp_path / "sub").mkdir()
    write(tmp_path / "a.yaml", dict(MINIMAL, loads=[0.3]))
    write(tmp_path / "sub" / "b.yaml", {"extends": "../a.yaml", "name": "b", "iw": [10]})
    c = write(tmp_path / "c.yaml", {"extends": "sub/b.yaml", "name": "c"})
    runs = matrix.runs(read_config(c))
    assert [(r.config_name, r.load, r.iw) for r in runs] == [("c", 0.3, 10)]
    # the same config handed over as a dict (as Snakemake does) with the file it came from
    assert matrix.runs(validate(yaml.safe_load(c.read_text()), str(c), origin=c)) == runs


def test_extends_refuses_a_loop_and_a_missing_file_naming_the_fix(tmp_path):
    write(tmp_path / "a.yaml", dict(MINIMAL, extends="b.yaml"))
    write(tmp_path / "b.yaml", {"extends": "a.yaml", "name": "b"})
    with pytest.raises(ConfigError, match=r"makes a loop .*a\.yaml -> .*b\.yaml -> .*a\.yaml.*Fix:"):
        read_config(tmp_path / "a.yaml")
    write(tmp_path / "self.yaml", dict(MINIMAL, extends="self.yaml"))
    with pytest.raises(ConfigError, match="makes a loop"):
        read_config(tmp_path / "self.yaml")
    write(tmp_path / "c.yaml", {"extends": "nowhere.yaml", "name": "c"})
    with pytest.raises(ConfigError, match=r"c\.yaml: extends: 'nowhere\.yaml' is no file .*Fix: name an existing"):
        read_config(tmp_path / "c.yaml")


def test_p4_quick_is_quick_with_its_changes(tmp_path, monkeypatch):
    """p4-quick states what differs from quick and nothing else; the rest comes from quick.yaml."""
    text = yaml.safe_load((REPO / "config" / "p4-quick.yaml").read_text())
    assert text["extends"] == "quick.yaml"
    assert set(text) == {"extends", "name", "description", "aqms", "fidelity"}
    tarball = tmp_path / "p4lang.tar.gz"
    tarball.write_bytes(b"")
    monkeypatch.setenv("FAVORLAB_P4_TARBALL", str(tarball))
    quick, p4 = read_config(REPO / "config" / "quick.yaml"), read_config(REPO / "config" / "p4-quick.yaml")
    assert [r.schedule_id for r in matrix.runs(quick)] == [r.schedule_id for r in matrix.runs(p4)]
    assert p4["fidelity"] == {"rtt_tolerance_ms": 10, "rate_min_share": 0.85}


def test_a_chain_takes_table_1s_rate_queue_and_links_which_are_the_chain_builders_defaults():
    """A chain section keeps the config's bottleneck, queue, access links and MTU (Table 1's by default); the
    chain builder's own defaults for them (a run.json that leaves them out) must be the same numbers."""
    from topologies import chain
    t = schema.defaults()["topology"]
    assert (t["bottleneck_mbps"], t["buffer_pkts"], t["access_mbps"], t["mtu"]) == \
        (chain.DEFAULTS["hop_mbps"], chain.DEFAULTS["buffer_pkts"], chain.DEFAULTS["access_mbps"], chain.DEFAULTS["mtu"])
