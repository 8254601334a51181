"""A native zarr-python 3 array-to-bytes codec: ``Miniblock(encoding="auto", chunk_values=None)``.

In array metadata it is::

    {"name": "miniblock", "configuration": {"encoding": "auto", "chunk_values": null}}

(``chunk_values`` is left out when null.) The same name and configuration are read and
written by the Rust ``zarrs`` codec. It takes the serializer position::

    zarr.create_array(store, shape=..., chunks=..., dtype="float32",
                      serializer=miniblock.zarr.Miniblock())

and is registered through the ``zarr.codecs`` entry point, so an array written with it
opens in a process that never imports miniblock. Each Zarr chunk becomes one miniblock
frame (its dtype and shape inside); a chunk is decoded alone, and so a partial read of an
array decodes only the Zarr chunks it touches.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

import numpy as np
import zarr
from zarr.abc.codec import ArrayBytesCodec
from zarr.core.common import parse_named_configuration

import miniblock

if TYPE_CHECKING:
    from typing import Self

    from zarr.core.array_spec import ArraySpec
    from zarr.core.buffer import Buffer, NDBuffer

__all__ = ["Miniblock"]

_KINDS = "fiubMm"

# Chunks of at most this many decoded bytes are decoded without a thread hop: at the
# codec's 2-4 GB/s that is well under 0.1 ms, less than the hop.
_INLINE_DECODE_BYTES = 128 * 1024


def _one_at_a_time() -> bool:
    """Whether zarr is set to handle one chunk at a time with one worker thread.

    A hop to that worker then overlaps with nothing (no other chunk is in flight), and
    it costs 0.1-0.3 ms a chunk on small machines: the chunk is coded on the event loop's
    thread instead.
    """
    return zarr.config.get("async.concurrency") == 1 and zarr.config.get("threading.max_workers") == 1


@dataclass(frozen=True)
class Miniblock(ArrayBytesCodec):
    """Miniblock compression of each Zarr chunk (floats, integers, booleans, datetimes).

    Parameters
    ----------
    encoding : str
        ``"auto"`` (default), ``"auto:0"`` (smallest), or a fixed encoding such as
        ``"bss+lz4"`` or ``"alp+ans"``: any name the ``miniblock`` command takes.
    chunk_values : int or None
        Values per miniblock chunk, a power of two from 256 to 65536 (default:
        ``miniblock.CONTAINER_CHUNK_VALUES``, 8192: a Zarr chunk is decoded whole, and
        the same default as the Rust zarrs codec's).
    """

    is_fixed_size = False

    encoding: str = "auto"
    chunk_values: Optional[int] = None

    def __init__(self, *, encoding: str = "auto", chunk_values: Optional[int] = None) -> None:
        if not isinstance(encoding, str):
            raise miniblock.MiniblockError(f"invalid argument: encoding must be a string, got {encoding!r}")
        if chunk_values is not None and (isinstance(chunk_values, bool) or not isinstance(chunk_values, int)):
            raise miniblock.MiniblockError(f"invalid argument: chunk_values must be an integer or null, got {chunk_values!r}")
        # Bad options fail here, when the array is made or opened, not at its first chunk.
        miniblock.encode(np.zeros(0, dtype=np.float32), encoding, chunk_values)
        object.__setattr__(self, "encoding", encoding)
        object.__setattr__(self, "chunk_values", chunk_values)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        _, configuration = parse_named_configuration(data, "miniblock", require_configuration=False)
        configuration = dict(configuration or {})
        unknown = set(configuration) - {"encoding", "chunk_values"}
        if unknown:
            raise miniblock.MiniblockError(
                f"invalid argument: unknown miniblock codec configuration keys {sorted(unknown)}"
            )
        return cls(**configuration)

    def to_dict(self) -> dict[str, Any]:
        configuration: dict[str, Any] = {"encoding": self.encoding}
        if self.chunk_values is not None:
            configuration["chunk_values"] = self.chunk_values
        return {"name": "miniblock", "configuration": configuration}

    def validate(self, *, shape: Any, dtype: Any, chunk_grid: Any) -> None:
        native = dtype.to_native_dtype()
        if native.kind not in _KINDS or native.fields is not None:
            raise miniblock.MiniblockError(
                f"invalid argument: the miniblock codec takes floats, integers, booleans, "
                f"datetime64 and timedelta64, not {native}"
            )

    def _decode_sync(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> NDBuffer:
        native = chunk_spec.dtype.to_native_dtype()
        values = miniblock.decode(chunk_bytes.as_numpy_array())
        if values.dtype != native:
            if values.dtype.kind != native.kind or values.dtype.itemsize != native.itemsize:
                raise miniblock.MiniblockError(
                    f"corrupt data: a chunk holds {values.dtype} values, the array is {native}"
                )
            values = values.astype(native)
        # math.prod, not np.prod: a tenth of its 3 us on a tuple, paid per chunk.
        count = math.prod(chunk_spec.shape)
        if values.size != count:
            raise miniblock.MiniblockError(
                f"corrupt data: a chunk holds {values.size} values, its shape {chunk_spec.shape} needs {count}"
            )
        values = values.reshape(chunk_spec.shape)
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(values)

    async def _decode_single(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> NDBuffer:
        # A small chunk decodes in less time than a hop to a worker thread takes (about
        # 50-100 us), so it is decoded on the event loop's thread, as zarr's own bytes
        # and crc32c codecs do; larger ones go to a thread (the GIL is released there),
        # unless zarr does one thing at a time anyway.
        nbytes = math.prod(chunk_spec.shape) * chunk_spec.dtype.to_native_dtype().itemsize
        if nbytes <= _INLINE_DECODE_BYTES or _one_at_a_time():
            return self._decode_sync(chunk_bytes, chunk_spec)
        return await asyncio.to_thread(self._decode_sync, chunk_bytes, chunk_spec)

    def _encode_sync(self, chunk_array: NDBuffer, chunk_spec: ArraySpec) -> Buffer | None:
        values = np.asarray(chunk_array.as_ndarray_like())
        blob = miniblock.encode(values, self.encoding, self.chunk_values or miniblock.CONTAINER_CHUNK_VALUES)
        return chunk_spec.prototype.buffer.from_bytes(blob)

    async def _encode_single(self, chunk_array: NDBuffer, chunk_spec: ArraySpec) -> Buffer | None:
        if _one_at_a_time():
            return self._encode_sync(chunk_array, chunk_spec)
        return await asyncio.to_thread(self._encode_sync, chunk_array, chunk_spec)

    def compute_encoded_size(self, input_byte_length: int, chunk_spec: ArraySpec) -> int:
        raise NotImplementedError
