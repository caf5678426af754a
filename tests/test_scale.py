"""Scale, the CI size: 10 sessions x 1,000 runs of every scenario (tests/scale.py), and `compare`,
`export`, `import` and `site` over them as fresh processes, each well within a minute and with
bounded memory. The full measurement (10k, 30k and 100k runs, `report` included: its cost is one
session's charts, whatever the database holds) is `python tests/scale.py measure`, its figures in
docs/bundles.md."""

from __future__ import annotations

import json
import sys
import pytest

import scale

SESSIONS, RUNS = 10, 1000
BUDGET_S = 60
BUDGET_MIB = 600  # peak RSS of one command: bounded by a session's runs, not by the database


@pytest.mark.scale
def test_ten_thousand_runs(tmp_path):
    results = tmp_path / "results"
    assert scale.generate(results / "corobench.sqlite", SESSIONS, RUNS) == SESSIONS * RUNS
    launcher = tmp_path / "run_corobench.py"
    launcher.write_text(scale.LAUNCHER)
    figures = {}
    for name, argv in scale.commands(results, tmp_path).items():
        if name == "report":
            continue  # one session's charts, the same at any database size: measured by tests/scale.py
        seconds, rss, code = scale.measured([sys.executable, str(launcher), *argv[3:]], {})
        figures[name] = (round(seconds, 1), round(rss))
        assert code == 0, name
    print(json.dumps(figures))
    for name, (seconds, rss) in figures.items():
        assert seconds < BUDGET_S and rss < BUDGET_MIB, (name, seconds, rss)
    site = tmp_path / "site"
    data = {p.stem: p.stat().st_size for p in (site / "data").glob("*.js")}
    assert set(data) == {"chain", "tasks", "blocking", "echo", "http"}
    assert max(data.values()) < 4 * 2**20  # a page loads its own scenario's data only
    assert len(list((site / "runs").rglob("*.js"))) == SESSIONS * 5
    imported = tmp_path / "imported" / "corobench.sqlite"
    assert imported.is_file()
    from corobench.store import Store

    with Store(imported) as store:
        sessions = store.sessions()
        assert len(sessions) == SESSIONS and sum(s.n_runs for s in sessions) == SESSIONS * RUNS


def test_the_generator_writes_every_scenario_with_servers_and_failures(tmp_path):
    db = tmp_path / "r" / "corobench.sqlite"
    scale.generate(db, 3, 1000)
    from corobench.results import build_cells
    from corobench.store import Store

    with Store(db) as store:
        sessions = store.sessions()
        assert [s.n_runs for s in sessions] == [1000] * 3
        assert sessions[2].machine["hosts"] and sessions[2].settings["topology"]["clients"][0]["host"] == "client1"
        runs = store.runs(sessions[0].id)
    cells = build_cells(runs)
    assert {c.scenario for c in cells} == {"chain", "tasks", "blocking", "echo", "http"}
    assert any(c.status == "failed" for c in cells) and sum(c.status == "ok" for c in cells) >= 190
    http = next(c for c in cells if c.scenario == "http" and c.status == "ok")
    assert http.summaries["rps"].median > 0 and http.summaries["lat_p99_us"].median > 0
