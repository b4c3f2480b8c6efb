"""The LLM a reranker scores with: a sequence of the engine's context that reuses the KV of the longest common
token prefix between consecutive prompts.

Why: rerank prompts share a long head (instructions, the query, the candidate list); re-decoding it for every
candidate or every query would dominate latency. Prefix reuse itself lives in ``Engine.prefill``; this class only
adapts it to the rerankers' protocol (:class:`~nexus_agent.routing.rerank.llm.DecisionLLM`). Standalone it owns a
small engine; inside the agent it borrows the agent's engine and its sidecar sequence, so one model serves routing,
arguments and answers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from nexus_agent.engine import MAIN, Engine, EngineConfig


class PrefixCachedLLM:
    def __init__(
        self,
        model: str = "qwen0.5b",
        n_ctx: int = 4096,
        n_threads: int = 2,
        engine: Engine | None = None,
        seq: int = MAIN,
    ) -> None:
        self.engine = engine or Engine(EngineConfig(model=model, n_ctx=n_ctx, n_threads=n_threads))
        self.model = self.engine.model
        self.seq = seq
        self.n_decoded = 0  # tokens actually decoded (for reporting the saving)

    def render(self, messages: list[dict[str, str]]) -> list[int]:
        """Chat-template the messages (with the assistant generation prompt) and tokenise."""
        return self.engine.tokenize_chat(messages)

    def logits_after(self, tokens: Sequence[int]) -> npt.NDArray[np.float32]:
        """Logits (float32 [n_vocab]) for the token following ``tokens``, decoding only the unshared suffix."""
        toks = list(tokens)
        reused = self.engine.prefill(toks, seq=self.seq)
        self.n_decoded += len(toks) - reused
        out: npt.NDArray[np.float32] = self.engine.ctx.logits_ith(-1)
        return out

    def pin(self, n_tokens: int) -> None:
        """Keep the first ``n_tokens`` of the current prompt through the owner's ``free`` (Engine.pin)."""
        self.engine.pin(self.seq, n_tokens)

    def tokenize(self, text: str) -> list[int]:
        """Token ids of ``text`` (the model's defaults: no BOS, special tokens parsed)."""
        return self.model.tokenize(text)

    def eos(self) -> int:
        return self.model.eos()

    def token_id(self, text: str) -> int:
        ids = self.model.tokenize(text, add_special=False, parse_special=True)
        if len(ids) != 1:
            raise ValueError(f"{text!r} is not a single token in {self.model.path.name}: {ids}")
        return ids[0]
