"""Where things live: the project root, the implementations, the results folder."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
IMPLS_DIR = PROJECT_ROOT / "impls"
SUITES_DIR = PROJECT_ROOT / "suites"


def default_results_dir() -> Path:
    return Path(os.environ.get("COROBENCH_RESULTS", PROJECT_ROOT / "results"))
