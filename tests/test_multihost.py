"""Servers loaded from other machines, for real: client hosts are network namespaces running real
sshd (tests/testnet.py), reached by the system ssh, the server bound to this machine's address on
that test network. Faults — an unreachable host, an agent killed mid-run, a dropped connection, a
killed harness, a stale copy of the load generator, a host of another architecture — are FAILED
with the host named, and leave nothing running on any host."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import testnet
from conftest import ROOT, corobench
from impls import require, require_tool

SERVERS = ROOT / "tests" / "fixtures" / "fake-servers"
SHIFT_S = 7  # client2's monotonic clock runs this far ahead of this machine's

why_not = testnet.available()
if why_not and os.environ.get("CI") == "true":
    pytest.fail(f"CI must run the multi-host tests: {why_not}", pytrace=False)
pytestmark = pytest.mark.skipif(why_not is not None, reason=why_not or "")


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    require_tool("corobench-load")
    network = testnet.TestNetwork(tmp_path_factory.mktemp("net"))
    try:
        network.add_host("client1")
        network.add_host("client2", monotonic_offset_s=SHIFT_S)
        yield network
    finally:
        network.close()


@pytest.fixture
def hosts(net, tmp_path) -> Path:
    return net.hosts_file(tmp_path / "hosts.toml", [{"name": "client1", "ssh": "client1"},
                                                    {"name": "client2", "ssh": "client2"}])


def rows(results: Path) -> list[dict]:
    db = sqlite3.connect(results / "corobench.sqlite")
    db.row_factory = sqlite3.Row
    return [dict(r) for r in db.execute("SELECT * FROM runs ORDER BY id")]


def nothing_left(net, within_s: float = 10) -> bool:
    """No load generator on any test host, and no server here."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        remote = [p for h in net.hosts.values() for p in h.processes("corobench-load")
                  if "clock" not in open(f"/proc/{p}/cmdline", "rb").read().decode(errors="replace")]
        # this test's servers: bound to this machine's address on the test network
        local = subprocess.run(["pgrep", "-f", f"--host {net.server_address} "], capture_output=True,
                               text=True).stdout.split()
        if not remote and not local:
            return True
        time.sleep(0.2)
    return False


def check_merged(row: dict) -> None:
    """The run's figures are the agents' put together: rates summed, the server's count their sum."""
    result, metrics = json.loads(row["result"]), json.loads(row["metrics"])
    agents = result["client"]["agents"]
    assert len(agents) == 2 and {a["host"] for a in agents} == {"client1", "client2"}
    assert metrics["rps"] == pytest.approx(sum(a["rate"] for a in agents), rel=1e-6)
    assert result["final"]["requests"] == sum(a["requests"] for a in agents)
    shifted = next(a for a in agents if a["host"] == "client2")
    assert abs(shifted["offset_ns"] - SHIFT_S * 10**9) <= shifted["offset_error_ns"] + 1_000_000


def test_http_from_two_hosts_is_verified_and_merged(net, hosts, results):
    for impl in ("rust-tokio", "go"):
        require(impl)
    proc = corobench("run", "http", "--hosts", str(hosts), "--impl", "rust-tokio:httparse,go", "--connections", "8",
                     "--duration", "2", "--warmup-s", "1", "--reps", "2", "--no-build", results=results,
                     in_process=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    measured = [r for r in rows(results) if r["rep"] > 0]
    assert len(measured) == 4 and all(r["status"] == "ok" for r in measured)
    for row in measured:
        check_merged(row)
        argv = json.loads(row["argv"])
        assert argv[argv.index("--host") + 1] == net.server_address and "--allow-remote" in argv
    assert nothing_left(net)


def test_echo_50000_short_connections_spread_over_two_hosts(net, hosts, results):
    require("go")
    proc = corobench("run", "echo", "--hosts", str(hosts), "--impl", "go:concurrent", "--connections", "50000",
                     "--concurrency", "100", "--reps", "1", "--no-build", results=results, in_process=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (row,) = [r for r in rows(results) if r["rep"] == 1]
    result = json.loads(row["result"])
    agents = result["client"]["agents"]
    assert [a["requests"] for a in agents] == [25000, 25000]
    assert result["final"]["requests"] == 50000 == result["final"]["connections"]
    assert nothing_left(net)


def test_hosts_check_reports_each_host_and_a_shifted_clock_within_its_bound(net, hosts):
    from corobench.hosts.ssh import SshHost

    proc = corobench("hosts", "check", str(hosts), in_process=False, env={"COLUMNS": "250"})
    assert proc.returncode == 0, proc.stderr
    out = " ".join(proc.stdout.split())
    assert "client1" in out and "client2" in out and "x86_64" in out
    printed = re.search(r"client2 .*?([+-][0-9]+\.[0-9]+) s ± ", out)
    assert printed and abs(float(printed.group(1)) - SHIFT_S) < 0.02, out  # the shifted host's offset, as printed
    same = re.search(r"client1 .*?([+-][0-9]+\.[0-9]) µs ± ", out)  # one clock with ours: µs, not "-0.000000 s"
    assert same and abs(float(same.group(1))) < 1000, out
    host = SshHost("client2", "client2", config=str(net.ssh_config))
    try:
        offset, error = host.clock_offset()
    finally:
        host.close()
    print(f"client2 clock offset {offset / 1e9:+.6f} s ± {error / 1e3:.0f} µs (shift {SHIFT_S} s)")
    assert abs(offset - SHIFT_S * 10**9) <= error, (offset, error)  # the true offset lies within the bound
    assert 0 < error < 20_000_000


def test_an_asymmetric_delay_moves_the_estimate_but_the_bound_still_holds(net):
    """40 ms on the way to the host, none back: the midpoint estimate is 20 ms off, and the stated
    bound (half the round trip) still contains the true offset, 0."""
    from corobench.hosts.ssh import SshHost

    relay = ROOT / "tests" / "fixtures" / "slowlink" / "slowlink.py"
    host = SshHost("slow", "client1", ["-o", "ControlPath=none", "-o", f"ProxyCommand={sys.executable} {relay} "
                                       f"{net.hosts['client1'].address} 22 40 0"], config=str(net.ssh_config))
    try:
        offset, error = host.clock_offset()
    finally:
        host.close()
    assert error >= 20_000_000 and abs(offset) <= error, (offset, error)
    assert offset > 10_000_000  # the delay did move the estimate: the bound is what keeps it honest


def test_an_unreachable_host_fails_the_run_and_names_it(net, tmp_path, results):
    hosts = net.hosts_file(tmp_path / "hosts.toml", [{"name": "client1", "ssh": "client1"},
                                                     {"name": "ghost", "ssh": "ghost",
                                                      "ssh_options": ["-o", f"HostName={net.prefix}.250",
                                                                      "-o", "ConnectTimeout=2"]}])
    proc = corobench("run", "http", "--hosts", str(hosts), "--impl", "fake-server-good", "--connections", "4",
                     "--duration", "1", "--warmup-s", "0", "--reps", "1", "--no-build", "--timeout", "60",
                     results=results, impls=SERVERS, in_process=False)
    assert proc.returncode == 1, proc.stderr[-1500:]
    (verify,) = [r for r in rows(results) if r["rep"] == 0]
    assert verify["status"] == "failed" and "ghost" in verify["reason"], verify["reason"]
    assert nothing_left(net)


def background_run(results: Path, hosts: Path, duration: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "corobench", "--results", str(results), "--impls", str(SERVERS),
                             "run", "http", "--hosts", str(hosts), "--impl", "fake-server-good", "--connections", "4",
                             "--duration", str(duration), "--warmup-s", "0", "--reps", "1", "--no-build"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_agent(net, host: str, within_s: float = 60) -> int:
    """The pid of the measured run's agent on a host, once it runs (not the verification run's)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        for pid in net.hosts[host].processes("--start-at"):
            return pid
        time.sleep(0.05)
    raise AssertionError(f"no agent started on {host}")


def test_an_agent_killed_mid_run_fails_the_run_and_names_its_host(net, hosts, results):
    proc = background_run(results, hosts, duration=8)
    try:
        pid = wait_for_agent(net, "client2")
        time.sleep(2.5)
        os.kill(pid, signal.SIGKILL)
        _, stderr = proc.communicate(timeout=90)
    finally:
        proc.kill()
    assert proc.returncode == 1, stderr[-1500:]
    (measured,) = [r for r in rows(results) if r["rep"] == 1]
    assert measured["status"] == "failed" and "agent 1 on client2" in measured["reason"], measured["reason"]
    assert nothing_left(net)


def test_a_dropped_connection_fails_the_run_and_the_agent_stops_by_itself(net, hosts, results):
    proc = background_run(results, hosts, duration=8)
    try:
        agent = wait_for_agent(net, "client1")
        time.sleep(2.5)
        # the ssh carrying client1's agent, on this machine: its death drops the agent's channel
        carriers = subprocess.run(["pgrep", "-f", f"ssh .*client1 .*--start-at"], capture_output=True,
                                  text=True).stdout.split()
        assert carriers
        for pid in carriers:
            os.kill(int(pid), signal.SIGKILL)
        _, stderr = proc.communicate(timeout=90)
    finally:
        proc.kill()
    assert proc.returncode == 1, stderr[-1500:]
    (measured,) = [r for r in rows(results) if r["rep"] == 1]
    assert measured["status"] == "failed" and "client1" in measured["reason"], measured["reason"]
    assert not net.hosts["client1"].processes(f"{agent}") or nothing_left(net)
    assert nothing_left(net)


def test_a_killed_harness_leaves_no_load_on_any_host(net, hosts, results):
    proc = background_run(results, hosts, duration=20)
    try:
        wait_for_agent(net, "client1")
        wait_for_agent(net, "client2")
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert nothing_left(net, within_s=15)  # every agent saw its stdin close and stopped
    after = corobench("sessions", results=results, in_process=False)
    assert "session 1 was abandoned" in after.stderr


def test_a_stale_copy_is_replaced_and_a_host_of_another_architecture_refused(net, hosts, tmp_path, results):
    from corobench.hosts.ssh import REMOTE_CACHE, SshHost
    from corobench.loadgens.corobench_load import binary

    host = SshHost("client1", "client1", config=str(net.ssh_config))
    try:
        remote = host.install(binary())
        assert host.is_current(binary())
        host.run(f"printf stale > {remote}")  # an older or damaged copy under the same name
        assert not host.is_current(binary())
    finally:
        host.close()
    check = corobench("hosts", "check", str(hosts), in_process=False, env={"COLUMNS": "250"})
    assert check.returncode == 0 and "copied" in check.stdout.split("client2")[0]  # copied again
    assert REMOTE_CACHE.startswith("~/.cache")

    net.add_host("armhost", arch="aarch64")
    odd = net.hosts_file(tmp_path / "odd.toml", [{"name": "armhost", "ssh": "armhost"}])
    refused = corobench("hosts", "check", str(odd), in_process=False, env={"COLUMNS": "250"})
    assert refused.returncode == 1 and "armhost: it is aarch64" in " ".join(refused.stdout.split())
    run = corobench("run", "http", "--hosts", str(odd), "--impl", "fake-server-good", "--connections", "2",
                    "--duration", "1", "--warmup-s", "0", "--reps", "1", "--no-build", results=results,
                    impls=SERVERS, in_process=False)
    assert run.returncode == 1 and "it is aarch64" in rows(results)[0]["reason"]
    assert nothing_left(net)


def test_local_agents_merge_like_hosts(results):
    require_tool("corobench-load")
    proc = corobench("run", "http", "--clients", "2", "--impl", "fake-server-good", "--connections", "4",
                     "--duration", "1", "--warmup-s", "0", "--reps", "1", "--no-build", results=results,
                     impls=SERVERS)
    assert proc.returncode == 0, proc.stderr
    (row,) = [r for r in rows(results) if r["rep"] == 1]
    result, metrics = json.loads(row["result"]), json.loads(row["metrics"])
    agents = result["client"]["agents"]
    assert [a["host"] for a in agents] == ["local", "local"] and metrics["agents"] == 2
    assert metrics["rps"] == pytest.approx(sum(a["rate"] for a in agents), rel=1e-6)
    assert result["final"]["requests"] == sum(a["requests"] for a in agents)
