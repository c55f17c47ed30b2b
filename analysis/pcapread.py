"""Fast pcap reader: dpkt for the file format, struct for IPv4/TCP headers.

The headers are parsed by hand with struct (not dpkt.ethernet/ip/tcp objects) because building
dpkt objects per packet is about 5x slower; with snaplen 128 only the fixed headers are needed.
"""
import struct
from collections import namedtuple

import dpkt

Pkt = namedtuple("Pkt", "t src dst sport dport flags seq ack ipid plen win sack hdr16")
# flags bits
FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10

_LINK_OFFSET = {1: 14, 113: 16, 276: 20, 101: 0, 12: 0, 228: 0}


_IP_CACHE = {}


def _ip_str(b):
    """Dotted quad, one shared str per address (saves memory on millions of packets)."""
    b = bytes(b)
    s = _IP_CACHE.get(b)
    if s is None:
        s = _IP_CACHE[b] = "%d.%d.%d.%d" % (b[0], b[1], b[2], b[3])
    return s


def _sack_blocks(opts):
    """Return list of (left, right) SACK blocks from raw TCP options."""
    i, out = 0, []
    while i < len(opts):
        kind = opts[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        if i + 1 >= len(opts):
            break
        ln = opts[i + 1]
        if ln < 2:
            break
        if kind == 5:
            body = opts[i + 2:i + ln]
            for j in range(0, len(body) - 7, 8):
                out.append(struct.unpack("!II", body[j:j + 8]))
        i += ln
    return out


def read_pcap(path):
    """Yield Pkt for every IPv4 TCP packet of a pcap (or pcapng) file."""
    with open(path, "rb") as f:
        try:
            rd = dpkt.pcap.UniversalReader(f)
        except (ValueError, dpkt.NeedData) as e:
            raise ValueError(f"{path}: not a pcap/pcapng file ({e}); re-capture with tcpdump -w") from e
        dl = rd.datalink()
        if dl not in _LINK_OFFSET:
            raise ValueError(f"{path}: unsupported link type {dl}; capture on an Ethernet or 'any' interface")
        off0 = _LINK_OFFSET[dl]
        for ts, buf in rd:
            off = off0
            if dl == 1:
                etype = struct.unpack_from("!H", buf, 12)[0]
                if etype == 0x8100:
                    etype = struct.unpack_from("!H", buf, 16)[0]
                    off = 18
                if etype != 0x0800:
                    continue
            elif dl == 113:
                if struct.unpack_from("!H", buf, 14)[0] != 0x0800:
                    continue
            elif dl == 276:
                if struct.unpack_from("!H", buf, 0)[0] != 0x0800:
                    continue
            if len(buf) < off + 20 or (buf[off] >> 4) != 4 or buf[off + 9] != 6:
                continue
            ihl = (buf[off] & 0x0F) * 4
            tot, ipid = struct.unpack_from("!HH", buf, off + 2)
            t0 = off + ihl
            if len(buf) < t0 + 20:
                continue
            sport, dport, seq, ack, offfl, win = struct.unpack_from("!HHIIHH", buf, t0)
            thl = (offfl >> 12) * 4
            flags = offfl & 0x3F
            plen = tot - ihl - thl
            sack = _sack_blocks(buf[t0 + 20:t0 + thl]) if thl > 20 else ()
            p0 = t0 + thl
            hdr16 = bytes(buf[p0:p0 + 16]) if plen >= 16 and len(buf) >= p0 + 16 else None
            yield Pkt(float(ts), _ip_str(buf[off + 12:off + 16]), _ip_str(buf[off + 16:off + 20]),
                      sport, dport, flags, seq, ack, ipid, plen, win, sack, hdr16)
