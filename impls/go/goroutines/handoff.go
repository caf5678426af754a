package main

import (
	"os"
	"path/filepath"
	"syscall"

	"corobench/impls/go/internal/protocol"
)

// handOff runs this command line in binary, the scenario's own binary built
// next to this one (build.sh), by exec: the same process (pid, process group,
// cgroup, CPU pinning), a different image, so the harness still sees one
// program. That binary checks the flags.
func handOff(binary string) {
	self, err := os.Executable()
	if err != nil {
		protocol.Fail("%s: locating %s: %v", os.Args[1], binary, err)
	}
	path := filepath.Join(filepath.Dir(self), binary)
	args := append([]string{path}, os.Args[1:]...)
	err = syscall.Exec(path, args, os.Environ())
	protocol.Fail("%s: exec %s: %v", os.Args[1], path, err)
}
