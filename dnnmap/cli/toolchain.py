"""``dnnmap import``, ``dnnmap compile`` and ``dnnmap simulate``: model files in, accelerator programs out."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dnnmap.api import model_path, resolve_network
from dnnmap.cli.console import stdout_console, wrote
from dnnmap.cli.errors import user_errors
from dnnmap.cli.options import INPUT_SHAPE_HELP, check_outputs, output_path, parse_input_shapes, strict_int
from dnnmap.limits import check_seed
from dnnmap.report.summary import counted
from dnnmap.report.tables import si
from dnnmap.targets import registry
from dnnmap.targets.registry import CompileOptions, SimulateOptions, Target
from dnnmap.workload.importers import import_model, save_network
from dnnmap.workload.ir import Network


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
    shapes = parse_input_shapes(input_shape)  # checked first, whatever the model
    path = model_path(model)
    check_outputs([(output, "--output", False)], [path])
    if path is not None:
        imported = import_model(path, shapes, skip_unsupported)
        network = imported.network
        for line in imported.report.lines():
            out.print(line, markup=False)
    else:
        network = resolve_network(model, shapes)  # a zoo name or named workload: no --input-shape
    save_network(network, output)
    wrote(out, output, detail=f"network {network.name!r}, {counted(len(network.layers), 'layer')}, {si(network.macs)} MACs")


def _compile_source(target: Target, net: str) -> Network | Path:
    """A file the target reads itself (its ``source_suffixes``, e.g. NVE XML) is passed on as a path; other
    files and zoo names become networks."""
    path = Path(net)
    return path if path.suffix.lower() in target.source_suffixes else resolve_network(net)


@user_errors
def compile_command(
    net: Annotated[str, typer.Argument(help="network: dnnmap network file, model file or zoo name (nve: also an "
                                            "NVE XML description)")],
    output: Annotated[Path, typer.Option("--output", "-o", parser=output_path, help="output directory")],
    target: Annotated[str, typer.Option(help=f"code generator; one of {', '.join(registry.names())}")] = "nve",
    spec: Annotated[Optional[Path], typer.Option(help="nve: the NVE machine spec YAML (default the built-in "
                                                      "spec; docs/nve.md section 2)")] = None,
    arch: Annotated[Optional[str], typer.Option(help="nmp: the architecture, a preset name or YAML file "
                                                     "(default the nmp preset)")] = None,
    opt_level: Annotated[Optional[int], typer.Option("--opt-level", "-O", parser=strict_int,
                                                     help="nve: optimization level 0-3 "
                                                     "(default 3)")] = None,
    skip_unsupported: Annotated[bool, typer.Option(help="nve: skip layers the target cannot run instead of "
                                                        "failing")] = False,
    bits: Annotated[Optional[int], typer.Option(parser=strict_int, help="nmp: fixed-point width, 8 or 16 "
                                                "(default 16)")] = None,
    seed: Annotated[Optional[int], typer.Option(parser=strict_int, help="nmp: seed of the random weights "
                                                "(default 0)")] = None,
    params: Annotated[Optional[Path], typer.Option(help="nmp: float weights .npz (LAYER/weight, LAYER/bias, "
                                                        "optional LAYER/bn_*) instead of random ones")] = None,
) -> None:
    """Compile a network into programs, binaries and a manifest for an accelerator target."""
    chosen = registry.get(target)
    options = CompileOptions(spec=spec, arch=arch, opt_level=opt_level, skip_unsupported=skip_unsupported,
                             bits=bits, seed=seed, params=params)
    registry.check_options(chosen, options)
    if seed is not None:
        check_seed(seed)
    source = Path(net) if Path(net).suffix.lower() in chosen.source_suffixes else model_path(net)
    arch_file = Path(arch) if arch is not None and ("/" in arch or Path(arch).suffix) else None
    check_outputs([(output, "--output", True)], [source, spec, arch_file, params], replaces_dirs=True)
    result = chosen.compile(_compile_source(chosen, net), output, options)
    stdout_console().print(result.summary(), markup=False)


@user_errors
def simulate_command(
    out_dir: Annotated[Path, typer.Argument(help="directory written by `dnnmap compile` (its manifest names the "
                                                 "target)")],
    full_frame: Annotated[bool, typer.Option(help="nve: simulate the compiled frame size (seconds per layer) "
                                                  "instead of a reduced frame")] = False,
    seed: Annotated[int, typer.Option(help="seed of the random pixels and weights")] = 0,
) -> None:
    """Run compiled programs on the simulator of the target that wrote them and check outputs bit-exactly
    (exit 1 if not)."""
    check_seed(seed)
    target = registry.target_of_folder(out_dir)
    options = SimulateOptions(seed=seed, full_frame=full_frame)
    registry.check_options(target, options)
    result = target.simulate(out_dir, options)
    stdout_console().print(result.summary(), markup=False)
    if not result.passed:
        raise typer.Exit(1)
