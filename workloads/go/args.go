package main

// A small argparse look-alike: --flag value and --flag=value, required flags, choices, typed values, the
// same error texts and exit status 2 as Python's argparse.

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

type flagSpec struct {
	name     string // without the leading --
	kind     string // "str", "float", "int"
	required bool
	choices  []string
	help     string
}

type argParser struct {
	prog  string
	desc  string
	specs []flagSpec
}

type parsed map[string]string

func (p *argParser) usage() string {
	var b strings.Builder
	b.WriteString("usage: " + p.prog + " [-h]")
	for _, s := range p.specs {
		meta := strings.ToUpper(strings.ReplaceAll(s.name, "-", "_"))
		if len(s.choices) > 0 {
			meta = "{" + strings.Join(s.choices, ",") + "}"
		}
		if s.required {
			b.WriteString(fmt.Sprintf(" --%s %s", s.name, meta))
		} else {
			b.WriteString(fmt.Sprintf(" [--%s %s]", s.name, meta))
		}
	}
	return b.String()
}

func (p *argParser) fail(msg string) {
	fmt.Fprintf(os.Stderr, "%s\n%s: error: %s\n", p.usage(), p.prog, msg)
	os.Exit(2)
}

func (p *argParser) help() {
	fmt.Println(p.usage())
	fmt.Println()
	fmt.Println(p.desc)
	fmt.Println()
	fmt.Println("options:")
	fmt.Println("  -h, --help            show this help message and exit")
	for _, s := range p.specs {
		fmt.Printf("  --%-20s %s\n", s.name, s.help)
	}
	os.Exit(0)
}

func (p *argParser) spec(name string) *flagSpec {
	for i := range p.specs {
		if p.specs[i].name == name {
			return &p.specs[i]
		}
	}
	// argparse accepts unique prefixes of long options
	var hit *flagSpec
	for i := range p.specs {
		if strings.HasPrefix(p.specs[i].name, name) {
			if hit != nil {
				return nil
			}
			hit = &p.specs[i]
		}
	}
	return hit
}

func (p *argParser) parse(argv []string) parsed {
	out := parsed{}
	var extra []string
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if a == "-h" || a == "--help" {
			p.help()
		}
		if !strings.HasPrefix(a, "--") || a == "--" {
			extra = append(extra, a)
			continue
		}
		name, val, hasVal := strings.Cut(a[2:], "=")
		s := p.spec(name)
		if s == nil {
			extra = append(extra, a)
			continue
		}
		if !hasVal {
			if i+1 >= len(argv) || (strings.HasPrefix(argv[i+1], "-") && !looksNumber(argv[i+1])) {
				p.fail(fmt.Sprintf("argument --%s: expected one argument", s.name))
			}
			i++
			val = argv[i]
		}
		switch s.kind {
		case "float":
			if _, err := parseFloat(val); err != nil {
				p.fail(fmt.Sprintf("argument --%s: invalid float value: %s", s.name, pyRepr(val)))
			}
		case "int":
			if _, err := strconv.Atoi(strings.TrimSpace(val)); err != nil {
				p.fail(fmt.Sprintf("argument --%s: invalid int value: %s", s.name, pyRepr(val)))
			}
		}
		if len(s.choices) > 0 {
			ok := false
			for _, c := range s.choices {
				ok = ok || c == val
			}
			if !ok {
				cs := make([]string, len(s.choices))
				for i, c := range s.choices {
					cs[i] = pyRepr(c)
				}
				p.fail(fmt.Sprintf("argument --%s: invalid choice: %s (choose from %s)", s.name, pyRepr(val),
					strings.Join(cs, ", ")))
			}
		}
		out[s.name] = val
	}
	var missing []string
	for _, s := range p.specs {
		if _, ok := out[s.name]; s.required && !ok {
			missing = append(missing, "--"+s.name)
		}
	}
	if len(missing) > 0 {
		p.fail("the following arguments are required: " + strings.Join(missing, ", "))
	}
	if len(extra) > 0 {
		p.fail("unrecognized arguments: " + strings.Join(extra, " "))
	}
	return out
}

func looksNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// parseFloat is Python's float(): surrounding blanks allowed, inf/nan spelled any case.
func parseFloat(s string) (float64, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(strings.TrimLeft(s, "+-")) {
	case "inf", "infinity", "nan":
		f, _ := strconv.ParseFloat(s, 64)
		return f, nil
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, err
	}
	return f, nil
}

func (a parsed) has(k string) bool { _, ok := a[k]; return ok }

func (a parsed) float(k string, def float64) float64 {
	v, ok := a[k]
	if !ok {
		return def
	}
	f, _ := parseFloat(v)
	return f
}

func (a parsed) int(k string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(a[k]))
	return n
}
