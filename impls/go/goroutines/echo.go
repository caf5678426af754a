//go:build scenario_echo

package main

import (
	"encoding/hex"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/google/uuid"

	"corobench/impls/go/internal/protocol"
)

func init() {
	local["echo"] = func(args []string) {
		s := protocol.ParseServer("echo", args, []string{"concurrent", "serial"})
		setThreads(s.Threads)
		runEcho(s)
	}
}

// echoCounts are one connection's counts, or (in echoServer.total) the sum of
// the connections that ended.
type echoCounts struct {
	connections, requests, uuids, bytesIn, bytesOut, partial int64
}

func (t *echoCounts) add(c *echoCounts) {
	t.connections += c.connections
	t.requests += c.requests
	t.uuids += c.uuids
	t.bytesIn += c.bytesIn
	t.bytesOut += c.bytesOut
	t.partial += c.partial
}

// echoServer keeps the open connections (to close them at stop) and the totals.
// The mutex is taken twice per connection (start and end), never per request.
type echoServer struct {
	size, uuids int
	perConn     int64 // replies after which the server closes a connection; 0: until the client does
	mu          sync.Mutex
	open        map[net.Conn]struct{}
	closing     bool // set when the stop wait ended: connections accepted later are closed at once
	total       echoCounts
	conns       sync.WaitGroup // one per accepted connection until its counts are added
}

// register records a new connection; false when the server already closed the
// others at stop (the caller then closes it too).
func (s *echoServer) register(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total.connections++
	if s.closing {
		return false
	}
	s.open[c] = struct{}{}
	return true
}

// serve answers requests on c until the client closes it, or until it wrote
// perConn replies, then adds the connection's counts to the totals. Go sets
// TCP_NODELAY on every TCP connection by default, so it is not set again here.
func (s *echoServer) serve(c net.Conn) {
	defer s.conns.Done()
	var n echoCounts
	// One buffer per connection: the request is read into its head and the
	// UUIDs are written after it, so the reply goes out in one Write.
	buf := make([]byte, s.size+37*s.uuids)
	req := buf[:s.size]
	for {
		got, err := io.ReadFull(c, req) // loops over short reads
		if err != nil {
			if got > 0 { // EOF (or an error) inside a request
				n.partial++
			}
			break
		}
		n.bytesIn += int64(s.size)
		for i := 0; i < s.uuids; i++ {
			line := buf[s.size+37*i : s.size+37*(i+1)]
			line[0] = '\n'
			encodeUUID(line[1:], uuid.New())
		}
		if _, err := c.Write(buf); err != nil { // (*TCPConn).Write writes all or fails
			break
		}
		n.requests++
		n.uuids += int64(s.uuids)
		n.bytesOut += int64(len(buf))
		if n.requests == s.perConn {
			break
		}
	}
	c.Close()
	s.mu.Lock()
	delete(s.open, c)
	s.total.add(&n)
	s.mu.Unlock()
}

// encodeUUID writes u's 36-character lowercase hyphenated text into dst, the same
// text as u.String() (google/uuid's encodeHex) without allocating a string per UUID.
func encodeUUID(dst []byte, u uuid.UUID) {
	hex.Encode(dst[0:8], u[0:4])
	dst[8] = '-'
	hex.Encode(dst[9:13], u[4:6])
	dst[13] = '-'
	hex.Encode(dst[14:18], u[6:8])
	dst[18] = '-'
	hex.Encode(dst[19:23], u[8:10])
	dst[23] = '-'
	hex.Encode(dst[24:36], u[10:16])
}

// acceptLoop accepts until the listener is closed. serial: each connection is
// served on this goroutine before the next accept; otherwise a goroutine per
// connection.
func (s *echoServer) acceptLoop(ln net.Listener, serial bool) {
	var accepted int64
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if refusedAccept(err) {
				protocol.Refused("echo: accepted %d connections, then accept failed: %v", accepted, err)
			}
			protocol.Fail("echo: accepted %d connections, then accept failed: %v", accepted, err)
		}
		accepted++
		s.conns.Add(1)
		if !s.register(c) {
			c.Close()
			s.conns.Done()
			continue
		}
		if serial {
			s.serve(c)
		} else {
			go s.serve(c)
		}
	}
}

func runEcho(p protocol.Server) {
	serial := p.VariantOr("concurrent") == "serial"
	s := &echoServer{size: int(p.Size), uuids: int(p.UUIDs), perConn: p.PerConnection, open: make(map[net.Conn]struct{})}
	stop := stopContext()
	ln := listen(p)
	printReady(p, ln)

	acceptDone := make(chan struct{})
	go func() {
		s.acceptLoop(ln, serial)
		close(acceptDone)
	}()

	<-stop.Done()
	ln.Close()
	done := make(chan struct{})
	go func() {
		<-acceptDone // serial: the connection being served has ended
		s.conns.Wait()
		close(done)
	}()
	var openAtStop int64
	select {
	case <-done:
	case <-time.After(stopWait):
		s.mu.Lock()
		s.closing = true
		openAtStop = int64(len(s.open))
		for c := range s.open {
			c.Close() // its goroutine's Read/Write fails at once and it adds its counts
		}
		s.mu.Unlock()
		<-done
	}

	t := s.total
	r := protocol.NewResult("echo").
		Int("size", p.Size).
		Int("uuids", p.UUIDs).
		Int("per_connection", p.PerConnection).
		Int("threads", threads())
	if p.Variant != "" {
		r.Str("variant", p.Variant)
	}
	r.Int("connections", t.connections).
		Int("requests", t.requests).
		Int("uuids_generated", t.uuids).
		Int("bytes_in", t.bytesIn).
		Int("bytes_out", t.bytesOut).
		Int("partial", t.partial).
		Int("open_at_stop", openAtStop).
		Print()
}
