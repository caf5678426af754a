"""What people read: tables that fit, notes below tables, CSV columns, legacy formats, `show`, `exec`."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest

from conftest import FAKES, ROOT, corobench


@pytest.fixture
def session(results):
    """One stored session: chain with a good, a crashing and an escape-printing program."""
    proc = corobench("run", "chain", "-w", "2", "-e", "3", "-t", "int,str", "--reps", "2", "--impl",
                     "fake-good,fake-crash,fake-escape", results=results, impls=FAKES)
    assert proc.returncode == 1, proc.stderr
    return results


def test_tables_keep_notes_below_and_fit_a_narrow_pipe(results):
    proc = corobench("run", "chain", "-w", "2", "-e", "3", "--reps", "2", "--impl",
                     "fake-good,fake-crash", results=results, impls=FAKES, env={"COLUMNS": "80"})
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines if line.startswith(("┃", "│", "┏", "└"))) <= 80
    assert "notes" not in proc.stdout and "fake-crash: FAILED: failed verification" in proc.stdout
    # each kind of warning once below its table, naming the programs it applies to
    short = [line for line in lines if "the timed region lasted under 5 ms" in line]
    assert len(short) == 1 and "fake-good (1 ms)" in short[0]


def test_report_lists_each_warning_once_per_scenario_naming_its_tables(session, tmp_path):
    out = tmp_path / "report"
    proc = corobench("report", "latest", "--out", str(out), results=session)
    assert proc.returncode == 0, proc.stderr
    md = (out / "report.md").read_text()
    chain = md[md.index("## chain"):]
    short = [line for line in chain.splitlines() if "the timed region lasted under 5 ms" in line]
    assert len(short) == 1, short  # not once under each etype's table
    assert "etype=int: fake-good (" in short[0] and "etype=str: fake-good (" in short[0]
    assert "workers=" not in short[0]  # only what tells the tables apart
    assert chain.index("### Warnings") > chain.rindex("etype=str esize")  # below the last table
    html = (out / "report.html").read_text()
    assert html.count("the timed region lasted under 5 ms") == 1 and "<h3>Warnings</h3>" in html


def test_list_never_cuts_an_id_at_80_columns(results):
    proc = corobench("list", results=results, impls=FAKES, env={"COLUMNS": "80"})
    assert proc.returncode == 0
    for name in ("fake-wrongparam", "fake-boolthreads"):
        assert name in proc.stdout


def test_csv_has_a_column_per_parameter(session):
    proc = corobench("report", "latest", "--out", str(session / "rep"), results=session, impls=FAKES)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO((session / "rep" / "results.csv").read_text())))
    assert {"parameter_workers", "parameter_etype", "parameter_esize"} <= set(rows[0])
    assert {r["parameter_etype"] for r in rows} == {"int", "str"}
    assert all(float(r["mean_ci_low"]) >= 0 for r in rows if r["mean_ci_low"])


def test_legacy_formats_of_blocking_and_tasks(results):
    blocking = corobench("run", "blocking", "-n", "2", "-i", "4", "--reps", "1", "--impl", "fake-good",
                         "--format", "legacy", results=results, impls=FAKES)
    assert blocking.returncode == 0, blocking.stderr
    assert "fake-good (2 tasks x 10 bytes, 4 iterations): 0.001 s total, 0.250 ms avg per iteration" in blocking.stdout
    tasks = corobench("run", "tasks", "-n", "2,20", "-d", "0", "--reps", "1", "--impl", "fake-good,fake-crash",
                      "--format", "legacy", results=results, impls=FAKES)
    assert "| runtime | 2 | 20 |" in tasks.stdout and "| fake-crash | FAILED | FAILED |" in tasks.stdout


def test_json_output_carries_the_session_metadata(results):
    proc = corobench("run", "tasks", "-n", "2", "-d", "0", "--reps", "1", "--impl", "fake-good", "--format", "json",
                     results=results, impls=FAKES)
    meta = json.loads(proc.stdout)["meta"]
    assert meta["session"] == 1 and meta["machine"]["cores"] >= 1 and "fake-good" in meta["toolchains"]


def test_show_a_failed_run_with_its_command_and_stderr(session):
    listing = corobench("show", "session", "latest", results=session, impls=FAKES)
    assert listing.returncode == 0
    failed_id = next(line.split()[0] for line in listing.stdout.splitlines()
                     if "fake-escape" in line and " failed " in line and " 0 " in line)
    shown = corobench("show", failed_id, results=session, impls=FAKES)
    assert shown.returncode == 0
    out = shown.stdout
    assert "command      python3 " in out and "fake.py escape chain --workers 3" in out
    assert "cwd          " in out and "fake-impls/escape" in out
    assert "\x1b" not in out and "\\x1b" in out and "red alert" in out  # escapes made visible, not sent


@pytest.mark.parametrize("args,message", [
    (["show", "nope"], "show takes a run id"),
    (["show", "99999"], "no run 99999"),
    (["show", "session", "42"], "no session 42"),
])
def test_show_bad_input(session, args, message):
    proc = corobench(*args, results=session, impls=FAKES)
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_exec_runs_a_program_as_the_harness_does(results):
    dry = corobench("exec", "fake-good", "chain", "-w", "4", "--threads", "1", "--dry-run", results=results,
                    impls=FAKES)
    assert dry.returncode == 0 and dry.stdout == ""
    assert "fake-impls/good && python3" in dry.stderr and "--workers 4" in dry.stderr and "--threads 1" in dry.stderr
    real = subprocess.run([sys.executable, "-m", "corobench", "--results", str(results), "--impls", str(FAKES),
                           "exec", "fake-good", "chain", "-w", "4", "-e", "5"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert real.returncode == 0 and json.loads(real.stdout)["checksum"] == 4 * 5 * 10
    bad = corobench("exec", "fake-good", "chain", "-w", "0", results=results, impls=FAKES)
    assert bad.returncode == 2 and "workers must be at least 1" in bad.stderr


def test_at_three_runs_no_table_claims_a_95_percent_interval(results):
    proc = corobench("run", "chain", "-w", "2", "-e", "3", "--reps", "3", "--impl", "fake-good,fake-liar",
                     "--format", "md", results=results, impls=FAKES)
    assert proc.returncode == 0, proc.stderr
    assert "median [min–max]" in proc.stdout and "95% CI]" not in proc.stdout
    rows = [ln for ln in proc.stdout.splitlines() if ln.startswith("| fake-") and "[" in ln]  # the ranked table
    assert len(rows) == 2 and any("(too few runs to test)" in r for r in rows) and not any(" ~ " in r for r in rows)


def test_the_too_short_check_looks_at_the_median_run():
    from corobench.results import build_cells
    from corobench.store import RunRow

    def row(rep: int, ns: int) -> RunRow:
        return RunRow(program="x", impl_id="x", variant=None, scenario="chain",
                      params={"workers": 2, "events": 3, "queue": 1, "etype": "int", "esize": 1}, threads=None,
                      cpus=None, rep=rep, status="ok", argv=["x"], elapsed_ns=ns, wall_ns=ns, user_s=0.0, sys_s=0.0,
                      reported_threads=1)

    (cell,) = build_cells([row(1, 3_420_000), row(2, 5_000_000)])  # median 4.21 ms, the upper run 5 ms
    assert cell.too_short and any("under 5 ms" in w for w in cell.warnings)


def test_each_scenario_section_opens_with_its_summary(results, tmp_path):
    proc = corobench("run", "tasks", "-n", "10,100", "-d", "0", "--reps", "2", "--impl", "fake-good,fake-liar",
                     results=results, impls=FAKES)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.index("tasks summary") < proc.stdout.index("tasks: tasks=10")  # the terminal
    out = tmp_path / "rep"
    assert corobench("report", "latest", "--out", str(out), results=results).returncode == 0
    md = (out / "report.md").read_text()
    assert md.index("## Who wins what") < md.index("## tasks")
    section = md[md.index("## tasks"):]
    assert section.index("Summary: peak memory (RSS) of N tasks") < section.index("### tasks=10")
    assert "tasks=10: peak RSS" not in section.split("\n")[0]
    html = (out / "report.html").read_text()
    assert html.index('id="who-wins"') < html.index('id="s-tasks"')
    start = html.index('id="s-tasks"')
    assert html.index("peak memory (RSS) of N tasks", start) < html.index("<h3>tasks=10</h3>", start)
