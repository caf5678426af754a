"""Incremental builds: run a manifest's build command when its inputs changed, keep the log.

The build state (a fingerprint of the inputs per implementation folder and whether the last
build worked) is kept with the builds, in the checkout's `.cache/builds/` (COROBENCH_BUILD_STATE
moves it), not with any results folder: a new `--results` folder rebuilds nothing. `list` reads it
to say "build failed"; `run` skips an unchanged build in milliseconds.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from corobench.discover import SKIP_DIRS
from corobench.files import locked, replacing, write_text
from corobench.manifest import Manifest
from corobench.paths import PROJECT_ROOT

BUILD_TIMEOUT_S = 1800


@dataclass(frozen=True)
class BuildResult:
    impl_id: str
    ok: bool
    skipped: bool  # up to date: nothing ran
    seconds: float
    log: Path | None
    error: str = ""


def fingerprint(manifest: Manifest) -> str:
    """A hash of the build command and of every input file's path, size and mtime."""
    digest = hashlib.sha256(json.dumps(manifest.build).encode())
    for entry in manifest.build_inputs:
        root = (manifest.folder / entry).resolve()
        paths = [root] if root.is_file() else []
        if root.is_dir():
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
                paths.extend(Path(dirpath) / f for f in sorted(filenames))
        for path in paths:
            try:
                st = path.stat()
            except OSError:
                continue
            digest.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def state_dir() -> Path:
    return Path(os.environ.get("COROBENCH_BUILD_STATE") or PROJECT_ROOT / ".cache" / "builds")


def entry_key(manifest: Manifest) -> str:
    """Builds are per implementation folder: two checkouts' `go` are two builds."""
    return f"{manifest.id}@{manifest.folder.resolve()}"


def log_name(manifest: Manifest) -> str:
    digest = hashlib.sha256(str(manifest.folder.resolve()).encode()).hexdigest()[:8]
    return f"{manifest.id}-{digest}.log"


class BuildState:
    """build-state.json, shared by concurrent corobench commands: each update re-reads the file
    under a lock and replaces it atomically, so no command's entry is lost."""

    def __init__(self, folder: Path | None = None):
        folder = folder or state_dir()
        self.path = folder / "build-state.json"
        self.log_dir = folder / "logs"
        self.data: dict[str, dict] = self._read()

    def _read(self) -> dict[str, dict]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, manifest: Manifest) -> dict | None:
        entry = self.data.get(entry_key(manifest))
        return entry if isinstance(entry, dict) else None

    def put(self, manifest: Manifest, entry: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with locked(self.path.with_name("build-state.lock")):
            self.data = self._read()
            self.data[entry_key(manifest)] = entry
            write_text(self.path, json.dumps(self.data, indent=2, sort_keys=True))

    def refresh(self) -> None:
        self.data = self._read()


def outputs_present(manifest: Manifest) -> bool:
    return all((manifest.folder / o).exists() for o in manifest.build_outputs)


def is_up_to_date(manifest: Manifest, state: BuildState) -> bool:
    if not manifest.build:
        return True
    entry = state.get(manifest)
    return bool(entry and entry.get("ok") and entry.get("fingerprint") == fingerprint(manifest)
                and outputs_present(manifest))


def build(manifest: Manifest, state: BuildState, force: bool = False) -> BuildResult:
    if not manifest.build:
        return BuildResult(manifest.id, True, True, 0.0, None)
    if not force and is_up_to_date(manifest, state):
        return BuildResult(manifest.id, True, True, 0.0, state.log_dir / log_name(manifest))
    state.log_dir.mkdir(parents=True, exist_ok=True)
    # one build of an implementation at a time, across processes; whoever waited finds it built
    with locked(state.log_dir / f".{log_name(manifest)}.lock"):
        state.refresh()
        if not force and is_up_to_date(manifest, state):
            return BuildResult(manifest.id, True, True, 0.0, state.log_dir / log_name(manifest))
        return _build(manifest, state)


def _build(manifest: Manifest, state: BuildState) -> BuildResult:
    log = state.log_dir / log_name(manifest)
    started = time.monotonic()
    error = ""
    with replacing(log) as out:
        out.write(f"$ (cd {manifest.folder} && {' '.join(manifest.build)})\n")
        out.flush()
        try:
            proc = subprocess.run(
                manifest.resolve(manifest.build), cwd=manifest.folder, stdout=out,
                stderr=subprocess.STDOUT, timeout=BUILD_TIMEOUT_S, env={**os.environ, **manifest.env},
            )
            if proc.returncode != 0:
                error = f"build exited {proc.returncode}"
        except subprocess.TimeoutExpired:
            error = f"build took longer than {BUILD_TIMEOUT_S} s"
        except OSError as exc:
            error = f"build could not start: {exc}"
    if not error and not outputs_present(manifest):
        missing = [o for o in manifest.build_outputs if not (manifest.folder / o).exists()]
        error = f"build produced no {', '.join(missing)}"
    seconds = time.monotonic() - started
    ok = not error
    state.put(manifest, {
        "ok": ok, "fingerprint": fingerprint(manifest) if ok else "", "error": error,
        "log": str(log), "seconds": round(seconds, 1), "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
    })
    return BuildResult(manifest.id, ok, False, seconds, log, error)
