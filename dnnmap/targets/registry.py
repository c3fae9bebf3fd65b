"""Accelerator targets behind one interface: the :class:`Target` protocol and the registry.

A target turns a network into a folder of programs (``compile``) and runs such a folder on its simulator
(``simulate``). Every compiled folder holds a ``manifest.json`` whose field ``format`` names the target that
wrote it (``dnnmap-nve/1``, ``dnnmap-nmp/1``); ``dnnmap simulate`` looks the target up by that field.

Options travel as one value (:class:`CompileOptions`, :class:`SimulateOptions`); ``None``/``False`` means
"not given", so each target applies its own defaults. A target declares which options it reads; one it does
not read is refused naming the targets that do (:func:`check_options`).

Adding a target: a package under ``dnnmap/targets/`` whose ``target`` module calls :func:`register`, and its
name in :data:`BUILTIN` (the module to import on first use, so listing the names costs no import).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Protocol

from dnnmap.errors import DnnmapError, InputFileError, UnknownNameError, unknown_name_message
from dnnmap.fileio import load_data
from dnnmap.workload.ir import Network

# target name -> the module that registers it (imported when the target is first needed)
BUILTIN: dict[str, str] = {"nve": "dnnmap.targets.nve.target", "nmp": "dnnmap.targets.nmp.target"}
MANIFEST = "manifest.json"
FORMAT_FIELD = "format"


@dataclass(frozen=True)
class CompileOptions:
    """Every option of ``dnnmap compile``; ``None``/``False`` = not given (the target's default)."""

    spec: Path | None = None  # NVE machine spec YAML
    arch: str | Path | None = None  # architecture preset or YAML (NMP)
    opt_level: int | None = None
    skip_unsupported: bool = False
    bits: int | None = None
    seed: int | None = None
    params: Path | None = None


@dataclass(frozen=True)
class SimulateOptions:
    """Every option of ``dnnmap simulate`` (defaults: seed 0, a reduced frame where the target has one)."""

    seed: int = 0
    full_frame: bool = False


def given(options: CompileOptions | SimulateOptions) -> tuple[str, ...]:
    """The fields of ``options`` that differ from their defaults (the options the user gave)."""
    return tuple(f.name for f in fields(options) if getattr(options, f.name) != f.default)


def flag(option: str) -> str:
    """The command-line spelling of an option field (``opt_level`` -> ``--opt-level``)."""
    return "--" + option.replace("_", "-")


class CompileSummary(Protocol):
    """What ``compile`` returns: something that can describe itself."""

    def summary(self) -> str: ...


class Verdict(Protocol):
    """What ``simulate`` returns: whether the outputs check out, and a description."""

    @property
    def passed(self) -> bool: ...

    def summary(self) -> str: ...


class Target(Protocol):
    """An accelerator back end (module docstring: how to add one)."""

    name: str
    description: str
    manifest_format: str  # the value of the manifest's ``format`` field in the folders it writes
    source_suffixes: tuple[str, ...]  # model files the target reads itself (given as paths, not networks)
    compile_options: frozenset[str]  # CompileOptions fields it reads
    simulate_options: frozenset[str]  # SimulateOptions fields it reads
    option_hints: Mapping[str, str]  # option it does not read -> what to use instead

    def compile(self, network: Network | Path, out_dir: Path, options: CompileOptions) -> CompileSummary: ...

    def simulate(self, folder: Path, options: SimulateOptions) -> Verdict: ...


_REGISTERED: dict[str, Target] = {}


def register(target: Target) -> Target:
    """Add ``target`` to the registry (a target package's ``target`` module calls this on import)."""
    if target.name in _REGISTERED:
        raise ValueError(f"target {target.name!r} is registered twice")
    _REGISTERED[target.name] = target
    return target


def names() -> tuple[str, ...]:
    """The names of every target (built-in ones first), without importing any target."""
    return tuple(dict.fromkeys([*BUILTIN, *_REGISTERED]))


def get(name: str) -> Target:
    """The target called ``name``, or an UnknownNameError listing the targets."""
    if name not in _REGISTERED and name in BUILTIN:
        importlib.import_module(BUILTIN[name])
    if name not in _REGISTERED:
        raise UnknownNameError(unknown_name_message("target", name, names(), "targets:"))
    return _REGISTERED[name]


def targets() -> tuple[Target, ...]:
    """Every target, each imported."""
    return tuple(get(n) for n in names())


def check_options(target: Target, options: CompileOptions | SimulateOptions) -> None:
    """Refuse an option ``target`` does not read, naming the targets that do (and the target's hint)."""
    compiling = isinstance(options, CompileOptions)
    for option in given(options):
        if option in (target.compile_options if compiling else target.simulate_options):
            continue
        readers = [t.name for t in targets() if option in (t.compile_options if compiling else t.simulate_options)]
        hint = target.option_hints.get(option)
        where = (f"--target {' and '.join(readers)} only, not {target.name}" if compiling else
                 f"folders compiled for {' and '.join(readers)} only; this one was compiled for {target.name}")
        raise DnnmapError(f"{flag(option)} applies to {where}" + (f"; {hint}" if hint else ""))


def target_of_folder(folder: Path) -> Target:
    """The target that wrote ``folder``, from its manifest's declared ``format`` (never guessed)."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise InputFileError(f"{path}: no manifest; run the compiler first "
                             f"(`dnnmap compile NET --target {'|'.join(names())} -o {folder}`)")
    data: Any = load_data(path, "manifest", fmt="json")
    known = ", ".join(f"{t.manifest_format!r} (target {t.name})" for t in targets())
    if not isinstance(data, dict):
        raise InputFileError(f"{path}: not a manifest (a JSON object with a field {FORMAT_FIELD!r} naming the "
                             f"target: {known})")
    value = data.get(FORMAT_FIELD)
    if value is None:
        raise InputFileError(f"{path}: field {FORMAT_FIELD!r} is missing; a compiled folder's manifest names the "
                             f"target that wrote it there: {known}")
    for target in targets():
        if value == target.manifest_format:
            return target
    raise InputFileError(f"{path}: field {FORMAT_FIELD!r}: {value!r} is not a format this dnnmap reads; "
                         f"known: {known}")
