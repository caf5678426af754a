"""The options of one `corobench run` session, as every run kind reads them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corobench.hosts.base import Host
    from corobench.topology import Topology


@dataclass
class Options:
    reps: int = 5
    timeout_s: float = 600.0
    cpus: set[int] | None = None  # pin batch programs to these CPUs
    warmup: int | None = None  # None: each manifest's default
    use_cgroup: bool = True
    host: "Host | None" = None  # where batch programs run (None: this machine)
    # server runs: where the server and its load generators run, and which generator
    topology: "Topology | None" = None
    loadgen: str = "corobench-load"
