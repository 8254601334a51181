"""miniblock as an HDF5 filter, for h5py (and, through ``PLUGIN_PATH``, netCDF-C and the HDF5 tools).

>>> import h5py, numpy as np, miniblock.hdf5
>>> with h5py.File("grid.h5", "w") as f:                                  # doctest: +SKIP
...     f.create_dataset("v", data=np.zeros((12, 90, 180), "f4"), chunks=(1, 90, 180),
...                      **miniblock.hdf5.Miniblock(encoding="auto"))

Importing this module registers the filter with h5py's HDF5 (as hdf5plugin does), so
files written with it read back in the same process. Other programs find the plugin
through ``HDF5_PLUGIN_PATH``::

    export HDF5_PLUGIN_PATH=$(python -c "import miniblock.hdf5 as m; print(m.PLUGIN_PATH)")
    h5repack -f UD=409,0,2,6,0 in.h5 out.h5     # UD=ID,flags,2 parameters: bss+lz4, default chunks
    nccopy -F "*,409,0" in.nc out.nc             # every variable, auto

Each HDF5 chunk is stored as one miniblock frame. The filter takes datasets of 1-, 2-, 4-
and 8-byte integers and 2-, 4- and 8-byte floats, in either byte order; any other type, or
a bad option, fails when the dataset is created.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Iterator, Optional

import miniblock

__all__ = ["FILTER_ID", "PLUGIN_PATH", "PLUGIN_FILE", "Miniblock", "encoding_code", "register", "netcdf4_filter"]

#: The filter's id (from HDF5's testing range 256-511).
FILTER_ID: int = 409

#: The folder holding the plugin: put it in ``HDF5_PLUGIN_PATH``.
PLUGIN_PATH: str = str(Path(__file__).resolve().parent / "hdf5_plugin")

#: The plugin itself.
PLUGIN_FILE: str = os.path.join(PLUGIN_PATH, "libh5miniblock.so")

# Frozen codes: hdf5/src/params.rs documents the same table.
_ENCODINGS = [
    "auto", "auto:0", "plain", "lz4", "zstd", "bss", "bss+lz4", "bss+zstd", "alp",
    "alp+lz4", "alp+zstd", "alp+ans", "alp-rd", "delta", "delta+lz4", "delta+zstd",
    "delta+ans", "bitpack", "dict", "dict+zstd", "bss+zstd+dict",
]


def encoding_code(encoding: str) -> int:
    """The filter parameter that selects ``encoding`` (``"auto"`` is 0, ``"auto:0"`` 1)."""
    try:
        return _ENCODINGS.index(encoding.lower())
    except (ValueError, AttributeError):
        raise miniblock.MiniblockError(
            f"invalid argument: the HDF5 filter takes one of {', '.join(_ENCODINGS)}, not {encoding!r}"
        ) from None


class Miniblock(Mapping):
    """h5py keyword arguments for the miniblock filter: ``create_dataset(..., **Miniblock())``.

    Parameters
    ----------
    encoding : str
        ``"auto"`` (default), ``"auto:0"`` (smallest), or a fixed encoding (``"bss+lz4"``,
        ``"alp+ans"``, ...).
    chunk_values : int or None
        Values per miniblock chunk inside each HDF5 chunk, a power of two from 256 to 65536
        (default: the filter's, 8192 values: HDF5 decodes whole chunks).
    """

    filter_id = FILTER_ID

    def __init__(self, encoding: str = "auto", chunk_values: Optional[int] = None):
        code = encoding_code(encoding)
        if chunk_values is not None:
            if isinstance(chunk_values, bool) or not isinstance(chunk_values, int) or not (
                256 <= chunk_values <= 65536 and chunk_values & (chunk_values - 1) == 0
            ):
                raise miniblock.MiniblockError(
                    f"invalid argument: chunk_values must be a power of two from 256 to 65536, got {chunk_values!r}"
                )
        self.encoding = encoding
        self.chunk_values = chunk_values
        self.filter_options = (code, chunk_values or 0)
        register()

    def _kwargs(self) -> dict:
        return {"compression": FILTER_ID, "compression_opts": self.filter_options}

    def __getitem__(self, key: str) -> Any:
        return self._kwargs()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._kwargs())

    def __len__(self) -> int:
        return 2

    def __repr__(self) -> str:
        return f"Miniblock(encoding={self.encoding!r}, chunk_values={self.chunk_values!r})"


def netcdf4_filter(variable: Any, encoding: str = "auto", chunk_values: Optional[int] = None) -> None:
    """Puts the miniblock filter on a new netCDF4-python variable, before any data is written.

    netCDF4-python has no call for an arbitrary filter, so this calls netCDF-C's
    ``nc_def_var_filter`` in the libnetcdf netCDF4-python loaded, and adds
    :data:`PLUGIN_PATH` to that library's HDF5 plugin path::

        v = ds.createVariable("slp", "f4", ("time", "lat", "lon"), chunksizes=(1, 90, 180))
        miniblock.hdf5.netcdf4_filter(v, encoding="auto")
        v[:] = values
    """
    import netCDF4._netCDF4 as extension

    options = Miniblock(encoding, chunk_values).filter_options
    # dlsym through the extension module finds the libnetcdf and libhdf5 it links.
    library = ctypes.CDLL(extension.__file__)
    if library.H5PLappend(PLUGIN_PATH.encode()) < 0:
        raise miniblock.MiniblockError(f"netCDF4's HDF5 refused the plugin folder {PLUGIN_PATH}")
    params = (ctypes.c_uint * len(options))(*options)
    status = library.nc_def_var_filter(
        ctypes.c_int(variable._grpid), ctypes.c_int(variable._varid), ctypes.c_uint(FILTER_ID),
        ctypes.c_size_t(len(options)), params,
    )
    if status != 0:
        library.nc_strerror.restype = ctypes.c_char_p
        raise miniblock.MiniblockError(
            f"netCDF-C refused the miniblock filter on {variable.name!r}: {library.nc_strerror(status).decode()}"
        )


_registered = False


def register() -> bool:
    """Registers the filter with h5py's HDF5 (done on import when h5py is installed);
    returns whether it is available there."""
    global _registered
    if _registered:
        return True
    try:
        import h5py
    except ImportError:
        return False
    if h5py.h5z.filter_avail(FILTER_ID):
        _registered = True
        return True
    if not os.path.exists(PLUGIN_FILE):
        raise miniblock.MiniblockError(
            f"the HDF5 plugin is missing from {PLUGIN_PATH}: this miniblock was built without it "
            "(MINIBLOCK_NO_HDF5_PLUGIN=1); reinstall with pip install ./python"
        )
    library = ctypes.CDLL(PLUGIN_FILE)
    library.H5PLget_plugin_info.restype = ctypes.c_void_p
    h5py.h5z.register_filter(library.H5PLget_plugin_info())
    _registered = bool(h5py.h5z.filter_avail(FILTER_ID))
    return _registered


try:
    register()
except miniblock.MiniblockError:
    pass
