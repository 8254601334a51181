"""The HDF5 filter plugin under h5py from PyPI, the HDF5 tools, netCDF-C and netCDF4-python.

h5py and netCDF4 are installed by `.ci/python-venv`; `h5repack`/`h5dump` (Debian
`hdf5-tools`), `nccopy`/`ncgen`/`ncdump` (Debian `netcdf-bin`) and the real netCDF files
of Debian's `ferret-datasets` by `.ci/hdf5-tools`. Tests that need what is missing are
skipped, and say what.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import miniblock

h5py = pytest.importorskip("h5py")
import miniblock.hdf5 as mh5  # noqa: E402

from helpers import ROOT, SHARED, data_files, load, same_bits  # noqa: E402
FERRET = ROOT / ".ci-data" / "ferret" / "usr" / "share" / "ferret-vis" / "data"





def plugin_env(**extra) -> dict:
    env = dict(os.environ, HDF5_PLUGIN_PATH=mh5.PLUGIN_PATH)
    env.update(extra)
    return env


def run_python(code: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (bash .ci/hdf5-tools installs it)")
    return path


def test_plugin_is_bundled():
    assert os.path.isfile(mh5.PLUGIN_FILE), mh5.PLUGIN_FILE
    assert mh5.FILTER_ID == 409
    assert h5py.h5z.filter_avail(mh5.FILTER_ID)
    assert dict(mh5.Miniblock()) == {"compression": 409, "compression_opts": (0, 0)}
    assert dict(mh5.Miniblock("bss+lz4", 1024)) == {"compression": 409, "compression_opts": (6, 1024)}
    for bad in (dict(encoding="nope"), dict(chunk_values=1000), dict(chunk_values=True)):
        with pytest.raises(miniblock.MiniblockError):
            mh5.Miniblock(**bad)


def shapes_of(a: np.ndarray):
    """1-, 2- and 3-d views of a file's values, with chunks that leave edge chunks."""
    n = a.size
    yield a, (min(n, 100_003),)
    m = n - n % 90
    yield a[:m].reshape(-1, 90), (7, 64)
    k = n - n % (90 * 18)
    yield a[:k].reshape(-1, 18, 90), (3, 5, 90)


@pytest.mark.parametrize("path", data_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_files_round_trip_in_h5py(path, tmp_path):
    a = load(path)
    target = tmp_path / "f.h5"
    with h5py.File(target, "w") as f:
        for i, (view, chunks) in enumerate(shapes_of(a)):
            f.create_dataset(f"d{i}", data=view, chunks=chunks, **mh5.Miniblock())
        f.create_dataset("fixed", data=a, chunks=(min(a.size, 65536),), **mh5.Miniblock("bss+lz4"))
    with h5py.File(target, "r") as f:
        for i, (view, _) in enumerate(shapes_of(a)):
            assert same_bits(f[f"d{i}"][:], view)
        assert same_bits(f["fixed"][:], a)
        assert f["fixed"].id.get_storage_size() < a.nbytes


def every_type():
    rng = np.random.default_rng(4)
    raw = np.cumsum(rng.integers(-50, 50, size=30_000)).astype(np.int64)
    for dtype in ["<f2", "<f4", "<f8", ">f4", ">f8", "|i1", "<i2", ">i2", "<i4", ">i4", "<i8",
                  ">i8", "|u1", "<u2", ">u2", "<u4", "<u8", ">u8"]:
        yield raw.astype(dtype)
    yield np.frombuffer(rng.bytes(8 * 5000), dtype="<f8")  # every bit pattern, NaNs too


@pytest.mark.parametrize("a", list(every_type()), ids=lambda a: a.dtype.str + str(a.size))
def test_every_type_round_trips(a, tmp_path):
    target = tmp_path / "t.h5"
    with h5py.File(target, "w") as f:
        d = f.create_dataset("v", data=a.reshape(-1, 100) if a.size % 100 == 0 else a,
                             chunks=True, **mh5.Miniblock())
        assert d.dtype == a.dtype
    with h5py.File(target, "r") as f:
        assert f["v"][:].tobytes() == a.tobytes()


def test_in_a_process_that_never_imports_miniblock(tmp_path):
    """h5py from PyPI finds the plugin through HDF5_PLUGIN_PATH alone."""
    target = tmp_path / "plain.h5"
    a = load(ROOT / "data" / "ferret_coads_climatology_SLP.f32").reshape(-1, 90, 180)
    np.save(tmp_path / "a.npy", a)
    code = (
        "import sys, h5py, numpy as np\n"
        f"a = np.load({str(tmp_path / 'a.npy')!r})\n"
        f"with h5py.File({str(target)!r}, 'w') as f:\n"
        "    f.create_dataset('v', data=a, chunks=(1, 90, 180), compression=409, compression_opts=(1,))\n"
        f"with h5py.File({str(target)!r}, 'r') as f:\n"
        "    assert f['v'][:].tobytes() == a.tobytes()\n"
        "    print(f['v'].id.get_storage_size(), f['v'].id.get_create_plist().get_filter(0)[2])\n"
        "assert 'miniblock' not in sys.modules\n"
    )
    out = run_python(code, plugin_env())
    assert out.returncode == 0, out.stderr
    size, params = out.stdout.split(" ", 1)
    assert int(size) < a.nbytes / 2
    assert params.strip() == "(1296171009, 1, 0, 2, 0)"


def test_reading_without_the_plugin_fails_loudly(tmp_path):
    target = tmp_path / "x.h5"
    a = np.linspace(0, 1, 10_000)
    with h5py.File(target, "w") as f:
        f.create_dataset("v", data=a, chunks=(1000,), **mh5.Miniblock())
    code = (
        "import h5py\n"
        f"f = h5py.File({str(target)!r}, 'r')\n"
        "try:\n"
        "    f['v'][:]\n"
        "except OSError as e:\n"
        "    print('ERROR', e)\n"
        "else:\n"
        "    print('READ')\n"
    )
    empty = tmp_path / "no-plugins"
    empty.mkdir()
    out = run_python(code, dict(os.environ, HDF5_PLUGIN_PATH=str(empty)))
    assert out.stdout.startswith("ERROR"), out.stdout + out.stderr
    assert "plugin" in out.stdout.lower()


def test_bad_options_and_types_fail_at_creation(tmp_path):
    with h5py.File(tmp_path / "bad.h5", "w") as f:
        for opts in [(99,), (0, 1000), (0, 0, 0)]:
            with pytest.raises((ValueError, OSError, RuntimeError)):
                f.create_dataset(f"o{opts}", shape=(100,), dtype="f4", chunks=(10,),
                                 compression=409, compression_opts=opts)
        for dtype in [np.dtype([("a", "<f4"), ("b", "<i4")]), np.dtype("c8"), np.dtype("|b1")]:
            with pytest.raises(ValueError, match="miniblock filter: datasets of"):
                f.create_dataset(f"t{dtype}", shape=(10,), dtype=dtype, chunks=(5,), **mh5.Miniblock())
        # HDF5 calls no set_local for variable-length types, and h5py adds the filter as
        # optional: the filter refuses their chunks and HDF5 stores them unfiltered. Nothing
        # is lost.
        s = f.create_dataset("s", shape=(10,), dtype=h5py.string_dtype(), chunks=(5,), **mh5.Miniblock())
        s[:] = ["text"] * 10
    with h5py.File(tmp_path / "bad.h5", "r") as f:
        assert list(f["s"][:]) == [b"text"] * 10


def test_damaged_chunks_are_errors(tmp_path):
    target = tmp_path / "d.h5"
    a = np.cumsum(np.random.default_rng(1).normal(size=20_000))
    with h5py.File(target, "w") as f:
        f.create_dataset("v", data=a, chunks=(5000,), **mh5.Miniblock())
    with h5py.File(target, "r") as f:
        info = f["v"].id.get_chunk_info(1)
    raw = bytearray(target.read_bytes())
    raw[info.byte_offset + info.size // 2] ^= 0x20
    target.write_bytes(bytes(raw))
    with h5py.File(target, "r") as f:
        assert same_bits(f["v"][:5000], a[:5000])  # other chunks still read
        with pytest.raises(OSError):
            f["v"][5000:10000]


def test_h5repack_and_h5dump(tmp_path):
    h5repack, h5dump = tool("h5repack"), tool("h5dump")
    a = load(ROOT / "data" / "ferret_etopo20_ROSE.f32")[:100_000].reshape(100, 1000)
    src, dst = tmp_path / "src.h5", tmp_path / "dst.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("v", data=a, chunks=(10, 1000))
    env = plugin_env()
    subprocess.run([h5repack, "-f", "UD=409,0,2,11,0", str(src), str(dst)], check=True, env=env)
    header = subprocess.run([h5dump, "-p", "-H", str(dst)], capture_output=True, text=True, env=env, check=True).stdout
    assert "FILTER_ID 409" in header and "PARAMS { 1296171009 11 0 2 0 }" in header
    with h5py.File(dst, "r") as f:
        assert same_bits(f["v"][:], a)
        assert f["v"].id.get_storage_size() < a.nbytes
    out = subprocess.run([h5dump, "-d", "v", "-s", "3,5", "-c", "1,2", str(dst)], capture_output=True, text=True, env=env, check=True).stdout
    assert "DATA" in out
    # Back to no filter with h5repack: the values are the same.
    plain = tmp_path / "plain.h5"
    subprocess.run([h5repack, "-f", "NONE", str(dst), str(plain)], check=True, env=env)
    with h5py.File(plain, "r") as f:
        assert same_bits(f["v"][:], a)
    # h5dump without the plugin says it cannot read, and prints no values.
    (tmp_path / "no-plugins").mkdir()
    out = subprocess.run([h5dump, "-d", "v", str(dst)], capture_output=True, text=True,
                         env=dict(os.environ, HDF5_PLUGIN_PATH=str(tmp_path / "no-plugins")))
    assert out.returncode != 0 or "error" in (out.stdout + out.stderr).lower()


def netcdf_source(tmp_path) -> tuple[Path, str]:
    """A real netCDF file (COADS climatology of Debian's ferret-datasets) and a variable."""
    real = FERRET / "coads_climatology.cdf"
    if real.exists():
        return real, "SLP"
    pytest.skip(f"{real} is absent (bash .ci/hdf5-tools downloads ferret-datasets)")


def filter_attribute(path: Path, var: str, env: dict) -> str:
    out = subprocess.run([tool("ncdump"), "-hs", str(path)], capture_output=True, text=True, env=env, check=True).stdout
    lines = [line.strip() for line in out.splitlines() if line.strip().startswith(f"{var}:_Filter")]
    assert lines, out
    return lines[0]


def read_netcdf(path: Path, var: str, env: dict) -> bytes:
    """The variable's raw values, read by netCDF4-python in a fresh process."""
    pytest.importorskip("netCDF4")
    code = (
        "import sys, netCDF4\n"
        f"d = netCDF4.Dataset({str(path)!r})\n"
        "d.set_auto_maskandscale(False)\n"
        f"sys.stdout.buffer.write(d[{var!r}][:].tobytes())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env)
    assert out.returncode == 0, out.stderr.decode()
    return out.stdout


def test_nccopy_of_a_real_netcdf_file(tmp_path):
    nccopy = tool("nccopy")
    src, var = netcdf_source(tmp_path)
    env = plugin_env()
    once, twice = tmp_path / "once.nc", tmp_path / "twice.nc"
    subprocess.run([nccopy, "-k", "nc4", "-F", f"{var},409,1", str(src), str(once)], check=True, env=env)
    subprocess.run([nccopy, str(once), str(twice)], check=True, env=env)
    first, second = filter_attribute(once, var, env), filter_attribute(twice, var, env)
    assert "409" in first and "1296171009" in first, first
    assert first == second, "the stored parameters must not grow on a second copy"
    original = read_netcdf(src, var, env)
    assert read_netcdf(once, var, env) == original
    assert read_netcdf(twice, var, env) == original
    # Every variable at once ("*"), and the whole file is smaller than zlib's.
    every, zlib = tmp_path / "every.nc", tmp_path / "zlib.nc"
    subprocess.run([nccopy, "-k", "nc4", "-F", "*,409,0", str(src), str(every)], check=True, env=env)
    subprocess.run([nccopy, "-k", "nc4", "-d", "4", "-s", str(src), str(zlib)], check=True, env=env)
    assert read_netcdf(every, var, env) == original
    assert every.stat().st_size < zlib.stat().st_size


def test_ncgen_filter_attribute(tmp_path):
    ncgen = tool("ncgen")
    cdl = tmp_path / "g.cdl"
    values = ", ".join(f"{v:.4f}" for v in np.sin(np.arange(400) / 10))
    cdl.write_text(
        "netcdf g {\ndimensions:\n  x = 400 ;\nvariables:\n  double v(x) ;\n"
        '    v:_Storage = "chunked" ;\n    v:_ChunkSizes = 100 ;\n    v:_Filter = "409,0" ;\n'
        f"data:\n  v = {values} ;\n}}\n"
    )
    out = tmp_path / "g.nc"
    env = plugin_env()
    subprocess.run([ncgen, "-k", "nc4", "-o", str(out), str(cdl)], check=True, env=env)
    assert "1296171009" in filter_attribute(out, "v", env)
    got = np.frombuffer(read_netcdf(out, "v", env), dtype="<f8")
    assert np.array_equal(got, np.round(np.sin(np.arange(400) / 10), 4))


def test_h5py_reads_what_netcdf_wrote(tmp_path):
    nccopy = tool("nccopy")
    src, var = netcdf_source(tmp_path)
    dst = tmp_path / "n.nc"
    subprocess.run([nccopy, "-k", "nc4", "-F", f"{var},409,0", str(src), str(dst)], check=True, env=plugin_env())
    with h5py.File(dst, "r") as f:
        values = f[var][:]
    assert values.tobytes() == read_netcdf(src, var, plugin_env())


def test_netcdf4_python_writes_with_the_filter(tmp_path):
    netCDF4 = pytest.importorskip("netCDF4")
    target = tmp_path / "w.nc"
    a = load(ROOT / "data" / "ferret_coads_climatology_SLP.f32").reshape(-1, 90, 180)
    with netCDF4.Dataset(target, "w", format="NETCDF4") as ds:
        for name, size in zip(("time", "lat", "lon"), a.shape):
            ds.createDimension(name, size)
        v = ds.createVariable("slp", "f4", ("time", "lat", "lon"), chunksizes=(1, 90, 180))
        v.set_auto_maskandscale(False)
        mh5.netcdf4_filter(v, encoding="auto:0")
        v[:] = a
    with netCDF4.Dataset(target) as ds:
        ds.set_auto_maskandscale(False)
        assert ds["slp"][:].tobytes() == a.tobytes()
    with h5py.File(target, "r") as f:
        assert f["slp"].id.get_create_plist().get_filter(0)[2] == (0x4D420001, 1, 0, 2, 0)
        assert f["slp"].id.get_storage_size() < a.nbytes / 2
    with netCDF4.Dataset(tmp_path / "bad.nc", "w", format="NETCDF4") as ds:
        ds.createDimension("x", 10)
        v = ds.createVariable("s", "f8", ("x",), chunksizes=(5,))
        with pytest.raises(miniblock.MiniblockError):
            mh5.netcdf4_filter(v, encoding="nope")


def test_nczarr_store_written_by_netcdf_read_by_zarr_python(tmp_path):
    """netCDF-C over Zarr (NCZarr): the plugin converts its JSON codec, and the store's
    compressor is numcodecs' `miniblock` codec, so zarr-python reads it too."""
    pytest.importorskip("netCDF4")
    zarr = pytest.importorskip("zarr")
    store = tmp_path / "nc.zarr"
    a = load(ROOT / "data" / "ferret_coads_climatology_SLP.f32").reshape(-1, 90, 180)
    np.save(tmp_path / "a.npy", a)
    code = (
        "import numpy as np, netCDF4, miniblock.hdf5 as mh5\n"
        f"a = np.load({str(tmp_path / 'a.npy')!r})\n"
        f"url = 'file://{store}#mode=nczarr,file'\n"
        "with netCDF4.Dataset(url, 'w', format='NETCDF4') as ds:\n"
        "    for name, size in zip(('time', 'lat', 'lon'), a.shape):\n"
        "        ds.createDimension(name, size)\n"
        "    v = ds.createVariable('slp', 'f4', ('time', 'lat', 'lon'), chunksizes=(1, 90, 180))\n"
        "    v.set_auto_maskandscale(False)\n"
        "    mh5.netcdf4_filter(v, encoding='bss+lz4')\n"
        "    v[:] = a\n"
        "with netCDF4.Dataset(url) as ds:\n"
        "    ds.set_auto_maskandscale(False)\n"
        "    assert ds['slp'][:].tobytes() == a.tobytes()\n"
    )
    out = run_python(code, plugin_env())
    assert out.returncode == 0, out.stderr
    meta = (store / "slp" / ".zarray").read_text()
    assert '"id": "miniblock"' in meta and '"encoding": "bss+lz4"' in meta, meta
    z = zarr.open_array(str(store / "slp"), mode="r", zarr_format=2)
    assert same_bits(z[:], a)
