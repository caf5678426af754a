"""The server run kind against fake servers that crash, hang, print garbage or lie (loopback only).

Each run is bounded: tiny loads, --timeout 30, a ready timeout of 5 s where a server never gets
ready. The real load generator (corobench-load) verifies the replies, as in every real run.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time

import pytest

from conftest import ROOT, corobench
from impls import require_tool

SERVERS = ROOT / "tests" / "fixtures" / "fake-servers"
ECHO = ["run", "echo", "--connections", "40", "--concurrency", "4", "--per-connection", "2", "--reps", "2",
        "--timeout", "30", "--no-build"]
HTTP = ["run", "http", "--connections", "3", "--duration", "1", "--warmup-s", "1", "--reps", "1",
        "--timeout", "30", "--no-build"]


@pytest.fixture(autouse=True)
def loadgen():
    require_tool("corobench-load")


def runs(results) -> list[dict]:
    db = sqlite3.connect(results / "corobench.sqlite")
    db.row_factory = sqlite3.Row
    return [dict(r) for r in db.execute("SELECT * FROM runs ORDER BY id")]


def fake_servers_alive() -> list[int]:
    """Processes of fake_server.py still running (none may outlive its run)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read()
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if b"fake_server.py" in cmdline and state not in ("Z", "X"):
            found.append(int(pid))
    return found


def no_server_left(within_s: float = 10) -> bool:
    deadline = time.monotonic() + within_s
    while fake_servers_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    return not fake_servers_alive()


def test_a_good_echo_server_is_verified_and_measured(results):
    proc = corobench(*ECHO, "--impl", "fake-server-good", "--format", "json", results=results, impls=SERVERS)
    assert proc.returncode == 0, proc.stderr
    rows = runs(results)
    assert [(r["rep"], r["status"]) for r in rows] == [(0, "ok"), (1, "ok"), (2, "ok")]
    measured = rows[1]
    result, metrics = json.loads(measured["result"]), json.loads(measured["metrics"])
    assert result["ready"]["ready"] is True and result["final"]["requests"] == 80 == result["client"]["ok"]
    assert result["final"]["bytes_out"] == 80 * (17 + 37 * 5)
    for key in ("rps", "lat_p50_us", "lat_p99_us", "server_cores", "cpu_us_per_request", "vm_hwm_bytes",
                "vm_peak_bytes", "ready_rss_bytes", "threads_peak", "rss_series"):
        assert key in metrics, key
    assert metrics["vm_peak_bytes"] >= metrics["vm_hwm_bytes"] > 1 << 20
    assert measured["elapsed_ns"] > 0 and measured["max_rss_kb"] > 0
    argv = json.loads(measured["argv"])
    start = argv.index("echo")  # the harness asks for loopback and any free port, and passes the pinned CPU count
    assert argv[start:] == ["echo", "--host", "127.0.0.1", "--port", "0", "--per-connection", "2", "--size", "17",
                            "--uuids", "5", "--threads", "1"]
    cell = json.loads(proc.stdout)["results"][0]
    assert cell["status"] == "ok" and cell["metrics"]["rps"]["n"] == 2
    assert no_server_left()


def test_a_good_http_server_is_verified_and_measured(results):
    proc = corobench(*HTTP, "--impl", "fake-server-good", results=results, impls=SERVERS)
    assert proc.returncode == 0, proc.stderr
    rows = runs(results)
    assert [(r["rep"], r["status"]) for r in rows] == [(0, "ok"), (1, "ok")]
    metrics = json.loads(rows[1]["metrics"])
    assert metrics["rps"] > 0 and metrics["window_s"] == pytest.approx(1.0, abs=0.3)
    assert "rps_per_core" in metrics or metrics["server_cores"] == 0
    # the share of the server's CPUs it used: its cores over how many CPUs it had (at least one)
    assert 0 <= metrics["server_cpu_share"] <= metrics["server_cores"] + 1e-9


@pytest.mark.parametrize("mode,kind,reason", [
    ("never-ready", "timeout", "server never ready: no ready line within 5 s"),
    ("badready", "output", "ready line: port must be the bound port"),
    ("crash", "exit", "server died under load (exit 7)"),
    ("wrongbytes", "checksum", "wrong repl"),
    ("baduuid", "checksum", "UUID"),
    ("miscount", "checksum", "requests is 81, expected 80"),
    ("ignore-term", "timeout", "did not exit within 5 s of SIGTERM (and printed no final line)"),
    ("slow-stop", "timeout", "did not exit within 5 s of SIGTERM (and printed no final line)"),
    ("slow-exit", "timeout", "did not exit within 5 s of SIGTERM (after printing its final line)"),
    ("anyaddr", "output", "listens on tcp 0.0.0.0:"),
])
def test_each_server_fault_is_failed_with_its_reason_and_nothing_is_left(results, mode, kind, reason):
    args = list(ECHO)
    if mode == "never-ready":
        args[args.index("--timeout") + 1] = "5"
    proc = corobench(*args, "--impl", f"fake-server-{mode}", results=results, impls=SERVERS)
    assert proc.returncode == 1, proc.stderr
    rows = runs(results)
    verify_row = rows[0]
    assert verify_row["status"] == "failed" and verify_row["failure_kind"] == kind, verify_row["reason"]
    assert reason in verify_row["reason"]
    assert rows[1]["status"] == "failed" and "failed verification" in rows[1]["reason"]
    assert no_server_left()


def test_http_faults_are_caught_too(results):
    proc = corobench(*HTTP, "--impl", "fake-server-wrongbytes,fake-server-miscount", results=results, impls=SERVERS)
    assert proc.returncode == 1
    reasons = {r["program"]: r["reason"] for r in runs(results) if r["rep"] == 0}
    assert "body differs from the token" in reasons["fake-server-wrongbytes"]
    assert "requests is 201, the client completed 200" in reasons["fake-server-miscount"]
    assert no_server_left()


def test_server_and_client_cpus_are_recorded_and_bad_ones_refused(results):
    bad = corobench(*ECHO, "--impl", "fake-server-good", "--server-cpus", "99", results=results, impls=SERVERS)
    assert bad.returncode == 2 and "--server-cpus 99" in bad.stderr
    wrong = corobench(*ECHO, "--impl", "fake-server-good", "--loadgen", "ab", results=results, impls=SERVERS)
    assert wrong.returncode == 2 and "--loadgen must be" in wrong.stderr
    ok = corobench(*ECHO, "--impl", "fake-server-good", "--server-cpus", "0", "--client-cpus", "0",
                   results=results, impls=SERVERS)
    assert ok.returncode == 0, ok.stderr
    db = sqlite3.connect(results / "corobench.sqlite")
    settings = json.loads(db.execute("SELECT settings FROM sessions ORDER BY id DESC").fetchone()[0])
    assert settings["server_cpus"] == [0] and settings["client_cpus"] == [0]
    assert all(r["cpus"] == "0" for r in runs(results) if r["status"] == "ok")


def test_a_busy_machine_is_named_in_the_warning_and_a_quiet_one_is_not(results):
    def warnings_of(out: str) -> str:
        return " ".join(out.split())

    quiet = corobench(*HTTP, "--duration", "2", "--impl", "fake-server-good", "--format", "md", results=results,
                      impls=SERVERS)
    assert quiet.returncode == 0, quiet.stderr
    assert "machine busy" not in warnings_of(quiet.stdout)
    burners = [subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c", "while True: pass"])
               for cpu in sorted(os.sched_getaffinity(0))]
    try:
        busy = corobench(*HTTP, "--duration", "2", "--impl", "fake-server-good", "--format", "md", results=results,
                         impls=SERVERS)
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert busy.returncode == 0, busy.stderr
    text = warnings_of(busy.stdout)
    assert "machine busy" in text and "the server's CPUs up to" in text and "the client's CPUs up to" in text, text
    (row,) = [r for r in runs(results) if r["rep"] == 1][-1:]
    metrics = json.loads(row["metrics"])
    assert metrics["server_other_share"] > 0.25 and metrics["client_other_share"] > 0.25
    assert row["other_cpu_fraction"] == max(metrics["server_other_share"], metrics["client_other_share"])
