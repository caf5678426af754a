"""Where things live: the project root, the implementations, the results folder."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
IMPLS_DIR = PROJECT_ROOT / "impls"


def default_results_dir() -> Path:
    return Path(os.environ.get("COROBENCH_RESULTS", PROJECT_ROOT / "results"))


def writable_dir(path: Path, what: str) -> Path:
    """Create the folder if needed and prove it takes a file; else a one-line UsageError."""
    from corobench.errors import UsageError

    from corobench.files import probe_writable

    try:
        path.mkdir(parents=True, exist_ok=True)
        probe_writable(path)
    except OSError as exc:
        raise UsageError(f"{what} {path} is not writable: {exc.strerror or exc}") from None
    except ValueError as exc:  # a NUL byte: no system call takes the name
        raise UsageError(f"{what} {str(path)!r} is not a usable name: {exc}") from None
    return path
