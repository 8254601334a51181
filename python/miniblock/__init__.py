"""Chunked compression of numeric arrays into Lance-style miniblocks.

An array becomes one *frame*: a self-describing blob (dtype, shape, encoding, checksum)
whose values are cut into small chunks (4 KiB by default) that decode on their own, so
:func:`decode_range` reads only the chunks a row range touches. The frame format is
specified byte by byte in the project's ``docs/format.md``.

>>> import numpy as np, miniblock
>>> a = np.linspace(0.0, 1.0, 10_000)
>>> blob = miniblock.encode(a)
>>> bool((miniblock.decode(blob) == a).all())
True

``miniblock.numcodecs.Miniblock`` is a numcodecs codec (id ``"miniblock"``) and
``miniblock.zarr.Miniblock`` a zarr-python 3 array-to-bytes codec (name ``"miniblock"``);
both are found through entry points, without importing this package first.
"""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _miniblock as _mb

__all__ = [
    "MiniblockError",
    "FRAME_VERSION",
    "CONTAINER_CHUNK_VALUES",
    "encode",
    "decode",
    "decode_range",
    "decode_arrow",
    "info",
    "write_table",
    "read_table",
    "kernel_name",
]

#: Raised for every failure: bad arguments, damaged or truncated bytes, an encoding
#: this build does not know, a failed read or write. A subclass of ``ValueError``.
MiniblockError = _mb.MiniblockError

#: Values per miniblock chunk that the numcodecs, Zarr and HDF5 codecs use when given
#: none: those containers decode whole chunks, so small miniblocks (for cheap row ranges)
#: buy nothing there, and 8192-value ones compress better and decode faster.
CONTAINER_CHUNK_VALUES: int = 8192

#: The frame format version this build writes and reads.
FRAME_VERSION: int = _mb.FRAME_VERSION

# numpy kinds a frame holds: floats, signed and unsigned integers, booleans,
# datetime64 and timedelta64.
_KINDS = "fiubMm"


def _frame_bytes(blob: Any) -> np.ndarray:
    """The frame as a flat uint8 array, without a copy where the object allows it."""
    if isinstance(blob, np.ndarray):
        if not blob.flags.c_contiguous:
            blob = np.ascontiguousarray(blob)
        return blob.reshape(-1).view(np.uint8)
    try:
        return np.frombuffer(blob, dtype=np.uint8)
    except (TypeError, ValueError) as e:
        raise MiniblockError(f"invalid argument: a frame must be bytes-like, got {type(blob).__name__}") from e


def _rows(start: Optional[int], stop: Optional[int]) -> Tuple[Optional[int], Optional[int]]:
    for name, value in (("start", start), ("stop", stop)):
        if value is not None and (not isinstance(value, (int, np.integer)) or value < 0):
            raise MiniblockError(f"invalid argument: {name} must be a non-negative integer, got {value!r}")
    return (None if start is None else int(start), None if stop is None else int(stop))


def encode(data: Any, encoding: str = "auto", chunk_values: Optional[int] = None) -> bytes:
    """Encodes an array into one frame.

    ``data`` is a numpy array (or anything ``numpy.asarray`` takes) of a fixed-width
    dtype: floats (f2, f4, f8), signed and unsigned integers, booleans, datetime64 and
    timedelta64 in any unit, in either byte order and of any shape (arrays that are not
    C-contiguous are copied into C order first). It may instead be an Arrow array (any
    object with ``__arrow_c_array__``: pyarrow, polars, nanoarrow) of a fixed-width type;
    its nulls are kept, and :func:`decode_arrow` gives them back.

    ``encoding`` is any name the ``miniblock`` command takes: ``"auto"`` (the default:
    picked per array by trial, giving up about 3% of size for speed), ``"auto:0"``
    (smallest), or a fixed encoding such as ``"bss+lz4"``, ``"alp+ans"``,
    ``"delta"``. ``chunk_values`` is the number of values per chunk, a power of two from
    256 to 65536 (default: 4 KiB of values).

    The GIL is released while encoding.
    """
    if not isinstance(encoding, str):
        raise MiniblockError(f"invalid argument: encoding must be a string, got {encoding!r}")
    if not isinstance(data, np.ndarray):
        if hasattr(data, "__arrow_c_array__"):
            return _mb.encode_arrow(data, encoding, chunk_values)
        if hasattr(data, "combine_chunks") and hasattr(data, "__arrow_c_stream__"):
            return _mb.encode_arrow(data.combine_chunks(), encoding, chunk_values)
        data = np.asarray(data)
    if data.dtype.kind not in _KINDS or data.dtype.fields is not None or data.dtype.subdtype is not None:
        raise MiniblockError(
            f"invalid argument: numpy dtype {data.dtype} is not supported; miniblock takes "
            "floats, integers, booleans, datetime64 and timedelta64"
        )
    if not data.flags.c_contiguous:
        data = data.copy(order="C")
    raw = data.reshape(-1).view(np.uint8)
    return _mb.encode_raw(raw, data.dtype.str, list(data.shape), encoding, chunk_values)


def _check_out(out: Any) -> np.ndarray:
    if not isinstance(out, np.ndarray):
        raise MiniblockError(f"invalid argument: out must be a numpy array, got {type(out).__name__}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise MiniblockError("invalid argument: out must be a writeable C-contiguous numpy array")
    return out.reshape(-1).view(np.uint8)


def decode(blob: Any, out: Optional[np.ndarray] = None) -> np.ndarray:
    """Decodes a frame to a numpy array of its dtype and shape.

    ``blob`` is any bytes-like object (``bytes``, ``bytearray``, ``memoryview``, a uint8
    array). With ``out`` (a writeable C-contiguous array of the frame's dtype and value
    count) the values are decoded straight into it, and ``out`` is returned. A frame
    holding nulls raises :class:`MiniblockError`: read it with :func:`decode_arrow`.

    The checksum and every size are checked before any value is read; the GIL is
    released while decoding.
    """
    frame = _frame_bytes(blob)
    if out is not None:
        flat = _check_out(out)
        _mb.decode_into(frame, flat, out.dtype.str)
        return out
    values, dtype, shape = _mb.decode(frame)
    return np.asarray(values).view(np.dtype(dtype)).reshape(shape)


def decode_range(blob: Any, start: int, stop: int, out: Optional[np.ndarray] = None) -> np.ndarray:
    """Decodes values ``start:stop`` of a frame (flat indices, in C order) to a 1-d array.

    Only the chunks those values overlap are decoded: a few values of a large frame cost
    about one chunk's decoding (plus the checksum over the frame). ``stop`` past the end
    is cut to it, as a slice would be. ``out``, when given, receives the values as for
    :func:`decode`.
    """
    start, stop = _rows(start, stop)
    frame = _frame_bytes(blob)
    if out is not None:
        flat = _check_out(out)
        _mb.decode_into(frame, flat, out.dtype.str, start, stop)
        return out
    values, dtype, shape = _mb.decode(frame, start, stop)
    return np.asarray(values).view(np.dtype(dtype)).reshape(-1)


def decode_arrow(blob: Any, start: Optional[int] = None, stop: Optional[int] = None) -> "Any":
    """Decodes a frame (or values ``start:stop`` of it) to a ``pyarrow.Array``, nulls kept.

    Needs pyarrow. Datetimes in seconds to nanoseconds come back as timestamps, other
    datetime units as int64.
    """
    start, stop = _rows(start, stop)
    try:
        import pyarrow  # noqa: F401  (the C data interface import needs it)
    except ImportError as e:  # pragma: no cover
        raise MiniblockError("decode_arrow needs pyarrow: pip install pyarrow") from e
    return _mb.decode_arrow(_frame_bytes(blob), start, stop)


def info(blob: Any) -> dict:
    """What a frame holds, after checking it: ``dtype``, ``shape``, ``chunks`` (its chunk
    count), ``encoding`` (as ``miniblock inspect`` names it), ``arrow_type`` and
    ``may_have_nulls``."""
    frame = _frame_bytes(blob)
    dtype, shape, chunks, encoding, arrow_type, nulls = _mb.info(frame)
    return {
        "dtype": np.dtype(dtype),
        "shape": tuple(shape),
        "chunks": chunks,
        "encoding": encoding,
        "arrow_type": arrow_type,
        "may_have_nulls": nulls,
        "nbytes": frame.nbytes,
    }


def write_table(table: Any, path: Union[str, os.PathLike], encoding: str = "auto", chunk_values: Optional[int] = None) -> int:
    """Writes a table to a miniblock column file (``.mb``) and returns its size in bytes.

    ``table`` is a ``pyarrow.Table`` or ``RecordBatch``, or anything with
    ``__arrow_c_stream__`` (a polars DataFrame, a ``RecordBatchReader``). A pandas
    DataFrame is converted with ``pyarrow.Table.from_pandas`` (its index becomes a
    column or metadata, as pyarrow decides). Every column must be of a fixed-width type
    (floats, integers, temporal, decimals, fixed-size binaries); any other column is an
    error naming it, and nothing is written.

    The file is written beside ``path`` under a temporary name, synced, and renamed over
    ``path``: a failed write never leaves a partial file or destroys an existing one.
    """
    if type(table).__module__.split(".")[0] == "pandas":
        import pyarrow as pa

        table = pa.Table.from_pandas(table)
    if not hasattr(table, "__arrow_c_stream__"):
        raise MiniblockError(
            f"invalid argument: a table must be a pyarrow Table or RecordBatch (or have __arrow_c_stream__), got {type(table).__name__}"
        )
    return _mb.write_table(table, os.fspath(path), encoding, chunk_values)


def read_table(
    path: Union[str, os.PathLike],
    columns: Optional[Sequence[str]] = None,
    rows: Union[None, range, slice, Tuple[int, int]] = None,
) -> "Any":
    """Reads a miniblock column file as a ``pyarrow.Table``.

    ``columns`` picks columns by name (default: all); ``rows`` a range of rows as
    ``range(a, b)``, ``slice(a, b)`` or ``(a, b)`` (default: all), of which only the
    pages and chunks those rows overlap are read. Checksums are verified.
    """
    import pyarrow as pa

    start = stop = None
    if rows is not None:
        if isinstance(rows, (range, slice)):
            if rows.step not in (None, 1):
                raise MiniblockError("invalid argument: rows must be contiguous (step 1)")
            start, stop = rows.start, rows.stop
        else:
            start, stop = rows
        start, stop = _rows(start, stop)
    if columns is not None:
        if isinstance(columns, str):
            columns = [columns]
        columns = [str(c) for c in columns]
    batch = _mb.read_table(os.fspath(path), columns, start, stop)
    return pa.Table.from_batches([batch])


def kernel_name() -> str:
    """The SIMD kernel level selected on this CPU (``"avx512"``, ``"avx2"``, ...)."""
    return _mb.kernel_name()
