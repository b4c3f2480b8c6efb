"""Trailing suffix (paper 003 §5): re-decode the block's last tokens, the ones nearest what follows."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import numpy.typing as npt

from nexus_agent.splice.repair.base import PlacedBlock
from nexus_agent.splice.repair.registry import register_repair


@register_repair
class SuffixRepair:
    name: ClassVar[str] = "suffix"

    def select(self, block: PlacedBlock, budget: int) -> npt.NDArray[np.int64]:
        return np.arange(block.n - budget, block.n, dtype=np.int64)
