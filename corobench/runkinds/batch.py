"""The batch run kind: one measured process that does the work and prints one JSON line."""

from __future__ import annotations

from corobench.measure import run_measured
from corobench.runkinds.base import RunKind, RunRequest, base_row, command_for, effective_threads, refuse_threads
from corobench.store import RunRow
from corobench.verify import verify


class BatchKind(RunKind):
    name = "batch"

    def run(self, req: RunRequest) -> RunRow:
        cpus = req.options.cpus
        threads = effective_threads(req.program, req.threads, cpus)
        warmup = 0 if req.rep == 0 else req.warmup  # the verification run checks correctness, not speed
        argv, env = command_for(req.program, req.scenario, req.params, threads, warmup)
        row = base_row(req, argv, cpus)
        if refuse_threads(req, row):
            return row
        m = run_measured(argv, cwd=str(req.program.manifest.folder), env=env, timeout_s=req.timeout_s,
                         cpus=cpus, cgroup=req.run_name if req.options.use_cgroup else None, host=req.options.host)
        verdict = verify(req.scenario, req.params, m, timeout_s=req.timeout_s, threads=threads,
                         variant=req.program.variant)
        row.exit_code, row.term_signal = m.exit_code, m.term_signal
        row.wall_ns, row.user_s, row.sys_s = m.wall_ns, m.user_s, m.sys_s
        row.max_rss_kb, row.cgroup_peak_bytes = m.max_rss_kb, m.cgroup_peak_bytes
        row.other_cpu_fraction, row.loadavg = m.other_cpu_fraction, m.loadavg_before
        row.stderr_tail = "\n".join([*m.notes, m.stderr]).strip() or None
        if verdict.ok:
            result = verdict.result or {}
            row.result = result
            row.elapsed_ns = result.get("elapsed_ns")
            row.reported_threads = result["threads"]
            row.metrics = req.scenario.run_metrics(result, req.params)
        else:
            row.status, row.failure_kind, row.reason = "failed", verdict.kind, verdict.reason
            if m.stdout.strip():
                row.result = {"raw_stdout": m.stdout[:2000]}
        return row
