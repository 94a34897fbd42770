"""Length-prefixed JSON frames between the sandbox parent and its warm worker."""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

_HEADER = struct.Struct(">I")
MAX_FRAME = 256 * 1024 * 1024


class ChannelClosed(EOFError):
    """The other side closed the pipe (or died)."""


class ChannelTimeout(TimeoutError):
    """No complete frame arrived before the deadline."""


def write_frame(fd: int, obj: Any) -> None:
    payload = json.dumps(obj, allow_nan=False).encode("utf-8")
    data = memoryview(_HEADER.pack(len(payload)) + payload)
    while data:
        written = os.write(fd, data)
        data = data[written:]


def _read_exact(fd: int, size: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChannelTimeout("no reply before the deadline")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise ChannelClosed("channel closed")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, deadline: float | None = None) -> Any:
    """Read one frame; ``deadline`` is a ``time.monotonic()`` value (None = wait forever)."""
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size, deadline))
    if size > MAX_FRAME:
        raise ChannelClosed(f"frame of {size} bytes is too large")
    return json.loads(_read_exact(fd, size, deadline))
