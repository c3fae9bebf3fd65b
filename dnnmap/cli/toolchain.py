"""``dnnmap import``, ``dnnmap compile`` and ``dnnmap simulate``: model files in, accelerator programs out."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dnnmap.api import resolve_network
from dnnmap.cli.console import stdout_console
from dnnmap.cli.errors import user_errors
from dnnmap.cli.options import INPUT_SHAPE_HELP, output_path, parse_input_shapes
from dnnmap.errors import DnnmapError, InputFileError, UnknownNameError
from dnnmap.limits import check_seed
from dnnmap.report.tables import si
from dnnmap.workload import zoo
from dnnmap.workload.importers import import_model, save_network
from dnnmap.workload.ir import Network

TARGETS = ("nve", "nmp")


@user_errors
def import_command(
    model: Annotated[str, typer.Argument(help="model file (.onnx, .keras, .h5, SavedModel dir) or a zoo name")],
    output: Annotated[Path, typer.Option("--output", "-o", parser=output_path,
                                         help="network file to write (.yaml, .yml or .json)")],
    input_shape: Annotated[Optional[list[str]], typer.Option(help=INPUT_SHAPE_HELP)] = None,
    skip_unsupported: Annotated[bool, typer.Option(help="drop unsupported operators (listed in the report) "
                                                        "instead of failing")] = False,
) -> None:
    """Import a model into a dnnmap network file (what `dnnmap map` and `dnnmap compile` read)."""
    out = stdout_console()
    path = Path(model)
    if path.exists() or path.suffix:
        imported = import_model(path, parse_input_shapes(input_shape), skip_unsupported)
        network = imported.network
        for line in imported.report.lines():
            out.print(line, markup=False)
    else:
        network = zoo.get(model)
    save_network(network, output)
    out.print(f"wrote {output}: network {network.name!r}, {len(network.layers)} layers, {si(network.macs)} MACs",
              markup=False)


def _compile_source(net: str) -> Network | Path:
    """An NVE XML description is passed on as a path; other files and zoo names become networks."""
    path = Path(net)
    return path if path.suffix.lower() == ".xml" else resolve_network(net)


@user_errors
def compile_command(
    net: Annotated[str, typer.Argument(help="network: NVE XML description, dnnmap network file, model file or "
                                            "zoo name")],
    output: Annotated[Path, typer.Option("--output", "-o", parser=output_path, help="output directory")],
    target: Annotated[str, typer.Option(help=f"code generator; one of {', '.join(TARGETS)}")] = "nve",
    opt_level: Annotated[Optional[int], typer.Option("--opt-level", "-O", help="nve: optimization level 0-3 "
                                                     "(default 3)")] = None,
    spec: Annotated[Optional[Path], typer.Option(help="target spec YAML (default: the built-in NVE spec; "
                                                          "nmp: an architecture YAML, default the nmp preset)")] = None,
    skip_unsupported: Annotated[bool, typer.Option(help="skip layers the target cannot run instead of "
                                                        "failing")] = False,
    bits: Annotated[Optional[int], typer.Option(help="nmp: fixed-point width, 8 or 16 (default 16)")] = None,
    seed: Annotated[Optional[int], typer.Option(help="nmp: seed of the random weights (default 0)")] = None,
    params: Annotated[Optional[Path], typer.Option(help="nmp: float weights .npz (LAYER/weight, LAYER/bias, "
                                                        "optional LAYER/bn_*) instead of random ones")] = None,
) -> None:
    """Compile a network into programs, binaries and a manifest for an accelerator target."""
    if target not in TARGETS:
        raise UnknownNameError(f"unknown target {target!r}; targets: {', '.join(TARGETS)}")
    if target == "nmp":
        if opt_level is not None or skip_unsupported:
            raise DnnmapError("--opt-level and --skip-unsupported apply to --target nve only (the NMP target "
                              "compiles every layer or refuses the network)")
        _compile_nmp(net, output, spec, bits, seed, params)
        return
    if bits is not None or seed is not None or params is not None:
        raise DnnmapError("--bits, --seed and --params apply to --target nmp only")
    from dnnmap.targets.nve import compile_network

    result = compile_network(_compile_source(net), output, spec, 3 if opt_level is None else opt_level,
                             skip_unsupported)
    stdout_console().print(result.summary(), markup=False)


def _compile_nmp(net: str, output: Path, spec: Path | None, bits: int | None, seed: int | None,
                 params: Path | None) -> None:
    from dnnmap.arch.spec import load_arch
    from dnnmap.targets.nmp import compile_network as compile_nmp

    check_seed(seed or 0)
    arch = load_arch(spec) if spec is not None else None
    result = compile_nmp(resolve_network(net), output, 16 if bits is None else bits, seed or 0, arch, params)
    stdout_console().print(result.summary(), markup=False)


def _is_nmp_output(out_dir: Path) -> bool:
    """Whether ``out_dir`` holds an NMP compilation (its manifest's format), else it is treated as NVE's."""
    from dnnmap.fileio import load_data

    path = out_dir / "manifest.json"
    if not path.is_file():
        return False
    data = load_data(path, "manifest", fmt="json")
    return isinstance(data, dict) and str(data.get("format", "")).startswith("dnnmap-nmp/")


@user_errors
def simulate_command(
    out_dir: Annotated[Path, typer.Argument(help="directory written by `dnnmap compile`")],
    full_frame: Annotated[bool, typer.Option(help="simulate the compiled frame size (seconds per layer) instead of a "
                                                  "reduced frame")] = False,
    seed: Annotated[int, typer.Option(help="seed of the random pixels and weights")] = 0,
) -> None:
    """Run compiled programs (NVE or NMP) on their simulator and check outputs bit-exactly (exit 1 if not)."""
    from dnnmap.targets.nve import run_compiled

    check_seed(seed)
    if not (out_dir / "manifest.json").is_file():
        raise InputFileError(f"{out_dir / 'manifest.json'}: no manifest; run the compiler first "
                             "(`dnnmap compile NET --target nve|nmp -o DIR`)")
    if _is_nmp_output(out_dir):
        if full_frame:
            raise DnnmapError("--full-frame applies to NVE outputs; an NMP run always simulates the whole network")
        from dnnmap.targets.nmp import run_compiled as run_nmp

        nmp = run_nmp(out_dir, seed=seed)
        stdout_console().print(nmp.summary(), markup=False)
        if not (nmp.bit_exact and nmp.within_tolerance):
            raise typer.Exit(1)
        return
    result = run_compiled(out_dir, full_frame=full_frame, seed=seed)
    stdout_console().print(result.summary(), markup=False)
    if not result.bit_exact:
        raise typer.Exit(1)
