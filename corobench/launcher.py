"""The small C launcher that runs each measured program (see launcher.c for why).

Compiled on first use with the system C compiler into .cache/ (git-ignored); where no compiler
exists the harness runs programs directly and stores no RSS figure rather than a wrong one.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from functools import cache
from pathlib import Path

from corobench.paths import PROJECT_ROOT

SOURCE = Path(__file__).with_name("launcher.c")


@cache
def launcher_path() -> str | None:
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:12]
    target = PROJECT_ROOT / ".cache" / f"corobench-launch-{digest}"
    if target.exists():
        return str(target)
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    proc = subprocess.run([compiler, "-O2", "-o", str(tmp), str(SOURCE)], capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    tmp.replace(target)
    return str(target)
