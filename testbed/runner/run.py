"""Execute ONE run on a testbed host (as root, inside the guest): run.json + schedule.csv in, the whole
run directory of docs/contracts.md out, DONE last. Everything is torn down even on error.

This module holds the order of a run; each step is a function of the module named for what it does,
taking the run's RunContext (context.py)."""
from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

from contract import rundir, spec as specmod
from testbed.runner import (bmv2, captures, cpu, favortrace, fidelity, hostguard, hoststate, kept, longflows,
                            manifest, network, probes, processes, traffic)
from testbed.runner.context import RunContext
from testbed.runner.processes import STOPPER


class Runner:
    def __init__(self, run_dir: Path, lock_wait_s: float | None = None, reuse_topology: bool = False):
        run_dir = Path(run_dir).resolve()
        log = processes.Log(run_dir / rundir.RUNNER_LOG,
                            on_lost=lambda why: STOPPER.request(f"the controller is gone ({why})"))
        self.ctx = RunContext(dir=run_dir, log=log, manifest={"start_utc": manifest.utc()})
        self.lock_wait_s = lock_wait_s
        self.lock: hostguard.HostLock | None = None
        # kept.py: a network kept up by the run before (its record, adopted) or kept for the next one
        self.reuse = reuse_topology
        self.adopted: dict | None = None
        self.holders: dict | None = None
        self.failure: str | None = None

    def run(self) -> int:
        """The whole run under the host lock. A stop request (SIGHUP, SIGTERM, SIGINT, or the controller's
        SSH channel gone) before the measurement is complete ends the run without DONE after the whole
        tear-down; one that comes later lets it finish (the tear-down ran already; only files are left)."""
        ctx = self.ctx
        (ctx.dir / rundir.DONE).unlink(missing_ok=True)
        STOPPER.reason, STOPPER.tearing_down = None, False
        halt = threading.Event()
        if threading.current_thread() is threading.main_thread():
            STOPPER.install()
            hostguard.watch_hangup(1, lambda: ctx.log.lost("stdout hung up (its reader closed)"), halt)
        ok, failure = False, None
        try:
            ctx.spec = specmod.load(ctx.dir)
            ctx.log(f"run {ctx.spec['run_id']}: {ctx.spec['aqm']['forward']} load {ctx.spec.get('load')} "
                    f"(runner pid {os.getpid()})")
            ctx.phase("host lock")
            self.lock = hostguard.HostLock()
            self.lock.acquire(ctx.spec["run_id"], hostguard.expected_run_s(ctx.spec), ctx.log, self.lock_wait_s)
            ctx.phase("clean-up of a run left behind")
            self.adopted = kept.claim(ctx.spec, self.reuse, ctx.log)
            pidfile = hostguard.PidFile()
            hostguard.clean_stale(ctx.log, pidfile, spare=kept.spared(self.adopted))
            pidfile.start(ctx.spec["run_id"], network.root_links(ctx.spec))
            processes.PIDFILE = pidfile
            self.setup()
            self.measure()
            ok = True
        except hostguard.Stopped as e:
            failure = f"STOPPED ({e}): tearing down; no DONE"
        except Exception as e:  # noqa: BLE001 - every failure is logged, then torn down
            failure = f"ERROR {type(e).__name__}: {e}"
        finally:
            self.failure = failure
            # from here on a stop request is only recorded (a log line that finds stdout gone makes one),
            # so nothing can cut the tear-down short
            STOPPER.tearing_down = True
            if failure:
                ctx.log(failure)
            ctx.phase("teardown")
            self.teardown()
            ctx.phase(None)
            halt.set()
        try:
            if ok:
                self.finish()
        finally:
            if processes.PIDFILE is not None:
                processes.PIDFILE.clear()
                processes.PIDFILE = None
            if self.lock:
                self.lock.release()
        if STOPPER.reason and not ok:
            self.drop_bulk()
        return 0 if ok else 1

    def drop_bulk(self):
        """A run stopped because its controller is gone is never copied back: its captures and favor trace
        (nearly all its disk) go now, its logs stay for whoever looks on the host."""
        shutil.rmtree(self.ctx.dir / "pcap", ignore_errors=True)
        (self.ctx.dir / rundir.FAVOR_TRACE).unlink(missing_ok=True)

    def setup(self):
        ctx = self.ctx
        topomod = network.topology_module(ctx.spec["topology"]["kind"])
        traffic.workload_cmd("client", ctx.spec)   # a missing workload binary fails the run before anything is set up
        ctx.phase("qdisc modules")
        hoststate.load_qdisc_modules(ctx)
        if self.adopted:
            ctx.phase("kept topology reset")
            kept.adopt(ctx, self.adopted)
        else:
            ctx.phase("topology up")
            network.build(ctx, topomod)
            if self.reuse and kept.unkeepable(ctx.spec) is None:
                self.holders = kept.hold(ctx.net)
        ctx.manifest["kept_topology"] = kept.manifest_entry(self.adopted, self.reuse, ctx.spec)
        ctx.phase("hosts' reset and TCP profile" if self.adopted else "TCP profile")
        ctx.checks.update(hoststate.apply_tcp(ctx.net, ctx.spec["tcp"], ctx.hostsj["hosts"], ctx.log, ctx.host_reset))
        ctx.phase("initial RTO program")
        hoststate.attach_initial_rto(ctx)

    def measure(self):
        ctx, s = self.ctx, self.ctx.spec
        if self.adopted and self.adopted.get("probes"):
            ctx.checks.update(kept.reused_probes(self.adopted, ctx.spec.get("fidelity", {})))
            ctx.log(f"probes: those of run {self.adopted.get('built_by')}, which built this topology")
        else:
            ctx.phase("probes")
            probes.probe_fidelity(ctx)
        for d in ("qdisc", "nstat", "pcap", "flows"):
            (ctx.dir / d).mkdir(exist_ok=True)
        # the flow clients first where they can wait for their go line: their start-ups (seconds in a TCG
        # guest) overlap the state before, the captures and the servers instead of a lead after them
        handshake = traffic.awaits_go(ctx)
        if handshake:
            ctx.phase("clients' start-up")
            clients = traffic.launch_clients(ctx)
        # the captures come up while the state before the traffic is read (neither sends a packet)
        ctx.phase("captures")
        capturing = captures.launch(ctx)
        ctx.phase("state before")
        ctx.kernel_log = hoststate.KernelLog()
        ctx.qdisc_before, ctx.nstat_before = hoststate.qdisc_stats_and_nstat(ctx.net, ctx.routers(), ctx.hostsj["hosts"])
        ctx.write_json("qdisc/before.json", ctx.qdisc_before)
        if ctx.p4:
            ctx.write_json("qdisc/p4-before.json", bmv2.p4_state(ctx.p4))
        # the recorders and the receivers, then the senders from a common t0
        ctx.phase("captures")
        captures.wait_started(ctx, *capturing)
        favortrace.start(ctx)
        ctx.phase("servers")
        # no wait for them here: the start lead waits for them (handshake) or is theirs to come up in
        traffic.start_servers(ctx)
        ctx.phase("clients' start lead")
        sampler = cpu.CpuSampler()
        if handshake:
            waited = time.time()
            traffic.await_ready(ctx, clients)
            lead = traffic.GO_LEAD_S
            ctx.log(f"clients up {time.time() - waited:.2f} s after the servers: t0 in {lead:.1f} s")
        else:
            lead = traffic.start_lead(ctx)     # times a client's start-up first: t0 counts from its end
        t0 = time.time() + lead
        stop_at = t0 + s["duration_s"] + s["drain_s"]
        ctx.manifest["t0_unix"] = t0
        if ctx.is_chain():
            longflows.start_cross(ctx, t0)
        if handshake:
            traffic.go(ctx, clients, t0, stop_at)
        else:
            clients = traffic.start_clients(ctx, t0, stop_at)
        if s.get("workload", {}).get("kind") == "persistent":
            longflows.start_persistent(ctx, t0)
        if s.get("flood"):
            traffic.start_flood(ctx, t0)
        # CPU samples from 3 s before t0: a longer idle lead must not dilute them
        time.sleep(max(0.0, t0 - 3.0 - time.time()))
        sampler.start()
        time.sleep(max(0.0, t0 - time.time()))
        ctx.phase(rundir.TRAFFIC_PHASE)
        # the traffic's end
        traffic.wait_clients(ctx, clients, stop_at)
        ctx.phase("traffic stop")
        if ctx.is_chain():
            traffic.install_reference_schedule(ctx)
        if ctx.persistent is not None:
            longflows.stop_persistent(ctx, stop_at)
        if "flood" in ctx.procs:
            traffic.stop_flood(ctx, t0)
        if ctx.cross is not None:
            longflows.stop_cross(ctx, stop_at)
        last_packets = time.time() + traffic.last_packets_s(ctx)     # the CPU record made within it
        cpu.record(ctx, sampler)
        time.sleep(max(0.0, last_packets - time.time()))
        traffic.stop_servers(ctx)
        favortrace.stop(ctx)
        captures.stop(ctx)
        # the state after the traffic, and the checks on it
        ctx.phase("state after and checks")
        qdisc_after, nstat_after = hoststate.qdisc_stats_and_nstat(ctx.net, ctx.routers(), ctx.hostsj["hosts"])
        ctx.write_json("qdisc/after.json", qdisc_after)
        ctx.checks.update(fidelity.favor_counts_check(qdisc_after))
        ctx.checks.update(ctx.kernel_log.check())
        if ctx.p4:
            after_p4 = bmv2.p4_state(ctx.p4)
            ctx.write_json("qdisc/p4-after.json", after_p4)
            ctx.checks.update(bmv2.p4_drained_check(after_p4))
        hoststate.write_nstat(ctx, nstat_after)
        fidelity.workload_checks(ctx)
        if "trace" in ctx.procs:
            # the favor trace's recorder, signalled at the traffic's stop, has read the kernel's buffer out meanwhile
            ctx.phase("favor trace's read-out")
            ctx.checks.update(favortrace.wait_stopped(ctx, qdisc_after))

    def teardown(self):
        """Every step runs whatever the ones before it did: each failure is logged and the next step goes
        on, so the network is always stopped. Stop requests arriving now are only recorded (STOPPER)."""
        ctx = self.ctx
        STOPPER.tearing_down = True
        steps = [("stop processes", lambda: processes.stop_all(ctx)),
                 ("stop leftover processes", lambda: processes.stop_leftovers(ctx.log)),
                 ("detach the initial RTO program", lambda: hoststate.detach_initial_rto(ctx)),
                 ("remove the run cgroup", lambda: hoststate.remove_cgroup(ctx))]
        down = [("stop the topology", lambda: network.stop(ctx)),
                ("stop leftover node shells", lambda: processes.stop_leftovers(ctx.log, shells=True)),
                ("remove leftover interfaces", lambda: network.remove_leftover_links(ctx))]
        for what, step in steps:
            self._step(what, step)
        if not self._step("keep the topology for the next run", self.park):
            for what, step in down:
                self._step(what, step)

    def _step(self, what: str, step) -> bool:
        try:
            return step() is not False
        except BaseException as e:  # noqa: BLE001 - the next step must run (a signal included)
            self.ctx.log(f"teardown: {what} failed: {type(e).__name__}: {e}")
            return False

    def park(self) -> bool:
        """The network kept for the next run (kept.park) when this run reuses topologies, ended without a
        failure and its probes passed; False when it is to be taken down."""
        ctx = self.ctx
        holders = self.adopted["holders"] if self.adopted else self.holders
        probed = kept.probe_checks(ctx.checks)
        if not (self.reuse and holders and ctx.net and not self.failure and probed
                and all(v.get("ok") for v in probed.values())):
            return False
        rec = kept.record(ctx.spec, self.adopted, holders, probed)
        ctx.manifest["kept_topology"].update(kept.park(ctx, rec))
        ctx.net = None
        ctx.log(f"topology kept for the next run ({rec['runs']} run(s) on it)")
        return True

    def finish(self):
        ctx = self.ctx
        ctx.phase("fidelity report and manifest")
        fidelity.write_report(ctx)
        ctx.manifest.update(manifest.manifest(ctx.spec, ctx.dir))
        ctx.phase(None)
        ctx.manifest["phases_s"] = ctx.phases.s
        ctx.manifest["phases_work"] = ctx.phases.work
        ctx.manifest["end_utc"] = manifest.utc()
        ctx.write_json(rundir.MANIFEST, ctx.manifest)
        ctx.log(f"run done, valid={not ctx.reasons}")
        (ctx.dir / rundir.DONE).write_text(manifest.utc() + "\n")
