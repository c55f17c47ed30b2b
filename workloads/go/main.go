// favorflow: the open-loop flow client and the flow server of workloads/ (client.py, server.py) in Go,
// one static binary: `favorflow client ...`, `favorflow server ...`, with the same flags, protocol, logs
// and outcomes; and `favorflow synflood ...`, the synflood scenario's attacker (synflood.go). Standard
// library only; builds with Go 1.19.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: favorflow client|server|synflood [--flag value ...] (favorflow client --help)")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "client":
		clientMain(os.Args[2:])
	case "server":
		serverMain(os.Args[2:])
	case "synflood":
		synfloodMain(os.Args[2:])
	case "-h", "--help":
		fmt.Println("usage: favorflow client|server|synflood [--flag value ...] (favorflow client --help)")
	default:
		fmt.Fprintf(os.Stderr, "favorflow: unknown subcommand %q: expected client, server or synflood\n", os.Args[1])
		os.Exit(2)
	}
}
