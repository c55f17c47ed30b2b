"""Classic pcap <-> the text form kept in the repository (<case>.pcap.txt).

The repository keeps no binary captures; these test captures are kept as text, one packet per line
(seconds.microseconds, original length, captured bytes in hex), which diffs and reviews like code, and
are turned back into byte-identical pcap files for the reader under test.
"""
import struct

HEADER = "# favorlab capture as text (tcpdump -s {snap} in the guest; make_captures.py): linktype={link} snaplen={snap}"


def to_text(pcap: bytes) -> str:
    magic = struct.unpack("<I", pcap[:4])[0]
    if magic != 0xA1B2C3D4:
        raise ValueError(f"not a little-endian microsecond pcap (magic {magic:#x}); tcpdump -w writes one")
    snap, link = struct.unpack("<II", pcap[16:24])
    lines = [HEADER.format(snap=snap, link=link),
             "# one packet per line: seconds.microseconds, original length on the wire, the captured bytes in hex"]
    off = 24
    while off < len(pcap):
        sec, usec, incl, orig = struct.unpack("<IIII", pcap[off:off + 16])
        lines.append(f"{sec}.{usec:06d} {orig} {pcap[off + 16:off + 16 + incl].hex()}")
        off += 16 + incl
    return "\n".join(lines) + "\n"


def to_pcap(text: str) -> bytes:
    head = text.split("\n", 1)[0]
    fields = dict(f.split("=") for f in head.split() if "=" in f)
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, int(fields["snaplen"]), int(fields["linktype"]))]
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        ts, orig, data = line.split()
        sec, usec = ts.split(".")
        raw = bytes.fromhex(data)
        out.append(struct.pack("<IIII", int(sec), int(usec), len(raw), int(orig)) + raw)
    return b"".join(out)
