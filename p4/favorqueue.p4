/*
 * favorqueue.p4 - FavorQueue (Anelli, Diana, Lochin, Computer Networks 2013, Algorithm 1) for BMv2
 * simple_switch (v1model), as the bottleneck of the dumbbell.
 *
 * What Algorithm 1 does, and what this program does instead (p4/README.md measures the difference):
 *
 *   A packet is "favored" when no packet of its flow is in the queue. The kernel qdisc (sch_favor)
 *   inserts it after the last favored packet, i.e. ahead of every standard packet. Here it goes to the
 *   switch's high-priority queue (priority 1), standard packets to the low one (priority 0): strict
 *   priority serves favored packets first, and FIFO order within each queue keeps the kernel's order.
 *   "Is a packet of this flow queued" is a per-bucket count of queued packets (1024 buckets of a crc32
 *   of the 5-tuple; sch_favor has 1024 buckets of a keyed siphash), incremented here at admission and
 *   decremented in egress when the packet leaves the queue.
 *
 *   The buffer limit is enforced HERE, at admission, on one count shared by both queues (sch_favor has
 *   one buffer of `limit` packets). The control plane sets the traffic manager's queues deeper than this
 *   count can ever reach, so the traffic manager never drops: a packet dropped there would never reach
 *   egress and its flow's count would leak. As a second guard, counts age out: a count whose flow
 *   admitted nothing for `max_sojourn_us` (longer than any packet can stay queued) is stale and reset.
 *
 *   Push-out cannot be done: a P4 pipeline cannot remove a packet already queued. When a favored packet
 *   meets a full buffer with standard packets queued, Algorithm 1 drops the last standard packet to make
 *   room. Here (pushout = 1) the favored packet is admitted above the limit and the push-out is owed
 *   (`pushout_debt`): the next standard packet that sch_favor would have admitted is dropped in the
 *   victim's place. The number of drops is the kernel's; which standard packet is lost differs (the
 *   next arrival, not the newest queued), and the buffer holds up to `debt` packets more meanwhile.
 *   If the standard queue drains before the debt is paid, the owed victim was served instead
 *   (counted). pushout = 0 gives FavourTail (Dedu & Lochin 2009): a favored packet meeting a full
 *   buffer is dropped.
 *
 *   BMv2 paces each priority queue on its own clock (queueing.h, QueueingLogicPriRL: a packet's
 *   departure time is fixed at enqueue, from its own queue's last departure): a favored packet leaves
 *   as soon as the high-priority pacer allows, without moving the standard queue's schedule, so two
 *   paced queues together send up to twice the configured rate (measured: 40 pps out of a 20 pps port,
 *   p4/README.md). So every admitted favored packet also sends a PHANTOM into the standard queue: an
 *   ingress clone (its metadata reset by simple_switch, so priority 0) that takes one slot of the
 *   standard pacer and is dropped in egress. The standard packets behind it leave one packet time
 *   later, as if the favored packet had been served in their place: the port sends the configured rate
 *   over any period longer than the standard queue's backlog; within it, a favored packet still leaves
 *   beside the standard packet being paced (at most one packet time early), and the standard packets
 *   queued after it pay for it. Phantoms are not in any count; the traffic manager's standard queue is
 *   deep enough for them (p4/control.py queue_depth).
 *
 * Registers written in ingress and egress are only ever read-modified-written inside one action:
 * BMv2 locks every register array an action touches for the action's duration, so the ingress thread
 * and the egress thread never interleave on them.
 */
#include "include/favorlab_common.p4"

#define FAVOR_BUCKETS 1024

/* Indices of the `verdicts` counter (names as in sch_favor's xstats where both have them). */
const bit<32> V_FAVORED        = 0;  /* admitted as favored (high-priority queue) */
const bit<32> V_STANDARD       = 1;  /* admitted as standard */
const bit<32> V_PUSHOUTS       = 2;  /* favored admitted over a full buffer: a push-out owed */
const bit<32> V_DROP_FAVORED   = 3;  /* favored dropped: buffer full and nothing to push out */
const bit<32> V_DROP_STANDARD  = 4;  /* standard dropped: buffer full */
const bit<32> V_DROP_VICTIM    = 5;  /* standard dropped in place of an owed push-out victim */
const bit<32> V_VICTIM_SERVED  = 6;  /* an owed victim left the queue before it could be paid */
const bit<32> V_AGED_FLOW      = 7;  /* a stale per-flow count reset */
const bit<32> V_AGED_QUEUE     = 8;  /* a stale buffer count reset */
const bit<32> V_PHANTOMS       = 9;  /* phantoms that reached egress (each took a standard pacer slot) */
const bit<32> V_NONE           = 10;  /* counted when nothing above happened (BMv2 cannot call an extern
                                        under a condition inside an action: the index is the condition) */
const bit<32> V_COUNT          = 11;

const bit<9> DROP_PORT = 511;        /* simple_switch's default drop port (--drop-port) */
const bit<3> PRIORITY_FAVORED  = 1;
const bit<3> PRIORITY_STANDARD = 0;
const bit<32> PHANTOM_SESSION  = 1;  /* mirroring session to the bottleneck port (p4/control.py) */
const bit<32> INSTANCE_INGRESS_CLONE = 1;  /* standard_metadata.instance_type of an ingress clone */

struct favor_key_t {
    bit<32> src;
    bit<32> dst;
    bit<8>  proto;
    bit<16> sport;
    bit<16> dport;
}

/* ---- state of the managed queue (one bottleneck port) */
register<bit<32>>(FAVOR_BUCKETS) flow_queued;       /* queued packets per flow bucket */
register<bit<48>>(FAVOR_BUCKETS) flow_admitted_at;  /* last admission per bucket (us), for ageing */
register<bit<32>>(1) queued;                        /* packets admitted and not yet left: the buffer */
register<bit<32>>(1) standard_queued;               /* of which standard */
register<bit<32>>(1) pushout_debt;                  /* push-outs owed (see above) */
register<bit<48>>(1) queue_event_at;                /* last admission into an empty buffer or departure */
counter(V_COUNT, CounterType.packets) verdicts;

control FavorIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    PortForward() port_forward;
    favor_key_t flow;

    action favor_admit(bit<32> limit, bit<1> pushout, bit<48> max_sojourn_us) {
        hash(meta.bucket, HashAlgorithm.crc32, 32w0, flow, 32w1024);
        bit<48> now = std.ingress_global_timestamp;
        bit<32> total;      queued.read(total, 0);
        bit<32> std_q;      standard_queued.read(std_q, 0);
        bit<32> debt;       pushout_debt.read(debt, 0);
        bit<48> event_at;   queue_event_at.read(event_at, 0);
        bit<32> n;          flow_queued.read(n, meta.bucket);
        bit<48> admitted;   flow_admitted_at.read(admitted, meta.bucket);

        /* ageing: nothing can stay queued longer than max_sojourn_us, so older counts are stale */
        bit<32> aged_queue = V_NONE;
        bit<32> aged_flow = V_NONE;
        /* `now` is this packet's arrival; event_at may be a later egress time (the egress thread ran
           while this packet waited for the ingress thread): unsigned, now - event_at would wrap */
        if (total != 0 && now > event_at && now - event_at > max_sojourn_us) {
            total = 0; std_q = 0; debt = 0;
            aged_queue = V_AGED_QUEUE;
        }
        if (n != 0 && now > admitted && now - admitted > max_sojourn_us) {
            n = 0;
            aged_flow = V_AGED_FLOW;
        }
        verdicts.count(aged_queue);
        verdicts.count(aged_flow);

        /* the queue length sch_favor would have: owed push-out victims are not in it */
        bit<32> qlen = total - debt;
        bit<32> verdict;
        if (n == 0) {                                   /* favored */
            if (qlen < limit) {
                verdict = V_FAVORED;
            } else if (pushout == 1 && std_q > debt) {
                verdict = V_PUSHOUTS;
                debt = debt + 1;
            } else {
                verdict = V_DROP_FAVORED;
            }
        } else {                                        /* standard */
            if (qlen >= limit) {
                verdict = V_DROP_STANDARD;
            } else if (debt != 0) {
                verdict = V_DROP_VICTIM;                /* takes the owed victim's place */
                debt = debt - 1;
            } else {
                verdict = V_STANDARD;
            }
        }
        verdicts.count(verdict);

        if (verdict == V_FAVORED || verdict == V_PUSHOUTS || verdict == V_STANDARD) {
            if (total == 0) {
                event_at = now;
            }
            total = total + 1;
            n = n + 1;
            admitted = now;
            meta.counted = 1;
            if (verdict == V_STANDARD) {
                std_q = std_q + 1;
                meta.favored = 0;
                std.priority = PRIORITY_STANDARD;
            } else {
                meta.favored = 1;
                std.priority = PRIORITY_FAVORED;
            }
        } else {
            std.egress_spec = DROP_PORT;     /* what mark_to_drop does, as an assignment */
        }
        queued.write(0, total);
        standard_queued.write(0, std_q);
        pushout_debt.write(0, debt);
        queue_event_at.write(0, event_at);
        flow_queued.write(meta.bucket, n);
        flow_admitted_at.write(meta.bucket, admitted);
    }

    /* the managed port: entry written by p4/control.py from the run's config */
    table bottleneck {
        key = { std.egress_spec: exact; }
        actions = { favor_admit; NoAction; }
        default_action = NoAction();
        size = 16;
    }

    apply {
        meta.counted = 0;
        meta.favored = 0;
        std.priority = PRIORITY_STANDARD;
        port_forward.apply(std);
        if (hdr.ipv4.isValid() && std.egress_spec != DROP_PORT) {
            flow.src = hdr.ipv4.src_addr;
            flow.dst = hdr.ipv4.dst_addr;
            flow.proto = hdr.ipv4.protocol;
            if (hdr.ports.isValid()) {
                flow.sport = hdr.ports.src_port;
                flow.dport = hdr.ports.dst_port;
            } else {
                flow.sport = 0;
                flow.dport = 0;
            }
            bottleneck.apply();
            if (meta.favored == 1) {
                clone(CloneType.I2E, PHANTOM_SESSION);   /* its standard pacer slot: see the top */
            }
        }
    }
}

control FavorEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    /* the packet left the queue: undo its admission (one action, so one register lock) */
    action release() {
        bit<32> total;  queued.read(total, 0);
        bit<32> std_q;  standard_queued.read(std_q, 0);
        bit<32> debt;   pushout_debt.read(debt, 0);
        bit<32> n;      flow_queued.read(n, meta.bucket);
        if (total != 0) { total = total - 1; }
        if (n != 0) { n = n - 1; }
        bit<32> served = V_NONE;
        if (meta.favored == 0) {
            if (std_q != 0) { std_q = std_q - 1; }
            if (debt > std_q) {                      /* the owed victim itself left: it was served */
                debt = std_q;
                served = V_VICTIM_SERVED;
            }
        }
        verdicts.count(served);
        queued.write(0, total);
        standard_queued.write(0, std_q);
        pushout_debt.write(0, debt);
        flow_queued.write(meta.bucket, n);
        queue_event_at.write(0, std.egress_global_timestamp);
    }

    apply {
        if (std.instance_type == INSTANCE_INGRESS_CLONE) {
            verdicts.count(V_PHANTOMS);          /* it was paced: its work is done */
            mark_to_drop(std);
        } else if (meta.counted == 1) {
            release();
        }
    }
}

V1Switch(FavorlabParser(), FavorlabVerifyChecksum(), FavorIngress(), FavorEgress(),
         FavorlabComputeChecksum(), FavorlabDeparser()) main;
