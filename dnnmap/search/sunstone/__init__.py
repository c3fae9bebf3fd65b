"""The Sunstone mapper (RTML report Sec. 3.2; Olyaiy et al., ISPASS 2023) as a walk over the core's map space.

Modules: :mod:`.reuse` (Table 1), :mod:`.orders` (the loop-order trie), :mod:`.tiles`
(maximal tiles, Observation 4), :mod:`.unroll` (Observation 5), :mod:`.walk` (level-by-level
alpha-beta), :mod:`.mapper` (the entry the search layer calls). Every candidate is priced by
:class:`dnnmap.cost.model.CostModel`.
"""

from dnnmap.search.registry import register
from dnnmap.search.sunstone.mapper import MAPPER

register(MAPPER)
