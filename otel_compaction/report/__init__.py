"""The findings report of ``otel-compaction analyze``: JSON, text and HTML.

::

    report = analyze_files([Path("session.jsonl")])
    json.dumps(report.to_json())        # the machine-readable report
    render_text(report)                 # the readable one
    render_html(report)                 # self-contained, with plotly charts (``report`` extra)
"""

from __future__ import annotations

from otel_compaction.report.build import ReportBuilder, analyze_files
from otel_compaction.report.model import ConversationReport, FileReport, FindingsReport
from otel_compaction.report.text import render_text

__all__ = [
    "ConversationReport",
    "FileReport",
    "FindingsReport",
    "ReportBuilder",
    "analyze_files",
    "render_text",
]
