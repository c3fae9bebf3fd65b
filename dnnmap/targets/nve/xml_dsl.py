"""Parser of the thesis's XML ConvNet description (NVE §4.1, Listing 1, Appendix A) into the IR.

::

    <convNetDescriptor name="Face Detector" layerCount="4">
      <layerDescriptor idx="0">
        <outHeight>358</outHeight><outWidth>638</outWidth>
        <kernelHeight>6</kernelHeight><kernelWidth>6</kernelWidth>
        <subHeight>2</subHeight><subWidth>2</subWidth>
        <outCount>4</outCount>
        <outNet idx="0" cnt="1">0</outNet> ...   (input maps of output map idx)
      </layerDescriptor> ...

Every layer becomes a strided, sparsely connected convolution with a sigmoid (the NVE
activation LUT), exactly as the zoo builds ``nve_face``/``nve_speed``: a layer reads the
window ``(out-1)*sub + kernel`` of its producer; a difference to the producer's size is
explicit bottom/right padding (negative = rows/columns not read). The DSL does not give
the frame size; it defaults to the first layer's window and can be passed explicitly
(the thesis's benchmarks use 1280x720, ``frame_hw=(720, 1280)``).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from dnnmap.errors import InputFileError
from dnnmap.fileio import read_text
from dnnmap.workload.builder import NetworkBuilder
from dnnmap.workload.ir import Network
from dnnmap.workload.validate import validate_network

_SIZE_FIELDS = ("outHeight", "outWidth", "kernelHeight", "kernelWidth", "subHeight", "subWidth", "outCount")
MAX_VALUE = 2**16  # sizes, counts and indices: a 1280x720 frame needs 1,280


def _int(text: str | None, where: str, minimum: int = 1, what: str = "a positive integer") -> int:
    raw = (text or "").strip()
    try:
        value = int(raw) if len(raw) <= 12 else None
    except ValueError:
        value = None
    if value is None:
        raise InputFileError(f"{where}: expected {what}, got {raw!r:.40}")
    if not minimum <= value <= MAX_VALUE:
        raise InputFileError(f"{where}: expected {what} of at most {MAX_VALUE:,}, got {value}")
    return value


def _index(text: str | None, where: str) -> int:
    return _int(text, where, 0, "a non-negative integer index")


def _maps(text: str | None, where: str) -> tuple[int, ...]:
    items = [x.strip() for x in (text or "").split(",") if x.strip()]
    try:
        maps = tuple(int(x) if len(x) <= 12 else -1 for x in items)
    except ValueError:
        raise InputFileError(f"{where}: expected a comma-separated list of input map indices, got {text!r:.60}") \
            from None
    if not maps or len(set(maps)) != len(maps) or min(maps) < 0:
        raise InputFileError(f"{where}: input map list {text!r:.60} must be non-empty, distinct and >= 0")
    return maps


def parse_xml(text: str, source: str = "<xml>", frame_hw: tuple[int, int] | None = None,
              batch: int = 1) -> Network:
    """The IR network described by the XML ``text`` (``source`` names it in error messages)."""
    if "<!DOCTYPE" in text or "<!ENTITY" in text:
        raise InputFileError(f"{source}: document type declarations and entities are not allowed")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise InputFileError(f"{source}: malformed XML ({e})") from None
    if root.tag != "convNetDescriptor":
        raise InputFileError(f"{source}: root element must be <convNetDescriptor>, got <{root.tag}>")
    name = root.get("name") or Path(source).stem
    layers = root.findall("layerDescriptor")
    if not layers:
        raise InputFileError(f"{source}: <convNetDescriptor> has no <layerDescriptor>")
    if root.get("layerCount") is not None and _int(root.get("layerCount"), f"{source}: layerCount") != len(layers):
        raise InputFileError(f"{source}: layerCount={root.get('layerCount')} but {len(layers)} <layerDescriptor> found")
    idxs = [_index(e.get("idx"), f"{source}: <layerDescriptor idx>") for e in layers]
    if sorted(idxs) != list(range(len(layers))):
        raise InputFileError(f"{source}: layerDescriptor idx values {idxs} must be 0..{len(layers) - 1}, each once")
    builder: NetworkBuilder | None = None
    in_maps = 1
    for idx, elem in sorted(zip(idxs, layers, strict=True), key=lambda x: x[0]):
        where = f"{source}: layerDescriptor idx={idx}"
        vals = {}
        for f in _SIZE_FIELDS:
            child = elem.find(f)
            if child is None:
                raise InputFileError(f"{where}: missing <{f}> (required: {', '.join(_SIZE_FIELDS)})")
            vals[f] = _int(child.text, f"{where} <{f}>")
        nets = elem.findall("outNet")
        conn: dict[int, tuple[int, ...]] = {}
        for net in nets:
            k = _index(net.get("idx"), f"{where} <outNet idx>")
            w = f"{where} <outNet idx={k}>"
            maps = _maps(net.text, w)
            if net.get("cnt") is not None and _int(net.get("cnt"), f"{w} cnt") != len(maps):
                raise InputFileError(f"{w}: cnt={net.get('cnt')} but {len(maps)} input maps listed")
            if max(maps) >= in_maps:
                raise InputFileError(f"{w}: input map {max(maps)} does not exist (previous layer has {in_maps} maps)")
            if k in conn:
                raise InputFileError(f"{w}: output map defined twice")
            conn[k] = maps
        if sorted(conn) != list(range(vals["outCount"])):
            raise InputFileError(f"{where}: outNet idx values {sorted(conn)} must be 0..{vals['outCount'] - 1} "
                                 f"(outCount={vals['outCount']})")
        kh, kw, sv, sw = vals["kernelHeight"], vals["kernelWidth"], vals["subHeight"], vals["subWidth"]
        window = ((vals["outHeight"] - 1) * sv + kh, (vals["outWidth"] - 1) * sw + kw)
        if builder is None:
            frame = frame_hw or window
            builder = NetworkBuilder(name, (batch, 1, *frame))
        _, _, h, w = builder.shape(builder.last)
        try:
            builder.conv(f"L{idx + 1}", vals["outCount"], (kh, kw), (sv, sw), (0, 0, window[0] - h, window[1] - w),
                         fused=("sigmoid",), connectivity=tuple(conn[k] for k in range(vals["outCount"])))
        except ValueError as e:
            raise InputFileError(f"{where}: {e}") from None
        in_maps = vals["outCount"]
    assert builder is not None
    return validate_network(builder.build(notes=(f"parsed from the NVE XML DSL {source}",), source="xml"), source)


def load_xml(path: str | Path, frame_hw: tuple[int, int] | None = None, batch: int = 1) -> Network:
    p = Path(path)
    return parse_xml(read_text(p, "XML network description"), str(p), frame_hw, batch)
