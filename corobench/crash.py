"""A bug in corobench is reported as one: one line on stderr naming a log file with the traceback."""

from __future__ import annotations

import os
import tempfile
import time
import traceback
from pathlib import Path


def write_crash_log(exc: BaseException, folder: Path | None) -> Path:
    """The traceback in a new file (in the results folder where possible, else the temp folder)."""
    text = "".join(traceback.format_exception(exc))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for where in ([folder] if folder else []) + [Path(tempfile.gettempdir())]:
        try:
            where.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=f"crash-{stamp}-", suffix=".log", dir=where)
            with os.fdopen(fd, "w") as f:
                f.write(text)
            return Path(name)
        except OSError:
            continue
    return Path("(could not write a log)")
