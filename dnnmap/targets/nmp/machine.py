"""The NMP the target compiles for, read from a core architecture (``dnnmap/arch/presets/nmp.yaml``).

The preset describes the 16-bit NMP. For 8-bit fixed point the same 128-bit MAC datapath does 16
MACs per cycle and an 8 KB scratchpad holds twice the words (TSO Section III), so
:func:`arch_for_bits` rescales word width, scratchpad capacities and the MAC fan-out.
"""

from __future__ import annotations

from dnnmap.arch.spec import ArchSpec
from dnnmap.errors import MappingError
from dnnmap.search.tso.machine import TsoMachine
from dnnmap.targets.nmp.simulator import NmpMachine


def arch_for_bits(arch: ArchSpec, bits: int) -> ArchSpec:
    """``arch`` with ``bits``-bit words: same scratchpad bytes and datapath width, rescaled words and MAC lanes."""
    old = arch.bits_of("input")
    if bits == old:
        return arch
    mb = arch.levels[0]
    if not isinstance(mb.capacity, dict) or mb.fanout is None or (mb.fanout.size * old) % bits:
        raise MappingError(f"architecture {arch.name!r}: cannot rescale its scratchpads to {bits}-bit words")
    cap = {k: v * old // bits for k, v in mb.capacity.items()}
    fan = mb.fanout.model_copy(update={"shape": (mb.fanout.size * old // bits,)})
    new_mb = mb.model_copy(update={"capacity": cap, "fanout": fan})
    return arch.model_copy(update={"word_bits": bits, "levels": (new_mb, *arch.levels[1:]),
                                   "mac": arch.mac.model_copy(update={"precision_bits": bits})})


def nmp_machine(arch: ArchSpec) -> NmpMachine:
    """The simulator's constants from the same architecture TSO reads (:meth:`TsoMachine.from_arch`)."""
    t = TsoMachine.from_arch(arch)
    eb = int(t.elem_bytes)
    return NmpMachine(tle=t.tle, tlt=t.tlt, macs=t.macs, freq_hz=t.freq_hz, bits=8 * eb,
                      mb_bytes=(t.mb_in * eb, t.mb_w * eb, t.mb_out * eb), bw_bytes_per_s=t.bw_bytes_per_s,
                      burst_bytes=t.burst_bytes, cas_s=t.cas_s)
