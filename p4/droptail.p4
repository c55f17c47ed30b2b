/*
 * droptail.p4 - the baseline on the same switch: one FIFO per port, tail drop by the traffic manager.
 * The control plane (p4/control.py) sets the bottleneck port's queue depth to the buffer size in
 * packets and its rate to the bottleneck's; every packet goes to priority 0, so the second priority
 * queue the switch is started with (for favorqueue.p4) stays empty.
 */
#include "include/favorlab_common.p4"

control DropTailIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    PortForward() port_forward;
    apply {
        std.priority = 0;
        port_forward.apply(std);
    }
}

control DropTailEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply { }
}

V1Switch(FavorlabParser(), FavorlabVerifyChecksum(), DropTailIngress(), DropTailEgress(),
         FavorlabComputeChecksum(), FavorlabDeparser()) main;
