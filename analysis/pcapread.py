"""Fast pcap reader: dpkt for the file format, struct for IPv4/TCP headers.

The headers are parsed by hand with struct (not dpkt.ethernet/ip/tcp objects) because building
dpkt objects per packet is about 5x slower; with snaplen 128 only the fixed headers are needed.
"""
import struct
from decimal import Decimal
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


# magic -> (byte order, divisor); the timestamps are computed as dpkt does, so a classic pcap walked here and a
# pcapng read by dpkt give the same floats
_PCAP_MAGIC = {b"\xd4\xc3\xb2\xa1": ("<", 1e6), b"\xa1\xb2\xc3\xd4": (">", 1e6),
               b"\x4d\x3c\xb2\xa1": ("<", Decimal("1E9")), b"\xa1\xb2\x3c\x4d": (">", Decimal("1E9"))}


def _records(f, path):
    """(datalink, iterator of (ts, frame)). Classic pcap is walked with struct over the file's bytes
    (dpkt's per-record objects cost more than the whole TCP parse); pcapng goes through dpkt."""
    head = f.read(24)
    if head[:4] in _PCAP_MAGIC and len(head) == 24:
        endian, unit = _PCAP_MAGIC[head[:4]]
        dl = struct.unpack(endian + "I", head[20:24])[0] & 0x0FFFFFFF
        return dl, _classic(f.read(), endian, unit)
    f.seek(0)
    try:
        rd = dpkt.pcap.UniversalReader(f)
    except (ValueError, dpkt.NeedData) as e:
        raise ValueError(f"{path}: not a pcap/pcapng file ({e}); re-capture with tcpdump -w") from e
    return rd.datalink(), ((float(ts), buf) for ts, buf in rd)


def _classic(data, endian, unit):
    rec = struct.Struct(endian + "IIII").unpack_from
    mv, i, n = memoryview(data), 0, len(data)
    fast = isinstance(unit, float)
    while i + 16 <= n:
        sec, frac, incl, _ = rec(data, i)
        i += 16
        if i + incl > n:
            break                      # truncated last record (capture cut short)
        yield (sec + frac / unit) if fast else float(sec + frac / unit), mv[i:i + incl]
        i += incl


def read_pcap(path):
    """Yield Pkt for every IPv4 TCP packet of a pcap (or pcapng) file."""
    with open(path, "rb") as f:
        dl, records = _records(f, path)
        if dl not in _LINK_OFFSET:
            raise ValueError(f"{path}: unsupported link type {dl}; capture on an Ethernet or 'any' interface")
        off0 = _LINK_OFFSET[dl]
        hdr = struct.Struct("!HHIIHH").unpack_from
        u16 = struct.Struct("!H").unpack_from
        iphdr = struct.Struct("!BxHH3xBxx4s4s").unpack_from   # version/ihl, length, id, protocol, addresses
        ips = _IP_CACHE
        for ts, buf in records:
            off = off0
            if dl == 1:
                etype = u16(buf, 12)[0]
                if etype == 0x8100:
                    etype = u16(buf, 16)[0]
                    off = 18
                if etype != 0x0800:
                    continue
            elif dl == 113:
                if u16(buf, 14)[0] != 0x0800:
                    continue
            elif dl == 276:
                if u16(buf, 0)[0] != 0x0800:
                    continue
            if len(buf) < off + 20:
                continue
            vihl, tot, ipid, proto, src, dst = iphdr(buf, off)
            if vihl >> 4 != 4 or proto != 6:
                continue
            ihl = (vihl & 0x0F) * 4
            t0 = off + ihl
            if len(buf) < t0 + 20:
                continue
            sport, dport, seq, ack, offfl, win = hdr(buf, t0)
            thl = (offfl >> 12) * 4
            flags = offfl & 0x3F
            plen = tot - ihl - thl
            sack = _sack_blocks(bytes(buf[t0 + 20:t0 + thl])) if thl > 20 else ()
            p0 = t0 + thl
            hdr16 = bytes(buf[p0:p0 + 16]) if plen >= 16 and len(buf) >= p0 + 16 else None
            yield Pkt(ts, ips.get(src) or _ip_str(src), ips.get(dst) or _ip_str(dst),
                      sport, dport, flags, seq, ack, ipid, plen, win, sack, hdr16)
