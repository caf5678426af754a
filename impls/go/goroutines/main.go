// Command corobench-go implements the corobench scenarios (docs/protocol.md) with
// goroutines and buffered channels.
//
// One binary per scenario group, built from this package with build tags
// (build.sh): corobench-go (tasks, blocking, info), corobench-go-chain
// (-tags scenario_chain), corobench-go-echo (-tags scenario_echo) and
// corobench-go-http (-tags scenario_http). The manifest runs corobench-go, which
// hands a scenario it was not built with to that scenario's binary by exec
// (handoff.go). Why: the Go runtime touches its binary's pages at start in
// proportion to the binary's size, so every run pays for whatever is linked in
// (README, "Why one binary per scenario").
package main

import (
	"os"
	"runtime"

	"corobench/impls/go/internal/protocol"
)

const usage = "usage: corobench-go chain|tasks|blocking|echo|http [flags] | info (see docs/protocol.md)"

// local holds the scenarios built into this binary: each scenario's file adds
// its entry point in an init function.
var local = map[string]func(args []string){}

// binaries names the binary that runs each scenario.
var binaries = map[string]string{
	"tasks":    "corobench-go",
	"blocking": "corobench-go",
	"info":     "corobench-go",
	"chain":    "corobench-go-chain",
	"echo":     "corobench-go-echo",
	"http":     "corobench-go-http",
}

func main() {
	if len(os.Args) < 2 {
		protocol.BadInput("missing scenario; %s", usage)
	}
	name := os.Args[1]
	if run, ok := local[name]; ok {
		run(os.Args[2:])
		return
	}
	binary, ok := binaries[name]
	if !ok {
		protocol.BadInput("unknown scenario %q; %s", name, usage)
	}
	handOff(binary)
}

// setThreads maps --threads N to GOMAXPROCS (the number of Ps running Go code);
// without the flag the runtime's default (the usable CPUs) is kept.
func setThreads(n int64) {
	if n > 0 {
		runtime.GOMAXPROCS(int(n))
	}
}

// threads reports the worker threads really used: GOMAXPROCS.
func threads() int64 { return int64(runtime.GOMAXPROCS(0)) }
