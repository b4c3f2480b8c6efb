"""EPIC-style: re-decode the block's first tokens. A block compiled behind a header still treats its own first
tokens as the start of new text; re-decoding them in place removes that spurious attention sink."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import numpy.typing as npt

from nexus_agent.splice.repair.base import PlacedBlock
from nexus_agent.splice.repair.registry import register_repair


@register_repair
class EpicRepair:
    name: ClassVar[str] = "epic"

    def select(self, block: PlacedBlock, budget: int) -> npt.NDArray[np.int64]:
        return np.arange(0, budget, dtype=np.int64)
