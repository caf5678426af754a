//go:build scenario_echo || scenario_http

package main

import (
	"context"
	"errors"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"corobench/impls/go/internal/protocol"
)

// stopWait is how long a stopping server waits for open connections to end
// before it closes them (docs/protocol.md, "Stop").
const stopWait = 2 * time.Second

// listen binds and listens on the scenario's address, or exits 3 saying why.
func listen(s protocol.Server) net.Listener {
	addr := net.JoinHostPort(s.Addr.String(), strconv.FormatInt(s.Port, 10))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		protocol.Refused("%s: cannot listen on %s: %v", s.Scenario, addr, err)
	}
	return ln
}

// printReady prints the ready line once the listener is bound.
func printReady(s protocol.Server, ln net.Listener) {
	r := protocol.NewResult(s.Scenario).
		Bool("ready", true).
		Str("host", s.Host).
		Int("port", int64(ln.Addr().(*net.TCPAddr).Port))
	if s.Scenario == "echo" {
		r.Int("size", s.Size).Int("uuids", s.UUIDs).Int("per_connection", s.PerConnection)
	}
	r.Int("threads", threads())
	if s.Variant != "" {
		r.Str("variant", s.Variant)
	}
	r.Print()
}

// stopContext is cancelled by the first SIGTERM or SIGINT.
func stopContext() context.Context {
	ctx, _ := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	return ctx
}

// refusedAccept reports whether an Accept error means the machine refused a
// resource (exit 3) rather than a bug.
func refusedAccept(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}
