#!/usr/bin/env python3
"""Sizes of OpenZL (the `openzl` package, 0.3) on every file of a data folder, for the
ratio comparison in docs/benchmarks.md:

    python3 -m venv /tmp/ozl && /tmp/ozl/bin/pip install openzl numpy
    /tmp/ozl/bin/python scripts/openzl_sizes.py ../shared/data

Each file is one OpenZL frame (format version 21, compression level 19) of the values as
numeric elements of their width, through each of the graphs below; every frame is
decoded and compared with the file's bytes before its size counts, and the smallest
counts. These are a subset of what OpenZL can search (its brute-force graph over more
sub-graphs found smaller frames on the hourly series): a lower bound on its ratio.
"""
import glob
import math
import os
import sys

import numpy as np
import openzl.ext as zl

G = zl.graphs
N = zl.nodes


def compressed_len(data: bytes, width: int, build) -> int:
    compressor = zl.Compressor()
    graph = build(compressor)
    cctx = zl.CCtx()
    cctx.ref_compressor(compressor)
    cctx.set_parameter(zl.CParam.FormatVersion, 21)
    cctx.set_parameter(zl.CParam.CompressionLevel, 19)
    cctx.select_starting_graph(compressor, graph)
    values = np.frombuffer(data, dtype="<u8" if width == 8 else "<u4")
    frame = cctx.compress([zl.Input(zl.Type.Numeric, values)])
    back = zl.DCtx().decompress(frame)[0].content.as_nparray().tobytes()
    if back != data:
        raise AssertionError("round trip differs")
    return len(frame)


def transpose(c, successor):
    return N.ConvertNumToStructLE().build_graph(c, [N.TransposeSplit().build_graph(c, [successor])])


GRAPHS = {
    "transpose+compress": lambda c: transpose(c, G.Compress()(c)),
    "transpose+zstd": lambda c: transpose(c, G.Zstd()(c)),
    "delta+fieldlz": lambda c: N.DeltaInt().build_graph(c, [G.FieldLz()(c)]),
    "delta+transpose+compress": lambda c: N.DeltaInt().build_graph(c, [transpose(c, G.Compress()(c))]),
    "sorted tokenize": lambda c: N.TokenizeNumeric(sort=True)(c, G.Compress()(c), G.FieldLz()(c)),
    "fieldlz": lambda c: N.ConvertNumToStructLE().build_graph(c, [G.FieldLz()(c)]),
    "serial compress": lambda c: N.ConvertNumToSerialLE().build_graph(c, [G.Compress()(c)]),
}


def main() -> None:
    folder = sys.argv[1] if len(sys.argv) > 1 else "../shared/data"
    best = {}
    print("| file | best OpenZL ratio | graph |")
    print("|---|--:|---|")
    for path in sorted(glob.glob(os.path.join(folder, "*.f32")) + glob.glob(os.path.join(folder, "*.f64"))):
        width = 8 if path.endswith(".f64") else 4
        data = open(path, "rb").read()
        ratios = {name: len(data) / compressed_len(data, width, build) for name, build in GRAPHS.items()}
        name, ratio = max(ratios.items(), key=lambda kv: kv[1])
        best[os.path.basename(path)] = ratio
        print(f"| {os.path.basename(path).rsplit('.', 1)[0]} | {ratio:.3f} | {name} |", flush=True)
    geomean = math.exp(sum(math.log(r) for r in best.values()) / len(best))
    print(f"| geometric mean | {geomean:.3f} | |")


if __name__ == "__main__":
    main()
