"""The exporter interface: one output format, for a session (`run --format`), for a comparison
(`compare --format`) and for the files `report` writes. One module per format; the registry
(export/__init__.py) finds them, and no command names a format."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from corobench.compare import Result
    from corobench.results import Cell
    from corobench.store import RunRow


@dataclass
class ReportContext:
    """Everything a written report has: the session, its cells and runs, the charts the report layer
    drew, the comparison with a baseline."""

    meta: dict
    cells: list["Cell"]
    rows: list["RunRow"]
    charts: dict[str, list[Path]] = field(default_factory=dict)  # scenario -> chart files (PNG and SVG)
    comparison: "Result | None" = None
    sections: list = field(default_factory=list)  # report/sections.py: what the report opens with


class Exporter:
    """A format. Override what it offers: a session's text, a comparison's text, report files."""

    name: str = ""
    help: str = ""
    order: int = 100  # where it is listed in --format's choices

    # ---------------------------------------------------------------- a session (run --format)

    def session_text(self, cells: list["Cell"], meta: dict) -> str | None:
        """The session's results in this format, or None when the format has no session output."""
        return None

    def print_session(self, cells: list["Cell"], meta: dict) -> None:
        text = self.session_text(cells, meta)
        assert text is not None
        click.echo(text, nl=not text.endswith("\n"))

    @property
    def for_sessions(self) -> bool:
        return type(self).session_text is not Exporter.session_text

    # ---------------------------------------------------------------- a comparison (compare --format)

    def comparison_text(self, result: "Result") -> str | None:
        return None

    def print_comparison(self, result: "Result") -> None:
        text = self.comparison_text(result)
        assert text is not None
        click.echo(text, nl=not text.endswith("\n"))

    @property
    def for_comparisons(self) -> bool:
        return type(self).comparison_text is not Exporter.comparison_text

    # ---------------------------------------------------------------- report files

    def report_files(self, ctx: ReportContext) -> dict[str, str]:
        """{file name: text} that `corobench report` writes in this format (none by default)."""
        return {}
