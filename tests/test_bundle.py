"""Bundles: `corobench export` and `import` round trips, idempotence, hostile bundles, and the
comparability key that keeps two machines' sessions apart."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from dataclasses import fields
from pathlib import Path
from typing import Callable

import pytest

from conftest import FAKES, corobench
from corobench import comparability
from corobench.bundle import FORMAT, MAX_LINE_BYTES, RUN_FIELDS, SESSION_FIELDS, VERSION
from corobench.results import build_cells
from corobench.store import RUN_COLUMNS, Store

import scale

DB = "corobench.sqlite"


def register_commands() -> None:
    """export, import and site on the CLI, whether or not cli.py registers them yet."""
    from corobench.cli import cli
    from corobench.cli_results import COMMANDS

    for command in COMMANDS:
        if command.name not in cli.commands:
            cli.add_command(command)


register_commands()


def lines_of(bundle: Path) -> list[dict]:
    with gzip.open(bundle, "rt") as f:
        return [json.loads(line) for line in f]


def write_lines(path: Path, records: list) -> Path:
    with gzip.open(path, "wt") as f:
        for record in records:
            f.write((record if isinstance(record, str) else json.dumps(record)) + "\n")
    return path


def dump(db: Path) -> list[tuple]:
    """Everything stored, as rows: to show that an import changed nothing."""
    con = sqlite3.connect(db)
    try:
        return (con.execute("SELECT * FROM sessions ORDER BY id").fetchall()
                + con.execute("SELECT * FROM runs ORDER BY id").fetchall())
    finally:
        con.close()


def one_line_error(proc, *fragments: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    message = proc.stderr.strip()
    assert "\n" not in message and message.startswith("corobench: error: "), message
    for fragment in fragments:
        assert fragment in message, message


@pytest.fixture(scope="module")
def original(tmp_path_factory) -> Path:
    """Two sessions of chain: fake-good verified, fake-crash FAILED with its reason and stderr."""
    results = tmp_path_factory.mktemp("bundle") / "results"
    for _ in range(2):
        proc = corobench("run", "chain", "-w", "2", "-e", "3", "--reps", "3", "--impl", "fake-good,fake-crash",
                         results=results, impls=FAKES)
        assert proc.returncode == 1, proc.stderr  # fake-crash FAILED
    return results


@pytest.fixture(scope="module")
def bundle(original, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bundle-file") / "two.jsonl.gz"
    proc = corobench("export", "--out", str(out), results=original)
    assert proc.returncode == 0, proc.stderr
    assert "exported 2 session(s), 12 run(s)" in proc.stdout
    return out


def test_a_bundle_is_a_header_sessions_with_their_runs_and_an_end_line(bundle, original):
    records = lines_of(bundle)
    header, end = records[0], records[-1]
    assert header["format"] == FORMAT and header["version"] == VERSION and header["corobench"] and header["created"]
    assert end == {"type": "end", "sessions": 2, "runs": 12}
    sessions = [r for r in records if r.get("type") == "session"]
    runs = [r for r in records if r.get("type") == "run"]
    assert [s["runs"] for s in sessions] == [6, 6] and len(runs) == 12
    for s in sessions:
        assert set(s) == set(SESSION_FIELDS)
        assert s["machine"]["cpu_model"] and s["toolchains"]["fake-good"].startswith("Python")
    for r in runs:
        assert set(r) == set(RUN_FIELDS)
    with Store(original / DB) as store:
        assert [s["uid"] for s in sessions] == [s.uid for s in store.sessions()]
    failed = [r for r in runs if r["status"] == "failed"]
    assert failed and all(r["reason"] and r["failure_kind"] for r in failed)
    assert any("about to crash" in (r["stderr_tail"] or "") for r in failed)
    ok = [r for r in runs if r["status"] == "ok"]
    assert all(r["wall_ns"] and r["elapsed_ns"] and r["result"]["checksum"] for r in ok)


def test_export_then_import_into_an_empty_folder_compares_the_same(bundle, original, tmp_path):
    imported = tmp_path / "results"
    proc = corobench("import", str(bundle), results=imported)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "2 session(s) imported (12 run(s)), 0 already present as sessions 1–2"
    for fmt in ("json", "table", "md"):
        before = corobench("compare", "1", "2", "--format", fmt, results=original)
        after = corobench("compare", "1", "2", "--format", fmt, results=imported)
        assert before.returncode == after.returncode == 0, after.stderr
        assert after.stdout == before.stdout, fmt
    shown = corobench("show", "session", "2", results=imported)
    assert shown.returncode == 0 and "fake-crash" in shown.stdout


def test_importing_twice_changes_nothing(bundle, tmp_path):
    results = tmp_path / "results"
    assert corobench("import", str(bundle), results=results).returncode == 0
    before = dump(results / DB)
    again = corobench("import", str(bundle), str(bundle), results=results)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1] == "0 session(s) imported (0 run(s)), 4 already present"
    assert dump(results / DB) == before


def test_bundles_concatenated_are_one_bundle(original, tmp_path):
    a, b = tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl.gz"
    assert corobench("export", "1", "--out", str(a), results=original).returncode == 0
    assert corobench("export", "latest", "--out", str(b), results=original).returncode == 0
    both = tmp_path / "both.jsonl.gz"
    both.write_bytes(a.read_bytes() + b.read_bytes())  # what `cat a b > both` makes
    proc = corobench("import", str(both), results=tmp_path / "results")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("2 session(s) imported (12 run(s))")


def test_every_field_of_every_run_travels(tmp_path):
    """Synthetic sessions with every scenario, server runs with histograms and RSS series,
    FAILED runs with stderr, and client hosts: stored the same after the round trip."""
    source, target = tmp_path / "a" / DB, tmp_path / "b"
    scale.generate(source, sessions=3, runs_per_session=1000)
    out = tmp_path / "all.jsonl.gz"
    assert corobench("export", "--out", str(out), results=source.parent).returncode == 0
    assert corobench("import", str(out), results=target).returncode == 0
    with Store(source) as a, Store(target / DB) as b:
        sa, sb = a.sessions(), b.sessions()
        assert len(sa) == len(sb) == 3
        for x, y in zip(sa, sb):
            for f in fields(x):
                if f.name != "harness_token":  # bookkeeping of the harness that ran it: not results
                    assert getattr(x, f.name) == getattr(y, f.name), f.name
            ra, rb = a.runs(x.id), b.runs(y.id)
            assert len(ra) == len(rb) == 1000
            for r, s in zip(ra, rb):
                for name in (*RUN_COLUMNS, "id", "started_at"):
                    assert getattr(r, name) == getattr(s, name), name
        servers = [r for r in b.runs(1) if r.scenario == "http"]
        assert servers[0].result["client"]["histogram"].startswith("HISTF")
        assert servers[0].metrics["rss_series"] and b.sessions()[2].machine["hosts"]["client1"]["cores"] == 8


def test_export_names_its_sessions_as_compare_does(original, tmp_path):
    out = tmp_path / "x.jsonl.gz"
    proc = corobench("export", "latest~1", "latest", "1", "--out", str(out), results=original)
    assert proc.returncode == 0 and "exported 2 session(s)" in proc.stdout
    one_line_error(corobench("export", "7", "--out", str(out), results=original), "no session 7")
    one_line_error(corobench("export", "latest~5", "--out", str(out), results=original), "no session latest~5")
    one_line_error(corobench("export", "--out", str(out), results=tmp_path / "none"), "no results database")
    one_line_error(corobench("export", "--out", str(tmp_path / "no" / "such" / "x.gz"), results=original),
                   "no folder")
    one_line_error(corobench("import", str(tmp_path / "missing.gz"), results=tmp_path / "r"), "no bundle at")


# --------------------------------------------------------------------------- hostile bundles

def _edit(records: list[dict], predicate: Callable[[dict], bool], change: Callable[[dict], None]) -> list[dict]:
    for record in records:
        if predicate(record):
            change(record)
            break
    return records


def is_run(r: dict) -> bool:
    return r.get("type") == "run"


def last_session_run(records: list[dict]) -> dict:
    return [r for r in records if is_run(r)][-1]


HOSTILE: dict[str, tuple[Callable[[list[dict], Path], object], tuple[str, ...]]] = {
    "not gzip": (lambda recs, p: p.write_bytes(b"PK\x03\x04 not a bundle at all" * 10),
                 ("not a readable corobench bundle",)),
    "truncated gzip": (lambda recs, p: None, ("truncated or damaged",)),  # made from the real file below
    "empty": (lambda recs, p: write_lines(p, []), ("empty",)),
    "newer version": (lambda recs, p: write_lines(p, [{**recs[0], "version": VERSION + 1}, *recs[1:]]),
                      ("line 1:", f"version {VERSION + 1} is newer")),
    "no header": (lambda recs, p: write_lines(p, recs[1:]), ("line 1:", "not a corobench bundle")),
    "garbage line": (lambda recs, p: write_lines(p, [recs[0], "{not json", *recs[1:]]), ("line 2:", "not a JSON line")),
    "wrong type": (lambda recs, p: write_lines(p, _edit(recs, is_run, lambda r: r.update(rep="1"))),
                   ("line 3:", "field 'rep' of a run line must be a whole number")),
    "wrong type late": (lambda recs, p: write_lines(p, [*recs[:-2], {**recs[-2], "argv": [1, 2]}, recs[-1]]),
                        ("line 15:", "'argv'", "a list of strings")),
    "integer out of range": (lambda recs, p: write_lines(p, _edit(recs, is_run, lambda r: r.update(exit_code=2**70))),
                             ("line 3:", "64-bit integer")),
    "10 MB line": (lambda recs, p: write_lines(p, _edit(recs, is_run, lambda r: r.update(stderr_tail="x" * 10**7))),
                   ("line 3 is longer than 8 MiB",)),
    "unknown field": (lambda recs, p: write_lines(p, _edit(recs, is_run, lambda r: r.update(evil=1))),
                      ("line 3:", "unknown field 'evil'")),
    "missing field": (lambda recs, p: write_lines(p, _edit(recs, is_run, lambda r: r.pop("argv"))),
                      ("line 3:", "lacks the field 'argv'")),
    "NaN": (lambda recs, p: write_lines(p, [recs[0], json.dumps(recs[1]).replace('"cores": 2', '"cores": NaN'),
                                              *recs[2:]]), ("line 2:", "NaN is not JSON")),
    "nested too deep": (lambda recs, p: write_lines(p, [recs[0], '{"type": "session", "machine": ' + "[" * 100000
                                                         + "]" * 100000 + "}", *recs[1:]]), ("line 2:", "nests")),
    "unknown scenario": (lambda recs, p: write_lines(p, _edit(recs, is_run, lambda r: r.update(scenario="evil"))),
                         ("line 3:", "unknown scenario 'evil'")),
    "wrong parameter": (lambda recs, p: write_lines(p, _edit(recs, is_run, lambda r: r["params"].update(etype="x"))),
                        ("line 3:", "parameter 'etype' of chain must be one of")),
    "figures that cannot be computed": (
        lambda recs, p: write_lines(p, _edit(recs, lambda r: is_run(r) and r["status"] == "ok",
                                             lambda r: r["params"].pop("workers"))),
        ("line 3:", "the metric speed of this chain run cannot be computed")),
    "a running session": (lambda recs, p: write_lines(p, _edit(recs, lambda r: r.get("type") == "session",
                                                               lambda r: r.update(status="running"))),
                          ("line 2:", "field 'status' of a session line must be one of finished")),
    "cut at a line": (lambda recs, p: write_lines(p, recs[:-3]), ("before its end line: truncated",)),
    "a run too many": (lambda recs, p: write_lines(p, [*recs[:-1], {**last_session_run(recs), "id": 99}, recs[-1]]),
                       ("line 16:", "more run lines than the 6 its session line says")),
    "wrong end count": (lambda recs, p: write_lines(p, [*recs[:-1], {**recs[-1], "runs": 11}]),
                        ("line 16:", "the end line counts 11 runs")),
    "a run of another session": (lambda recs, p: write_lines(p, _edit(recs, is_run, lambda r: r.update(session="x"))),
                                 ("line 3:", "a run of session \"x\"")),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_bundle_is_refused_in_one_line_and_nothing_is_stored(case, bundle, tmp_path):
    make, fragments = HOSTILE[case]
    path = tmp_path / "hostile.jsonl.gz"
    if case == "truncated gzip":
        data = bundle.read_bytes()
        path.write_bytes(data[:len(data) * 2 // 3])
    else:
        make(lines_of(bundle), path)
    results = tmp_path / "results"
    proc = corobench("import", str(bundle), str(path), results=results)  # a good bundle first: it stays out too
    one_line_error(proc, str(path), *fragments)
    assert not (results / DB).exists()


def test_a_hostile_line_cannot_reach_past_its_bound(tmp_path):
    """A line of several times the bound, in one gzip member: refused having read only the bound."""
    path = tmp_path / "long.jsonl.gz"
    with gzip.open(path, "wb") as f:
        f.write(json.dumps({"format": FORMAT, "version": VERSION}).encode() + b"\n")
        f.write(b"[" + b"0," * (2 * MAX_LINE_BYTES) + b"0]\n")
    one_line_error(corobench("import", str(path), results=tmp_path / "r"), "line 2 is longer than 8 MiB")


# --------------------------------------------------------------------------- two machines

def other_machine(bundle: Path, out: Path, machine: dict, uid: str = "other0001") -> Path:
    """The bundle's last session as if it had run on another machine (and is another session)."""
    records = lines_of(bundle)
    session = [r for r in records if r.get("type") == "session"][-1]
    runs = [r for r in records if is_run(r) and r["session"] == session["uid"]]
    session.update(uid=uid, machine={**session["machine"], **machine})
    for r in runs:
        r["session"] = uid
    return write_lines(out, [records[0], session, *runs, {"type": "end", "sessions": 1, "runs": len(runs)}])


def test_sessions_of_two_machines_get_different_keys(bundle, original, tmp_path):
    results = tmp_path / "results"
    shutil.copytree(original, results)
    xeon = {"cpu_model": "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", "cores": 8, "memory_bytes": 33_280_000_000,
            "hostname": "bench-b"}
    proc = corobench("import", str(other_machine(bundle, tmp_path / "b.jsonl.gz", xeon)), results=results)
    assert proc.returncode == 0 and "1 session(s) imported (6 run(s)), 0 already present as session 3" in proc.stdout
    with Store(results / DB) as store:
        s1, s2, s3 = store.sessions()
        assert s3.machine["cpu_model"].startswith("Intel") and s3.uid == "other0001"
        same = comparability.comparable(s1, s2)
        assert same.comparable and same.why is None
        apart = comparability.comparable(s1, s3)
        assert not apart.comparable
        arch = s1.machine.get("arch") or "unknown"
        assert apart.why == (f"different machines: {comparability.machine_label(s1.machine)} vs Intel(R) Xeon(R) "
                             f"Platinum 8375C CPU @ 2.90GHz, 8 cores, 31 GiB, {arch}")
        cells1, cells3 = build_cells(store.runs(s1.id)), build_cells(store.runs(s3.id))
        cells2 = build_cells(store.runs(s2.id))
    keys1 = {comparability.key(s1, c) for c in cells1}
    keys2 = {comparability.key(s2, c) for c in cells2}
    keys3 = {comparability.key(s3, c) for c in cells3}
    assert keys1 == keys2  # the same machine, toolchains and work: the same keys
    assert not keys1 & keys3
    by_program = {k.program: k for k in keys1}
    for k in keys3:
        assert comparability.difference(by_program[k.program], k) == (
            f"machine {by_program[k.program].machine} vs {k.machine}")


def test_the_machine_fingerprint_keeps_what_identifies_a_machine():
    base = {"hostname": "a", "cpu_model": "AMD EPYC 7B13", "cores": 2, "memory_bytes": int(23.4 * 2**30),
            "kernel": "6.1.0-18-amd64", "os": "Debian 12", "loadavg": [1, 2, 3], "arch": "x86_64",
            "limits": {"open_files": 1024}}
    fp = comparability.machine_fingerprint(base)
    for same in ({"hostname": "b"}, {"memory_bytes": int(23.9 * 2**30)}, {"kernel": "6.18.44"},
                 {"loadavg": [9, 9, 9]}, {"cpu_model": "AMD  EPYC 7B13 "}, {"os": "Debian 13"}, {"limits": {}}):
        assert comparability.machine_fingerprint({**base, **same}) == fp, same
    for other in ({"cores": 4}, {"cpu_model": "AMD EPYC 9654"}, {"memory_bytes": 32 * 2**30}, {"arch": "aarch64"}):
        assert comparability.machine_fingerprint({**base, **other}) != fp, other
    assert comparability.machine_label(base) == "AMD EPYC 7B13, 2 cores, 24 GiB, x86_64"
    assert comparability.machine_fingerprint({}) == comparability.machine_fingerprint({"hostname": "x"})


def test_the_topology_fingerprint_is_the_load_layout():
    local = {"loadgen": "corobench-load", "topology": {
        "server": {"host": "local", "cpus": [0], "bind": "127.0.0.1"},
        "clients": [{"host": "local", "kind": "local", "cpus": [1]}]}}
    fp = comparability.topology_fingerprint(local)
    assert fp is not None and fp.startswith("t-")
    assert comparability.topology_fingerprint({"reps": 5, "threads": None}) is None  # batch only
    moved = json.loads(json.dumps(local))
    moved["topology"]["server"]["cpus"] = [1]
    moved["topology"]["clients"][0]["cpus"] = [0]
    assert comparability.topology_fingerprint(moved) == fp  # the same counts on other CPU numbers
    two = json.loads(json.dumps(local))
    two["topology"]["clients"].append({"host": "local", "kind": "local", "cpus": [1]})
    assert comparability.topology_fingerprint(two) != fp  # two agents
    wrk = {**local, "loadgen": "wrk"}
    assert comparability.topology_fingerprint(wrk) != fp
    remote = {"loadgen": "corobench-load", "topology": {
        "server": {"host": "local", "cpus": [0, 1], "bind": "10.0.0.1"},
        "clients": [{"host": "client1", "kind": "ssh", "cpus": None}]}}
    hosts_a = {"client1": {"cpu_model": "Xeon", "cores": 8}}
    hosts_b = {"client1": {"cpu_model": "Xeon", "cores": 16}}
    assert comparability.topology_fingerprint(remote, hosts_a) != comparability.topology_fingerprint(remote, hosts_b)
    assert comparability.topology_label(remote, hosts_a) == (
        "corobench-load; server 2 CPUs over the network; clients: client1 ×1")
    old = {"server_cpus": [0], "client_cpus": [1], "loadgen": "corobench-load"}  # before topologies were stored
    assert comparability.topology_label(old) == "corobench-load; server 1 CPU; clients: local ×1 on 1 CPU"
