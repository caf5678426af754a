"""Bad input to every implementation: exit 2, one line on stderr, nothing on stdout."""

from __future__ import annotations

import os
import subprocess

import pytest

from impls import MANIFESTS, require

OK_CHAIN = ["-w", "2", "-e", "3", "-q", "2", "-s", "4"]
CASES = {
    "no-scenario": [],
    "unknown-scenario": ["pingpong"],
    "unknown-etype-number": ["chain", *OK_CHAIN, "-t", "4"],
    "unknown-etype-name": ["chain", *OK_CHAIN, "-t", "float"],
    "zero-workers": ["chain", "-w", "0", "-e", "3"],
    "negative-events": ["chain", "-w", "2", "-e", "-3"],
    "non-numeric-queue": ["chain", "-w", "2", "-e", "3", "-q", "lots"],
    "zero-esize": ["chain", "-w", "2", "-e", "3", "-s", "0"],
    "checksum-overflow": ["chain", "-w", "3000000000", "-e", "3000000000", "-s", "3", "-q", "1"],
    "unknown-flag": ["chain", *OK_CHAIN, "--colour", "blue"],
    "flag-without-value": ["chain", "-w", "2", "-e"],
    "repeated-flag": ["chain", "-w", "2", "-w", "3", "-e", "3"],
    "zero-threads": ["chain", *OK_CHAIN, "--threads", "0"],
    "tasks-zero": ["tasks", "-n", "0", "-d", "1"],
    "tasks-negative-sleep": ["tasks", "-n", "2", "-d", "-1"],
    "blocking-zero-iterations": ["blocking", "-n", "2", "-i", "0", "-b", "1"],
    "blocking-unknown-variant": ["blocking", "-n", "2", "-i", "1", "-b", "1", "--variant", "no-such-variant"],
}


def cases():
    for m in MANIFESTS:
        for name, args in CASES.items():
            if args and args[0] in ("chain", "tasks", "blocking") and args[0] not in m.scenarios:
                continue
            yield pytest.param(m, args, id=f"{m.id}-{name}")
        if "chain" in m.scenarios and m.language not in ("go", "rust"):
            yield pytest.param(m, ["chain", *OK_CHAIN, "--cpuprofile", "/tmp/corobench-x.prof"],
                               id=f"{m.id}-cpuprofile-unsupported")
        if m.threads.mode == "none" and "chain" in m.scenarios:
            yield pytest.param(m, ["chain", *OK_CHAIN, "--threads", "2"], id=f"{m.id}-threads-unsupported")


@pytest.mark.conformance
@pytest.mark.parametrize("manifest,args", list(cases()))
def test_bad_input(manifest, args):
    require(manifest.id)
    argv = manifest.resolve(manifest.run) + args
    proc = subprocess.run(argv, cwd=manifest.folder, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **manifest.env})
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, f"exit {proc.returncode}, stdout {proc.stdout[:200]!r}, stderr {proc.stderr[:300]!r}"
    assert proc.stdout == "", proc.stdout[:200]
    assert len(lines) == 1, proc.stderr[:500]
