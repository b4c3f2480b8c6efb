"""``Engine``: one llama.cpp context that many users share, behind one coarse re-entrant lock per turn.

Callers name a *lane*: a logical sequence that holds one prompt at a time and wants its KV kept warm.

Fixed lanes, shared by every conversation (turns of different conversations serialise on the lock):

* ``MAIN`` (0): the default conversation; arguments and answers are generated here. Another conversation opens a
  lane of its own with :meth:`Engine.open_lane`.
* ``SIDECAR`` (1): per-turn work (pruned window, the routing decision).
* ``SCRATCH`` (2): short-lived scoring (rerankers, TTFT arms).
* ``COMPILE`` (3) and ``PROBE`` (5): compiling tool blocks (the header, then one block at a time).
* ``RELEVANCE`` (6): the relevance judge's question (routing/judge.py).
* ``CHAT`` (7): answers without a tool call, in a lane of their own so that the routing decision's head stays warm
  in ``SIDECAR`` for the next turn.

Lanes live in the *radix arena* (``engine/arena.py``): ``n_slots`` llama.cpp sequence ids (32 by default) indexed
by a native exact-token radix tree. A prompt is matched against every slot: the lane's own slot, or a donor slot
that shares a longer prefix (another conversation with the same system prompt, yesterday's sidecar with the
routing head), gives its first ``lcp`` cells with ``seq_cp`` (``kv_unified``: cells are shared, not copied) and
only the rest is decoded. A lane keeps its KV between turns; under memory pressure the least recently used slot
that no turn holds is evicted and the decode retried (Nexus paper 003 §6.4).

Two sequence ids sit outside the arena, for the splicer's mechanics only (engine/splice.py): ``splice_seq``, where
a spliced blob lands before ``seq_cp`` moves its cells into the target slot, and ``temp_seqs``, one per run of
tokens re-decoded inside a spliced region.

Serialising a whole turn under one lock, rather than each decode call, keeps outputs bit-identical under
concurrency (paper 003 §6.3).

KV budgets (issue 26, ``nexus_agent/kv``): with ``kv_budget`` set, the conversation lanes (``MAIN`` and every
:meth:`Engine.open_lane`) hold at most that many cells. Decoding into such a lane goes through the
:class:`~nexus_agent.kv.evictor.Evictor`, which evicts 32-token blocks chosen by the ``evict`` policy and compacts
positions; the lane's token index ``i`` then sits at KV position ``lane.kv.pos[i]`` rather than ``i``, and every
edit here maps one to the other. Only the KV before the first evicted token stays in the radix tree.

With ``kv_manager`` (issue 55, what ``--kv-budget`` runs) the memory manager decides instead
(:mod:`nexus_agent.kv.memory`): callers pass the prompt's :class:`~nexus_agent.kv.segments.SegmentMap` to
:meth:`Engine.prefill` / :meth:`Engine.generate`, pins stay, whole spans go, and the policy scores each turn once.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

from nexus_agent import defaults
from nexus_agent.engine.arena import ArenaFull, Lane, SlotArena
from nexus_agent.engine.fingerprint import fingerprint_of
from nexus_agent.kv.budget import KVBudget, LaneKV
from nexus_agent.kv.evictor import Evictor
from nexus_agent.kv.memory import MemoryState
from nexus_agent.kv.observe import AttentionObserver, AttnShape
from nexus_agent.kv.policies import POLICIES, check_evict
from nexus_agent.kv.segments import SegmentMap
from nexus_agent.llm import ContextConfig, LlamaContext, LlamaModel, Sampler
from nexus_agent.llm.context import DecodeError
from nexus_agent.models import resolve
from nexus_agent.native import RadixTree
from nexus_agent.splice.fingerprint import ModelFingerprint

log = logging.getLogger(__name__)

MAIN, SIDECAR, SCRATCH, COMPILE, PROBE, RELEVANCE, CHAT = 0, 1, 2, 3, 5, 6, 7
FALLBACK_SCORER = "keydiff"  # the manager's scorer when attention is not observable (it reads K only)
N_TEMP_SEQS = 8  # the splicer re-decodes its runs in chunks of this many
_FIRST_OPEN_LANE = 100  # lanes opened for conversations count up from here

TokenCallback = Callable[[str], None]


class KVCacheFull(ArenaFull):
    """The context has no room for a decode even after evicting every slot that no turn holds."""


@dataclass(frozen=True)
class EngineConfig:
    """``model``: short name or GGUF path. ``n_ctx``: context size in tokens (all slots share its cells).
    ``n_slots``: sequence slots of the radix arena (at most 64). ``kv_budget``: cells each conversation lane may
    hold (None: no budget), evicting with policy ``evict``; ``kv_manager``: through the memory manager (segments,
    pins, ``evict`` as a once-per-turn scorer; what ``--kv-budget`` runs) rather than the raw policy. ``observe``:
    install the attention observer even without a budget (benchmarks that budget lanes of their own choosing)."""

    model: str = defaults.CHAT_MODEL
    n_ctx: int = 8192
    n_batch: int = 512
    n_threads: int = 2
    flash_attn: bool = False
    n_slots: int = 32
    kv_budget: int | None = None
    evict: str = "nexus"  # a name of kv.policies.EVICT_CHOICES
    kv_manager: bool = False
    observe: bool = False
    # tokens drafted per decode by prompt lookup in ``generate`` (0: off); docs/measurements.md#prompt-lookup
    lookup: int = 0

    def __post_init__(self) -> None:
        check_evict(self.evict)


@dataclass
class DraftStats:
    """Prompt lookup in the last ``generate``: draft tokens checked against greedy selection, and kept."""

    checked: int = 0
    kept: int = 0


@dataclass
class Generation:
    """One generation. Times are milliseconds from the call; ``ttft_ms`` is to the first sampled token."""

    tokens: list[int]
    text: str
    n_prompt: int
    n_reused: int
    ttft_ms: float
    total_ms: float
    stopped: str  # "eog" | "max_tokens"


def common_prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class Engine:
    """Owns a ``LlamaModel``, one ``LlamaContext`` and the radix arena over its slots; every public method takes
    the turn lock."""

    def __init__(self, cfg: EngineConfig | None = None) -> None:
        self.cfg = cfg = cfg or EngineConfig()
        n_seq = cfg.n_slots + 1 + N_TEMP_SEQS
        if not 1 <= cfg.n_slots <= RadixTree.MAX_SLOTS:
            raise ValueError(f"n_slots must be in [1, {RadixTree.MAX_SLOTS}], got {cfg.n_slots}")
        if cfg.n_batch < n_seq:  # llama.cpp reserves one output row per sequence in a batch
            raise ValueError(f"n_batch ({cfg.n_batch}) must be at least n_slots + {1 + N_TEMP_SEQS} ({n_seq})")
        self.splice_seq = cfg.n_slots
        self.temp_seqs = tuple(range(cfg.n_slots + 1, cfg.n_slots + 1 + N_TEMP_SEQS))
        self.model = LlamaModel(resolve(cfg.model))
        self.notices: list[str] = []  # what the user should be told once (a scorer that declined)
        policy = cfg.evict
        if cfg.kv_budget is not None and cfg.flash_attn:
            if not cfg.kv_manager:
                raise ValueError("raw eviction policies observe attention with flash attention off (flash_attn=False)")
            if POLICIES[policy].needs_attention:
                why = (
                    f"the {policy} scorer needs attention scores, which flash attention does not expose; the KV "
                    f"memory scores with {FALLBACK_SCORER} (keys only) instead"
                )
                log.warning(why)
                self.notices.append(why)
                policy = FALLBACK_SCORER
        if cfg.observe and cfg.flash_attn:
            raise ValueError("the attention observer needs flash attention off (flash_attn=False)")
        self.budget = KVBudget(cfg.kv_budget, policy, manager=cfg.kv_manager) if cfg.kv_budget is not None else None
        shape = AttnShape.of(self.model) if self.budget is not None or cfg.observe else None
        # The observer is the context's eval callback, so it must exist before the context and outlive it.
        self.observer = AttentionObserver(shape) if shape is not None and not cfg.flash_attn else None
        self.ctx = LlamaContext(
            self.model,
            ContextConfig(
                n_ctx=cfg.n_ctx,
                n_batch=cfg.n_batch,
                n_ubatch=cfg.n_batch,
                n_seq_max=n_seq,
                kv_unified=True,
                flash_attn=cfg.flash_attn,
                n_threads=cfg.n_threads,
                eval_callback=self.observer.callback if self.observer else None,
            ),
        )
        self.evictor = (
            Evictor(self.ctx, self.model, self.observer, self.temp_seqs, shape) if shape is not None else None
        )
        self._budgets: dict[int, KVBudget | None] = {}
        self._lock = threading.RLock()
        self._depth = 0  # nesting of the lock in this engine's own methods (the lock is re-entrant)
        self.arena = SlotArena(cfg.n_slots, cfg.n_ctx, on_evict=lambda slot: self.ctx.seq_rm(slot))
        self._open_lanes = itertools.count(_FIRST_OPEN_LANE)
        self._fingerprint: ModelFingerprint | None = None
        self.drafts = DraftStats()  # prompt lookup in the last generate
        # CPU only today: a discrete GPU's KV is not host memory, and the splicer declines there
        self.n_gpu_layers = 0
        self.unified_memory = True

    def close(self) -> None:
        with self._lock:
            self.ctx.close()
            self.model.close()

    @contextmanager
    def turn(self) -> Iterator[Engine]:
        """Hold the coarse lock for a whole turn (routing + arguments + answer). Re-entrant.

        Every slot a lane uses while the lock is held stays locked in the arena (never evicted) until the outermost
        hold ends.
        """
        with self._lock:
            self._depth += 1
            try:
                yield self
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self.arena.release_held()

    # -- KV budgets
    def set_budget(self, seq: int, budget: KVBudget | None) -> None:
        """Give lane ``seq`` a KV budget of its own (None: none), replacing the engine default. The lane's KV is
        dropped: a budget applies from the lane's first token."""
        if budget is not None and self.evictor is None:
            raise ValueError("this engine has no attention observer: create it with kv_budget or observe=True")
        if budget is not None and self.observer is None and POLICIES[budget.policy].needs_attention:
            raise ValueError(f"the {budget.policy} policy needs attention scores; flash attention does not expose them")
        with self.turn():
            self._budgets[seq] = budget
            lane = self.arena.lane(seq)
            if lane.slot is not None:
                self.ctx.seq_rm(lane.slot)
            lane.kv = None
            lane.forget()
            self.arena.set_record(seq, [], 0)

    def budget_of(self, seq: int) -> KVBudget | None:
        """Lane ``seq``'s KV budget: its own (``set_budget``), else the engine's for conversation lanes, else none."""
        default = self.budget if seq == MAIN or seq >= _FIRST_OPEN_LANE else None
        return self._budgets.get(seq, default)

    def _kv(self, seq: int, lane: Lane) -> LaneKV | None:
        """Lane ``seq``'s budget state (made on first use), None for a lane without a budget."""
        if lane.kv is None:
            budget = self.budget_of(seq)
            if budget is None:
                return None
            assert self.evictor is not None
            lane.kv = LaneKV(budget, self.evictor.shape)
            if lane.tokens:
                lane.kv.adopt(lane.tokens)
        return lane.kv

    def _trim(self, seq: int, slot: int, n: int) -> None:
        """Drop lane ``seq``'s KV from its token ``n`` on (positions mapped for a budgeted lane)."""
        kv = self.arena.lane(seq).kv
        if kv is None:
            self.ctx.seq_rm(slot, n, -1)
            return
        if n < len(kv.pos):
            self.ctx.seq_rm(slot, kv.pos_from(n), -1)
            kv.truncate(n)

    def _record(self, seq: int, tokens: list[int], exact: int) -> None:
        """The lane's record; a budgeted lane's exact prefix ends at its first evicted token."""
        kv = self.arena.lane(seq).kv
        if kv is not None and kv.evicted_from is not None:
            exact = min(exact, kv.evicted_from)
        self.arena.set_record(seq, tokens, exact)

    def _protected(self, lane: Lane, kv: LaneKV) -> list[tuple[int, int]]:
        """KV position ranges an eviction step must keep: the prefix of the lane's tokens that other slots hold
        (donor cells), and a spliced tail (KV past the exact prefix that no eviction made)."""
        out: list[tuple[int, int]] = []
        shared = self.arena.shared_prefix(lane.id, kv.tokens)
        if shared:
            out.append((0, kv.pos_from(shared)))
        if lane.exact < len(lane.tokens) and (kv.evicted_from is None or lane.exact < kv.evicted_from):
            out.append((kv.pos_from(lane.exact), kv.pos_from(len(lane.tokens))))
        return out

    # -- lanes
    def open_lane(self) -> int:
        """A new lane for a conversation of its own (its KV stays warm between its turns, as ``MAIN``'s does)."""
        with self._lock:
            return next(self._open_lanes)

    def close_lane(self, lane: int) -> None:
        """Drop a lane opened with :meth:`open_lane` and the KV only it held."""
        with self.turn():
            self.arena.drop_lane(lane)

    def clear(self) -> None:
        """Empty every slot of the arena (a cold start for measurements; lanes keep their ids, not their KV)."""
        with self.turn():
            self.arena.clear()

    def lane(self, seq: int) -> Lane:
        """The arena's record of lane ``seq``: its slot (a llama.cpp sequence id), tokens and exact prefix."""
        return self.arena.lane(seq)

    def slot(self, seq: int) -> int:
        """The llama.cpp sequence id that holds lane ``seq`` now, locked for the current turn (acquired, evicting the
        least recently used unlocked slot, when the lane has none)."""
        with self.turn():
            return self.arena.slot_for(seq)

    # -- prompts
    def tokenize_chat(self, messages: list[dict[str, str]], assistant_prefix: str = "") -> list[int]:
        text = self.model.apply_chat_template(messages, add_generation_prompt=True) + assistant_prefix
        return self.model.tokenize(text)

    def truncate(self, seq: int, n: int) -> None:
        """Keep the first ``n`` tokens of lane ``seq`` (KV and record)."""
        with self.turn():
            lane = self.arena.lane(seq)
            if lane.slot is not None:
                self._trim(seq, lane.slot, n)
            self._record(seq, lane.tokens[:n], min(lane.exact, n))

    def set_record(self, seq: int, tokens: list[int], exact: int) -> None:
        """After a splice: lane ``seq`` holds ``tokens``, with exact KV for the first ``exact`` of them."""
        with self.turn():
            self._record(seq, list(tokens), min(exact, len(tokens)))

    def fingerprint(self) -> ModelFingerprint:
        """The running model's .atb fingerprint (computed once: it hashes the whole vocabulary)."""
        if self._fingerprint is None:
            self._fingerprint = fingerprint_of(self.model)
        return self._fingerprint

    def decode(self, tokens: list[int], pos0: int, seq: int, n_logits: int = 1) -> npt.NDArray[np.float32] | None:
        """Decode ``tokens`` as lane ``seq``'s tokens ``pos0 ..``; when the cache is full, evict the least recently
        used unlocked slot and retry. A budgeted lane evicts blocks of its own first. The lane's record is the
        caller's to update. Raises :class:`KVCacheFull` when nothing is left to evict."""
        with self.turn():
            slot = self.arena.slot_for(seq)
            lane = self.arena.lane(seq)
            kv = self._kv(seq, lane)
            if kv is None:
                return self._decode_slot(tokens, pos0, slot, n_logits)
            assert self.evictor is not None
            if pos0 > len(kv.pos) and kv.evicted_from is None and len(lane.tokens) >= pos0:
                kv.adopt(lane.tokens[:pos0])  # placed without decode (a splice): at their text positions
            return self.evictor.decode(
                kv,
                slot,
                seq,
                tokens,
                pos0,
                n_logits,
                lambda toks, p, nl: self._decode_slot(toks, p, slot, nl),
                protected=lambda: self._protected(lane, kv),
            )

    def _decode_slot(self, tokens: list[int], pos0: int, slot: int, n_logits: int) -> npt.NDArray[np.float32] | None:
        while True:
            try:
                return self.ctx.decode(tokens, pos0, seq=slot, n_logits=n_logits)
            except DecodeError as e:
                if e.rc != 1:  # 1: no KV cells for the batch; anything else is not ours to retry
                    raise
                self.ctx.seq_rm(slot, pos0, -1)  # earlier batches of this call may have landed
                if self.arena.evict() < 0:
                    raise KVCacheFull(
                        f"the {self.ctx.n_ctx}-token context is full and every slot is in use by this turn "
                        f"(decoding {len(tokens)} tokens at position {pos0})"
                    ) from e

    def prefill(
        self,
        tokens: list[int],
        seq: int = MAIN,
        n_logits: int = 1,
        reuse_approx: bool = False,
        segments: SegmentMap | None = None,
    ) -> int:
        """Make lane ``seq`` hold exactly ``tokens``, decoding only what no slot of the arena holds already.

        Returns how many tokens were reused (from the lane's own slot or copied from a donor slot). At least the last
        token is always re-decoded so its logits are fresh for sampling. Spliced KV is reused only with
        ``reuse_approx`` (a caller continuing the spliced prompt it made, in the same lane); the arena only ever
        offers exact prefixes to other lanes. ``segments``: what each token of ``tokens`` is (read by a lane the
        memory manager keeps; ignored elsewhere); None keeps what the lane knew of the tokens it reuses.
        """
        with self.turn():
            lane = self.arena.lane(seq)
            slot = self.arena.slot_for(seq)
            kv = self._kv(seq, lane)
            limit = len(tokens) - 1
            own = common_prefix_len(lane.tokens, tokens)
            # continuing a spliced prompt, or a budgeted lane's compacted trace: only this lane's own (approximate)
            # KV fits it, no donor can extend it
            approx = (reuse_approx or kv is not None) and own > lane.exact
            donor, shared = (-1, 0) if approx else self.arena.match(tokens)
            if not approx:
                own = min(own, lane.exact)
            own = max(0, min(own, limit))
            shared = max(0, min(shared, limit))
            self._trim(seq, slot, own)
            n = own
            if donor >= 0 and donor != slot and shared > own and (kv is None or kv.next_pos == own):
                self.ctx.seq_cp(donor, slot, own, shared)
                n = shared
                if kv is not None:
                    kv.append(tokens[own:shared])
            if kv is not None and kv.memory is not None:
                kv.memory.set_segments(segments if segments is not None else kv.memory.segments.truncated(n), n)
            self.arena.note_lookup(n, n > own)
            exact = lane.exact if approx else n
            try:
                self.decode(tokens[n:], n, seq, n_logits=n_logits)
            except BaseException:
                # the lane holds the reused prefix only; its record (and the tree, for other lanes) says so
                self._trim(seq, slot, n)
                self._record(seq, tokens[:n], exact)
                raise
            self._record(seq, list(tokens), exact if approx else len(tokens))
            return n

    def generate(
        self,
        prompt: list[int],
        seq: int = MAIN,
        grammar: str | None = None,
        max_tokens: int = 256,
        on_token: TokenCallback | None = None,
        keep: bool = True,
        repeat_penalty: float = 1.0,
        lookup: int | None = None,
        segments: SegmentMap | None = None,
    ) -> Generation:
        """Greedy generation after ``prompt`` in lane ``seq``, optionally under a GBNF ``grammar``.

        ``keep=False`` rolls the lane back to ``prompt`` afterwards (generated tokens are not kept). ``lookup``:
        tokens drafted per step by prompt lookup (None: ``EngineConfig.lookup``; 0: one token per decode).

        Prompt lookup (llama-cpp-python's ``LlamaPromptLookupDecoding``): when the last tokens written also occur
        earlier in the prompt or the output, the tokens that followed them there are a *draft*; the sampled token and
        the draft are decoded in one batch, and each draft token is kept while it is the token greedy selection picks
        from the previous row's logits. The first mismatch is replaced by the picked token and the KV after it is
        dropped, so the tokens are greedy decoding's. Answers and arguments copy names, numbers and titles from the
        request and the tool output, and a batch of a few tokens costs little more than one on a CPU.

        ``segments``: the prompt's, as :meth:`prefill` takes them.
        """
        with self.turn():
            t0 = time.perf_counter()
            budgeted = self._kv(seq, self.arena.lane(seq)) is not None  # compacts positions: no n_ctx bound
            if not budgeted and len(prompt) + max_tokens > self.ctx.n_ctx:
                max_tokens = max(0, self.ctx.n_ctx - len(prompt))
                if max_tokens == 0:
                    raise ValueError(f"prompt of {len(prompt)} tokens fills the {self.ctx.n_ctx}-token context")
            # a budgeted lane maps tokens to compacted positions: dropping a rejected draft's cells is not a suffix cut
            n_draft = 0 if budgeted else self.cfg.lookup if lookup is None else lookup
            reused = self.prefill(prompt, seq, segments=segments)
            lane = self.arena.lane(seq)
            exact_prompt = lane.exact == len(prompt)
            out: list[int] = []
            ttft = 0.0
            stopped = "max_tokens"
            text = ""
            pos = len(prompt)  # the next position to decode; tokens before it are in the lane's KV
            self.drafts = DraftStats()
            try:
                with Sampler(self.model, grammar=grammar, repeat_penalty=repeat_penalty) as sampler:
                    pending = b""
                    rows: list[npt.NDArray[np.float32]] = [self.ctx.logits_ith(-1)]
                    drafted: list[int] = []  # draft tokens decoded at ``pos`` on, not yet checked
                    while len(out) < max_tokens:
                        tok = sampler.pick(rows.pop(0))
                        if not out:
                            ttft = (time.perf_counter() - t0) * 1000
                        hit = bool(drafted) and drafted[0] == tok
                        if drafted:
                            self.drafts.checked += 1
                            self.drafts.kept += hit
                        if hit:
                            drafted.pop(0)
                            pos += 1  # its cell is the draft's, decoded already; its row is next in ``rows``
                        elif drafted:  # the first mismatch: the draft's cells from here on are not the text
                            self.ctx.seq_rm(self.arena.slot_for(seq), pos, -1)
                            drafted, rows = [], []
                        if self.model.is_eog(tok):
                            stopped = "eog"
                            break
                        out.append(tok)
                        piece = pending + self.model.token_bytes(tok, special=False)
                        try:
                            s = piece.decode("utf-8")
                            pending = b""
                        except UnicodeDecodeError:
                            pending = piece  # a multi-byte character split across tokens
                            s = ""
                        text += s
                        if s and on_token:
                            on_token(s)
                        if hit or len(out) >= max_tokens:  # the last token needs no logits: nothing samples after it
                            continue
                        room = min(n_draft, max_tokens - len(out) - 1, self.ctx.n_ctx - pos - 1)
                        drafted = self._draft(prompt + out, room) if room > 0 else []
                        logits = self.decode([tok, *drafted], pos, seq, n_logits=1 + len(drafted))
                        assert logits is not None
                        rows = list(logits)
                        pos += 1
            finally:
                # the trim also drops the cells of a draft the end cut short
                held = prompt + out[: pos - len(prompt)] if keep else prompt
                self._trim(seq, self.arena.slot_for(seq), len(held))
                self._record(seq, held, len(held) if exact_prompt else lane.exact)
            return Generation(out, text, len(prompt), reused, ttft, (time.perf_counter() - t0) * 1000, stopped)

    def _draft(self, text: list[int], n: int) -> list[int]:
        """Up to ``n`` tokens that followed the first earlier occurrence of ``text``'s last 1-3 tokens."""
        found = LlamaPromptLookupDecoding.find_candidate_pred_tokens(np.asarray(text, dtype=np.intc), 3, n)
        return [int(t) for t in found[:n]]

    def load_lane(self, seq: int, blob: bytes, tokens: list[int]) -> None:
        """Lane ``seq`` holds ``tokens`` from a sequence-state ``blob`` of another lane that held them at their
        text positions (never evicted): a benchmark's arms restore the state they share up to where they diverge.
        A budgeted lane's record starts at those positions."""
        with self.turn():
            lane = self.arena.lane(seq)
            slot = self.arena.slot_for(seq)
            self.ctx.set_seq_state(blob, slot)
            lane.tokens = []
            kv = self._kv(seq, lane)
            if kv is not None:
                kv.adopt(tokens)
            self._record(seq, list(tokens), len(tokens))

    def memory(self, seq: int) -> MemoryState | None:
        """The memory manager's state of lane ``seq`` (None: the lane has no managed budget)."""
        kv = self.arena.lane(seq).kv
        return kv.memory if kv is not None else None

    def evicted_spans(self, seq: int) -> dict[str, float]:
        """Per span id of lane ``seq``'s segments, the share of its tokens evicted (empty without the manager)."""
        with self.turn():
            kv = self.arena.lane(seq).kv
            if kv is None or kv.memory is None:
                return {}
            return kv.memory.evicted_share(kv.pos)

    def logits(self) -> npt.NDArray[np.float32]:
        """The logits (float32 [n_vocab]) after the last token of the last decode that asked for them."""
        with self.turn():
            return self.ctx.logits_ith(-1)

    def next_logits(self, prompt: list[int], seq: int = SCRATCH) -> npt.NDArray[np.float32]:
        """Logits (float32 [n_vocab]) after ``prompt`` in lane ``seq``, reusing any cached prefix."""
        with self.turn():
            self.prefill(prompt, seq)
            return self.ctx.logits_ith(-1)
