"""`corobench compare A B` and `report --baseline`: sessions of fake programs, one of them slower in B."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from conftest import FAKES, corobench
from corobench import compare as cmp
from corobench.results import Cell
from corobench.stats import summarize


def manifest(impls: Path, name: str, mode: str, env: str = "") -> None:
    """A fake implementation `fake-NAME` in its own folder, running fake.py in MODE."""
    text = (FAKES / "good" / "manifest.toml").read_text()
    text = text.replace('id = "fake-good"', f'id = "fake-{name}"')
    text = text.replace('["python3", "../fake.py", "good"]', f'["python3", "{FAKES / "fake.py"}", "{mode}"]')
    (impls / name).mkdir(parents=True, exist_ok=True)
    (impls / name / "manifest.toml").write_text(text + env)


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    """1: w=2,3 at 1 ms, 4 reps. 2: w=3,4 with every run at 2 ms (fake-good half as fast), fake-flip
    now FAILED. 3: as 1 (nothing changed). 4: as 1 with 2 reps (too few for any test)."""
    root = tmp_path_factory.mktemp("compare")
    results, impls = root / "results", root / "impls"
    for name, mode in (("good", "good"), ("crash", "crash"), ("flip", "good")):
        manifest(impls, name, mode)

    def run(workers: str, reps: str, env: dict | None = None) -> None:
        proc = corobench("run", "chain", "-w", workers, "-e", "5", "--reps", reps, results=results, impls=impls,
                         env=env)
        assert proc.returncode == 1, proc.stderr  # fake-crash fails, every time

    run("2,3", "4")
    manifest(impls, "flip", "wrongsum")
    run("3,4", "4", {"FAKE_ELAPSED_NS": "2000000"})
    manifest(impls, "flip", "good")
    run("2,3", "4")
    run("2,3", "2")
    return results


def compare_json(results: Path, *args: str) -> dict:
    proc = corobench("compare", *args, "--format", "json", results=results)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def line(doc: dict, program: str, workers: int, metric: str = "speed") -> dict:
    [found] = [ln for ln in doc["lines"] if ln["program"] == program and ln["params"]["workers"] == workers
               and ln["metric"] == metric]
    return found


def test_a_slower_program_is_significantly_worse(sessions):
    doc = compare_json(sessions, "1", "2")
    good = line(doc, "fake-good", 3)
    assert good["ratio"] == pytest.approx(0.5) and good["change"] == pytest.approx(-0.5)
    assert good["significant"] and good["p_value"] < 0.05 and good["verdict"] == "worse"  # speed: higher is better
    assert good["a"]["median"] == pytest.approx(15000) and good["b"]["median"] == pytest.approx(7500)
    [total] = doc["summary"]["geomean_ratio"]
    assert total["scenario"] == "chain" and total["geomean"] == pytest.approx(0.5)
    assert (doc["summary"]["changed"], doc["summary"]["compared"]) == (1, 1)
    assert "Mann-Whitney U" in doc["test"]
    # the same slowdown read as time: lower is better, so again worse
    time = compare_json(sessions, "1", "2", "--metric", "time_s")
    assert line(time, "fake-good", 3, "time_s")["verdict"] == "worse"
    assert line(time, "fake-good", 3, "time_s")["change"] == pytest.approx(1.0)


def test_failed_cells_carry_no_figure(sessions):
    doc = compare_json(sessions, "1", "2")
    crash, flip = line(doc, "fake-crash", 3), line(doc, "fake-flip", 3)
    assert crash["verdict"] == "FAILED in both" and crash["a"] is None and crash["b"] is None
    assert flip["verdict"] == "FAILED in B" and flip["a"]["median"] == pytest.approx(15000) and flip["b"] is None
    assert flip["ratio"] is None and flip["p_value"] is None and "checksum" in flip["b_reason"]
    table = corobench("compare", "1", "2", results=sessions)
    assert table.returncode == 0, table.stderr
    [row] = [r.split("│") for r in table.stdout.splitlines() if "fake-flip" in r and "│" in r]
    assert [c.strip() for c in row[1:3]] == ["fake-flip", "15k [15k–15k]"] or row[2].strip().startswith("15.0k")
    assert row[3].strip() == "FAILED" and row[4].strip() == "—"  # B, then the change: no number
    assert "at workers=3 events=5 queue=256 etype=int esize=10" in table.stdout  # shared parameters: the title
    assert "fake-flip: FAILED in B, 1 cell(s)" in " ".join(table.stdout.split())


def test_cells_of_one_session_only_are_listed(sessions):
    doc = compare_json(sessions, "1", "2")
    assert {(c["program"], c["params"]["workers"]) for c in doc["only_a"]} == {
        ("fake-good", 2), ("fake-crash", 2), ("fake-flip", 2)}
    assert {(c["program"], c["params"]["workers"]) for c in doc["only_b"]} == {
        ("fake-good", 4), ("fake-crash", 4), ("fake-flip", 4)}
    assert all(ln["params"]["workers"] == 3 for ln in doc["lines"])
    text = " ".join(corobench("compare", "1", "2", results=sessions).stdout.split())
    assert "only in A: chain fake-crash workers=2" in text and "only in B:" in text
    assert re.search(r"chain fake-good workers=4 events=5 queue=256 etype=int esize=10: speed 10(\.0)?k \[", text)


def test_no_change_is_not_significant(sessions):
    doc = compare_json(sessions, "1", "latest~1")  # session 3
    good = line(doc, "fake-good", 2)
    assert good["verdict"] == "~" and not good["significant"] and good["p_value"] == pytest.approx(1.0)
    assert doc["summary"]["changed"] == 0 and doc["summary"]["geomean_ratio"][0]["geomean"] == pytest.approx(1.0)
    assert doc["warnings"] == [] and doc["only_a"] == [] and doc["only_b"] == []
    table = corobench("compare", "1", "3", results=sessions).stdout
    assert any("fake-good" in r and "~" in r and "p=1.000" in r for r in table.splitlines())
    assert "0 of 4 compared cell(s) changed (significant" in " ".join(table.split())


def test_too_few_runs_are_warned_about(sessions):
    doc = compare_json(sessions, "1", "latest")  # session 4: 2 runs a cell
    good = line(doc, "fake-good", 2)
    assert good["verdict"] == "too few runs to test" and good["p_value"] is None  # never "~" where no test could tell
    [warning] = doc["warnings"]
    assert "too few runs" in warning and "4 and 2 runs" in warning
    table = corobench("compare", "1", "4", results=sessions).stdout
    assert "warning:" in table and "too few" in table


def test_other_metrics_and_formats(sessions):
    md = corobench("compare", "1", "2", "--metric", "cpu_s", "--metric", "rss_mib,speed", "--format", "md",
                   results=sessions)
    assert md.returncode == 0, md.stderr
    for heading in ("### chain: CPU user+sys (s, lower is better), at workers=3",
                    "### chain: peak RSS (MiB, lower is better), at workers=3",
                    "### chain: speed (events/s, higher is better), at workers=3"):
        assert heading in md.stdout
    assert re.search(r"\| fake-flip \| 15(\.0)?k \[[^|]*\] \| FAILED \| — \|", md.stdout)
    out = corobench("compare", "1", "2", "--format", "csv", results=sessions)
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    from corobench.export.csv import CSV_COLUMNS

    assert list(rows[0]) == CSV_COLUMNS
    good = [r for r in rows if r["program"] == "fake-good" and r["params"].startswith("workers=3")][0]
    assert good["significant"] == "true" and good["verdict"] == "worse" and float(good["ratio"]) == 0.5
    assert {r["verdict"] for r in rows if r["params"].startswith("workers=2")} == {"only in A"}
    assert [r["b_status"] for r in rows if r["program"] == "fake-flip" and r["params"].startswith("workers=3")] \
        == ["failed"]


@pytest.mark.parametrize("args,message", [
    (["1", "99"], "no session 99"),
    (["abc", "1"], "session must be 'latest' or a number"),
    (["1", "latest~9"], "no session latest~9: 4 session(s)"),
    (["1", "2", "--metric", "nope"], "unknown metric 'nope' (metrics of the compared scenarios: chain: speed, time_s"),
    (["1", "2", "--format", "xml"], "'xml' is not one of"),
    (["1"], "Missing argument 'B'"),
])
def test_bad_input_exits_2_with_one_line(sessions, args, message):
    proc = corobench("compare", *args, results=sessions)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr, proc.stderr
    assert proc.stdout == ""


def test_no_database(tmp_path):
    proc = corobench("compare", "1", "2", results=tmp_path / "none")
    assert proc.returncode == 2 and "no results database" in proc.stderr


def test_report_with_a_baseline(sessions, tmp_path):
    out = tmp_path / "report"
    proc = corobench("report", "2", "--baseline", "1", "--out", str(out), results=sessions)
    assert proc.returncode == 0, proc.stderr
    md = (out / "report.md").read_text()
    assert "## Comparison with session 1 (baseline)" in md
    assert re.search(r"\| fake-good \| 15(\.0)?k \[[^|]*\] \| 7(500|\.50k) \[[^|]*\] \| -50\.0% \| p=0\.0\d+ "
                     r"n=4\+4 \| \*\*worse\*\* \|", md)
    page = (out / "report.html").read_text()
    assert "Comparison with session 1" in page and "FAILED in B" in page
    bad = corobench("report", "2", "--baseline", "77", "--out", str(tmp_path / "r2"), results=sessions)
    assert bad.returncode == 2 and "no session 77" in bad.stderr


# --------------------------------------------------------------------------- the pure functions

def cell(program: str, values: list[float], status: str = "ok", tasks: int = 1) -> Cell:
    c = Cell("tasks", program, {"tasks": tasks, "sleep_ms": 0}, None, status, runs_ok=len(values),
             runs_total=len(values))
    if status == "ok":
        c.values = {"rss_mib": values}
        c.summaries = {"rss_mib": summarize(values)}
    return c


def test_significance_needs_enough_runs():
    assert not cmp.significance_possible(3, 3)  # the smallest p is 2/20 = 0.10
    assert cmp.significance_possible(4, 4)  # 2/70 = 0.029
    assert cmp.significance_possible(3, 5)  # 2/56 = 0.036
    assert not cmp.significance_possible(2, 20)  # stats.compare tests nothing below 3 a side


def test_overlapping_values_are_not_significant_and_direction_follows_the_metric():
    a = [cell("p", [10, 11, 12, 13, 14]), cell("q", [10, 11, 12, 13, 14], tasks=2)]
    b = [cell("p", [10.5, 11.5, 12.5, 13.5, 14.5]), cell("q", [5, 5.1, 5.2, 5.3, 5.4], tasks=2)]
    result = cmp.compare_cells(a, b)
    p, q = result.lines
    assert p.verdict == "~" and p.test.p_value > 0.05 and p.change == pytest.approx(12.5 / 12 - 1)
    assert q.verdict == "better" and q.significant  # peak RSS: lower is better
    assert result.totals[0].geomean == pytest.approx(((12.5 / 12) * (5.2 / 12)) ** 0.5)
    assert "1 of 2 compared cell(s) changed (significant" in cmp.summary_line(result)


def test_a_failed_side_is_never_a_number():
    result = cmp.compare_cells([cell("p", [1, 2, 3, 4])], [cell("p", [], status="failed")])
    [ln] = result.lines
    assert ln.verdict == "FAILED in B" and ln.test is None and cmp.change_text(ln) == "—"
    assert cmp.side_text(ln.b_cell, ln.metric) == "FAILED"
    assert result.totals[0].not_compared == 1 and result.totals[0].geomean is None


def test_at_three_runs_a_side_a_large_difference_is_too_few_runs_to_test_not_no_difference():
    # the 12x memory difference of the issue, ranges far apart: 3 + 3 runs cannot reach 5 %
    result = cmp.compare_cells([cell("p", [100, 101, 102])], [cell("p", [1200, 1230, 1260])])
    [ln] = result.lines
    assert ln.verdict == "too few runs to test" and "~" not in ln.verdict
    assert not ln.test.testable and ln.change == pytest.approx(1230 / 101 - 1)


def test_a_significant_change_below_the_minimum_is_not_called_worse():
    # +0.1 %, consistent over 10 runs a side: significant, and far below anything a reader cares about
    a = [1000.0 + i * 0.01 for i in range(10)]
    b = [v * 1.001 for v in a]
    result = cmp.compare_cells([cell("p", a)], [cell("p", b)])
    [ln] = result.lines
    assert ln.significant and ln.verdict == "≈" and result.totals[0].worse == 0
    strict = cmp.compare_cells([cell("p", a)], [cell("p", b)], min_change=0.0005)
    assert strict.lines[0].verdict == "worse"  # with a smaller minimum, it is a change
    big = cmp.compare_cells([cell("p", a)], [cell("p", [v * 1.05 for v in a])])
    assert big.lines[0].verdict == "worse"


def test_min_change_is_an_option_with_one_line_errors(sessions):
    ok = corobench("compare", "1", "3", "--min-change", "5%", results=sessions)
    assert ok.returncode == 0 and "at least 5%" in " ".join(ok.stdout.split())
    for bad in ("-1%", "100%", "two", "1e9"):
        proc = corobench("compare", "1", "3", "--min-change", bad, results=sessions)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, (bad, proc.stderr)


def test_sessions_of_two_machines_are_compared_only_when_asked_and_then_labelled(tmp_path):
    import json
    import sqlite3

    results = tmp_path / "results"
    for _ in range(2):
        assert corobench("run", "chain", "-w", "2", "-e", "3", "--reps", "3", "--impl", "fake-good", results=results,
                         impls=FAKES).returncode == 0
    db = sqlite3.connect(results / "corobench.sqlite")
    machine = json.loads(db.execute("SELECT machine FROM sessions WHERE id = 2").fetchone()[0])
    machine.update(cpu_model="Another CPU 9000", cores=64)
    db.execute("UPDATE sessions SET machine = ? WHERE id = 2", (json.dumps(machine),))
    db.commit()
    db.close()
    refused = corobench("compare", "1", "2", results=results)
    assert refused.returncode == 2 and "not comparable (different machines" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    asked = corobench("compare", "1", "2", "--across-machines", "--format", "json", results=results)
    assert asked.returncode == 0
    assert any("compared across machines" in w for w in json.loads(asked.stdout)["warnings"])
