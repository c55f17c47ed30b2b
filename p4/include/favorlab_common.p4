/*
 * favorlab_common.p4 - what favorqueue.p4 and droptail.p4 share on BMv2 simple_switch (v1model):
 * headers, the parser (Ethernet, IPv4, the ports of TCP/UDP), the port-to-port forwarding table that
 * makes the switch a wire between the dumbbell's two routers, and the deparser.
 *
 * The switch sits between rl and rr (topologies/dumbbell.py): port 1 faces rl, port 2 faces rr. It
 * forwards by ingress port only, so ARP and every IP packet cross it unchanged, as on the veth link it
 * replaces; only the queue at the forward port (towards rr) is managed.
 */
#ifndef FAVORLAB_COMMON_P4
#define FAVORLAB_COMMON_P4

#include <core.p4>
#include <v1model.p4>

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IPPROTO_TCP = 6;
const bit<8>  IPPROTO_UDP = 17;

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

/* The first four bytes of TCP and UDP: all the flow key needs. */
header l4_ports_t {
    bit<16> src_port;
    bit<16> dst_port;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    l4_ports_t ports;
}

/*
 * Per-packet state carried from ingress to egress (BMv2 keeps user metadata across the traffic
 * manager for unicast packets): what the egress must undo when the packet leaves the queue.
 */
struct metadata_t {
    bit<32> bucket;    /* flow bucket: hash of the 5-tuple */
    bit<1>  counted;   /* admitted by the managed queue: egress releases it */
    bit<1>  favored;   /* went to the favored (high-priority) queue */
}

parser FavorlabParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        /* Ports only from first fragments without options; other IPv4 packets hash on addresses and
           protocol, as a flow dissector does for later fragments. */
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (4w5, 13w0, IPPROTO_TCP): parse_ports;
            (4w5, 13w0, IPPROTO_UDP): parse_ports;
            default: accept;
        }
    }
    state parse_ports {
        pkt.extract(hdr.ports);
        transition accept;
    }
}

control FavorlabVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }  /* the switch is a wire: it neither checks nor rewrites IP headers */
}

control FavorlabComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control FavorlabDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ports);
    }
}

/* Port-to-port forwarding: entries written by p4/control.py (1 -> 2 and 2 -> 1 on the dumbbell). */
control PortForward(inout standard_metadata_t std) {
    action set_egress(bit<9> port) {
        std.egress_spec = port;
    }
    action drop() {
        mark_to_drop(std);
    }
    table forward {
        key = { std.ingress_port: exact; }
        actions = { set_egress; drop; }
        default_action = drop();
        size = 64;
    }
    apply {
        forward.apply();
    }
}

#endif /* FAVORLAB_COMMON_P4 */
