"""Fault injection: signals and kill -9 mid-session, a full disk, a damaged database, hostile
programs and input, concurrent builds and sessions. Every test is bounded in time, uses the fake
implementations (loopback-free), and checks that nothing is lost and nothing is left running.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FAKES, ROOT, corobench, db_rows
from test_process import gone

HANG = ["run", "chain", "-w", "3", "-e", "4", "--reps", "1", "--timeout", "120", "--impl", "fake-good,fake-hang"]
CGROUP_PARENT = Path("/sys/fs/cgroup/memory/corobench")


def bookkeeping(results: Path) -> list[Path]:
    """What the harnesses of this results folder still record as running (bookkeeping.py)."""
    root = results / "live"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []


def start_session(results: Path, tmp_path: Path) -> tuple[subprocess.Popen, list[int]]:
    """A real corobench process, stopped while fake-hang runs (fake-good already finished)."""
    pidfile = tmp_path / "pids"
    proc = subprocess.Popen([sys.executable, "-m", "corobench", "--results", str(results), "--impls", str(FAKES),
                             *HANG], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "FAKE_PIDFILE": str(pidfile)})
    deadline = time.monotonic() + 90
    while not (pidfile.exists() and pidfile.read_text().endswith("\n")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pidfile.exists(), "fake-hang never started"
    return proc, [int(x) for x in pidfile.read_text().split()]


def session_cgroups(session_id: int, harness_pid: int) -> list[Path]:
    """The cgroups of that session's runs (named s<session>-<harness pid>-<run>)."""
    return sorted(CGROUP_PARENT.glob(f"s{session_id}-{harness_pid}-*")) if CGROUP_PARENT.is_dir() else []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_stops_the_session_keeps_rows_and_leaves_nothing(results, tmp_path, sig):
    proc, pids = start_session(results, tmp_path)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert db_rows(results, "SELECT program, rep, status FROM runs") == [("fake-good", 0, "ok")]
    assert db_rows(results, "SELECT status FROM sessions") == [("interrupted",)]
    assert all(gone(pid) for pid in pids)
    assert session_cgroups(1, proc.pid) == []
    assert bookkeeping(results) == []


def test_after_kill_9_the_next_command_marks_the_session_abandoned_and_cleans_up(results, tmp_path):
    proc, pids = start_session(results, tmp_path)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    # the launcher's parent-death signal stops the run at once
    assert all(gone(pid) for pid in pids)
    assert db_rows(results, "SELECT status FROM sessions") == [("running",)]
    assert any(p.name.startswith("local~pgid~") for p in bookkeeping(results))  # recorded at spawn
    nxt = corobench("sessions", results=results, impls=FAKES)
    assert nxt.returncode == 0, nxt.stderr
    lines = [ln for ln in nxt.stderr.splitlines() if "abandoned" in ln]
    assert len(lines) == 1 and "session 1 was abandoned" in lines[0]
    assert db_rows(results, "SELECT status FROM sessions") == [("abandoned",)]
    assert db_rows(results, "SELECT program, status FROM runs") == [("fake-good", "ok")]
    assert bookkeeping(results) == []
    assert session_cgroups(1, proc.pid) == []
    # and only once
    assert "abandoned" not in corobench("sessions", results=results, impls=FAKES).stderr


def test_a_live_session_is_not_mistaken_for_an_abandoned_one(results, tmp_path):
    proc, pids = start_session(results, tmp_path)
    try:
        other = corobench("sessions", results=results, impls=FAKES)
        assert "abandoned" not in other.stderr
        assert db_rows(results, "SELECT status FROM sessions") == [("running",)]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)


def test_a_harness_bug_ends_the_session_as_crashed_with_a_log(results, monkeypatch):
    from corobench.runkinds import batch

    real = batch.BatchKind.run

    def buggy(self, req):
        if req.program.name == "fake-wrongsum":
            raise ZeroDivisionError("simulated harness bug")
        return real(self, req)

    monkeypatch.setattr(batch.BatchKind, "run", buggy)
    proc = corobench("run", "chain", "-w", "2", "-e", "3", "--reps", "1", "--impl", "fake-good,fake-wrongsum",
                     results=results, impls=FAKES)
    assert proc.returncode == 70
    lines = proc.stderr.strip().splitlines()
    assert "internal error" in lines[-1] and "ZeroDivisionError" in lines[-1] and "Traceback" not in proc.stderr
    log = Path(lines[-1].rsplit("traceback in ", 1)[1])
    assert "simulated harness bug" in log.read_text() and "Traceback" in log.read_text()
    assert db_rows(results, "SELECT status FROM sessions") == [("crashed",)]
    assert ("fake-good", 0, "ok") in db_rows(results, "SELECT program, rep, status FROM runs")


@pytest.mark.parametrize("mode,reason", [
    ("bignum", "out of the 64-bit range"),
    ("nested", "nested too deep"),
    ("dupkey", "appears twice"),
    ("nan", "NaN is not a number"),
    ("boolthreads", "'threads' must be a whole number"),
    ("floodout", "printed a line longer than 1 MiB on stdout: killed"),
    ("escape", "red alert"),
])
def test_hostile_output_fails_the_run_not_the_session(results, mode, reason):
    proc = corobench("run", "chain", "-w", "2", "-e", "3", "--reps", "2", "--impl", f"fake-{mode},fake-good",
                     results=results, impls=FAKES)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    rows = db_rows(results, "SELECT program, rep, status, reason FROM runs")
    bad = [r for r in rows if r[0] == f"fake-{mode}" and r[1] == 0]
    assert bad[0][2] == "failed" and reason in bad[0][3], bad
    assert "\x1b" not in bad[0][3] and "\x1b" not in proc.stdout + proc.stderr
    assert [r[2] for r in rows if r[0] == "fake-good" and r[1] > 0] == ["ok", "ok"]
    assert db_rows(results, "SELECT status FROM sessions") == [("finished",)]


def test_huge_reps_with_a_failing_program_ends_at_once(results):
    started = time.monotonic()
    proc = corobench("run", "chain", "-w", "2", "-e", "3", "--reps", "10000", "--impl", "fake-crash",
                     results=results, impls=FAKES)
    assert proc.returncode == 1 and time.monotonic() - started < 60


@pytest.mark.parametrize("args,message", [
    (["--threads", "100000000000000000000"], "--threads must be"),
    (["--threads", "0"], "--threads must be at least 1"),
    (["--cpus", "0-999999999"], "--cpus 0-999999999"),
    (["--timeout", "nan"], "--timeout must be"),
    (["--timeout", "inf"], "--timeout must be"),
    (["--timeout", "1e300"], "--timeout must be"),
    (["--impl", ","], "empty item"),
    (["-w", "1_0"], "workers must be a whole number"),
    (["-w", "١٠"], "workers must be a whole number"),
    (["--warmup", "-1"], "--warmup must be at least 0"),
    (["--reps", "2.5"], "--reps must be a whole number"),
])
def test_hostile_numbers_are_one_line_exit_2(results, args, message):
    started = time.monotonic()
    proc = corobench("run", "chain", "-e", "2", "--impl", "fake-good", *args, results=results, impls=FAKES)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr
    assert time.monotonic() - started < 10


def make_session(results: Path, reps: int = 20) -> None:
    proc = corobench("run", "tasks", "-n", "2", "-d", "0", "--reps", str(reps), "--impl", "fake-good",
                     results=results, impls=FAKES)
    assert proc.returncode == 0, proc.stderr


def test_a_database_damaged_mid_file_is_reported_and_left_untouched(results):
    make_session(results, reps=60)
    db = results / "corobench.sqlite"
    sqlite3.connect(db).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    data = bytearray(db.read_bytes())
    assert len(data) >= 4 * 4096
    data[2 * 4096: 3 * 4096] = bytes(random.Random(7).randrange(256) for _ in range(4096))
    db.write_bytes(bytes(data))
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    for args in (["sessions"], ["report", "latest", "--out", str(results / "rep")],
                 ["run", "tasks", "-n", "2", "-d", "0", "--reps", "1", "--impl", "fake-good"]):
        proc = corobench(*args, results=results, impls=FAKES)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "damaged" in lines[0] and str(db) in lines[0], proc.stderr
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest


def test_a_full_disk_stops_the_session_cleanly(tmp_path):
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a small tmpfs as the results folder")
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        results = mnt / "results"
        make_session(results, reps=2)
        ballast = mnt / "ballast"
        fd = os.open(ballast, os.O_WRONLY | os.O_CREAT)  # fill the disk, then leave only a few pages free
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError:
            pass
        finally:
            os.close(fd)
        ballast_size = ballast.stat().st_size
        with open(ballast, "r+b") as f:
            f.truncate(max(0, ballast_size - 24 * 4096))
        proc = corobench("run", "tasks", "-n", "2", "-d", "0", "--reps", "500", "--impl", "fake-good",
                         results=results, impls=FAKES, in_process=False)
        assert proc.returncode == 74, (proc.returncode, proc.stderr[-500:])
        assert "Traceback" not in proc.stderr
        line = [ln for ln in proc.stderr.splitlines() if "cannot write" in ln][0]
        ballast.unlink()
        if "runs are stored" not in line:  # the disk was full before the session could even begin
            assert db_rows(results, "SELECT COUNT(*) FROM sessions WHERE id = 2") == [(0,)]
            return
        stored = int(line.split("stopped: ")[1].split(" runs")[0])
        assert db_rows(results, "SELECT COUNT(*) FROM runs WHERE session_id = 2") == [(stored,)]
        # the session is told apart: stopped by the disk, or (if even that write failed) abandoned next time
        corobench("sessions", results=results, impls=FAKES)
        assert db_rows(results, "SELECT status FROM sessions WHERE id = 2")[0][0] in ("store-failed", "abandoned")
    finally:
        subprocess.run(["umount", "-l", str(mnt)])


def fake_build_impls(tmp_path: Path, names: list[str], counter: Path) -> Path:
    impls = tmp_path / "impls"
    good = (FAKES / "good" / "manifest.toml").read_text().replace('"../fake.py"', f'"{FAKES / "fake.py"}"')
    for name in names:
        (impls / name).mkdir(parents=True)
        build = f'build = ["sh", "-c", "sleep 1; echo {name} >> {counter}; touch built"]\nbuild_outputs = ["built"]\n'
        (impls / name / "manifest.toml").write_text(good.replace("fake-good", f"fake-{name}") + build)
    return impls


def corobench_process(*args: str, results: Path, impls: Path, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "corobench", "--results", str(results), "--impls", str(impls),
                             *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})


def test_concurrent_builds_keep_every_entry_and_build_once(results, tmp_path):
    counter = tmp_path / "builds"
    impls = fake_build_impls(tmp_path, ["a", "b", "c"], counter)
    folder = tmp_path / "state"
    procs = [corobench_process("build", "--impl", ids, results=results, impls=impls,
                               env={"COROBENCH_BUILD_STATE": str(folder)}) for ids in ("fake-a,fake-c", "fake-b,fake-c")]
    for p in procs:
        p.communicate(timeout=120)
        assert p.returncode == 0
    state = json.loads((folder / "build-state.json").read_text())
    assert {k.split("@")[0] for k in state} == {"fake-a", "fake-b", "fake-c"} and all(v["ok"] for v in state.values())
    assert sorted(counter.read_text().split()) == ["a", "b", "c"]  # fake-c built once, not twice


def test_concurrent_sessions_store_both(results, tmp_path):
    args = ["run", "tasks", "-n", "2", "-d", "0", "--reps", "15", "--impl", "fake-good"]
    procs = [corobench_process(*args, results=results, impls=FAKES) for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    assert db_rows(results, "SELECT id, status FROM sessions ORDER BY id") == [(1, "finished"), (2, "finished")]
    assert db_rows(results, "SELECT session_id, COUNT(*) FROM runs GROUP BY session_id") == [(1, 16), (2, 16)]


def test_planted_symlinks_are_not_followed(results, tmp_path):
    make_session(results, reps=1)
    precious = tmp_path / "precious"
    precious.write_text("keep me")
    out = tmp_path / "report"
    out.mkdir()
    (out / "results.csv").symlink_to(precious)
    (out / "report.md").symlink_to(precious)
    builds = tmp_path / "builds"
    builds.mkdir()
    (builds / "build-state.json").symlink_to(precious)
    assert corobench("report", "latest", "--out", str(out), results=results, impls=FAKES).returncode == 0
    assert corobench("build", results=results, impls=FAKES, env={"COROBENCH_BUILD_STATE": str(builds)}).returncode == 0
    assert precious.read_text() == "keep me"
    assert not (out / "results.csv").is_symlink() and (out / "results.csv").read_text().startswith("scenario,")


# --------------------------------------------------------------------------- fuzzing

HOSTILE = ["", " ", "-1", "0", "00", "1e300", "nan", "inf", "-inf", "1_0", "١٠", "0x10", "3.5", "99999999999999999999999",
           ",", ",,", "all,", "--", "-", "\x00", "\x1b[2J", "é", "💥", "1,", ",1", "0-", "-0", "1-0", "0-999999999",
           "true", "null", "[1]", "{}", "'", '"', "\\", "%s", "$(reboot)"]
OPTIONS = ["--reps", "--threads", "--warmup", "--cpus", "--timeout", "--impl", "--format"]
PARAMS = {"chain": ["-w", "-e", "-q", "-t", "-s"], "tasks": ["-n", "-d"], "blocking": ["-n", "-i", "-b"],
          "echo": ["--connections", "--concurrency", "--size", "--uuids", "--rate", "--duration"],
          "http": ["--connections", "--duration", "--warmup-s", "--requests", "--rate"]}


def test_fuzzed_command_lines_are_one_line_exit_2(results):
    rng = random.Random(20261121)
    tried = 0
    for _ in range(1500):
        scenario = rng.choice(list(PARAMS))
        server_only = ["--server-cpus", "--client-cpus", "--loadgen", "--clients", "--hosts"]
        flag = rng.choice(PARAMS[scenario] + OPTIONS + server_only)
        if flag in server_only and scenario not in ("echo", "http"):
            continue
        value = rng.choice(HOSTILE) if rng.random() < 0.8 else bytes(rng.randrange(256) for _ in range(
            rng.randrange(1, 12))).decode("utf-8", "surrogateescape")
        args = ["run", scenario, flag, value, "--impl", "nosuch-impl", "--no-build"]
        if flag == "--impl":
            args = ["run", scenario, flag, value, "--no-build"]
        proc = corobench(*args, results=results, impls=FAKES)
        tried += 1
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1, (args, proc.returncode, proc.stderr[-400:])
        assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert tried > 1000


def test_fuzzed_suite_files_are_one_line_exit_2(results, tmp_path):
    rng = random.Random(7)
    base = (ROOT / "suites" / "quick.toml").read_bytes()
    tried = 0
    for i in range(400):
        data = bytearray(base)
        if i % 4 == 0:
            data = bytearray(rng.randrange(256) for _ in range(rng.randrange(0, 400)))
        else:
            for _ in range(rng.randrange(1, 6)):
                pos = rng.randrange(len(data))
                data[pos:pos + rng.randrange(1, 4)] = bytes(rng.choice([0, 10, 34, 39, 44, 61, 91, 93, 255,
                                                                        rng.randrange(256)]) for _ in range(2))
        path = tmp_path / f"s{i}.toml"
        path.write_bytes(bytes(data))
        proc = corobench("run", "--suite", str(path), "--impl", "nosuch-impl", "--no-build", results=results,
                         impls=FAKES)
        tried += 1
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, (path, proc.stderr[-400:])
        assert "Traceback" not in proc.stderr
    assert tried == 400
