import pytest

from corobench.errors import UsageError
from corobench.scenarios import CHECKSUM_MAX, get_scenario


def parse_etype(text):
    return get_scenario("chain").param("etype").parse(text)
from corobench.suite import expand


def test_chain_checksum_arithmetic():
    chain = get_scenario("chain")
    p = chain.normalise({"workers": 1000, "events": 10000, "esize": 10, "etype": "2"})
    assert chain.expected_checksum(p) == 100_000_000
    assert chain.expected_fields(p) == {"received": 10_000_000}
    assert p["etype"] == "str_ptr"


def test_chain_checksum_range_is_int64():
    chain = get_scenario("chain")
    ok = chain.normalise({"workers": 1, "events": 1, "esize": CHECKSUM_MAX})
    assert chain.expected_checksum(ok) == CHECKSUM_MAX
    with pytest.raises(UsageError, match="2\\^63-1"):
        chain.normalise({"workers": 2, "events": 1, "esize": CHECKSUM_MAX})


def test_tasks_and_blocking_checksums():
    assert get_scenario("tasks").expected_checksum({"tasks": 123, "sleep_ms": 0}) == 123
    b = get_scenario("blocking")
    assert b.expected_checksum({"tasks": 1000, "iterations": 1000, "bytes": 10}) == 10_000_000


@pytest.mark.parametrize("text,name", [("0", "int"), ("1", "str"), ("2", "str_ptr"), ("3", "str_clone"),
                                       ("str_clone", "str_clone")])
def test_etype_names(text, name):
    assert parse_etype(text) == name


@pytest.mark.parametrize("bad", ["4", "-1", "string", ""])
def test_bad_etype(bad):
    with pytest.raises(UsageError):
        parse_etype(bad)


@pytest.mark.parametrize("raw", [{"workers": 0}, {"workers": -3}, {"events": "x"}, {"queue": 1.5}])
def test_bad_counts(raw):
    with pytest.raises(UsageError):
        get_scenario("chain").normalise(raw)


def test_sleep_zero_allowed_but_not_negative():
    tasks = get_scenario("tasks")
    assert tasks.normalise({"sleep_ms": 0})["sleep_ms"] == 0
    with pytest.raises(UsageError):
        tasks.normalise({"sleep_ms": -1})


def test_argv_uses_long_flags():
    chain = get_scenario("chain")
    argv = chain.argv(chain.normalise({"workers": 3, "etype": "1"}))
    assert argv == ["chain", "--workers", "3", "--events", "10000", "--queue", "256", "--etype", "str",
                    "--esize", "10"]


def test_expand_is_a_cartesian_product():
    sets = expand("chain", {"workers": [1, 2], "etype": ["int", "str", "str_ptr"], "events": 5})
    assert len(sets) == 6
    assert {(p["workers"], p["etype"]) for p in sets} == {(w, t) for w in (1, 2) for t in ("int", "str", "str_ptr")}


def test_unknown_scenario():
    with pytest.raises(UsageError, match="unknown scenario"):
        get_scenario("pingpong")


@pytest.mark.parametrize("name", ["echo", "http"])
def test_client_bound_only_when_the_server_had_cpu_to_spare(name):
    caveats = get_scenario(name).caveats
    [warning] = caveats({}, {"client_cpu_share": 0.96, "server_cpu_share": 0.83})
    assert "client's limit" in warning and warning.detail == "client 96%, server 83%"
    assert caveats({}, {"client_cpu_share": 0.96, "server_cpu_share": 0.98}) == []  # the server was the limit too
    assert caveats({}, {"client_cpu_share": 0.50, "server_cpu_share": 0.40}) == []
    [older] = caveats({}, {"client_cpu_share": 0.96})  # runs stored without the server's share
    assert "may be the client's limit" in older


def test_a_latency_tail_far_above_the_median_is_named():
    from corobench.scenarios import get_scenario

    http = get_scenario("http")
    params = {"connections": 2020, "duration": 10, "warmup_s": 2, "requests": 0, "rate": 0}
    # rust-tokio at 2020 connections (docs/results/seed-http): p50 4.63 ms, p99 294 ms
    warned = http.caveats(params, {"lat_p50_us": 4630.0, "lat_p99_us": 294000.0})
    assert any("p99 far above the median" in w and w.detail == "p99 63x p50" for w in warned)
    # monoio in the same cell: p50 16.1 ms, p99 25.4 ms — a tail like every other runtime's
    assert not any("p99 far above" in w for w in http.caveats(params, {"lat_p50_us": 16100.0, "lat_p99_us": 25400.0}))
    # a large ratio at sub-millisecond latencies (a VM's late wake-ups) is not the finding
    assert not any("p99 far above" in w for w in http.caveats(params, {"lat_p50_us": 100.0, "lat_p99_us": 2000.0}))
