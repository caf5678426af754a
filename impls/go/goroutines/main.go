// Command corobench-go implements the corobench scenarios (docs/protocol.md) with
// goroutines and buffered channels.
package main

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"

	"corobench/impls/go/internal/protocol"
)

const usage = "usage: corobench-go chain|tasks|blocking|echo|http [flags] | info (see docs/protocol.md)"

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
	case "echo":
		s := protocol.ParseServer("echo", args, []string{"concurrent", "serial"})
		setThreads(s.Threads)
		runEcho(s)
	case "http":
		s := protocol.ParseServer("http", args, nil)
		setThreads(s.Threads)
		runHTTP(s)
	case "info":
		if len(args) > 0 {
			protocol.BadInput("info takes no flags")
		}
		printInfo()
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

// maxThreads returns the runtime's limit on OS threads (debug.SetMaxThreads;
// 10000 unless changed), leaving it as it was.
func maxThreads() int64 {
	n := debug.SetMaxThreads(10000)
	debug.SetMaxThreads(n)
	return int64(n)
}

// printInfo prints the runtime settings that shape the figures, as a run would
// see them (the manifest's `info` command).
func printInfo() {
	gogc := debug.SetGCPercent(100)
	debug.SetGCPercent(gogc)
	limit := "off"
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		limit = fmt.Sprint(l)
	}
	fmt.Printf("%s GOMAXPROCS=%d NumCPU=%d GOGC=%d GOMEMLIMIT=%s maxthreads=%d\n",
		runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU(), gogc, limit, maxThreads())
}
