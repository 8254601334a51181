#!/usr/bin/env python3
"""The kernel-level table of docs/benchmarks.md: one run of the floats bench per
`MINIBLOCK_CPU` level, restricted to `auto:0`, `auto`, their column-file variants and pco:

    for l in avx512 avx2 portable; do
      MINIBLOCK_CPU=$l cargo bench --bench floats -- --warm-up-time 0.3 --measurement-time 1 \\
        '/(auto|auto:0|file:auto|file:auto:0|pco)/' > floats-$l.log
      cp -r target/criterion criterion-$l
    done
    python3 scripts/floats_levels.py avx512 floats-avx512.log criterion-avx512 \\
        avx2 floats-avx2.log criterion-avx2 portable floats-portable.log criterion-portable

Every figure is a geometric mean over the files of the run: sizes from the bench's
`ratio FILE CODEC` lines, speeds as pco's median time over the codec's (above 1x is faster
than pco), and the column file's read into a caller's buffer against the page API's
`decode_into` of the same pages (above 1 is slower).
"""
import json
import math
import re
import sys
from pathlib import Path


def geomean(values):
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


def level_row(log_path: str, criterion: str):
    log = Path(log_path).read_text()
    ratios: dict[str, dict[str, float]] = {}
    for m in re.finditer(r"^ratio (\S+) (\S+): ([\d.]+) \((\d+) bytes\)", log, re.M):
        ratios.setdefault(m.group(1), {})[m.group(2)] = float(m.group(3))
    root = next(Path(criterion).rglob("floats_*")).parent

    def median(name: str, codec: str, op: str) -> float:
        path = root / f"floats_{name}" / f"{codec.replace(':', '_')}_{op}" / "new" / "estimates.json"
        return json.loads(path.read_text())["median"]["point_estimate"]

    names = sorted(ratios)
    vs_pco = lambda codec, op, pco_op: geomean(median(n, "pco", pco_op) / median(n, codec, op) for n in names)
    return {
        "files": len(names),
        "auto:0 ratio": geomean(ratios[n]["auto:0"] for n in names),
        "file ratio": geomean(ratios[n]["file:auto:0"] for n in names),
        "pco ratio": geomean(ratios[n]["pco"] for n in names),
        "auto:0 encode": vs_pco("auto:0", "encode", "encode"),
        "auto:0 decode": vs_pco("auto:0", "decode", "decode"),
        "auto decode": vs_pco("auto", "decode", "decode"),
        "file:auto:0 encode": vs_pco("file:auto:0", "encode", "encode"),
        "file:auto:0 decode": vs_pco("file:auto:0", "decode", "decode"),
        "file:auto:0 read_column": vs_pco("file:auto:0", "read_column", "decode"),
        "file:auto decode": vs_pco("file:auto", "decode", "decode"),
        "file/page decode": geomean(
            median(n, "file:auto:0", "decode") / median(n, "auto:0", "decode") for n in names
        ),
    }


def main() -> None:
    args = sys.argv[1:]
    rows = [(args[i], level_row(args[i + 1], args[i + 2])) for i in range(0, len(args), 3)]
    columns = list(rows[0][1])[1:]
    print("| level | " + " | ".join(columns) + " |")
    print("|---|" + "--:|" * len(columns))
    for level, row in rows:
        cells = []
        for c in columns:
            v = row[c]
            cells.append(f"{v:.3f}" if "ratio" in c or c == "file/page decode" else f"{v:.2f}x")
        print(f"| {level} ({row['files']} files) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
