"""CacheBlend-style: re-decode the tokens whose KV deviates most when the context changes.

CacheBlend measures the deviation at run time on the first layer; llama.cpp cannot run one layer alone, so the
compiler measures it once instead: it decodes each block behind the header and behind the header plus a stand-in
line, and stores each token's relative V deviation in the .atb token table (``sensitivity``).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import numpy.typing as npt

from nexus_agent.splice.repair.base import PlacedBlock
from nexus_agent.splice.repair.registry import register_repair


@register_repair
class CacheBlendRepair:
    name: ClassVar[str] = "cacheblend"

    def select(self, block: PlacedBlock, budget: int) -> npt.NDArray[np.int64]:
        if budget <= 0:
            return np.empty(0, np.int64)
        # stable: among equal deviations the earlier token goes first
        order = np.argsort(-block.sensitivity.astype(np.float64), kind="stable")[:budget]
        return np.sort(order).astype(np.int64)
