"""Reads each FILE.lance with pylance's LanceFileReader and FILE.arrow with pyarrow, and
checks they hold the same columns bit for bit (values compared as raw bits, nulls by
position). Prints one line per file; exits 1 on the first difference."""
import sys

import numpy as np
import pyarrow as pa
import lance
from lance.file import LanceFileReader


def bits(col):
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    width = col.type.bit_width // 8
    raw = np.frombuffer(col.buffers()[1], dtype=np.uint8)[col.offset * width:(col.offset + len(col)) * width]
    valid = np.array(col.is_valid())
    view = raw.view({4: np.uint32, 8: np.uint64, 2: np.uint16, 1: np.uint8}[width])
    return np.where(valid, view, 0), valid


def main(paths):
    for path in paths:
        got = LanceFileReader(path).read_all().to_table()
        with pa.ipc.open_file(path[:-len(".lance")] + ".arrow") as f:
            want = f.read_all()
        if got.column_names != want.column_names:
            sys.exit(f"{path}: columns {got.column_names} != {want.column_names}")
        for name in want.column_names:
            g, w = got.column(name), want.column(name)
            if g.type != w.type:
                sys.exit(f"{path}: column {name} is {g.type}, expected {w.type}")
            (gv, gn), (wv, wn) = bits(g), bits(w)
            if not np.array_equal(gn, wn):
                sys.exit(f"{path}: column {name}: nulls differ")
            if not np.array_equal(gv, wv):
                sys.exit(f"{path}: column {name}: values differ at rows {np.nonzero(gv != wv)[0][:5]}")
        print(f"{path}: {got.num_rows} rows, {len(want.column_names)} columns, same bits (pylance {lance.__version__})")


if __name__ == "__main__":
    main(sys.argv[1:])
