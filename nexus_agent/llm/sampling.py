"""Token selection: llama.cpp sampler chains (greedy, optionally under a GBNF grammar).

A ``Sampler`` owns one native sampler chain and frees it on ``close()``. Greedy selection is the default
because argument generation must be reproducible.
"""

from __future__ import annotations

import contextlib
from types import TracebackType

import llama_cpp.llama_cpp as L

from nexus_agent.llm.context import LlamaContext
from nexus_agent.llm.model import LlamaModel


class GrammarError(ValueError):
    """llama.cpp could not parse a GBNF grammar."""


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
        params = L.llama_sampler_chain_default_params()
        self._chain = L.llama_sampler_chain_init(params)
        if grammar is not None:
            g = L.llama_sampler_init_grammar(model.vocab, grammar.encode("utf-8"), b"root")
            if not g:
                L.llama_sampler_free(self._chain)
                self._chain = None
                raise GrammarError("llama.cpp rejected the grammar (see the log above for the rule)")
            L.llama_sampler_chain_add(self._chain, g)
        if repeat_penalty != 1.0:
            # Small models loop on long answers; a mild penalty over the recent window breaks the loop.
            penalties = L.llama_sampler_init_penalties(model.n_vocab, repeat_last_n, repeat_penalty, 0.0, 0.0)
            L.llama_sampler_chain_add(self._chain, penalties)
        if temperature > 0:
            L.llama_sampler_chain_add(self._chain, L.llama_sampler_init_temp(temperature))
            L.llama_sampler_chain_add(self._chain, L.llama_sampler_init_dist(seed))
        else:
            L.llama_sampler_chain_add(self._chain, L.llama_sampler_init_greedy())

    def sample(self, ctx: LlamaContext, idx: int = -1) -> int:
        """Pick a token from output ``idx`` of the last batch and advance the grammar state with it."""
        if self._chain is None:
            raise RuntimeError("sampler is closed")
        return int(L.llama_sampler_sample(self._chain, ctx.handle, idx))

    def close(self) -> None:
        if self._chain is not None:
            L.llama_sampler_free(self._chain)
            self._chain = None

    def __enter__(self) -> Sampler:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
