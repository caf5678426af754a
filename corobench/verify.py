"""Verification: did the program do exactly the work asked? Only then is a run a number.

A run passes when it exited 0 and printed exactly one JSON object on stdout that echoes every
parameter as asked and reports the checksum (and other counts) the harness predicts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from corobench.measure import ProcessMeasurement
from corobench.scenarios import Scenario

EXIT_BAD_INPUT = 2
EXIT_RESOURCE = 3


@dataclass(frozen=True)
class Verdict:
    ok: bool
    kind: str  # "ok", "timeout", "signal", "exit", "resource", "bad-input", "output", "checksum"
    reason: str
    result: dict | None = None


def _last_stderr_line(stderr: str) -> str:
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no message on stderr)"


def verify(
    scenario: Scenario,
    params: dict,
    m: ProcessMeasurement,
    *,
    timeout_s: float,
    threads: int | None = None,
    variant: str | None = None,
) -> Verdict:
    if m.timed_out:
        return Verdict(False, "timeout", f"timed out after {timeout_s:g} s; process group killed")
    if m.term_signal is not None:
        return Verdict(False, "signal", f"killed by signal {m.term_signal}: {_last_stderr_line(m.stderr)}")
    if m.exit_code == EXIT_RESOURCE:
        return Verdict(False, "resource", f"resource limit: {_last_stderr_line(m.stderr)}")
    if m.exit_code == EXIT_BAD_INPUT:
        return Verdict(False, "bad-input", f"program refused its input: {_last_stderr_line(m.stderr)}")
    if m.exit_code != 0:
        return Verdict(False, "exit", f"exit code {m.exit_code}: {_last_stderr_line(m.stderr)}")

    lines = [line for line in m.stdout.splitlines() if line.strip()]
    if not lines:
        return Verdict(False, "output", "printed nothing on stdout (expected one JSON line)")
    if len(lines) > 1:
        return Verdict(False, "output", f"printed {len(lines)} lines on stdout (expected one JSON line)")
    try:
        result = json.loads(lines[0])
    except ValueError:
        return Verdict(False, "output", f"stdout is not JSON: {lines[0][:120]!r}")
    if not isinstance(result, dict):
        return Verdict(False, "output", "stdout JSON is not an object")

    expected: dict = {"scenario": scenario.name, **params, **scenario.extra_expected(params)}
    if variant is not None:
        expected["variant"] = variant
    if threads is not None:
        expected["threads"] = threads
    for key, want in expected.items():
        if key not in result:
            return Verdict(False, "output", f"output lacks '{key}'")
        if result[key] != want or type(result[key]) is bool:
            kind = "checksum" if key == "received" else "output"
            return Verdict(False, kind, f"'{key}' is {result[key]!r}, expected {want!r}")
    if "threads" not in result:
        return Verdict(False, "output", "output lacks 'threads'")
    want_sum = scenario.expected_checksum(params)
    got_sum = result.get("checksum")
    if got_sum != want_sum or type(got_sum) is not int:
        return Verdict(False, "checksum", f"checksum is {got_sum!r}, expected {want_sum}")
    for key in scenario.timing_fields:
        value = result.get(key)
        if type(value) is not int or value <= 0:
            return Verdict(False, "output", f"'{key}' must be a positive integer, got {value!r}")
    return Verdict(True, "ok", "", result)
