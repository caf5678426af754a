#!/bin/sh
# Compiles the shared helper and this runtime into ../_build/processes (git-ignored).
set -e
cd "$(dirname "$0")"
out=../_build/processes
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
elixirc --warnings-as-errors -o "$out.tmp" ../common/corobench_cli.ex processes.ex servers.ex
rm -rf "$out"
mv "$out.tmp" "$out"
