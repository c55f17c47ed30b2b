"""Config validation: a bad config is rejected before anything starts, naming the key and the fix."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from orchestrate import matrix, runspec
from orchestrate.config import ConfigError, read_config, validate

REPO = Path(__file__).resolve().parents[2]


def smoke():
    """config/smoke.yaml as written, with the topology it takes from the defaults stated as empty, so a test
    can change one of its keys."""
    return dict(yaml.safe_load((REPO / "config" / "smoke.yaml").read_text()), topology={})


@pytest.mark.parametrize("name", ["smoke", "quick", "paper", "figures", "aqm-bench", "synflood"])
def test_shipped_configs_are_valid(name):
    cfg = read_config(REPO / "config" / f"{name}.yaml")
    assert cfg["name"] == name
    assert matrix.runs(cfg)


def test_aqm_bench_has_every_qdisc_aqm():
    """A new entry of config/aqms.yaml joins the benchmark (the P4 programs need their toolchain: p4-quick; an
    A/A twin is its original under a second name, for config/aa-replay.yaml)."""
    cfg = read_config(REPO / "config" / "aqm-bench.yaml")
    qdisc_aqms = {n for n, e in runspec.read_aqms().items() if e["forward"]["kind"] != "p4" and "twin_of" not in e}
    assert set(cfg["aqms"]) == qdisc_aqms
    assert {r.load for r in matrix.runs(cfg)} == {0.25, 0.55, 0.85, 0.95}


def test_quick_replays_three_steady_loads_on_four_schedules_each():
    """quick's verdict rests on replications (the interval carries the variance between schedules), and the
    A/A replay measures the same design: the same loads, replications and schedules."""
    cfg = read_config(REPO / "config" / "quick.yaml")
    runs = matrix.runs(cfg)
    assert sorted({r.load for r in runs}) == [0.25, 0.55, 0.75]
    assert {r.aqm for r in runs} == {"droptail", "favor"}
    assert sorted({r.replication for r in runs}) == [0, 1, 2, 3]
    assert len(runs) == 24
    aa = matrix.runs(read_config(REPO / "config" / "aa-replay.yaml"))
    assert {r.schedule_id for r in aa} == {r.schedule_id for r in runs}
    assert {r.run_id for r in runs} == {r.run_id for r in aa if r.aqm in ("droptail", "favor")}


@pytest.mark.parametrize("mutate, words", [
    (lambda c: c.update(lods=[0.5]), ["unknown key 'lods'", "loads"]),
    (lambda c: c["topology"].update(bufer_pkts=8), ["unknown key 'bufer_pkts'", "topology", "buffer_pkts"]),
    (lambda c: c.update(aqms=["droptail", "favr"]), ["'favr' is not a known AQM", "config/aqms.yaml"]),
    (lambda c: c.update(loads=[0.5, -0.1]), ["loads[1]", "-0.1"]),
    (lambda c: c.update(tcp_profile="newreno"), ["tcp_profile", "'newreno'"]),
    (lambda c: c.pop("seed"), ["'seed' is a required property"]),
    (lambda c: c.update(warmup_s=30, duration_s=20), ["warmup_s (30) must be below duration_s (20)"]),
    (lambda c: c.update(sizes={"distribution": "bounded_pareto", "shape": 1.3, "mean_pkts": 30}),
     ["needs 'max_pkts'"]),
    (lambda c: c.update(testbed={"kind": "ssh"}), ["kind 'ssh' needs 'inventory'", "needs 'host'"]),
    (lambda c: c["topology"].update(central_delay_ms=5), ["central_delay_ms"]),
    # the axes and sections
    (lambda c: c.update(sections=[{"name": "a"}, {"name": "a"}]), ["two sections are named 'a'"]),
    (lambda c: c.update(sections=[{"name": "a", "duration_s": 40}, {"name": "b", "duration_s": 50}]),
     ["sections 'a' and 'b' both make the run", "duration_s"]),
    (lambda c: c.update(sections=[{"name": "a"}, {"name": "b", "reverse_load": 0.2, "aqms": ["favor"],
                                                  "bottlenecks": [{"bottleneck_mbps": 10, "buffer_pkts": 16}]}]),
     ["both make the schedule", "reverse_load"]),
    (lambda c: c.update(topology={"bottleneck_mbps": 10, "buffer_pkts": 8},
                        bottlenecks=[{"bottleneck_mbps": 10, "buffer_pkts": 8}]),
     ["both topology.bottleneck_mbps/buffer_pkts and bottlenecks"]),
    (lambda c: c.update(bottlenecks=[{"bottleneck_mbps": 10}]), ["'buffer_pkts' is a required property", "bottlenecks[0]"]),
    (lambda c: c.update(cc=["renoo"]), ["cc 'renoo' is not a Linux congestion control", "cubic"]),
    (lambda c: c.update(sections=[{"name": "x", "loads": [0.5], "warmup_s": 99}]),
     ["sections[0] (x)", "warmup_s (99) must be below duration_s"]),
    (lambda c: c.update(sections=[{"name": "x", "aqms": ["favr"]}]), ["sections[0] (x)", "'favr' is not a known AQM"]),
    (lambda c: c.update(sections=[{"name": "x", "seed": 3}]), ["unknown key 'seed'", "sections[0]"]),
])
def test_bad_config_names_key_and_fix(mutate, words):
    cfg = smoke()
    mutate(cfg)
    with pytest.raises(ConfigError) as e:
        validate(cfg, "my.yaml")
    msg = str(e.value)
    assert "my.yaml" in msg and "Fix:" in msg
    for w in words:
        assert w in msg


def test_schedule_shared_across_aqms_and_iw_but_not_loads():
    cfg = validate(dict(smoke(), iw=[2, 10], loads=[0.25, 0.75]))
    runs = matrix.runs(cfg)
    by_sched = {}
    for r in runs:
        by_sched.setdefault(r.schedule_id, set()).add((r.aqm, r.iw))
        # the seed of a schedule depends only on (load, replication)
    assert len(by_sched) == 2
    assert all(len(v) == 4 for v in by_sched.values())
    seeds = {r.schedule_id: runspec.schedule_seed(cfg, r) for r in runs}
    assert len(set(seeds.values())) == 2


def test_run_spec_maps_aqm_names_to_qdiscs():
    cfg = read_config(REPO / "config" / "smoke.yaml")
    run = next(r for r in matrix.runs(cfg) if r.aqm == "favor")
    spec = runspec.run_spec(cfg, run)
    assert spec["aqm"]["forward"] == {"kind": "favor", "args": ["limit", "8"]}
    assert spec["aqm"]["reverse"] == {"kind": "pfifo", "args": ["limit", "8"]}
    assert spec["tcp"]["iw"] == 2 and spec["tcp"]["sack"] is False and spec["tcp"]["initial_rto_ms"] == 3000
    assert spec["run_id"] == "dumbbell-10M-buf8-lomax30-paper-reno_favor_load0.75_iw2_rep0"


def test_snakemake_rejects_bad_config_before_any_job(tmp_path):
    bad = smoke()
    bad["aqms"] = ["droptail", "favr"]
    bad["name"] = "bad-config-test"
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(bad))
    r = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--configfile", str(p), "--cores", "1"],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "'favr' is not a known AQM" in r.stderr + r.stdout
    assert not (REPO / "results" / "bad-config-test").exists()


@pytest.mark.parametrize("config, schedules, runs", [("quick", 12, 24), ("p4-quick", 12, 24), ("figures", 14, 40),
                                                             ("aqm-bench", 4, 72)])
def test_snakemake_plans_the_whole_matrix(config, schedules, runs, tmp_path):
    # --forceall: the whole matrix, even where results/<name> already holds a finished reproduction.
    # p4-quick's AQM names have a hyphen (p4-favorqueue): every rule must accept them as run ids. Its
    # toolchain prefix only has to exist for planning.
    tarball = tmp_path / "p4lang.tar.gz"
    tarball.write_bytes(b"")
    r = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--forceall", "--configfile",
                        f"config/{config}.yaml", "--cores", "1", "--quiet", "rules"], cwd=REPO,
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, FAVORLAB_P4_TARBALL=str(tarball)))
    assert r.returncode == 0, r.stderr
    out = r.stdout + r.stderr
    # quick: 12 schedules (one per load and replication), 24 runs and extractions, figures, verdict, report, all; figures:
    # one schedule per (scenario, rate, sizes, load), shared by its sections' AQMs, buffers and IWs
    for rule, n in [("schedule", schedules), ("run", runs), ("extract", runs), ("figures", 1), ("verdict", 1),
                    ("report", 1)]:
        assert any(line.split()[:2] == [rule, str(n)] for line in out.splitlines()), (rule, out)


def test_fidelity_thresholds_default_and_override(tmp_path):
    """The runner's validity thresholds reach the run spec: defaults for the kernel configs, the
    stated looser ones for p4-quick; out-of-range values are rejected before any run."""
    quick = read_config(REPO / "config" / "quick.yaml")
    spec = runspec.run_spec(quick, matrix.runs(quick)[0])
    assert spec["fidelity"] == {"rtt_tolerance_ms": 3.0, "rate_min_share": 0.9}
    cfg = yaml.safe_load((REPO / "config" / "quick.yaml").read_text())
    cfg["fidelity"] = {"rtt_tolerance_ms": 10}
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(cfg))
    assert runspec.run_spec(read_config(p), matrix.runs(read_config(p))[0])["fidelity"] == \
        {"rtt_tolerance_ms": 10, "rate_min_share": 0.9}
    cfg["fidelity"] = {"rate_min_share": 1.5}
    p.write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConfigError, match="rate_min_share"):
        read_config(p)


def test_config_strings_reach_the_shell_as_one_word(tmp_path):
    """Inventory and host strings come from the user's config: a quote or `;` in them must not run anything."""
    import json
    tb = {"kind": "ssh", "inventory": "inv'; touch " + str(tmp_path / "pwned") + "; echo '", "host": "h$(id)"}
    out = subprocess.run(["bash", "-c", f"echo {runspec.shell_json(tb)}"], capture_output=True, text=True).stdout
    assert json.loads(out) == tb and not (tmp_path / "pwned").exists()
    rules = (REPO / "workflow" / "rules" / "testbed.smk").read_text()
    # the run, the pool brought up before it (onstart) and down after it (onsuccess, onerror)
    assert "'{tb}'" not in rules and "'{pool}'" not in rules and rules.count("runspec.shell_json(") == 4


def test_a_validated_config_validates_again_unchanged():
    """capacity.py and others edit a loaded config and validate it again: what validate derives (the pool,
    the P4 flag) must not read as unknown keys."""
    path = REPO / "config" / "quick.yaml"
    cfg = read_config(path)
    # the same source, since each section's `where` (what its messages begin with) names it
    again = validate(cfg, str(path))
    assert again == cfg


# ------------------------------------------------------------------ matrix axes and sections


def test_every_axis_is_in_the_run_id_and_the_spec():
    """Bottleneck pairs, size distributions and congestion controls multiply the matrix; each run's id and
    run.json name its values (the scenario key of every table is made from run.json)."""
    c = dict(smoke(), loads=[0.5], aqms=["droptail", "favor"],
             bottlenecks=[{"bottleneck_mbps": 10, "buffer_pkts": 8},
                          {"bottleneck_mbps": 100, "buffer_pkts": 83, "access_mbps": 1000}],
             sizes=[{"distribution": "pareto", "shape": 1.3, "mean_pkts": m} for m in (10, 30)],
             cc=["reno", "cubic"])
    c["topology"] = {k: v for k, v in c["topology"].items() if k not in ("bottleneck_mbps", "buffer_pkts",
                                                                           "reverse_buffer_pkts")}
    cfg = validate(c)
    runs = matrix.runs(cfg)
    assert len(runs) == 2 * 2 * 2 * 2 and len({r.run_id for r in runs}) == 16
    specs = {r.run_id: runspec.run_spec(cfg, r) for r in runs}
    s = specs["dumbbell-100M-buf83-pareto10-paper-cubic_favor_load0.50_iw2_rep0"]
    assert s["topology"]["bottleneck_mbps"] == 100 and s["topology"]["buffer_pkts"] == 83
    assert s["topology"]["reverse_buffer_pkts"] == 83 and s["topology"]["access_mbps"] == 1000
    assert s["aqm"]["forward"]["args"] == ["limit", "83"]
    assert s["tcp"]["congestion_control"] == "cubic" and s["tcp"]["profile"] == "paper"
    assert s["sizes"] == {"distribution": "pareto", "shape": 1.3, "mean_pkts": 10}
    s10 = specs["dumbbell-10M-buf8-pareto30-paper-reno_droptail_load0.50_iw2_rep0"]
    assert s10["topology"]["access_mbps"] == 100 and s10["topology"]["reverse_buffer_pkts"] == 8
    # a schedule per (bottleneck rate, sizes): shared by the AQMs and congestion controls, not across rates
    assert len({r.schedule_id for r in runs}) == 4
    args = runspec.schedule_args(cfg, next(r for r in runs if r.bottleneck_mbps == 100 and dict(r.sizes)["mean_pkts"] == 10))
    assert args[args.index("--capacity-mbps") + 1] == "100" and "mean_pkts=10" in args[args.index("--sizes") + 1]


def test_buffer_sweep_replays_one_schedule_at_every_buffer():
    """F9: DropTail vs FaQ at each buffer size on the same flows, so the sweep compares like with like."""
    c = dict(smoke(), bottlenecks=[{"bottleneck_mbps": 10, "buffer_pkts": b} for b in (8, 16, 32)])
    for k in ("bottleneck_mbps", "buffer_pkts", "reverse_buffer_pkts"):
        c["topology"].pop(k, None)
    runs = matrix.runs(validate(c))
    assert {r.buffer_pkts for r in runs} == {8, 16, 32}
    assert len({r.schedule_id for r in runs}) == len(c["loads"]) * c["replications"]


def test_sections_are_a_union_of_matrices_and_a_shared_run_is_made_once():
    c = dict(smoke(), loads=[0.25], aqms=["droptail", "favor"], sections=[
        {"name": "table1", "loads": [0.25, 0.85]},
        {"name": "iw", "iw": [2, 10], "figures": ["F27"]},
        {"name": "sizes", "sizes": [{"distribution": "exponential", "mean_pkts": 6}], "tcp_profile": "linux"},
    ])
    cfg = validate(c)
    runs = matrix.runs(cfg)
    ids = [r.run_id for r in runs]
    assert len(ids) == len(set(ids))
    # table1: 2 loads x 2 AQMs; iw: its IW 2 runs at load 0.25 are table1's; sizes: 2 more
    assert len(runs) == 4 + 2 + 2
    assert {r.section for r in runs if r.iw == 2 and r.size_tag == "lomax30" and r.load == 0.25} == {"table1"}
    lin = [r for r in runs if r.section == "sizes"]
    assert {r.cell for r in lin} == {"dumbbell-10M-buf8-exp6-linux-cubic"}
    spec = runspec.run_spec(cfg, lin[0])
    assert spec["tcp"]["sack"] is True and spec["sizes"] == {"distribution": "exponential", "mean_pkts": 6}


def test_a_validated_config_validates_again_with_the_same_runs():
    """capacity.py edits a validated config and validates it again: what validate derives is not a key."""
    cfg = read_config(REPO / "config" / "quick.yaml")
    again = validate(cfg)
    assert [r.run_id for r in matrix.runs(again)] == [r.run_id for r in matrix.runs(cfg)]


def test_persistent_scenario_section():
    """Section 5.3: short exponential flows at load 0.2 and 50 persistent flows from 40 s, on the dumbbell."""
    c = dict(smoke(), sections=[{"name": "persistent", "scenario": "persistent", "loads": [0.2],
                                 "sizes": {"distribution": "exponential", "mean_pkts": 6},
                                 "duration_s": 120, "warmup_s": 60}])
    cfg = validate(c)
    run = matrix.runs(cfg)[0]
    spec = runspec.run_spec(cfg, run)
    assert run.run_id.startswith("persistent-10M-buf8-exp6-paper-reno_")
    assert spec["workload"] == {"kind": "persistent", "flows": 50, "start_s": 40.0}
    assert spec["topology"]["kind"] == "dumbbell" and spec["scenario"] == "persistent"
    args = runspec.schedule_args(cfg, run)
    assert args[args.index("--topology") + 1] == "dumbbell"
    # the web scenario's spec says so too
    plain = read_config(REPO / "config" / "quick.yaml")
    assert runspec.run_spec(plain, matrix.runs(plain)[0])["workload"] == {"kind": "web"}
    c["sections"][0]["persistent"] = {"start_s": 200}
    with pytest.raises(ConfigError, match=r"persistent.start_s \(200\) must be below duration_s"):
        validate(c)
    with pytest.raises(ConfigError, match="persistent is for scenario 'persistent'"):
        validate(dict(smoke(), persistent={"flows": 5}))


def test_figures_config_has_a_section_for_every_figure_of_the_paper():
    """config/figures.yaml is the small config that draws every figure: each figure id of
    analysis/figures.yaml is some section's, the five-hop chain's F26 included (its section `chain`)."""
    figs = yaml.safe_load((REPO / "analysis" / "figures.yaml").read_text())
    cfg = read_config(REPO / "config" / "figures.yaml")
    covered = {f for sec in cfg["matrix"] for f in sec["figures"]}
    assert covered <= set(figs)
    # the figures beyond the paper (no number: X1, the SYN flood) come from their own configs
    assert {f for f, v in figs.items() if "number" in v} == covered
    assert all("section" in v for v in figs.values() if "number" not in v)
    runs = matrix.runs(cfg)
    by = {s["name"]: {r for r in runs if r.section == s["name"]} for s in cfg["matrix"]}
    # F9 sweeps the buffer on one schedule; F6/F7 compare three size distributions; F3(b) is 100 Mb/s
    sweep = [r for r in matrix.all_points(cfg) if r.section == "buffer-sweep"]
    assert sorted({r.buffer_pkts for r in sweep}) == [8, 24, 64, 100] and len({r.schedule_id for r in sweep}) == 1
    assert {dict(r.sizes)["mean_pkts"] for r in matrix.all_points(cfg) if r.section == "sizes"} == {10, 30, 100}
    assert {r.bottleneck_mbps for r in by["bottleneck-100"]} == {100}
    assert all(r.scenario == "persistent" for r in by["persistent"]) and by["persistent"]


def test_paper_config_is_every_figure_at_the_papers_scale():
    """config/paper.yaml covers the same figures as config/figures.yaml, with the paper's durations and
    replications (Section 4, Table 4; 2000 s for Section 5.3, 5000 s for Section 8)."""
    figs = yaml.safe_load((REPO / "analysis" / "figures.yaml").read_text())
    cfg = read_config(REPO / "config" / "paper.yaml")
    assert {f for sec in cfg["matrix"] for f in sec["figures"]} == {f for f, v in figs.items() if "number" in v}
    runs = matrix.runs(cfg)
    by = {s["name"]: [r for r in runs if r.section == s["name"]] for s in cfg["matrix"]}
    table1 = by["table1"]
    assert {r.aqm for r in table1} == {"droptail", "favor", "choke", "las", "run2c"}
    assert {r.iw for r in table1} == {2, 10} and len({r.load for r in table1}) == 10
    assert {r.replication for r in table1} == set(range(10))
    spec = runspec.run_spec(cfg, table1[0])
    assert (spec["duration_s"], spec["warmup_s"]) == (500, 50)
    assert {r.bottleneck_mbps for r in by["bottleneck-100"]} == {100}
    sweep = {r.buffer_pkts for r in matrix.all_points(cfg) if r.section == "buffer-sweep"}
    assert min(sweep) == 8 and max(sweep) == 100 and len(sweep) >= 6
    assert runspec.run_spec(cfg, by["persistent"][0])["duration_s"] == 2000
    assert runspec.run_spec(cfg, by["chain"][0])["duration_s"] == 5000


# ------------------------------------------------------------------ scenario chain (Section 8)


def chain_config(**section):
    """smoke.yaml (a dumbbell config) with one chain section: the dumbbell's topology keys at the top level
    are not the chain's and are left out of it."""
    return dict(smoke(), sections=[dict({"name": "chain", "scenario": "chain", "duration_s": 300,
                                         "warmup_s": 10}, **section)])


def test_chain_section_makes_chain_runs_with_the_papers_defaults():
    cfg = validate(chain_config())
    runs = matrix.runs(cfg)
    assert sorted(r.run_id for r in runs) == [
        "chain-10M-buf8-lomax30-paper-reno_droptail_load0.00_iw2_rep0",
        "chain-10M-buf8-lomax30-paper-reno_favor_load0.00_iw2_rep0"]
    specs = {r.aqm: runspec.run_spec(cfg, r) for r in runs}
    fq, dt = specs["favor"], specs["droptail"]
    t = fq["topology"]
    assert t["kind"] == "chain" and fq["scenario"] == "chain"
    # the paper's Section 8: five 10 Mb/s hops, 1 ms each, 25 ms user links, ten cross flows per hop,
    # the AQM at the first hop only; access 100 Mb/s; the dumbbell's keys are not there
    assert (t["hops"], t["hop_mbps"], t["bottleneck_mbps"], t["buffer_pkts"], t["reverse_buffer_pkts"]) == (5, 10, 10, 8, 8)
    assert (t["hop_delay_ms"], t["user_delay_ms"], t["cross_flows_per_hop"], t["aqm_hops"]) == (1, 25, 10, [1])
    assert t["cross_delays_ms"] == [10 * i for i in range(1, 11)] and t["access_mbps"] == 100
    assert not {"left_delays_ms", "right_delays_ms", "central_delay_ms"} & set(t)
    # aqms.yaml's placeholders from the hop rate and buffer
    assert fq["aqm"]["forward"] == {"kind": "favor", "args": ["limit", "8"]}
    assert dt["aqm"]["forward"] == {"kind": "pfifo", "args": ["limit", "8"]}
    assert fq["workload"] == {"kind": "reference", "warmup_cross_s": 10.0}
    assert fq["load"] == 0.0 and fq["reverse_load"] == 0.0
    assert fq["capture"]["points"] == ["sender-us", "sender-ur", "bneck-in", "bneck-out"]
    # one seed per replication, the same for both AQMs: the reference user replays the same sequence
    assert fq["seed"] == dt["seed"] and len({r.schedule_id for r in runs}) == 1
    two = validate(chain_config(replications=2))
    assert len({runspec.run_spec(two, r)["seed"] for r in matrix.runs(two)}) == 2
    # the controller's schedule for a chain run is the header of a closed-loop schedule
    args = runspec.schedule_args(cfg, runs[0])
    assert args[args.index("--topology") + 1] == "chain" and args[args.index("--load") + 1] in ("0", "0.0")
    assert args[args.index("--reverse-load") + 1] == "0"
    from contract import spec as specmod
    assert specmod.validate(fq) and specmod.validate(dt)


def test_chain_axes_and_keys_reach_run_json():
    """The bottleneck axis is the hop rate and buffer; the chain's keys override the paper's values."""
    cfg = validate(chain_config(
        topology={"hops": 3, "cross_flows_per_hop": 2, "cross_delays_ms": [5, 50], "aqm_hops": [1, 2],
                  "user_delay_ms": 10},
        bottlenecks=[{"bottleneck_mbps": 10, "buffer_pkts": 8}, {"bottleneck_mbps": 20, "buffer_pkts": 16}],
        reference={"warmup_cross_s": 4}))
    runs = matrix.runs(cfg)
    spec = runspec.run_spec(cfg, next(r for r in runs if r.aqm == "favor" and r.buffer_pkts == 16))
    assert spec["run_id"] == "chain-20M-buf16-lomax30-paper-reno_favor_load0.00_iw2_rep0"
    t = spec["topology"]
    assert (t["hops"], t["hop_mbps"], t["buffer_pkts"], t["cross_delays_ms"], t["aqm_hops"]) == (3, 20, 16, [5, 50], [1, 2])
    assert spec["aqm"]["forward"]["args"] == ["limit", "16"] and spec["workload"]["warmup_cross_s"] == 4


@pytest.mark.parametrize("section, words", [
    ({"topology": {"hops": 0}}, ["topology.hops=0", "1..20"]),
    ({"topology": {"aqm_hops": [7]}}, ["topology.aqm_hops=[7]", "1..hops (5)"]),
    ({"topology": {"cross_flows_per_hop": 2}}, ["topology.cross_delays_ms", "cross_flows_per_hop (2)"]),
    ({"topology": {"left_delays_ms": [0, 1, 2]}}, ["topology.left_delays_ms is for scenario dumbbell"]),
    ({"topology": {"hop_count": 5}}, ["unknown key 'hop_count'", "hops"]),
    ({"loads": [0.5]}, ["loads has no meaning for scenario 'chain'"]),
    ({"sizes": {"distribution": "bounded_pareto", "shape": 1.3, "mean_pkts": 30, "max_pkts": 1000}},
     ["reference user", "'bounded_pareto'"]),
    ({"aqms": ["p4-favorqueue"]}, ["P4 switch", "chain"]),
    ({"reference": {"warmup_cross_s": -1}}, ["sections[0].reference.warmup_cross_s"]),
])
def test_bad_chain_section_names_the_field(section, words):
    c = chain_config(**section)
    with pytest.raises(ConfigError) as e:
        validate(c, "my.yaml")
    msg = str(e.value)
    assert "my.yaml" in msg and "Fix:" in msg
    for w in words:
        assert w in msg, msg


def test_chain_keys_in_a_dumbbell_section_and_reference_outside_the_chain_are_refused():
    c = dict(smoke(), sections=[{"name": "d", "topology": {"hops": 3}}])
    with pytest.raises(ConfigError, match=r"topology.hops is for scenario chain"):
        validate(c)
    with pytest.raises(ConfigError, match="reference is for scenario 'chain'"):
        validate(dict(smoke(), reference={"warmup_cross_s": 5}))


def test_figures_config_chain_section():
    cfg = read_config(REPO / "config" / "figures.yaml")
    runs = [r for r in matrix.runs(cfg) if r.section == "chain"]
    assert {r.aqm for r in runs} == {"droptail", "favor"} and {r.scenario for r in runs} == {"chain"}
    spec = runspec.run_spec(cfg, runs[0])
    assert spec["topology"]["aqm_hops"] == [1] and spec["topology"]["hops"] == 5
    assert 100 <= spec["duration_s"] < 5000


def test_synflood_is_an_axis_that_keeps_the_schedule():
    """Each flood rate is a run of its own (its id says the rate), every rate replays the same schedule (the
    legitimate flows pair up with and without the flood), and run.json tells the runner what to start."""
    cfg = read_config(REPO / "config" / "synflood.yaml")
    runs = matrix.runs(cfg)
    assert len(runs) == 12 and {r.flood_x for r in runs} == {0.0, 0.1, 0.2, 0.3}
    by = {(r.aqm, r.flood_x): r for r in runs}
    assert by[("favor", 0.0)].run_id == "dumbbell-10M-buf8-lomax30-paper-reno_favor_load0.50_iw2_rep0"
    assert by[("favor", 0.3)].run_id == "dumbbell-10M-buf8-lomax30-paper-reno-syn0.3x_favor_load0.50_iw2_rep0"
    assert len({r.schedule_id for r in runs}) == 1
    spec = runspec.run_spec(cfg, by[("favor_burst1", 0.2)])
    assert spec["flood"] == {"kind": "synflood", "rate_x": 0.2, "pps": pytest.approx(10e6 / 8 / 54 * 0.2),
                             "attacker": "a1", "target": "b1", "spoof": "10.66.0.0/16"}
    assert runspec.run_spec(cfg, by[("droptail", 0.0)])["flood"] is None


@pytest.mark.parametrize("change, words", [
    ({"synflood": {"rates_x": [1], "attacker": "b1"}}, ["'b1'", "attacker"]),
    ({"synflood": {"rates_x": [1], "target": "a2"}}, ["'a2'", "target"]),
])
def test_synflood_misuse_is_named(change, words):
    cfg = yaml.safe_load((REPO / "config" / "synflood.yaml").read_text())
    cfg.update(change)
    with pytest.raises(ConfigError) as e:
        validate(cfg)
    assert all(w in str(e.value) for w in words), str(e.value)


def test_synflood_in_a_chain_section_is_refused():
    with pytest.raises(ConfigError) as e:
        validate(chain_config(synflood={"rates_x": [1]}))
    assert "synflood is for the dumbbell" in str(e.value) and "chain" in str(e.value), str(e.value)


def test_no_test_file_defines_two_tests_of_one_name():
    """A second definition silently replaces the first, which then never runs."""
    import ast
    files = subprocess.run(["git", "ls-files", "*test_*.py"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    assert "orchestrate/tests/test_config.py" in files
    twice = {}
    for f in files:
        tree = ast.parse((REPO / f).read_text())
        names = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            twice[f] = dup
    assert twice == {}
