"""``KVBudget`` (what a lane may hold) and ``LaneKV`` (what it holds: the KV position of each of its tokens)."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import groupby

from nexus_agent.kv.memory import MemoryState
from nexus_agent.kv.observe import AttnShape
from nexus_agent.kv.policies import POLICIES, Policy, make_policy
from nexus_agent.native import QRing

BLOCK = 32  # eviction granularity in tokens (both papers' b)


@dataclass(frozen=True)
class KVBudget:
    """``tokens``: KV cells one lane may hold. ``policy``: a registry name (nexus_agent/kv/policies). The attention
    sink (the first block) and the last ``recent`` tokens are always kept; after an eviction step the lane holds at
    most ``tokens - block`` cells, so decoding evicts once per block rather than once per token.

    ``manager``: the memory manager (:mod:`nexus_agent.kv.memory`) decides what goes, from the segments the backend
    gives (pins, units at message boundaries, the policy as a once-per-turn scorer); without it the policy evicts
    32-token blocks at every step (the raw policy)."""

    tokens: int
    policy: str = "nexus"
    block: int = BLOCK
    recent: int = 32
    seed: int = 0
    manager: bool = False

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"unknown eviction policy {self.policy!r}; choose one of {', '.join(POLICIES)}")
        if self.block < 1 or self.recent < 1:
            raise ValueError("block and recent must be at least 1 token")
        floor = self.min_tokens(self.block, self.recent)
        if self.tokens < floor:
            raise ValueError(
                f"a KV budget of {self.tokens} tokens is too small: the sink block, the recent window and one block "
                f"of room need {floor}"
            )

    @staticmethod
    def min_tokens(block: int = BLOCK, recent: int = 32) -> int:
        return block + (-(-recent // block) + 1) * block + block


@dataclass
class EvictionStep:
    """One eviction step of one lane: blocks are indices into the lane's cells in position order before the step.
    Times in milliseconds: ``observe_ms`` reads K/V and computes attention, ``policy_ms`` includes any lookahead."""

    lane: int
    policy: str  # "nexus", or "memory/nexus" for the manager
    cells_before: int
    cells_after: int
    kept: list[int]
    dropped: list[int]
    forced: int
    observed_rows: int
    observe_ms: float
    policy_ms: float
    total_ms: float

    def line(self) -> str:
        if self.policy.startswith("memory/"):
            return (
                f"kv evict lane {self.lane} [{self.policy}]: {self.cells_before} → {self.cells_after} cells, "
                f"dropped {len(self.dropped)} spans (turns {_ranges(sorted(set(self.dropped)))}), {self.forced} "
                f"pinned cells, {self.total_ms:.1f} ms"
            )
        return (
            f"kv evict lane {self.lane} [{self.policy}]: {self.cells_before} → {self.cells_after} cells, "
            f"kept {len(self.kept)} blocks ({self.forced} forced), dropped {len(self.dropped)} "
            f"{_ranges(self.dropped)}, {self.observed_rows} query rows, {self.total_ms:.1f} ms"
        )


def _ranges(ix: list[int]) -> str:
    """Sorted block indices as runs: [1, 2, 3, 7] → "[1-3,7]"."""
    runs = [[i for _, i in run] for _, run in groupby(enumerate(ix), key=lambda t: t[1] - t[0])]
    return "[" + ",".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs) + "]"


@dataclass
class LaneKV:
    """The budget state of one lane.

    ``tokens[i]`` / ``pos[i]``: the lane's i-th token and its KV position, -1 once evicted (positions rise with i;
    after a step they are compacted to 0..cells-1). ``ring``: the last query rows decoded into the lane.
    ``evicted_from``: the first token index ever evicted (the lane's KV is a text prefill's only before it), None
    before any step. ``memory``: the manager's state (segments, ranks, pins), with ``budget.manager`` only.
    """

    budget: KVBudget
    shape: AttnShape
    tokens: list[int] = field(default_factory=list)
    pos: list[int] = field(default_factory=list)
    evicted_from: int | None = None
    steps: list[EvictionStep] = field(default_factory=list)
    ring: QRing = field(init=False)
    policy: Policy = field(init=False)
    memory: MemoryState | None = field(init=False, default=None)
    cells: int = field(init=False, default=0)  # tokens whose KV is held
    mark: int = field(init=False, default=0)  # tokens the lane held at its last eviction step
    next_pos: int = field(init=False, default=0)  # the position the lane's next token takes

    def __post_init__(self) -> None:
        self.ring = self.shape.ring(max(POLICIES[self.budget.policy].window, 32))
        self.policy = make_policy(self.budget.policy, self.budget.seed)
        self.memory = MemoryState() if self.budget.manager else None
        self._recount()

    def reset(self) -> None:
        """The lane's KV is gone (its slot was evicted or handed on)."""
        self.tokens.clear()
        self.pos.clear()
        self.evicted_from = None
        self.mark = 0
        self.ring.clear()
        self.policy = make_policy(self.budget.policy, self.budget.seed)
        if self.memory is not None:
            self.memory.reset()
        self._recount()

    def _recount(self) -> None:
        live = [p for p in self.pos if p >= 0]
        self.cells = len(live)
        self.next_pos = live[-1] + 1 if live else 0

    def append(self, tokens: list[int]) -> list[int]:
        """New tokens take the next positions; returns them."""
        n = len(tokens)
        new = list(range(self.next_pos, self.next_pos + n))
        self.tokens.extend(tokens)
        self.pos.extend(new)
        self.cells += n
        self.next_pos += n
        if self.memory is not None:
            self.memory.grow(len(self.tokens))
        return new

    def remap(self, pos: list[int]) -> None:
        """After an eviction step: every token's new position (-1 evicted)."""
        self.pos = pos
        self.mark = len(pos)
        first = next((i for i, p in enumerate(pos) if p < 0), None)
        if first is not None and (self.evicted_from is None or first < self.evicted_from):
            self.evicted_from = first
        self._recount()

    def adopt(self, tokens: list[int]) -> None:
        """The lane holds ``tokens`` placed without this record (a splice) at positions equal to their indices:
        valid only before any eviction step."""
        if self.evicted_from is not None:
            raise RuntimeError("a lane that has evicted KV cannot adopt tokens placed at their text positions")
        self.tokens = list(tokens)
        self.pos = list(range(len(tokens)))
        if self.memory is not None:
            self.memory.truncate(0)
            self.memory.grow(len(tokens))
        self._recount()

    def pos_from(self, idx: int) -> int:
        """The first KV position held by tokens ``idx..`` (``next_pos`` when none survives)."""
        for p in self.pos[idx:]:
            if p >= 0:
                return p
        return self.next_pos

    def truncate(self, n: int) -> None:
        """Forget tokens ``n..`` (the caller removed their cells)."""
        del self.pos[n:]
        del self.tokens[n:]
        self.mark = min(self.mark, n)
        if self.memory is not None:
            self.memory.truncate(n)
        if self.evicted_from is not None and self.evicted_from >= n:
            self.evicted_from = None  # every token before it still has its text-prefill KV and position
        self._recount()
