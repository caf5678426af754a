#!/bin/sh
# Two static binaries from this package. CGO_ENABLED=0: importing net would
# otherwise link libc dynamically for the cgo DNS resolver, which servers bound to
# 127.0.0.1 never use, and ld.so plus libc cost every run 1.5 MiB of peak RSS.
# corobench-go runs every scenario but http, which it hands to corobench-go-http
# (-tags httpd, with net/http) by exec; see http_handoff.go.
set -eu
export CGO_ENABLED=0
go build -trimpath -o ../bin/corobench-go .
go build -trimpath -tags httpd -o ../bin/corobench-go-http .
