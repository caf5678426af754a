//go:build !httpd

package main

import (
	"os"
	"path/filepath"
	"syscall"

	"corobench/impls/go/internal/protocol"
)

// httpBinary is the http server's binary, built from this package with -tags httpd
// next to this one (build.sh).
const httpBinary = "corobench-go-http"

// runHTTP hands the http scenario to corobench-go-http by exec: the same process
// (pid, process group, cgroup, CPU pinning), a different image. net/http would
// double this binary's size, and the Go runtime touches its binary's pages in
// proportion to its size at start, so every batch scenario would pay for it:
// peak RSS at `tasks -n 1` 4.8 MiB with net/http linked in, 2.8–2.9 MiB without
// (impls/go/README.md). The flags were checked here already and are passed on
// unchanged.
func runHTTP(protocol.Server) {
	self, err := os.Executable()
	if err != nil {
		protocol.Fail("http: locating %s: %v", httpBinary, err)
	}
	path := filepath.Join(filepath.Dir(self), httpBinary)
	args := append([]string{path}, os.Args[1:]...)
	err = syscall.Exec(path, args, os.Environ())
	protocol.Fail("http: exec %s: %v", path, err)
}
