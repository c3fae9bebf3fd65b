"""The one way dnnmap reads its own data files (YAML, JSON, text) and writes its outputs.

Every reader goes through :func:`read_text` (size limit, strict UTF-8) and, for structured
files, :func:`load_data` (YAML or JSON by suffix) which refuses what a careless or hostile
file could use to crash or mislead the tools that consume the data:

* bytes that are not UTF-8 (``error: FILE: not a UTF-8 text file``);
* files larger than :data:`MAX_FILE_BYTES`, nesting deeper than :data:`MAX_DEPTH`, more than
  :data:`MAX_NODES` values (counted with YAML aliases expanded, so an "alias bomb" is refused
  before anything walks it), recursive aliases;
* duplicate mapping keys (YAML would silently keep the last one), named with their lines;
* integers beyond 64 bits and non-finite numbers (``.inf``, ``NaN``, ``1e999``).

Every problem is an :class:`~dnnmap.errors.InputFileError` whose message starts with the file
name. Writers (:func:`write_text_atomic`, :func:`publish_dir`) go through a temporary sibling
renamed into place, so nothing is ever half-written, and give the result the permissions an
ordinary ``open()``/``mkdir`` would (the umask; an overwritten file keeps its mode).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import stat
import tempfile
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, BinaryIO

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, StrictInt, ValidationError
from yaml.nodes import MappingNode, ScalarNode

from dnnmap.errors import DnnmapNote, InputFileError

MAX_FILE_BYTES = 64 * 2**20  # the largest file the loaders read (a ResNet-50 network file is ~60 KB)
MAX_DEPTH = 64  # nesting of lists/mappings; dnnmap's formats need at most 8
MAX_NODES = 1_000_000  # values in one document, aliases expanded
INT_LIMIT = 2**63  # integers must fit a signed 64-bit word
_MAX_INT_DIGITS = 24  # longer literals are refused before conversion (Python refuses > 4300 digits)

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Problem(Exception):
    """A problem found while loading, with the 1-based line where it is (0 = unknown)."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.line = line


def _json_int(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_INT_DIGITS:
        raise _Problem(f"integer literal with {len(text.lstrip('-'))} digits is beyond 64 bits")
    return _checked_int(int(text))


def _checked_int(value: int, line: int = 0) -> int:
    if not -INT_LIMIT <= value < INT_LIMIT:
        raise _Problem(f"integer {value} is beyond 64 bits (|value| < 2**63 required)", line)
    return value


def _checked_float(value: float, text: str, line: int = 0) -> float:
    if not math.isfinite(value):
        raise _Problem(f"number {text!r} is not finite (infinities and NaN are not allowed)", line)
    return value


class _StrictLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """Safe YAML loader that refuses duplicate keys, integers beyond 64 bits and non-finite floats.

    ``duplicates``: None refuses a duplicate key; a list collects one message per duplicate and the last value is
    kept (as YAML itself and the tools whose published inputs rely on it do)."""

    duplicates: list[str] | None = None

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = seen.get(key)
            except TypeError:
                raise _Problem(f"a mapping key must be a scalar, not {type(key).__name__}", line) from None
            if first is not None:
                if self.duplicates is None:
                    raise _Problem(f"duplicate key {key!r} (first given on line {first}); YAML would silently "
                                   "keep the last value", line)
                self.duplicates.append(f"line {line}: duplicate key {key!r} (first given on line {first}); "
                                       "the last value is used")
            seen[key] = line
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]

    def construct_yaml_int(self, node: ScalarNode) -> int:
        text = str(self.construct_scalar(node))
        line = node.start_mark.line + 1
        if len(text.lstrip("+-").replace("_", "")) > _MAX_INT_DIGITS:
            raise _Problem(f"integer literal with {len(text)} characters is beyond 64 bits", line)
        return _checked_int(super().construct_yaml_int(node), line)  # type: ignore[misc]

    def construct_yaml_float(self, node: ScalarNode) -> float:
        return _checked_float(super().construct_yaml_float(node), str(node.value),  # type: ignore[misc]
                              node.start_mark.line + 1)


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _StrictLoader.construct_yaml_int)
_StrictLoader.add_constructor("tag:yaml.org,2002:float", _StrictLoader.construct_yaml_float)
StrictLoader = _StrictLoader  # to subclass for formats with tags of their own (Timeloop's !Component)


# ---- names that may be built-ins or paths ------------------------------------------
def builtin_wins(ref: object, builtin: bool, what: str) -> bool:
    """Whether ``ref`` (a command-line name) means the built-in ``what`` (a preset, a zoo model): a string
    without a folder separator that names a built-in is the built-in, even when a file or folder of that name
    is in the current directory (a note says so and that ``./NAME`` reads it); anything else is not."""
    if not (builtin and isinstance(ref, str) and "/" not in ref and os.sep not in ref):
        return False
    if Path(ref).exists():
        warnings.warn(DnnmapNote(f"{ref!r} is the {what}; a file or folder {ref!r} is here too: give ./{ref} to "
                                 "read it instead"), stacklevel=2)
    return True


# ---- reading ---------------------------------------------------------------------
NONBLOCKING = getattr(os, "O_NONBLOCK", 0)  # opening a FIFO for reading must not wait for a writer


@contextmanager
def open_regular(path: str | os.PathLike[str], what: str = "file") -> Iterator[BinaryIO]:
    """``path`` opened for reading in binary mode, refused unless it is a regular file: a FIFO, device or
    socket is opened non-blocking and refused before anything reads it (an ordinary open of a FIFO waits for a
    writer forever); missing or unreadable files are InputFileErrors naming ``path`` and ``what``."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | NONBLOCKING)
    except IsADirectoryError:
        raise InputFileError(f"{p}: is a directory, expected the {what}") from None
    except FileNotFoundError:
        raise InputFileError(f"{p}: {what} not found") from None
    except OSError as err:  # ENXIO: a socket; EACCES, ELOOP...
        raise InputFileError(f"{p}: cannot read the {what} ({err.strerror or err})") from None
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode):  # Linux opens a directory read-only; os.fdopen would then fail naming the descriptor
        os.close(fd)
        raise InputFileError(f"{p}: is a directory, expected the {what}")
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(mode):
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) \
                else "a socket" if stat.S_ISSOCK(mode) else "not a regular file"
            raise InputFileError(f"{p}: {kind}, not a regular file (expected the {what})")
        if NONBLOCKING:
            os.set_blocking(fd, True)
        yield fh


def read_bytes(path: str | os.PathLike[str], what: str = "file", limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of ``path`` (at most ``limit``); missing, unreadable, special (see :func:`open_regular`) or
    oversized files are InputFileErrors."""
    p = Path(path)
    with open_regular(p, what) as fh:
        try:
            data = fh.read(limit + 1)
        except OSError as err:
            raise InputFileError(f"{p}: cannot read the {what} ({err.strerror or err})") from None
    if len(data) > limit:
        raise InputFileError(f"{p}: larger than {limit // 2**20} MiB, the limit for the {what}")
    return data


def decode_text(data: bytes, origin: str) -> str:
    """``data`` as UTF-8 text (a byte-order mark is dropped); anything else is an InputFileError."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputFileError(f"{origin}: not a UTF-8 text file (byte 0x{data[err.start]:02x} at offset "
                             f"{err.start} is not UTF-8)") from None
    if "\x00" in text:
        raise InputFileError(f"{origin}: not a UTF-8 text file (it contains NUL bytes, offset "
                             f"{text.index(chr(0))})")
    return text


def read_text(path: str | os.PathLike[str], what: str = "file", limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of ``path`` (see :func:`read_bytes` and :func:`decode_text`)."""
    return decode_text(read_bytes(path, what, limit), str(path))


_FLOW_TOKENS = re.compile(r"""[\[\]{}#'"\n]""")
_QUOTE_END = {"'": re.compile(r"'(?:''|[^'])*'", re.S), '"': re.compile(r'"(?:\\.|[^"\\])*"', re.S)}


def _check_flow_depth(text: str) -> None:
    """Refuse flow collections (``[[[...``, ``{a: {b: ...``) nested deeper than MAX_DEPTH before any YAML parser
    reads them: parsers look ahead through a whole flow collection before emitting its first event and refuse
    deep ones with limits and wording of their own, which differ between versions. Quoted scalars and comments
    are skipped; a quote opens a scalar only where a token starts (so ``Bob's`` is plain text)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return
    depth, pos = 0, 0
    while (match := _FLOW_TOKENS.search(text, pos)) is not None:
        char, pos = match.group(), match.end()
        before = text[match.start() - 1] if match.start() else "\n"
        if char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise _Problem(f"nested more than {MAX_DEPTH} levels deep", text.count("\n", 0, match.start()) + 1)
        elif char in "]}":
            depth = max(depth - 1, 0)
        elif char == "#" and before in " \t\n":
            newline = text.find("\n", pos)
            pos = len(text) if newline < 0 else newline
        elif char in "'\"" and before in " \t\n[{,:-":
            quoted = _QUOTE_END[char].match(text, match.start())
            pos = quoted.end() if quoted else len(text)


def _scan_yaml_events(text: str) -> None:
    """Refuse documents nested deeper than MAX_DEPTH or with more than MAX_NODES nodes, before composing them
    (the composer recurses once per nesting level)."""
    _check_flow_depth(text)
    depth = nodes = 0
    for event in yaml.parse(text, Loader=_BaseLoader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise _Problem(f"nested more than {MAX_DEPTH} levels deep", event.start_mark.line + 1)
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        if isinstance(event, yaml.NodeEvent):
            nodes += 1
            if nodes > MAX_NODES:
                raise _Problem(f"more than {MAX_NODES:,} values", event.start_mark.line + 1)


def _measure(root: Any) -> None:
    """Depth and value count of a loaded document with shared (aliased) parts expanded; refuses cycles."""
    done: dict[int, tuple[int, int]] = {}  # id -> (values, depth)
    active: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if not isinstance(node, (list, dict)):
            continue
        key = id(node)
        children = list(node.values()) if isinstance(node, dict) else node
        if not expanded:
            if key in done:
                continue
            if key in active:
                raise _Problem("a recursive alias (a value that contains itself)")
            active.add(key)
            stack.append((node, True))
            stack.extend((c, False) for c in children if isinstance(c, (list, dict)))
            continue
        active.discard(key)
        values, depth = len(children) + 1, 1
        for c in children:
            if isinstance(c, (list, dict)):
                cv, cd = done[id(c)]
                values, depth = values + cv, max(depth, cd + 1)
        if depth > MAX_DEPTH:
            raise _Problem(f"nested more than {MAX_DEPTH} levels deep")
        if values > MAX_NODES:
            raise _Problem(f"more than {MAX_NODES:,} values (YAML aliases counted at every use)")
        done[key] = (values, depth)


def parse_yaml(text: str, origin: str, duplicates: list[str] | None = None,
               loader: type[StrictLoader] = StrictLoader) -> Any:
    """Parse YAML ``text`` with the strict loader (or a subclass of it that knows a format's tags); problems
    become InputFileErrors naming ``origin``. ``duplicates``: a list to collect duplicate keys in (the last value
    is kept) instead of refusing them."""
    try:
        _scan_yaml_events(text)
        parser = loader(text)
        parser.duplicates = duplicates
        try:
            data = parser.get_single_data()
        finally:
            parser.dispose()
        _measure(data)
    except _Problem as err:
        raise InputFileError(f"{origin}: {'line ' + str(err.line) + ': ' if err.line else ''}{err}") from None
    except yaml.YAMLError as err:
        detail = " ".join(str(err).replace('in "<unicode string>", ', "").split())
        raise InputFileError(f"{origin}: not valid YAML: {detail}") from err
    except (RecursionError, MemoryError):
        raise InputFileError(f"{origin}: too deeply nested or too large to load") from None
    return data


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Problem(f"duplicate key {key!r}; JSON readers would silently keep the last value")
        out[key] = value
    return out


def _json_constant(name: str) -> float:
    raise _Problem(f"number {name!r} is not finite (infinities and NaN are not allowed)")


def parse_json(text: str, origin: str) -> Any:
    """Parse JSON ``text`` strictly (duplicate keys, huge integers, NaN/Infinity refused)."""
    try:
        data = json.loads(text, object_pairs_hook=_json_object, parse_constant=_json_constant,
                          parse_int=_json_int, parse_float=lambda s: _checked_float(float(s), s))
        _measure(data)
    except _Problem as err:
        raise InputFileError(f"{origin}: {err}") from None
    except json.JSONDecodeError as err:
        raise InputFileError(f"{origin}: not valid JSON: {err}") from err
    except (RecursionError, MemoryError):
        raise InputFileError(f"{origin}: nested more than {MAX_DEPTH} levels deep or too large to load") from None
    return data


def load_data(path: str | os.PathLike[str], what: str = "file", fmt: str | None = None,
              duplicates: list[str] | None = None) -> Any:
    """The parsed content of a YAML or JSON file (``fmt`` "yaml"/"json"; default: by suffix, .json is JSON).
    ``duplicates`` (YAML only): collect duplicate keys there, keeping the last value, instead of refusing them."""
    text = read_text(path, what)
    fmt = fmt or ("json" if Path(path).suffix.lower() == ".json" else "yaml")
    return parse_json(text, str(path)) if fmt == "json" else parse_yaml(text, str(path), duplicates)


def yaml_line(origin: str | os.PathLike[str], loc: tuple[Any, ...]) -> int | None:
    """The line (1-based) of the YAML node at the pydantic error location ``loc`` in the file ``origin``,
    or of its deepest existing parent (a missing field: the mapping that lacks it); None when ``origin``
    is not a readable YAML file. Called only on the error path: it reads and composes the file again."""
    path = Path(origin)
    if path.suffix.lower() not in (".yaml", ".yml") or not path.is_file():
        return None
    try:
        node = yaml.compose(read_text(path), Loader=_BaseLoader)
    except (InputFileError, yaml.YAMLError, RecursionError):
        return None
    for part in loc:
        if isinstance(node, MappingNode):
            child = next((v for k, v in node.value if isinstance(k, ScalarNode) and k.value == str(part)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            child = node.value[part]
        else:
            child = None  # a pydantic tag (a union member's type) or a missing field: keep the parent
        if child is not None:
            node = child
    return None if node is None else node.start_mark.line + 1


def at_line(line: int | None) -> str:
    """`` (line N)`` or ``""``."""
    return f" (line {line})" if line else ""


def field_path(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as a field path: ``layers[2].kind``, or ``(top level)``."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".") or "(top level)"


class StrictModel(BaseModel):
    """Base of the compiler output manifests' schemas: no unknown field, no type coercion, immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def int_choice(*values: int) -> Any:
    """A strict integer field that must be one of ``values`` (pydantic's ``Literal[8, 16]`` accepts 16.0)."""
    def check(value: int) -> int:
        if value not in values:
            raise ValueError(f"must be one of {', '.join(map(str, values))}")
        return value
    return Annotated[StrictInt, AfterValidator(check)]


def validate_strict(model: type[BaseModel], data: Any, origin: str | os.PathLike[str], what: str) -> BaseModel:
    """``data`` checked strictly against ``model``, or an InputFileError naming ``origin`` and the first
    three fields that fail (``{origin}: invalid {what}: field 'x': ...``)."""
    try:
        return model.model_validate(data, strict=True)
    except ValidationError as e:
        problems = "; ".join(f"field '{field_path(x['loc'])}'{at_line(yaml_line(origin, x['loc']))}: {x['msg']}"
                             for x in e.errors()[:3])
        raise InputFileError(f"{origin}: invalid {what}: {problems}") from e


def as_tuples(value: Any) -> Any:
    """Lists to tuples, recursively (loaded data for strict validation, where only tuple fields accept them;
    and for the IR, whose attribute values are tuples)."""
    if isinstance(value, list):
        return tuple(as_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: as_tuples(v) for k, v in value.items()}
    return value


# ---- writing ---------------------------------------------------------------------
def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _target_mode(path: Path, default: int) -> int:
    """The mode an ordinary write would give ``path``: its current mode if it exists, else ``default`` & ~umask."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return default & ~_umask()


def _make_parent(path: Path) -> None:
    """Create ``path``'s missing parent folders, or an InputFileError naming the obstacle (a file where a
    folder should be, a folder that cannot be written)."""
    blocker = next((d for d in path.parents if d.exists() and not d.is_dir()), None)
    if blocker is not None:
        raise InputFileError(f"{path}: {blocker} is a file, not a directory")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputFileError(f"{path}: cannot create the directory {path.parent} ({err.strerror or err})") from None


def write_text_atomic(path: str | os.PathLike[str], text: str | bytes, make_parents: bool = True) -> Path:
    """Write ``path`` via a temporary sibling and a rename: never half-written, usual permissions
    (``make_parents``: create missing parent directories)."""
    p = Path(path)
    if not p.name:
        raise InputFileError(f"{str(path)!r}: not a file name")
    if p.is_dir():
        raise InputFileError(f"{p}: is a directory; give a file name")
    if make_parents:
        _make_parent(p)
    mode = _target_mode(p, 0o666)
    try:
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    except OSError as err:
        raise InputFileError(f"{p}: cannot write into {p.parent} ({err.strerror or err})") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8") if isinstance(text, str) else text)
        os.chmod(tmp, mode)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p


def is_manifest_dir(d: Path) -> bool:
    """``publish_dir``'s ``may_replace`` for a compiler output folder: an empty directory or one with a
    ``manifest.json`` (one a compile wrote)."""
    return d.is_dir() and (not any(d.iterdir()) or (d / "manifest.json").is_file())


@contextmanager
def publish_dir(path: str | os.PathLike[str], may_replace: Callable[[Path], bool]) -> Iterator[Path]:
    """Yield a temporary sibling directory to fill; on success it replaces ``path`` (if ``may_replace`` allows
    replacing an existing one) with the usual directory permissions; on failure it is removed."""
    out = Path(path)
    if out.exists() and not may_replace(out):
        raise InputFileError(f"{out}: exists and is not a directory this command wrote; refusing to overwrite it")
    _make_parent(out)
    mode = _target_mode(out, 0o777)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    except OSError as err:
        raise InputFileError(f"{out}: cannot write into {out.parent} ({err.strerror or err})") from None
    try:
        yield tmp
        os.chmod(tmp, mode)
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
