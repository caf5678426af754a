"""Every implementation x scenario (x variant, x event type) at tiny sizes: verified like a real run."""

from __future__ import annotations

import pytest

from corobench.discover import Program, programs_for
from corobench.measure import run_measured
from corobench.runkinds import command_for
from corobench.scenarios import get_scenario
from corobench.scenarios.chain import ETYPES
from corobench.verify import verify
from impls import MANIFESTS, require

TINY = {
    "chain": [{"workers": 3, "events": 7, "queue": 2, "esize": 5},
              {"workers": 40, "events": 200, "queue": 1, "esize": 13}],
    "tasks": [{"tasks": 50, "sleep_ms": 20}, {"tasks": 5, "sleep_ms": 0}],
    "blocking": [{"tasks": 8, "iterations": 3, "bytes": 7}],
}


def cases():
    for scenario in ("chain", "tasks", "blocking"):
        for program in programs_for(MANIFESTS, scenario):
            for i, params in enumerate(TINY[scenario]):
                etypes = ETYPES if scenario == "chain" else (None,)
                for etype in etypes:
                    p = {**params, "etype": etype} if etype else dict(params)
                    yield pytest.param(program, scenario, p,
                                       id=f"{program.name}-{scenario}-{i}" + (f"-{etype}" if etype else ""))


def run_and_verify(program: Program, scenario_name: str, raw: dict, threads: int | None = None):
    scenario = get_scenario(scenario_name)
    params = scenario.normalise(raw)
    argv, env = command_for(program, scenario, params, threads, warmup=None)
    timeout = 120 * program.manifest.timeout_factor
    m = run_measured(argv, cwd=str(program.manifest.folder), env=env, timeout_s=timeout)
    verdict = verify(scenario, params, m, timeout_s=timeout, threads=threads, variant=program.variant)
    assert verdict.ok, f"{' '.join(argv)}: {verdict.reason}\nstderr: {m.stderr[-800:]}"
    return verdict.result


@pytest.mark.conformance
@pytest.mark.parametrize("program,scenario,params", list(cases()))
def test_conforms(program, scenario, params):
    require(program.manifest.id)
    result = run_and_verify(program, scenario, params)
    assert isinstance(result["threads"], int) and result["threads"] >= 1
    if scenario == "tasks":
        assert result["spawn_ns"] <= result["elapsed_ns"]
        # every task slept: the whole run cannot be shorter than one sleep
        assert result["elapsed_ns"] >= params["sleep_ms"] * 1_000_000


def threaded():
    for m in MANIFESTS:
        if m.threads.mode != "none" and "chain" in m.scenarios:
            yield pytest.param(m, id=m.id)


@pytest.mark.conformance
@pytest.mark.parametrize("manifest", list(threaded()))
def test_threads_flag_reaches_the_runtime(manifest):
    require(manifest.id)
    run_and_verify(Program(manifest), "chain", {"workers": 4, "events": 10, "queue": 2, "etype": "int",
                                                 "esize": 3}, threads=1)


@pytest.mark.conformance
@pytest.mark.parametrize("manifest", [pytest.param(m, id=m.id) for m in MANIFESTS if m.warmup > 0])
def test_warmup_pass_is_accepted_and_reported_once(manifest):
    require(manifest.id)
    result = run_and_verify(Program(manifest), "chain", {"workers": 5, "events": 9, "queue": 3, "etype": "str",
                                                          "esize": 4})
    assert result["received"] == 45  # only the measured pass is reported


PROFILED = [pytest.param(m, id=m.id) for m in MANIFESTS if m.language in ("go", "rust") and "chain" in m.scenarios]


def profile(manifest, tmp_path, workers: str, events: str) -> tuple[Path, str]:
    """Runs a chain pass under --cpuprofile: the profile's path and the program's stderr."""
    import subprocess

    out = tmp_path / ("profile.svg" if manifest.language == "rust" else "cpu.pprof")
    argv = manifest.resolve(manifest.run) + ["chain", "-w", workers, "-e", events, "-q", "16", "-t", "str",
                                             "--cpuprofile", str(out)]
    proc = subprocess.run(argv, cwd=manifest.folder, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-500:]
    assert out.exists() and out.stat().st_size > 0
    return out, proc.stderr


@pytest.mark.conformance
@pytest.mark.parametrize("manifest", PROFILED)
def test_cpuprofile_is_written(manifest, tmp_path):
    require(manifest.id)
    out, _ = profile(manifest, tmp_path, "200", "20000")  # tens of ms of CPU: samples to draw
    if manifest.language == "rust":
        text = out.read_text()
        assert "<svg" in text[:2000] and "no samples" not in text


@pytest.mark.conformance
@pytest.mark.parametrize("manifest", PROFILED)
def test_cpuprofile_of_a_pass_too_short_to_sample_is_a_file_that_says_so(manifest, tmp_path):
    """pprof-rs writes nothing for a profile without samples: a 0-byte file, exit 0 (seen in CI)."""
    require(manifest.id)
    out, stderr = profile(manifest, tmp_path, "1", "1")
    if manifest.language == "rust":
        text = out.read_text()
        assert "<svg" in text[:2000]
        assert ("no samples" in text) == ("no samples" in stderr)
