"""Check that ``--scheduler`` names a Dask scheduler before a sweep starts (no store, no Dask client yet).

Dask's client trusts its peer: it reads the first 8 bytes of the reply as a message length, so an HTTP
server's ``HTTP/1.1`` became a 3 EiB allocation, and a failed client could keep the process from exiting.
:func:`check_scheduler` parses the address (``tcp://HOST:PORT``), connects with a bounded timeout and
reads the greeting a Dask scheduler sends as soon as a connection is accepted (a length-prefixed message
of frames: ``u64 total``, ``u64 frame count``, ``u64`` per frame length, the frames), checking only its
framing. Anything else - a refused connection, silence, bytes of another protocol - is refused, naming
the option, within :data:`PROBE_SECONDS`.
"""

from __future__ import annotations

import re
import socket
import struct
import time

from dnnmap.errors import DnnmapError

PROBE_SECONDS = 2.0  # a scheduler greets at once; silence this long means another kind of server
MAX_GREETING_BYTES = 2**20  # a Dask handshake is a few hundred bytes
MAX_FRAMES = 64
_ADDRESS = re.compile(r"tcp://(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>[0-9]{1,5})")


def parse_scheduler(address: str) -> tuple[str, int]:
    """``(host, port)`` of ``tcp://HOST:PORT``; anything else is a DnnmapError naming ``--scheduler``."""
    match = _ADDRESS.fullmatch(address)
    if match is None or not 1 <= int(match["port"]) <= 65535:
        raise DnnmapError(f"--scheduler {address!r}: expected a Dask scheduler address tcp://HOST:PORT "
                          "(port 1..65535)")
    return match["host"].strip("[]"), int(match["port"])


def _read_exactly(sock: socket.socket, n: int, deadline: float) -> bytes:
    data = b""
    while len(data) < n:
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the connection was closed")
        data += chunk
    return data


def greeting_problem(data: bytes) -> str | None:
    """Why ``data`` (a whole greeting after its 8-byte length) is not framed as Dask frames, ``None`` if it is."""
    if len(data) < 8:
        return "a message too short to hold its frame count"
    (frames,) = struct.unpack("<Q", data[:8])
    if not 1 <= frames <= MAX_FRAMES or len(data) < 8 * (frames + 1):
        return f"a frame count of {frames}"
    lengths = struct.unpack(f"<{frames}Q", data[8:8 * (frames + 1)])
    if 8 * (frames + 1) + sum(lengths) != len(data):
        return "frame lengths that do not add up to the message"
    return None


def check_scheduler(address: str, seconds: float = PROBE_SECONDS) -> None:
    """Refuse ``address`` unless a peer there greets like a Dask scheduler within ``seconds`` (module doc)."""
    host, port = parse_scheduler(address)
    deadline = time.monotonic() + seconds
    try:
        with socket.create_connection((host, port), timeout=seconds) as sock:
            (length,) = struct.unpack("<Q", _read_exactly(sock, 8, deadline))
            if not 8 <= length <= MAX_GREETING_BYTES:
                problem: str | None = f"a first message of {length:,} bytes"
            else:
                problem = greeting_problem(_read_exactly(sock, length, deadline))
    except TimeoutError:
        problem = f"no Dask greeting within {seconds:g} s"
    except OSError as err:  # refused, unreachable, unknown host, closed
        raise DnnmapError(f"--scheduler {address}: cannot connect ({err.strerror or err})") from None
    if problem is not None:
        raise DnnmapError(f"--scheduler {address}: the server there is not a Dask scheduler ({problem})")
