"""Verification: did the program do exactly the work asked? Only then is a run a number.

A batch run passes when it exited 0 and printed exactly one JSON object on stdout that echoes
every parameter as asked and reports the checksum (and other counts) the scenario predicts.
Anything a program prints is hostile input here: numbers out of range, duplicate keys, NaN or
deeply nested JSON make the run FAILED with a reason, never crash the session.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Mapping

from corobench.measure import ProcessMeasurement
from corobench.scenarios import Scenario

EXIT_BAD_INPUT = 2
EXIT_RESOURCE = 3
INT64 = (-(2**63), 2**63 - 1)  # every integer a program reports fits the store's INTEGER


@dataclass(frozen=True)
class Verdict:
    ok: bool
    kind: str  # "ok", "timeout", "signal", "exit", "resource", "bad-input", "output", "checksum"
    reason: str
    result: dict | None = None


class BadOutput(ValueError):
    """A program's line is not the JSON object the protocol asks for."""


def clean_text(text: str, limit: int = 300) -> str:
    """A program's text made safe for one line on a terminal: no escape sequences or controls."""
    out = "".join(ch if ch.isprintable() else " " for ch in text)
    return out[:limit]


def last_stderr_line(stderr: str) -> str:
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    return clean_text(lines[-1]) if lines else "(no message on stderr)"


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise BadOutput(f"key '{clean_text(key, 40)}' appears twice")
        out[key] = value
    return out


def _reject_constant(name: str) -> None:
    raise BadOutput(f"{name} is not a number JSON allows")


def _check_numbers(value: Any, depth: int = 0) -> None:
    if depth > 8:
        raise BadOutput("nested deeper than the protocol's lines are")
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, int):
        if not INT64[0] <= value <= INT64[1]:
            raise BadOutput(f"the number {str(value)[:30]}… is out of the 64-bit range")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise BadOutput("a number is not finite")
    elif isinstance(value, dict):
        for v in value.values():
            _check_numbers(v, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _check_numbers(v, depth + 1)


def parse_object(line: str) -> dict:
    """One JSON object from a program's line, checked: BadOutput says what is wrong."""
    try:
        value = json.loads(line, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except BadOutput:
        raise
    except RecursionError:
        raise BadOutput("JSON nested too deep") from None
    except ValueError:
        raise BadOutput(f"not JSON: {clean_text(line, 120)!r}") from None
    if not isinstance(value, dict):
        raise BadOutput("the JSON is not an object")
    _check_numbers(value)
    return value


def exit_verdict(m: ProcessMeasurement, timeout_s: float) -> Verdict | None:
    """A failure told by how the program ended (timeout, signal, exit code), or None if it exited 0."""
    if m.output_exceeded:
        return Verdict(False, "output", f"{m.output_exceeded}: killed")
    if m.timed_out:
        return Verdict(False, "timeout", f"timed out after {timeout_s:g} s; process group killed")
    if m.oom_killed:
        return Verdict(False, "resource", "killed by the kernel's OOM killer (out of memory): "
                                          f"{last_stderr_line(m.stderr)}")
    if m.term_signal is not None:
        return Verdict(False, "signal", f"killed by signal {m.term_signal}: {last_stderr_line(m.stderr)}")
    if m.exit_code == EXIT_RESOURCE:
        return Verdict(False, "resource", f"resource limit: {last_stderr_line(m.stderr)}")
    if m.exit_code == EXIT_BAD_INPUT:
        return Verdict(False, "bad-input", f"program refused its input: {last_stderr_line(m.stderr)}")
    if m.exit_code != 0:
        return Verdict(False, "exit", f"exit code {m.exit_code}: {last_stderr_line(m.stderr)}")
    return None


def check_fields(result: Mapping, expected: Mapping) -> Verdict | None:
    """Every expected key present with exactly that value (a bool is never a number)."""
    for key, want in expected.items():
        if key not in result:
            return Verdict(False, "output", f"output lacks '{key}'")
        got = result[key]
        if got != want or type(got) is not type(want):  # True is not 1, 3.0 is not 3
            kind = "checksum" if key in ("received", "checksum") else "output"
            name = key if key == "checksum" else f"'{key}'"
            return Verdict(False, kind, f"{name} is {clean_text(repr(got), 60)}, expected {want!r}")
    return None


def verify(scenario: Scenario, params: dict, m: ProcessMeasurement, *, timeout_s: float,
           threads: int | None = None, variant: str | None = None) -> Verdict:
    """A batch run: exit 0, one JSON line, parameters echoed, checksum and counts as predicted."""
    failed = exit_verdict(m, timeout_s)
    if failed is not None:
        return failed
    lines = [line for line in m.stdout.splitlines() if line.strip()]
    if not lines:
        return Verdict(False, "output", "printed nothing on stdout (expected one JSON line)")
    if len(lines) > 1:
        return Verdict(False, "output", f"printed {len(lines)} lines on stdout (expected one JSON line)")
    try:
        result = parse_object(lines[0])
    except BadOutput as exc:
        return Verdict(False, "output", f"stdout: {exc}")

    expected: dict = {"scenario": scenario.name, **params, **scenario.expected_fields(params)}
    if variant is not None:
        expected["variant"] = variant
    if threads is not None:
        expected["threads"] = threads
    checksum = scenario.expected_checksum(params)
    if checksum is not None:
        expected["checksum"] = checksum
    wrong = check_fields(result, expected)
    if wrong is not None:
        return wrong
    reported = result.get("threads")
    if type(reported) is not int or reported < 1:
        return Verdict(False, "output", f"'threads' must be a whole number >= 1, got {clean_text(repr(reported), 40)}")
    for key in scenario.timing_fields:
        value = result.get(key)
        if type(value) is not int or value <= 0:
            return Verdict(False, "output", f"'{key}' must be a positive integer, got {clean_text(repr(value), 40)}")
    return Verdict(True, "ok", "", result)
