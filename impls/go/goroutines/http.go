//go:build scenario_http

// The http server, built into corobench-go-http only (see main.go).

package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"corobench/impls/go/internal/protocol"
)

func init() {
	local["http"] = func(args []string) {
		s := protocol.ParseServer("http", args, nil)
		setThreads(s.Threads)
		runHTTP(s)
	}
}

// httpConnCounts are one connection's counts. net/http serves the requests of an
// HTTP/1.1 connection one after another on the connection's goroutine, so the
// handler updates them without synchronisation.
type httpConnCounts struct{ requests, notFound int64 }

type connCountsKey struct{}

// httpServer adds each connection's counts to the totals when net/http reports
// the connection closed (ConnState). The mutex is taken twice per connection.
type httpServer struct {
	mu                              sync.Mutex
	open                            map[net.Conn]*httpConnCounts
	connections, requests, notFound int64
	closed                          sync.WaitGroup // one per connection until its counts are added
}

// connContext runs on the accepting goroutine for every new connection: it
// creates the connection's counters and puts them in the connection's context,
// from which every request's context derives.
func (h *httpServer) connContext(ctx context.Context, c net.Conn) context.Context {
	n := &httpConnCounts{}
	h.closed.Add(1)
	h.mu.Lock()
	h.open[c] = n
	h.connections++
	h.mu.Unlock()
	return context.WithValue(ctx, connCountsKey{}, n)
}

// connState adds a closed connection's counts to the totals.
func (h *httpServer) connState(c net.Conn, state http.ConnState) {
	if state != http.StateClosed && state != http.StateHijacked {
		return
	}
	h.mu.Lock()
	n, ok := h.open[c]
	if ok {
		delete(h.open, c)
		h.requests += n.requests
		h.notFound += n.notFound
	}
	h.mu.Unlock()
	if ok {
		h.closed.Done()
	}
}

// textPlain is shared by every response: assigning it to the header map avoids
// the one-element slice Header.Set would allocate per request; net/http only
// reads it.
var textPlain = []string{"text/plain"}

// ping answers GET /ping/{token} with the token as a text/plain body; net/http
// adds Content-Length (the body is small and written before the handler returns)
// and Date.
func (h *httpServer) ping(w http.ResponseWriter, r *http.Request) {
	n := r.Context().Value(connCountsKey{}).(*httpConnCounts)
	token := r.PathValue("token")
	if r.Method != http.MethodGet || !validToken(token) {
		n.notFound++
		http.NotFound(w, r)
		return
	}
	w.Header()["Content-Type"] = textPlain
	io.WriteString(w, token)
	n.requests++
}

// notFound answers every other path with 404 and counts it.
func (h *httpServer) notFoundHandler(w http.ResponseWriter, r *http.Request) {
	r.Context().Value(connCountsKey{}).(*httpConnCounts).notFound++
	http.NotFound(w, r)
}

// validToken: 1 to 64 characters of [A-Za-z0-9_-] (docs/protocol.md, http).
func validToken(t string) bool {
	if len(t) == 0 || len(t) > 64 {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func runHTTP(p protocol.Server) {
	h := &httpServer{open: make(map[net.Conn]*httpConnCounts)}
	mux := http.NewServeMux()
	mux.HandleFunc("/ping/{token}", h.ping) // Go 1.22 pattern: one path segment
	mux.HandleFunc("/", h.notFoundHandler)
	srv := &http.Server{
		Handler:     mux,
		ConnContext: h.connContext,
		ConnState:   h.connState,
	}
	stop := stopContext()
	ln := listen(p)
	printReady(p, ln)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(refusingListener{ln, h}) }()

	select {
	case err := <-served: // Serve returns early only on an accept error it deems permanent
		protocol.Fail("http: accepted %d connections, then serve failed: %v", h.accepted(), err)
	case <-stop.Done():
	}
	// Shutdown closes the listener and the idle connections, then waits for the
	// active ones to finish their request; after 2 s Close closes the rest.
	ctx, cancel := context.WithTimeout(context.Background(), stopWait)
	var openAtStop int64
	if err := srv.Shutdown(ctx); err != nil {
		h.mu.Lock()
		openAtStop = int64(len(h.open))
		h.mu.Unlock()
		srv.Close()
	}
	cancel()
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		protocol.Fail("http: serve: %v", err)
	}
	// net/http forgets a closed connection just before it calls the ConnState
	// hook, so Shutdown can return before the last counts were added.
	waitTimeout(&h.closed, time.Second)

	h.mu.Lock()
	defer h.mu.Unlock()
	protocol.NewResult("http").
		Int("threads", threads()).
		Int("requests", h.requests).
		Int("connections", h.connections).
		Int("not_found", h.notFound).
		Int("open_at_stop", openAtStop).
		Print()
}

// refusingListener exits 3 when accepting runs out of file descriptors or memory:
// net/http would log the error and retry every few milliseconds, while the
// protocol asks for exit 3 saying how far the server got.
type refusingListener struct {
	net.Listener
	h *httpServer
}

func (l refusingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil && refusedAccept(err) {
		protocol.Refused("http: accepted %d connections, then accept failed: %v", l.h.accepted(), err)
	}
	return c, err
}

func (h *httpServer) accepted() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.connections
}

// waitTimeout waits for wg, at most d.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
	}
}
