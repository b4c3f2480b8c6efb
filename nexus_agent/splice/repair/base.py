"""What a repair policy decides, and the depth schedule that sets its budget.

A spliced block was computed behind the compile header only; the tokens between that header and where it now sits
(its *depth*, ``delta``) never reached its K and V. Re-decoding some of its tokens in place repairs part of that
drift. The schedule decides how many (a fraction R of the block that rises with depth); the policy decides which.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class RepairSchedule:
    """R(n_past): ``r_base`` up to ``m`` tokens of depth, rising linearly to 1.0 at ``k · m`` (paper 003 §5).

    ``ratio`` overrides the schedule with a fixed fraction (benchmarks; 1.0 is the never-regress setting).
    """

    m: int = 256
    r_base: float = 0.05
    k: float = 4.0
    ratio: float | None = None

    def __post_init__(self) -> None:
        if self.m <= 0 or self.k <= 1.0 or not 0.0 <= self.r_base <= 1.0:
            raise ValueError(f"repair schedule needs m > 0, k > 1, 0 <= r_base <= 1 (got {self})")
        if self.ratio is not None and not 0.0 <= self.ratio <= 1.0:
            raise ValueError(f"repair ratio must be within [0, 1], got {self.ratio}")

    def r(self, n_past: int) -> float:
        """The fraction of a block to re-decode when it sits ``n_past`` tokens past its compile anchor."""
        if self.ratio is not None:
            return self.ratio
        if n_past <= self.m:
            return self.r_base
        top = self.k * self.m
        if n_past >= top:
            return 1.0
        return self.r_base + (1.0 - self.r_base) * (n_past - self.m) / (top - self.m)

    def budget(self, n_tokens: int, n_past: int) -> int:
        """Tokens to re-decode in a block of ``n_tokens`` at depth ``n_past`` (0 for an anchored block)."""
        if n_past == 0 and self.ratio is None:
            return 0
        return min(n_tokens, math.ceil(self.r(n_past) * n_tokens - 1e-9))


@dataclass(frozen=True)
class PlacedBlock:
    """A block at its place in a prompt. ``start``: position of its first token; ``delta``: start minus its compile
    anchor m0 (the depth it did not see); ``sensitivity``: float32 (n,), how much each token's V moved when the
    compile context changed (measured by the compiler)."""

    start: int
    n: int
    delta: int
    sensitivity: npt.NDArray[np.float32]


class RepairPolicy(Protocol):
    name: ClassVar[str]

    def select(self, block: PlacedBlock, budget: int) -> npt.NDArray[np.int64]:
        """Offsets within the block (sorted, unique, ``budget`` of them) whose tokens are re-decoded."""
        ...
