"""The report's opening summary: the numbers a reader takes away before reading anything else."""
import json
from datetime import datetime, timezone

from analysis import report


def _run(tmp_path, rid, tries, valid=True):
    d = tmp_path / rid
    d.mkdir()
    (d / "DONE").write_text("")
    (d / "run.json").write_text(json.dumps({"aqm": {"name": "favor"}, "load": 0.5}))
    (d / "fidelity.json").write_text(json.dumps({"valid": valid, "reasons": [] if valid else ["cpu_busy"]}))
    (d / "attempts.json").write_text(json.dumps(tries))


def _utc(hour: int, minute: int) -> str:
    return datetime(2026, 11, 23, hour, minute, tzinfo=timezone.utc).isoformat()


def test_summary_counts_attempts_and_sums_every_attempts_wall_time(tmp_path):
    _run(tmp_path, "a", [{"attempt": 1, "valid": True, "wall_s": 120.0, "started_utc": _utc(10, 0),
                          "favorlab_commit": "0123456789ab"}])
    _run(tmp_path, "b", [{"attempt": 1, "valid": False, "wall_s": 100.0, "started_utc": _utc(10, 2)},
                         {"attempt": 2, "valid": True, "wall_s": 140.0, "started_utc": _utc(10, 4)}])
    runs = report.runs_section(str(tmp_path))
    s = report.summary([{"status": "holds"}, {"status": "insufficient data"}], runs)
    assert "valid at the first attempt 1, after retries 1, never 0" in s
    assert "<b>1</b> holds" in s and "<b>1</b> insufficient data" in s
    w = report.wall_time(runs, now=datetime(2026, 11, 23, 10, 30, tzinfo=timezone.utc))
    assert "<b>6.0 min</b> of runs" in w and "<b>30.0 min</b> from the first run's start" in w
    # provenance names the commit the runs were made from, not only the report's own
    assert "<td>0123456789ab</td>" in report.provenance(runs, [])


def test_wall_time_says_so_when_runs_did_not_record_it(tmp_path):
    _run(tmp_path, "a", [{"attempt": 1, "valid": True}])
    assert "not recorded" in report.wall_time(report.runs_section(str(tmp_path)))


def test_cpu_section_names_the_groups_that_used_the_cpu(tmp_path):
    _run(tmp_path, "a", [{"attempt": 1, "valid": True}])
    (tmp_path / "a" / "cpu.json").write_text(json.dumps({
        "modes": {"user": 0.5, "system": 0.2, "softirq": 0.15, "idle": 0.15, "iowait": 0.0},
        "processes": [{"group": "workload client", "share": 0.4}, {"group": "tcpdump", "share": 0.1}]}))
    s = report.cpu_section(report.runs_section(str(tmp_path)))
    assert "<td>85%</td>" in s and "workload client 40%; tcpdump 10%" in s
    assert "<td>not recorded</td>" in s                # made before the runner sampled memory
    c = json.loads((tmp_path / "a" / "cpu.json").read_text())
    (tmp_path / "a" / "cpu.json").write_text(json.dumps(dict(c, mem_total_mib=1987, mem_peak_used_mib=412)))
    assert "<td>412 of 1987 MiB</td>" in report.cpu_section(report.runs_section(str(tmp_path)))


def test_kernel_health_section_shows_the_soak_checks_and_marks_a_failure(tmp_path):
    _run(tmp_path, "a", [{"attempt": 1, "valid": True}])
    _run(tmp_path, "old", [{"attempt": 1, "valid": True}])          # made before the runner had the checks
    checks = {"kernel_warnings": {"measured": 0, "ok": True},
              "slab_growth": {"measured": {"start_mib": 41.2, "end_mib": 43.0, "max_mib": 47.5, "reclaimable_start_mib": 9.0,
                                           "reclaimable_end_mib": 63.5}, "ok": True},
              "favor_counts": {"measured": [{"router": "rl", "enqueued": 900, "sent_pushed_trimmed_queued": 900}], "ok": True},
              "favor_trace": {"measured": 0, "ok": True},
              "favor_trace_counts": {"measured": {"favored": 600, "standard": 300, "after_the_trace": {"favored": 2}}, "ok": True}}
    (tmp_path / "a" / "fidelity.json").write_text(json.dumps({"valid": True, "reasons": [], "checks": checks}))
    s = report.kernel_health_section(report.runs_section(str(tmp_path)))
    assert "<td>0 warnings</td>" in s and "<td>41.2 / 43.0 (47.5)</td>" in s and "<td>rl 900 = 900</td>" in s
    assert "<td>9.0 / 63.5</td>" in s and ">old<" not in s
    assert "<td>all traced: favored 600, standard 300; after the trace stopped: favored 2</td>" in s
    checks["kernel_warnings"] = {"measured": {"lines": 1, "first": ["<4> WARNING: CPU: 0 PID: 1 at sch_favor"]}, "ok": False}
    checks["favor_trace_counts"] = {"measured": {"favored": {"trace": 599, "counters_at_stop": 600, "counters_after": 600}},
                                    "ok": False}
    (tmp_path / "a" / "fidelity.json").write_text(json.dumps({"valid": False, "reasons": [], "checks": checks}))
    s = report.kernel_health_section(report.runs_section(str(tmp_path)))
    assert "WARNING: CPU: 0" in s and s.count("(FAILED)") == 2
    assert "recorded the kernel checks" in report.kernel_health_section(report.runs_section(str(tmp_path / "none")))


def test_tables_name_the_aqms_as_the_paper_and_the_figures_do():
    assert report.aqm_name("favor") == "FaQ" and report.aqm_name("droptail") == "DropTail"
    assert report.aqm_name("not-in-aqms-yaml") == "not-in-aqms-yaml"
    html = report.unfinished_section([{"aqm": "favor", "load": "0.5", "flows_window": "10", "steady": "0"}])
    assert "Not steady: 1 run(s)</b>: FaQ at load 0.5" in html and "<td>FaQ</td>" in html


RANK_COLS = ["scenario", "load", "aqm", "aqm_name", "metric", "better", "schedules", "flows_counted", "min_flows", "estimate", "low",
             "high", "interval", "rank", "rank_median", "rank_lo", "rank_hi", "rank_label", "p_first", "rank_resamples", "rank_method",
             "window_flows", "unfinished", "left_out", "note"]


def _ranking(tmp_path, aqms, loads=("0.55", "0.95")):
    """figures/ranking.csv as R/ranking.R writes it: FaQ fastest, DropTail and CHOKe tied, no long flow (NA)."""
    import csv
    fdir = tmp_path / "figures"
    fdir.mkdir()
    est = {"droptail": (0.5, 0.45, 0.55, "2-3"), "favor": (0.2, 0.18, 0.22, "1"), "choke": (0.52, 0.47, 0.57, "2-3"),
           "las": (0.9, 0.85, 0.95, "4")}
    with open(fdir / "ranking.csv", "w", newline="") as f:
        w = csv.DictWriter(f, RANK_COLS)
        w.writeheader()
        for load in loads:
            for a in aqms:
                e, lo, hi, lab = est[a]
                base = dict(scenario="dumbbell 10Mb/s buf8", load=load, aqm=a, aqm_name=a, better="lower", schedules="1",
                            window_flows="200", unfinished="3" if a == "choke" else "0", left_out="3",
                            interval="bootstrap over flows within 1 schedule(s)")
                w.writerow(dict(base, metric="latency_mean_short", flows_counted="97", estimate=e, low=lo, high=hi,
                                rank=lab.split("-")[0], rank_lo=lab.split("-")[0], rank_hi=lab.split("-")[-1],
                                rank_label=lab, note=""))
                w.writerow(dict(base, metric="latency_mean_long", flows_counted="0", estimate="", low="", high="", rank="",
                                rank_label="", note="no data (no flow of the class, or no bottleneck capture)"))
                w.writerow(dict(base, metric="drop_ratio", flows_counted="197", estimate=0.012, low=0.01, high=0.014,
                                rank="1", rank_lo="1", rank_hi=str(len(aqms)), rank_label=f"1-{len(aqms)}", note=""))
    return fdir


def test_ranking_section_one_table_per_load_with_intervals_ties_and_na(tmp_path):
    fdir = _ranking(tmp_path, ["droptail", "favor", "choke"])
    s = report.ranking_section(str(fdir))
    assert s.count("<table>") == 2 and "<h3>load 0.55: dumbbell 10Mb/s buf8</h3>" in s and "<h3>load 0.95:" in s
    t = s[s.index("<h3>load 0.55"):s.index("<h3>load 0.95")]
    # AQM rows under the paper's names, in the file's order; metric columns
    assert t.index("<td>DropTail</td>") < t.index("<td>FaQ</td>") < t.index("<td>CHOKe</td>")
    assert "<th>mean latency, short (s)</th>" in t and "<th>drop ratio</th>" in t
    assert "<td><b>0.2 [0.18, 0.22] 1</b></td>" in t                  # the best, in bold
    assert "<td>0.5 [0.45, 0.55] 2-3</td>" in t and "<td>0.52 [0.47, 0.57] 2-3</td>" in t   # overlapping: a range
    assert "<td>NA</td>" in t                                         # no long flow: NA, no rank
    assert "<b>1.2% [1%, 1.4%] 1-3</b>" in t                          # may be first: bold
    assert "<td>3 of 200</td>" in t                                   # CHOKe's unfinished window flows
    assert "mean latency, short (s) 97" in t and "no data (no flow of the class" in t
    # and the report has the section
    h = report.render(str(tmp_path))
    assert "<h2>AQM ranking (figures/ranking.csv)</h2>" in h


def test_ranking_section_counts_the_ranked_aqms_flows_not_an_unranked_ones(tmp_path):
    import csv
    fdir = _ranking(tmp_path, ["droptail", "favor", "choke"], loads=("0.55",))
    rows = list(csv.DictReader(open(fdir / "ranking.csv")))
    for r in rows:
        if r["aqm"] == "droptail":       # its run invalid: listed, not ranked, no flow counted
            r.update(flows_counted="0", estimate="", low="", high="", rank="", rank_label="",
                     note="not ranked: its run of this load is invalid or missing")
    with open(fdir / "ranking.csv", "w", newline="") as f:
        w = csv.DictWriter(f, RANK_COLS)
        w.writeheader()
        w.writerows(rows)
    s = report.ranking_section(str(fdir))
    assert "mean latency, short (s) 97" in s and "drop ratio 197" in s
    assert s.count("<td>NA</td>") >= 3 and "its run of this load is invalid or missing" in s


def test_ranking_section_left_out_with_fewer_than_three_aqms(tmp_path):
    _ranking(tmp_path, ["droptail", "favor"])
    assert report.ranking_section(str(tmp_path / "figures")) is None
    assert "AQM ranking" not in report.render(str(tmp_path))
    assert report.ranking_section(str(tmp_path / "nowhere")) is None


def test_ranking_cell_says_not_ranked_when_an_estimate_has_no_rank():
    r = {"metric": "syn_loss", "estimate": "0.02", "low": "0.01", "high": "0.03", "rank_label": ""}
    assert report.ranking_cell(r) == ("2% [1%, 3%] (not ranked)", False)


def test_the_report_gives_the_median_of_each_phase_over_the_attempts():
    from analysis.overhead import overhead_section, phase_medians
    tries = [{"phases_s": {"topology up": s, "traffic and drain": 30.0}, "overhead_s": s} for s in (10.0, 12.0, 30.0)]
    runs = [{"tries": tries[:2]}, {"tries": tries[2:] + [{"attempt": 4, "wall_s": 60}]}]   # one without phases
    assert phase_medians([t for r in runs for t in r["tries"] if "phases_s" in t]) == \
        [("topology up", 12.0, 3), ("traffic and drain", 30.0, 3)]
    html = overhead_section(runs)
    assert "Median over 3 attempt(s)" in html and "<b>12.0 s</b>, from 10.0 to 30.0 s" in html
    assert "no attempt recorded" in overhead_section([{"tries": [{"wall_s": 60}]}])


def test_the_report_gives_each_runner_phases_median_cpu_and_process_starts_where_counted():
    from analysis.overhead import overhead_section, work_medians
    tries = [{"phases_s": {"reset": 2.0, "copy back": 1.0}, "overhead_s": 3.0,
              "runner_work": {"reset": {"cpu_s": c, "forks": n}}} for c, n in ((1.0, 30), (3.0, 50), (2.0, 31))]
    tries.append({"phases_s": {"reset": 9.0}, "overhead_s": 9.0})    # a runner of older code: no counts
    assert work_medians(tries) == {"reset": (2.0, 31)}
    html = overhead_section([{"tries": tries}])
    assert "<tr><td>reset</td><td>2.00</td><td>4</td><td>2.00</td><td>31</td></tr>" in html
    assert "<tr><td>copy back</td><td>1.00</td><td>3</td><td></td><td></td></tr>" in html


def test_verdict_header_names_each_interval_method_and_what_it_does_not_estimate():
    rows = [{"claim": "C3", "method": "jackknife over 5 replications, t 4 df", "margin": "none", "status": "holds"},
            {"claim": "C4", "method": "jackknife over 6 replications, t 5 df", "status": "holds"},
            {"claim": "C9", "method": "block bootstrap over flows within 2 schedule(s) (1.5 s blocks of start time); one "
                                      "schedule per load: variation between schedules not estimated", "status": "holds"},
            {"claim": "C12", "method": "block bootstrap over flows within 3 schedule(s) (2 s blocks of start time), widened to "
                                       "the jackknife over 3 replications (t 2 df) where wider", "status": "insufficient data"},
            {"claim": "C17", "method": "exact Poisson ratio", "status": "holds"},
            {"claim": "C18", "method": "", "status": "not run"}]
    h = report.interval_methods(rows)
    assert "<b>2</b> row(s): jackknife over replications" in h and "carries the variation between schedules." in h
    assert "<b>1</b> row(s): block bootstrap over flow start time within one schedule per load: does <b>not</b> estimate" in h
    assert "<b>1</b> row(s): block bootstrap over flow start time within each schedule, widened" in h
    assert "<b>1</b> row(s): exact Poisson ratio (the claim's own method)" in h
    assert "each row's <i>method</i> says how its intervals were made" in h and "C18" not in h
    # a verdict made before rows named their method says that it cannot tell
    assert "does not say how each was made" in report.interval_methods([{"claim": "C3", "status": "holds"}])


def test_a_decision_from_one_schedule_says_so_in_its_status_and_keeps_its_colour():
    one = "block bootstrap over flows within 1 schedule(s); one schedule per load: variation between schedules not estimated"
    rows = [{"claim": "C9", "method": one, "status": "holds"}, {"claim": "C3", "method": one, "status": "insufficient data"},
            {"claim": "C4", "method": "jackknife over 5 replications, t 4 df", "status": "does not hold"}]
    shown = report.one_schedule_status(rows)
    assert [r["status"] for r in shown] == ["holds (one schedule)", "insufficient data", "does not hold"]
    assert [r["status_class"] for r in shown] == ["holds", "insufficient data", "does not hold"]
    assert rows[0]["status"] == "holds"          # verdict.csv's own rows are left as they are
