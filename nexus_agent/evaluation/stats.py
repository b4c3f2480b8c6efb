"""Small statistics used by every evaluation: Wilson intervals and latency percentiles."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def wilson_ci(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (default 95%); (0, 1) when n == 0."""
    if n <= 0:
        return (0.0, 1.0)
    if not 0 <= successes <= n:
        raise ValueError(f"wilson_ci: successes={successes} outside [0, {n}]")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # the interval's bounds are exactly 0 / 1 at the extremes; floating error would leave ±1e-17
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return (lo, hi)


def percentile(values: Sequence[float], q: float) -> float:
    """``q``-th percentile (linear interpolation); NaN for an empty sequence."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if len(values) else float("nan")
