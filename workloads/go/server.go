package main

// Flow server (workloads/server.py's behaviour): push (read size bytes to EOF, log, close) or pull (read
// the header, send size bytes beginning with it, close). Runs until SIGTERM/SIGINT, then logs the flows
// still open as `unfinished`, writes its log and exits 0.

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
)

var serverColumns = []string{"flow_id", "peer", "first_byte_s", "last_byte_s", "bytes", "outcome", "error"}

type srvFlow struct {
	id    int64
	hasID bool
	peer  string
	received
	outcome, errText string
	conn             net.Conn
}

type server struct {
	mu   sync.Mutex
	open map[*srvFlow]struct{}
	rows []*srvFlow
	clk  *clock
	pull bool
}

func (s *server) finishLocked(f *srvFlow, outcome, errText string) {
	if f.outcome != "" {
		return
	}
	f.outcome, f.errText = outcome, errText
	delete(s.open, f)
	s.rows = append(s.rows, f)
}

func (s *server) finish(f *srvFlow, outcome, errText string) {
	s.mu.Lock()
	s.finishLocked(f, outcome, errText)
	s.mu.Unlock()
}

// lost is Python's connection_lost(exc).
func (s *server) lost(f *srvFlow, err error) {
	if err == io.EOF {
		s.finish(f, "reset", "connection closed before the flow ended")
		return
	}
	outcome := "error"
	if isErrno(err, syscall.ECONNRESET) || isErrno(err, syscall.EPIPE) || isErrno(err, syscall.ESHUTDOWN) {
		outcome = "reset"
	}
	s.finish(f, outcome, pyStr(err))
}

func (s *server) handle(conn net.Conn) {
	tc := conn.(*net.TCPConn)
	_ = tc.SetNoDelay(false)
	f := &srvFlow{conn: conn}
	if ra, ok := conn.RemoteAddr().(*net.TCPAddr); ok {
		f.peer = ra.IP.String() + ":" + strconv.Itoa(ra.Port)
	}
	s.mu.Lock()
	if s.open == nil { // stopping
		s.mu.Unlock()
		conn.Close()
		return
	}
	s.open[f] = struct{}{}
	s.mu.Unlock()
	defer conn.Close()
	if s.pull {
		s.source(f, tc)
	} else {
		s.sink(f, tc)
	}
}

// sink (push): receive size bytes to EOF.
func (s *server) sink(f *srvFlow, tc *net.TCPConn) {
	bp := chunks.Get().(*[]byte)
	defer chunks.Put(bp)
	buf := *bp
	var head [headerBytes]byte
	nh := 0
	var size int64
	for {
		n, err := tc.Read(buf)
		if n > 0 {
			s.mu.Lock()
			f.got(fv(s.clk.rel()), n)
			if nh < headerBytes {
				k := copy(head[nh:], buf[:n])
				nh += k
				if nh == headerBytes {
					f.id, f.hasID = int64(binary.BigEndian.Uint64(head[0:8])), true
					size = int64(binary.BigEndian.Uint64(head[8:16]))
				}
			}
			s.mu.Unlock()
		}
		if err == io.EOF {
			s.mu.Lock()
			if f.hasID && f.bytes == size {
				s.finishLocked(f, "completed", "")
			} else {
				sz := "None"
				if f.hasID {
					sz = strconv.FormatInt(size, 10)
				}
				s.finishLocked(f, "short", fmt.Sprintf("EOF after %d of %s bytes", f.bytes, sz))
			}
			s.mu.Unlock()
			return
		}
		if err != nil {
			s.lost(f, err)
			return
		}
	}
}

// source (pull): read the header, then send size bytes (the header first) and close.
func (s *server) source(f *srvFlow, tc *net.TCPConn) {
	bp := chunks.Get().(*[]byte)
	defer chunks.Put(bp)
	buf := *bp
	n, err := io.ReadFull(tc, buf[:headerBytes])
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		s.finish(f, "short", fmt.Sprintf("EOF after %d header bytes", n))
		return
	}
	if err != nil {
		s.lost(f, err)
		return
	}
	id, size := int64(binary.BigEndian.Uint64(buf[0:8])), int64(binary.BigEndian.Uint64(buf[8:16]))
	s.mu.Lock()
	f.id, f.hasID = id, true
	s.mu.Unlock()
	remaining := size
	first := true
	for remaining > 0 {
		m := int64(chunk)
		if remaining < m {
			m = remaining
		}
		var out []byte
		if first {
			if m >= headerBytes {
				copy(buf[headerBytes:], payload[:m-headerBytes])
				out = buf[:m]
			} else {
				out = buf[:m]
			}
		} else {
			out = payload[:m]
		}
		if first {
			s.mu.Lock()
			f.firstByte = fv(s.clk.rel())
			s.mu.Unlock()
			first = false
		}
		w, err := tc.Write(out)
		s.mu.Lock()
		f.bytes += int64(w)
		s.mu.Unlock()
		if err != nil {
			s.lost(f, err)
			return
		}
		remaining -= m
	}
	s.mu.Lock()
	f.lastByte = fv(s.clk.rel())
	s.finishLocked(f, "completed", "")
	s.mu.Unlock()
}

func serverMain(argv []string) {
	ap := &argParser{prog: "favorflow server", desc: "Flow server: one process per testbed host, thousands of concurrent flows.",
		specs: []flagSpec{
			{name: "bind", kind: "str", help: "address to listen on (default: --host's IP, else 0.0.0.0)"},
			{name: "host", kind: "str", help: "this host's name in --hosts (the runner's form)"},
			{name: "hosts", kind: "str", help: "hosts.json: host name -> IP"},
			{name: "port", kind: "int", help: "TCP port (default: hosts.json's port, else 5001)"},
			{name: "log", kind: "str", required: true, help: "per-flow CSV written at exit"},
			{name: "mode", kind: "str", choices: []string{"push", "pull"}},
			{name: "t0", kind: "float", help: "unix time the log's times count from (default 0)"},
		}}
	a := ap.parse(argv)
	bind, hasBind := a["bind"]
	if !hasBind && a["host"] != "" {
		if a["hosts"] == "" {
			ap.fail("--host needs --hosts (or give --bind)")
		}
		table := loadHosts(a["hosts"])
		ip, ok := table[a["host"]]
		if !ok {
			var names []string
			for k := range table {
				names = append(names, k)
			}
			l := pyList(names)
			ap.fail(fmt.Sprintf("--host %s is not in %s (hosts: %s)", pyRepr(a["host"]), a["hosts"],
				joinList(l)))
		}
		bind = ip
	}
	port := 0
	if a.has("port") {
		port = a.int("port")
	}
	if port == 0 && a["hosts"] != "" {
		port = hostsPort(a["hosts"])
	}
	if port == 0 {
		port = 5001
	}
	if bind == "" {
		bind = "0.0.0.0"
	}
	mode := a["mode"]
	if mode == "" {
		mode = "push"
	}
	raiseNofile()
	network := "tcp"
	if ip := net.ParseIP(bind); ip != nil {
		if ip.To4() != nil {
			network = "tcp4"
		} else {
			network = "tcp6"
		}
	}
	lc := net.ListenConfig{KeepAlive: -1}
	ln, err := lc.Listen(context.Background(), network, net.JoinHostPort(bind, strconv.Itoa(port)))
	if err != nil {
		fatal(fmt.Sprintf("workloads.server: cannot listen on %s:%d: %s", bind, port, pyExc(err)))
	}
	s := &server{open: map[*srvFlow]struct{}{}, clk: newClock(a.float("t0", 0)), pull: mode == "pull"}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	fmt.Printf("workloads.server: %s on %s:%d, log %s\n", mode, bind, port, a["log"])
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				if ne, ok := err.(net.Error); ok && !isClosed(err) && ne.Timeout() == false {
					time.Sleep(5 * time.Millisecond) // EMFILE and the like: try again
					continue
				}
				return
			}
			go s.handle(conn)
		}
	}()
	<-sigs
	ln.Close()
	s.mu.Lock()
	for f := range s.open {
		s.finishLocked(f, "unfinished", "server stopped while the flow was open")
		f.conn.Close()
	}
	s.open = nil
	rows := make([][]string, len(s.rows))
	for i, f := range s.rows {
		id := ""
		if f.hasID {
			id = strconv.FormatInt(f.id, 10)
		}
		rows[i] = []string{id, f.peer, fmtF(f.firstByte), fmtF(f.lastByte), strconv.FormatInt(f.bytes, 10),
			f.outcome, f.errText}
	}
	s.mu.Unlock()
	if err := writeCSV(a["log"], serverColumns, rows); err != nil {
		fatal(fmt.Sprintf("workloads.server: cannot write --log %s: %v", a["log"], err))
	}
	fmt.Printf("workloads.server: %d flows logged\n", len(rows))
	os.Exit(0)
}

func isClosed(err error) bool {
	return err != nil && (err == net.ErrClosed || (func() bool { oe, ok := err.(*net.OpError); return ok && oe.Err == net.ErrClosed })())
}

// joinList turns "['a', 'b']" into "a, b" (Python's ', '.join(sorted(table))).
func joinList(l string) string {
	l = l[1 : len(l)-1]
	out := []byte{}
	for i := 0; i < len(l); i++ {
		if l[i] != '\'' {
			out = append(out, l[i])
		}
	}
	return string(out)
}
