"""The time left a run prints: per scenario, so that a session's short batch runs do not make its
server runs (with their start, warm-up and stop) look as short."""

from corobench.plan import Plan, PlannedRun, Tracker
from corobench.store import RunRow


def planned(scenario: str, rep: int, estimate: float | None) -> PlannedRun:
    return PlannedRun("p", scenario, {"n": 1}, None, rep, estimate, estimate is not None)


def row(scenario: str, rep: int) -> RunRow:
    return RunRow(program="p", impl_id="p", variant=None, scenario=scenario, params={"n": 1}, threads=None,
                  cpus=None, rep=rep, status="ok", argv=["p"])


def test_a_scenario_without_estimates_is_estimated_from_its_own_runs():
    runs = [planned("chain", rep, 0.2) for rep in (1, 2, 3)] + [planned("echo", rep, None) for rep in (1, 2, 3, 4)]
    tracker = Tracker(Plan(runs))
    tracker.finished(row("chain", 1), 0.2)
    tracker.finished(row("chain", 2), 0.2)
    tracker.finished(row("chain", 3), 0.2)
    tracker.finished(row("echo", 1), 6.0)
    # three echo runs left at 6 s each, not at the 0.2 s of the session's median run
    assert abs(tracker.left_s() - 18.0) < 1e-9


def test_each_scenario_is_scaled_by_its_own_ratio():
    runs = [planned("chain", 1, 1.0), planned("chain", 2, 1.0), planned("http", 1, 5.0), planned("http", 2, 5.0),
            planned("http", 3, 5.0)]
    tracker = Tracker(Plan(runs))
    tracker.finished(row("chain", 1), 0.5)  # chain runs take half their estimate
    tracker.finished(row("http", 1), 7.5)   # http runs half as long again
    assert abs(tracker.left_s() - (0.5 + 2 * 7.5)) < 1e-9
    assert tracker.prefix() == "[run 2 of 5]"


def test_verification_runs_do_not_scale_the_measured_ones():
    runs = [planned("chain", 0, 2.0), planned("chain", 1, 1.0), planned("chain", 2, 1.0)]
    tracker = Tracker(Plan(runs))
    tracker.finished(row("chain", 0), 0.01)  # a tiny verification run, far under its 2 s guess
    assert abs(tracker.left_s() - 2.0) < 1e-9


def test_the_plan_counts_each_verification_run_once_as_the_runner_makes_it(results, tmp_path):
    """Two sizes of one scenario share their tiny verification size: the runner verifies once, and
    the quick suite's progress read "run 892 of 906" at its end when the plan counted it twice."""
    import re

    from conftest import FAKES, corobench, db_rows

    suite = tmp_path / "two-sizes.toml"
    suite.write_text('name = "two-sizes"\nreps = 2\n[[benchmark]]\nscenario = "tasks"\ntasks = [2, 4]\n'
                     'sleep_ms = 0\n')
    proc = corobench("run", "--suite", str(suite), "--impl", "fake-good", results=results, impls=FAKES)
    assert proc.returncode == 0, proc.stderr
    progress = re.findall(r"\[run (\d+) of (\d+)\]", proc.stdout + proc.stderr)
    stored = db_rows(results, "SELECT count(*) FROM runs")[0][0]
    assert stored == 5  # one verification run, 2 sizes x 2 repetitions
    assert progress[-1] == (str(stored), str(stored)), progress
