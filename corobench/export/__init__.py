"""Exporters: one file per format, each turning cells (see results.py) into text."""

from corobench.export.csv import chain_legacy_csv, full_csv
from corobench.export.json import to_json
from corobench.export.markdown import to_markdown
from corobench.export.table import print_table

FORMATS = ("table", "csv", "md", "json")

__all__ = ["FORMATS", "chain_legacy_csv", "full_csv", "to_json", "to_markdown", "print_table"]
