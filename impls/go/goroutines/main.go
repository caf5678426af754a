// Command corobench-go implements the corobench scenarios (docs/protocol.md) with
// goroutines and buffered channels.
package main

import (
	"os"
	"runtime"

	"corobench/impls/go/internal/protocol"
)

const usage = "usage: corobench-go chain|tasks|blocking [flags] (see docs/protocol.md)"

func main() {
	if len(os.Args) < 2 {
		protocol.BadInput("missing scenario; %s", usage)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "chain":
		c := protocol.ParseChain(args)
		setThreads(c.Threads)
		runChain(c)
	case "tasks":
		t := protocol.ParseTasks(args)
		setThreads(t.Threads)
		runTasks(t)
	case "blocking":
		b := protocol.ParseBlocking(args)
		if b.Variant != "" {
			protocol.BadInput("blocking: unknown variant %q (go declares no variants)", b.Variant)
		}
		setThreads(b.Threads)
		runBlocking(b)
	default:
		protocol.BadInput("unknown scenario %q; %s", os.Args[1], usage)
	}
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
