"""Find the implementations (manifests), the programs they offer, and whether each can run here."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from corobench.errors import UsageError
from corobench.manifest import Manifest, parse_manifest
from corobench.scenarios import SCENARIOS

MANIFEST_NAME = "manifest.toml"
SKIP_DIRS = {"target", "node_modules", ".venv", "_build", "deps", "build", ".git", "__pycache__"}


@dataclass(frozen=True)
class Program:
    """What a results row calls `program`: an implementation, or one variant of it."""

    manifest: Manifest
    variant: str | None = None

    @property
    def name(self) -> str:
        return f"{self.manifest.id}:{self.variant}" if self.variant else self.manifest.id


def impl_roots() -> list[Path]:
    from corobench.paths import IMPLS_DIR

    extra = os.environ.get("COROBENCH_IMPLS")
    if extra:
        return [Path(p) for p in extra.split(os.pathsep) if p]
    return [IMPLS_DIR]


@dataclass(frozen=True)
class Broken:
    """A manifest that cannot be used, and why: listed, never fatal to the others."""

    path: Path
    reason: str


def discover_all(roots: list[Path] | None = None) -> tuple[list[Manifest], list[Broken]]:
    """Every usable manifest under the roots (sorted by id), and the broken ones with their reasons."""
    found: dict[str, Manifest] = {}
    broken: list[Broken] = []
    for root in roots or impl_roots():
        if not root.is_dir():
            raise UsageError(f"implementations folder not found: {root}")
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
            if MANIFEST_NAME not in filenames:
                continue
            path = Path(dirpath) / MANIFEST_NAME
            try:
                manifest = parse_manifest(path, set(SCENARIOS))
            except UsageError as exc:
                broken.append(Broken(path, str(exc).replace(f"{path}: ", "", 1)))
                continue
            if manifest.id in found:
                broken.append(Broken(path, f"duplicate implementation id '{manifest.id}' (also in "
                                           f"{found[manifest.id].folder})"))
                continue
            found[manifest.id] = manifest
    return sorted(found.values(), key=lambda m: m.id), broken


def discover(roots: list[Path] | None = None) -> list[Manifest]:
    """Every usable manifest under the roots, sorted by id (broken ones: see discover_all)."""
    return discover_all(roots)[0]


def programs_for(manifests: list[Manifest], scenario: str) -> list[Program]:
    out = []
    for m in manifests:
        if scenario not in m.scenarios:
            continue
        variants = m.variants_of(scenario)
        out.extend(Program(m, v) for v in variants) if variants else out.append(Program(m))
    return out


def select_programs(manifests: list[Manifest], scenario: str, wanted: list[str] | None) -> list[Program]:
    """Programs of a scenario named by `wanted` (ids, or id:variant); all when wanted is empty."""
    programs = programs_for(manifests, scenario)
    if not wanted:
        return programs
    known_ids = {m.id for m in manifests}
    chosen: list[Program] = []
    for name in wanted:
        impl_id, _, variant = name.partition(":")
        if impl_id not in known_ids:
            raise UsageError(f"unknown implementation '{impl_id}' (known: {', '.join(sorted(known_ids))})")
        matches = [p for p in programs if p.manifest.id == impl_id and (not variant or p.variant == variant)]
        if not matches:
            if variant:
                raise UsageError(f"'{impl_id}' has no variant '{variant}' for {scenario}")
            continue  # the implementation does not do this scenario: not an error in a mixed selection
        chosen.extend(p for p in matches if p not in chosen)
    if not chosen:
        raise UsageError(f"none of {', '.join(wanted)} implements the scenario '{scenario}'")
    return chosen


def unavailable_reason(manifest: Manifest) -> str | None:
    """Why the implementation cannot be built or run here (a missing toolchain), or None."""
    for tool in manifest.requires:
        if shutil.which(tool) is None:
            return f"missing toolchain: '{tool}' is not on PATH"
    if manifest.check:
        try:
            proc = subprocess.run(
                manifest.resolve(manifest.check), cwd=manifest.folder, capture_output=True,
                text=True, timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"check failed: {exc}"
        if proc.returncode != 0:
            line = (proc.stderr.strip() or proc.stdout.strip() or "check failed").splitlines()[-1]
            return line
    return None


def toolchain_version(manifest: Manifest) -> str:
    try:
        proc = subprocess.run(
            manifest.resolve(manifest.version), cwd=manifest.folder, capture_output=True,
            text=True, timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc.__class__.__name__})"
    text = (proc.stdout.strip() or proc.stderr.strip())
    return text.splitlines()[0].strip() if text else "unknown"


def runtime_settings(manifest: Manifest, cpus: set[int] | None = None) -> str | None:
    """The first line of the manifest's `info` command (GC, heap, pools), or None; run pinned to the
    CPUs its runs get, so that what it reports (GOMAXPROCS, worker threads, heap sizing) is what
    those runs saw, not what an unpinned process would."""
    if not manifest.info:
        return None
    try:
        proc = subprocess.run(manifest.resolve(manifest.info), cwd=manifest.folder, capture_output=True,
                              text=True, timeout=60, env={**os.environ, **manifest.env},
                              preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc.__class__.__name__})"
    text = proc.stdout.strip() or proc.stderr.strip()
    return text.splitlines()[0].strip()[:300] if text else None
