"""The in-process backend: the llama.cpp :class:`~nexus_agent.engine.Engine`, lanes and all.

:class:`LocalBackend` generates chat replies; :class:`LocalDecider` answers routing's questions
(:mod:`nexus_agent.backend.decision`) from the engine's logits: a choice is the greedy decode masked by the names'
token trie (:class:`~nexus_agent.backend.trie.TokenNameFSM`), log-odds are read off one logits row.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

import numpy as np
import numpy.typing as npt

from nexus_agent import defaults
from nexus_agent.backend.base import JsonConstraint, TokenCallback
from nexus_agent.backend.decision import Choice, Messages
from nexus_agent.backend.segmenting import segment
from nexus_agent.backend.session import PrefixCachedLLM
from nexus_agent.backend.trie import TokenNameFSM
from nexus_agent.engine import SIDECAR, Engine, EngineConfig, Generation, common_prefix_len
from nexus_agent.engine.blocks import Segment, SpliceConfig, Splicer
from nexus_agent.engine.heads import HeadStore
from nexus_agent.kv.segments import Part, SegmentMap
from nexus_agent.splice.mode import SpliceMode

# tokens per prefill call of :meth:`LocalBackend.prefill` (~0.5 s on 2 cores for qwen1.5b)
PREFILL_CHUNK = 48


class LocalBackend:
    """Generation on ``engine``: the grammar constrains the sampler, a lane's KV stays warm between calls."""

    local = True

    def __init__(self, engine: Engine, heads: bool = True) -> None:
        self.engine = engine
        self.label = f"llama.cpp in-process ({engine.model.path.name})"
        # stable prompt heads loaded from disk instead of decoded (engine/heads.py); off: decoded every process
        self.heads = HeadStore(engine, enabled=heads)
        # per lane, the conversation's messages and their parts (:meth:`mark`): a chat that starts with them gets
        # their segments, which a lane under the memory manager reads
        self._parts: dict[int, list[tuple[dict[str, str], list[Part]]]] = {}

    def mark(self, lane: int, messages: Messages, parts: list[list[Part]]) -> None:
        """What each of ``messages`` (a conversation's head: the system prompt, its trace) is made of, for the chats
        in ``lane`` that start with them. Only a lane the memory manager keeps reads it."""
        if len(messages) != len(parts):
            raise ValueError(f"{len(parts)} parts lists for {len(messages)} messages")
        self._parts[lane] = [(dict(m), list(p)) for m, p in zip(messages, parts, strict=True)]

    def render(self, messages: Messages, lane: int) -> tuple[list[int], SegmentMap | None]:
        """The chat's tokens (with the assistant prompt), and their segments when ``lane`` is under the memory
        manager and was marked."""
        marked = self._parts.get(lane)
        if not marked or not self._managed(lane):
            return self.engine.tokenize_chat(messages), None
        parts: list[list[Part]] = []
        for m, (known, ps) in zip(messages, marked, strict=False):
            if m != known:
                break
            parts.append(ps)
        return segment(self.engine.model, messages, parts)

    def _managed(self, lane: int) -> bool:
        budget = self.engine.budget_of(lane)
        return budget is not None and budget.manager

    @classmethod
    def open(cls, model: str = defaults.CHAT_MODEL, n_threads: int = 2, n_ctx: int = 4096) -> LocalBackend:
        """A backend on an engine of its own (commands and benchmarks that route without an agent)."""
        return cls(Engine(EngineConfig(model=model, n_ctx=n_ctx, n_threads=n_threads)))

    def turn(self) -> AbstractContextManager[object]:
        return self.engine.turn()

    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        lane: int,
        max_tokens: int,
        json: JsonConstraint | None = None,
        repeat_penalty: float = 1.0,
        on_token: TokenCallback | None = None,
        keep: bool = True,
    ) -> Generation:
        prompt, segments = self.render(messages, lane)
        return self.engine.generate(
            prompt,
            seq=lane,
            grammar=json.gbnf if json is not None else None,
            max_tokens=max_tokens,
            on_token=on_token,
            keep=keep,
            repeat_penalty=repeat_penalty,
            segments=segments,
        )

    def warm(self, variants: Sequence[Messages], lane: int) -> int:
        """Hold the head every chat of ``variants`` starts with in ``lane`` (from disk when it was decoded before);
        returns its length in tokens."""
        head = common_head([self.engine.tokenize_chat(v) for v in variants])
        self.heads.warm(head, lane)
        return len(head)

    def prefill(self, variants: Sequence[Messages], lane: int, stop: Callable[[], bool]) -> int:
        rendered = [self.render(v, lane) for v in variants]
        head = common_head([r[0] for r in rendered])
        segments = rendered[0][1] if rendered else None
        held = self._held(head, lane)
        # a chunk at a time, each under the turn lock on its own: a request that arrives meanwhile waits one chunk
        # at most (it sets ``stop``), then prefills the rest itself from what the lane holds
        for end in range(held + PREFILL_CHUNK, len(head) + PREFILL_CHUNK, PREFILL_CHUNK):
            if stop():
                break
            cut = min(end, len(head))
            self.engine.prefill(
                head[:cut], seq=lane, n_logits=0, segments=segments.truncated(cut) if segments is not None else None
            )
        return self._held(head, lane)

    def _held(self, head: Sequence[int], lane: int) -> int:
        """How many of ``head``'s tokens ``lane`` holds exactly."""
        with self.engine.turn():
            got = self.engine.lane(lane)
            return min(common_prefix_len(got.tokens, head), got.exact)

    def decider(self, splice: SpliceMode = SpliceMode.OFF) -> LocalDecider:
        # one splicer (one block cache) for every lane: only a choice passes stable segments to splice
        splicer = Splicer(self.engine, SpliceConfig(mode=splice)) if splice != SpliceMode.OFF else None
        return LocalDecider(lambda lane: PrefixCachedLLM(self.engine, lane, splicer), self.heads)


def common_head(rendered: Sequence[Sequence[int]]) -> list[int]:
    """The tokens every one of ``rendered`` starts with."""
    if not rendered:
        return []
    n = min(len(r) for r in rendered)
    cut = next((i for i in range(n) if len({r[i] for r in rendered}) > 1), n)
    return list(rendered[0][:cut])


class TokenModel(Protocol):
    """What :class:`LocalDecider` needs of a lane (:class:`~nexus_agent.backend.session.PrefixCachedLLM`; a test
    may pass a fake that spells its answers one character per token)."""

    n_decoded: int  # tokens decoded so far (prefix reuse and splicing save the rest)

    def render(self, messages: list[dict[str, str]]) -> list[int]: ...

    def render_parts(self, messages: list[dict[str, str]], stable: Sequence[str]) -> list[Segment]: ...

    def logits_after(self, tokens: Sequence[int]) -> npt.NDArray[np.float32]: ...

    def logits_after_parts(self, parts: Sequence[Segment]) -> npt.NDArray[np.float32]: ...

    def settle(self) -> None: ...

    def tokenize(self, text: str) -> list[int]: ...

    def eos(self) -> int: ...


class LocalDecider:
    """Routing's questions on the engine (module docstring); one :class:`TokenModel` per lane, made on first use
    by ``lanes``."""

    label = "llama.cpp in-process"

    def __init__(self, lanes: Callable[[int], TokenModel], heads: HeadStore | None = None) -> None:
        self._make = lanes
        self._heads = heads  # None: heads are decoded with the first prompt that needs them (fakes in tests)
        self._head_tokens: dict[str, list[int]] = {}
        self._lanes: dict[int, TokenModel] = {}
        self._first = self.lane(SIDECAR)  # tokenises for every lane (they share the model)
        # ChatML's <|im_end|> ends a name where the vocabulary has it; models without it end on EOS/newline.
        im_end = self._first.tokenize("<|im_end|>")
        ends = {self._first.eos(), *self._first.tokenize("\n"), *(im_end if len(im_end) == 1 else [])}
        self._end = [t for t in ends if t >= 0]

    def lane(self, lane: int) -> TokenModel:
        if lane not in self._lanes:
            self._lanes[lane] = self._make(lane)
        return self._lanes[lane]

    @property
    def n_decoded(self) -> int:
        """Tokens decoded for these questions so far, over every lane (what prefix reuse and splicing saved)."""
        return sum(m.n_decoded for m in self._lanes.values())

    def choose(self, messages: Messages, names: Sequence[str], *, lane: int, stable: Sequence[str] = ()) -> Choice:
        llm = self.lane(lane)
        # the stable strings are separate segments, so a compiled block can stand in for each (--splice)
        parts = llm.render_parts(messages, stable)
        prompt = [t for p in parts for t in p.tokens]
        fsm = TokenNameFSM(list(names), llm.tokenize, self._end)
        first: list[npt.NDArray[np.float32]] = []

        def next_logits(prefix: list[int]) -> npt.NDArray[np.float32]:
            lg = llm.logits_after(prompt + prefix) if prefix else llm.logits_after_parts(parts)
            if not prefix:
                first.append(lg)
            return lg

        chosen = fsm.decode(next_logits)
        lg0 = first[0] if first else llm.logits_after(prompt)
        allowed = fsm.allowed([])
        z = lg0[allowed] - np.max(lg0[allowed])
        logp = dict(zip(allowed, (z - np.log(np.exp(z).sum())).tolist(), strict=True))
        scores = [float(logp.get(fsm.token_seqs[n][0], -np.inf)) for n in names]
        return Choice(chosen, scores, len(prompt))

    def log_odds(self, messages: Messages, yes: Sequence[str], no: Sequence[str], *, lane: int) -> float:
        llm = self.lane(lane)
        yes_ids, no_ids = self._one_token(yes), self._one_token(no)
        if not self._apart(yes_ids, no_ids):
            raise ValueError(f"the model's vocabulary does not tell {yes[0]!r} from {no[0]!r} in one token")
        logits = np.asarray(llm.logits_after(llm.render(messages)), dtype=np.float64)
        return float(np.logaddexp.reduce(logits[yes_ids]) - np.logaddexp.reduce(logits[no_ids]))

    def separable(self, yes: Sequence[str], no: Sequence[str]) -> bool:
        return self._apart(self._one_token(yes), self._one_token(no))

    @staticmethod
    def _apart(yes_ids: list[int], no_ids: list[int]) -> bool:
        return bool(yes_ids) and bool(no_ids) and not set(yes_ids) & set(no_ids)

    def _one_token(self, words: Iterable[str]) -> list[int]:
        """The ids of the spellings that are one token each (a spelling split in two is not an answer token)."""
        return sorted({ids[0] for w in words if len(ids := self._first.tokenize(w)) == 1})

    def head(self, variants: Sequence[Messages]) -> int:
        return len(self._head(variants))

    def warm(self, variants: Sequence[Messages], *, lane: int) -> int:
        head = self._head(variants)
        if self._heads is not None:
            self._heads.warm(head, lane)
        return len(head)

    def _head(self, variants: Sequence[Messages]) -> list[int]:
        """The common head of ``variants``' renderings, memoised (a decision asks for it before every choice)."""
        key = json.dumps(variants, sort_keys=True)
        if key not in self._head_tokens:
            self._head_tokens[key] = common_head([self._first.render(v) for v in variants])
        return self._head_tokens[key]

    def settle(self) -> None:
        for llm in self._lanes.values():
            llm.settle()
