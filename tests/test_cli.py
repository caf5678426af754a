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
    state = {"COROBENCH_BUILD_STATE": str(tmp_path / "builds")}  # these fakes' builds, not the checkout's
    proc = corobench("build", results=results, impls=impls, env=state)
    assert proc.returncode == 1
    assert "built fake-ok" in " ".join(proc.stderr.split()) and "fake-broken" in proc.stderr
    (log,) = (tmp_path / "builds" / "logs").glob("fake-broken-*.log")
    assert "compile error" in log.read_text()
    # incremental: nothing changed, so nothing is rebuilt
    again = corobench("build", "--impl", "fake-ok", results=results, impls=impls, env=state)
    assert again.returncode == 0 and "built" not in again.stderr
    os.utime(impls / "ok" / "manifest.toml")  # an input changed: rebuild
    third = corobench("build", "--impl", "fake-ok", results=results, impls=impls, env=state)
    assert "built fake-ok" in " ".join(third.stderr.split())
    run = corobench("run", "chain", "-w", "2", "-e", "2", "--reps", "1", results=results, impls=impls, env=state)
    assert "build failed" in run.stdout and run.returncode == 0


def counted_build(tmp_path, name: str) -> tuple:
    """A fake implementation whose build appends a line to a counter file: (impls folder, counter,
    a build state of its own for the env)."""
    impls, counter = tmp_path / "impls", tmp_path / "count"
    good = (FAKES / "good" / "manifest.toml").read_text().replace('"../fake.py"', f'"{FAKES / "fake.py"}"')
    (impls / name).mkdir(parents=True)
    (impls / name / "manifest.toml").write_text(
        good.replace("fake-good", f"fake-{name}") + f'build = ["sh", "-c", "echo x >> {counter}; touch built"]\n'
        'build_outputs = ["built"]\n')
    return impls, counter, {"COROBENCH_BUILD_STATE": str(tmp_path / "builds")}


def test_a_new_results_folder_rebuilds_nothing(tmp_path):
    impls, counter, state = counted_build(tmp_path, "once")
    for folder in ("r1", "r2", "r3"):
        proc = corobench("run", "chain", "-w", "2", "-e", "2", "--reps", "1", results=tmp_path / folder,
                         impls=impls, env=state)
        assert proc.returncode == 0, proc.stderr
    assert counter.read_text().split() == ["x"]  # built once, for the first folder only


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


def test_global_options_after_the_subcommand(tmp_path):
    results = tmp_path / "after"
    proc = corobench("run", "chain", "-w", "2", "-e", "3", "--reps", "1", "--impl", "fake-good",
                     "--results", str(results), "--impls", str(FAKES))
    assert proc.returncode == 0, proc.stderr
    assert (results / "corobench.sqlite").exists()
    listed = corobench("sessions", "--results", str(results))
    assert listed.returncode == 0 and "run chain" in listed.stdout


def test_dry_run_prints_the_plan_and_starts_nothing(results):
    proc = corobench("run", "tasks", "-n", "10,100", "-d", "500", "--reps", "3", "--impl", "fake-good,fake-crash",
                     "--dry-run", results=results, impls=FAKES)
    assert proc.returncode == 0, proc.stderr
    out = " ".join(proc.stdout.split())
    # 2 x 2 x 3 measured, and one verification run per program: both sizes share the tiny one
    assert "2 benchmark(s), 2 program(s), 14 runs (2 verification runs at a tiny size)" in out and "estimate:" in out
    assert "~1.50 s each (from its parameters)" in out  # a 500 ms sleep and start-up
    assert not (results / "corobench.sqlite").exists()


def test_a_run_says_which_run_of_how_many_and_the_time_left(results):
    proc = corobench("run", "chain", "-w", "2", "-e", "3", "--reps", "2", "--impl", "fake-good", results=results,
                     impls=FAKES)
    assert proc.returncode == 0
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("[run ")]
    assert lines[0].startswith("[run 1 of 3]") and lines[-1].startswith("[run 3 of 3]")
    assert all("left)" in ln for ln in lines) and "runs planned, about" in proc.stderr


def test_completion_offers_implementation_ids_and_sessions(results):
    import os
    import subprocess
    import sys

    corobench("run", "chain", "-w", "2", "-e", "3", "--reps", "1", "--impl", "fake-good", results=results,
              impls=FAKES)

    def complete(words: str) -> list[str]:
        env = {**os.environ, "_COROBENCH_COMPLETE": "bash_complete", "COMP_WORDS": words,
               "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1)),
               "COROBENCH_IMPLS": os.pathsep.join([str(FAKES), str(FAKES.parent / "fake-servers")]),
               "COROBENCH_RESULTS": str(results)}
        out = subprocess.run([sys.executable, "-m", "corobench"], env=env, capture_output=True, text=True).stdout
        return [ln.split(",", 1)[1] for ln in out.splitlines() if "," in ln]

    assert "fake-good" in complete("corobench run chain --impl fake-g")
    assert "fake-good,fake-crash" in complete("corobench run chain --impl fake-good,fake-cr")
    assert complete("corobench run chain -t str") == ["str", "str_ptr", "str_clone"]
    # under a scenario, only its programs: no server for chain, no batch program for http
    assert "fake-server-good" not in complete("corobench run chain --impl fake-")
    assert "fake-server-good" in complete("corobench run http --impl fake-")
    assert "fake-good" not in complete("corobench capacity http --impl fake-")
    assert {"fake-good", "fake-server-good"} <= set(complete("corobench run --impl fake-"))
    assert "1" in complete("corobench compare ")


def test_exec_does_not_build_unless_asked(tmp_path):
    impls, counter, state = counted_build(tmp_path, "b")
    first = corobench("exec", "fake-b", "chain", "-w", "2", "--dry-run", results=tmp_path / "r", impls=impls, env=state)
    assert first.returncode == 0 and not counter.exists()
    built = corobench("exec", "fake-b", "chain", "-w", "2", "-e", "3", "--build", results=tmp_path / "r", impls=impls,
                      env=state, in_process=False)
    assert built.returncode == 0 and counter.read_text().split() == ["x"]
