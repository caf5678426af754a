"""The real implementations, built once per test session, for the conformance and bad-input tests.

On CI (CI=true) every implementation must be buildable and runnable: a missing toolchain fails.
Elsewhere a missing toolchain skips that implementation's tests with the reason.
"""

from __future__ import annotations

import os
from functools import cache

import pytest

from corobench import build as builder
from corobench.discover import discover, unavailable_reason
from corobench.manifest import Manifest
from corobench.paths import PROJECT_ROOT

MANIFESTS: list[Manifest] = discover([PROJECT_ROOT / "impls"])
BY_ID = {m.id: m for m in MANIFESTS}


@cache
def readiness(impl_id: str) -> str | None:
    """None when the implementation is built and runnable, else why not."""
    m = BY_ID[impl_id]
    reason = unavailable_reason(m)
    if reason:
        return f"unavailable: {reason}"
    state = builder.BuildState()
    result = builder.build(m, state)
    if not result.ok:
        log_tail = result.log.read_text()[-1500:] if result.log and result.log.exists() else ""
        return f"build failed: {result.error}\n{log_tail}"
    return None


def require(impl_id: str) -> Manifest:
    reason = readiness(impl_id)
    if reason is not None:
        if reason.startswith("unavailable") and os.environ.get("CI") != "true":
            pytest.skip(reason)
        pytest.fail(f"{impl_id}: {reason}")
    return BY_ID[impl_id]


@cache
def tool_readiness(tool_id: str) -> str | None:
    from corobench.runkinds import RUN_KINDS

    tools = {m.id: m for kind in RUN_KINDS.values() for m in kind.tools()}
    if tool_id not in tools:
        return f"unavailable: no manifest for the tool {tool_id}"
    m = tools[tool_id]
    reason = unavailable_reason(m)
    if reason:
        return f"unavailable: {reason}"
    result = builder.build(m, builder.BuildState())
    if not result.ok:
        log_tail = result.log.read_text()[-1500:] if result.log and result.log.exists() else ""
        return f"build failed: {result.error}\n{log_tail}"
    return None


def require_tool(tool_id: str) -> None:
    """A tool the harness runs (the load generator) built, or the test is skipped (failed on CI)."""
    reason = tool_readiness(tool_id)
    if reason is not None:
        if reason.startswith("unavailable") and os.environ.get("CI") != "true":
            pytest.skip(reason)
        pytest.fail(f"{tool_id}: {reason}")
