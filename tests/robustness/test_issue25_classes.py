"""Issue 25's failure classes, each over generated hostile inputs: special files refused before they are read,
schedulers that are not Dask refused within a bounded time, run JSON checked against its schema, Timeloop files
through the strict loader, outputs checked before any work. Every refusal: exit 2, ``error:`` naming the file or
option, no traceback, no hang, nothing written."""

from __future__ import annotations

import json
import os
import random
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from dnnmap.errors import DnnmapError
from dnnmap.sweep.scheduler_probe import check_scheduler
from fuzz_cases import Bases, make_bases, run_case


@pytest.fixture(scope="module")
def b(tmp_path_factory: pytest.TempPathFactory) -> Bases:
    return make_bases(tmp_path_factory.mktemp("issue25"))


def assert_refused(kind: str, args: list[str], root: Path, names: tuple[str, ...], outputs: tuple[Path, ...] = ()
                   ) -> None:
    o = run_case(kind, args, root, outputs=outputs)
    assert o.problem is None, f"{args}: {o.problem} ({o.message})"
    assert o.exit_code == 2, f"{args}: exit {o.exit_code} ({o.message})"
    for name in names:
        assert name in o.message, f"{args}: {o.message}"


# ---- 1. special files are refused before they are opened for reading ----------------------------------------
def _special(path: Path, kind: str) -> Path:
    """A FIFO, a listening Unix socket or a character device (a symlink to /dev/zero, which never ends) at
    ``path``."""
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.listen(1)
        _SOCKETS.append(sock)
    else:
        path.symlink_to("/dev/zero")
    return path


_SOCKETS: list[socket.socket] = []
SPECIAL_READERS: dict[str, Callable[[Path, Path], tuple[list[str], str]]] = {
    # name -> (folder, output folder) -> (command line, the special file's suffix)
    "arch": lambda d, o: (["map", "lenet5", "--arch", str(d / "x.yaml")], "x.yaml"),
    "network": lambda d, o: (["map", str(d / "x.yaml"), "--mapper", "random", "--budget", "5"], "x.yaml"),
    "onnx": lambda d, o: (["import", str(d / "x.onnx"), "-o", str(o / "n.yaml")], "x.onnx"),
    "mapping": lambda d, o: (["show", str(d / "x.yaml")], "x.yaml"),
    "npz-params": lambda d, o: (["compile", "lenet5", "--target", "nmp", "--params", str(d / "x.npz"), "-o",
                                 str(o / "c")], "x.npz"),
    "nve-xml": lambda d, o: (["compile", str(d / "x.xml"), "-o", str(o / "c")], "x.xml"),
    "timeloop": lambda d, o: (["import-arch", "timeloop", str(d / "x.yaml"), "-o", str(o / "a.yaml")], "x.yaml"),
    "run-json": lambda d, o: (["report", str(d / "x.json"), "-o", str(o / "r.html")], "x.json"),
}


@pytest.mark.parametrize("special", ["fifo", "socket", "device"])
@pytest.mark.parametrize("reader", list(SPECIAL_READERS))
def test_special_files_refused_before_reading(b: Bases, reader: str, special: str) -> None:
    folder = b.root / f"special_{reader}_{special}"
    out = folder / "out"
    folder.mkdir()
    args, name = SPECIAL_READERS[reader](folder, out)
    path = _special(folder / name, special)
    assert_refused("special", args, b.root, (str(path),), outputs=(out,))


@pytest.mark.parametrize("reader", list(SPECIAL_READERS))
def test_a_directory_where_a_file_is_expected_is_named(b: Bases, reader: str) -> None:
    """Linux opens a directory read-only, so the reader must refuse it by its mode: the message names the path
    the user gave, never the descriptor number (was ``error: 3: Is a directory``)."""
    folder = b.root / f"directory_{reader}"
    out = folder / "out"
    folder.mkdir()
    args, name = SPECIAL_READERS[reader](folder, out)
    (folder / name).mkdir()
    o = run_case("special", args, b.root, outputs=(out,))
    assert o.problem is None and o.exit_code == 2, f"{args}: exit {o.exit_code} ({o.message})"
    assert str(folder / name) in o.message and "Is a directory" not in o.message, f"{args}: {o.message}"


@pytest.mark.parametrize("special", ["fifo", "device"])
def test_nmp_folder_with_a_special_file(b: Bases, special: str) -> None:
    import shutil

    folder = b.root / f"nmp_special_{special}"
    shutil.copytree(b.nmp, folder)
    victim = random.Random(special).choice(["manifest.json", "network.yaml", "params.npz", "programs.bin"])
    path = _special(folder / victim, special)
    assert_refused("special", ["simulate", str(folder)], b.root, (str(path),))


# ---- 1. schedulers that are not Dask: refused within a bounded time, before the store exists -------------------
@contextmanager
def serving(reply: Callable[[socket.socket], None]) -> Iterator[str]:
    """A loopback TCP server that answers every connection with ``reply``; yields its tcp:// address."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def loop() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                try:
                    reply(conn)
                    conn.settimeout(3)
                    conn.recv(1)  # hold the connection open until the client closes it
                except OSError:
                    pass

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        server.close()


def dask_greeting(frames: list[bytes]) -> bytes:
    """A message framed as Dask frames it (total length, frame count, frame lengths, frames)."""
    body = struct.pack(f"<Q{len(frames)}Q", len(frames), *map(len, frames)) + b"".join(frames)
    return struct.pack("<Q", len(body)) + body


def hostile_replies(rng: random.Random, n: int) -> list[bytes]:
    """Greetings of other protocols, random bytes and damaged Dask greetings."""
    fixed = [b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", b"SSH-2.0-OpenSSH_9.6\r\n",
             b"220 smtp ready\r\n", b"\xff" * 8, struct.pack("<Q", 0), struct.pack("<Q", 2**62) + b"x" * 64]
    out = list(fixed)
    while len(out) < n:
        frames = [rng.randbytes(rng.randrange(1, 40)) for _ in range(rng.randrange(1, 4))]
        good = dask_greeting(frames)
        cut = rng.randrange(1, len(good))
        choice = rng.randrange(3)
        if choice == 0:
            out.append(rng.randbytes(rng.randrange(1, 64)))
        elif choice == 1:  # a bit of the total length, the frame count or a frame length flipped
            pos = rng.randrange(8 * (len(frames) + 2))
            out.append(good[:pos] + bytes([good[pos] ^ (1 << rng.randrange(8))]) + good[pos + 1:])
        else:
            out.append(good[:cut])  # truncated, then silence
    return out


def test_scheduler_probe_refuses_what_is_not_dask() -> None:
    rng = random.Random(25)
    for reply in hostile_replies(rng, 30):
        with serving(lambda conn, r=reply: conn.sendall(r)) as address:
            start = time.monotonic()
            with pytest.raises(DnnmapError, match=f"--scheduler {address}"):
                check_scheduler(address, seconds=1.0)
            assert time.monotonic() - start < 3.0, reply


def test_scheduler_probe_accepts_a_dask_greeting() -> None:
    with serving(lambda conn: conn.sendall(dask_greeting([b"\x80" * 30, b"meta"]))) as address:
        check_scheduler(address)


@pytest.mark.parametrize("address", ["garbage", "tcp://127.0.0.1", "tcp://127.0.0.1:0", "tcp://127.0.0.1:99999",
                                     "http://127.0.0.1:80", "tcp://127.0.0.1:8786 ", "tcp://:8786", ""])
def test_malformed_scheduler_addresses(b: Bases, address: str) -> None:
    store = b.root / "sched_store.sqlite"
    assert_refused("scheduler", ["sweep", "lenet5", "--arch", "eyeriss", "--scheduler", address, "--store",
                                 str(store)], b.root, ("--scheduler",), outputs=(store,))


def test_http_server_as_scheduler_refused_without_store(b: Bases) -> None:
    store = b.root / "http_store.sqlite"
    reply = b"HTTP/1.0 400 Bad request\r\n\r\n"
    with serving(lambda conn: (conn.recv(64), conn.sendall(reply))) as address:
        start = time.monotonic()
        assert_refused("scheduler", ["sweep", "lenet5", "--arch", "eyeriss", "--scheduler", address, "--store",
                                     str(store)], b.root, (address, "not a Dask scheduler"), outputs=(store,))
        assert time.monotonic() - start < 10.0


def test_closed_port_refused(b: Bases) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connections are refused
        store = b.root / "closed_store.sqlite"
        assert_refused("scheduler", ["sweep", "lenet5", "--arch", "eyeriss", "--scheduler",
                                     f"tcp://127.0.0.1:{port}", "--store", str(store)], b.root,
                       ("cannot connect",), outputs=(store,))


# ---- 1. a report's work is bounded ------------------------------------------------------------------------------
def test_report_of_too_many_layers_refused_at_once(b: Bases, tmp_path: Path) -> None:
    from dnnmap.report.html.runs import MAX_REPORT_LAYERS

    run = b.root / "run.json"
    if not run.exists():
        o = run_case("run", ["map", "lenet5", "--mapper", "random", "--budget", "5", "--json", str(run)], b.root)
        assert o.exit_code == 0, o.message
    data = json.loads(run.read_text())
    layers = [dict(data["layers"][i % len(data["layers"])], name=f"l{i}", inputs=["input"])
              for i in range(MAX_REPORT_LAYERS + 1)]
    big = tmp_path / "big.json"
    big.write_text(json.dumps({**data, "layers": layers}))
    start = time.process_time()
    assert_refused("run-json", ["report", str(big), "-o", str(tmp_path / "r.html")], tmp_path,
                   (str(big), f"at most {MAX_REPORT_LAYERS}"), outputs=(tmp_path / "r.html",))
    assert time.process_time() - start < 5.0


# ---- 2. Timeloop files go through the strict loader -----------------------------------------------------------
TIMELOOP = Path(__file__).parents[1] / "timeloop" / "fixtures"
TIMELOOP_ROLES = {  # a valid 3-level import, and where each of its files goes on the command line
    "arch": "3levelspatial.arch.yaml", "ert": "3level.ert.yaml", "problem": "conv1d+oc+ic.prob.yaml",
    "mapping": "04-kp.map.yaml",
}


def hostile_yaml(rng: random.Random, text: str) -> str:
    """A valid Timeloop file with one of the strict loader's refusals spliced in."""
    n = rng.choice([70, 300, 3000])
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefg", "bcdefgh"))
    kind = rng.choice(["flow", "block", "int", "bomb", "duplicate", "inf"])
    extra = {"flow": "deep: " + "[" * n + "]" * n + "\n",
             "block": "deep:\n" + "".join(" " * (2 * i) + f"- k{i}:\n" for i in range(n)) + " " * (2 * n) + "- 1\n",
             "int": f"huge: {rng.choice(['9' * 5000, str(2**64), '-' + '1' * 30])}\n",
             "bomb": bomb, "duplicate": "x: 1\nx: 2\n",
             "inf": "big: .inf\n"}[kind]
    return text + ("\n" if not text.endswith("\n") else "") + extra


@pytest.mark.parametrize("role", list(TIMELOOP_ROLES))
def test_timeloop_files_get_the_strict_loaders_limits(b: Bases, role: str) -> None:
    rng = random.Random(role)
    for i in range(6):
        files = {r: TIMELOOP / name for r, name in TIMELOOP_ROLES.items()}
        bad = b.root / f"tl_{role}_{i}.yaml"
        bad.write_text(hostile_yaml(rng, files[role].read_text()))
        files[role] = bad
        out = b.root / f"tl_out_{role}_{i}"
        args = ["import-arch", "timeloop", str(files["arch"]), str(files["ert"]), "-o", str(out / "a.yaml"),
                "--problem", str(files["problem"]), "--mapping", str(files["mapping"]),
                "--network-output", str(out / "n.yaml"), "--mapping-output", str(out / "m.yaml")]
        assert_refused("timeloop", args, b.root, (str(bad),), outputs=(out,))


# ---- 2. NMP manifests: strict types and ranges, cross-checked with the folder ---------------------------------
def _edit_manifest(folder: Path, rng: random.Random) -> str:
    """One hostile edit of the manifest (returned as a label): an int field as a float or bool, a Q-point out
    of range, a layer kind changed, a digest for another file."""
    path = folder / "manifest.json"
    doc = json.loads(path.read_text())
    layer = rng.choice(doc["layers"])
    edit = rng.randrange(6)
    if edit == 0:
        doc["bits"] = rng.choice([16.0, 8.0, True, "16", 32])
    elif edit == 1:
        doc["frac"][rng.choice(list(doc["frac"]))] = rng.choice([100, -100, 31, -17, 2**40, 4.0])
    elif edit == 2:
        layer["w_frac"] = rng.choice([100, -100, 31, 4.0, True])
    elif edit == 3:
        layer["kind"] = rng.choice(["pool_max", "fc", "conv2d", "add", "depthwise"])
        if layer["kind"] == json.loads(path.read_text())["layers"][doc["layers"].index(layer)]["kind"]:
            layer["kind"] = "identity"
    elif edit == 4:
        doc["sha256"][rng.choice(["../x", "listing.txt", "/etc/passwd"])] = "0" * 64
    else:
        doc["memory_map"]["regions"][0]["elem_bytes"] = rng.choice([2.0, 1.0, True, 3])
    path.write_text(json.dumps(doc))
    return ["bits", "frac", "w_frac", "kind", "sha256", "elem_bytes"][edit]


def test_nmp_manifest_schema(b: Bases) -> None:
    import shutil

    rng = random.Random(2025)
    for i in range(12):
        folder = b.root / f"nmp_manifest_{i}"
        shutil.copytree(b.nmp, folder)
        field = _edit_manifest(folder, rng)
        assert_refused("nmp-manifest", ["simulate", str(folder)], b.root, (str(folder / "manifest.json"),))
        assert field in run_case("nmp-manifest", ["simulate", str(folder)], b.root).message or field == "kind"


# ---- 2. integer options take integers only --------------------------------------------------------------------
@pytest.mark.parametrize("option", ["--bits", "--seed"])
def test_integer_options_are_not_coerced(b: Bases, option: str) -> None:
    out = b.root / "int_option_out"
    for spelling in ["16.0", "+16", "1_6", " 16", "16 ", "\uff11\uff16", "0x10", "1e1", "", "16.5", "9" * 30]:
        assert_refused("options", ["compile", "lenet5", "--target", "nmp", option, spelling, "-o", str(out)],
                       b.root, (), outputs=(out,))
    for spelling in ["8.0", "+3", "1_0"]:
        assert_refused("options", ["map", "lenet5", "--mapper", "random", "--budget", spelling], b.root, ())


# ---- 2. workload specs and zoo parameters: no empty item anywhere ------------------------------------------------
SPECS = {  # prefix -> items of a spec that is accepted as written, and the command reading it (SPEC: the spec)
    "mttkrp:": (["I=4", "J=4", "K=4", "L=4"], ["map", "SPEC", "--mapper", "random", "--budget", "5"]),
    "einsum:ik,kj->ij:": (["i=4", "k=4", "j=4"], ["map", "SPEC", "--mapper", "random", "--budget", "5"]),
    "gpt2:": (["phase=decode", "seq=8"], ["models", "--layers", "SPEC"]),
}


@pytest.mark.parametrize("prefix", list(SPECS))
def test_empty_items_in_specs_are_refused(b: Bases, prefix: str) -> None:
    """An empty item (a comma first, last or doubled, blanks only, or nothing after the ':') is refused naming the
    spec, wherever it is; the same items without it are accepted."""
    items, command = SPECS[prefix]

    def reads(spec: str) -> list[str]:
        return [spec if arg == "SPEC" else arg for arg in command]

    assert run_case("workload-spec", reads(prefix + ",".join(items)), b.root).exit_code == 0
    rng = random.Random(prefix)
    spellings = [prefix, prefix + " "] + [prefix + sep.join(items[:at] + [blank] + items[at:])
                                          for at in range(len(items) + 1) for blank in ("", " ")
                                          for sep in (",", ", ")]
    for spec in rng.sample(spellings, 8) + [prefix + ",".join(items) + ","]:  # the trailing comma always
        o = run_case("workload-spec", reads(spec), b.root)
        assert o.problem is None and o.exit_code == 2, f"{spec!r}: exit {o.exit_code} {o.problem} ({o.message})"
        assert repr(spec) in o.message and ("empty item" in o.message or "nothing after" in o.message), o.message


# ---- 2. network file attributes: values, not nested structures --------------------------------------------------
def test_nested_attributes_refused_at_load(b: Bases) -> None:
    import copy

    import yaml

    rng = random.Random(50)
    for i in range(10):
        doc = copy.deepcopy(b.network)
        value: object = rng.choice([1, "x", [1, 2]])
        for _ in range(rng.choice([4, 5, 20, 50])):
            value = rng.choice([{"a": value}, [value]])
        if not isinstance(value, dict) and "{" not in json.dumps(value) and json.dumps(value).count("[") <= 3:
            value = {"a": value}
        layer = rng.choice(doc["layers"])
        layer["attrs"][rng.choice(["deep", "stride", "densities"])] = value
        path = b.root / f"attrs_{i}.yaml"
        path.write_text(yaml.safe_dump(doc))
        assert_refused("network", ["map", str(path), "--mapper", "sunstone"], b.root, (str(path), layer["name"]))


# ---- 3. outputs: checked before any work, distinct from each other and from the inputs --------------------------
def collision_cases(b: Bases, rng: random.Random, root: Path) -> list[tuple[list[str], list[Path]]]:
    """Command lines where two outputs share a path or an output is an input file (returned with the inputs,
    which must not change)."""
    run = b.root / "run.json"
    tl = {r: str(TIMELOOP / n) for r, n in TIMELOOP_ROLES.items()}
    net = b.root / "lenet.yaml"
    commands = [  # (fixed arguments, {output option: is a directory}, inputs)
        (["map", str(net), "--arch", "eyeriss", "--mapper", "random", "--budget", "5", "--layers", "conv1"],
         {"--json": False, "--html": False, "--save-mappings": True, "--png-dir": True}, [net]),
        (["map", "lenet5", "--fuse", "rows", "--mapper", "random", "--budget", "5"],
         {"--trace": False, "--trace-png": False, "--json": False}, []),
        (["report", str(run)], {"-o": False, "--png-dir": True}, [run]),
        (["sweep", "lenet5", "--arch", "eyeriss", "--serial"], {"--store": False, "--csv": False, "--json": False}, []),
        (["import-arch", "timeloop", tl["arch"], tl["ert"], "--problem", tl["problem"], "--mapping", tl["mapping"]],
         {"-o": False, "--network-output": False, "--mapping-output": False},
         [Path(tl[r]) for r in ("arch", "ert", "problem", "mapping")]),
    ]
    out = []
    for fixed, options, inputs in commands:
        names = list(options)
        for _ in range(3):
            paths = {o: root / f"o{len(out)}_{i}{'' if options[o] else '.out'}" for i, o in enumerate(names)}
            first, second = rng.sample(names, 2)
            if inputs and rng.random() < 0.4:
                paths[first] = rng.choice(inputs)  # an output onto an input file
            else:
                paths[second] = paths[first]  # two outputs onto one path
            args = list(fixed)
            for option, path in paths.items():
                args += [option, str(path)]
            out.append((args, inputs))
    return out


def test_output_collisions_refused_before_any_work(b: Bases, tmp_path: Path) -> None:
    import hashlib

    run = b.root / "run.json"
    if not run.exists():
        assert run_case("run", ["map", "lenet5", "--mapper", "random", "--budget", "5", "--json", str(run)],
                        b.root).exit_code == 0
    for args, inputs in collision_cases(b, random.Random(3), tmp_path):
        before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in inputs}
        o = run_case("outputs", args, tmp_path)
        assert o.problem is None and o.exit_code == 2, f"{args}: {o.problem} exit {o.exit_code} ({o.message})"
        assert "same path" in o.message or "input file" in o.message or "is a directory" in o.message \
            or "not a directory" in o.message, f"{args}: {o.message}"
        assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in inputs} == before
        assert not [p for p in tmp_path.iterdir() if p.name.startswith("o")], f"{args}: output left behind"


@pytest.mark.parametrize("args", [["report", "RUN", "--png-dir", ""], ["report", "RUN", "-o", ""],
                                  ["report", "RUN", "-o", " "]])
def test_empty_output_names(b: Bases, tmp_path: Path, args: list[str]) -> None:
    run = b.root / "run.json"
    if not run.exists():
        assert run_case("run", ["map", "lenet5", "--mapper", "random", "--budget", "5", "--json", str(run)],
                        b.root).exit_code == 0
    assert_refused("outputs", [str(run) if a == "RUN" else a for a in args], tmp_path, ())
    assert not list(tmp_path.iterdir())
