"""Marvel's paper studies on the Marvel mapper (:mod:`dnnmap.search.marvel`), docs/marvel.md.

- ``table3``: the paper's 15 layers and published off-chip mappings (Table 3).
- ``crosscheck``: the off-chip result as a core mapping; the DB model beside the core's DRAM bursts.
- ``uniform``: the best uniform layout over a set of layers (Fig. 6 and 7).
- ``roofline``: a layer's compute, NoC and DRAM roofs (Fig. 8's attainable throughput).
- ``compare``: Marvel vs the baselines per layer (Fig. 8) and per network (Fig. 9); the uniform dataflow.
"""
