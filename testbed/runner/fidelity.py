"""fidelity.json: the checks that decide whether a run measured what its spec asked (the queue's counters,
the SYN flood's rate, the workload's own checks), and the verdict over all of them."""
from __future__ import annotations

from pathlib import Path

from contract import rundir


def favor_counts_check(after: dict) -> dict:
    """Every packet favor queued (favored + standard) left (sent), was pushed out, trimmed by a limit change,
    or is still queued: its counters agree with one another at the end of the run."""
    rows = []
    for router, qs in after.items():
        for q in qs if isinstance(qs, list) else []:
            if q.get("kind") == "favor" and "favored" in q:
                queued = q["favored"] + q["standard"]
                left = q.get("packets", 0) + q["pushouts"] + q.get("drop_limit", 0) + q.get("qlen", 0)
                rows.append({"router": router, "enqueued": queued, "sent_pushed_trimmed_queued": left})
    if not rows:
        return {}
    bad = [r for r in rows if r["enqueued"] != r["sent_pushed_trimmed_queued"]]
    return {"favor_counts": {"configured": "favored + standard = sent + pushouts + drop_limit + qlen",
                             "measured": rows, "ok": not bad}}


def flood_check(summary: Path, pps_wanted: float, min_share: float = 0.95) -> dict:
    """The flood's rate as a fidelity check: the SYNs it sent over its duration against the rate asked."""
    from workloads import synflood
    try:
        s = synflood.read_summary(summary)
    except synflood.FloodError as e:
        return {"synflood_rate": {"configured": round(pps_wanted, 1), "measured": str(e), "ok": False}}
    rate = s["sent"] / s["duration_s"]
    return {"synflood_rate": {"configured": f">= {min_share:g} x {pps_wanted:.0f} SYNs/s",
                              "measured": {"pps": round(rate, 1), "missed": s["missed"],
                                           "send_errors": s["send_errors"]},
                              "ok": rate >= min_share * pps_wanted}}


def workload_checks(ctx) -> None:
    """The workload's own checks into ctx.checks: workloads.checks.check_run for a schedule, the reference
    user's check_log for the chain."""
    if ctx.is_chain():
        # no open-loop schedule: the reference user's own fidelity check replaces workloads.checks
        from workloads import reference
        log = ctx.dir / "flows" / f"client-{ctx.hostsj['reference']['src']}.csv"
        try:
            ctx.checks.update(reference.check_log(log))
        except Exception as e:  # noqa: BLE001 - a missing or broken log makes the run invalid
            ctx.checks["reference_loop"] = {"configured": "closed loop", "measured": f"check failed: {e}",
                                            "ok": False}
        return
    from testbed.runner import httpload
    if httpload.is_http(ctx.spec):
        # no client logs: wrk's own report is the workload's check
        ctx.checks.update(httpload.checks(ctx.dir))
        return
    try:
        from workloads import checks
    except ImportError as e:
        ctx.checks["offered_load"] = {"configured": ctx.spec.get("load"),
                                      "measured": f"not checked: {e}", "ok": True}
        return
    if not hasattr(checks, "check_run"):
        ctx.checks["offered_load"] = {"configured": ctx.spec.get("load"),
                                      "measured": "not checked: workloads.checks has no check_run(run_dir)",
                                      "ok": True}
        return
    try:
        res = checks.check_run(ctx.dir)
        ctx.checks.update(res)
    except Exception as e:  # noqa: BLE001 - a failed check makes the run invalid, not the runner crash
        ctx.checks["offered_load"] = {"configured": ctx.spec.get("load"),
                                      "measured": f"check failed: {e}", "ok": False}


def judge(checks: dict, reasons: list, warnings: list) -> None:
    """A failed check is a reason the run is invalid, or a warning when its severity is "warning"."""
    for k, v in checks.items():
        if not v.get("ok"):
            (warnings if v.get("severity") == "warning" else reasons).append(
                f"{k}: configured {v.get('configured')}, measured {v.get('measured')}")


def write_report(ctx) -> None:
    """fidelity.json from ctx.checks and ctx.reasons (judge)."""
    warnings: list = []
    judge(ctx.checks, ctx.reasons, warnings)
    ctx.write_json(rundir.FIDELITY, {"valid": not ctx.reasons, "reasons": ctx.reasons,
                                     "warnings": warnings, "checks": ctx.checks})


def with_checks(report: dict, checks: dict) -> dict:
    """A fidelity report with checks made after the run (the controller's, on its copied-back files) added and
    judged as the runner's own are (judge)."""
    reasons, warnings = list(report.get("reasons", [])), list(report.get("warnings", []))
    judge(checks, reasons, warnings)
    return dict(report, valid=not reasons, reasons=reasons, warnings=warnings,
                checks={**report.get("checks", {}), **checks})
