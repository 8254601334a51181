#!/usr/bin/env python3
"""The tables of docs/benchmarks.md's "How small, and how fast" section, from one run of

    cargo bench --bench floats -- --warm-up-time 0.3 --measurement-time 1 | tee floats.log
    python3 scripts/floats_report.py floats.log

Sizes come from the `ratio FILE CODEC: R (N bytes)` lines the bench prints before timing;
speeds from criterion's medians under target/criterion/floats_FILE/CODEC_{encode,decode},
as pco's time over the codec's. The "auto:0 chose" column is not in the bench's output:
`miniblock inspect` on a file written with `--encoding auto:0` shows it.
"""
import json
import math
import re
import sys
from pathlib import Path

CODECS = ["auto:0", "auto", "alp+ans", "alp+zstd", "alp-rd", "delta+ans", "delta", "delta+zstd", "bss+zstd", "bss+zstd+dict", "dict+zstd", "parquet", "pco"]


def main() -> None:
    log = Path(sys.argv[1]).read_text()
    root = Path(__file__).resolve().parent.parent / "target" / "criterion"
    ratios: dict[str, dict[str, float]] = {}
    for m in re.finditer(r"^ratio (\S+) (\S+): ([\d.]+) \((\d+) bytes\)", log, re.M):
        ratios.setdefault(m.group(1), {})[m.group(2)] = float(m.group(3))

    def median(name: str, codec: str, op: str) -> float:
        path = root / f"floats_{name}" / f"{codec.replace(':', '_')}_{op}" / "new" / "estimates.json"
        return json.loads(path.read_text())["median"]["point_estimate"]

    logs = {c: [0.0, 0.0, 0.0] for c in CODECS}
    print("| file | auto:0 | pco | ratio vs pco | encode vs pco | decode vs pco | parquet BSS+Zstd |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    for name in sorted(ratios):
        r = ratios[name]
        speed = {
            c: tuple(median(name, "pco", op) / median(name, c, op) for op in ("encode", "decode"))
            for c in CODECS
        }
        for c in CODECS:
            logs[c][0] += math.log(r[c])
            logs[c][1] += math.log(speed[c][0])
            logs[c][2] += math.log(speed[c][1])
        print(
            f"| {name} | {r['auto:0']:.3f} | {r['pco']:.3f} | {r['auto:0'] / r['pco']:.2f} "
            f"| {speed['auto:0'][0]:.2f}x | {speed['auto:0'][1]:.2f}x | {r['parquet']:.3f} |"
        )
    n = len(ratios)
    g = {c: [math.exp(v / n) for v in logs[c]] for c in CODECS}
    print(
        f"| geometric mean | {g['auto:0'][0]:.3f} | {g['pco'][0]:.3f} | {g['auto:0'][0] / g['pco'][0]:.2f} "
        f"| {g['auto:0'][1]:.2f}x | {g['auto:0'][2]:.2f}x | {g['parquet'][0]:.3f} |"
    )
    print()
    print("| codec | ratio (geomean) | ratio vs pco | encode vs pco | decode vs pco |")
    print("|---|--:|--:|--:|--:|")
    for c in CODECS:
        print(f"| {c} | {g[c][0]:.3f} | {g[c][0] / g['pco'][0]:.2f} | {g[c][1]:.2f}x | {g[c][2]:.2f}x |")
    worst = min((ratios[f]["auto:0"] / ratios[f]["pco"], f) for f in ratios)
    print(f"\nlowest ratio against pco: {worst[1]} {worst[0]:.2f}")


if __name__ == "__main__":
    main()
