// Pieces shared by the client and the server: the flow header, the clock, the log writer, argument parsing,
// Python-compatible formatting (so that the logs and messages match workloads/common.py and friends).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	headerBytes = 16        // flow id, size in bytes (the whole flow, header included), big endian u64 each
	chunk       = 64 * 1024 // bytes handed to the kernel per write
)

var payload = make([]byte, chunk) // zeros, read only

// chunks: the per-flow read and first-write buffers, reused. A fresh 64 KiB buffer per flow made the
// garbage collector run every few seconds in each of a run's twelve processes, on the guest's two vCPUs.
var chunks = sync.Pool{New: func() interface{} { b := make([]byte, chunk); return &b }}

// raiseNofile raises the soft open-file limit towards the hard limit (one socket per concurrent flow).
func raiseNofile() {
	const want = 1 << 20
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) != nil {
		return
	}
	target := uint64(want)
	if r.Max != math.MaxUint64 && r.Max < target { // RLIM_INFINITY is all ones
		target = r.Max
	}
	if target > r.Cur {
		r.Cur = target
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r)
	}
}

// fatal prints msg to stderr and exits 1, like Python's SystemExit(msg).
func fatal(msg string) {
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(1)
}

// loadHosts reads hosts.json: {"a1": "10.1.0.1", ...} or {"hosts": {"a1": {"ip": ...}}, ...}.
func loadHosts(path string) map[string]string {
	raw, err := os.ReadFile(path)
	var data interface{}
	if err == nil {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		err = d.Decode(&data)
	}
	if err != nil {
		fatal(fmt.Sprintf("--hosts %s: cannot read it as JSON (%v)", path, err))
	}
	var table map[string]interface{}
	if m, ok := data.(map[string]interface{}); ok {
		table = m
		if h, has := m["hosts"]; has {
			table, _ = h.(map[string]interface{})
		}
	}
	if table == nil {
		fatal(fmt.Sprintf("--hosts %s: expected an object host -> IP (or {'hosts': {name: {'ip': ..}}})", path))
	}
	out := map[string]string{}
	for name, v := range table {
		ipv := v
		if m, ok := v.(map[string]interface{}); ok {
			ipv = m["ip"]
		}
		ip, ok := ipv.(string)
		if !ok {
			fatal(fmt.Sprintf("--hosts %s: host %s has no IP string (got %v)", path, pyRepr(name), v))
		}
		out[name] = ip
	}
	return out
}

// hostsPort is hosts.json's integer "port" entry, or 0.
func hostsPort(path string) int {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var data map[string]interface{}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&data) != nil {
		return 0
	}
	n, ok := data["port"].(json.Number)
	if !ok {
		return 0
	}
	p, err := strconv.Atoi(string(n))
	if err != nil {
		return 0
	}
	return p
}

// clock converts monotonic time to seconds after a unix-time t0; the offset is taken once, so a wall clock
// step during a run does not move the schedule.
type clock struct {
	base     time.Time // carries the monotonic reading
	baseUnix float64
	t0       float64
}

func newClock(t0 float64) *clock {
	now := time.Now()
	return &clock{base: now, baseUnix: float64(now.UnixNano()) / 1e9, t0: t0}
}

// rel is now in seconds after t0.
func (c *clock) rel() float64 { return c.relAt(time.Now()) }

func (c *clock) relAt(t time.Time) float64 {
	return t.Sub(c.base).Seconds() + (c.baseUnix - c.t0)
}

// at is the monotonic instant of rel seconds after t0.
func (c *clock) at(rel float64) time.Time {
	return c.base.Add(time.Duration((c.t0 + rel - c.baseUnix) * 1e9))
}

// cell is one log field: "" for nil, %.6f for floats, decimal for ints, the text for strings (Python's _fmt).
type fopt struct {
	ok bool
	v  float64
}

func fv(v float64) fopt { return fopt{true, v} }

// received: the arrival record of a flow's data, kept the same way by the client (pull) and the server
// (push); the caller holds the lock that guards the flow.
type received struct {
	firstByte, lastByte fopt
	bytes               int64
}

func (r *received) got(now fopt, n int) {
	if !r.firstByte.ok {
		r.firstByte = now
	}
	r.lastByte = now
	r.bytes += int64(n)
}

func fmtF(f fopt) string {
	if !f.ok {
		return ""
	}
	return fmt.Sprintf("%.6f", f.v)
}

// csvField quotes like Python's csv module (QUOTE_MINIMAL, lineterminator "\n").
func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n\r") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

// writeCSV writes the rows atomically (a temporary file renamed), so a reader never sees half a log.
func writeCSV(path string, columns []string, rows [][]string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(strings.Join(columns, ","))
	b.WriteByte('\n')
	for _, r := range rows {
		for i, f := range r {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(csvField(f))
		}
		b.WriteByte('\n')
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o666); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// pyRepr is Python's repr() of a str.
func pyRepr(s string) string {
	q := "'"
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		q = `"`
	}
	s = strings.ReplaceAll(s, `\`, `\\`)
	if q == "'" {
		s = strings.ReplaceAll(s, "'", `\'`)
	}
	s = strings.ReplaceAll(s, "\n", `\n`)
	s = strings.ReplaceAll(s, "\r", `\r`)
	s = strings.ReplaceAll(s, "\t", `\t`)
	return q + s + q
}

// pyList is Python's repr() of a sorted list of str.
func pyList(xs []string) string {
	sort.Strings(xs)
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = pyRepr(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// pyFloat is Python's str()/repr() of a float.
func pyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±XX
	sign := ""
	if e[0] == '-' {
		sign, e = "-", e[1:]
	}
	i := strings.IndexByte(e, 'e')
	digits := strings.Replace(e[:i], ".", "", 1)
	exp, _ := strconv.Atoi(e[i+1:])
	if exp < -4 || exp >= 16 {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		es := fmt.Sprintf("%+03d", exp)
		return sign + m + "e" + es
	}
	if exp < 0 {
		return sign + "0." + strings.Repeat("0", -exp-1) + digits
	}
	if len(digits) <= exp+1 {
		return sign + digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
	}
	return sign + digits[:exp+1] + "." + digits[exp+1:]
}

// pyG is Python's format(f, "g").
func pyG(f float64) string {
	s := strconv.FormatFloat(f, 'g', 6, 64)
	if i := strings.IndexByte(s, 'e'); i >= 0 { // Go: 1e+06, Python: 1e+06; Go 1e-05, Python 1e-05
		return s
	}
	return s
}

// Python's exception class for an errno (what OSError(errno, ...) becomes).
var pyErrnoClass = map[syscall.Errno]string{
	syscall.ECONNREFUSED: "ConnectionRefusedError", syscall.ECONNRESET: "ConnectionResetError",
	syscall.EPIPE: "BrokenPipeError", syscall.ESHUTDOWN: "BrokenPipeError",
	syscall.ECONNABORTED: "ConnectionAbortedError", syscall.ETIMEDOUT: "TimeoutError",
	syscall.EAGAIN: "BlockingIOError", syscall.EINPROGRESS: "BlockingIOError", syscall.EALREADY: "BlockingIOError",
	syscall.EINTR: "InterruptedError", syscall.ENOENT: "FileNotFoundError", syscall.EACCES: "PermissionError",
	syscall.EPERM: "PermissionError",
}

func errnoOf(err error) (syscall.Errno, bool) {
	var en syscall.Errno
	if errors.As(err, &en) {
		return en, true
	}
	return 0, false
}

// pyStrerror is glibc's message for errno (Go's table has them in lower case).
func pyErrnoText(en syscall.Errno) string {
	s := en.Error()
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return fmt.Sprintf("[Errno %d] %s", int(en), s)
}

// pyExc renders err as Python's f"{type(exc).__name__}: {exc}" would for the matching OSError.
func pyExc(err error) string {
	if en, ok := errnoOf(err); ok {
		cls, ok := pyErrnoClass[en]
		if !ok {
			cls = "OSError"
		}
		return cls + ": " + pyErrnoText(en)
	}
	return "OSError: " + err.Error()
}

// pyStr renders err as Python's str(exc) for the matching OSError.
func pyStr(err error) string {
	if en, ok := errnoOf(err); ok {
		return pyErrnoText(en)
	}
	return err.Error()
}
