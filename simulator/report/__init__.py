"""Reports of a replayed step: summary numbers, JSON, terminal table (summary.py) and plots
(plots.py and compare_plots.py, on the Figure of figures.py: the only modules here that import
matplotlib)."""

from simulator.report.summary import Report, format_table, report_to_json, summarize

__all__ = ["Report", "format_table", "report_to_json", "summarize"]
