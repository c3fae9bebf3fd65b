"""Self-contained HTML report of saved runs: figures inlined as SVG (drawn by ``canvas``), loop nests, comparisons.

``runs`` reads runs (no plotting imports); ``report.build_report`` draws and assembles the page."""
