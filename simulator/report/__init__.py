"""Reports of a replayed step: summary numbers, JSON, terminal table (summary.py) and plots
(plots.py, the only module here that imports matplotlib)."""

from simulator.report.summary import Report, format_table, report_to_json, summarize

__all__ = ["Report", "format_table", "report_to_json", "summarize"]
