"""Reproductions of the papers' tables and figures on top of the mappers (used by benchmarks/ and tests/).

Nothing in the compiler imports this package: it sits above search in the layering and holds the
published data, the baselines' comparisons and the cross-checks that the paper studies need.

- :mod:`dnnmap.studies.marvel`: Marvel Table 3, Fig. 6-9, the roofline and the DB cross-check.
- :mod:`dnnmap.studies.tso`: TSO Table I (and Figs. 8, 9, 12, 13).
"""
