"""TSO's paper studies on the TSO mapper (:mod:`dnnmap.search.tso`): ``table``, Table I, docs/tso.md."""
