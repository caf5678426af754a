"""The server run kind's logic against FakeHost: scripted servers and load generators on a scripted
clock, nothing real started — ready line, window cutting, counts, agents and clocks, failures.
Each test takes milliseconds."""

from __future__ import annotations

import pytest

from conftest import ROOT
from corobench.discover import Program
from corobench.hosts.fake import FakeHost, FakeLoad, FakeServer, FakeWorld
from corobench.manifest import parse_manifest
from corobench.options import Options
from corobench.runkinds.base import RunRequest
from corobench.runkinds.server import ServerKind
from corobench.scenarios import SCENARIOS
from corobench.topology import ClientSlot, Topology

MANIFEST = parse_manifest(ROOT / "tests" / "fixtures" / "fake-servers" / "good" / "manifest.toml", set(SCENARIOS))
HTTP = {"connections": 8, "duration": 2, "warmup_s": 1, "requests": 0, "rate": 0}
ECHO = {"connections": 1000, "concurrency": 10, "per_connection": 1, "size": 17, "uuids": 5, "rate": 0, "duration": 0}


def setup(server: str = "good", load: str = "good", agents: int = 1, offsets=(0,), errors=(0,), cores: float = 0.5,
          rate: float = 1000.0):
    world = FakeWorld()
    server_host = FakeHost(world, "server", {"fake_server.py": lambda spec: FakeServer(server, cores)})
    clients = []
    for i in range(agents):
        host = FakeHost(world, f"client{i}", {"corobench-load": lambda spec: FakeLoad(load, rate)},
                        offset_ns=offsets[i % len(offsets)], offset_error_ns=errors[i % len(errors)])
        host.kind = "local" if agents == 1 and offsets == (0,) else "ssh"  # one local agent: today's path
        clients.append(ClientSlot(host, {1}))
    topology = Topology(server_host, {0}, clients)
    return world, topology


def run(topology: Topology, scenario: str = "http", params: dict | None = None, rep: int = 1):
    options = Options(reps=1, timeout_s=30, topology=topology, use_cgroup=True)
    req = RunRequest(program=Program(MANIFEST), scenario=SCENARIOS[scenario],
                     params=dict(params or (HTTP if scenario == "http" else ECHO)), threads=None, warmup=None,
                     rep=rep, timeout_s=30, options=options, run_name="t")
    return ServerKind().run(req)


def test_a_good_server_is_measured_on_the_clients_window():
    world, topo = setup(cores=0.5, rate=1000)
    row = run(topo)
    assert row.status == "ok", row.reason
    m = row.metrics
    # 2 s measured after 1 s of warm-up: 2000 requests in the window, 3000 served in all
    assert m["window_s"] == pytest.approx(2.0) and m["rps"] == pytest.approx(1000)
    assert row.result["final"]["requests"] == 3000
    # the server burnt 0.5 cores while loaded: the window cut from its samples (taken at the window's
    # ends, which the harness knows in advance) says so exactly
    assert m["server_cores"] == pytest.approx(0.5, rel=0.001)
    assert m["cpu_us_per_request"] == pytest.approx(500, rel=0.05)
    assert m["lat_p99_us"] == pytest.approx(1000.0, rel=0.001) and m["agents"] == 1  # HDR: 3 significant digits
    assert not any(p.running for p in world.programs)  # nothing left running


def test_a_server_that_is_never_ready_times_out():
    _, topo = setup(server="never-ready")
    row = run(topo)
    assert row.status == "failed" and row.failure_kind == "timeout"
    assert "no ready line within" in row.reason


def test_a_server_that_dies_under_load():
    world, topo = setup(server="crash")
    row = run(topo)
    assert row.status == "failed" and row.failure_kind == "exit"
    assert "server died under load (exit 7)" in row.reason and "the client saw" in row.reason
    assert not any(p.running for p in world.programs)


def test_wrong_counts_fail_the_run():
    _, topo = setup(server="miscount")
    row = run(topo)
    assert row.status == "failed" and row.failure_kind == "checksum"
    assert "requests is 3001, the client completed 3000" in row.reason


def test_a_client_that_fails_and_one_that_sees_a_wrong_reply():
    _, topo = setup(load="fail")
    row = run(topo)
    assert row.status == "failed" and row.failure_kind == "exit" and "connection refused" in row.reason
    _, topo = setup(load="mismatch")
    row = run(topo)
    assert row.status == "failed" and row.failure_kind == "checksum" and "1 wrong reply" in row.reason


def test_a_client_that_never_ends_is_a_timeout_and_is_killed():
    world, topo = setup(load="hang")
    row = run(topo)
    assert row.status == "failed" and row.failure_kind == "timeout"
    assert not any(p.running for p in world.programs)


def test_a_server_that_ignores_sigterm_is_killed_after_the_grace():
    world, topo = setup(server="ignore-term")
    before = world.now_ns
    row = run(topo)
    assert row.status == "failed" and row.failure_kind == "timeout"
    assert "did not exit within 5 s of SIGTERM" in row.reason
    assert world.now_ns - before >= 5e9  # it was given its grace period, on the scripted clock


def test_listening_elsewhere_during_the_run_is_caught():
    _, topo = setup(server="listen-later")
    row = run(topo)
    assert row.status == "failed" and "listens on tcp 0.0.0.0:5353" in row.reason


def test_counted_echo_load_checks_every_count():
    _, topo = setup()
    row = run(topo, "echo")
    assert row.status == "ok", row.reason
    assert row.result["final"]["requests"] == 1000 and row.result["final"]["bytes_out"] == 1000 * (17 + 37 * 5)


def test_two_agents_with_shifted_clocks_share_one_window_and_their_counts_add_up():
    # client1's clock runs 7 s ahead of the server's: the harness must place it by the offset
    world, topo = setup(agents=2, offsets=(0, 7_000_000_000), errors=(50_000, 80_000), rate=1000)
    row = run(topo)
    assert row.status == "ok", row.reason
    m = row.metrics
    assert m["agents"] == 2 and m["rps"] == pytest.approx(2000)  # the sum of both agents' rates
    assert m["window_s"] == pytest.approx(2.0)  # one window: the two windows coincide on the server's clock
    assert row.result["final"]["requests"] == 6000  # the server's count is the sum of the agents'
    agents = row.result["client"]["agents"]
    assert [a["offset_ns"] for a in agents] == [0, 7_000_000_000] and m["clock_error_ns"] == 80_000
    # latency from the two agents' merged histograms: p99 of 2 x 2000 replies, 1 % of them at 1.2 ms
    assert m["lat_p50_us"] == pytest.approx(450, rel=0.01) and m["lat_p99_us"] == pytest.approx(1000, rel=0.01)
    assert m["lat_max_us"] == pytest.approx(1200, rel=0.01)


def test_an_agent_that_dies_mid_window_fails_the_run_and_names_it():
    world, topo = setup(load="short", agents=2, offsets=(0, 1000))
    row = run(topo)
    assert row.status == "failed" and "agent 0 on client0" in row.reason and "stdin closed" in row.reason
    assert not any(p.running for p in world.programs)


def test_a_clock_that_cannot_be_bounded_fails_the_run():
    _, topo = setup(agents=2, offsets=(0, 1000), errors=(0, 90_000_000))
    row = run(topo)
    assert row.status == "failed" and row.failure_kind == "clock"
    assert "agent 1 on client1" in row.reason and "could not be bounded" in row.reason


def test_the_verification_run_always_uses_the_verifying_client():
    _, topo = setup()
    options_loadgen = "wrk"
    options = Options(reps=1, timeout_s=30, topology=topo, loadgen=options_loadgen)
    req = RunRequest(program=Program(MANIFEST), scenario=SCENARIOS["http"],
                     params={**HTTP, "requests": 200, "duration": 0, "warmup_s": 0}, threads=None, warmup=None,
                     rep=0, timeout_s=30, options=options, run_name="t")
    row = ServerKind().run(req)
    assert row.status == "ok", row.reason and row.metrics["loadgen"] == "corobench-load"
    assert row.metrics["loadgen"] == "corobench-load" and row.metrics["verified_by_client"] is True
