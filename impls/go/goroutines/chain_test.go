//go:build scenario_chain

package main

import (
	"strings"
	"sync"
	"testing"

	"corobench/impls/go/internal/protocol"
)

func TestChainPass(t *testing.T) {
	for etype := range protocol.ETypes {
		c := protocol.Chain{Workers: 3, Events: 5, Queue: 2, EType: etype, ESize: 7}
		results := make([]receiverResult, c.Workers)
		sum, received, _ := chainPass(c, strings.Repeat("x", 7), results)
		if sum != 105 || received != 15 {
			t.Errorf("etype %s: checksum %d received %d, want 105 and 15", protocol.ETypes[etype], sum, received)
		}
	}
}

// The benchmarks below compare ways of putting an event into a chan Event, one
// sender and one receiver over a buffer of 256 (go test -bench . -benchmem).
func benchChan(b *testing.B, send func(ch chan<- Event, n int64)) {
	ch := make(chan Event, 256)
	var wg sync.WaitGroup
	var res receiverResult
	wg.Add(1)
	b.ReportAllocs()
	b.ResetTimer()
	go receive(ch, int64(b.N), &res, &wg)
	send(ch, int64(b.N))
	wg.Wait()
}

var small, large int64 = 10, 1000 // variables: the compiler cannot constant-fold the boxing

// sendInt at the default -s 10: boxing uses the runtime's static table of small
// integers (0..255), nothing is allocated.
func BenchmarkIntValue10(b *testing.B) {
	benchChan(b, func(ch chan<- Event, n int64) { sendInt(ch, n, small) })
}

// sendInt at -s 1000: 8 bytes allocated per send.
func BenchmarkIntValue1000(b *testing.B) {
	benchChan(b, func(ch chan<- Event, n int64) { sendInt(ch, n, large) })
}

// For comparison only: one event boxed once and sent again and again (what
// sendInt did before the rule "an event is constructed per send").
func BenchmarkIntHoisted(b *testing.B) {
	benchChan(b, func(ch chan<- Event, n int64) {
		ev := Event(IntEvent{large})
		for ; n > 0; n-- {
			ch <- ev
		}
	})
}

// A pointer event per send (&IntEvent{}): always allocates.
type intPtrEvent struct{ V int64 }

func (*intPtrEvent) isEvent() {}

func BenchmarkIntPerSendPointer(b *testing.B) {
	benchChan(b, func(ch chan<- Event, n int64) {
		for ; n > 0; n-- {
			ch <- &intPtrEvent{large}
		}
	})
}

func BenchmarkStr(b *testing.B) {
	s := strings.Repeat("x", 10)
	benchChan(b, func(ch chan<- Event, n int64) { sendStr(ch, n, s) })
}

func BenchmarkStrPtr(b *testing.B) {
	s := strings.Repeat("x", 10)
	benchChan(b, func(ch chan<- Event, n int64) { sendStrPtr(ch, n, &s) })
}

func BenchmarkStrClone(b *testing.B) {
	s := strings.Repeat("x", 10)
	benchChan(b, func(ch chan<- Event, n int64) { sendStrClone(ch, n, s) })
}
