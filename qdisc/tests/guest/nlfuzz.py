#!/usr/bin/env python3
"""Guest side of qdisc/tests/test_guest.py's netlink test: malformed RTM_NEWQDISC messages for one of favorlab's
qdiscs, built by hand, sent to the kernel; what it answered, read back.

    unshare -n python3 nlfuzz.py --kind favor --seed 1 --random 300      (root, in the guest; prints one JSON object)

Hand-built rather than through pyroute2 or tc: the point is messages those would refuse to build (attributes of
the wrong length, options without NLA_F_NESTED, lengths that overrun the message). In a fresh network
namespace, on a dummy device, each message is sent twice: as a create (NLM_F_CREATE|NLM_F_EXCL on the root,
then the qdisc deleted if it was made) and as a change of a qdisc made with valid options. Cases:
  - every attribute of the kind's netlink enum (read from its uapi header) at lengths 0, 1, 2, 3, 5, 8 and 64;
  - the values 0, 1, 2^31 and 2^32-1 in every attribute as a u32, and 0, 2 and 255 as a u8;
  - unknown attribute types (the enum's max + 1, 255, 0x7fff);
  - TCA_OPTIONS without NLA_F_NESTED, empty, holding an attribute whose length overruns it;
  - `random` messages of random attributes (seeded).
Output: {"cases": [{"name", "create": errno, "change": errno}], "alive": the qdisc answers after all of it}.
Standard library only.
"""
import argparse
import json
import os
import random
import re
import socket
import struct
import sys

from gutil import sh

RTM_NEWQDISC, RTM_DELQDISC, NLMSG_ERROR = 36, 37, 2
NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE = 0x1, 0x4, 0x200, 0x400
NLA_F_NESTED = 0x8000
TCA_KIND, TCA_OPTIONS = 1, 2
TC_H_ROOT = 0xFFFFFFFF
HANDLE = 0x10000
HERE = os.path.dirname(os.path.abspath(__file__))
UAPI = os.path.join(HERE, "..", "..", "include", "uapi")


def attr(t, payload):
    """One netlink attribute, padded to 4 bytes; its length field is the payload's (as the kernel's nla_put)."""
    hdr = struct.pack("=HH", 4 + len(payload), t)
    return hdr + payload + b"\0" * (-len(payload) % 4)


def options_enum(kind):
    """The attribute numbers of TCA_<KIND>_* in include/uapi/<kind>.h (UNSPEC is 0), and the max."""
    text = open(os.path.join(UAPI, f"{kind}.h")).read()
    body = re.search(r"enum\s*\{\s*TCA_%s_UNSPEC(.*?)\}" % kind.upper(), text, re.S).group(1)
    names = [n for n in re.findall(r"\b(TCA_%s_\w+)" % kind.upper(), body) if not n.startswith("__")]
    return list(range(1, len(names) + 1))


class Netlink:
    def __init__(self):
        self.s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
        self.s.bind((0, 0))
        self.seq = 0

    def send(self, msg_type, flags, ifindex, options_blob, kind):
        """One RTM_*QDISC request; the errno of the kernel's answer (0: accepted)."""
        self.seq += 1
        tcm = struct.pack("=BBHiIII", socket.AF_UNSPEC, 0, 0, ifindex, HANDLE, TC_H_ROOT, 0)
        body = tcm + attr(TCA_KIND, kind.encode() + b"\0") + options_blob
        hdr = struct.pack("=IHHII", 16 + len(body), msg_type, flags | NLM_F_REQUEST | NLM_F_ACK, self.seq, 0)
        self.s.send(hdr + body)
        while True:
            data = self.s.recv(65536)
            off = 0
            while off + 16 <= len(data):
                ln, typ, _, seq, _ = struct.unpack_from("=IHHII", data, off)
                if typ == NLMSG_ERROR and seq == self.seq:
                    return -struct.unpack_from("=i", data, off + 16)[0]
                off += (ln + 3) & ~3
                if ln == 0:
                    break


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--random", type=int, default=300)
    a = ap.parse_args()
    sh("ip", "link", "add", "d0", "type", "dummy")
    ifindex = socket.if_nametoindex("d0")
    nl = Netlink()
    types = options_enum(a.kind)
    top = types[-1]
    limit20 = attr(1, struct.pack("=I", 20))       # every favorlab qdisc's attribute 1 is its limit (u32)

    def opts(inner, flags=NLA_F_NESTED):
        return attr(TCA_OPTIONS | flags, inner)

    cases = []
    for t in types:
        for n in (0, 1, 2, 3, 5, 8, 64):
            cases.append((f"attr{t}-len{n}", opts(attr(t, b"\x01" * n))))
        for v in (0, 1, 1 << 31, (1 << 32) - 1):
            cases.append((f"attr{t}-u32-{v}", opts(attr(t, struct.pack("=I", v)))))
        for v in (0, 2, 255):
            cases.append((f"attr{t}-u8-{v}", opts(attr(t, struct.pack("=B", v)))))
    for t in (top + 1, 255, 0x7FFF):
        cases.append((f"unknown-type-{t}", opts(limit20 + attr(t, struct.pack("=I", 1)))))
    cases.append(("not-nested", opts(limit20, flags=0)))
    cases.append(("empty-options", opts(b"")))
    overrun = struct.pack("=HH", 200, 1) + struct.pack("=I", 20)      # says 200 bytes, has 8
    cases.append(("overrun", attr(TCA_OPTIONS | NLA_F_NESTED, overrun)))
    rng = random.Random(a.seed)
    for i in range(a.random):
        inner = b"".join(attr(rng.choice(types + [0, top + 1]), bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 2, 4, 4, 4, 8]))))
                         for _ in range(rng.randint(1, 5)))
        cases.append((f"random{i}", opts(inner, flags=rng.choice([NLA_F_NESTED, NLA_F_NESTED, 0]))))

    out = []
    for name, blob in cases:
        create = nl.send(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL, ifindex, blob, a.kind)
        if create == 0:
            nl.send(RTM_DELQDISC, 0, ifindex, b"", a.kind)
        base = nl.send(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL, ifindex, opts(limit20), a.kind)
        change = nl.send(RTM_NEWQDISC, 0, ifindex, blob, a.kind) if base == 0 else None
        nl.send(RTM_DELQDISC, 0, ifindex, b"", a.kind)
        out.append({"name": name, "create": create, "change": change, "base": base})
    ok = nl.send(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL, ifindex, opts(limit20), a.kind) == 0
    shown = sh("tc", "qdisc", "show", "dev", "d0")
    print(json.dumps({"cases": out, "alive": ok and f"qdisc {a.kind} 1:" in shown, "show": shown.strip()}))


if __name__ == "__main__":
    sys.exit(main())
