"""The NMP the target compiles for, read from a core architecture (``dnnmap/arch/presets/nmp.yaml``).

The preset describes the 16-bit NMP; :func:`dnnmap.arch.variants.arch_for_bits` gives the 8-bit one.
"""

from __future__ import annotations

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.tso.machine import TsoMachine
from dnnmap.targets.nmp.simulator import NmpMachine


def nmp_machine(arch: ArchSpec) -> NmpMachine:
    """The simulator's constants from the same architecture TSO reads (:meth:`TsoMachine.from_arch`)."""
    t = TsoMachine.from_arch(arch)
    eb = int(t.elem_bytes)
    return NmpMachine(tle=t.tle, tlt=t.tlt, macs=t.macs, freq_hz=t.freq_hz, bits=8 * eb,
                      mb_bytes=(t.mb_in * eb, t.mb_w * eb, t.mb_out * eb), bw_bytes_per_s=t.bw_bytes_per_s,
                      burst_bytes=t.burst_bytes, cas_s=t.cas_s)
