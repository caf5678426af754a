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
              timeout: float = 300) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "corobench"]
    if results is not None:
        argv += ["--results", str(results)]
    if impls is not None:
        argv += ["--impls", str(impls)]
    return subprocess.run(argv + list(args), cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return tmp_path / "results"
