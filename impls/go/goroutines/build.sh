#!/bin/sh
# One static binary per scenario group, from this one package (see main.go):
# corobench-go (tasks, blocking, info), corobench-go-chain, corobench-go-echo and
# corobench-go-http. corobench-go hands the other scenarios to their binary by
# exec. CGO_ENABLED=0: importing net would otherwise link libc dynamically for
# the cgo DNS resolver, which servers bound to 127.0.0.1 never use, and ld.so
# plus libc cost every run 1.5 MiB of peak RSS.
set -eu
export CGO_ENABLED=0
go build -trimpath -o ../bin/corobench-go .
go build -trimpath -tags scenario_chain -o ../bin/corobench-go-chain .
go build -trimpath -tags scenario_echo -o ../bin/corobench-go-echo .
go build -trimpath -tags scenario_http -o ../bin/corobench-go-http .
