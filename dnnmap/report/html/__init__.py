"""Self-contained HTML report of saved runs: matplotlib figures inlined as SVG, loop nests, comparisons.

``runs`` reads runs (no plotting imports); ``report.build_report`` draws and assembles the page."""
