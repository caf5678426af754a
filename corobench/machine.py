"""The machine's metadata stored with every session, and the limits `doctor` reports."""

from __future__ import annotations

import os
import platform
import resource
import subprocess
from pathlib import Path

from corobench.paths import PROJECT_ROOT


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def cpu_model() -> str:
    text = _read("/proc/cpuinfo") or ""
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def memory_bytes() -> int | None:
    for line in (_read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def os_name() -> str:
    for line in (_read("/etc/os-release") or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return platform.system()


def git_commit() -> str | None:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PROJECT_ROOT, capture_output=True,
                                text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=PROJECT_ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    if not commit:
        return None
    return commit + ("-dirty" if dirty else "")


def limits() -> dict:
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)
    return {
        "open_files": nofile[0],
        "open_files_hard": nofile[1],
        "max_user_processes": nproc[0],
        "pid_max": int(_read("/proc/sys/kernel/pid_max") or 0) or None,
        "threads_max": int(_read("/proc/sys/kernel/threads-max") or 0) or None,
        "max_map_count": int(_read("/proc/sys/vm/max_map_count") or 0) or None,
    }


def metadata() -> dict:
    return {
        "hostname": platform.node(),
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)),
        "memory_bytes": memory_bytes(),
        "kernel": platform.release(),
        "os": os_name(),
        "python": platform.python_version(),
        "governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "loadavg": list(os.getloadavg()),
        "limits": limits(),
    }
