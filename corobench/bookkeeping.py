"""Crash-recovery bookkeeping on disk, apart from the results: who runs a session, what it has running.

One folder per harness process under `<results>/live/<token>/` (the token is stored with the
session, so a session and its folder find each other): `harness.json` (pid, process identity,
session id) and one small file per thing running (a local process group or cgroup, a process on
another host, with how to reach that host). Creating or deleting a file is atomic, so a kill -9
at any point leaves a folder that says exactly what may be left; recovery.py reads these folders,
never the results database's tables, so another results store needs no change here.
"""

from __future__ import annotations

import json
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

from corobench.errors import StoreError
from corobench.files import replacing

FOLDER = "live"


@dataclass(frozen=True)
class Entry:
    host: str
    what: str  # "pgid", "cgroup" (this host) or "pid" (a process on another host)
    ref: str
    identity: str | None
    reach: dict | None  # how to get to a remote host again (ssh destination and options)


@dataclass(frozen=True)
class HarnessRecord:
    token: str
    folder: Path
    pid: int | None
    identity: str | None
    session: int | None


def _entry_name(host: str, what: str, ref: str) -> str:
    return "~".join(quote(part, safe="") for part in (host, what, ref)) + ".json"


class Bookkeeping:
    """The records of one harness process (the session it runs, and what is running)."""

    def __init__(self, results_dir: Path, pid: int, identity: str | None):
        self.token = secrets.token_hex(8)
        self.folder = results_dir / FOLDER / self.token
        self.pid, self.identity = pid, identity
        try:
            self.folder.mkdir(parents=True)
        except OSError as exc:
            raise StoreError(f"cannot write to {self.folder} (the record of what this session runs): {exc.strerror or exc}") from None
        self._write_harness(None)

    def _write(self, name: str, data: dict) -> None:
        """A record, or StoreError: what cannot be recorded must not run (nothing could clean up after it)."""
        try:
            with replacing(self.folder / name) as f:
                json.dump(data, f)
        except OSError as exc:
            raise StoreError(f"cannot write to {self.folder} (the record of what this session runs): {exc.strerror or exc}") from None

    def _write_harness(self, session: int | None) -> None:
        self._write("harness.json", {"pid": self.pid, "identity": self.identity, "session": session})

    def attach(self, session: int) -> None:
        self._write_harness(session)

    def started(self, host: str, what: str, ref: str, identity: str | None, reach: dict | None) -> None:
        self._write(_entry_name(host, what, ref), {"identity": identity, "reach": reach})

    def ended(self, host: str, what: str, ref: str) -> None:
        try:
            (self.folder / _entry_name(host, what, ref)).unlink()
        except FileNotFoundError:
            pass

    def entries(self) -> list[Entry]:
        return read_entries(self.folder)

    def finish(self) -> bool:
        """The session is over: the folder goes, unless something could not be cleaned up (a
        cgroup that would not go, a host that could not be reached), which the next command
        retries once this harness is gone. True when the folder went."""
        if self.entries():
            return False
        shutil.rmtree(self.folder, ignore_errors=True)
        return True


def read_entries(folder: Path) -> list[Entry]:
    out = []
    for path in sorted(folder.glob("*.json")):
        if path.name == "harness.json":
            continue
        parts = path.name[:-5].split("~")
        if len(parts) != 3:
            continue
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = {}
        out.append(Entry(*(unquote(p) for p in parts), data.get("identity"), data.get("reach")))
    return out


def harnesses(results_dir: Path) -> list[HarnessRecord]:
    """Every harness folder under the results folder (alive or not)."""
    root = results_dir / FOLDER
    try:
        folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return []
    out = []
    for folder in folders:
        try:
            data = json.loads((folder / "harness.json").read_text())
        except (OSError, ValueError):
            data = {}
        session = data.get("session")
        pid = data.get("pid")
        out.append(HarnessRecord(folder.name, folder, pid if isinstance(pid, int) else None, data.get("identity"),
                                 session if isinstance(session, int) else None))
    return out


def remove_entry(folder: Path, entry: Entry) -> None:
    try:
        (folder / _entry_name(entry.host, entry.what, entry.ref)).unlink()
    except FileNotFoundError:
        pass


def remove_folder(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
