import json
import sqlite3

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
    assert s["status"] == "finished" and json.loads(s["machine"]) == {"cores": 2}
    runs = store.runs(sid)
    assert [r["rep"] for r in runs] == [1, 2] and runs[1]["status"] == "failed"
    assert json.loads(runs[0]["params"]) == {"workers": 1, "events": 2}


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
