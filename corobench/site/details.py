"""Every run's details for the results site: one file per scenario and session, loaded by the page
only when a reader opens that session's runs (a site of years of results stays quick to open).

A run's command, working directory, hosts, exit status, FAILED reason and stderr are what a
program or a machine wrote: they travel as JSON strings, with terminal escapes removed and other
control characters made visible (report.html.plain), and the page puts them in as text, never as
markup.
"""

from __future__ import annotations

import shlex
from typing import Any, Mapping

from corobench.comparability import machine_label, topology_label
from corobench.report.html import plain
from corobench.scenarios import RunView, Scenario
from corobench.store import RunRow, SessionRecord
from corobench.units import human


def hosts_text(session: SessionRecord, server: bool) -> str:
    """Where a session's runs ran: this machine, and for servers the load layout and client hosts."""
    machine = session.machine if isinstance(session.machine, Mapping) else {}
    here = f"{machine.get('hostname') or 'unknown host'} ({machine_label(machine)})"
    if not server:
        return here
    hosts = machine.get("hosts") if isinstance(machine.get("hosts"), Mapping) else {}
    topology = session.settings.get("topology") if isinstance(session.settings, Mapping) else None
    parts = [f"server on {here}"]
    if isinstance(topology, Mapping):
        server_cpus = (topology.get("server") or {}).get("cpus") if isinstance(topology.get("server"), Mapping) else None
        if server_cpus:
            parts[0] += f", CPUs {','.join(map(str, server_cpus))}"
        for client in topology.get("clients") or []:
            if isinstance(client, Mapping):
                name = str(client.get("host"))
                other = hosts.get(name) if isinstance(hosts.get(name), Mapping) else None
                what = f" ({machine_label(other)})" if other else ""
                cpus = f", CPUs {','.join(map(str, client['cpus']))}" if client.get("cpus") else ""
                parts.append(f"client agent on {name}{what}{cpus}")
    layout = topology_label(session.settings, hosts)
    if layout:
        parts.append(f"layout: {layout}")
    return "; ".join(parts)


def _headline(row: RunRow, scenario: Scenario) -> str:
    if row.status != "ok":
        return ""
    metric = scenario.metrics[0]
    try:
        value = metric.value(RunView(row))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return ""
    return human(value, metric.unit) if value is not None else ""


def run_record(row: RunRow, scenario: Scenario, param_names: list[str]) -> dict[str, Any]:
    return {
        "id": row.id, "prog": row.program, "rep": row.rep, "st": row.status,
        "p": ["" if row.params.get(n) is None else str(row.params.get(n)) for n in param_names],
        "thr": "" if row.threads is None else str(row.threads),
        "params": " ".join(f"{k}={v}" for k, v in row.params.items()),
        "kind": row.failure_kind or "", "why": plain(row.reason),
        "exit": "" if row.exit_code is None else str(row.exit_code),
        "sig": "" if row.term_signal is None else str(row.term_signal),
        "cmd": plain(shlex.join(str(a) for a in row.argv)), "cwd": plain(row.cwd), "cpus": row.cpus or "",
        "hl": _headline(row, scenario), "wall": human(row.wall_ns / 1e9, "s") if row.wall_ns else "",
        "at": row.started_at or "", "err": plain(row.stderr_tail),
    }


def session_runs(session: SessionRecord, rows: list[RunRow], scenario: Scenario, param_names: list[str]) -> dict:
    """The document one runs file holds: the session, where it ran, its runs of this scenario
    (FAILED first, then in the order they ran)."""
    ordered = sorted(rows, key=lambda r: (r.status == "ok", r.id or 0))
    return {"session": session.id, "scenario": scenario.name, "started_at": session.started_at,
            "hosts": plain(hosts_text(session, scenario.kind == "server")),
            "runs": [run_record(r, scenario, param_names) for r in ordered]}


__all__ = ["hosts_text", "run_record", "session_runs"]
