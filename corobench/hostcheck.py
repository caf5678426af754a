"""`corobench hosts check FILE`: reach every client host of a hosts file and say what it is —
machine, round trip, clock offset with its error bound — and whether its load generator is the
one built here (copying it if not). Every problem is one line naming the host."""

from __future__ import annotations

import time
from pathlib import Path

from rich.table import Table

from corobench.export.table import out_console
from corobench.hosts.local import LocalHost
from corobench.hosts.ssh import SshError, SshHost
from corobench.hostsfile import HostsFile
from corobench.units import human


def check_hosts(path: Path, hosts: HostsFile, binary: str) -> int:
    """Print what each host of `hosts` (read from `path`) is; 0 when every host answered, 1 otherwise."""
    console = out_console()
    table = Table(title=f"client hosts of {path} (the server binds {hosts.bind} on {LocalHost().metadata()['hostname']})")
    for col in ("host", "reached as", "machine", "round trip", "clock offset", "corobench-load"):
        table.add_column(col, overflow="fold")
    problems: list[str] = []
    for c in hosts.clients:
        if c.ssh == "local":
            m = LocalHost().metadata()
            table.add_row(c.name, "this machine", _machine(m), "—", "0 (the same clock)", "built here")
            continue
        host = SshHost(c.name, c.ssh, list(c.ssh_options), hosts.ssh_config, c.cpus)
        try:
            m = host.metadata()
            current = host.is_current(binary)
            started = time.monotonic()
            host.install(binary)
            copied = time.monotonic() - started
            offset, error = host.clock_offset()
            table.add_row(c.name, c.ssh, _machine(m), human(2 * error / 1e9, "s"),
                          f"{_offset_text(offset)} ± {human(error / 1e9, 's')}",
                          "current" if current else f"copied ({copied:.1f} s)")
        except SshError as exc:
            problems.append(str(exc))
            table.add_row(c.name, c.ssh, "[red]unreachable[/]", "—", "—", "—")
        finally:
            host.close()
    console.print(table)
    console.print("clock offset: the host's CLOCK_MONOTONIC minus this machine's, from the probe with the "
                  "smallest round trip; ± half that round trip", highlight=False)
    for line in problems:
        console.print(f"[red]problem[/]: {line}", highlight=False, soft_wrap=True)
    return 1 if problems else 0


def _machine(m: dict) -> str:
    mem = f"{m['memory_bytes'] / 2**30:.1f} GiB" if m.get("memory_bytes") else "? GiB"
    return f"{m.get('arch')}, {m.get('cores')} cores, {mem}, {m.get('cpu_model')}, kernel {m.get('kernel')}"


def _offset_text(offset_ns: int) -> str:
    """A clock offset with its sign: in µs below a millisecond (hosts that share one clock, where
    "-0.000000 s" said nothing), else in seconds to the µs."""
    if abs(offset_ns) < 1_000_000:
        return f"{offset_ns / 1e3:+.1f} µs"
    return f"{offset_ns / 1e9:+.6f} s"
