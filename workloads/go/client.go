package main

// Open-loop flow client (workloads/client.py's behaviour): every row with src == --host is opened at
// t0 + start_s whatever the network does; a late start is logged and never shifts later flows. One
// goroutine per flow; a dispatcher goroutine sleeps until each start.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

var clientColumns = []string{"flow_id", "src", "dst", "size_bytes", "scheduled_s", "actual_start_s", "lateness_s",
	"connect_s", "first_byte_s", "last_byte_s", "end_s", "bytes", "outcome", "error"}

// earlySleep: the dispatcher sleeps with the runtime's timers until this long before a start, then the rest
// with nanosleep (microsecond precision).
const earlySleep = 2 * time.Millisecond

type flowRun struct {
	f                         flow
	actualStart, connect, end fopt
	received
	outcome  string // "" while running; "not_started" until started
	errText  string
	conn     net.Conn
	dialErr  error     // socket() or connect() failed at once
	deadline time.Time // --flow-timeout after the start
}

// dest: a destination host's socket address, resolved once before the first start.
type dest struct {
	sa     syscall.Sockaddr
	family int
}

type client struct {
	mu          sync.Mutex
	runs        []*flowRun
	dests       map[string]dest
	pull        bool
	timeout     time.Duration
	timeoutText string
	clk         *clock
	stopped     bool
	ended       int
	allEnded    chan struct{}
}

// finish records how the flow ended (the first call wins) and releases its socket. Caller holds c.mu.
func (c *client) finishLocked(r *flowRun, outcome, errText string) {
	if r.outcome != "" {
		return
	}
	r.end, r.outcome, r.errText = fv(c.clk.rel()), outcome, errText
	if r.conn != nil {
		r.conn.Close()
	}
	c.ended++
	if c.ended == len(c.runs) {
		close(c.allEnded)
	}
}

func (c *client) finish(r *flowRun, outcome, errText string) {
	c.mu.Lock()
	c.finishLocked(r, outcome, errText)
	c.mu.Unlock()
}

// fail classifies an error like client.py's _outcome.
func (c *client) fail(r *flowRun, err error) {
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout() && !isErrno(err, syscall.ETIMEDOUT)) {
		c.finish(r, "timed_out", c.timeoutText)
		return
	}
	if errors.Is(err, net.ErrClosed) {
		c.finish(r, "timed_out", "still running at --stop-at (or a stop signal)") // a no-op: stop() came first
		return
	}
	outcome := "error"
	if en, ok := errnoOf(err); ok {
		switch en {
		case syscall.ECONNREFUSED:
			outcome = "refused"
		case syscall.ECONNRESET, syscall.EPIPE, syscall.ESHUTDOWN, syscall.ECONNABORTED:
			outcome = "reset"
		case syscall.ETIMEDOUT:
			outcome = "timed_out"
		}
	}
	c.finish(r, outcome, pyExc(err))
}

func isErrno(err error, want syscall.Errno) bool {
	en, ok := errnoOf(err)
	return ok && en == want
}

// dialNow issues connect() on a non-blocking socket and returns the socket, still connecting, as a
// net.Conn. The dispatcher calls it itself: with net.Dialer in the flow's goroutine, a start waited for
// that goroutine to be scheduled, 1.7 ms at the median and over 10 ms at p99 on the guest's two vCPUs
// at 60 flows/s (testbed/README.md), and lateness_s counts from the schedule to this connect().
func dialNow(sa syscall.Sockaddr, family int) (net.Conn, error) {
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	if err := syscall.Connect(fd, sa); err != nil && err != syscall.EINPROGRESS {
		syscall.Close(fd)
		return nil, os.NewSyscallError("connect", err)
	}
	f := os.NewFile(uintptr(fd), "flow")
	conn, err := net.FileConn(f) // its own copy of the descriptor, in the runtime's poller
	f.Close()
	return conn, err
}

// awaitConnect waits (within the conn's deadline) for the handshake dialNow started, and returns its
// outcome: the socket's SO_ERROR once it is writable.
func awaitConnect(conn net.Conn) error {
	rc, err := conn.(syscall.Conn).SyscallConn()
	if err != nil {
		return err
	}
	var result error
	err = rc.Write(func(fd uintptr) bool {
		v, e := syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_ERROR)
		switch {
		case e != nil:
			result = os.NewSyscallError("getsockopt", e)
		case v != 0:
			result = os.NewSyscallError("connect", syscall.Errno(v))
		default:
			if _, e := syscall.Getpeername(int(fd)); e == syscall.ENOTCONN {
				return false // still in the handshake: wait until writable
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	return result
}

// startLocked opens the flow's connection now (caller holds c.mu, the dispatcher at the flow's start).
func (c *client) startLocked(r *flowRun) {
	now := time.Now() // connect() follows at once: the SYN leaves now
	r.actualStart, r.outcome, r.deadline = fv(c.clk.relAt(now)), "", now.Add(c.timeout)
	d := c.dests[r.f.dst]
	r.conn, r.dialErr = dialNow(d.sa, d.family)
}

func (c *client) run(r *flowRun) {
	if r.dialErr != nil {
		c.fail(r, r.dialErr)
		return
	}
	tc := r.conn.(*net.TCPConn)
	_ = tc.SetNoDelay(false) // kernel defaults, as Python's sockets: Nagle on
	_ = tc.SetDeadline(r.deadline)
	if err := awaitConnect(tc); err != nil {
		c.fail(r, err)
		return
	}
	c.mu.Lock()
	if r.outcome != "" { // stopped meanwhile (the socket was closed then)
		c.mu.Unlock()
		return
	}
	r.connect = fv(c.clk.rel())
	c.mu.Unlock()
	if c.pull {
		c.pullFlow(r, tc)
	} else {
		c.pushFlow(r, tc)
	}
}

// pushFlow writes size bytes (the header first), shuts down the write side, waits for the server's EOF.
func (c *client) pushFlow(r *flowRun, tc *net.TCPConn) {
	remaining := r.f.size
	bp := chunks.Get().(*[]byte)
	first := *bp
	n := int64(chunk)
	if remaining < n {
		n = remaining
	}
	binary.BigEndian.PutUint64(first[0:8], uint64(r.f.id))
	binary.BigEndian.PutUint64(first[8:16], uint64(r.f.size))
	buf := first[:n]
	for remaining > 0 {
		m := int64(chunk)
		if remaining < m {
			m = remaining
		}
		if buf == nil {
			buf = payload[:m]
		} else {
			c.mu.Lock()
			r.firstByte = fv(c.clk.rel())
			c.mu.Unlock()
		}
		w, err := tc.Write(buf)
		c.mu.Lock()
		r.bytes += int64(w)
		c.mu.Unlock()
		if err != nil {
			chunks.Put(bp)
			c.fail(r, err)
			return
		}
		remaining -= m
		buf = nil
	}
	chunks.Put(bp)
	c.mu.Lock()
	r.lastByte = fv(c.clk.rel())
	c.mu.Unlock()
	if err := tc.CloseWrite(); err != nil {
		c.fail(r, err)
		return
	}
	var sink [512]byte
	for {
		_, err := tc.Read(sink[:]) // the server sends nothing in push mode
		if err == io.EOF {
			c.finish(r, "completed", "")
			return
		}
		if err != nil {
			c.fail(r, err)
			return
		}
	}
}

// pullFlow writes the header, reads size bytes to EOF.
func (c *client) pullFlow(r *flowRun, tc *net.TCPConn) {
	var h [headerBytes]byte
	binary.BigEndian.PutUint64(h[0:8], uint64(r.f.id))
	binary.BigEndian.PutUint64(h[8:16], uint64(r.f.size))
	if _, err := tc.Write(h[:]); err != nil {
		c.fail(r, err)
		return
	}
	if err := tc.CloseWrite(); err != nil {
		c.fail(r, err)
		return
	}
	bp := chunks.Get().(*[]byte)
	defer chunks.Put(bp)
	buf := *bp
	for {
		n, err := tc.Read(buf)
		if n > 0 {
			c.mu.Lock()
			r.got(fv(c.clk.rel()), n)
			c.mu.Unlock()
		}
		if err == io.EOF {
			c.mu.Lock()
			got := r.bytes
			c.mu.Unlock()
			if got == r.f.size {
				c.finish(r, "completed", "")
			} else {
				c.finish(r, "reset", fmt.Sprintf("EOF after %d of %d bytes", got, r.f.size))
			}
			return
		}
		if err != nil {
			c.fail(r, err)
			return
		}
	}
}

func (c *client) dispatch() {
	for _, r := range c.runs {
		target := c.clk.at(r.f.start)
		if d := time.Until(target); d > earlySleep {
			time.Sleep(d - earlySleep)
		}
		if rest := time.Until(target); rest > 0 {
			ts := syscall.NsecToTimespec(rest.Nanoseconds())
			for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
			}
		}
		c.mu.Lock()
		if c.stopped {
			c.mu.Unlock()
			return
		}
		c.startLocked(r)
		c.mu.Unlock()
		go c.run(r)
	}
}

func clientMain(argv []string) {
	ap := &argParser{prog: "favorflow client", desc: "Open-loop flow client: replays a schedule's flows from one host, one new TCP connection per flow.",
		specs: []flagSpec{
			{name: "schedule", kind: "str", required: true},
			{name: "host", kind: "str", required: true, help: "this host's name: runs the rows whose src is this"},
			{name: "hosts", kind: "str", required: true, help: "hosts.json: host name -> IP"},
			{name: "t0", kind: "float", help: "unix time of the schedule's 0 (or --ready)"},
			{name: "log", kind: "str", required: true, help: "per-flow CSV written at exit"},
			{name: "port", kind: "int", help: "server port (default: hosts.json's port, else 5001)"},
			{name: "mode", kind: "str", choices: []string{"push", "pull"}},
			{name: "flow-timeout", kind: "float", help: "seconds from a flow's start (default 120)"},
			{name: "stop-at", kind: "float", help: "unix time to stop at, whatever is still open"},
			{name: "ready", kind: "str", help: "once loaded, create this file and read 't0 [stop_at]' from stdin"},
		}}
	a := ap.parse(argv)
	flowTimeout := a.float("flow-timeout", 120.0)
	if !(flowTimeout > 0) {
		ap.fail("--flow-timeout must be > 0")
	}
	if a.has("t0") == a.has("ready") {
		ap.fail(readyUsage)
	}
	hosts := loadHosts(a["hosts"])
	all, err := readSchedule(a["schedule"])
	if err != nil {
		fatal("workloads.client: " + err.Error())
	}
	host := a["host"]
	var mine []flow
	unknown := map[string]bool{}
	for _, f := range all {
		if f.src == host {
			mine = append(mine, f)
			if _, ok := hosts[f.dst]; !ok {
				unknown[f.dst] = true
			}
		}
	}
	if len(unknown) > 0 {
		var u, known []string
		for k := range unknown {
			u = append(u, k)
		}
		for k := range hosts {
			known = append(known, k)
		}
		fatal(fmt.Sprintf("workloads.client: destinations %s of host %s are not in --hosts; hosts.json knows %s",
			pyList(u), host, pyList(known)))
	}
	raiseNofile()
	port := 0
	if a.has("port") {
		port = a.int("port")
	}
	if port == 0 {
		port = hostsPort(a["hosts"])
	}
	if port == 0 {
		port = 5001
	}
	dests := map[string]dest{}
	for _, f := range mine {
		if _, ok := dests[f.dst]; ok {
			continue
		}
		ip, err := net.ResolveIPAddr("ip", hosts[f.dst])
		if err != nil {
			fatal(fmt.Sprintf("workloads.client: host %s: cannot resolve %s from --hosts (%v); fix hosts.json", f.dst, hosts[f.dst], err))
		}
		if v4 := ip.IP.To4(); v4 != nil {
			sa := &syscall.SockaddrInet4{Port: port}
			copy(sa.Addr[:], v4)
			dests[f.dst] = dest{sa, syscall.AF_INET}
		} else {
			sa := &syscall.SockaddrInet6{Port: port}
			copy(sa.Addr[:], ip.IP.To16())
			dests[f.dst] = dest{sa, syscall.AF_INET6}
		}
	}
	c := &client{dests: dests, pull: a["mode"] == "pull",
		timeout:     time.Duration(flowTimeout * 1e9),
		timeoutText: fmt.Sprintf("flow not ended after --flow-timeout %s s", pyG(flowTimeout)),
		allEnded:    make(chan struct{})}
	t0, stopAtUnix, hasStop := a.float("t0", 0), a.float("stop-at", 0), a.has("stop-at")
	if a.has("ready") {
		t0, stopAtUnix, hasStop = awaitGo(a["ready"])
	}
	c.clk = newClock(t0)
	for _, f := range mine {
		c.runs = append(c.runs, &flowRun{f: f, outcome: "not_started"})
	}
	if len(c.runs) == 0 {
		close(c.allEnded)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	var stopAt <-chan time.Time
	if hasStop {
		stopAt = time.After(time.Until(c.clk.at(stopAtUnix - c.clk.t0)))
	}
	go c.dispatch()
	select {
	case <-c.allEnded:
	case <-sigs:
	case <-stopAt:
	}
	c.mu.Lock()
	c.stopped = true
	for _, r := range c.runs {
		if r.outcome == "" {
			c.finishLocked(r, "timed_out", "still running at --stop-at (or a stop signal)")
		}
	}
	rows := make([][]string, len(c.runs))
	counts, order := map[string]int{}, []string{}
	for i, r := range c.runs {
		bytes := strconv.FormatInt(r.bytes, 10)
		lateness := fopt{}
		if r.actualStart.ok {
			lateness = fv(r.actualStart.v - r.f.start)
		}
		rows[i] = []string{strconv.FormatInt(r.f.id, 10), r.f.src, r.f.dst, strconv.FormatInt(r.f.size, 10),
			fmtF(fv(r.f.start)), fmtF(r.actualStart), fmtF(lateness), fmtF(r.connect), fmtF(r.firstByte),
			fmtF(r.lastByte), fmtF(r.end), bytes, r.outcome, r.errText}
		if r.outcome == "not_started" { // never started: no times, like Python's record
			rows[i][5], rows[i][6] = "", ""
		}
		if _, ok := counts[r.outcome]; !ok {
			order = append(order, r.outcome)
		}
		counts[r.outcome]++
	}
	c.mu.Unlock()
	if err := writeCSV(a["log"], clientColumns, rows); err != nil {
		fatal(fmt.Sprintf("workloads.client: cannot write --log %s: %v", a["log"], err))
	}
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = fmt.Sprintf("%s: %d", pyRepr(k), counts[k])
	}
	fmt.Printf("workloads.client %s: %d flows: {%s}\n", host, len(rows), strings.Join(parts, ", "))
	os.Exit(0)
}

const readyUsage = "give one of --t0 and --ready"

// awaitGo is --ready's handshake (workloads/client.py's await_go): the client is loaded, so it says so by
// creating the file, then blocks until its starter writes the go line "t0 [stop_at]" (unix times) to stdin.
// The starter learns when every client is up instead of guessing a start-up lead.
func awaitGo(ready string) (t0, stopAt float64, hasStop bool) {
	if err := os.WriteFile(ready, nil, 0o644); err != nil {
		fatal(fmt.Sprintf("workloads.client: --ready %s: cannot create it (%v)", ready, err))
	}
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	f := strings.Fields(line)
	var err error
	ok := len(f) == 1 || len(f) == 2
	if ok {
		t0, err = parseFloat(f[0])
		ok = err == nil
	}
	if ok && len(f) == 2 {
		stopAt, err = parseFloat(f[1])
		ok, hasStop = err == nil, true
	}
	if !ok {
		fatal(fmt.Sprintf("workloads.client: --ready: expected the go line 't0 [stop_at]' (unix times) on stdin, got %s", pyRepr(line)))
	}
	return t0, stopAt, hasStop
}
