"""Stable prompt heads from disk: the prefixes every request of every session starts with, decoded once per model.

A *head* is what the system prompt of the conversation lanes, the no-tool ``CHAT`` lane's system prompt, the routing
decision's instructions and worked examples, and the relevance judge's instructions and examples render to: the same
tokens for every request. Without a store every process (a one-shot ``run -p``, an app's first request, every
``eval-*``) decodes them again, ~600 tokens for the decision's and the judge's each.

A head is kept as an ``.atb`` block compiled behind nothing (header ``[]``, anchor 0) under
``$NEXUS_HOME/heads/<model fingerprint>/<hash of the head's tokens>.atb``: the same format, the same fingerprint and
compatibility checks and the same block cache as compiled tool blocks (:class:`~nexus_agent.engine.blocks.BlockStore`).
A block at its own anchor needs no re-rotation, and at position 0 nothing precedes it, so the cells it loads are the
ones the decode that wrote it produced: the next tokens' logits are a decode's bit for bit. A head is always decoded
on its own, from position 0, so a loaded head and a decoded one are the same computation.

A file that does not match the model or the context, or is corrupt, is refused with a log line (the store's note) and
the head is decoded and written again. Once in its lane, the radix arena keeps a head warm for the rest of the session
(and offers it as a donor to any lane whose prompt starts with it).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from nexus_agent.engine.blocks import BlockStore
from nexus_agent.engine.engine import Engine, common_prefix_len
from nexus_agent.engine.splice import Placement, lane_kv, load_blocks, splice_target, splice_unsupported
from nexus_agent.paths import cache_dir
from nexus_agent.splice.atb_io import write_atb

log = logging.getLogger(__name__)

Warmed = Literal["warm", "loaded", "decoded"]


@dataclass
class HeadStats:
    """How this process got its heads: from a lane or donor already holding them, from disk, or by decoding."""

    warm: int = 0
    loaded: int = 0
    decoded: int = 0


class HeadStore:
    """Heads of one engine's model (module docstring). ``enabled=False``: heads are decoded and never stored (the
    off arm of ``bench/turn_latency.py``)."""

    def __init__(self, engine: Engine, root: Path | None = None, enabled: bool = True) -> None:
        self.engine = engine
        self.why_not = splice_unsupported(engine)  # a context whose KV the splicer cannot write: decode
        self.enabled = enabled and self.why_not is None
        self.blocks = BlockStore(engine, root or cache_dir("heads"), cache_bytes=64 << 20) if self.enabled else None
        self.stats = HeadStats()

    def warm(self, tokens: Sequence[int], seq: int) -> Warmed:
        """Make lane ``seq`` start with ``tokens`` exactly: ``warm`` when the arena already holds them (the lane,
        or a donor slot: then only the last token is decoded), ``loaded`` from disk, else ``decoded`` (and stored)."""
        head = list(tokens)
        if not head:
            return "warm"
        eng = self.engine
        with eng.turn():
            lane = eng.lane(seq)
            if lane.exact >= len(head) and common_prefix_len(lane.tokens, head) >= len(head):
                self.stats.warm += 1
                return "warm"
            _, shared = eng.arena.match(head)
            if shared >= len(head) - 1:
                eng.prefill(head, seq=seq, n_logits=0)
                self.stats.warm += 1
                return "warm"
            block = self.blocks.get([], head) if self.blocks is not None and self._plain(seq) else None
            if block is not None:
                eng.truncate(seq, 0)
                try:
                    load_blocks(eng, seq, [Placement(0, block)])
                except (RuntimeError, ValueError) as e:  # llama.cpp refused the blob (no room …): decode instead
                    log.warning("loading a prompt head failed (%s); decoding it", e)
                    eng.truncate(seq, 0)
                else:
                    eng.set_record(seq, head, exact=len(head))
                    self.stats.loaded += 1
                    return "loaded"
            # decoded on its own from position 0, as every stored head was: loaded and decoded heads agree
            eng.truncate(seq, 0)
            eng.decode(head, 0, seq, n_logits=0)
            eng.set_record(seq, head, exact=len(head))
            self.stats.decoded += 1
            if self.blocks is not None and self._plain(seq):
                self._store(seq, head)
            return "decoded"

    def _plain(self, seq: int) -> bool:
        """A lane under a KV budget maps tokens to compacted positions: its heads are decoded, never loaded."""
        return self.engine.budget_of(seq) is None

    def _store(self, seq: int, head: list[int]) -> None:
        assert self.blocks is not None
        try:
            kv = lane_kv(self.engine, seq, 0, head)
            path = self.blocks.path([], head)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atb(path, splice_target(self.engine, [], m0=0), 0, head, np.zeros(len(head), np.float32), kv.k, kv.v)
        except (OSError, RuntimeError, ValueError) as e:  # a full disk loses the speed-up, never the turn
            log.warning("storing a prompt head failed: %s", e)
