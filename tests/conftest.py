"""Shared fixtures: the CLI as a subprocess, the fake implementations, the real ones built once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FAKES = ROOT / "tests" / "fixtures" / "fake-impls"


def corobench(*args: str, results: Path | None = None, impls: Path | None = None, env: dict | None = None,
              timeout: float = 300, in_process: bool = True) -> subprocess.CompletedProcess:
    """The CLI with these arguments: in this process (fast: no interpreter start, no imports), or
    as a real `python -m corobench` process where a test needs one (signals, a clean environment)."""
    argv: list[str] = []
    if results is not None:
        argv += ["--results", str(results)]
    if impls is not None:
        argv += ["--impls", str(impls)]
    argv += list(args)
    if not in_process:
        return subprocess.run([sys.executable, "-m", "corobench", *argv], cwd=ROOT, capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, **(env or {})})
    from click.testing import CliRunner

    from corobench.cli import entry

    old_cwd, old_argv = os.getcwd(), sys.argv
    # the CLI sets COROBENCH_IMPLS for --impls: isolation restores every variable named here
    with CliRunner().isolation(env={"COROBENCH_IMPLS": None, **(env or {})}) as (out, err, _):
        try:
            os.chdir(ROOT)
            sys.argv = ["corobench", *argv]
            code = entry(argv)
        finally:
            os.chdir(old_cwd)
            sys.argv = old_argv
            sys.stdout.flush()
            sys.stderr.flush()
        stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    return subprocess.CompletedProcess(["corobench", *argv], code, stdout, stderr)


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return tmp_path / "results"


def db_rows(results: Path, sql: str) -> list[tuple]:
    """Rows of the results database, read directly (what was stored, whatever corobench says)."""
    import sqlite3

    db = sqlite3.connect(results / "corobench.sqlite")
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()
