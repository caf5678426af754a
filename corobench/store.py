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
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from urllib.parse import quote

from corobench.errors import StoreError, UsageError

SCHEMA_VERSION = 4

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


def _v1_to_v2(db: sqlite3.Connection) -> None:
    """Who runs a session (to tell an abandoned one), and what it has running (to clean up after it)."""
    db.execute("ALTER TABLE sessions ADD COLUMN harness_pid INTEGER")
    db.execute("ALTER TABLE sessions ADD COLUMN harness_identity TEXT")  # boot id and process start time
    db.execute("CREATE TABLE live (session_id INTEGER NOT NULL REFERENCES sessions(id), what TEXT NOT NULL,"
               " ref TEXT NOT NULL, identity TEXT)")  # what: 'pgid' or 'cgroup'


def _v2_to_v3(db: sqlite3.Connection) -> None:
    """Crash bookkeeping moves out of the results (bookkeeping.py): a session keeps only the token
    that names its harness's bookkeeping folder; the pid columns stay, unused, for older sessions."""
    db.execute("ALTER TABLE sessions ADD COLUMN harness_token TEXT")
    db.execute("DROP TABLE live")


def _v3_to_v4(db: sqlite3.Connection) -> None:
    """Sessions get a name that is theirs everywhere (a bundle imported into another database keeps
    it, and importing it twice finds it): a random uid, given to the sessions already stored too."""
    db.execute("ALTER TABLE sessions ADD COLUMN uid TEXT")
    for (sid,) in db.execute("SELECT id FROM sessions").fetchall():
        db.execute("UPDATE sessions SET uid = ? WHERE id = ?", (uuid.uuid4().hex, sid))
    db.execute("CREATE UNIQUE INDEX sessions_by_uid ON sessions(uid)")


# MIGRATIONS[v] takes a database from version v to v + 1.
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_v0_to_v1, _v1_to_v2, _v2_to_v3, _v3_to_v4]
# What a database of SCHEMA_VERSION must have, checked on open: a file that lacks it is not ours.
REQUIRED = {"sessions": {"id", "status", "command", "machine", "toolchains", "settings", "harness_token", "uid"},
            "runs": {"id", "session_id", "program", "scenario", "params", "params_key", "rep", "status", "metrics"}}
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
    # set once stored
    id: int | None = None
    session_id: int | None = None
    started_at: str | None = None

    @property
    def params_key(self) -> str:
        return params_key(self.params)


RUN_COLUMNS = tuple(f for f in RunRow.__dataclass_fields__ if f not in ("id", "session_id", "started_at"))


@dataclass
class SessionRecord:
    id: int
    started_at: str
    finished_at: str | None
    status: str  # running | finished | interrupted | store-failed | crashed | abandoned
    command: str
    git_commit: str | None
    machine: dict
    toolchains: dict
    settings: dict
    harness_token: str | None = None
    n_runs: int | None = None
    uid: str | None = None  # the session's name everywhere (bundles keep it)


BUSY_TIMEOUT_S = 30


def _busy(exc: sqlite3.Error) -> bool:
    """Locked by another connection (SQLITE_BUSY/LOCKED and their extended codes), not damaged."""
    return getattr(exc, "sqlite_errorname", "").startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def _session(row: sqlite3.Row) -> SessionRecord:
    keys = row.keys()
    return SessionRecord(
        id=row["id"], started_at=row["started_at"], finished_at=row["finished_at"], status=row["status"],
        command=row["command"], git_commit=row["git_commit"], machine=_json(row["machine"]),
        toolchains=_json(row["toolchains"]), settings=_json(row["settings"]),
        harness_token=row["harness_token"] if "harness_token" in keys else None,
        n_runs=row["n_runs"] if "n_runs" in keys else None, uid=row["uid"] if "uid" in keys else None)


def _json(text: str | None, default=None):
    if text is None:
        return {} if default is None else default
    try:
        return json.loads(text)
    except ValueError:
        return {} if default is None else default


def _run(row: sqlite3.Row, with_result: bool = True) -> RunRow:
    values = {k: row[k] for k in RUN_COLUMNS}
    values["params"] = _json(row["params"])
    values["argv"] = _json(row["argv"], [])
    values["result"] = _json(row["result"]) if row["result"] is not None and with_result else None
    values["metrics"] = _json(row["metrics"]) if row["metrics"] is not None else {}
    return RunRow(**values, id=row["id"], session_id=row["session_id"], started_at=row["started_at"])


def storable(text: str) -> str:
    """Text SQLite can store: a command line may hold bytes that are not UTF-8 (surrogate escapes)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class Store:
    """The results database. Reads that meet a damaged file raise UsageError (one line, the path);
    writes that fail (disk full, I/O error) raise StoreError; nothing here overwrites a damaged file,
    follows a link planted at the database's name or its folder, or adds tables to a file that is
    not a corobench database."""

    def __init__(self, path: Path, *, for_writing: bool = False):
        self.path = path
        try:
            refuse_links(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            refuse_links(path)  # again: the folder may have been made just now
            self.db = sqlite3.connect(f"file:{quote(str(path))}?nofollow=1", timeout=BUSY_TIMEOUT_S, uri=True)
            self._check_intact()  # reads every page once: milliseconds for a results database
            self._check_ours()  # before anything writes: another application's file stays as it is
            self._use_wal()
            self._upgrade()
        except sqlite3.DatabaseError as exc:
            raise UsageError(self._damaged(exc)) from None
        except OSError as exc:
            raise UsageError(f"cannot use results database {path}: {exc.strerror or exc}") from None
        self.db.row_factory = sqlite3.Row

    def _use_wal(self) -> None:
        """Switch to WAL, waiting out a concurrent opener. Leaving rollback mode needs an exclusive
        lock, and SQLite answers SQLITE_BUSY at once instead of calling the busy handler when two
        processes create the same fresh database, so the wait is ours."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                self.db.execute("PRAGMA journal_mode=WAL").fetchall()
                return
            except sqlite3.OperationalError as exc:
                if not _busy(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def _damaged(self, exc: Exception) -> str:
        if _busy(exc):
            return (f"results database {self.path} stayed locked by another process for over "
                    f"{BUSY_TIMEOUT_S} s; try again when it has finished, or use another --results folder")
        if getattr(exc, "sqlite_errorname", "") in ("SQLITE_READONLY", "SQLITE_CANTOPEN") or "readonly" in str(exc):
            return (f"results database {self.path} cannot be opened for writing ({exc}): check its permissions, "
                    "or use another --results folder")
        return (f"results database {self.path} is damaged or not a corobench database ({exc}); "
                "it is left as it is: move it away, or use another --results folder")

    def _check_intact(self) -> None:
        """A damaged file is reported before anything reads half of it or writes to it."""
        problem = self.db.execute("PRAGMA quick_check(1)").fetchone()[0]
        if problem != "ok":
            raise sqlite3.DatabaseError(problem)

    def _check_ours(self) -> None:
        tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and not {"runs", "sessions"} <= tables:
            raise sqlite3.DatabaseError(f"it has tables {', '.join(sorted(tables)[:5])} but not corobench's")

    def _upgrade(self) -> None:
        """Create or migrate the schema to SCHEMA_VERSION, in one transaction."""
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")  # one upgrader at a time, even across processes
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise UsageError(
                    f"results database {self.path} was written by a newer corobench (schema {version}; "
                    f"this one reads up to {SCHEMA_VERSION}): upgrade corobench or use another --results folder")
            tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not tables:
                for statement in SCHEMA_V0.split(";"):
                    if statement.strip():
                        self.db.execute(statement)
                version = 0
            elif not {"runs", "sessions"} <= tables:
                raise sqlite3.DatabaseError(f"it has tables {', '.join(sorted(tables)[:5])} but not corobench's")
            for step in MIGRATIONS[version:]:
                step(self.db)
            if version != SCHEMA_VERSION:
                self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            for table, needed in REQUIRED.items():
                have = {r[1] for r in self.db.execute(f"PRAGMA table_info({table})")}
                if not needed <= have:
                    raise sqlite3.DatabaseError(f"table {table} lacks {', '.join(sorted(needed - have))}")

    def close(self) -> None:
        try:
            self.db.close()
        except sqlite3.Error:
            pass

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---------------------------------------------------------------- writes

    def _write(self, sql: str, values=()) -> sqlite3.Cursor:
        try:
            cur = self.db.execute(sql, values)
            self.db.commit()  # each write is safe the moment it returns
            return cur
        except sqlite3.Error as exc:
            try:
                self.db.rollback()
            except sqlite3.Error:
                pass
            raise StoreError(f"cannot write to results database {self.path}: {exc}") from None

    def begin_session(self, command: str, git_commit: str | None, machine: dict, toolchains: dict, settings: dict,
                      harness_token: str | None = None) -> int:
        cur = self._write(
            "INSERT INTO sessions (started_at, command, git_commit, machine, toolchains, settings, harness_token, uid)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (_now(), storable(command), git_commit, _dumps(machine), _dumps(toolchains), _dumps(settings),
             harness_token, uuid.uuid4().hex),
        )
        return int(cur.lastrowid)

    def end_session(self, session_id: int, status: str) -> None:
        self._write("UPDATE sessions SET finished_at = ?, status = ? WHERE id = ?", (_now(), status, session_id))

    def add_run(self, session_id: int, row: RunRow) -> int:
        values = {k: getattr(row, k) for k in RUN_COLUMNS}
        values["params_key"] = params_key(row.params)
        values["params"] = _dumps(row.params)
        values["argv"] = _dumps(row.argv)
        values["result"] = _dumps(row.result) if row.result is not None else None
        values["metrics"] = _dumps(row.metrics) if row.metrics else None
        for key in ("reason", "stderr_tail", "cwd"):
            if values[key] is not None:
                values[key] = storable(values[key])
        values["session_id"] = session_id
        values["started_at"] = row.started_at or _now()
        cols = ", ".join(values)
        marks = ", ".join(f":{k}" for k in values)
        return int(self._write(f"INSERT INTO runs ({cols}) VALUES ({marks})", values).lastrowid)

    # ---------------------------------------------------------------- reads

    def _read(self, sql: str, values=()) -> list[sqlite3.Row]:
        try:
            return self.db.execute(sql, values).fetchall()
        except sqlite3.DatabaseError as exc:
            raise UsageError(self._damaged(exc)) from None

    def session(self, which: str) -> SessionRecord:
        if which == "latest":
            rows = self._read("SELECT * FROM sessions ORDER BY id DESC LIMIT 1")
            if not rows:
                raise UsageError(f"no sessions stored in {self.path}")
            return _session(rows[0])
        if not which.isascii() or not which.isdigit() or len(which) > 18:
            raise UsageError(f"session must be 'latest' or a number, not '{which[:30]}'")
        rows = self._read("SELECT * FROM sessions WHERE id = ?", (int(which),))
        if not rows:
            raise UsageError(f"no session {which} in {self.path}")
        return _session(rows[0])

    def session_status(self, session_id: int) -> str | None:
        rows = self._read("SELECT status FROM sessions WHERE id = ?", (session_id,))
        return rows[0]["status"] if rows else None

    def sessions(self) -> list[SessionRecord]:
        return [_session(r) for r in self._read(
            "SELECT s.*, (SELECT COUNT(*) FROM runs r WHERE r.session_id = s.id) AS n_runs"
            " FROM sessions s ORDER BY id")]

    def runs(self, session_id: int, with_result: bool = True) -> list[RunRow]:
        """A session's runs; without `result` (the programs' own output, the client's histograms) when
        the caller only needs the figures: decoding it is most of the cost of a large session."""
        return [_run(r, with_result)
                for r in self._read("SELECT * FROM runs WHERE session_id = ? ORDER BY id", (session_id,))]

    def run(self, run_id: int) -> RunRow:
        rows = self._read("SELECT * FROM runs WHERE id = ?", (run_id,))
        if not rows:
            raise UsageError(f"no run {run_id} in {self.path} (`corobench show session N` lists a session's runs)")
        return _run(rows[0])

    def walls(self) -> list[tuple[str, str, str, int | None, int]]:
        """(program, scenario, params_key, threads, wall_ns) of every verified measured run: what the
        plan's estimates come from."""
        return [tuple(r) for r in self._read(
            "SELECT program, scenario, params_key, threads, wall_ns FROM runs"
            " WHERE rep > 0 AND status = 'ok' AND wall_ns IS NOT NULL")]

    def running_sessions(self) -> list[SessionRecord]:
        return [_session(r) for r in self._read("SELECT * FROM sessions WHERE status = 'running' ORDER BY id")]


def _dumps(value) -> str:
    return storable(json.dumps(value))


def refuse_links(path: Path) -> None:
    """A link planted at the database's name (or at its folder) is refused, not followed: it could
    point at another application's database or outside the results folder."""
    for p in (path, path.parent):
        if p.is_symlink():
            raise UsageError(f"{p} is a symbolic link: corobench does not follow links to its results "
                             "(use the real folder with --results)")


# --------------------------------------------------------------------------- bundles (export/import)

def session_by_uid(store: Store, uid: str) -> SessionRecord | None:
    rows = store._read("SELECT * FROM sessions WHERE uid = ?", (uid,))
    return _session(rows[0]) if rows else None


def add_imported_session(store: Store, session: SessionRecord, runs: list[RunRow]) -> int:
    """A session from a bundle, with its runs, in one transaction: under its own uid, status and
    times, as it was stored where it ran. The caller checks first that the uid is new."""
    try:
        with store.db:
            cur = store.db.execute(
                "INSERT INTO sessions (started_at, finished_at, status, command, git_commit, machine, toolchains,"
                " settings, uid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (session.started_at, session.finished_at, session.status, storable(session.command),
                 session.git_commit, _dumps(session.machine), _dumps(session.toolchains), _dumps(session.settings),
                 session.uid))
            new_id = int(cur.lastrowid)
            for row in runs:
                values = {k: getattr(row, k) for k in RUN_COLUMNS}
                values.update(params_key=params_key(row.params), params=_dumps(row.params), argv=_dumps(row.argv),
                              result=_dumps(row.result) if row.result is not None else None,
                              metrics=_dumps(row.metrics) if row.metrics else None, session_id=new_id,
                              started_at=row.started_at or session.started_at)
                cols = ", ".join(values)
                store.db.execute(f"INSERT INTO runs ({cols}) VALUES ({', '.join(':' + k for k in values)})", values)
        return new_id
    except sqlite3.Error as exc:
        raise StoreError(f"cannot write to results database {store.path}: {exc}") from None
