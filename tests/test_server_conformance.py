"""Every server implementation (echo, http) at tiny sizes: through the harness's server kind with
corobench-load verifying every reply, and through the reference probe for the protocol's details
(ready line, 404, 400, Connection: close, requests split over reads, SIGTERM stop and counts).
Bad input to every server: exit 2, one line on stderr, nothing on stdout. Loopback only.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

import serverprobe
from corobench.discover import Program, programs_for
from corobench.options import Options
from corobench.runkinds import RunRequest, kind_of
from corobench.scenarios import get_scenario
from impls import MANIFESTS, require, require_tool

SERVER_SCENARIOS = ("echo", "http")
TINY = {
    "echo": [{"connections": 30, "concurrency": 5, "per_connection": 3, "size": 17, "uuids": 5},
             {"connections": 6, "concurrency": 3, "per_connection": 2, "size": 3000, "uuids": 0}],
    "http": [{"connections": 3, "requests": 120, "duration": 0, "warmup_s": 0}],
}


def cases():
    for scenario in SERVER_SCENARIOS:
        for program in programs_for(MANIFESTS, scenario):
            for i, params in enumerate(TINY[scenario]):
                yield pytest.param(program, scenario, params, id=f"{program.name}-{scenario}-{i}")


@pytest.mark.conformance
@pytest.mark.parametrize("program,scenario,raw", list(cases()))
def test_serves_through_the_harness(program: Program, scenario: str, raw: dict):
    require(program.manifest.id)
    require_tool("corobench-load")
    s = get_scenario(scenario)
    params = s.normalise(raw)
    options = Options(use_cgroup=False)
    kind = kind_of(s)
    kind.configure(options, {})
    req = RunRequest(program=program, scenario=s, params=params, threads=None, warmup=None, rep=1,
                     timeout_s=120 * program.manifest.timeout_factor, options=options,
                     run_name=f"conformance-{os.getpid()}")
    row = kind.run(req)
    assert row.status == "ok", f"{' '.join(row.argv)}: {row.reason}\nstderr: {(row.stderr_tail or '')[-800:]}"
    assert row.metrics["rps"] > 0 and row.metrics["vm_hwm_bytes"] > 0
    assert row.result["final"]["requests"] == row.result["client"]["ok"]


def probe_cases():
    for scenario in SERVER_SCENARIOS:
        for program in programs_for(MANIFESTS, scenario):
            threads = [None] if program.manifest.threads.mode == "none" else [1, 2]
            for t in threads:
                yield pytest.param(program, scenario, t, id=f"{program.name}-{scenario}-threads{t}")


@pytest.mark.conformance
@pytest.mark.parametrize("program,scenario,threads", list(probe_cases()))
def test_protocol_details(program: Program, scenario: str, threads: int | None):
    m = require(program.manifest.id)
    extra = ["--size", "17", "--uuids", "5"] if scenario == "echo" else []
    if threads is not None:
        extra += ["--threads", str(threads)]
    if program.variant:
        extra += ["--variant", program.variant]
    with tempfile.TemporaryDirectory() as tmp:
        server = serverprobe.start(m.resolve(m.run), scenario, extra, str(m.folder), {**os.environ, **m.env},
                                   Path(tmp) / "stderr")
        try:
            if program.variant:
                assert server.ready.get("variant") == program.variant
            if threads is not None:
                assert server.ready["threads"] == threads
            if scenario == "echo":
                serverprobe.probe_echo(server, 17, 5, connections=12, per_connection=3, concurrency=4)
            else:
                serverprobe.probe_http(server, requests=30, connections=3)
        except serverprobe.ProbeError as exc:
            pytest.fail(f"{program.name} {scenario}: {exc}\nstderr: {server.stderr_tail()[-800:]}")
        finally:
            if server.proc.poll() is None:
                serverprobe.stop_hard(server.proc)


BAD = {
    "non-loopback": ["--host", "10.1.2.3"],
    "hostname": ["--host", "localhost"],
    "port-range": ["--port", "70000"],
    "port-text": ["--port", "eighty"],
    "threads-zero": ["--threads", "0"],
    "unknown-flag": ["--colour", "blue"],
    "repeated": ["--port", "0", "--port", "0"],
    "no-value": ["--port"],
    "unknown-variant": ["--variant", "no-such-variant"],
}
BAD_ECHO = {"size-zero": ["--size", "0"], "size-huge": ["--size", "2000000"], "uuids-negative": ["--uuids", "-1"]}


def bad_cases():
    for m in MANIFESTS:
        for scenario in SERVER_SCENARIOS:
            if scenario not in m.scenarios:
                continue
            table = {**BAD, **(BAD_ECHO if scenario == "echo" else {})}
            if m.threads.mode == "none":
                table["threads-unsupported"] = ["--threads", "2"]
                del table["threads-zero"]
            for name, args in table.items():
                yield pytest.param(m, scenario, args, id=f"{m.id}-{scenario}-{name}")


@pytest.mark.conformance
@pytest.mark.parametrize("manifest,scenario,args", list(bad_cases()))
def test_server_bad_input(manifest, scenario, args):
    require(manifest.id)
    argv = manifest.resolve(manifest.run) + [scenario, *args]
    try:
        proc = subprocess.run(argv, cwd=manifest.folder, capture_output=True, text=True, timeout=60,
                              env={**os.environ, **manifest.env}, start_new_session=True)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{' '.join(argv)}: did not exit (it should refuse its input)")
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, f"exit {proc.returncode}, stdout {proc.stdout[:200]!r}, stderr {proc.stderr[:300]!r}"
    assert proc.stdout == "", proc.stdout[:200]
    assert len(lines) == 1, proc.stderr[:500]
