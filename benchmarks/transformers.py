"""Transformer workloads on three presets: BERT-base, GPT-2 prefill and decode, one Llama-2-7B layer.

Run: ``PYTHONPATH=. python benchmarks/transformers.py [--quick]`` (the auto mapper, EDP objective). Prints per
model and preset the unfused latency, energy, DRAM traffic, the share of the latency in non-MAC layers (softmax,
norms, activations, adds on the vector unit or the MAC array) and the wall time to map, then the same
network with ``--fuse auto --max-fused 3`` (attention as head maps, the MLP whole or in hidden blocks, residual
add + norm and norm + projection; docs/fusion.md "Transformer layers"): its latency, DRAM traffic, fused groups
and wall time. ``--quick``: BERT-base and
GPT-2 decode only.
"""

from __future__ import annotations

import sys
import time

from dnnmap.api import map_network

MODELS = ("bert_base", "gpt2:phase=prefill,seq=1024", "gpt2:phase=decode,seq=1024", "llama7b_layer:phase=prefill",
          "llama7b_layer:phase=decode")
QUICK = ("bert_base", "gpt2:phase=decode,seq=1024")
PRESETS = ("eyeriss", "tpu_like", "hwff_config3")


def main(quick: bool = False) -> None:
    print(f"{'model':32} {'arch':13} {'latency ms':>11} {'energy':>10} {'DRAM MB':>9} {'non-MAC':>8} {'map s':>7}"
          f" | {'fused ms':>9} {'DRAM MB':>9} {'groups':>6} {'fuse s':>7}")
    for model in QUICK if quick else MODELS:
        for arch in PRESETS:
            t0 = time.perf_counter()
            run = map_network(model, arch)
            seconds = time.perf_counter() - t0
            vector = sum(r.cycles for r in run.layers if r.macs == 0)
            t0 = time.perf_counter()
            fused = map_network(model, arch, fuse="auto", max_fused=3).fusion.schedule
            fuse_seconds = time.perf_counter() - t0
            print(f"{model:32} {arch:13} {run.latency_s * 1e3:11.3f} {run.energy:10.3g} {run.dram_bytes / 1e6:9.1f} "
                  f"{vector / run.cycles:8.1%} {seconds:7.1f} | {fused.cost.cycles / (run.arch.clock_mhz * 1e3):9.3f} "
                  f"{fused.cost.dram_bytes / 1e6:9.1f} {len(fused.fused):6d} {fuse_seconds:7.1f}")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
