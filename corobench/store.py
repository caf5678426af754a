"""SQLite storage: one session row with the machine's metadata, one row per measurement.

Each row is committed the moment its run completes, so a crash, a timeout or Ctrl-C loses
nothing already finished. The schema is versioned (`PRAGMA user_version`): a database made by an
older corobench is upgraded in place on first open, nothing lost; one made by a newer corobench
is refused with a clear message. Scenario figures live in the open JSON column `runs.metrics`,
so a new scenario adds no column.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from corobench.errors import UsageError

SCHEMA_VERSION = 1

# The schema as version 0 (the first corobench) made it; migrations take it from there.
SCHEMA_V0 = """
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    status TEXT NOT NULL DEFAULT 'running',
    command TEXT NOT NULL,
    git_commit TEXT,
    machine TEXT NOT NULL,
    toolchains TEXT NOT NULL,
    settings TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    started_at TEXT NOT NULL,
    program TEXT NOT NULL,
    impl_id TEXT NOT NULL,
    variant TEXT,
    scenario TEXT NOT NULL,
    params TEXT NOT NULL,
    params_key TEXT NOT NULL,
    threads INTEGER,
    cpus TEXT,
    rep INTEGER NOT NULL,
    status TEXT NOT NULL,
    failure_kind TEXT,
    reason TEXT,
    argv TEXT NOT NULL,
    exit_code INTEGER,
    term_signal INTEGER,
    wall_ns INTEGER,
    elapsed_ns INTEGER,
    spawn_ns INTEGER,
    user_s REAL,
    sys_s REAL,
    max_rss_kb INTEGER,
    cgroup_peak_bytes INTEGER,
    other_cpu_fraction REAL,
    loadavg REAL,
    reported_threads INTEGER,
    result TEXT,
    stderr_tail TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_session ON runs(session_id);
"""


def _v0_to_v1(db: sqlite3.Connection) -> None:
    """Scenario figures move to an open JSON column (`spawn_ns` first); runs keep their cwd."""
    db.execute("ALTER TABLE runs ADD COLUMN metrics TEXT")  # JSON: the scenario's per-run figures
    db.execute("ALTER TABLE runs ADD COLUMN cwd TEXT")
    rows = db.execute("SELECT id, spawn_ns FROM runs WHERE spawn_ns IS NOT NULL").fetchall()
    db.executemany("UPDATE runs SET metrics = ? WHERE id = ?",
                   [(json.dumps({"spawn_ns": spawn}), rid) for rid, spawn in rows])
    db.execute("ALTER TABLE runs DROP COLUMN spawn_ns")


# MIGRATIONS[v] takes a database from version v to v + 1.
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_v0_to_v1]
assert len(MIGRATIONS) == SCHEMA_VERSION


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
    status: str  # ok | failed | skipped
    argv: list[str]
    cwd: str | None = None
    failure_kind: str | None = None
    reason: str | None = None
    exit_code: int | None = None
    term_signal: int | None = None
    wall_ns: int | None = None
    elapsed_ns: int | None = None  # the program's own timed region (batch), or the load window (server)
    user_s: float | None = None
    sys_s: float | None = None
    max_rss_kb: int | None = None
    cgroup_peak_bytes: int | None = None
    other_cpu_fraction: float | None = None
    loadavg: float | None = None
    reported_threads: int | None = None
    result: dict | None = None  # the program's JSON (for a server: its lines and the client's)
    stderr_tail: str | None = None
    metrics: dict = field(default_factory=dict)  # the scenario's own per-run figures


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


class Store:
    def __init__(self, path: Path):
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path, timeout=30)
            self.db.execute("PRAGMA journal_mode=WAL")
            self._upgrade()
        except sqlite3.DatabaseError as exc:
            raise UsageError(f"cannot use results database {path}: {exc}") from None
        except OSError as exc:
            raise UsageError(f"cannot use results database {path}: {exc.strerror or exc}") from None
        self.db.row_factory = sqlite3.Row

    def _upgrade(self) -> None:
        """Create or migrate the schema to SCHEMA_VERSION, in one transaction."""
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")  # one upgrader at a time, even across processes
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise UsageError(
                    f"results database {self.path} was written by a newer corobench (schema {version}; "
                    f"this one reads up to {SCHEMA_VERSION}): upgrade corobench or use another --results folder")
            fresh = self.db.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'runs'").fetchone()[0] == 0
            if fresh:
                for statement in SCHEMA_V0.split(";"):
                    if statement.strip():
                        self.db.execute(statement)
            for step in MIGRATIONS[version:]:
                step(self.db)
            if version != SCHEMA_VERSION:
                self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

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
        values["metrics"] = json.dumps(row.metrics) if row.metrics else None
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
        if not which.isascii() or not which.isdigit():
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
