"""Exporters: one file per format, each turning cells (see results.py) into text."""

from corobench.export.csv import full_csv
from corobench.export.json import to_json
from corobench.export.legacy import legacy_text
from corobench.export.markdown import to_markdown
from corobench.export.table import print_table

FORMATS = ("table", "csv", "md", "json", "legacy")

__all__ = ["FORMATS", "full_csv", "legacy_text", "to_json", "to_markdown", "print_table"]
