"""``Engine``: the one llama.cpp context an agent runs on, behind one coarse re-entrant lock per turn.

Sequences of the single context (``kv_unified`` so they can share cells):

* ``MAIN`` (0): the conversation; arguments and answers are generated here.
* ``SIDECAR`` (1): a temporary sequence that starts at position 0 each turn (pruned window, routing
  validation, answers without a tool call); freed after use.
* ``SCRATCH`` (2): short-lived scoring (rerankers, TTFT arms).
* ``COMPILE`` (3) and ``PROBE`` (5): compiling tool blocks (the header, then one block at a time).
* ``SPLICE`` (4): where a spliced blob lands before ``seq_cp`` moves its cells into the target sequence.
* ``RELEVANCE`` (6): the relevance judge's yes/no question (routing/judge.py); its instructions stay pinned
  there, out of the way of the routing decision's own pinned head in ``SIDECAR``.
* ``TEMP_SEQS`` (8..39): one per run of tokens re-decoded inside a spliced region (llama.cpp wants each
  sequence's batch positions to continue its stored ones, so a run in the middle gets its own copy of the prefix).

Each sequence remembers the tokens it holds, so a new prompt only decodes what differs from the cached
prefix (exact-token longest common prefix). Serialising a whole turn under one lock, rather than each
decode call, is what keeps outputs bit-identical under concurrency (Nexus paper §6.3).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from nexus_agent import defaults
from nexus_agent.llm import ContextConfig, LlamaContext, LlamaModel, Sampler
from nexus_agent.models import resolve
from nexus_agent.splice.atb import ModelFingerprint

MAIN, SIDECAR, SCRATCH, COMPILE, SPLICE, PROBE, RELEVANCE = 0, 1, 2, 3, 4, 5, 6
TEMP_SEQS = tuple(range(8, 40))
N_SEQ = 40

TokenCallback = Callable[[str], None]


@dataclass(frozen=True)
class EngineConfig:
    """``model``: short name or GGUF path. ``n_ctx``: context size in tokens (all sequences share it)."""

    model: str = defaults.CHAT_MODEL
    n_ctx: int = 8192
    n_batch: int = 512
    n_threads: int = 2
    flash_attn: bool = False


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


@dataclass
class _SeqCache:
    tokens: list[int] = field(default_factory=list)
    pinned: int = 0  # leading tokens that free() keeps (see Engine.pin)
    # Leading tokens whose KV is exactly what a text prefill computes; past it the KV came from a splice and only
    # a caller that continues that same spliced prompt may reuse it (prefill(reuse_approx=True)).
    exact: int = 0


class Engine:
    """Owns a ``LlamaModel`` and one ``LlamaContext``; every public method takes the turn lock."""

    def __init__(self, cfg: EngineConfig | None = None) -> None:
        self.cfg = cfg = cfg or EngineConfig()
        self.model = LlamaModel(resolve(cfg.model))
        self.ctx = LlamaContext(
            self.model,
            ContextConfig(
                n_ctx=cfg.n_ctx,
                n_batch=cfg.n_batch,
                n_ubatch=cfg.n_batch,
                n_seq_max=N_SEQ,
                kv_unified=True,
                flash_attn=cfg.flash_attn,
                n_threads=cfg.n_threads,
            ),
        )
        self._lock = threading.RLock()
        self._seqs = [_SeqCache() for _ in range(N_SEQ)]
        self._fingerprint: ModelFingerprint | None = None
        # CPU only today: a discrete GPU's KV is not host memory, and the splicer declines there
        self.n_gpu_layers = 0
        self.unified_memory = True

    def close(self) -> None:
        with self._lock:
            self.ctx.close()
            self.model.close()

    @contextmanager
    def turn(self) -> Iterator[Engine]:
        """Hold the coarse lock for a whole turn (routing + arguments + answer). Re-entrant."""
        with self._lock:
            yield self

    # -- prompts
    def tokenize_chat(self, messages: list[dict[str, str]], assistant_prefix: str = "") -> list[int]:
        text = self.model.apply_chat_template(messages, add_generation_prompt=True) + assistant_prefix
        return self.model.tokenize(text)

    def free(self, seq: int) -> None:
        """Drop what sequence ``seq`` holds (the sidecar after a turn), except a head pinned with :meth:`pin`."""
        with self._lock:
            cache = self._seqs[seq]
            if cache.pinned:
                self.ctx.seq_rm(seq, cache.pinned, -1)
            else:
                self.ctx.seq_rm(seq)
            cache.tokens = cache.tokens[: cache.pinned]
            cache.exact = min(cache.exact, cache.pinned)

    # -- what the splicer (engine/splice.py) needs of a sequence's record
    def seq_cache(self, seq: int) -> _SeqCache:
        return self._seqs[seq]

    def truncate(self, seq: int, n: int) -> None:
        """Keep the first ``n`` tokens of ``seq`` (KV and record)."""
        with self._lock:
            cache = self._seqs[seq]
            self.ctx.seq_rm(seq, n, -1)
            cache.tokens = cache.tokens[:n]
            cache.pinned = min(cache.pinned, n)
            cache.exact = min(cache.exact, n)

    def set_record(self, seq: int, tokens: list[int], exact: int) -> None:
        """After a splice: ``seq`` holds ``tokens``, with exact KV for the first ``exact`` of them."""
        cache = self._seqs[seq]
        cache.tokens = list(tokens)
        cache.exact = min(exact, len(tokens))
        cache.pinned = min(cache.pinned, cache.exact)

    def fingerprint(self) -> ModelFingerprint:
        """The running model's .atb fingerprint (computed once: it hashes the whole vocabulary)."""
        if self._fingerprint is None:
            from nexus_agent.engine.splice import fingerprint_of

            self._fingerprint = fingerprint_of(self.model)
        return self._fingerprint

    def pin(self, seq: int, n_tokens: int) -> None:
        """Keep the first ``n_tokens`` that ``seq`` holds through :meth:`free`, until a prompt differs within them.

        Why: the routing decision's system prompt (instructions and worked examples, ~300 tokens) is the same on
        every turn, but the sidecar it runs in is freed after each turn; pinning it saves re-decoding it on the
        next escalated turn. The head stays a few hundred KV cells of the shared context.
        """
        with self._lock:
            cache = self._seqs[seq]
            cache.pinned = max(0, min(n_tokens, len(cache.tokens)))

    def prefill(self, tokens: list[int], seq: int = MAIN, n_logits: int = 1, reuse_approx: bool = False) -> int:
        """Make ``seq`` hold exactly ``tokens``, decoding only what differs from its cached prefix.

        Returns how many tokens were reused. At least the last token is always re-decoded so its logits
        are fresh for sampling. Spliced KV is reused only with ``reuse_approx`` (a caller continuing the
        spliced prompt it made); otherwise the reuse stops where the exact KV ends.
        """
        with self._lock:
            cache = self._seqs[seq]
            shared = common_prefix_len(cache.tokens, tokens)
            if not reuse_approx:
                shared = min(shared, cache.exact)
            n = max(0, min(shared, len(tokens) - 1))
            if n < len(cache.tokens):
                self.ctx.seq_rm(seq, n, -1)
            cache.tokens = cache.tokens[:n]
            cache.pinned = min(cache.pinned, n)  # a pinned head the new prompt does not share is gone
            try:
                self.ctx.decode(tokens[n:], n, seq=seq, n_logits=n_logits)
            except Exception:
                # Leave the sequence consistent with what we believe it holds.
                self.ctx.seq_rm(seq, n, -1)
                raise
            cache.tokens = list(tokens)
            cache.exact = len(tokens) if cache.exact >= n else cache.exact
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
    ) -> Generation:
        """Greedy generation after ``prompt`` in ``seq``, optionally under a GBNF ``grammar``.

        ``keep=False`` rolls the sequence back to ``prompt`` afterwards (generated tokens are not kept).
        """
        with self._lock:
            t0 = time.perf_counter()
            if len(prompt) + max_tokens > self.ctx.n_ctx:
                max_tokens = max(0, self.ctx.n_ctx - len(prompt))
                if max_tokens == 0:
                    raise ValueError(f"prompt of {len(prompt)} tokens fills the {self.ctx.n_ctx}-token context")
            reused = self.prefill(prompt, seq)
            out: list[int] = []
            ttft = 0.0
            stopped = "max_tokens"
            text = ""
            with Sampler(self.model, grammar=grammar, repeat_penalty=repeat_penalty) as sampler:
                pos = len(prompt)
                pending = b""
                for i in range(max_tokens):
                    tok = sampler.sample(self.ctx)
                    if i == 0:
                        ttft = (time.perf_counter() - t0) * 1000
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
                    if i + 1 < max_tokens:  # the last token needs no logits: nothing samples after it
                        self.ctx.decode([tok], pos, seq=seq)
                        cache = self._seqs[seq]
                        if cache.exact == len(cache.tokens):
                            cache.exact += 1
                        cache.tokens.append(tok)
                        pos += 1
            if not keep:
                self.ctx.seq_rm(seq, len(prompt), -1)
                self._seqs[seq].tokens = list(prompt)
                self._seqs[seq].exact = min(self._seqs[seq].exact, len(prompt))
            return Generation(out, text, len(prompt), reused, ttft, (time.perf_counter() - t0) * 1000, stopped)

    def next_logits(self, prompt: list[int], seq: int = SCRATCH) -> npt.NDArray[np.float32]:
        """Logits (float32 [n_vocab]) after ``prompt`` in ``seq``, reusing its cached prefix."""
        with self._lock:
            self.prefill(prompt, seq)
            return self.ctx.logits_ith(-1)
