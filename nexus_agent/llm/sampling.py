"""Token selection: llama.cpp sampler chains (greedy, optionally under a GBNF grammar).

A ``Sampler`` owns its native samplers and frees them on ``close()``. Greedy selection is the default because
argument generation must be reproducible.

Under a grammar, greedy selection checks the grammar *lazily*, as llama.cpp's own ``common_sampler`` does: it picks
the best token of the unconstrained logits and asks the grammar about that one token; only when the grammar refuses
it are the grammar's rules run over the whole vocabulary (151,936 tokens for Qwen2.5) and the pick made again. The
best token of the constrained logits is the best unconstrained one whenever the grammar allows that one, so the
tokens are those of the grammar-first chain; what changes is that most steps ask the grammar about 1 token instead
of the whole vocabulary (``bench/turn_latency.py``, docs/measurements.md#arguments).
"""

from __future__ import annotations

import contextlib
import ctypes
from types import TracebackType

import llama_cpp.llama_cpp as L
import numpy as np
import numpy.typing as npt

from nexus_agent.llm.context import LlamaContext
from nexus_agent.llm.model import LlamaModel


class GrammarError(ValueError):
    """llama.cpp could not parse a GBNF grammar."""


_TOKEN_DATA = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)


class _Candidates:
    """A reusable ``llama_token_data_array`` over a numpy buffer of ``n`` entries."""

    def __init__(self, n: int) -> None:
        self.data = np.zeros(n, dtype=_TOKEN_DATA)
        self.ids = np.arange(n, dtype=np.intc)
        self.array = L.llama_token_data_array(
            data=self.data.ctypes.data_as(L.llama_token_data_p), size=n, selected=-1, sorted=False
        )

    def fill(self, ids: npt.NDArray[np.intc] | None, logits: npt.NDArray[np.float32]) -> None:
        n = len(logits)
        self.data["id"][:n] = self.ids[:n] if ids is None else ids
        self.data["logit"][:n] = logits
        self.data["p"][:n] = 0.0
        self.array.size = n
        self.array.selected = -1
        self.array.sorted = False

    def apply(self, sampler: object) -> None:
        L.llama_sampler_apply(sampler, ctypes.byref(self.array))

    def selected(self) -> int:
        return int(self.data["id"][self.array.selected])


class Sampler:
    """Greedy (temperature 0) or seeded temperature sampling, optionally constrained by ``grammar``
    (GBNF text with a ``root`` rule). ``repeat_penalty`` > 1 penalises tokens seen in the last
    ``repeat_last_n`` tokens."""

    def __init__(
        self,
        model: LlamaModel,
        grammar: str | None = None,
        temperature: float = 0.0,
        seed: int = 0,
        repeat_penalty: float = 1.0,
        repeat_last_n: int = 64,
    ) -> None:
        self._grammar: object | None = None
        self._chain: object | None = L.llama_sampler_chain_init(L.llama_sampler_chain_default_params())
        if grammar is not None:
            g = L.llama_sampler_init_grammar(model.vocab, grammar.encode("utf-8"), b"root")
            if not g:
                self.close()
                raise GrammarError("llama.cpp rejected the grammar (see the log above for the rule)")
            if temperature > 0:
                # a draw from the constrained distribution is not a draw from the unconstrained one: grammar first
                L.llama_sampler_chain_add(self._chain, g)
            else:
                self._grammar = g
        if repeat_penalty != 1.0:
            # Small models loop on long answers; a mild penalty over the recent window breaks the loop.
            penalties = L.llama_sampler_init_penalties(model.n_vocab, repeat_last_n, repeat_penalty, 0.0, 0.0)
            L.llama_sampler_chain_add(self._chain, penalties)
        if temperature > 0:
            L.llama_sampler_chain_add(self._chain, L.llama_sampler_init_temp(temperature))
            L.llama_sampler_chain_add(self._chain, L.llama_sampler_init_dist(seed))
        else:
            L.llama_sampler_chain_add(self._chain, L.llama_sampler_init_greedy())
        self._all: _Candidates | None = None  # made on the first ``pick``
        self._one = _Candidates(1) if self._grammar is not None else None

    def sample(self, ctx: LlamaContext, idx: int = -1) -> int:
        """Pick a token from output ``idx`` of the last batch and advance the grammar state with it."""
        if self._chain is None:
            raise RuntimeError("sampler is closed")
        if self._grammar is None:
            return int(L.llama_sampler_sample(self._chain, ctx.handle, idx))
        return self.pick(ctx.logits_ith(idx))

    def pick(self, logits: npt.NDArray[np.float32]) -> int:
        """Pick a token from a row of logits (float32 [n_vocab]) and advance the grammar and the penalties."""
        if self._chain is None:
            raise RuntimeError("sampler is closed")
        if self._all is None:
            self._all = _Candidates(len(logits))
        cand = self._all
        cand.fill(None, logits)
        cand.apply(self._chain)
        tok = cand.selected()
        if self._grammar is not None and not self._allows(tok, float(logits[tok])):
            cand.fill(None, logits)
            cand.apply(self._grammar)
            cand.apply(self._chain)
            tok = cand.selected()
        if self._grammar is not None:
            L.llama_sampler_accept(self._grammar, tok)
        L.llama_sampler_accept(self._chain, tok)
        return tok

    def _allows(self, tok: int, logit: float) -> bool:
        """Whether the grammar, in its current state, accepts ``tok`` next."""
        assert self._one is not None
        self._one.fill(np.array([tok], dtype=np.intc), np.array([logit], dtype=np.float32))
        self._one.apply(self._grammar)
        return bool(np.isfinite(self._one.data["logit"][0]))

    def close(self) -> None:
        if self._chain is not None:
            L.llama_sampler_free(self._chain)
            self._chain = None
        if self._grammar is not None:
            L.llama_sampler_free(self._grammar)
            self._grammar = None

    def __enter__(self) -> Sampler:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
