"""The Python package: frames from numpy and Arrow, bit-exact over the real data sets,
hostile frames, column files, the numcodecs and zarr-python codecs, threads.

Run by `.ci/run` through `.ci/python-tests`; locally: `bash .ci/python-venv &&
.venv-py/bin/python -m pytest python/tests`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import miniblock

from helpers import ROOT, SHARED, data_files, load, same_bits  # noqa: E402
GOLDEN = ROOT / "tests" / "golden" / "frames" / "v1"





def arrow_same(a, b) -> bool:
    """Equal Arrow arrays by type, validity and the bits of every valid value."""
    import pyarrow as pa

    if a.type != b.type or len(a) != len(b) or not a.is_null().equals(b.is_null()):
        return False
    width = a.type.bit_width // 8
    view = {1: pa.uint8(), 2: pa.uint16(), 4: pa.uint32(), 8: pa.uint64()}[width]
    return a.view(view).fill_null(0).equals(b.view(view).fill_null(0))


def test_shared_data_is_there_or_skipped_visibly():
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent: only the bundled data/ is tested")
    assert len(list(SHARED.glob("*.f[36][24]"))) == 12


@pytest.mark.parametrize("path", data_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_files_round_trip_by_bits(path):
    a = load(path)
    for encoding in ("auto", "auto:0", "bss+lz4"):
        blob = miniblock.encode(a, encoding)
        assert len(blob) < a.nbytes * 1.01 + 256
        assert same_bits(miniblock.decode(blob), a), encoding
    # As integers of the same width, and as 2-d grids.
    ints = a.view("<i4" if a.itemsize == 4 else "<i8")
    assert same_bits(miniblock.decode(miniblock.encode(ints)), ints)
    n = a.size - a.size % 60
    grid = a[:n].reshape(60, -1)
    assert same_bits(miniblock.decode(miniblock.encode(grid)), grid)


SPECIAL_F64 = np.array(
    [0x0, 0x8000000000000000, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000001,
     0x7FF0000000000001, 0xFFFFFFFFFFFFFFFF, 0x1, 0x800FFFFFFFFFFFFF],
    dtype="<u8",
).view("<f8")


def every_dtype():
    rng = np.random.default_rng(7)
    raw = rng.integers(0, 2**63, size=6000, dtype=np.int64).view(np.uint8)
    out = []
    for dtype in ["<f2", "<f4", "<f8", ">f4", ">f8", "|i1", "<i2", ">i2", "<i4", "<i8", ">i8",
                  "|u1", "<u2", "<u4", "<u8", ">u8", "<M8[D]", "<M8[s]", "<M8[ms]", ">M8[ns]",
                  "<M8[10s]", "<m8[us]", "<m8[h]", ">m8[ns]"]:
        dt = np.dtype(dtype)
        out.append(raw[: raw.size // dt.itemsize * dt.itemsize].view(dt))
    out.append(rng.integers(0, 2, size=5000).astype(np.bool_))
    out.append(np.concatenate([SPECIAL_F64, np.linspace(-1, 1, 3000)]))
    return out


@pytest.mark.parametrize("a", every_dtype(), ids=lambda a: a.dtype.str)
def test_every_dtype_round_trips_by_bits(a):
    for encoding in ("auto", "auto:0", "plain", "delta"):
        blob = miniblock.encode(a, encoding)
        back = miniblock.decode(blob)
        assert same_bits(back, a), encoding
        assert miniblock.info(blob)["dtype"] == a.dtype


def test_shapes_orders_and_views():
    a = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5) / 7
    assert same_bits(miniblock.decode(miniblock.encode(a)), a)
    f = np.asfortranarray(a)
    assert same_bits(miniblock.decode(miniblock.encode(f)), np.ascontiguousarray(f))
    strided = a[:, ::2, :, 1:]
    assert not strided.flags.c_contiguous
    assert same_bits(miniblock.decode(miniblock.encode(strided)), np.ascontiguousarray(strided))
    scalar = np.float64(-0.0)
    back = miniblock.decode(miniblock.encode(np.array(scalar)))
    assert back.shape == () and back.tobytes() == np.array(scalar).tobytes()
    for empty in (np.zeros(0, np.float32), np.zeros((3, 0, 2), np.int16)):
        assert same_bits(miniblock.decode(miniblock.encode(empty)), empty)
    assert same_bits(miniblock.decode(miniblock.encode([1.5, 2.5])), np.array([1.5, 2.5]))
    # The result is an ordinary writeable array that owns nothing but keeps its buffer.
    back = miniblock.decode(miniblock.encode(a))
    back[0, 0, 0, 0] = 42
    assert back[0, 0, 0, 0] == 42


def test_encodings_and_chunk_values():
    a = np.cumsum(np.random.default_rng(1).normal(size=20000)).astype(np.float64)
    sizes = {}
    for encoding in ("auto", "auto:0", "auto:nofill", "plain", "lz4", "zstd", "bss", "bss+lz4",
                     "bss+zstd", "alp", "alp+lz4", "alp+zstd", "alp+ans", "alp-rd", "delta",
                     "delta+lz4", "delta+zstd", "delta+ans", "bitpack", "dict", "dict+zstd"):
        blob = miniblock.encode(a, encoding)
        assert same_bits(miniblock.decode(blob), a), encoding
        sizes[encoding] = len(blob)
    assert sizes["auto:0"] <= min(sizes.values()) * 1.05
    for chunk_values in (256, 4096, 65536):
        blob = miniblock.encode(a, "bss+lz4", chunk_values=chunk_values)
        assert miniblock.info(blob)["chunks"] == -(-a.size // chunk_values)
    for bad in (dict(encoding="nope"), dict(encoding="auto:x"), dict(chunk_values=1000), dict(chunk_values=0)):
        with pytest.raises(miniblock.MiniblockError):
            miniblock.encode(a, **bad)


def test_unsupported_inputs_raise():
    for bad in (np.array(["a", "b"]), np.array([1 + 2j]), np.array([object()]),
                np.zeros(3, dtype=[("a", "<f4"), ("b", "<i4")])):
        with pytest.raises(miniblock.MiniblockError):
            miniblock.encode(bad)
    assert issubclass(miniblock.MiniblockError, ValueError)


def test_decode_into_out():
    a = np.linspace(0, 100, 100_000).reshape(100, 1000)
    blob = miniblock.encode(a)
    out = np.empty_like(a)
    assert miniblock.decode(blob, out=out) is out
    assert same_bits(out, a)
    flat = np.empty(a.size)
    miniblock.decode(blob, out=flat)
    assert same_bits(flat.reshape(a.shape), a)
    for bad in (np.empty(a.size, np.float32), np.empty(a.size - 1), np.empty((1000, 100)).T,
                np.empty(a.size, ">f8")):
        with pytest.raises(miniblock.MiniblockError):
            miniblock.decode(blob, out=bad)
    ro = np.empty_like(a)
    ro.flags.writeable = False
    with pytest.raises(miniblock.MiniblockError):
        miniblock.decode(blob, out=ro)


def test_decode_range_at_chunk_edges():
    a = np.random.default_rng(3).normal(size=10_000).astype(np.float32)  # 1024 per chunk
    blob = miniblock.encode(a, "bss+lz4")
    for start, stop in [(0, 0), (0, 1), (1023, 1025), (1024, 2048), (0, 1024), (5000, 10_000),
                        (9999, 10_000), (10_000, 10_000), (3, 9_000), (0, 10_000), (9000, 20_000)]:
        got = miniblock.decode_range(blob, start, stop)
        assert same_bits(got, a[start:stop]), (start, stop)
    out = np.empty(100, np.float32)
    miniblock.decode_range(blob, 2000, 2100, out=out)
    assert same_bits(out, a[2000:2100])
    grid = a.reshape(100, 100)
    assert same_bits(miniblock.decode_range(miniblock.encode(grid), 150, 250), a[150:250])
    for bad in ((5, 3), (-1, 4)):
        with pytest.raises(miniblock.MiniblockError):
            miniblock.decode_range(blob, *bad)


def test_arrow_arrays_with_nulls():
    pa = pytest.importorskip("pyarrow")
    values = [1.5, None, -0.0, float("nan"), None] * 1000
    arr = pa.array(values, type=pa.float64())
    blob = miniblock.encode(arr)
    back = miniblock.decode_arrow(blob)
    assert back.type == pa.float64() and back.null_count == arr.null_count
    assert back.is_null().equals(arr.is_null())
    assert np.asarray(back.fill_null(7.0)).tobytes() == np.asarray(arr.fill_null(7.0)).tobytes()
    assert miniblock.info(blob)["may_have_nulls"]
    with pytest.raises(miniblock.MiniblockError, match="decode_arrow"):
        miniblock.decode(blob)
    assert arrow_same(miniblock.decode_arrow(blob, 10, 20), arr.slice(10, 10))
    for arr in (pa.array([1, None, 3], pa.int32()),
                pa.array([True, None, False, True] * 500, pa.bool_()),
                pa.array([0, None, 2**40], pa.timestamp("ms", tz="UTC")),
                pa.array([1, 2, None], pa.uint16()),
                pa.chunked_array([[1.0, 2.0], [None, 4.0]])):
        back = miniblock.decode_arrow(miniblock.encode(arr))
        expected = arr.combine_chunks() if hasattr(arr, "combine_chunks") else arr
        assert back.equals(expected), arr.type
    # Without nulls an Arrow array decodes to numpy too, with a numpy dtype for its type.
    assert same_bits(miniblock.decode(miniblock.encode(pa.array([1.0, 2.0]))), np.array([1.0, 2.0]))
    ts = miniblock.decode(miniblock.encode(pa.array([5, 6], pa.timestamp("us"))))
    assert ts.dtype == np.dtype("M8[us]")
    with pytest.raises(miniblock.MiniblockError):
        miniblock.encode(pa.array(["strings"]))


def test_golden_frames_from_rust():
    """The frames tests/frame.rs froze decode here to the same values."""
    worked = (GOLDEN / "f32_bss_worked.mbf").read_bytes()
    assert same_bits(miniblock.decode(worked), np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    assert miniblock.encode(np.array([1.0, 2.0, 3.0, 4.0], np.float32), "bss") == worked
    big = miniblock.decode((GOLDEN / "f64_big_endian_bss_zstd.mbf").read_bytes())
    assert big.dtype == np.dtype(">f8") and big.shape == (2200,)
    days = miniblock.decode((GOLDEN / "datetime64_days_auto.mbf").read_bytes())
    assert days.dtype == np.dtype("M8[D]")
    assert (days.view("<i8") == 18_000 + np.arange(1000) // 3).all()
    bools = miniblock.decode((GOLDEN / "bool_dict.mbf").read_bytes())
    assert bools.shape == (32, 64) and (bools.reshape(-1) == (np.arange(2048) % 5 == 0)).all()
    assert miniblock.decode((GOLDEN / "empty_f32.mbf").read_bytes()).shape == (0, 3)
    grid = miniblock.decode((GOLDEN / "f64_auto0_3d.mbf").read_bytes())
    assert grid.shape == (2, 10, 110)
    # tests/common's special_f64, first of the recipe's values.
    rust_special = np.array([0x0, 0x8000000000000000, 0x7FF0000000000000, 0xFFF0000000000000,
                             0x7FF8000000000000, 0x7FF8000000000001, 0x7FF0000000000001,
                             0xFFFFFFFFFFFFFFFF, 0x1], dtype="<u8")
    assert grid.reshape(-1)[:9].view("<u8").tobytes() == rust_special.tobytes()


def golden_blobs():
    return [p.read_bytes() for p in sorted(GOLDEN.glob("*.mbf")) if p.stat().st_size < 20_000]


def test_every_prefix_raises():
    for blob in golden_blobs() + [miniblock.encode(np.arange(3000, dtype=np.float32), "alp+ans")]:
        for n in range(len(blob)):
            with pytest.raises(miniblock.MiniblockError):
                miniblock.decode(blob[:n])
        with pytest.raises(miniblock.MiniblockError):
            miniblock.decode(blob + b"\0")


def test_random_byte_flips_raise():
    rng = np.random.default_rng(11)
    blob = miniblock.encode(np.random.default_rng(2).normal(size=5000), "auto")
    for _ in range(2000):
        damaged = bytearray(blob)
        for i in rng.integers(0, len(blob), size=rng.integers(1, 4)):
            damaged[i] ^= int(rng.integers(1, 256))
        if bytes(damaged) == blob:
            continue
        with pytest.raises(miniblock.MiniblockError):
            miniblock.decode(bytes(damaged))
    for junk in (b"", b"MBFR", b"\0" * 100, b"not a frame at all", 12):
        with pytest.raises(miniblock.MiniblockError):
            miniblock.decode(junk)


def test_column_files(tmp_path):
    pa = pytest.importorskip("pyarrow")
    n = 300_000
    rng = np.random.default_rng(5)
    table = pa.table({
        "x": pa.array(np.cumsum(rng.normal(size=n))),
        "y": pa.array(rng.integers(0, 1000, size=n).astype(np.int32), mask=rng.random(n) < 0.1),
        "t": pa.array(np.arange(n, dtype="i8") * 1000, pa.timestamp("ms")),
    }, metadata={"source": "test"})
    path = tmp_path / "t.mb"
    size = miniblock.write_table(table, path)
    assert size == path.stat().st_size and size < table.nbytes
    back = miniblock.read_table(path)
    assert back.equals(table) and back.schema.metadata[b"source"] == b"test"
    part = miniblock.read_table(path, columns=["y", "x"], rows=range(1000, 250_000))
    assert part.equals(table.select(["y", "x"]).slice(1000, 249_000))
    assert miniblock.read_table(path, rows=(n - 5, n + 10)).num_rows == 5
    # A failed write leaves what was there untouched, and no temporary file behind.
    with pytest.raises(miniblock.MiniblockError, match="s"):
        miniblock.write_table(pa.table({"s": ["strings", "are", "not", "fixed"]}), path)
    assert miniblock.read_table(path).equals(table)
    assert sorted(os.listdir(tmp_path)) == ["t.mb"]
    with pytest.raises(miniblock.MiniblockError):
        miniblock.read_table(path, columns=["nope"])
    (tmp_path / "bad.mb").write_bytes(path.read_bytes()[:1000])
    with pytest.raises(miniblock.MiniblockError):
        miniblock.read_table(tmp_path / "bad.mb")


def test_pandas_goes_through_pyarrow(tmp_path):
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": np.arange(10, dtype=np.float64), "b": np.arange(10, dtype=np.int16),
                       "flag": np.arange(10) % 3 == 0})
    miniblock.write_table(df, tmp_path / "df.mb")
    assert miniblock.read_table(tmp_path / "df.mb").to_pandas()[["a", "b", "flag"]].equals(df)


def test_numcodecs_codec():
    numcodecs = pytest.importorskip("numcodecs")
    from miniblock.numcodecs import Miniblock

    codec = numcodecs.get_codec({"id": "miniblock", "encoding": "auto:0", "chunk_values": 2048})
    assert isinstance(codec, Miniblock)
    config = codec.get_config()
    assert config == {"id": "miniblock", "encoding": "auto:0", "chunk_values": 2048}
    assert numcodecs.get_codec(config) == codec
    assert json.loads(json.dumps(config)) == config
    a = np.linspace(-5, 5, 50_000).astype(np.float32).reshape(50, 1000)
    blob = codec.encode(a)
    assert same_bits(codec.decode(blob), a)
    out = np.empty_like(a)
    codec.decode(blob, out=out)
    assert same_bits(out, a)
    raw = bytearray(a.nbytes)
    codec.decode(blob, out=raw)
    assert bytes(raw) == a.tobytes()
    with pytest.raises(miniblock.MiniblockError):
        Miniblock(encoding="nope")


def test_numcodecs_found_without_import():
    """The entry point, not an import of miniblock, finds the codec."""
    code = (
        "import sys, numcodecs, numpy as np\n"
        "c = numcodecs.get_codec({'id': 'miniblock'})\n"
        "assert 'miniblock' in sys.modules\n"  # loaded by the entry point itself
        "a = np.arange(10.0)\n"
        "assert (c.decode(c.encode(a)) == a).all()\n"
        "print(type(c).__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "miniblock.numcodecs"


def test_zarr_v2_compressor(tmp_path):
    zarr = pytest.importorskip("zarr")
    from miniblock.numcodecs import Miniblock

    a = np.random.default_rng(0).normal(size=(40, 300)).astype(np.float64)
    z = zarr.create_array(str(tmp_path / "v2.zarr"), shape=a.shape, chunks=(10, 300), dtype=a.dtype,
                          zarr_format=2, compressors=Miniblock())
    z[:] = a
    assert same_bits(zarr.open_array(str(tmp_path / "v2.zarr"), mode="r")[:], a)


def grid():
    """A 12 x 90 x 180 grid: the monthly COADS sea-level pressure of data/."""
    slp = load(ROOT / "data" / "ferret_coads_climatology_SLP.f32")
    return slp[: 12 * 90 * 180].reshape(12, 90, 180)


def test_zarr_v3_codec(tmp_path):
    zarr = pytest.importorskip("zarr")
    from miniblock.zarr import Miniblock

    a = grid()
    store = str(tmp_path / "grid.zarr")
    z = zarr.create_array(store, shape=a.shape, chunks=(1, 90, 180), dtype=a.dtype,
                          serializer=Miniblock(encoding="auto:0"), compressors=None)
    z[:] = a
    meta = json.loads((tmp_path / "grid.zarr" / "zarr.json").read_text())
    assert meta["codecs"] == [{"name": "miniblock", "configuration": {"encoding": "auto:0"}}]
    back = zarr.open_array(store, mode="r")
    assert same_bits(back[:], a)
    assert same_bits(back[3], a[3])
    assert same_bits(back[2:5, 10:20, 170:], a[2:5, 10:20, 170:])
    # Every chunk is a frame of its own.
    chunk = (tmp_path / "grid.zarr" / "c" / "7" / "0" / "0").read_bytes()
    assert miniblock.info(chunk)["shape"] == (1, 90, 180)
    # Chunks above the inline-decoding size (128 KiB) decode on a worker thread, smaller
    # ones on zarr's event loop: both give the same bits.
    big = np.concatenate([a.ravel()] * 3)
    zb = zarr.create_array(str(tmp_path / "big.zarr"), shape=big.shape, chunks=(65536,), dtype=big.dtype,
                           serializer=Miniblock(), compressors=None)
    zb[:] = big
    assert 65536 * big.itemsize > 128 * 1024
    assert same_bits(zarr.open_array(str(tmp_path / "big.zarr"), mode="r")[:], big)
    # With zarr set to one chunk at a time and one worker, large chunks are coded on the
    # event loop too (no hop): written and read back the same.
    with zarr.config.set({"async.concurrency": 1, "threading.max_workers": 1}):
        from miniblock.zarr import _one_at_a_time

        assert _one_at_a_time()
        zs = zarr.create_array(str(tmp_path / "serial.zarr"), shape=big.shape, chunks=(65536,),
                               dtype=big.dtype, serializer=Miniblock(), compressors=None)
        zs[:] = big
        assert same_bits(zarr.open_array(str(tmp_path / "serial.zarr"), mode="r")[:], big)
    from miniblock.zarr import _one_at_a_time

    assert not _one_at_a_time()
    # Edge chunks: zarr pads them to the full chunk shape.
    e = zarr.create_array(str(tmp_path / "edge.zarr"), shape=(7, 95), chunks=(4, 50), dtype="<i4",
                          serializer=Miniblock())
    ints = np.arange(7 * 95, dtype="<i4").reshape(7, 95)
    e[:] = ints
    assert (zarr.open_array(str(tmp_path / "edge.zarr"), mode="r")[:] == ints).all()
    # Bad options and unsupported dtypes fail when the array is made.
    with pytest.raises(miniblock.MiniblockError):
        Miniblock(encoding="nope")
    with pytest.raises(Exception, match="miniblock"):
        zarr.create_array(str(tmp_path / "c.zarr"), shape=(4,), chunks=(4,), dtype="complex64",
                          serializer=Miniblock())
    assert Miniblock.from_dict(Miniblock(chunk_values=256).to_dict()) == Miniblock(chunk_values=256)


def test_zarr_v3_opens_in_a_fresh_process(tmp_path):
    zarr = pytest.importorskip("zarr")
    from miniblock.zarr import Miniblock

    a = grid()
    store = str(tmp_path / "fresh.zarr")
    zarr.create_array(store, shape=a.shape, chunks=(1, 90, 180), dtype=a.dtype,
                      serializer=Miniblock())[:] = a
    np.save(tmp_path / "expected.npy", a)
    code = (
        "import sys, zarr, numpy as np\n"
        f"z = zarr.open_array({store!r}, mode='r')\n"
        f"e = np.load({str(tmp_path / 'expected.npy')!r})\n"
        "assert z[:].tobytes() == e.tobytes()\n"
        "assert z[11, 45:50].tobytes() == e[11, 45:50].tobytes()\n"
        "print(type(z.metadata.codecs[0]).__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "miniblock.zarr"


def test_threads_decode_at_once():
    a = np.cumsum(np.random.default_rng(9).normal(size=500_000))
    blob = miniblock.encode(a)
    errors = []

    def work():
        try:
            for _ in range(10):
                assert same_bits(miniblock.decode(blob), a)
                assert same_bits(miniblock.decode(miniblock.encode(a[:50_000])), a[:50_000])
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
