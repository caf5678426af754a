"""report.html in a real headless browser: Debian's Chromium driven by Playwright (never a browser
Playwright downloads itself). No console or page errors, no network, sortable tables, a program's
HTML and terminal escapes shown as text, and a screenshot that is not blank."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import FAKES, corobench

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
INJECTED = "<script>alert(1)</script>"
SUITE = """
name = "html-report"
reps = 2
[[benchmark]]
scenario = "chain"
workers = [2, 3]
events = 5
etype = ["int", "str"]
[[benchmark]]
scenario = "tasks"
tasks = [2, 4]
sleep_ms = 0
"""


def fake(impls: Path, name: str, mode: str, extra: str = "") -> None:
    """A fake implementation `fake-NAME` in `impls`: the good fake's manifest running fake.py MODE."""
    text = (FAKES / "good" / "manifest.toml").read_text()
    text = text.replace('id = "fake-good"', f'id = "fake-{name}"')
    text = text.replace('["python3", "../fake.py", "good"]', f'["python3", "{FAKES / "fake.py"}", "{mode}"]')
    (impls / name).mkdir(parents=True)
    (impls / name / "manifest.toml").write_text(text + extra)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """Two sessions of chain and tasks: fake-good, fake-fast (a quarter of its time) and fake-inject,
    which fails with HTML and terminal escapes on stderr; the report of the second against the first."""
    root = tmp_path_factory.mktemp("html")
    results, impls, suite = root / "results", root / "impls", root / "suite.toml"
    fake(impls, "good", "good")
    fake(impls, "fast", "good", 'env = { FAKE_ELAPSED_NS = "250000" }\n')
    fake(impls, "inject", "inject")
    suite.write_text(SUITE)
    for _ in range(2):
        run = corobench("run", "--suite", str(suite), results=results, impls=impls)
        assert run.returncode == 1, run.stderr  # fake-inject FAILED
    out = root / "report"
    proc = corobench("report", "latest", "--baseline", "latest~1", "--out", str(out), results=results)
    assert proc.returncode == 0, proc.stderr
    return out / "report.html"


def test_the_page_is_one_file_and_program_text_stays_text(report):
    page = report.read_text()
    assert INJECTED not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img" not in page and "\x1b" not in page
    assert page.count("<script>") == 1 and page.count("<svg") >= 4  # our sorter; the charts inline
    assert "default-src 'none'" in page  # the CSP: nothing from the network, no other script
    for reference in ("<link", "src=\"http", "url(http", "@import"):
        assert reference not in page
    for text in ("Machine and session", "FAILED runs", "Comparison with session", "Toolchains",
                 "python3 ", str(FAKES / "fake.py"), "stderr (last lines)"):
        assert text in page, text


def browser():
    """Playwright's sync API, or skip (fail under CI=true) with the reason."""
    missing = []
    if not CHROMIUM.exists():
        missing.append(f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
        missing.append("the Python package playwright is not installed (pip install playwright)")
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail("; ".join(missing))
        pytest.skip("; ".join(missing))
    return sync_playwright


def column(page, table, index: int) -> list[str]:
    return table.locator("tbody tr").evaluate_all(f"rows => rows.map(r => r.cells[{index}].textContent.trim())")


def test_report_in_headless_chromium(report, tmp_path):
    sync_playwright = browser()
    problems: list[str] = []
    requests: list[str] = []
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=str(CHROMIUM), args=FLAGS, headless=True,
            viewport={"width": 1280, "height": 900})
        try:
            page = context.new_page()
            page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(report.as_uri(), wait_until="load")

            # the injected markup is text on the page, and ran nothing
            failure = page.locator(".failure").first
            assert INJECTED in failure.inner_text()
            assert page.locator("script").count() == 1 and page.locator("img").count() == 0
            assert "\x1b" not in page.locator("body").inner_text()

            # sorting: the chain table at workers=2 etype=int, by its headline (speed) column
            table = page.locator("section#s-chain table.sortable").first
            header = table.locator("thead th").nth(1)
            assert "speed" in header.inner_text()
            before = column(page, table, 0)
            assert before == ["fake-fast", "fake-good", "fake-inject"]  # best first, FAILED last
            header.click()
            assert header.get_attribute("aria-sort") == "ascending"
            assert column(page, table, 0) == ["fake-good", "fake-fast", "fake-inject"]  # FAILED stays last
            header.click()
            assert header.get_attribute("aria-sort") == "descending"
            assert column(page, table, 0) == ["fake-fast", "fake-good", "fake-inject"]
            program = table.locator("thead th").nth(0)
            program.click()
            assert column(page, table, 0) == ["fake-fast", "fake-good", "fake-inject"]
            program.click()
            assert column(page, table, 0) == ["fake-inject", "fake-good", "fake-fast"]

            # the comparison: a table per scenario, B vs A in its last column
            compared = page.locator("section#comparison table.sortable")
            assert compared.count() == 2
            assert "FAILED in both" in column(page, compared.first, 6)

            # charts fit the page: no horizontal scroll
            assert page.evaluate("document.documentElement.scrollWidth") <= 1280
            shot = tmp_path / "report.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            context.close()
    assert problems == []
    assert {u.split(":", 1)[0] for u in requests} <= {"file", "data"}, requests
    from PIL import Image

    image = Image.open(shot).convert("L")
    width, height = image.size
    dark = sum(image.histogram()[:200])  # pixels darker than light grey
    assert height > 2000 and dark > width * height * 0.01, (image.size, dark)
    keep = os.environ.get("COROBENCH_SCREENSHOT")
    if keep:  # e.g. to look at it: COROBENCH_SCREENSHOT=/tmp/report.png pytest tests/test_html_report.py
        shutil.copyfile(shot, keep)
