import json
import sqlite3
import threading
from pathlib import Path

import pytest

from corobench.errors import UsageError
from corobench.store import RunRow, Store


def row(rep: int, status: str = "ok") -> RunRow:
    return RunRow(program="go", impl_id="go", variant=None, scenario="chain",
                  params={"workers": 1, "events": 2}, threads=None, cpus=None, rep=rep, status=status,
                  argv=["x"], elapsed_ns=1000 * rep)


def test_rows_are_committed_as_they_arrive(tmp_path):
    db = tmp_path / "r.sqlite"
    store = Store(db)
    sid = store.begin_session("corobench run", "abc", {"cores": 2}, {"go": "go1.26"}, {"reps": 2})
    store.add_run(sid, row(1))
    # another connection sees the row before the session ends: nothing waits for a final commit
    other = sqlite3.connect(db)
    assert other.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1
    store.add_run(sid, row(2, "failed"))
    assert other.execute("SELECT status FROM sessions").fetchone()[0] == "running"
    store.end_session(sid, "finished")
    s = store.session("latest")
    assert s.status == "finished" and s.machine == {"cores": 2}
    runs = store.runs(sid)
    assert [r.rep for r in runs] == [1, 2] and runs[1].status == "failed"
    assert runs[0].params == {"workers": 1, "events": 2} and runs[0].id is not None and runs[0].session_id == sid


def test_session_lookup_errors(tmp_path):
    store = Store(tmp_path / "r.sqlite")
    with pytest.raises(UsageError, match="no sessions"):
        store.session("latest")
    with pytest.raises(UsageError, match="no session 7"):
        store.session("7")
    with pytest.raises(UsageError, match="'latest' or a number"):
        store.session("yesterday")


def test_unusable_database_path_is_a_usage_error(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="cannot use results database"):
        Store(tmp_path / "file" / "r.sqlite")


FIXTURE_V0 = Path(__file__).parent / "fixtures" / "store" / "schema-v0.sqlite"


def test_a_database_of_the_first_schema_is_upgraded_in_place_with_every_row(tmp_path):
    import shutil

    from corobench.results import build_cells
    from corobench.store import SCHEMA_VERSION

    db = tmp_path / "corobench.sqlite"
    shutil.copy(FIXTURE_V0, db)
    old = sqlite3.connect(db)
    before = [tuple(r) for r in old.execute("SELECT id, program, scenario, rep, status, reason, elapsed_ns, spawn_ns"
                                            " FROM runs ORDER BY id")]
    sessions_before = old.execute("SELECT id, status, command FROM sessions ORDER BY id").fetchall()
    old.close()
    assert len(before) == 10 and sum(1 for r in before if r[7] is not None) == 3

    store = Store(db)
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    after = store.db.execute("SELECT id, program, scenario, rep, status, reason, elapsed_ns, metrics"
                             " FROM runs ORDER BY id").fetchall()
    assert [tuple(r)[:7] for r in after] == [r[:7] for r in before]
    # spawn_ns moved into the metrics column, value for value
    assert [json.loads(r["metrics"])["spawn_ns"] if r["metrics"] else None for r in after] == [r[7] for r in before]
    assert [tuple(r) for r in store.db.execute("SELECT id, status, command FROM sessions ORDER BY id")] == \
        [tuple(r) for r in sessions_before]
    # and the reports read the upgraded rows: the tasks cells have their spawn figure
    tasks = [c for c in build_cells(store.runs(2)) if c.scenario == "tasks"]
    assert tasks and tasks[0].summaries["spawn_s"].median == pytest.approx(1e-6)
    store.close()
    # opening again is a no-op
    Store(db).close()


def test_a_database_of_a_newer_corobench_is_refused_with_one_line(tmp_path):
    db = tmp_path / "corobench.sqlite"
    Store(db).close()
    raw = sqlite3.connect(db)
    raw.execute("PRAGMA user_version = 99")
    raw.commit()
    raw.close()
    with pytest.raises(UsageError, match="written by a newer corobench"):
        Store(db)


def test_scenario_metrics_round_trip(tmp_path):
    store = Store(tmp_path / "r.sqlite")
    sid = store.begin_session("c", None, {}, {}, {})
    r = row(1)
    r.metrics = {"spawn_ns": 5, "latency_us": {"p99": 1.5}}
    store.add_run(sid, r)
    (stored,) = store.runs(sid)
    assert stored.metrics == {"spawn_ns": 5, "latency_us": {"p99": 1.5}}


def test_opening_waits_for_another_process_creating_the_same_database(tmp_path):
    # Another process in a write transaction on a fresh (rollback-mode) file made the switch to WAL
    # fail at once with "database is locked" (SQLite skips the busy handler there), and that was
    # reported as a damaged database: two sessions started together on a new folder failed in CI.
    path = tmp_path / "corobench.sqlite"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # holds the reserved lock until COMMIT
    timer = threading.Timer(0.5, lambda: other.execute("COMMIT"))
    timer.start()
    try:
        with Store(path, for_writing=True) as store:
            assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        timer.join()
        other.close()


def test_a_database_locked_for_too_long_is_reported_as_locked_not_damaged(tmp_path, monkeypatch):
    import corobench.store as store_module
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_S", 0.2)
    path = tmp_path / "corobench.sqlite"
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(UsageError, match="locked by another process") as caught:
            Store(path, for_writing=True)
        assert "damaged" not in str(caught.value)
    finally:
        other.close()


def test_a_file_of_another_application_is_refused_untouched(tmp_path):
    path = tmp_path / "corobench.sqlite"
    other = sqlite3.connect(path)
    other.execute("CREATE TABLE contacts (name TEXT)")
    other.commit()
    other.close()
    before = path.read_bytes()
    with pytest.raises(UsageError, match="not a corobench database"):
        Store(path)
    assert path.read_bytes() == before


def test_a_database_missing_a_table_is_refused_not_repaired(tmp_path):
    path = tmp_path / "corobench.sqlite"
    Store(path).close()
    raw = sqlite3.connect(path)
    raw.execute("DROP TABLE runs")
    raw.commit()
    raw.close()
    with pytest.raises(UsageError, match="not a corobench database"):
        Store(path)
    raw = sqlite3.connect(path)
    assert raw.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 0  # no session was written into it


@pytest.mark.parametrize("where", ["file", "folder"])
def test_links_at_the_database_or_its_folder_are_refused(tmp_path, where):
    target = tmp_path / "elsewhere"
    target.mkdir()
    if where == "file":
        folder = tmp_path / "results"
        folder.mkdir()
        (folder / "corobench.sqlite").symlink_to(target / "db.sqlite")  # dangling: would be created there
    else:
        folder = tmp_path / "results"
        folder.symlink_to(target)
    with pytest.raises(UsageError, match="symbolic link"):
        Store(folder / "corobench.sqlite")
    assert list(target.iterdir()) == []

