package main

// The schedule reader, validated like contract/schedule.py (the same messages, naming the line).

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
	"strings"
)

var schedColumns = []string{"flow_id", "start_s", "size_bytes", "size_pkts", "src", "dst", "direction", "kind"}

type flow struct {
	id        int64
	start     float64
	size      int64
	pkts      int64
	src, dst  string
	direction string
	kind      string
}

type schedError struct{ msg string }

func (e *schedError) Error() string { return e.msg }

func serr(format string, a ...interface{}) error { return &schedError{fmt.Sprintf(format, a...)} }

// pyInt is Python's int() of a str.
func pyInt(s string) (int64, error) {
	return strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(s), "_", ""), 10, 64)
}

func readSchedule(path string) ([]flow, error) {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return nil, serr("%s: no such schedule file (make one with python -m orchestrate.schedule)", path)
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, serr("%s: no such schedule file (make one with python -m orchestrate.schedule)", path)
	}
	defer fh.Close()
	var body strings.Builder
	lineno0, n := 0, 0
	rd := bufio.NewReaderSize(fh, 1<<16)
	for {
		line, err := rd.ReadString('\n')
		if line != "" {
			n++
			if !strings.HasPrefix(line, "#") {
				if lineno0 == 0 {
					lineno0 = n
				}
				body.WriteString(line)
			}
		}
		if err != nil {
			break
		}
	}
	cr := csv.NewReader(strings.NewReader(body.String()))
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	header, err := cr.Read()
	if err != nil {
		return nil, serr("%s: no header line; expected %s", path, strings.Join(schedColumns, ","))
	}
	idx := map[string]int{}
	for i, h := range header {
		if _, dup := idx[h]; !dup {
			idx[h] = i
		}
	}
	var missing []string
	for _, c := range schedColumns {
		if _, ok := idx[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return nil, serr("%s:%d: header lacks columns %s; expected %s", path, lineno0, pyListKeep(missing),
			strings.Join(schedColumns, ","))
	}
	var flows []flow
	seen := map[int64]bool{}
	last := 0.0
	for i := 0; ; i++ {
		rec, err := cr.Read()
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			return nil, serr("%s: %v", path, err)
		}
		lineno := lineno0 + 1 + i
		if len(rec) > len(header) {
			return nil, serr("%s:%d: expected %d columns, got a different count", path, lineno, len(schedColumns))
		}
		for _, c := range schedColumns {
			if idx[c] >= len(rec) {
				return nil, serr("%s:%d: expected %d columns, got a different count", path, lineno, len(schedColumns))
			}
		}
		col := func(c string) string { return rec[idx[c]] }
		var convErr error
		geti := func(c string) int64 {
			v, err := pyInt(col(c))
			if err != nil && convErr == nil {
				convErr = serr("%s:%d: column %s = %s is not a valid int; regenerate the schedule with python -m orchestrate.schedule",
					path, lineno, c, pyRepr(col(c)))
			}
			return v
		}
		getf := func(c string) float64 {
			v, err := parseFloat(col(c))
			if err != nil && convErr == nil {
				convErr = serr("%s:%d: column %s = %s is not a valid float; regenerate the schedule with python -m orchestrate.schedule",
					path, lineno, c, pyRepr(col(c)))
			}
			return v
		}
		f := flow{id: geti("flow_id")}
		if convErr == nil {
			f.start = getf("start_s")
		}
		if convErr == nil {
			f.size = geti("size_bytes")
		}
		if convErr == nil {
			f.pkts = geti("size_pkts")
		}
		if convErr != nil {
			return nil, convErr
		}
		f.src, f.dst, f.direction, f.kind = col("src"), col("dst"), col("direction"), col("kind")
		var problems []string
		if f.id < 0 {
			problems = append(problems, "flow_id must be >= 0")
		}
		if !(f.start >= 0) {
			problems = append(problems, "start_s must be >= 0")
		}
		if f.size < headerBytes {
			problems = append(problems, fmt.Sprintf("size_bytes must be >= %d (the flow header)", headerBytes))
		}
		if f.pkts < 1 {
			problems = append(problems, "size_pkts must be >= 1")
		}
		if f.src == "" || f.dst == "" {
			problems = append(problems, "src and dst must name hosts")
		}
		if f.direction != "forward" && f.direction != "reverse" {
			problems = append(problems, "direction must be one of ('forward', 'reverse')")
		}
		if f.kind == "" {
			problems = append(problems, "kind must not be empty")
		}
		if len(problems) > 0 {
			return nil, serr("%s:%d: %s", path, lineno, strings.Join(problems, "; "))
		}
		if seen[f.id] {
			return nil, serr("%s:%d: flow_id %d appears twice; flow ids must be unique", path, lineno, f.id)
		}
		if f.start < last {
			return nil, serr("%s:%d: start_s %s is before the previous row's %s; rows must be sorted by start_s",
				path, lineno, pyFloat(f.start), pyFloat(last))
		}
		seen[f.id] = true
		last = f.start
		flows = append(flows, f)
	}
	return flows, nil
}

// pyListKeep is Python's repr() of a list of str, in its order.
func pyListKeep(xs []string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = pyRepr(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
