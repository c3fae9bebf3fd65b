"""Marvel (Chatarasi et al., arXiv 2002.07752): a decoupled off-chip / on-chip mapper on the core map space.

- ``view``: Marvel's tensor names and the 36 innermost-dimension layouts (Sec. 4.1).
- ``db_model``: the distinct-block cost (Sec. 3.1) of level-3 tiles, vectorized.
- ``offchip``: exhaustive level-3 tile x layout enumeration under the double-buffered L2 (Sec. 3.1).
- ``order``: the derivative-based level-3 loop order (Sec. 3.1, Sarkar 1997).
- ``onchip``: the on-chip step (Sec. 3.2, Algorithm 1): the pruning switches as constraints on the core
  map space, walked exhaustively; ``mapper``: ``--mapper marvel`` (both steps).
- ``dataflows``: the RS-, DLA- and ShiDianNao-like baselines as parallel-loop constraints (Sec. 4.2).

The paper's studies (Table 3, the roofline, Fig. 6-9, the DB cross-check) are in :mod:`dnnmap.studies.marvel`.

docs/marvel.md describes every choice the paper leaves open.
"""

from dnnmap.search.marvel.mapper import MAPPER
from dnnmap.search.registry import register

register(MAPPER)
