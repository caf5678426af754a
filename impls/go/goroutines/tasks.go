//go:build !scenario_chain && !scenario_echo && !scenario_http

package main

import (
	"sync"
	"sync/atomic"
	"time"

	"corobench/impls/go/internal/protocol"
)

func init() {
	local["tasks"] = func(args []string) {
		t := protocol.ParseTasks(args)
		setThreads(t.Threads)
		runTasks(t)
	}
}

// runTasks starts N goroutines that each time.Sleep(D) and then add 1 to a shared
// atomic counter; a WaitGroup tells when all have finished.
func runTasks(t protocol.Tasks) {
	var counter atomic.Int64
	var wg sync.WaitGroup
	d := time.Duration(t.SleepMs) * time.Millisecond
	n := t.Tasks
	// One func value shared by every goroutine: `go task()` then allocates only
	// the goroutine itself, not a closure per spawn.
	task := func() {
		time.Sleep(d)
		counter.Add(1)
		wg.Done()
	}
	wg.Add(int(n))
	start := time.Now()
	for i := int64(0); i < n; i++ {
		go task()
	}
	spawn := time.Since(start)
	wg.Wait()
	elapsed := time.Since(start)

	if got := counter.Load(); got != n {
		protocol.Fail("tasks: counter %d, expected %d", got, n)
	}
	protocol.NewResult("tasks").
		Int("tasks", n).
		Int("sleep_ms", t.SleepMs).
		Int("threads", threads()).
		Int("checksum", counter.Load()).
		Int("spawn_ns", spawn.Nanoseconds()).
		Int("elapsed_ns", elapsed.Nanoseconds()).
		Print()
}
