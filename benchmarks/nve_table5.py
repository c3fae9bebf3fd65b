"""Reproduce NVE Table 5 / Figs. 36-37 side by side, plus compile times and the beyond-thesis variants.

Run: ``python benchmarks/nve_table5.py``. For each network (face, speed sign) and
optimization level (none, +packing, +modulo, +fusion) every layer is compiled for the
full 1280x720 frame; HW utilization (MAC/instruction over every executed instruction)
and data transfer come from the programs (the ISS reproduces those counts cycle by
cycle, see tests/nve/test_iss.py). Totals weight each layer by its share of the
network's MACs, as the thesis's Table 5 does.
"""

from __future__ import annotations

import time

from dnnmap.targets.nve.compiler import OPT_LEVELS, compile_layer, packed_loads
from dnnmap.targets.nve.layers import ConvLayer, network_layers
from dnnmap.targets.nve.metrics import layer_figures
from dnnmap.targets.nve.spec import DEFAULT_SPEC
from dnnmap.workload import zoo

# NVE Table 5: (workload %, manual, automatic) per layer, and the weighted totals.
THESIS = {
    "nve_face": ([(42, 13.71, 13.39), (23, 10.95, 12.06), (34, 15.53, 15.53), (1, 5.89, 4.87)], (13.6, 13.7)),
    "nve_speed": ([(4.6, 13.71, 13.39), (11.7, 13.67, 13.6), (83.3, 15.13, 15.88), (0.4, 6.26, 4.9)],
                  (14.86, 15.45)),
}


def half_vector_1x1(layer: ConvLayer) -> float:
    """Model of the experts' L4 strategy (NVE §6): 8 lanes fed through port B only (one pixel word per
    input and iteration, no port-A image load), leaving MEMA to the writes and weight loads."""
    n = len(layer.connections[0])
    mema = n + -(-(n + 1) // DEFAULT_SPEC.coeffs_per_word)  # one write per input + set rw reads
    ii = max(mema, n + 1, n)  # MEMA, VMAC (set rb + n mac), MEMB reads
    return 8 * n / ii


def main() -> None:
    spec = DEFAULT_SPEC
    for net in ("nve_face", "nve_speed"):
        layers, _ = network_layers(zoo.get(net), spec)
        thesis, (tot_manual, tot_auto) = THESIS[net]
        share = [ly.macs / sum(x.macs for x in layers) for ly in layers]
        util: dict[int, list[float]] = {}
        transfer: dict[int, list[int]] = {}
        compiled = {}
        seconds = {}
        for level in OPT_LEVELS:
            packed_loads.cache_clear()  # time every level cold, packing search included
            start = time.perf_counter()
            compiled[level] = [compile_layer(ly, spec, level) for ly in layers]
            seconds[level] = time.perf_counter() - start
            figs = [layer_figures(c, spec) for c in compiled[level]]
            util[level] = [f.utilization(spec.lanes) for f in figs]
            transfer[level] = [f.transfer_bytes for f in figs]
        print(f"\n=== {net}: HW utilization (MAC/instruction, max {spec.lanes}) - NVE Table 5 side by side ===")
        head = "layer  MAC%(ours/thesis)  " + "  ".join(f"{OPT_LEVELS[k]:>9}" for k in OPT_LEVELS)
        print(head + "   thesis manual  thesis auto   MII-bound  programs(fused)")
        for i, ly in enumerate(layers):
            c3 = compiled[3][i]
            mii_bound = max(16 * cp.loop.macs_per_iteration / cp.loop.mii for cp in compiled[2][i].programs)
            print(f"{ly.name:5}  {100 * share[i]:5.1f} / {thesis[i][0]:5.1f}     "
                  + "  ".join(f"{util[k][i]:9.2f}" for k in OPT_LEVELS)
                  + f"   {thesis[i][1]:13.2f}  {thesis[i][2]:11.2f}   {mii_bound:9.2f}  "
                  f"{len(compiled[2][i].programs)} -> {len(c3.programs)}")
        weighted = {k: sum(s * u for s, u in zip(share, util[k], strict=True)) for k in OPT_LEVELS}
        thesis_w = [t[0] / 100 for t in thesis]
        ours_thesis_w = {k: sum(s * u for s, u in zip(thesis_w, util[k], strict=True)) for k in OPT_LEVELS}
        print("total (our MAC shares)    " + "  ".join(f"{weighted[k]:9.2f}" for k in OPT_LEVELS)
              + f"   {tot_manual:13.2f}  {tot_auto:11.2f}")
        print("total (thesis shares)     " + "  ".join(f"{ours_thesis_w[k]:9.2f}" for k in OPT_LEVELS))
        print(f"\n--- {net}: data transfer per frame (MiB, pixels + coefficients in, outputs out) ---")
        print("layer  " + "  ".join(f"{OPT_LEVELS[k]:>9}" for k in OPT_LEVELS) + "   fusion saves")
        for i, ly in enumerate(layers):
            red = 1 - transfer[3][i] / transfer[2][i]
            print(f"{ly.name:5}  " + "  ".join(f"{transfer[k][i] / 2**20:9.2f}" for k in OPT_LEVELS)
                  + f"   {100 * red:5.1f}%")
        tot2, tot3 = sum(transfer[2]), sum(transfer[3])
        print(f"total  {tot2 / 2**20:.2f} -> {tot3 / 2**20:.2f} MiB with fusion ({100 * (1 - tot3 / tot2):.1f}% less)")
        print(f"\n--- {net}: compile time (s) per level, cold: "
              + ", ".join(f"{OPT_LEVELS[k]} {seconds[k]:.2f}" for k in OPT_LEVELS))
        print(f"--- {net}: beyond the thesis ---")
        l4 = layers[-1]
        print(f"  half-vector 1x1 (L4, model): {half_vector_1x1(l4):.2f} MAC/instr vs {util[3][-1]:.2f} full-vector "
              f"(thesis manual {thesis[-1][1]:.2f})")
        gaps = [(ly.name, max(cp.loop.ii - cp.loop.mii for cp in compiled[2][i].programs))
                for i, ly in enumerate(layers)]
        print("  early first-coefficient load: our modulo schedules already issue the next iteration's first "
              "load inside the previous one; remaining II - MII gap per layer (upper bound of any further gain): "
              + ", ".join(f"{n} {g}" for n, g in gaps))


if __name__ == "__main__":
    main()
