"""SQLite storage: one session row with the machine's metadata, one row per measurement.

Each row is committed the moment its run completes, so a crash, a timeout or Ctrl-C loses
nothing already finished.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from corobench.errors import UsageError

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    status TEXT NOT NULL DEFAULT 'running',     -- running | finished | interrupted
    command TEXT NOT NULL,
    git_commit TEXT,
    machine TEXT NOT NULL,                      -- JSON: CPU, cores, memory, kernel, OS, limits
    toolchains TEXT NOT NULL,                   -- JSON: implementation id -> version line
    settings TEXT NOT NULL                      -- JSON: reps, timeout, cpus, suite
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    started_at TEXT NOT NULL,
    program TEXT NOT NULL,                      -- implementation id, or id:variant
    impl_id TEXT NOT NULL,
    variant TEXT,
    scenario TEXT NOT NULL,
    params TEXT NOT NULL,                       -- JSON, the scenario's parameters
    params_key TEXT NOT NULL,                   -- canonical form of params, for grouping
    threads INTEGER,                            -- --threads as asked (NULL: runtime default)
    cpus TEXT,                                  -- --cpus as asked
    rep INTEGER NOT NULL,                       -- 0 = verification run, 1.. = measured
    status TEXT NOT NULL,                       -- ok | failed | skipped
    failure_kind TEXT,
    reason TEXT,
    argv TEXT NOT NULL,
    exit_code INTEGER,
    term_signal INTEGER,
    wall_ns INTEGER,
    elapsed_ns INTEGER,                         -- the program's own timed region
    spawn_ns INTEGER,
    user_s REAL,
    sys_s REAL,
    max_rss_kb INTEGER,
    cgroup_peak_bytes INTEGER,
    other_cpu_fraction REAL,
    loadavg REAL,
    reported_threads INTEGER,
    result TEXT,                                -- the program's JSON line
    stderr_tail TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_session ON runs(session_id);
"""


def params_key(params: dict) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


@dataclass
class RunRow:
    program: str
    impl_id: str
    variant: str | None
    scenario: str
    params: dict
    threads: int | None
    cpus: str | None
    rep: int
    status: str
    argv: list[str]
    failure_kind: str | None = None
    reason: str | None = None
    exit_code: int | None = None
    term_signal: int | None = None
    wall_ns: int | None = None
    elapsed_ns: int | None = None
    spawn_ns: int | None = None
    user_s: float | None = None
    sys_s: float | None = None
    max_rss_kb: int | None = None
    cgroup_peak_bytes: int | None = None
    other_cpu_fraction: float | None = None
    loadavg: float | None = None
    reported_threads: int | None = None
    result: dict | None = None
    stderr_tail: str | None = None


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


class Store:
    def __init__(self, path: Path):
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.executescript(SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise UsageError(f"cannot use results database {path}: {exc}") from None
        self.db.row_factory = sqlite3.Row

    def close(self) -> None:
        self.db.close()

    def begin_session(self, command: str, git_commit: str | None, machine: dict,
                      toolchains: dict, settings: dict) -> int:
        cur = self.db.execute(
            "INSERT INTO sessions (started_at, command, git_commit, machine, toolchains, settings)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (_now(), command, git_commit, json.dumps(machine), json.dumps(toolchains), json.dumps(settings)),
        )
        self.db.commit()
        return int(cur.lastrowid)

    def end_session(self, session_id: int, status: str) -> None:
        self.db.execute("UPDATE sessions SET finished_at = ?, status = ? WHERE id = ?",
                        (_now(), status, session_id))
        self.db.commit()

    def add_run(self, session_id: int, row: RunRow) -> int:
        values = dict(row.__dict__)
        values["params_key"] = params_key(row.params)
        values["params"] = json.dumps(row.params)
        values["argv"] = json.dumps(row.argv)
        values["result"] = json.dumps(row.result) if row.result is not None else None
        values["session_id"] = session_id
        values["started_at"] = _now()
        cols = ", ".join(values)
        marks = ", ".join(f":{k}" for k in values)
        cur = self.db.execute(f"INSERT INTO runs ({cols}) VALUES ({marks})", values)
        self.db.commit()  # each measurement is safe the moment it completes
        return int(cur.lastrowid)

    def session(self, which: str) -> sqlite3.Row:
        if which == "latest":
            row = self.db.execute("SELECT * FROM sessions ORDER BY id DESC LIMIT 1").fetchone()
            if row is None:
                raise UsageError(f"no sessions stored in {self.path}")
            return row
        if not which.isdigit():
            raise UsageError(f"session must be 'latest' or a number, not '{which}'")
        row = self.db.execute("SELECT * FROM sessions WHERE id = ?", (int(which),)).fetchone()
        if row is None:
            raise UsageError(f"no session {which} in {self.path}")
        return row

    def sessions(self) -> list[sqlite3.Row]:
        return self.db.execute(
            "SELECT s.*, (SELECT COUNT(*) FROM runs r WHERE r.session_id = s.id) AS n_runs"
            " FROM sessions s ORDER BY id").fetchall()

    def runs(self, session_id: int) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM runs WHERE session_id = ? ORDER BY id", (session_id,)).fetchall()
