"""What the Python test files share: where the data sets are, and bit-exact comparison."""

from __future__ import annotations

from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"


def data_files() -> list[Path]:
    """The bundled data/ files, and ../shared/data's when it is there."""
    files = sorted((ROOT / "data").glob("*.f[36][24]"))
    if SHARED.is_dir():
        files += sorted(SHARED.glob("*.f[36][24]"))
    return files


def load(path: Path) -> np.ndarray:
    """A raw little-endian .f32 or .f64 file."""
    return np.fromfile(path, dtype="<f4" if path.suffix == ".f32" else "<f8")


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtype, shape and bytes: NaN payloads and -0.0 count."""
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
