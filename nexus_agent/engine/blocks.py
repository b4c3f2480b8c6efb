"""Where compiled blocks live, and the policy that decides when a prompt is spliced rather than prefilled.

Blocks are files ``$NEXUS_HOME/atb/<model fingerprint digest>/<rendering hash>.atb``; the rendering hash covers
the header tokens the block follows and the block's own tokens, so a block is found from the prompt alone and a
changed rendering (another description, another header) is simply another file.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nexus_agent.engine.engine import Engine
from nexus_agent.engine.splice import (
    PROBE_LINE,
    Placement,
    SpliceStats,
    kv_after,
    sensitivity,
    splice_prefill,
    splice_target,
    splice_unsupported,
)
from nexus_agent.paths import cache_dir
from nexus_agent.splice.atb_io import write_atb
from nexus_agent.splice.cache import BlockCache
from nexus_agent.splice.fingerprint import SpliceTarget
from nexus_agent.splice.format import AtbBlock, AtbError
from nexus_agent.splice.mode import SpliceMode
from nexus_agent.splice.repair import DEFAULT_POLICY, PlacedBlock, RepairSchedule, plan_repair, repair_policy

log = logging.getLogger(__name__)

# Stand-in lines a block may be compiled behind, after the prompt's own header (``SpliceConfig.context``), so a
# candidate line's KV is computed as one line among others rather than as the first thing after "Tools:". On qwen1.5b
# it cut the decision's drift by 2-20x, not enough to keep its picks; and a block compiled behind it is never anchored,
# so it is off by default (docs/measurements.md#compiled-tool-blocks).
LIST_CONTEXT = (
    "- example_tool(…) — An example tool that lists, reads or changes something. [example]\n"
    "- other_tool(…) — Another example tool that does something with an object. [example]\n"
    "- third_tool(…) — A third example tool. [example]\n"
)


@dataclass(frozen=True)
class SpliceConfig:
    """``mode``: ``auto`` splices the blocks that are predicted to win: those at their own anchor behind the header
    they were compiled after, whose KV is a prefill's up to float noise (the first candidate line of a decision),
    when that saves ``min_saving`` tokens or more; it compiles missing blocks after the turn. ``on`` splices every
    block, with the depth-adaptive repair, and compiles missing ones first: for measurement, since re-anchored lines
    change the decision's picks (docs/measurements.md#compiled-tool-blocks). ``off`` never splices. ``root``: the
    block folder (default $NEXUS_HOME/atb)."""

    mode: SpliceMode = SpliceMode.AUTO
    policy: str = DEFAULT_POLICY
    schedule: RepairSchedule = field(default_factory=RepairSchedule)
    min_saving: int = 16
    context: str = ""  # compiled behind the prompt's header plus this (e.g. LIST_CONTEXT)
    compile_per_turn: int = 8  # blocks ``auto`` compiles after a turn (each costs about two decodes of its line)
    root: Path | None = None
    cache_bytes: int = 256 << 20


@dataclass(frozen=True)
class Segment:
    """Part of a prompt: ``splice`` marks a stable rendering (a candidate line) that may come from a block."""

    tokens: tuple[int, ...]
    splice: bool = False


def rendering_hash(header: Sequence[int], tokens: Sequence[int]) -> str:
    h = hashlib.blake2b(digest_size=12)
    h.update(np.asarray(list(header), np.int32).tobytes())
    h.update(b"|")
    h.update(np.asarray(list(tokens), np.int32).tobytes())
    return h.hexdigest()


class BlockStore:
    """Compiled blocks of one engine's model: find, load (through a buddy-allocated cache), compile."""

    def __init__(self, engine: Engine, root: Path | None = None, cache_bytes: int = 256 << 20) -> None:
        self.engine = engine
        self.root = (root or cache_dir("atb")) / engine.fingerprint().digest()
        self.cache = BlockCache(cache_bytes)
        self._warned: set[str] = set()

    def target(self, header: Sequence[int]) -> SpliceTarget:
        """What a block compiled after ``header`` must match here."""
        return splice_target(self.engine, header, m0=len(header))

    def path(self, header: Sequence[int], tokens: Sequence[int]) -> Path:
        return self.root / f"{rendering_hash(header, tokens)}.atb"

    def note(self, message: str) -> None:
        """Say a reason to fall back once per process and kind, on stderr."""
        if message not in self._warned:
            self._warned.add(message)
            log.warning("%s; prefilling text instead", message)

    def get(self, header: Sequence[int], tokens: Sequence[int]) -> AtbBlock | None:
        """The block for ``tokens`` behind ``header``, or None (missing; or unusable, said once)."""
        p = self.path(header, tokens)
        if not p.is_file():
            return None
        try:
            block = self.cache.load(p, splice_target(self.engine, header, m0=len(header)))
        except AtbError as e:
            self.note(f"compiled block rejected: {e}")
            return None
        if list(block.tokens) != list(tokens):
            self.note(f"compiled block {p.name} holds other tokens than its rendering")
            return None
        return block

    def compile(
        self, header: list[int], bodies: Iterable[Sequence[int]], force: bool = False, probe: bool = True
    ) -> list[Path]:
        """Compile every body not on disk yet (``force``: all) behind ``header``; returns the files written.

        ``probe``: also measure each token's context sensitivity (a second decode behind a stand-in line), which
        only the ``cacheblend`` repair reads; without it the table holds zeros."""
        written: list[Path] = []
        probe_line = self.engine.model.tokenize(PROBE_LINE)
        target = splice_target(self.engine, header, m0=len(header))
        self.root.mkdir(parents=True, exist_ok=True)
        for body in bodies:
            body = list(body)
            p = self.path(header, body)
            if p.is_file() and not force:
                continue
            kv = kv_after(self.engine, header, body)
            sens = sensitivity(self.engine, header, probe_line, kv) if probe else np.zeros(len(body), np.float32)
            write_atb(p, target, kv.m0, body, sens, kv.k, kv.v)
            written.append(p)
        return written


class Splicer:
    """Prefills a segmented prompt, splicing its stable segments from compiled blocks as ``cfg`` says."""

    def __init__(self, engine: Engine, cfg: SpliceConfig | None = None) -> None:
        self.engine = engine
        self.cfg = cfg = cfg or SpliceConfig()
        self.policy = repair_policy(cfg.policy)
        self.reason = splice_unsupported(engine) if cfg.mode != "off" else None
        self.store = BlockStore(engine, cfg.root, cfg.cache_bytes) if cfg.mode != "off" and not self.reason else None
        self.context = engine.model.tokenize(cfg.context) if cfg.context else []
        self._missing: dict[str, tuple[list[int], list[int]]] = {}
        self._said: set[str] = set()
        self.compiled = 0  # blocks this splicer compiled (on first use)
        self.last: SpliceStats | None = None

    @property
    def active(self) -> bool:
        return self.store is not None

    def prefill_segments(self, segments: Sequence[Segment], seq: int) -> SpliceStats:
        """Make ``seq`` hold the segments' tokens; the last token's logits are then current.

        Blocks were compiled behind the header (the tokens before the first spliceable segment) plus the context
        stand-in (``cfg.context``); with no context, a block placed right behind the header sits at its own anchor
        and needs no repair.
        """
        tokens = [t for s in segments for t in s.tokens]
        first = next((i for i, s in enumerate(segments) if s.splice), None)
        if self.store is None or first is None:
            if self.reason and self.cfg.mode != "off" and self.reason not in self._said:
                self._said.add(self.reason)
                log.warning("splicing is off: %s", self.reason)
            return self._text(tokens, seq)
        header = [t for s in segments[:first] for t in s.tokens] + self.context
        if self.cfg.mode == "on":
            todo = [list(s.tokens) for s in segments if s.splice and not self.store.path(header, s.tokens).is_file()]
            self.compiled += len(self.store.compile(header, todo, probe=self.policy.name == "cacheblend"))
        placements: list[Placement] = []
        pos = 0
        for s in segments:
            # auto splices only a block at its own anchor: the others are not even looked up
            if s.splice and (self.cfg.mode == "on" or pos == len(header)):
                block = self.store.get(header, s.tokens)
                if block is not None and (self.cfg.mode == "on" or pos == int(block.header.m0)):
                    placements.append(Placement(pos, block))
                elif block is None and self.cfg.mode == "auto" and pos == len(header):
                    self._missing[rendering_hash(header, s.tokens)] = (header, list(s.tokens))
            pos += len(s.tokens)
        blocks = [PlacedBlock(p.start, p.n, p.delta, p.block.sensitivity) for p in placements]
        repair = plan_repair(blocks, self.cfg.schedule, self.policy)
        saving = sum(p.n for p in placements) - len(repair)
        if not placements or (self.cfg.mode == "auto" and saving < self.cfg.min_saving):
            return self._text(tokens, seq)
        try:
            self.last = splice_prefill(self.engine, tokens, placements, repair, seq)
        except (RuntimeError, ValueError) as e:  # llama.cpp refused the blob (no room), a decode failed …
            self.store.note(f"splicing failed ({e})")
            self.engine.truncate(seq, 0)
            return self._text(tokens, seq)
        return self.last

    def compile_pending(self, max_blocks: int | None = None) -> int:
        """Compile up to ``max_blocks`` (default ``cfg.compile_per_turn``) of the blocks ``auto`` found missing,
        after the turn that needed them, so no decision waits on them; returns how many were written."""
        if self.store is None or not self._missing:
            return 0
        budget = self.cfg.compile_per_turn if max_blocks is None else max_blocks
        n = 0
        for key in list(self._missing)[:budget]:
            header, body = self._missing.pop(key)
            n += len(self.store.compile(header, [body], probe=self.policy.name == "cacheblend"))
        self.compiled += n
        return n

    def _text(self, tokens: list[int], seq: int) -> SpliceStats:
        n = self.engine.prefill(tokens, seq=seq)
        self.last = SpliceStats(n_tokens=len(tokens), n_reused=n, n_decoded=len(tokens) - n)
        return self.last
