"""Harness bad input: exit 2 and one line on stderr, no traceback."""

from __future__ import annotations

import csv
import json
import io
import os

import pytest

from conftest import FAKES, corobench


@pytest.mark.parametrize("args,message", [
    (["run", "pingpong"], "No such command"),
    (["run"], "needs a scenario"),
    (["run", "chain", "--impl", "nosuch"], "unknown implementation 'nosuch'"),
    (["run", "chain", "--reps", "0"], "--reps must be at least 1"),
    (["run", "chain", "--reps", "many"], "--reps must be a whole number"),
    (["run", "chain", "-w", "0"], "workers must be at least 1"),
    (["run", "chain", "-t", "9"], "unknown etype"),
    (["run", "chain", "-w", "4000000000", "-e", "4000000000", "-s", "4000000000"], "exceeds 2^63-1"),
    (["run", "chain", "--cpus", "99"], "--cpus 99"),
    (["run", "chain", "--timeout", "0"], "--timeout must be"),
    (["run", "chain", "--format", "xml"], "'xml' is not one of"),
    (["run", "--suite", "/nonexistent/suite.toml"], "cannot read suite"),
    (["run", "--suite", "tests/fixtures/bad-suite.toml"], "not valid TOML"),
    (["report", "latest"], "no results database"),
    (["build", "--impl", "nosuch"], "unknown implementation"),
])
def test_bad_input_exits_2_with_one_line(results, args, message):
    proc = corobench(*args, results=results, impls=FAKES)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert message in lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_unwritable_results_path(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = corobench("run", "chain", "-w", "2", "-e", "2", results=blocker / "sub", impls=FAKES)
    assert proc.returncode == 2 and "not writable" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_legacy_format_has_the_original_columns(results):
    proc = corobench("run", "chain", "-w", "2,3", "-e", "5", "-t", "all", "--reps", "1", "--impl", "fake-good",
                     "--format", "legacy", results=results, impls=FAKES)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert list(rows[0]) == ["program", "etype", "worker", "event", "time", "speed"]
    assert {(r["worker"], r["etype"]) for r in rows} == {(w, t) for w in ("2", "3")
                                                       for t in ("int", "str", "str_ptr", "str_clone")}
    assert float(rows[0]["time"]) == pytest.approx(0.001)
    assert float(rows[0]["speed"]) == pytest.approx(int(rows[0]["worker"]) * 5 / 0.001)


def test_list_and_doctor_run(results):
    listing = corobench("list", results=results, impls=FAKES)
    assert listing.returncode == 0 and "fake-good" in listing.stdout
    doctor = corobench("doctor", results=results, impls=FAKES)
    assert doctor.returncode == 0 and "pid_max" in doctor.stdout and "cgroup" in doctor.stdout


def test_missing_toolchain_is_skipped_with_its_reason(results, tmp_path):
    impls = tmp_path / "impls"
    (impls / "x").mkdir(parents=True)
    text = (FAKES / "good" / "manifest.toml").read_text().replace('id = "fake-good"', 'id = "fake-notool"')
    text = text.replace('requires = ["python3"]', 'requires = ["no-such-compiler-xyz"]')
    (impls / "x" / "manifest.toml").write_text(text)
    listing = corobench("list", results=results, impls=impls)
    assert "no-such-compiler-xyz" in listing.stdout
    proc = corobench("run", "tasks", "-n", "2", "-d", "0", "--reps", "1", results=results, impls=impls)
    assert proc.returncode == 0 and "SKIPPED" in proc.stdout and "no-such-compiler-xyz" in proc.stdout


def test_build_failure_is_reported_and_others_still_build(results, tmp_path):
    impls = tmp_path / "impls"
    good = (FAKES / "good" / "manifest.toml").read_text().replace('"../fake.py"', f'"{FAKES / "fake.py"}"')
    for name, cmd in (("ok", 'build = ["touch", "built"]\nbuild_outputs = ["built"]'),
                      ("broken", 'build = ["sh", "-c", "echo compile error >&2; exit 1"]')):
        (impls / name).mkdir(parents=True)
        (impls / name / "manifest.toml").write_text(good.replace("fake-good", f"fake-{name}") + cmd + "\n")
    proc = corobench("build", results=results, impls=impls)
    assert proc.returncode == 1
    assert "built fake-ok" in " ".join(proc.stderr.split()) and "fake-broken" in proc.stderr
    assert "compile error" in (results / "build-logs" / "fake-broken.log").read_text()
    # incremental: nothing changed, so nothing is rebuilt
    again = corobench("build", "--impl", "fake-ok", results=results, impls=impls)
    assert again.returncode == 0 and "built" not in again.stderr
    os.utime(impls / "ok" / "manifest.toml")  # an input changed: rebuild
    third = corobench("build", "--impl", "fake-ok", results=results, impls=impls)
    assert "built fake-ok" in " ".join(third.stderr.split())
    run = corobench("run", "chain", "-w", "2", "-e", "2", "--reps", "1", results=results, impls=impls)
    assert "build failed" in run.stdout and run.returncode == 0


def test_report_draws_charts_and_tables_from_a_stored_session(results, tmp_path):
    run = corobench("run", "chain", "-w", "2,3", "-e", "5", "-t", "all", "--reps", "2",
                    "--impl", "fake-good,fake-crash", results=results, impls=FAKES)
    assert run.returncode == 1  # fake-crash failed, and says so
    tasks = corobench("run", "tasks", "-n", "2,4", "-d", "0", "--reps", "2", "--impl", "fake-good",
                      results=results, impls=FAKES)
    assert tasks.returncode == 0, tasks.stderr
    out = tmp_path / "report"
    rep = corobench("report", "1", "--out", str(out), results=results, impls=FAKES)
    assert rep.returncode == 0, rep.stderr
    for name in ("report.md", "results.csv", "chain.csv", "chain-speed.png", "chain-speed.svg"):
        assert (out / name).stat().st_size > 0, name
    md = (out / "report.md").read_text()
    assert "fake-crash" in md and "FAILED" in md and "killed by signal 6" in md
    assert "| fake-good | 10k [10k–10k] | best |" in md  # 2 workers x 5 events in the fake's 1 ms
    assert "- CPU:" in md and "## Machine and session" in md
    out2 = tmp_path / "report2"
    assert corobench("report", "latest", "--out", str(out2), results=results, impls=FAKES).returncode == 0
    assert (out2 / "tasks-memory.png").exists() and (out2 / "tasks-spawn.png").exists()
    assert (out2 / "tasks-memory-bars--tasks-4.png").exists()  # one bar chart per N: the varying part named


def test_help_loads_neither_scipy_nor_matplotlib():
    import subprocess
    import sys

    code = ("import sys\nfrom corobench.cli import entry\nentry(['--help'])\nentry(['run', 'chain', '--help'])\n"
            "print(sorted(m for m in ('scipy', 'matplotlib') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_options_before_the_scenario_keep_zero_and_explicit_values(results):
    # `run --warmup 0 --format csv chain ... --format json`: the 0 is kept, the later --format wins
    proc = corobench("run", "--warmup", "0", "--format", "csv", "chain", "-w", "2", "-e", "3", "--reps", "1",
                     "--impl", "fake-good", "--format", "json", results=results, impls=FAKES)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["results"][0]["runs_ok"] == 1
    import sqlite3

    db = sqlite3.connect(results / "corobench.sqlite")
    settings = json.loads(db.execute("SELECT settings FROM sessions").fetchone()[0])
    assert settings["warmup"] == 0 and settings["reps"] == 1
    zero_reps = corobench("run", "--reps", "0", "chain", "-w", "2", "-e", "3", "--impl", "fake-good",
                          results=results, impls=FAKES)
    assert zero_reps.returncode == 2 and "--reps must be at least 1" in zero_reps.stderr
