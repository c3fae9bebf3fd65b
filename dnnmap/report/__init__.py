"""Reports: plain-data (JSON, :mod:`.json_report`), rich-table (:mod:`.tables`, :mod:`.summary`) and HTML
(:mod:`.html`) views of mapping results. The package itself imports nothing, so reading a saved run
(:mod:`.html.runs`) does not load the cost model."""
