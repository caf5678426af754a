//go:build !scenario_chain && !scenario_echo && !scenario_http

package main

import (
	"fmt"
	"math"
	"runtime"
	"runtime/debug"

	"corobench/impls/go/internal/protocol"
)

func init() {
	local["info"] = func(args []string) {
		if len(args) > 0 {
			protocol.BadInput("info takes no flags")
		}
		printInfo()
	}
}

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
