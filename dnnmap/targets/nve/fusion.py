"""Feature-map fusion under the instruction-buffer size (NVE Alg. 2, §5.3, fixed).

Greedy: start from the largest program; repeatedly merge the candidate with the
smallest symmetric difference of input sets |I_f Δ I_v|, ties broken by the largest
intersection, as long as the fused, modulo-scheduled program fits the instruction
buffer; when it does not, emit the current program and restart from the largest
remaining map (the rejected candidate stays available). Defects of the printed
algorithm fixed here (docs/nve.md §5): the last program is emitted; I_f becomes
I_f ∪ I_c after a merge; a single map that does not fit raises a MappingError instead of
looping; ties are broken by map index so results are deterministic. With
``require_shared`` only maps sharing at least one input are merged (the thesis's
outcome: face L3, whose maps have disjoint inputs, is not fused).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dnnmap.errors import MappingError


def check_fits(maps: tuple[int, ...], size: int, capacity: int, layer_name: str) -> None:
    """MappingError when one program exceeds the instruction buffer (Alg. 2 leaves this unhandled)."""
    if size > capacity:
        raise MappingError(f"layer {layer_name!r}: the program of output map(s) {list(maps)} needs {size} "
                           f"instructions; the instruction buffer holds {capacity} (spec.instruction_buffer_size)")


def fuse_maps(maps: Sequence[int], inputs: Callable[[int], frozenset[int]],
              size: Callable[[tuple[int, ...]], int], capacity: int, require_shared: bool,
              layer_name: str) -> list[tuple[int, ...]]:
    """Partition ``maps`` into fused groups (chain order = merge order)."""
    remaining = list(maps)
    groups: list[tuple[int, ...]] = []
    while remaining:
        f = max(remaining, key=lambda v: (size((v,)), -v))
        check_fits((f,), size((f,)), capacity, layer_name)
        remaining.remove(f)
        group, inputs_f = (f,), inputs(f)
        while True:
            candidates = [v for v in remaining if not require_shared or inputs_f & inputs(v)]
            if not candidates:
                break
            c = min(candidates, key=lambda v: (len(inputs_f ^ inputs(v)), -len(inputs_f & inputs(v)), v))
            if size(group + (c,)) > capacity:
                break
            group, inputs_f = group + (c,), inputs_f | inputs(c)
            remaining.remove(c)
        groups.append(group)
    return groups
