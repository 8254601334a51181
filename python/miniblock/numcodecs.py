"""A numcodecs codec: ``Miniblock(encoding="auto", chunk_values=None)``, id ``"miniblock"``.

Registered through the ``numcodecs.codecs`` entry point, so
``numcodecs.get_codec({"id": "miniblock"})`` works without importing miniblock first.
Usable as a Zarr v2 compressor: each chunk becomes one miniblock frame, which carries its
own dtype and shape.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
from numcodecs.abc import Codec
from numcodecs.compat import ensure_contiguous_ndarray, ndarray_copy

import miniblock

__all__ = ["Miniblock"]


class Miniblock(Codec):
    """Miniblock compression of numeric arrays (floats, integers, booleans, datetimes).

    Parameters
    ----------
    encoding : str
        ``"auto"`` (default), ``"auto:0"`` (smallest), or a fixed encoding such as
        ``"bss+lz4"`` or ``"alp+ans"``: any name the ``miniblock`` command takes.
    chunk_values : int or None
        Values per miniblock chunk, a power of two from 256 to 65536 (default:
        ``miniblock.CONTAINER_CHUNK_VALUES``, 8192: a Zarr chunk is decoded whole).
    """

    codec_id = "miniblock"

    def __init__(self, encoding: str = "auto", chunk_values: Optional[int] = None):
        # 0 is the default too, as the HDF5 filter's parameters and NCZarr write it.
        if chunk_values == 0 and not isinstance(chunk_values, bool):
            chunk_values = None
        _check(encoding, chunk_values)
        self.encoding = encoding
        self.chunk_values = chunk_values

    def encode(self, buf: Any) -> bytes:
        if isinstance(buf, np.ndarray):
            array = buf
        else:
            # A plain buffer has no dtype: it is encoded as bytes.
            array = ensure_contiguous_ndarray(buf)
        return miniblock.encode(array, self.encoding, self.chunk_values or miniblock.CONTAINER_CHUNK_VALUES)

    def decode(self, buf: Any, out: Any = None) -> Any:
        if isinstance(buf, np.ndarray) and not buf.flags.c_contiguous:
            buf = np.ascontiguousarray(buf)
        if out is not None:
            target = out if isinstance(out, np.ndarray) else None
            if target is not None and target.flags.c_contiguous and target.flags.writeable:
                frame = miniblock.info(buf)
                if target.dtype == frame["dtype"] and target.size == int(np.prod(frame["shape"])):
                    return miniblock.decode(buf, out=target)
            return ndarray_copy(miniblock.decode(buf), out)
        return miniblock.decode(buf)

    def __repr__(self) -> str:
        return f"Miniblock(encoding={self.encoding!r}, chunk_values={self.chunk_values!r})"


def _check(encoding: Any, chunk_values: Any) -> None:
    """Refuses bad options when the codec is made, not at the first chunk."""
    # An empty array encodes in no time and checks both options the way encoding does.
    miniblock.encode(np.zeros(0, dtype=np.float32), encoding, chunk_values)


try:  # Also registered on import, for numcodecs versions that skip entry points.
    from numcodecs.registry import register_codec

    register_codec(Miniblock)
except Exception:  # pragma: no cover
    pass
