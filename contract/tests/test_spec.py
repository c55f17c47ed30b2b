"""run.json's validator (contract.spec): every refusal names the field."""
import copy
import json
import re

import pytest

from contract import spec as specmod
from contract.tests.examples import SPEC, chain_spec


@pytest.mark.parametrize("path,value", [
    ("topology.bottleneck_mbps", -1), ("topology.bottleneck_mbps", None), ("tcp.iw", 0),
    ("tcp.profile", "ns2"), ("aqm.forward.kind", "pfifo; rm"), ("capture.snaplen", 10),
    ("run_id", "a/b"), ("topology.kind", "chain"), ("tcp.initial_rto_ms", 5),
])
def test_validation_names_the_field(path, value):
    s = copy.deepcopy(SPEC)
    cur = s
    *head, last = path.split(".")
    for k in head:
        cur = cur[k]
    cur[last] = value
    with pytest.raises(specmod.SpecError, match=path.replace(".", r"\.")):
        specmod.validate(s)


@pytest.mark.parametrize("workload, words", [
    ({"kind": "bulk"}, "workload="), ({"kind": "persistent", "start_s": 5}, "workload.flows"),
    ({"kind": "persistent", "flows": 10, "start_s": 20}, "workload.start_s"),
])
def test_workload_validation_names_the_field(workload, words):
    with pytest.raises(specmod.SpecError, match=re.escape(words)):
        specmod.validate(dict(copy.deepcopy(SPEC), workload=workload))
    assert specmod.validate(dict(copy.deepcopy(SPEC), workload={"kind": "persistent", "flows": 3, "start_s": 5}))


def test_missing_field_and_central_delay_named():
    s = copy.deepcopy(SPEC)
    del s["aqm"]["reverse"]
    with pytest.raises(specmod.SpecError, match=r"aqm\.reverse\.kind is missing"):
        specmod.validate(s)
    s = copy.deepcopy(SPEC)
    s["topology"]["central_delay_ms"] = 5
    with pytest.raises(specmod.SpecError, match="central_delay_ms"):
        specmod.validate(s)
    assert specmod.validate(copy.deepcopy(SPEC))


def test_load_requires_schedule(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps(SPEC))
    with pytest.raises(specmod.SpecError, match="schedule"):
        specmod.load(tmp_path)
    (tmp_path / "schedule.csv").write_text("flow_id\n")
    assert specmod.load(tmp_path)["run_id"] == SPEC["run_id"]


def test_spec_accepts_the_chain_and_its_reference_workload():
    assert specmod.validate(chain_spec())
    assert specmod.validate(chain_spec(hops=3, cross_flows_per_hop=2, cross_delays_ms=[10, 50], aqm_hops=[]))


@pytest.mark.parametrize("mutate, words", [
    (lambda s: s["topology"].update(hops=0), "topology.hops=0"),
    (lambda s: s["topology"].update(aqm_hops=[9]), "topology.aqm_hops=[9]"),
    (lambda s: s["topology"].update(left_delays_ms=[0, 1, 2]), "topology.left_delays_ms: not a field of kind 'chain'"),
    (lambda s: s.update(workload={"kind": "web"}), "topology.kind='chain' does not run workload.kind='web'"),
    (lambda s: s.pop("workload"), "topology.kind='chain' does not run workload.kind='web'"),
    (lambda s: s["workload"].update(warmup_cross_s=-1), "workload.warmup_cross_s=-1"),
    (lambda s: s.update(sizes={"distribution": "bounded_pareto"}), "sizes.distribution='bounded_pareto'"),
    (lambda s: s["aqm"]["forward"].update(kind="p4"), "aqm.forward.kind='p4'"),
])
def test_chain_spec_validation_names_the_field(mutate, words):
    s = chain_spec()
    mutate(s)
    with pytest.raises(specmod.SpecError, match=re.escape(words)):
        specmod.validate(s)


def test_reference_workload_is_refused_on_the_dumbbell():
    with pytest.raises(specmod.SpecError, match=re.escape("topology.kind='dumbbell' does not run workload.kind='reference'")):
        specmod.validate(dict(copy.deepcopy(SPEC), workload={"kind": "reference", "warmup_cross_s": 5}))
