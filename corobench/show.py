"""`corobench show`: everything stored for one run or one session, readable and safe to print.

A FAILED run is debugged from here: its reason, exit status, the exact command and working
directory (to rerun it by hand, or with `corobench exec`), and the tail of its stderr. Text that
came from a program is shown with control characters made visible, never sent raw to a terminal.
"""

from __future__ import annotations

import json
import shlex
from collections import Counter

from corobench.store import RunRow, SessionRecord, Store


def visible(text: str) -> str:
    """A program's text with its line breaks kept and every other control character made visible."""
    out = []
    for ch in text:
        if ch in "\n\t" or ch.isprintable():
            out.append(ch)
        else:
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 256 else f"\\u{ord(ch):04x}")
    return "".join(out)


def _fmt(value) -> str:
    return "—" if value is None else str(value)


def _mib(value: int | None, unit_bytes: int) -> str:
    return "—" if value is None else f"{value * unit_bytes / 2**20:.1f} MiB"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _busy(row: RunRow) -> str:
    """The share of the run's CPUs other processes took (a server run: its server's and its client's)."""
    server, client = row.metrics.get("server_other_share"), row.metrics.get("client_other_share")
    if server is not None or client is not None:
        return (f"other processes took {_pct(server)} of the server's CPUs and {_pct(client)} of the client's "
                "during the measured window")
    return f"other processes took {_pct(row.other_cpu_fraction)} of the run's CPUs"


def run_text(row: RunRow) -> str:
    lines = [
        f"run {row.id} of session {row.session_id}: {row.program} {row.scenario} "
        + " ".join(f"{k}={v}" for k, v in row.params.items()),
        f"  repetition   {row.rep}" + (" (the verification run at a tiny size)" if row.rep == 0 else ""),
        f"  status       {row.status}" + (f" ({row.failure_kind})" if row.failure_kind else ""),
    ]
    if row.reason:
        lines.append(f"  reason       {visible(row.reason)}")
    lines += [
        f"  started      {row.started_at}",
        f"  exit         code {_fmt(row.exit_code)}, signal {_fmt(row.term_signal)}",
        f"  threads      asked {_fmt(row.threads)}, reported {_fmt(row.reported_threads)}; CPUs {_fmt(row.cpus)}",
        f"  wall         {row.wall_ns / 1e9:.6f} s" if row.wall_ns else "  wall         —",
        f"  timed        {row.elapsed_ns / 1e9:.6f} s" if row.elapsed_ns else "  timed        —",
        f"  CPU          user {_fmt(row.user_s)} s, sys {_fmt(row.sys_s)} s",
        f"  memory       peak RSS {_mib(row.max_rss_kb, 1024)}, cgroup peak {_mib(row.cgroup_peak_bytes, 1)}",
        f"  machine      {_busy(row)}; load average {_fmt(None if row.loadavg is None else round(row.loadavg, 2))}",
        f"  cwd          {_fmt(row.cwd)}",
        f"  command      {shlex.join(row.argv) if row.argv else '— (not started)'}",
    ]
    if row.metrics:
        shown = {k: v for k, v in row.metrics.items() if k != "rss_series"}
        lines.append("  metrics      " + json.dumps(shown, sort_keys=True))
    if row.result:
        lines.append("  output       " + visible(json.dumps(row.result)[:4000]))
    if row.stderr_tail:
        lines.append("  stderr (tail):")
        lines += ["    " + line for line in visible(row.stderr_tail).splitlines()]
    return "\n".join(lines)


def session_text(store: Store, session: SessionRecord) -> str:
    rows = store.runs(session.id)
    counts = Counter(r.status for r in rows)
    lines = [
        f"session {session.id}: {session.status}, {session.started_at} → {session.finished_at or '…'}",
        f"  command  {session.command}",
        f"  commit   {session.git_commit or '—'}",
        f"  runs     {len(rows)}: " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items())),
        "",
        "  id      rep  status   program / parameters",
    ]
    for r in rows:
        params = " ".join(f"{k}={v}" for k, v in r.params.items())
        lines.append(f"  {r.id:<7} {r.rep:<4} {r.status:<8} {r.program} {r.scenario} {params}")
        if r.status == "failed" and r.reason:
            lines.append(f"          {visible(r.reason)[:300]}")
    lines.append("")
    lines.append("`corobench show RUN_ID` shows a run's command, working directory and stderr.")
    return "\n".join(lines)
