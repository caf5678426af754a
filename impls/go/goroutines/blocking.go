//go:build !scenario_chain && !scenario_echo && !scenario_http

package main

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"corobench/impls/go/internal/protocol"
)

func init() {
	local["blocking"] = func(args []string) {
		b := protocol.ParseBlocking(args)
		if b.Variant != "" {
			protocol.BadInput("blocking: unknown variant %q (go declares no variants)", b.Variant)
		}
		setThreads(b.Threads)
		runBlocking(b)
	}
}

// blockingState is shared by the tasks of one run.
type blockingState struct {
	written  atomic.Int64          // bytes written to /dev/null
	failed   atomic.Int64          // tasks that failed in the current iteration
	firstErr atomic.Pointer[error] // first failure of the current iteration
}

// blockingTask does the scenario's plain blocking file I/O from a goroutine:
// Go parks the goroutine in the netpoller or hands its P to another thread
// while the system call blocks.
func blockingTask(buf []byte, st *blockingState, wg *sync.WaitGroup) {
	defer wg.Done()
	in, err := os.Open("/dev/urandom")
	if err != nil {
		st.fail(err)
		return
	}
	_, err = io.ReadFull(in, buf)
	in.Close()
	if err != nil {
		st.fail(err)
		return
	}
	out, err := os.OpenFile("/dev/null", os.O_WRONLY, 0)
	if err != nil {
		st.fail(err)
		return
	}
	n, err := out.Write(buf) // (*os.File).Write writes all of buf or fails
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		st.fail(err)
		return
	}
	st.written.Add(int64(n))
}

func (st *blockingState) fail(err error) {
	st.failed.Add(1)
	st.firstErr.CompareAndSwap(nil, &err)
}

// iteration spawns T tasks and waits for all of them.
func (st *blockingState) iteration(bufs []byte, t, b int64, index int64) {
	var wg sync.WaitGroup
	wg.Add(int(t))
	for i := int64(0); i < t; i++ {
		go blockingTask(bufs[i*b:(i+1)*b:(i+1)*b], st, &wg)
	}
	wg.Wait()
	if failed := st.failed.Load(); failed > 0 {
		err := *st.firstErr.Load()
		if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
			errors.Is(err, syscall.ENOMEM) || errors.Is(err, syscall.EAGAIN) {
			protocol.Refused("blocking iteration %d: %d of %d tasks failed: %v", index, failed, t, err)
		}
		protocol.Fail("blocking iteration %d: %d of %d tasks failed: %v", index, failed, t, err)
	}
}

func runBlocking(b protocol.Blocking) {
	expected, _ := b.Expected()
	poolThreads := maxThreads()
	// One buffer per task slot, reused by every iteration.
	bufs := make([]byte, b.Tasks*b.Bytes)
	var st blockingState

	st.iteration(bufs, b.Tasks, b.Bytes, 0) // unmeasured warm-up iteration
	st.written.Store(0)

	start := time.Now()
	for it := int64(1); it <= b.Iterations; it++ {
		st.iteration(bufs, b.Tasks, b.Bytes, it)
	}
	elapsed := time.Since(start)

	written := st.written.Load()
	if written != expected {
		protocol.Fail("blocking: wrote %d bytes, expected %d", written, expected)
	}
	protocol.NewResult("blocking").
		Int("tasks", b.Tasks).
		Int("iterations", b.Iterations).
		Int("bytes", b.Bytes).
		Int("threads", threads()).
		Int("pool_threads", poolThreads).
		Int("checksum", written).
		Int("elapsed_ns", elapsed.Nanoseconds()).
		Print()
}
