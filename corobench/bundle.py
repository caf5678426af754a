"""Bundles: stored sessions as one portable file, and back into any results database.

A bundle is gzip-compressed JSON lines (docs/bundles.md documents every field): a header line,
then per session one `session` line followed by its `run` lines, then an `end` line with the
counts. Both directions stream line by line: memory holds one session's runs at a time (the store
reads and writes a session in one piece), never the whole bundle.

Import reads a bundle twice: first to check every line (a truncated, damaged, newer or hostile
bundle is refused with its line number before anything is written), then to store each session
whose uid the database does not have yet, one transaction per session, having compared its lines
with what the check read (SHA-256); a session already present is skipped, so importing a bundle
twice changes nothing. Bundles concatenated with `cat`
are one valid bundle (gzip members and headers follow one another).
"""

from __future__ import annotations

import gzip
import json
import math
import re
import time
import zlib
from dataclasses import dataclass, field
from datetime import datetime
from hashlib import sha256
from pathlib import Path
from typing import Any, Callable, Iterator

from corobench import __version__
from corobench.errors import StoreError, UsageError
from corobench.files import replacing
from corobench.scenarios import SCENARIOS, RunView
from corobench.store import RUN_COLUMNS, RunRow, SessionRecord, Store, add_imported_session, session_by_uid, storable

FORMAT = "corobench-bundle"
VERSION = 1
MAX_LINE_BYTES = 8 * 2**20  # a run line is far under this: a program's output line is at most 1 MiB, stderr 16 KiB
INT64 = 2**63
UID = re.compile(r"[0-9A-Za-z][0-9A-Za-z._-]{0,63}")
ENDED = ("finished", "interrupted", "store-failed", "crashed", "abandoned")  # a running session is not exported
RUN_STATUSES = ("ok", "failed", "skipped")
COMPRESSLEVEL = 1  # JSON lines compress 3x at level 1; level 6 takes 2.3x the time for 15 % less


class BundleError(Exception):
    """A line of a bundle that cannot be imported; the message names the line."""


# --------------------------------------------------------------------------- field checks

@dataclass(frozen=True)
class Field:
    """What a field may hold: JSON types (as Python types), whether null, whether required, and a
    further check of the value (True: fine). Data, not code per field: a bundle has millions."""

    types: tuple[type, ...]
    must_be: str
    nullable: bool = False
    required: bool = False
    check: Callable[[Any], bool] | None = None


def _is_int(v: Any) -> bool:
    return type(v) is int and -INT64 <= v < INT64


def _time(v: str) -> bool:
    try:
        datetime.fromisoformat(v)
        return True
    except ValueError:
        return False


def _field(kind: str, nullable: bool = False, required: bool = False, choices: tuple[str, ...] = ()) -> Field:
    if choices:
        return Field((str,), "one of " + ", ".join(choices), nullable, required, lambda v: v in choices)
    return {
        "string": Field((str,), "a string", nullable, required),
        "int": Field((int,), "a 64-bit integer", nullable, required, lambda v: -INT64 <= v < INT64),
        "count": Field((int,), "a whole number (0 or more)", nullable, required, lambda v: 0 <= v < INT64),
        "number": Field((int, float), "a number", nullable, required, lambda v: -INT64 <= v < INT64),
        "object": Field((dict,), "an object", nullable, required),
        "strings": Field((list,), "a list of strings", nullable, required,
                         lambda v: all(type(a) is str for a in v)),
        "text map": Field((dict,), "an object of strings", nullable, required,
                          lambda v: all(type(a) is str for a in v.values())),
        "time": Field((str,), "an ISO 8601 time, e.g. 2026-11-21T10:00:00+0000", nullable, required, _time),
        "uid": Field((str,), "a uid (1-64 letters, digits, '.', '_' or '-')", nullable, required,
                     lambda v: UID.fullmatch(v) is not None),
    }[kind]


SESSION_FIELDS: dict[str, Field] = {
    "type": _field("", required=True, choices=("session",)),
    "uid": _field("uid", required=True),
    "id": _field("int", nullable=True),
    "started_at": _field("time", required=True),
    "finished_at": _field("time", nullable=True),
    "status": _field("", required=True, choices=ENDED),
    "command": _field("string", required=True),
    "git_commit": _field("string", nullable=True),
    "machine": _field("object", required=True),
    "toolchains": _field("text map", required=True),
    "settings": _field("object", required=True),
    "runs": _field("count", required=True),
}
RUN_KINDS = {
    "program": "string", "impl_id": "string", "variant": "string", "scenario": "string", "params": "object",
    "threads": "int", "cpus": "string", "rep": "count", "status": "status", "argv": "strings", "cwd": "string",
    "failure_kind": "string", "reason": "string", "exit_code": "int", "term_signal": "int", "wall_ns": "int",
    "elapsed_ns": "int", "user_s": "number", "sys_s": "number", "max_rss_kb": "int", "cgroup_peak_bytes": "int",
    "other_cpu_fraction": "number", "loadavg": "number", "reported_threads": "int", "result": "object",
    "stderr_tail": "string", "metrics": "object",
}
assert set(RUN_KINDS) == set(RUN_COLUMNS), "every stored run column travels in a bundle"
RUN_REQUIRED = {"program", "impl_id", "scenario", "params", "rep", "status", "argv"}
RUN_FIELDS: dict[str, Field] = {
    "type": _field("", required=True, choices=("run",)),
    "session": _field("uid", required=True),
    "id": _field("int", nullable=True),
    "started_at": _field("time", nullable=True),
    **{name: _field(kind, nullable=name not in RUN_REQUIRED, required=name in RUN_REQUIRED)
       if kind != "status" else _field("", required=True, choices=RUN_STATUSES) for name, kind in RUN_KINDS.items()},
}
REQUIRED = {id(SESSION_FIELDS): {n for n, f in SESSION_FIELDS.items() if f.required},
            id(RUN_FIELDS): {n for n, f in RUN_FIELDS.items() if f.required}}


def _checked(record: dict, spec: dict[str, Field], what: str) -> None:
    for name, value in record.items():
        f = spec.get(name)
        if f is None:
            raise BundleError(f"a {what} line has an unknown field '{name[:40]}' (version {VERSION} has none such)")
        if value is None:
            if f.nullable:
                continue
        elif type(value) in f.types and (f.check is None or f.check(value)):
            continue
        raise BundleError(f"field '{name}' of a {what} line must be {f.must_be}{' or null' if f.nullable else ''}, "
                          f"not {_shown(value)}")
    missing = REQUIRED[id(spec)] - record.keys()
    if missing:
        raise BundleError(f"a {what} line lacks the field '{sorted(missing)[0]}'")


def _number(v: Any) -> bool:
    return type(v) in (int, float) and -INT64 <= v < INT64


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


# --------------------------------------------------------------------------- records <-> lines

def session_line(session: SessionRecord, runs: int) -> dict:
    return {"type": "session", "uid": session.uid, "id": session.id, "started_at": session.started_at,
            "finished_at": session.finished_at, "status": session.status, "command": session.command,
            "git_commit": session.git_commit, "machine": session.machine, "toolchains": session.toolchains,
            "settings": session.settings, "runs": runs}


def run_line(uid: str, row: RunRow) -> dict:
    return {"type": "run", "session": uid, "id": row.id, "started_at": row.started_at,
            **{name: getattr(row, name) for name in RUN_COLUMNS}}


def _session_record(line: dict, check: bool) -> SessionRecord:
    if check:
        _checked(line, SESSION_FIELDS, "session")
    return SessionRecord(id=0, started_at=line["started_at"], finished_at=line.get("finished_at"),
                         status=line["status"], command=storable(line["command"]),
                         git_commit=_store_text(line.get("git_commit")), machine=line["machine"],
                         toolchains=line["toolchains"], settings=line["settings"], uid=line["uid"])


def _store_text(value: str | None) -> str | None:
    return storable(value) if value is not None else None


TEXT_COLUMNS = ("program", "impl_id", "variant", "scenario", "cpus", "cwd", "failure_kind", "reason", "stderr_tail",
                "status")


def _check_run(line: dict) -> None:
    """Everything a run line must be for the reports to read it as they read a run of their own."""
    _checked(line, RUN_FIELDS, "run")
    scenario = SCENARIOS.get(line["scenario"])
    if scenario is None:
        raise BundleError(f"run of unknown scenario '{line['scenario'][:40]}' (this corobench knows "
                          f"{', '.join(SCENARIOS)}: a newer corobench may)")
    declared = {p.name: p for p in scenario.params}
    for name, value in line["params"].items():
        param = declared.get(name)
        if param is None:  # one this corobench no longer has: kept, and ordered by, as a number
            if not _number(value):
                raise BundleError(f"parameter '{name[:40]}' (not one of {scenario.name}'s) must be a number, "
                                  f"not {_shown(value)}")
        elif param.choices and value not in param.choices:
            raise BundleError(f"parameter '{name}' of {scenario.name} must be one of {', '.join(param.choices)}, "
                              f"not {_shown(value)}")
        elif not param.choices and not _is_int(value):
            raise BundleError(f"parameter '{name}' of {scenario.name} must be an integer, not {_shown(value)}")
    if line["status"] == "ok":
        _readable(_run_record(line), scenario)


def _run_record(line: dict) -> RunRow:
    values = {name: line.get(name) for name in RUN_COLUMNS}
    for name in TEXT_COLUMNS:
        if values[name] is not None:
            values[name] = storable(values[name])
    values["argv"] = [storable(a) for a in values["argv"]]
    values["metrics"] = values["metrics"] or {}
    return RunRow(**values, started_at=_store_text(line.get("started_at")))


def _readable(row: RunRow, scenario) -> None:
    """Every figure of a verified run can be computed from it: the reports will not trip on it."""
    view = RunView(row)
    for metric in scenario.metrics:
        try:
            value = metric.value(view)
        except (KeyError, TypeError, ValueError, ZeroDivisionError, AttributeError, OverflowError) as exc:
            raise BundleError(f"the metric {metric.key} of this {scenario.name} run cannot be computed "
                              f"({exc.__class__.__name__}: {str(exc)[:60]})") from None
        if value is not None and type(value) not in (int, float):
            raise BundleError(f"the metric {metric.key} of this {scenario.name} run is not a number")


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _parse(raw: bytes) -> dict:
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except RecursionError:
        raise BundleError("the line nests too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BundleError(f"not a JSON line ({str(exc)[:80]})") from None
    if not isinstance(value, dict):
        raise BundleError("a line must be a JSON object")
    return value


# --------------------------------------------------------------------------- reading

@dataclass
class SessionInBundle:
    line: int  # where its session line is
    session: SessionRecord
    runs: list[RunRow]  # when read to be stored (a checking pass only counts them)
    digest: Any  # sha256 of its session line and run lines, as read
    count: int = 0


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of the decompressed bundle, each at most MAX_LINE_BYTES."""
    number = 0
    try:
        with gzip.open(path, "rb") as f:
            while True:
                raw = f.readline(MAX_LINE_BYTES + 1)
                if not raw:
                    return
                number += 1
                if len(raw) > MAX_LINE_BYTES:
                    raise UsageError(f"{path}: line {number} is longer than {MAX_LINE_BYTES // 2**20} MiB, the "
                                     "format's bound: not a corobench bundle, or a damaged one")
                if raw.strip():
                    yield number, raw
    except UsageError:
        raise
    except FileNotFoundError:
        raise UsageError(f"no bundle at {path}") from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a folder, not a bundle") from None
    except (OSError, EOFError, zlib.error) as exc:  # not gzip, truncated, damaged
        where = f" after line {number}" if number else ""
        raise UsageError(f"{path}: not a readable corobench bundle{where} "
                         f"({getattr(exc, 'strerror', None) or exc}; truncated or damaged?)") from None


def _header(value: dict) -> None:
    if value.get("format") != FORMAT:
        raise BundleError(f"not a corobench bundle (its first line must be a header with format \"{FORMAT}\")")
    version = value.get("version")
    if not _is_int(version) or version < 1:
        raise BundleError("the header's version must be a whole number")
    if version > VERSION:
        raise BundleError(f"bundle format version {version} is newer than this corobench reads (up to "
                          f"{VERSION}): upgrade corobench")


def read_bundle(path: Path, check: bool = True) -> Iterator[SessionInBundle]:
    """Every session of the bundle with its runs and the digest of its lines; UsageError (one line,
    with the line number) at the first line that is wrong, including a bundle that ends early.
    `check=False` reads a bundle already checked: the order of its lines, not every field."""
    state = "start"  # start | header | session | end
    current: SessionInBundle | None = None
    expected = 0
    totals = {"sessions": 0, "runs": 0}
    last = 0
    for number, raw in _lines(path):
        last = number
        try:
            value = _parse(raw)
            kind = value.get("type", "header" if "format" in value else None)
            if kind == "header":
                if state not in ("start", "end"):
                    raise BundleError("a header in the middle of a bundle (before the previous one's end line)")
                _header(value)
                state, totals = "header", {"sessions": 0, "runs": 0}
                continue
            if state in ("start", "end"):
                raise BundleError("not a corobench bundle (its first line must be a header with format "
                                  f"\"{FORMAT}\")" if state == "start" else "a line after the end line")
            if current is not None and current.count == expected and kind != "run":
                yield current
                current = None
            if kind == "session":
                if current is not None:
                    raise BundleError(f"session {current.session.uid} has {current.count} run lines, its "
                                      f"session line says {expected}")
                current, expected = SessionInBundle(number, _session_record(value, check), [], sha256(raw)), \
                    value["runs"]
                totals["sessions"] += 1
                state = "session"
            elif kind == "run":
                if current is None:
                    raise BundleError("a run line outside a session")
                if current.count >= expected:
                    raise BundleError(f"session {current.session.uid} has more run lines than the {expected} its "
                                      "session line says")
                if value.get("session") != current.session.uid:
                    raise BundleError(f"a run of session {_shown(value.get('session'))} among the runs of "
                                      f"session {current.session.uid}")
                if check:
                    _check_run(value)
                else:
                    current.runs.append(_run_record(value))
                current.count += 1
                current.digest.update(raw)
                totals["runs"] += 1
            elif kind == "end":
                if current is not None:
                    raise BundleError(f"session {current.session.uid} has {current.count} run lines, its "
                                      f"session line says {expected}")
                for name in ("sessions", "runs"):
                    if value.get(name) != totals[name]:
                        raise BundleError(f"the end line counts {_shown(value.get(name))} {name}, the bundle "
                                          f"has {totals[name]}")
                state = "end"
            else:
                raise BundleError(f"unknown line type {_shown(kind)} (a bundle has header, session, run and "
                                  "end lines)")
        except BundleError as exc:
            raise UsageError(f"{path}: line {number}: {exc}") from None
    if state == "start":
        raise UsageError(f"{path}: empty: not a corobench bundle")
    if state != "end":
        raise UsageError(f"{path}: ends at line {last} before its end line: truncated")


@dataclass
class BundleCheck:
    """What the checking pass found: the bundle's size, and the digest of each session's lines."""

    sessions: int = 0
    runs: int = 0
    digests: list[bytes] = field(default_factory=list)


@dataclass
class ImportSummary:
    imported: int = 0
    present: int = 0
    runs: int = 0
    new_ids: list[int] = field(default_factory=list)


def check_bundle(path: Path) -> BundleCheck:
    """Read the whole bundle only to check it; UsageError at its first bad line."""
    found = BundleCheck()
    for item in read_bundle(path):
        found.sessions += 1
        found.runs += item.count
        found.digests.append(item.digest.digest())
    return found


def import_bundle(store: Store, path: Path, checked: BundleCheck | None = None) -> ImportSummary:
    """Store each session of the bundle that the database does not have yet. The bundle is
    checked whole first (unless `checked` is what check_bundle found): a bad line is refused
    before anything is written. The storing pass does not check every field again; it compares
    each session's lines with what the check read instead, so that a file changed in between
    cannot slip anything past the check."""
    checked = checked or check_bundle(path)
    summary = ImportSummary()
    seen: set[str] = set()
    for index, item in enumerate(read_bundle(path, check=False)):
        if index >= len(checked.digests) or item.digest.digest() != checked.digests[index]:
            raise UsageError(f"{path} changed while it was being imported (at line {item.line}); "
                             f"{summary.imported} session(s) were imported before it: import it again")
        uid = item.session.uid
        assert uid is not None
        if uid in seen or session_by_uid(store, uid) is not None:
            summary.present += 1
            continue
        seen.add(uid)
        summary.new_ids.append(add_imported_session(store, item.session, item.runs))
        summary.imported += 1
        summary.runs += len(item.runs)
    return summary


# --------------------------------------------------------------------------- writing

def sessions_named(store: Store, names: list[str] | tuple[str, ...] | None) -> list[SessionRecord]:
    """The sessions named (ids, `latest`, `latest~N`, as `compare` takes them), each once, in the
    order they were stored; every stored session when none is named."""
    from corobench.compare import resolve_session

    if not names:
        return store.sessions()
    found = {s.id: s for s in (resolve_session(store, n) for n in names)}
    return [found[i] for i in sorted(found)]


@dataclass
class ExportSummary:
    sessions: int = 0
    runs: int = 0
    nonfinite: int = 0  # NaN or infinite figures written as null (JSON has no such numbers)


def _finite(value: Any, counter: list[int]) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        counter[0] += 1
        return None
    if isinstance(value, dict):
        return {k: _finite(v, counter) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v, counter) for v in value]
    return value


def _encode(record: dict, summary: ExportSummary) -> bytes:
    try:
        text = json.dumps(record, separators=(",", ":"), allow_nan=False)
    except ValueError:  # a NaN or an infinity somewhere: JSON cannot carry it
        counter = [0]
        text = json.dumps(_finite(record, counter), separators=(",", ":"), allow_nan=False)
        summary.nonfinite += counter[0]
    data = text.encode() + b"\n"  # ensure_ascii: lone surrogates travel as \ud8xx escapes
    if len(data) > MAX_LINE_BYTES:
        what = f"run {record.get('id')}" if record.get("type") == "run" else f"session {record.get('id')}"
        raise UsageError(f"{what} needs a {len(data) / 2**20:.1f} MiB line, over the bundle format's "
                         f"{MAX_LINE_BYTES // 2**20} MiB bound")
    return data


def export_bundle(store: Store, sessions: list[SessionRecord], out: Path) -> ExportSummary:
    """Write these sessions with all their runs as a bundle at `out` (through a temporary file
    renamed over it: never a half-written bundle, never through a link planted at that name)."""
    summary = ExportSummary()
    header = {"format": FORMAT, "version": VERSION, "created": time.strftime("%Y-%m-%dT%H:%M:%S+0000", time.gmtime()),
              "corobench": __version__}
    try:
        with replacing(out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=COMPRESSLEVEL,
                                                         mtime=0) as f:
            f.write(_encode(header, summary))
            for session in sessions:
                if session.status not in ENDED:
                    raise UsageError(f"session {session.id} is still {session.status}: export it when it has ended")
                runs = store.runs(session.id)
                uid = session.uid or ""
                f.write(_encode(session_line(session, len(runs)), summary))
                for row in runs:
                    f.write(_encode(run_line(uid, row), summary))
                summary.sessions += 1
                summary.runs += len(runs)
                del runs
            f.write(_encode({"type": "end", "sessions": summary.sessions, "runs": summary.runs}, summary))
    except FileNotFoundError:
        raise UsageError(f"cannot write the bundle: no folder {out.parent}") from None
    except (IsADirectoryError, PermissionError) as exc:
        raise UsageError(f"cannot write the bundle at {out}: {exc.strerror}") from None
    except OSError as exc:  # a full disk, an I/O error: exit 74, as any write of results
        raise StoreError(f"cannot write the bundle at {out}: {exc.strerror or exc}") from None
    return summary


__all__ = ["FORMAT", "MAX_LINE_BYTES", "VERSION", "BundleCheck", "ExportSummary", "ImportSummary", "check_bundle",
           "export_bundle", "import_bundle", "read_bundle", "sessions_named"]
