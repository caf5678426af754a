"""The harness against a fake implementation that crashes, hangs, prints garbage or lies."""

from __future__ import annotations

import json
import os
import sqlite3
import time

import pytest

from conftest import FAKES, corobench

TINY = ["run", "chain", "-w", "3", "-e", "4", "-q", "2", "--reps", "2", "--timeout", "60"]
HANG_TIMEOUT = ["--timeout", "5"]  # later options win: the hanging fake is killed after 5 s


def runs(results) -> list[dict]:
    db = sqlite3.connect(results / "corobench.sqlite")
    db.row_factory = sqlite3.Row
    return [dict(r) for r in db.execute("SELECT * FROM runs ORDER BY id")]


@pytest.mark.parametrize("mode,kind,reason", [
    ("crash", "signal", "killed by signal 6"),
    ("garbage", "output", "not JSON"),
    ("silent", "output", "printed nothing"),
    ("twolines", "output", "2 lines"),
    ("wrongsum", "checksum", "checksum is 106, expected 105"),
    ("wrongparam", "output", "'workers' is 4, expected 3"),
    ("resource", "resource", "started 12 of 100 threads"),
    ("hang", "timeout", "timed out after 5 s"),
])
def test_each_fault_is_stored_as_failed_with_its_reason(results, mode, kind, reason):
    # --no-verify-first is not offered: the fault must be caught by verifying the measured run,
    # so use the fake at the measured size too (the verification run fails first, same reason)
    proc = corobench(*TINY, *(HANG_TIMEOUT if mode == "hang" else []), "--impl", f"fake-good,fake-{mode}",
                     results=results, impls=FAKES)
    assert proc.returncode == 1, proc.stderr
    rows = runs(results)
    bad = [r for r in rows if r["program"] == f"fake-{mode}"]
    assert bad and all(r["status"] == "failed" for r in bad)
    verify_row = next(r for r in bad if r["rep"] == 0)
    assert verify_row["failure_kind"] == kind
    assert reason in verify_row["reason"]
    assert any(r["rep"] == 1 and "failed verification" in r["reason"] for r in bad)
    # the session went on: the good program was measured, and nothing of it is FAILED
    good = [r for r in rows if r["program"] == "fake-good" and r["rep"] >= 1]
    assert [r["status"] for r in good] == ["ok", "ok"]
    assert "FAILED" in proc.stdout and f"fake-{mode}" in proc.stdout


def alive(pid: int) -> bool:
    """Running, not a zombie waiting for an init that never reaps it."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_hang_kills_the_whole_process_group(results, tmp_path):
    pidfile = tmp_path / "pids"
    started = time.monotonic()
    proc = corobench(*TINY, *HANG_TIMEOUT, "--impl", "fake-hang", results=results, impls=FAKES,
                     env={"FAKE_PIDFILE": str(pidfile)})
    assert time.monotonic() - started < 60
    assert proc.returncode == 1
    parent, child = (int(x) for x in pidfile.read_text().split())
    for pid in (parent, child):  # the program and the child it started are both gone
        assert not alive(pid), f"pid {pid} survived the timeout"


def test_a_failure_in_the_middle_leaves_earlier_rows_intact(results):
    first = corobench(*TINY, "--impl", "fake-good", results=results, impls=FAKES)
    assert first.returncode == 0, first.stderr
    before = runs(results)
    second = corobench(*TINY, "--impl", "fake-good,fake-crash,fake-wrongsum", results=results, impls=FAKES)
    assert second.returncode == 1
    after = runs(results)
    assert after[: len(before)] == before
    sessions = {r["session_id"] for r in after}
    assert len(sessions) == 2
    db = sqlite3.connect(results / "corobench.sqlite")
    assert [s for (s,) in db.execute("SELECT status FROM sessions ORDER BY id")] == ["finished", "finished"]


def test_verified_row_keeps_the_programs_json(results):
    proc = corobench(*TINY, "--impl", "fake-good", "--format", "json", results=results, impls=FAKES)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    (cell,) = doc["results"]
    assert cell["status"] == "ok" and cell["runs_ok"] == 2
    assert cell["metrics"]["speed"]["values"] == [12_000.0, 12_000.0]  # 12 events in the fake's 1 ms
    measured = [r for r in runs(results) if r["rep"] >= 1]
    assert all(json.loads(r["result"])["checksum"] == 120 for r in measured)
    assert all(r["wall_ns"] > 0 and r["max_rss_kb"] > 0 for r in measured)


def test_threads_refused_by_a_runtime_without_a_thread_setting_is_skipped_not_measured(results, tmp_path):
    impls = tmp_path / "impls"
    (impls / "one").mkdir(parents=True)
    text = (FAKES / "good" / "manifest.toml").read_text()
    text = text.replace('id = "fake-good"', 'id = "fake-single"').replace('threads = "flag"', 'threads = "none"')
    text = text.replace('"../fake.py"', f'"{FAKES / "fake.py"}"')
    (impls / "one" / "manifest.toml").write_text(text)
    proc = corobench(*TINY, "--threads", "2", results=results, impls=impls)
    assert proc.returncode == 0, proc.stderr
    assert "SKIPPED" in proc.stdout and "--threads does not apply" in proc.stdout
    assert all(r["status"] == "skipped" for r in runs(results))


def test_threads_are_passed_and_checked(results):
    proc = corobench(*TINY, "--impl", "fake-good", "--threads", "1", "--format", "json",
                     results=results, impls=FAKES)
    assert proc.returncode == 0, proc.stderr
    rows = [r for r in runs(results) if r["rep"] >= 1]
    assert all("--threads" in json.loads(r["argv"]) and r["reported_threads"] == 1 for r in rows)


def test_a_lie_at_the_measured_size_is_caught_after_verification_passed(results):
    proc = corobench("run", "chain", "-w", "10", "-e", "4", "--reps", "3", "--impl", "fake-liar",
                     results=results, impls=FAKES)
    assert proc.returncode == 1
    rows = runs(results)
    assert [(r["rep"], r["status"]) for r in rows] == [(0, "ok"), (1, "failed")]  # no more reps after it
    assert rows[1]["failure_kind"] == "checksum" and "expected 400" in rows[1]["reason"]


def test_ctrl_c_keeps_finished_rows_and_marks_the_session_interrupted(results, tmp_path):
    import signal
    import subprocess
    import sys

    from conftest import ROOT

    pidfile = tmp_path / "pids"
    proc = subprocess.Popen(
        [sys.executable, "-m", "corobench", "--results", str(results), "--impls", str(FAKES), "run", "chain",
         "-w", "3", "-e", "4", "--reps", "1", "--timeout", "120", "--impl", "fake-good,fake-hang"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "FAKE_PIDFILE": str(pidfile)})
    deadline = time.monotonic() + 60
    while not pidfile.exists() and time.monotonic() < deadline:  # fake-hang is running: good is done
        time.sleep(0.1)
    assert pidfile.exists()
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "interrupted" in stderr
    rows = runs(results)
    assert [(r["program"], r["rep"], r["status"]) for r in rows] == [("fake-good", 0, "ok")]
    db = sqlite3.connect(results / "corobench.sqlite")
    assert db.execute("SELECT status FROM sessions").fetchone()[0] == "interrupted"
    for pid in (int(x) for x in pidfile.read_text().split()):
        assert not alive(pid)


def test_tasks_that_were_not_all_alive_at_once_are_flagged():
    from corobench.results import build_cells
    from corobench.store import RunRow

    row = RunRow(program="x", impl_id="x", variant=None, scenario="tasks", params={"tasks": 1000, "sleep_ms": 100},
                 threads=None, cpus=None, rep=1, status="ok", argv=["x"], elapsed_ns=3 * 10**9,
                 metrics={"spawn_ns": 2 * 10**9}, wall_ns=3 * 10**9, user_s=1.0, sys_s=0.1, max_rss_kb=1000,
                 loadavg=0.0, reported_threads=1)
    (cell,) = build_cells([row])
    assert any("not all 1000 were alive at once" in w for w in cell.warnings)
    from dataclasses import replace

    (fast,) = build_cells([replace(row, metrics={"spawn_ns": 10**6})])
    assert not any("alive at once" in w for w in fast.warnings)
