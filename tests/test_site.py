"""`corobench site`: the static results site over sessions from two machines, in headless Chromium
(Debian's, driven by Playwright): pages load with no console error and no network, filters change
the table's rows and the charts' traces, run details show a program's text as text, and a
screenshot of each scenario's summary is not blank."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import FAKES, ROOT, corobench
from test_bundle import lines_of, register_commands, write_lines
from test_html_report import CHROMIUM, FLAGS, INJECTED, browser, fake

import scale

register_commands()

SUITE = """
name = "site"
reps = 3
[[benchmark]]
scenario = "chain"
workers = [2, 3]
events = 5
etype = ["int", "str"]
[[benchmark]]
scenario = "tasks"
tasks = 2
sleep_ms = 0
"""
XEON = {"cpu_model": "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", "cores": 8, "memory_bytes": 33_280_000_000,
        "hostname": "bench-b"}
LATER = "2030-01-02T03:04:05+0000"


@pytest.fixture(scope="module")
def two_machines(tmp_path_factory) -> Path:
    """Two sessions here (fake-good, fake-fast at a quarter of its time, fake-inject FAILED with HTML
    and terminal escapes on stderr), and the second again as if run on a Xeon in 2030."""
    root = tmp_path_factory.mktemp("site")
    results, impls, suite = root / "results", root / "impls", root / "suite.toml"
    fake(impls, "good", "good")
    fake(impls, "fast", "good", 'env = { FAKE_ELAPSED_NS = "250000" }\n')
    fake(impls, "inject", "inject")
    suite.write_text(SUITE)
    for _ in range(2):
        run = corobench("run", "--suite", str(suite), results=results, impls=impls)
        assert run.returncode == 1, run.stderr  # fake-inject FAILED
    bundle = root / "latest.jsonl.gz"
    assert corobench("export", "latest", "--out", str(bundle), results=results).returncode == 0
    records = lines_of(bundle)
    for r in records:
        if r.get("type") == "session":
            r.update(uid="xeon0001", started_at=LATER, machine={**r["machine"], **XEON})
        elif r.get("type") == "run":
            r["session"] = "xeon0001"
    write_lines(bundle, records)
    assert corobench("import", str(bundle), results=results).returncode == 0
    return results


@pytest.fixture(scope="module")
def site(two_machines) -> Path:
    out = two_machines.parent / "site"
    proc = corobench("site", "--out", str(out), results=two_machines)
    assert proc.returncode == 0, proc.stderr
    assert "(3 session(s), " in proc.stdout and "2 scenario page(s)" in proc.stdout
    return out


@pytest.fixture(scope="module")
def every_scenario(tmp_path_factory) -> Path:
    """A site of synthetic sessions with every scenario, servers included, on two machines."""
    root = tmp_path_factory.mktemp("site-all")
    scale.generate(root / "results" / "corobench.sqlite", sessions=4, runs_per_session=1000)
    out = root / "site"
    proc = corobench("site", "--out", str(out), results=root / "results")
    assert proc.returncode == 0, proc.stderr
    return out


def ours(site: Path) -> list[Path]:
    """Every file of the site but plotly.js (the library's own text names its project's web pages)."""
    return [p for p in site.rglob("*") if p.is_file() and p.name != "plotly.min.js"]


def site_data(site: Path, scenario: str) -> dict:
    text = (site / "data" / f"{scenario}.js").read_text()
    prefix = "window.COROBENCH_SITE = "
    assert text.startswith(prefix) and text.endswith(";\n")
    return json.loads(text[len(prefix):-2])


def test_the_site_is_pages_data_and_assets(site, two_machines):
    from plotly.offline import get_plotlyjs

    for name in ("index.html", "chain.html", "tasks.html", "data/chain.js", "data/tasks.js", "assets/site.js",
                 "assets/site.css", "assets/plotly.min.js", "runs/chain/1.js", "runs/chain/3.js", "runs/tasks/2.js"):
        assert (site / name).is_file(), name
    assert (site / "assets/plotly.min.js").read_text() == get_plotlyjs()  # the package's own copy
    index = (site / "index.html").read_text()
    for text in ("Intel Xeon Platinum 8375C, 8 cores", "AMD EPYC", "2030-01-02", "Who has the best median where",
                 'href="chain.html"', 'href="tasks.html"'):
        assert text in index, text
    chain = site_data(site, "chain")
    assert len(chain["machines"]) == 2 and len(chain["sessions"]) == 3
    assert {r["prog"] for r in chain["rows"]} == {"fake-good", "fake-fast", "fake-inject"}
    keys_by_machine: dict[str, set] = {}
    for r in chain["rows"]:
        keys_by_machine.setdefault(r["m"], set()).add(r["k"])
    a, b = keys_by_machine.values()
    assert not a & b  # the two machines' results never share a comparability key


def test_no_network_references_and_a_strict_policy(site, every_scenario):
    for folder in (site, every_scenario):
        for path in ours(folder):
            text = path.read_text()
            assert "http://" not in text and "https://" not in text, path
            assert "//cdn" not in text and "fetch(" not in text and "XMLHttpRequest" not in text, path
        for page in folder.glob("*.html"):
            html = page.read_text()
            assert ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:;"
                    in html), page
            assert "<script>" not in html and "onclick" not in html  # no inline script: only our files
            scripts = html.count("<script ")
            assert scripts == html.count('<script src="'), page


def test_program_text_stays_text(site):
    pages = "".join(p.read_text() for p in site.glob("*.html"))
    assert INJECTED not in pages
    runs = "".join(p.read_text() for p in (site / "runs").rglob("*.js"))
    assert json.dumps(INJECTED)[1:-1] in runs and "\x1b" not in runs  # a JSON string, escapes removed
    script = (site / "assets/site.js").read_text()
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script and "eval(" not in script


def test_log_ticks_are_round_values_spanning_the_data():
    from corobench.site.figures import log_ticks, tick_text

    assert log_ticks(2.4, 870) == [2, 5, 10, 20, 50, 100, 200, 500, 1000]
    assert log_ticks(0.3, 0.45) == [0.2, 0.5]
    assert [tick_text(v) for v in (0.2, 5, 1000, 2_000_000)] == ["0.2", "5", "1,000", "2,000,000"]


def test_figures_are_valid_plotly(every_scenario):
    import plotly.graph_objects as go

    for scenario in ("chain", "tasks", "blocking", "echo", "http"):
        data = site_data(every_scenario, scenario)
        figures = data["figures"]["summary"] + data["figures"]["history"]
        assert data["figures"]["summary"] and data["figures"]["history"], scenario
        ids = {r["i"] for r in data["rows"]}
        for fig in figures:
            go.Figure(data=fig["data"], layout=fig["layout"])  # raises on any property plotly.js does not know
            for trace in fig["data"]:
                assert set(trace["customdata"]) <= ids
                assert all("runs" in t and "session" in t for t in trace["hovertext"])
            x_axis = fig["layout"].get("xaxis", {})
            if x_axis.get("type") == "log" and "tickvals" in x_axis:  # a sweep: a tick at each value run
                xs = {x for t in fig["data"] for x in t["x"]}
                assert set(x_axis["tickvals"]) == xs and "dtick" not in x_axis, fig["layout"]["title"]
    tasks = site_data(every_scenario, "tasks")["figures"]["summary"]
    memory = next(f for f in tasks if f["layout"]["yaxis"].get("type") == "log")
    labels = memory["layout"]["yaxis"]["ticktext"]  # 1-2-5 in full, not "1000, 5, 2, 100, 5, 2"
    assert "dtick" not in memory["layout"]["yaxis"] and "500" in labels and "1,000" in labels, labels
    http = site_data(every_scenario, "http")["figures"]["summary"]
    against = next(f for f in http if "against connections" in f["layout"]["title"]["text"])
    assert against["layout"]["xaxis"]["ticktext"] == ["80", "420", "2,020"]  # not "100, 2, 5, 1000, 2"


# --------------------------------------------------------------------------- in the browser

class Page:
    """A Chromium page that records console errors, page errors, dialogs and every request."""

    def __init__(self, context):
        self.problems: list[str] = []
        self.requests: list[str] = []
        self.page = context.new_page()
        self.page.on("console", lambda m: self.problems.append(f"console {m.type}: {m.text}")
                     if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("dialog", lambda d: (self.problems.append(f"dialog: {d.message}"), d.dismiss()))
        self.page.on("request", lambda r: self.requests.append(r.url))

    def open(self, path: Path) -> None:
        self.page.goto(path.as_uri(), wait_until="load")
        self.page.wait_for_function("() => !document.querySelector('#shown') || "
                                    "document.querySelector('#shown').textContent !== ''")

    def rows(self) -> int:
        return self.page.locator("#results tbody tr").count()

    def traces(self, where: str) -> int:
        """Traces the filters leave in these charts (drawn once a chart comes near the screen)."""
        return self.page.evaluate(f"""() => Array.from(document.querySelectorAll('{where} .chart'))
            .filter(d => !d.hidden).reduce((n, d) => n + Number(d.dataset.traces), 0)""")

    def draw_everything(self) -> None:
        """Scroll every chart near the screen, then wait until each shown chart is drawn."""
        self.page.evaluate("""async () => {
            for (const div of document.querySelectorAll('.chart:not([hidden])')) {
                div.scrollIntoView();
                await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
            }
            window.scrollTo(0, 0);
        }""")
        self.page.wait_for_function("""() => Array.from(document.querySelectorAll('.chart:not([hidden])'))
            .every(d => d.data && d.data.length === Number(d.dataset.traces))""")

    def clean(self) -> None:
        assert self.problems == []
        assert {u.split(":", 1)[0] for u in self.requests} <= {"file", "data"}, self.requests


@pytest.fixture
def chromium(tmp_path):
    sync_playwright = browser()
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=str(CHROMIUM), args=FLAGS, headless=True,
            viewport={"width": 1400, "height": 1000})
        try:
            yield context
        finally:
            context.close()


def test_pages_load_with_no_console_error(site, chromium):
    view = Page(chromium)
    for name in ("index", "chain", "tasks"):
        view.open(site / f"{name}.html")
        if name != "index":
            assert view.rows() > 0 and view.traces("#summary-charts") > 0 and view.traces("#history-charts") > 0
            view.draw_everything()
    view.clean()


def test_filters_change_the_rows_and_the_charts(site, chromium):
    view = Page(chromium)
    page = view.page
    view.open(site / "chain.html")
    # 3 programs x 4 parameter sets, on two machines: the latest result of each key
    assert view.rows() == 24
    everything = (view.rows(), view.traces("#summary-charts"), view.traces("#history-charts"))
    assert "24 result(s) shown" in page.locator("#shown").inner_text()

    page.locator('input[name="program"][value="fake-fast"]').uncheck()
    assert view.rows() == 16
    assert view.traces("#summary-charts") < everything[1] and view.traces("#history-charts") < everything[2]
    view.draw_everything()  # what plotly.js drew, not only what the filter left
    names = page.evaluate("() => Array.from(document.querySelectorAll('.chart:not([hidden])'))"
                          ".flatMap(d => d.data.map(t => t.name))")
    assert names and not any("fake-fast" in n for n in names)

    page.select_option('select[name="p0"]', "2")  # workers=2
    assert view.rows() == 8
    assert all(t.startswith("workers=2") for t in page.locator("#results tbody td.params").all_inner_texts())

    xeon = page.locator('input[name="machine"]').nth(1)
    assert "Xeon" in xeon.locator("xpath=..").inner_text()
    xeon.uncheck()
    assert view.rows() == 4
    machines = set(page.locator("#results tbody tr td:nth-child(4)").all_inner_texts())
    assert len(machines) == 1 and "Xeon" not in machines.pop()

    page.locator("button[type=reset]").click()
    page.wait_for_function("() => document.querySelectorAll('#results tbody tr').length === 24")
    assert (view.rows(), view.traces("#summary-charts"), view.traces("#history-charts")) == everything

    page.fill('input[name="from"]', "2030-01-01")  # the Xeon session alone
    page.locator('input[name="from"]').dispatch_event("change")
    assert view.rows() == 12
    assert all("Xeon" in t for t in page.locator("#results tbody tr td:nth-child(4)").all_inner_texts())
    view.clean()


def test_hover_shows_the_median_and_the_spread(site, chromium):
    view = Page(chromium)
    view.open(site / "chain.html")
    view.draw_everything()
    text = view.page.evaluate("""() => {
        const div = document.querySelector('#summary-charts .chart');
        Plotly.Fx.hover(div, [{curveNumber: 0, pointNumber: 0}]);
        return div.querySelector('.hoverlayer').textContent;
    }""")
    assert "speed:" in text and "runs: min" in text and "3 runs" in text and "session" in text
    view.clean()


def test_run_details_show_program_text_as_text(site, chromium):
    view = Page(chromium)
    page = view.page
    view.open(site / "chain.html")
    page.select_option("#run-session", "runs/chain/1.js")
    page.wait_for_function("() => document.querySelector('#run-hosts').textContent.startsWith('session 1')")
    failed = page.locator("#run-table tbody tr.run.failed")
    assert failed.count() > 0
    first_ok = page.locator("#run-table tbody tr.run").nth(failed.count())
    assert "OK" in first_ok.inner_text()
    failed.first.click()
    detail = page.locator("#run-table tbody tr.detail pre").inner_text()
    assert INJECTED in detail and "command: python3 " in detail and "working directory: " in detail
    assert "stderr (last lines):" in detail and "\x1b" not in detail
    assert page.locator("script:not([src])").count() == 0
    page.locator('input[name="program"][value="fake-inject"]').uncheck()
    assert page.locator("#run-table tbody tr.run.failed").count() == 0
    view.clean()


SCENARIOS = ("chain", "tasks", "blocking", "echo", "http")


def test_every_scenario_page_in_the_browser_and_its_summary_screenshot(every_scenario, chromium, tmp_path):
    from PIL import Image

    view = Page(chromium)
    keep = os.environ.get("COROBENCH_SCREENSHOTS")  # e.g. to look at them: a folder
    view.open(every_scenario / "index.html")
    for scenario in SCENARIOS:
        view.open(every_scenario / f"{scenario}.html")
        assert view.rows() > 0 and view.traces("#summary-charts") > 0 and view.traces("#history-charts") > 0
        view.draw_everything()
        shot = tmp_path / f"{scenario}-summary.png"
        view.page.locator("#summary").screenshot(path=str(shot))
        image = Image.open(shot).convert("L")
        width, height = image.size
        dark = sum(image.histogram()[:200])  # pixels darker than light grey: lines, bars, text
        assert height > 600 and dark > width * height * 0.01, (scenario, image.size, dark)
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(shot, Path(keep) / shot.name)
    view.clean()


HOSTILE_NAME = '<img src=x onerror=alert(1)>"\'&'


def test_a_hostile_bundle_cannot_put_markup_into_the_site(two_machines, chromium, tmp_path):
    """A program named with markup (a bundle carries any string): text in the table, the filters,
    the legends and the hover text, never an element."""
    bundle = tmp_path / "hostile.jsonl.gz"
    assert corobench("export", "1", "--out", str(bundle), results=two_machines).returncode == 0
    records = lines_of(bundle)
    for r in records:
        if r.get("type") == "session":
            r["uid"] = "hostile1"
            r["toolchains"][HOSTILE_NAME] = HOSTILE_NAME
        elif r.get("type") == "run":
            r["session"] = "hostile1"
            if r["program"] == "fake-good":
                r["program"] = r["impl_id"] = HOSTILE_NAME
    write_lines(bundle, records)
    results = tmp_path / "results"
    assert corobench("import", str(bundle), results=results).returncode == 0
    out = tmp_path / "site"
    assert corobench("site", "--out", str(out), results=results).returncode == 0
    assert HOSTILE_NAME not in (out / "chain.html").read_text()  # escaped by the template
    view = Page(chromium)
    view.open(out / "chain.html")
    view.draw_everything()
    page = view.page
    assert HOSTILE_NAME in page.locator("#results tbody").inner_text()
    assert HOSTILE_NAME in page.locator("#filters").inner_text()
    legends = page.evaluate("() => Array.from(document.querySelectorAll('.legendtext')).map(e => e.textContent)")
    assert any(HOSTILE_NAME in text for text in legends)
    assert page.locator("img").count() == 0 and page.locator("script:not([src])").count() == 0
    view.clean()  # no dialog, no console error


def test_a_page_lead_names_no_parameter_the_runs_did_not_use(every_scenario):
    # every synthetic http run is closed loop and duration-bounded: rate=0 and requests=0 are unset
    lead = re.search(r'<p class="lead">(.*?)</p>', (every_scenario / "http.html").read_text(), re.S).group(1)
    assert "all at" in lead and not re.search(r"\b\w+=0\b", lead), lead


def test_a_capacity_search_is_drawn_against_the_offered_rate(tmp_path):
    # the published capacity bundle: 80 connections throughout, a closed-loop estimate (rate 0) and
    # open-loop steps at a dozen offered rates per program
    bundle = ROOT / "docs" / "results" / "bundles" / "capacity-http-p99-5ms-2026-11-23.jsonl.gz"
    assert corobench("import", str(bundle), results=tmp_path / "r").returncode == 0
    proc = corobench("site", "--out", str(tmp_path / "site"), results=tmp_path / "r")
    assert proc.returncode == 0, proc.stderr
    figures = site_data(tmp_path / "site", "http")["figures"]["summary"]
    rps = [f for f in figures if f["layout"]["title"]["text"].startswith("http: requests/s")]
    # the closed-loop estimates, all at 80 connections: bars naming that count (not a line of single
    # points against connections); then one line figure against the offered rate
    assert [f["layout"]["title"]["text"].split("<")[0] for f in rps] == ["http: requests/s — connections=80",
                                                                         "http: requests/s against rate"]
    estimates = rps[0]
    assert {t["type"] for t in estimates["data"]} == {"bar"} and len(estimates["data"]) == 3
    against_rate = rps[1]
    assert {t["name"] for t in against_rate["data"]} == {"go", "rust-tokio:httparse", "rust-tokio:hyper"}
    assert all(len(t["x"]) >= 4 and 0 not in t["x"] for t in against_rate["data"])
