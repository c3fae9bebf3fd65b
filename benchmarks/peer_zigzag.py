"""ZigZag beside dnnmap on ZigZag's own inputs: ZigZag (run in its own Python environment) maps its workload on
its hardware with its mapping file; dnnmap imports the same three files (``import-arch zigzag``), evaluates
ZigZag's chosen mappings in its own model read both ways (one boundary per level, ``--shared-boundary``, and
each operand's loops where ZigZag allocates them, the default), checks the importer's per-operand allocation
against ZigZag's, and searches its own mappings. Not part of the test run.

Run: ``python benchmarks/peer_zigzag.py [--zigzag-python /work/zzvenv/bin/python] [--hardware tpu_like]
[--workload resnet18] [--gemm-size 256] [--layers 21] [--breakdown]`` (``gemm_l1`` and ``gemm_l1_l3`` take ZigZag's ``gemm_layer``
workload, which their mapping files are written for); ``--hardware aimc`` or ``dimc`` (in-memory computing arrays, ZigZag's mapping
hints ``default_imc.yaml``) also prints the array's energy per component in both models. ZigZag is installed into a separate venv (``python -m venv /work/zzvenv &&
/work/zzvenv/bin/pip install zigzag-dse six``); without it the ZigZag columns are skipped with the reason.
dnnmap's mappings cannot be fed back into ZigZag's model here (ZigZag takes a complete loop order from a file
but allocates it to its memories itself), so that cell is n/a.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import yaml

from dnnmap.arch.zigzag import import_zigzag_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.mapping.zigzag_map import zigzag_allocation, zigzag_mapping
from dnnmap.search.network import map_layer
from dnnmap.workload.importers.zigzag_workload import (
    common_precision,
    final_output_bits,
    load_zigzag_workload,
)

FIX = Path(__file__).resolve().parents[1] / "tests" / "zigzag" / "fixtures"
ACTIONS = ("read", "fill", "update")  # ZigZag: reads to below and above, writes from above, writes from below
OPERAND_ROLE = {"W": "weight", "I": "input", "O": "output"}
MAPPING_FILE = {"aimc": "default_imc", "dimc": "default_imc"}  # hardware -> ZigZag's mapping file, else its own
WORKLOAD_FILE = {"gemm_l1": "gemm_layer", "gemm_l1_l3": "gemm_layer"}  # hardware -> ZigZag's workload, else resnet18
# ZigZag's in-memory array components -> where dnnmap charges them (dnnmap.arch.zigzag_imc)
IMC_ROW, IMC_COLUMN, IMC_MAC = ("dacs", "mults"), ("adcs", "analog_bl_addition", "adders_pv", "accumulators"), \
    ("mults", "adders_regular", "local_bl_precharging")

_ZIGZAG_RUN = r"""
import json, sys, time, logging
logging.disable(logging.CRITICAL)
from zigzag.api import get_hardware_performance_zigzag
from zigzag.hardware.architecture.memory_port import DataDirection as D
wl, hw, mp, out = sys.argv[1:5]
t0 = time.perf_counter()
energy, latency, cmes = get_hardware_performance_zigzag(wl, hw, mp, opt="energy", dump_folder=out,
                                                        loma_show_progress_bar=False)
seconds = time.perf_counter() - t0
layers = []
for cme, _ in cmes[0][1]:
    tm = cme.temporal_mapping.mapping_dic_stationary
    op = next(iter(tm))
    loops = [[str(d), int(s)] for level in tm[op] for d, s in level]
    levels = cme.accelerator.memory_hierarchy.get_memory_levels
    parts = {str(lop): [[lv.name, e.get(D.RD_OUT_TO_LOW) + e.get(D.RD_OUT_TO_HIGH), e.get(D.WR_IN_BY_HIGH),
                         e.get(D.WR_IN_BY_LOW)]
                        for lv, e in zip(levels(cme.memory_operand_links.layer_to_mem_op(lop)), per_level)]
             for lop, per_level in cme.mem_energy_breakdown_further.items()}
    spatial = {str(oa): [f"{d}, {float(s):g}" for d, s in dims.items()]
               for oa, dims in cme.layer.spatial_mapping.items()}
    alloc = {str(lop): [len(level) for level in per_level]
             for lop, per_level in cme.temporal_mapping.mapping_dic_origin.items()}
    layers.append({"name": cme.layer.name, "energy": cme.energy_total, "cycles": cme.latency_total2,
                   "loops": loops, "alloc": alloc, "mac": cme.mac_energy, "parts": parts, "spatial": spatial,
                   "mac_parts": getattr(cme, "mac_energy_breakdown", None)})
json.dump({"seconds": seconds, "energy": energy, "cycles": latency, "layers": layers}, sys.stdout)
"""


def run_zigzag(python: str, workload: Path, hardware: Path, mapping: Path) -> dict | str:
    """ZigZag's results, or the reason it could not run."""
    if not Path(python).exists():
        return f"no ZigZag Python at {python}"
    with tempfile.TemporaryDirectory() as out:
        proc = subprocess.run([python, "-c", _ZIGZAG_RUN, str(workload), str(hardware), str(mapping), out],
                              capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return f"ZigZag failed: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}"
    return json.loads(proc.stdout)


def add_breakdown(total: dict[tuple[str, str], list[float]], zz_layer: dict, op, spec, cost) -> None:
    """Accumulate per (memory, operand) the energy of each action in both models: [ZigZag's read, fill,
    update, dnnmap's read, fill, update] (dnnmap's reads include drains and read-modify-write reads)."""
    mac = total.setdefault(("MAC", "-"), [0.0] * 6)
    mac[0] += zz_layer["mac"]
    mac[3] += float(cost.energy_breakdown[0, -1])
    ours = cost.energy_by_action()[0]
    for operand, rows in zz_layer["parts"].items():
        t = next(i for i, x in enumerate(op.tensors) if x.role == OPERAND_ROLE[operand])
        for name, *zz in rows:
            cell = total.setdefault((name, operand), [0.0] * 6)
            dn = ours[spec.level_index(name), t]
            for k in range(3):
                cell[k] += zz[k]
                cell[3 + k] += float(dn[k])


def print_breakdown(total: dict[tuple[str, str], list[float]]) -> None:
    print("\n| memory | operand | ZigZag read | fill | update | dnnmap read | fill | update | dnnmap / ZigZag |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (name, operand), c in total.items():
        z, d = sum(c[:3]), sum(c[3:])
        print(f"| {name} | {operand} | " + " | ".join(f"{x:.4g}" for x in c) +
              f" | {d / z if z else float('nan'):.3f} |")
    z, d = sum(sum(c[:3]) for c in total.values()), sum(sum(c[3:]) for c in total.values())
    print(f"| total | | | | | | | | {d / z:.4f} |")


def add_imc_breakdown(total: dict[str, list[float]], memories: dict[tuple[str, str], list[float]], zz_layer: dict,
                      op, core, cost) -> None:
    """Accumulate the in-memory array's energy per part in both models: ZigZag's components charged per row
    (DACs, analog multipliers), per column (ADCs, bit-line addition, place-value adders, accumulators) and per
    MAC (digital multipliers and adder trees); dnnmap's input register reads, output register updates and MACs
    times the energies the importer added (:mod:`dnnmap.arch.zigzag_imc`). In ``memories`` (:func:`add_breakdown`)
    dnnmap's row and column energies move from the registers' reads and updates to the MAC row, where ZigZag
    books them."""
    imc, spec, parts = core.imc, core.spec, zz_layer["mac_parts"]
    analog = imc.analog
    ours = {"rows": (sum(imc.per_row().values()), "input", "reads", IMC_ROW if analog else ()),
            "columns": (sum(imc.per_column().values()), "output", "updates", IMC_COLUMN),
            "MACs": (sum(imc.per_mac().values()), None, None, () if analog else IMC_MAC)}
    for part, (energy, role, kind, theirs) in ours.items():
        cell = total.setdefault(part, [0.0, 0.0])
        cell[0] += sum(parts[k] for k in theirs)
        if role is None:
            cell[1] += energy * op.macs
        else:
            t = next(j for j, x in enumerate(op.tensors) if x.role == role)
            level = next(i for i, lv in enumerate(spec.levels) if role in lv.keeps)
            moved = energy * float(cost.counts[kind][0, level, t])
            cell[1] += moved
            operand = next(k for k, r in OPERAND_ROLE.items() if r == role)
            memories[(spec.levels[level].name, operand)][3 if kind == "reads" else 5] -= moved
            memories[("MAC", "-")][3] += moved


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--zigzag-python", default="/work/zzvenv/bin/python")
    ap.add_argument("--hardware", default="tpu_like")
    ap.add_argument("--layers", type=int, default=21)
    ap.add_argument("--workload", default=None,
                    help="ZigZag workload file in the fixtures (default: the one its mapping file is written for: "
                         "gemm_layer for gemm_l1 and gemm_l1_l3, else resnet18)")
    ap.add_argument("--gemm-size", type=int, default=None,
                    help="gemm_layer only: every loop size N (ZigZag's file has 128; on gemm_l1_l3, 256 is where its "
                         "l1's force_double_buffering changes the allocation)")
    ap.add_argument("--zigzag-cache", type=Path, default=None,
                    help="JSON file of ZigZag's results: read when it exists, else written after ZigZag runs")
    ap.add_argument("--breakdown", action="store_true",
                    help="per memory and operand, each action's energy of ZigZag's mappings in both models")
    args = ap.parse_args()
    workload = args.workload or WORKLOAD_FILE.get(args.hardware, "resnet18")
    hw, wl_path = FIX / "hardware" / f"{args.hardware}.yaml", FIX / "workload" / f"{workload}.yaml"
    mp = FIX / "mapping" / f"{MAPPING_FILE.get(args.hardware, args.hardware)}.yaml"
    if args.gemm_size is not None:
        if workload != "gemm_layer":
            ap.error("--gemm-size applies to the gemm_layer workload")
        layers = yaml.safe_load(wl_path.read_text())
        for layer in layers:
            layer["loop_sizes"] = [args.gemm_size] * len(layer["loop_sizes"])
        wl_path = Path(tempfile.mkdtemp()) / f"gemm_layer_{args.gemm_size}.yaml"
        wl_path.write_text(yaml.safe_dump(layers, sort_keys=False))
    wl = load_zigzag_workload(wl_path)
    core = import_zigzag_arch(hw, word_bits=common_precision(wl)[0], final_output_bits=final_output_bits(wl))
    if args.zigzag_cache is not None and args.zigzag_cache.exists():
        zz = json.loads(args.zigzag_cache.read_text())
    else:
        zz = run_zigzag(args.zigzag_python, wl_path, hw, mp)
        if args.zigzag_cache is not None and isinstance(zz, dict):
            args.zigzag_cache.write_text(json.dumps(zz))
    theirs = {x["name"]: x for x in zz["layers"]} if isinstance(zz, dict) else {}
    parts: dict[tuple[str, str], list[float]] = {}
    imc_parts: dict[str, list[float]] = {}
    rows, tot = [], {k: 0.0 for k in ("zz_e", "zz_c", "dd_e", "dd_c", "ds_e", "ds_c", "dz_e", "dz_c", "evals")}
    same_cuts, compared, noted = 0, 0, 0
    t0 = time.perf_counter()
    for layer in wl.network.layers[:args.layers]:
        op = layer.op
        best = map_layer(op, core.spec, "energy")
        energy, cycles = float(best.cost.energy[0]), float(best.cost.cycles[0])
        tot["dd_e"] += energy
        tot["dd_c"] += cycles
        tot["evals"] += best.evaluated
        z = theirs.get(op.name)
        row = [op.name, f"{energy:.4g}", f"{cycles:.0f}"]
        if z is not None:
            entry = [{"name": op.name, "spatial_mapping": z["spatial"], "temporal_ordering": z["loops"]}]
            same_cuts += zigzag_allocation(entry, "zigzag", op, core) == z.get("alloc")
            compared += 1
            shared, placed = (zigzag_mapping(entry, "zigzag", op, core, shared_boundary=s) for s in (True, False))
            noted += len(placed.notes) > 1
            c = CostModel(op, core.spec).evaluate(MappingBatch.from_mappings(op, core.spec, [placed, shared]))
            tot["zz_e"] += z["energy"]
            tot["zz_c"] += z["cycles"]
            row += [f"{z['energy']:.4g}", f"{z['cycles']:.0f}"]
            for k, key in ((1, "ds"), (0, "dz")):  # shared boundary, ZigZag's per-operand allocation
                tot[f"{key}_e"] += float(c.energy[k])
                tot[f"{key}_c"] += float(c.cycles[k])
                row += [f"{float(c.energy[k]):.4g}{'' if c.valid[k] else '*'}", f"{float(c.cycles[k]):.0f}"]
            add_breakdown(parts, z, op, core.spec, c)  # of the per-operand reading (the batch's first)
            if core.imc is not None:
                add_imc_breakdown(imc_parts, parts, z, op, core, c)
        rows.append(row)
    dnnmap_seconds = time.perf_counter() - t0
    print("| layer | dnnmap mapping: energy pJ (dnnmap model) | cycles | ZigZag mapping: energy pJ (ZigZag model) | "
          "cycles | ZigZag mapping, one boundary per level: energy pJ (dnnmap model) | cycles | ZigZag mapping, "
          "per-operand (ZigZag's allocation): energy pJ (dnnmap model) | cycles |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r + ["-"] * (9 - len(r))) + " |")
    print(f"| total | {tot['dd_e']:.4g} | {tot['dd_c']:.0f} | {tot['zz_e']:.4g} | {tot['zz_c']:.0f} | "
          f"{tot['ds_e']:.4g} | {tot['ds_c']:.0f} | {tot['dz_e']:.4g} | {tot['dz_c']:.0f} |")
    print(f"\ndnnmap: {dnnmap_seconds:.1f} s, {tot['evals']:.0f} mappings evaluated (import, search, evaluation)")
    if isinstance(zz, dict):
        print(f"ZigZag: {zz['seconds']:.1f} s (LOMA, lpf_limit 6, its default); dnnmap's mappings in ZigZag's model: "
              "n/a (ZigZag allocates a given loop order itself)")
        if any("alloc" in x for x in zz["layers"]):
            print(f"the importer's per-operand loop allocation equals ZigZag's on {same_cuts} of {compared} layers")
        print(f"mappings with an operand tile smaller than ZigZag allocates (docs/zigzag.md): {noted} of {compared}")
        for key, what in (("ds", "one boundary per level"), ("dz", "per-operand")):
            print(f"ZigZag mapping read {what}, dnnmap/ZigZag model: energy {tot[f'{key}_e'] / tot['zz_e']:.4f}, "
                  f"cycles {tot[f'{key}_c'] / tot['zz_c']:.4f}")
        print(f"dnnmap's mapping / ZigZag's per-operand (dnnmap model): energy {tot['dd_e'] / tot['dz_e']:.4f}, "
              f"cycles {tot['dd_c'] / tot['dz_c']:.4f}")
        if args.breakdown:
            print_breakdown(parts)
        if imc_parts:
            print("\n| in-memory array, ZigZag's mappings | ZigZag pJ | dnnmap pJ | dnnmap / ZigZag |\n|---|---|---|---|")
            for part, (z_e, d_e) in imc_parts.items():
                print(f"| per {part[:-1] if part != 'MACs' else 'MAC'} | {z_e:.4g} | {d_e:.4g} | "
                      f"{d_e / z_e if z_e else float('nan'):.4f} |")
    else:
        print(f"ZigZag skipped: {zz}")


if __name__ == "__main__":
    main()
