"""report.html: the whole report in one page that opens offline (rendered by report/html.py)."""

from __future__ import annotations

from corobench.export.base import Exporter, ReportContext


class Html(Exporter):
    name = "html"
    help = "one self-contained page with the charts, sortable tables and FAILED runs (report.html)"
    order = 60

    def report_files(self, ctx: ReportContext) -> dict[str, str]:
        from corobench.export.markdown import LEGEND
        from corobench.report import html  # Jinja2 loads only when a report is written

        return {"report.html": html.render(ctx.meta, ctx.cells, ctx.rows, ctx.charts, LEGEND, ctx.comparison,
                                           ctx.sections)}


EXPORTER = Html()
