"""Per-layer compilation pipeline (NVE Figs. 13, 23, 27, 28) at four optimization levels.

Level 0: task graph with full coefficient loads, list scheduling, one iteration after
another (Fig. 17). Level 1: + coefficient packing (Fig. 24). Level 2: + modulo
scheduling (Fig. 26). Level 3: + feature-map fusion (Alg. 2). Every level ends with
local-buffer allocation and emission of the init / repetitive / final parts.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from dnnmap.targets.nve.buffer_alloc import BufferLayout, allocate_buffer
from dnnmap.targets.nve.codegen import StreamLayout, emit_program
from dnnmap.targets.nve.fusion import check_fits, fuse_maps
from dnnmap.targets.nve.layers import ConvLayer
from dnnmap.targets.nve.list_scheduler import FlatSchedule, schedule_iteration
from dnnmap.targets.nve.modulo import LoopSchedule, modulo_schedule
from dnnmap.targets.nve.packing import pack_coefficients
from dnnmap.targets.nve.program import NveProgram
from dnnmap.targets.nve.spec import NveSpec
from dnnmap.targets.nve.taskgraph import build_task_graph, full_loads

OPT_LEVELS: dict[int, str] = {0: "none", 1: "+packing", 2: "+modulo", 3: "+fusion"}


@dataclass(frozen=True)
class CompiledProgram:
    layer: ConvLayer
    program: NveProgram
    stream: StreamLayout
    loop: LoopSchedule
    layout: BufferLayout

    @property
    def out_maps(self) -> tuple[int, ...]:
        return self.stream.out_maps


@dataclass(frozen=True)
class CompiledLayer:
    layer: ConvLayer
    opt_level: int
    programs: tuple[CompiledProgram, ...]


@lru_cache(maxsize=256)
def packed_loads(n_inputs: int, kernel: tuple[int, int], subsample: tuple[int, int], spec: NveSpec
                  ) -> tuple[int, ...]:
    """Packing depends only on the chain's structure; search it once per structure."""
    probe = ConvLayer("probe", n_inputs, (tuple(range(n_inputs)),), kernel, subsample, (spec.lanes, 1))
    return pack_coefficients(probe, 0, spec)


def chain_loads(layer: ConvLayer, out_map: int, spec: NveSpec, packing: bool) -> tuple[int, ...]:
    if not packing:
        return full_loads(layer.coefficients(out_map), spec.coeffs_per_word)
    return packed_loads(len(layer.connections[out_map]), layer.kernel, layer.subsample, spec)


def structure(layer: ConvLayer, out_maps: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """The group's connections with input maps renamed by rank: equal structures get equal schedules."""
    rank = {m: i for i, m in enumerate(sorted({m for k in out_maps for m in layer.connections[k]}))}
    return tuple(tuple(rank[m] for m in layer.connections[k]) for k in out_maps)


def build_program(layer: ConvLayer, out_maps: tuple[int, ...], spec: NveSpec, opt_level: int,
                  template: CompiledProgram | None = None) -> CompiledProgram:
    """Schedule, wrap, allocate and emit one program; ``template`` (same :func:`structure`) reuses its
    schedule, II and ring size, since task graphs of equal structure differ only in map names."""
    loads = {k: chain_loads(layer, k, spec, opt_level >= 1) for k in out_maps}
    graph = build_task_graph(layer, out_maps, loads, spec)
    if template is None:
        flat = schedule_iteration(graph, spec)
        loop = modulo_schedule(flat, spec, pipelined=opt_level >= 2)
        layout = allocate_buffer(loop, spec)
    else:
        t = template.loop
        flat = FlatSchedule(graph, t.flat.time, t.flat.length, t.flat.conflicts)
        loop = LoopSchedule(flat, t.ii, t.mii, t.slot, t.stage, t.tail)
        layout = allocate_buffer(loop, spec, template.layout.ring_slots)
    program, stream = emit_program(loop, layout, layer.out_hw[1], spec)
    return CompiledProgram(layer, program, stream, loop, layout)


def compile_layer(layer: ConvLayer, spec: NveSpec, opt_level: int = 3) -> CompiledLayer:
    """All programs of ``layer``: one per output map, or per fused group at level 3."""
    if opt_level not in OPT_LEVELS:
        raise ValueError(f"opt_level must be one of {sorted(OPT_LEVELS)}")
    by_structure: dict[tuple[tuple[int, ...], ...], CompiledProgram] = {}

    def template(maps: tuple[int, ...]) -> CompiledProgram:
        """A program of the same structure as ``maps`` (its size is the fused program's size)."""
        key = structure(layer, maps)
        if key not in by_structure:
            by_structure[key] = build_program(layer, maps, spec, opt_level)
        return by_structure[key]

    def get(maps: tuple[int, ...]) -> CompiledProgram:
        tpl = template(maps)
        return tpl if tpl.out_maps == maps else build_program(layer, maps, spec, opt_level, tpl)

    maps = tuple(range(layer.out_maps))
    if opt_level >= 3:
        groups = fuse_maps(maps, lambda k: frozenset(layer.connections[k]), lambda g: template(g).program.size,
                           spec.instruction_buffer_size, spec.fusion_requires_shared_inputs, layer.name)
    else:
        groups = [(k,) for k in maps]
        for g in groups:
            check_fits(g, template(g).program.size, spec.instruction_buffer_size, layer.name)
    return CompiledLayer(layer, opt_level, tuple(get(g) for g in groups))
