"""Where programs run: this machine (local.py), client machines over OpenSSH (ssh.py), and a scripted
fake for tests (fake.py), all behind the `Host` interface (base.py)."""

from __future__ import annotations

import os
import signal

from corobench.bookkeeping import Entry
from corobench.hosts.base import (CpuTimes, Ending, Host, LaunchError, Program, ProgramSpec, Sample,
                                  other_share)
from corobench.tracking import process_identity


def cleanup(entry: Entry) -> str | None:
    """Stop what a dead harness left running: the verb said of it ("killed", "removed", "stopped"),
    "" when it had already ended, None when it could not be done now (tried again later)."""
    if entry.reach is not None:
        from corobench.hosts.ssh import cleanup_remote

        return cleanup_remote(entry)
    if entry.what == "pgid":
        pgid = int(entry.ref)
        if entry.identity and process_identity(pgid) == entry.identity:
            try:
                os.killpg(pgid, signal.SIGKILL)
                return "killed"
            except OSError:
                return ""
        return ""
    if entry.what == "cgroup":
        from pathlib import Path

        from corobench import cgroup

        path = Path(entry.ref)
        hierarchy = cgroup.detect()
        if not path.exists():
            return ""
        if hierarchy is None or not path.is_relative_to(hierarchy.parent):
            return ""  # not one of ours: never touched
        return "removed" if cgroup.RunCgroup(path, hierarchy.version).remove() else None
    return ""


__all__ = ["CpuTimes", "Ending", "Host", "LaunchError", "Program", "ProgramSpec", "Sample", "cleanup",
           "other_share"]
