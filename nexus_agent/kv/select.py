"""Block selection, written once for every policy: keep the forced blocks, then the highest-priority others."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def select_blocks(
    priority: npt.NDArray[np.floating], forced: npt.NDArray[np.bool_], keep: int
) -> npt.NDArray[np.int64]:
    """Indices of the blocks to keep, sorted ascending and unique.

    ``priority`` [Nk]: higher is kept first (ties go to the newer block). ``forced`` [Nk]: always kept, even past
    ``keep``. ``keep``: how many blocks the budget allows in all (forced included); negative counts as 0.
    """
    n = int(priority.shape[0])
    if forced.shape != (n,):
        raise ValueError(f"forced has shape {forced.shape}, expected ({n},)")
    if not np.all(np.isfinite(priority)):
        raise ValueError("block priorities must be finite")
    free = max(0, min(keep, n) - int(forced.sum()))
    candidates = np.flatnonzero(~forced)
    # lexsort sorts by the last key first: priority descending, then index descending (newer first)
    order = candidates[np.lexsort((-candidates, -priority[candidates]))]
    kept = np.concatenate([np.flatnonzero(forced), order[:free]])
    return np.sort(kept).astype(np.int64)
