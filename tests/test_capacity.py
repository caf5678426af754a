"""The capacity search against fake servers of known behaviour (FakeHost: scripted, milliseconds), and
its options; one end-to-end search of a real (fake) server process over loopback."""

from __future__ import annotations

import pytest

from conftest import ROOT, corobench
from corobench.benchmark import Job, Runner
from corobench.capacity import Objective, Search, Step, drive, parse_objective, summarize
from corobench.discover import Program
from corobench.errors import UsageError
from corobench.hosts.fake import Behaviour, FakeHost, FakeLoad, FakeServer, FakeWorld, ServerModel
from corobench.manifest import parse_manifest
from corobench.options import Options
from corobench.scenarios import SCENARIOS
from corobench.store import Store
from corobench.suite import Benchmark
from corobench.topology import ClientSlot, Topology

MANIFEST = parse_manifest(ROOT / "tests" / "fixtures" / "fake-servers" / "good" / "manifest.toml", set(SCENARIOS))
R = 10_000.0  # the fakes' known capacity, requests/s
SERVICE_US = 100.0  # one request at a time: 1 / R


class OneAtATime(ServerModel):
    """Serves at most R/s, one request at a time on a fixed schedule: latency is the service time until
    the offered rate passes R, then the queue grows without bound."""

    def at(self, offered, connections, seconds):
        if offered is None:  # closed loop: as fast as it can, each client waiting its turn
            return Behaviour(R, SERVICE_US * connections, SERVICE_US * connections * 1.2)
        if offered <= R:
            return Behaviour(offered, SERVICE_US, SERVICE_US * 1.5)
        backlog_s = (offered / R - 1) * seconds  # how far behind it falls by the window's end
        return Behaviour(R, backlog_s * 5e5, backlog_s * 1e6)


class Smooth(OneAtATime):
    """Latency grows smoothly with load: p99 = service / (1 − load)."""

    def at(self, offered, connections, seconds):
        if offered is None or offered >= R:
            return super().at(offered, connections, seconds)
        rho = offered / R
        return Behaviour(offered, SERVICE_US / (1 - rho / 2), SERVICE_US / (1 - rho))


class DropsAbove(OneAtATime):
    """Fine up to a rate, then it resets connections."""

    def __init__(self, limit: float):
        self.limit = limit

    def at(self, offered, connections, seconds):
        behaviour = super().at(offered, connections, seconds)
        if offered is not None and offered > self.limit:
            return Behaviour(behaviour.achieved, behaviour.p50_us, behaviour.p99_us, errors=3)
        return behaviour


class ClientLimited(OneAtATime):
    """A server with more capacity than the client can offer: past 6,000/s the client's core is full."""

    def at(self, offered, connections, seconds):
        client_max = 6_000.0
        if offered is None:
            return Behaviour(client_max, 100.0, 150.0, client_share=1.0)
        achieved = min(offered, client_max)
        return Behaviour(achieved, SERVICE_US, SERVICE_US * 1.5, client_share=min(1.0, offered / client_max))


def search(model: ServerModel, objective: Objective, tmp_path, cores: float = 0.5, agents: int = 1):
    world = FakeWorld()
    server = FakeHost(world, "server", {"fake_server.py": lambda spec: FakeServer("good", cores, model)})
    slots = []
    for i in range(agents):  # with several, each on a host of its own whose clock is shifted
        client = FakeHost(world, f"client{i}", {"corobench-load": lambda spec: FakeLoad()},
                          offset_ns=i * 3_000_000_000, offset_error_ns=40_000)
        client.kind = "local" if agents == 1 else "ssh"
        slots.append(ClientSlot(client, {1}))
    topology = Topology(server, {0}, slots)
    store = Store(tmp_path / "c.sqlite")
    session = store.begin_session("capacity", None, {}, {}, {})
    runner = Runner(store, session, Options(reps=1, timeout_s=60, topology=topology))
    bench = Benchmark("http", {"connections": 8, "duration": 2, "warmup_s": 1, "requests": 0, "rate": 0})
    drive(runner, [Job(bench, [Program(MANIFEST)])], Search(objective), step_s=2, warmup_s=1, reps=1)
    rows = store.runs(session)
    assert not any(p.running for p in world.programs)
    return summarize({"fake-server-good": rows}, objective)[0], rows


def test_a_server_of_known_capacity_is_found_within_ten_percent(tmp_path):
    result, rows = search(OneAtATime(), parse_objective(["p99=1ms"]), tmp_path)
    assert result.verdict == "capacity" and result.capacity == pytest.approx(R, rel=0.10), result
    assert result.first_fail and (result.first_fail - result.capacity) / result.capacity <= 0.05 + 1e-9
    assert all(r.status == "ok" for r in rows)  # every step verified
    assert result.estimate == pytest.approx(R, rel=0.01)


def test_latency_that_grows_smoothly_meets_the_objective_up_to_where_it_crosses(tmp_path):
    # p99 = 100 µs / (1 - load) reaches 500 µs at 80 % of R
    result, _ = search(Smooth(), parse_objective(["p99=500us"]), tmp_path)
    assert result.verdict == "capacity" and result.capacity == pytest.approx(0.8 * R, rel=0.10), result
    curve = [s for s in result.steps if s.achieved]
    assert [s.latency_us["p99"] for s in curve] == sorted(s.latency_us["p99"] for s in curve)


def test_a_server_that_drops_connections_above_a_rate_fails_those_steps(tmp_path):
    result, rows = search(DropsAbove(5_000), parse_objective(["p99=1ms"]), tmp_path)
    assert result.capacity == pytest.approx(5_000, rel=0.10) and result.capacity <= 5_000, result
    failing = [s for s in result.steps if s.failed]
    assert failing and all("reset" in s.failed for s in failing)
    assert any(r.status == "failed" for r in rows)


def test_a_client_bound_search_says_so_instead_of_reporting_the_clients_limit(tmp_path):
    result, _ = search(ClientLimited(), parse_objective(["p99=1ms"]), tmp_path)
    assert result.verdict == "client-bound" and "could not be reached with this client" in result.note
    assert any(s.client_bound for s in result.steps)
    from corobench.report.capacity import charts  # its chart does not call the client's limit a capacity

    svg = next(p for p in charts(result, parse_objective(["p99=1ms"]), tmp_path, "http") if p.suffix == ".svg")
    text = svg.read_text()  # matplotlib writes each text drawn as a comment beside its glyphs
    assert f"met up to {result.capacity:.0f}/s (client-bound above)" in text and "client-bound step" in text
    assert f"capacity {result.capacity:.0f}/s" not in text
    from corobench.report.capacity import summary_rows

    [inline] = summary_rows([result])  # report.md and html: the note in the cell
    [short] = summary_rows([result], notes_inline=False)  # the terminal: under the table
    assert inline[-1] == f"client-bound: {result.note}" and short[-1] == "client-bound (below)"


def test_objectives_are_checked_and_bad_ones_are_one_line(results):
    assert parse_objective(["p99=1ms", "p99.9=5ms"]).limits == {"p99": 1000.0, "p999": 5000.0}
    for bad in ([], ["p98=1ms"], ["p99=1"], ["p99=-1ms"], ["p99=0ms"]):
        with pytest.raises(UsageError):
            parse_objective(bad)
    proc = corobench("capacity", "http", "--slo", "p99=fast", "--impl", "fake-server-good", results=results,
                     impls=ROOT / "tests" / "fixtures" / "fake-servers")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


def test_a_knee_below_the_series_start_is_found_by_halving_down(tmp_path):
    # p99 = 100 µs / (1 - load) meets 110 µs only below 9 % of R: under the first step (25 %)
    result, _ = search(Smooth(), parse_objective(["p99=110us"]), tmp_path)
    assert result.verdict == "capacity" and result.capacity < 0.25 * R
    assert result.capacity == pytest.approx(0.09 * R, rel=0.15), result


def test_agents_on_several_hosts_share_each_step_and_find_the_same_capacity(tmp_path):
    result, rows = search(OneAtATime(), parse_objective(["p99=1ms"]), tmp_path, agents=2)
    assert result.verdict == "capacity" and result.capacity == pytest.approx(R, rel=0.10), result
    steps = [r for r in rows if r.rep >= 1 and r.params.get("rate")]
    assert steps and all(r.status == "ok" for r in steps)
    for r in steps:  # the step's offered rate split over both agents, their rates summed
        agents = r.result["client"]["agents"]
        assert len(agents) == 2 and {a["host"] for a in agents} == {"client0", "client1"}
        assert r.metrics["rps"] == pytest.approx(sum(a["rate"] for a in agents))
        assert agents[0]["rate"] == pytest.approx(agents[1]["rate"], rel=0.01)
        assert r.result["final"]["requests"] == sum(a["requests"] for a in agents)


def test_the_reported_points_at_50_and_90_percent_of_the_capacity_are_measured_there(tmp_path):
    # p99 = 100 µs / (1 - load) meets 155 µs up to 35 % of R: the series' first step (25 % of R) is
    # above half the capacity, so the search measures that half itself
    result, rows = search(Smooth(), parse_objective(["p99=155us"]), tmp_path)
    assert result.verdict == "capacity" and result.capacity == pytest.approx(0.355 * R, rel=0.05), result
    for fraction in (0.5, 0.9):
        step = result.at(fraction)
        assert step is not None and step.rate == pytest.approx(fraction * result.capacity, rel=0.10), fraction
        assert step.latency_us["p99"] == pytest.approx(100 / (1 - step.rate / R), rel=0.01)
    from corobench.report.capacity import summary_rows

    [row] = summary_rows([result])
    assert f"at {result.at(0.5).rate:.0f}/s" in row[3] and f"at {result.at(0.9).rate:.0f}/s" in row[4]


def test_dry_run_prints_the_search_and_its_estimate_and_runs_nothing(results):
    proc = corobench("capacity", "http", "--slo", "p99=1ms", "--reps", "3", "--impl", "fake-server-good",
                     "--dry-run", results=results, impls=ROOT / "tests" / "fixtures" / "fake-servers")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[0] == "a capacity search at p99 ≤ 1 ms of 1 program(s): fake-server-good"
    assert "of 3 run(s) of 1 s warm-up + 5 s" in lines[1]
    # 2 + 6.4 s x (1 + steps x 3) for 6 and 14 steps: 123.6 s to 277.2 s
    assert lines[2] == "estimate: 2m 04s to 4m 37s"
    assert not (results / "corobench.sqlite").exists()  # no session, nothing built or run


def test_a_max_rate_below_the_series_start_is_still_searched_from():
    """--max-rate 2000 against a 31.6k/s estimate gave no step at all ("no step ran")."""
    assert Search(parse_objective(["p99=1ms"]), max_rate=2000).series(31_600) == [2000]
    assert Search(parse_objective(["p99=1ms"]), max_rate=10**9).series(1000)[0] == 250


def test_a_search_that_ran_out_of_rates_says_the_capacity_is_at_least_its_top(tmp_path):
    from corobench.capacity import judge

    objective = parse_objective(["p99=1ms"])
    steps = [Step(rate=r, achieved=r, latency_us={"p99": 100.0}) for r in (1000, 1300, 2000)]
    result = judge("p", 3000, steps, objective)
    assert (result.verdict, result.capacity, result.first_fail) == ("capacity", 2000, None)
    assert "at least" in result.note and "2000/s" in result.note
