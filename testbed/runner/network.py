"""The run's network: the topology module its kind names, built (hosts.json written first, then the
Mininet network), the interfaces it makes in the root namespace, and its stop."""
from __future__ import annotations

import json
import re

from contract import rundir, spec as specmod
from testbed.runner import bmv2, hostguard, processes


# run.json's topology.kind -> the module that describes and builds it (hosts_json, build); the chain's
# hosts.json also names its routers, capture points and bottleneck, which the runner reads from there
TOPOLOGIES = {"dumbbell": "topologies.dumbbell", "chain": "topologies.chain"}


def topology_module(kind: str):
    import importlib
    if kind not in TOPOLOGIES:
        raise specmod.SpecError(f"run.json: field topology.kind={kind!r}: one of {', '.join(TOPOLOGIES)}")
    return importlib.import_module(TOPOLOGIES[kind])


def build(ctx, topomod) -> None:
    """hosts.json, then the topology of ctx.spec built by `topomod` (topology_module) into ctx.net; the
    dumbbell's spoofed-source routes for a SYN flood and its P4 switch's description."""
    from topologies import dumbbell, tc
    s = ctx.spec
    kind = s["topology"]["kind"]
    if kind == "dumbbell":
        topo = dict(s["topology"], kind="dumbbell")
        ctx.hostsj = dumbbell.hosts_json(topo)
        (ctx.dir / rundir.HOSTS).write_text(json.dumps(ctx.hostsj, indent=2) + "\n")
        with processes.STOPPER.deferred():   # a topology half built is one no net.stop() would find
            ctx.net = dumbbell.build(topo, s["aqm"], log=ctx.log, p4_log=ctx.dir / "log" / "simple_switch.log")
            processes.record_shells(ctx.net)
        if s.get("flood"):
            for node, cmds in dumbbell.spoof_route_cmds(s["flood"]["spoof"], s["flood"]["attacker"]).items():
                for c in cmds:
                    tc.run_in(ctx.net.get(node), c)
    else:
        ctx.hostsj = topomod.hosts_json(s["topology"])
        (ctx.dir / rundir.HOSTS).write_text(json.dumps(ctx.hostsj, indent=2) + "\n")
        with processes.STOPPER.deferred():
            ctx.net = topomod.build(s["topology"], s["aqm"], log=ctx.log)
            processes.record_shells(ctx.net)
    if kind == "dumbbell" and dumbbell.is_p4(s["aqm"]):
        ctx.p4 = ctx.net.get(dumbbell.P4_SWITCH).p4
        ctx.manifest["p4"] = bmv2.p4_manifest(ctx.p4, s["topology"]["bottleneck_mbps"])
        ctx.log(f"P4 bottleneck: {ctx.manifest['p4']}")


def root_links(spec: dict) -> list[str]:
    """The root-namespace interfaces the spec's topology makes (its bridges and their ports towards the
    hosts and routers, the P4 switch's two ports), recorded in the pidfile for the next run's clean-up."""
    topo = spec.get("topology", {})
    if topo.get("kind") == "chain":
        from topologies import chain
        t = chain.validate(topo)
        return [*chain.names(t)["bridges"], *(n for n in chain.interfaces(t) if re.fullmatch(r"s\d+-.+", n))]
    from topologies import dumbbell
    links = ["sL", "sR", *(f"sL-{h}" for h in (*dumbbell.LEFT, "rl")), *(f"sR-{h}" for h in (*dumbbell.RIGHT, "rr"))]
    if dumbbell.is_p4(spec.get("aqm", {})):
        links += [f"{dumbbell.P4_SWITCH}-eth1", f"{dumbbell.P4_SWITCH}-eth2"]
    return links


def stop(ctx) -> None:
    if ctx.net:
        net, ctx.net = ctx.net, None
        net.stop()
        ctx.log("topology down")


def remove_leftover_links(ctx) -> None:
    """Our interfaces still there after the topology's stop (a stop cut short): removed by name."""
    if processes.PIDFILE is not None:
        gone = hostguard.remove_links(hostguard.select_stale_links(hostguard.ip_links(), root_links(ctx.spec)),
                                      ctx.log)
        if gone:
            ctx.log(f"teardown: removed leftover interfaces {', '.join(gone)}")
