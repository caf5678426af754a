//go:build scenario_chain

package main

import (
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"corobench/impls/go/internal/protocol"
)

func init() {
	local["chain"] = func(args []string) {
		c := protocol.ParseChain(args)
		setThreads(c.Threads)
		runChain(c)
	}
}

// Event is a message that is one of several kinds: a sealed interface with one
// struct per kind. The receiver finds the kind with a type switch.
type Event interface{ isEvent() }

// IntEvent carries an integer; its weight is its value.
type IntEvent struct{ V int64 }

// StrEvent carries a string sharing the sender's characters (Go strings are
// immutable, so passing one copies only its header).
type StrEvent struct{ S string }

// StrPtrEvent carries a pointer to one string shared by every event.
type StrPtrEvent struct{ P *string }

// StrCloneEvent carries its own copy of the string's bytes.
type StrCloneEvent struct{ S string }

func (IntEvent) isEvent()      {}
func (StrEvent) isEvent()      {}
func (StrPtrEvent) isEvent()   {}
func (StrCloneEvent) isEvent() {}

type receiverResult struct{ sum, received int64 }

// receive takes exactly n events from ch and sums their weights.
func receive(ch <-chan Event, n int64, out *receiverResult, wg *sync.WaitGroup) {
	var sum, received int64
	for ; n > 0; n-- {
		ev := <-ch
		received++
		switch e := ev.(type) {
		case IntEvent:
			sum += e.V
		case StrEvent:
			sum += int64(len(e.S))
		case StrPtrEvent:
			sum += int64(len(*e.P))
		case StrCloneEvent:
			sum += int64(len(e.S))
		}
	}
	out.sum, out.received = sum, received
	wg.Done()
}

// sendInt constructs an IntEvent per send, as every event type does. Boxing it
// into the interface allocates nothing for values 0..255 (the runtime's static
// table of small integers) and 8 bytes for any other value (README: chain).
func sendInt(ch chan<- Event, n int64, v int64) {
	for ; n > 0; n-- {
		ch <- IntEvent{v}
	}
}

// sendStr wraps the shared string in a new StrEvent per event (one 16-byte box).
func sendStr(ch chan<- Event, n int64, s string) {
	for ; n > 0; n-- {
		ch <- StrEvent{s}
	}
}

// sendStrPtr sends a StrPtrEvent per event; a pointer-shaped struct is stored
// directly in the interface, so nothing is allocated.
func sendStrPtr(ch chan<- Event, n int64, p *string) {
	for ; n > 0; n-- {
		ch <- StrPtrEvent{p}
	}
}

// sendStrClone copies the string's bytes into a new buffer per event and wraps it.
func sendStrClone(ch chan<- Event, n int64, s string) {
	for ; n > 0; n-- {
		ch <- StrCloneEvent{strings.Clone(s)}
	}
}

// chainPass runs one full pass and returns (checksum, received, elapsed).
// The timed region starts before the first channel is created and ends when every
// receiver has finished.
func chainPass(c protocol.Chain, s string, results []receiverResult) (int64, int64, time.Duration) {
	var wg sync.WaitGroup
	w, e, q := c.Workers, c.Events, int(c.Queue)
	start := time.Now()
	wg.Add(int(w))
	for i := range results {
		ch := make(chan Event, q)
		go receive(ch, e, &results[i], &wg)
		switch c.EType {
		case 0:
			go sendInt(ch, e, c.ESize)
		case 1:
			go sendStr(ch, e, s)
		case 2:
			go sendStrPtr(ch, e, &s)
		case 3:
			go sendStrClone(ch, e, s)
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	var sum, received int64
	for i := range results {
		sum += results[i].sum
		received += results[i].received
	}
	return sum, received, elapsed
}

// makeString returns the shared string of n bytes, or exits with code 3 when the
// runtime cannot allocate it (an impossible length panics; it is recovered here).
func makeString(n int64) (s string) {
	defer func() {
		if r := recover(); r != nil {
			protocol.Refused("memory: cannot allocate a string of %d bytes: %v", n, r)
		}
	}()
	return strings.Repeat("x", int(n))
}

func runChain(c protocol.Chain) {
	expected, _ := c.Expected()
	var s string
	if c.EType != 0 {
		s = makeString(c.ESize)
	}
	results := make([]receiverResult, c.Workers)
	check := func(pass string, sum, received int64) {
		if sum != expected || received != c.Workers*c.Events {
			protocol.Fail("chain %s pass: checksum %d (expected %d), received %d (expected %d)",
				pass, sum, expected, received, c.Workers*c.Events)
		}
	}
	for k := int64(0); k < c.Warmup; k++ {
		sum, received, _ := chainPass(c, s, results)
		check("warm-up", sum, received)
	}

	var prof *os.File
	if c.CPUProfile != "" {
		var err error
		if prof, err = os.Create(c.CPUProfile); err != nil {
			protocol.BadInput("chain: --cpuprofile: %v", err)
		}
		if err = pprof.StartCPUProfile(prof); err != nil {
			protocol.Fail("chain: starting CPU profile: %v", err)
		}
	}
	sum, received, elapsed := chainPass(c, s, results)
	if prof != nil {
		pprof.StopCPUProfile()
		if err := prof.Close(); err != nil {
			protocol.Fail("chain: writing CPU profile: %v", err)
		}
	}
	check("measured", sum, received)

	protocol.NewResult("chain").
		Int("workers", c.Workers).
		Int("events", c.Events).
		Int("queue", c.Queue).
		Str("etype", protocol.ETypes[c.EType]).
		Int("esize", c.ESize).
		Int("threads", threads()).
		Int("warmup", c.Warmup).
		Int("received", received).
		Int("checksum", sum).
		Int("elapsed_ns", elapsed.Nanoseconds()).
		Print()
}
