"""`corobench doctor`: what this machine offers, and what would spoil a measurement."""

from __future__ import annotations

import os
from dataclasses import dataclass

from corobench import cgroup
from corobench.discover import discover, toolchain_version, unavailable_reason
from corobench.machine import limits, metadata


@dataclass(frozen=True)
class Finding:
    level: str  # "ok" | "warn"
    topic: str
    text: str


def examine() -> list[Finding]:
    meta = metadata()
    lim = limits()
    out: list[Finding] = []
    cores = meta["cores"] or 1
    mem = meta["memory_bytes"] or 0
    out.append(Finding("ok", "cpu", f"{meta['cpu_model']}, {cores} cores, {meta['cores_usable']} usable"))
    out.append(Finding("ok", "memory", f"{mem / 2**30:.1f} GiB"))
    out.append(Finding("ok", "os", f"{meta['os']}, kernel {meta['kernel']}"))
    load1 = os.getloadavg()[0]
    out.append(Finding("warn" if load1 > 0.25 * cores else "ok", "load",
                       f"load average {load1:.2f} on {cores} cores"
                       + (": something else is running; numbers will be noisy" if load1 > 0.25 * cores else "")))
    if meta["governor"] and meta["governor"] != "performance":
        out.append(Finding("warn", "cpufreq", f"CPU governor is '{meta['governor']}', not 'performance'"))
    nofile = lim["open_files"]
    out.append(Finding("warn" if nofile < 20000 else "ok", "open files",
                       f"ulimit -n {nofile} (hard {lim['open_files_hard']})"
                       + (": servers under load may run out" if nofile < 20000 else "")))
    out.append(thread_limit(lim))
    usable, why = cgroup.usable()
    out.append(Finding("ok" if usable else "warn", "cgroup",
                       why + ("" if usable else ": peak memory falls back to the largest process's RSS")))
    for manifest in discover():
        reason = unavailable_reason(manifest)
        if reason:
            out.append(Finding("warn", manifest.id, f"cannot run: {reason}"))
        else:
            out.append(Finding("ok", manifest.id, toolchain_version(manifest)))
    return out


MAPS_PER_THREAD = 4  # measured: a glibc pthread costs about 4 memory mappings (stack, guard, TLS/arena)


def thread_limit(lim: dict) -> Finding:
    """How many OS threads one process can really start here, and which limit decides it.

    pid_max and threads-max cap threads machine-wide; each thread also takes ~4 memory mappings, so
    vm.max_map_count caps them per process — usually first: 65530 / 4 ≈ 16,380 (rust-threads stopped
    at 16,368 here; with max_map_count raised it reached 32,244, near pid_max).
    """
    pid_max = lim["pid_max"] or 0
    threads_max = lim["threads_max"] or 0
    maps = lim["max_map_count"] or 0
    limits = {"pid_max": pid_max, "threads-max": threads_max, "vm.max_map_count / 4": maps // MAPS_PER_THREAD}
    name, value = min(((k, v) for k, v in limits.items() if v), key=lambda kv: kv[1], default=("none", 0))
    text = (f"pid_max {pid_max}, threads-max {threads_max}, vm.max_map_count {maps}: thread-per-task runtimes "
            f"stop near {value:,} threads per process here ({name} decides; stored as FAILED, resource limit)")
    return Finding("warn" if value < 1_000_000 else "ok", "threads", text)
