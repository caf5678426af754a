"""The options of one `corobench run` session, as every run kind reads them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Options:
    reps: int = 5
    timeout_s: float = 600.0
    cpus: set[int] | None = None  # pin batch programs to these CPUs
    warmup: int | None = None  # None: each manifest's default
    use_cgroup: bool = True
    # server runs: where the server and the load generator run (None: halves of the CPUs)
    server_cpus: set[int] | None = None
    client_cpus: set[int] | None = None
    loadgen: str = "corobench-load"  # or "wrk" (http only)
