"""Reports: plain-data (JSON) and rich-table views of mapping results."""

from dnnmap.report.json_report import to_dict
from dnnmap.report.summary import format_energy, latency_ms, mapping_summary

__all__ = ["format_energy", "latency_ms", "mapping_summary", "to_dict"]
