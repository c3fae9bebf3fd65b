"""Transformer workloads on three presets: BERT-base, GPT-2 prefill and decode, one Llama-2-7B layer.

Run: ``PYTHONPATH=. python benchmarks/transformers.py`` (the auto mapper, EDP objective; unfused -
fusing attention and the MLP is not implemented yet). Prints per model and preset the latency, energy,
DRAM traffic, the share of the latency in non-MAC layers (softmax, norms, activations, adds on the
vector unit or the MAC array) and the wall time to map.
"""

from __future__ import annotations

import time

from dnnmap.api import map_network

MODELS = ("bert_base", "gpt2:phase=prefill,seq=1024", "gpt2:phase=decode,seq=1024", "llama7b_layer:phase=prefill",
          "llama7b_layer:phase=decode")
PRESETS = ("eyeriss", "tpu_like", "hwff_config3")


def main() -> None:
    print(f"{'model':32} {'arch':13} {'latency ms':>11} {'energy':>10} {'DRAM MB':>9} {'non-MAC':>8} {'map s':>7}")
    for model in MODELS:
        for arch in PRESETS:
            t0 = time.perf_counter()
            run = map_network(model, arch)
            seconds = time.perf_counter() - t0
            vector = sum(r.cycles for r in run.layers if r.macs == 0)
            print(f"{model:32} {arch:13} {run.latency_s * 1e3:11.3f} {run.energy:10.3g} {run.dram_bytes / 1e6:9.1f} "
                  f"{vector / run.cycles:8.1%} {seconds:7.1f}")


if __name__ == "__main__":
    main()
