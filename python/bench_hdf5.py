"""HDF5 datasets of the shared data sets under the miniblock filter and the usual HDF5 filters.

Every file of ../shared/data (or the files given) becomes a one-dimensional dataset of an
in-memory HDF5 file (h5py's `core` driver), in chunks of 1 MiB of values (262,144 f32 or
131,072 f64), under each filter below. Each dataset is read back and compared by bits
before its size counts. Times are the best of --repeats runs of writing the dataset and
reading it whole, single-threaded (Blosc2 with one thread), filter by filter.

    .venv-py/bin/python python/bench_hdf5.py       # after: bash .ci/python-venv

Then one real netCDF file (the COADS climatology of Debian's ferret-datasets, where
`.ci/hdf5-tools` puts it) is copied with `nccopy` under each filter, and the sizes and
copy times are printed.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("BLOSC_NTHREADS", "1")
# Run as a script, this folder comes first on sys.path and its miniblock/ (the sources,
# without the built extension) would shadow the installed package.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import h5py  # noqa: E402
import hdf5plugin  # noqa: E402
import numpy as np  # noqa: E402

import miniblock  # noqa: E402
import miniblock.hdf5  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
FERRET = ROOT / ".ci-data" / "ferret" / "usr" / "share" / "ferret-vis" / "data"
CHUNK_BYTES = 1 << 20
BASE, BLOSC = "zlib 4 + shuffle", "blosc2 zstd5 shuffle"


def filters():
    """(name, h5py keyword arguments, nccopy -F/-d arguments)."""
    blosc2 = hdf5plugin.Blosc2(cname="zstd", clevel=5, filters=hdf5plugin.Blosc2.SHUFFLE)
    bitshuffle = hdf5plugin.Bitshuffle(cname="lz4")
    zstd = hdf5plugin.Zstd()
    def f(opts):
        return ",".join(str(o) for o in opts)
    return [
        ("miniblock auto", dict(miniblock.hdf5.Miniblock()), ["-F", "*,409,0"]),
        ("miniblock auto:0", dict(miniblock.hdf5.Miniblock("auto:0")), ["-F", "*,409,1"]),
        (BASE, dict(compression="gzip", compression_opts=4, shuffle=True), ["-d", "4", "-s"]),
        (BLOSC, dict(blosc2), ["-F", f"*,{blosc2.filter_id},{f(blosc2.filter_options)}"]),
        ("bitshuffle lz4", dict(bitshuffle), ["-F", f"*,{bitshuffle.filter_id},{f(bitshuffle.filter_options)}"]),
        ("zstd (hdf5plugin default)", dict(zstd), ["-F", f"*,{zstd.filter_id},{f(zstd.filter_options)}"]),
    ]


def best(f, repeats: int) -> float:
    t = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        f()
        t = min(t, time.perf_counter() - start)
    return t


def bench_file(path: Path, repeats: int):
    a = np.fromfile(path, dtype="<f4" if path.suffix == ".f32" else "<f8")
    chunk = min(a.size, CHUNK_BYTES // a.itemsize)
    rows = {}
    for name, kwargs, _ in filters():
        # No chunk cache: every read decodes its chunks (HDF5 would keep decoded ones).
        f = h5py.File(f"mem-{name}", "w", driver="core", backing_store=False, rdcc_nbytes=0)
        counter = [0]

        def write():
            counter[0] += 1
            f.create_dataset(f"v{counter[0]}", data=a, chunks=(chunk,), **kwargs)

        write_s = best(write, repeats)
        d = f[f"v{counter[0]}"]
        read_s = best(lambda: d[:], repeats)
        if d[:].tobytes() != a.tobytes():
            raise SystemExit(f"{path.name}: {name} did not round-trip bit for bit")
        rows[name] = (a.nbytes / d.id.get_storage_size(), a.nbytes / write_s / 1e6, a.nbytes / read_s / 1e6)
        f.close()
    return a.nbytes, rows


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def netcdf_copies():
    src = FERRET / "coads_climatology.cdf"
    nccopy = shutil.which("nccopy")
    if nccopy is None or not src.exists():
        print(f"\n(nccopy or {src} missing: bash .ci/hdf5-tools installs them; netCDF copies skipped)")
        return
    env = dict(os.environ, HDF5_PLUGIN_PATH=os.pathsep.join([miniblock.hdf5.PLUGIN_PATH, hdf5plugin.PLUGIN_PATH]))
    print(f"\n## nccopy of {src.name} ({src.stat().st_size / 1e6:.2f} MB netCDF classic), to netCDF-4 under each filter")
    print("| filter | nccopy arguments | file bytes | ratio to the source | copy s |\n|---|---|--:|--:|--:|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, _, args in filters():
            out = Path(tmp) / "out.nc"
            start = time.perf_counter()
            subprocess.run([nccopy, "-k", "nc4", *args, str(src), str(out)], check=True, env=env)
            took = time.perf_counter() - start
            size = out.stat().st_size
            print(f"| {name} | `{' '.join(args)}` | {size} | {src.stat().st_size / size:.3f} | {took:.2f} |")
            out.unlink()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", type=Path, help="raw .f32/.f64 files (default: ../shared/data)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    files = args.files or sorted(SHARED.glob("*.f[36][24]")) or sorted((ROOT / "data").glob("*.f[36][24]"))
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"# python/bench_hdf5.py: {len(files)} files, commit {commit}, {platform.machine()}, kernels "
          f"{miniblock.kernel_name()}, h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}), hdf5plugin "
          f"{hdf5plugin.version}, Python {sys.version.split()[0]}")
    print(f"# ratio = raw bytes / stored bytes; write and read in MB/s of raw values, best of {args.repeats}, one thread")
    results = {}
    for path in files:
        nbytes, rows = bench_file(path, args.repeats)
        results[path.name] = rows
        print(f"\n## {path.name} ({nbytes / 1e6:.2f} MB)")
        print("| filter | ratio | write MB/s | read MB/s |\n|---|--:|--:|--:|")
        for name, (ratio, w, r) in rows.items():
            print(f"| {name} | {ratio:.3f} | {w:.0f} | {r:.0f} |")
    names = list(next(iter(results.values())))
    print(f"\n## Geometric means over {len(files)} files")
    print(f"| filter | ratio | write MB/s | read MB/s | ratio / zlib | read time / zlib | ratio / blosc2 | read time / blosc2 |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for name in names:
        g = [geomean([results[f][name][i] for f in results]) for i in range(3)]
        rz = geomean([results[f][name][0] / results[f][BASE][0] for f in results])
        tz = geomean([results[f][BASE][2] / results[f][name][2] for f in results])
        rb = geomean([results[f][name][0] / results[f][BLOSC][0] for f in results])
        tb = geomean([results[f][BLOSC][2] / results[f][name][2] for f in results])
        print(f"| {name} | {g[0]:.3f} | {g[1]:.0f} | {g[2]:.0f} | {rz:.3f} | {tz:.3f} | {rb:.3f} | {tb:.3f} |")
    netcdf_copies()


if __name__ == "__main__":
    main()
