"""A llama.cpp context that reuses the KV of the longest common token prefix between consecutive prompts.

Why: rerank prompts share a long head (instructions, the query, the candidate list); re-decoding it for every
candidate or every query would dominate latency. Sequence 0 holds the last prompt; a new prompt drops only the
positions after the shared prefix (``seq_rm``) and decodes the rest.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from nexus_agent.llm.context import ContextConfig, LlamaContext
from nexus_agent.llm.model import LlamaModel


class PrefixCachedLLM:
    def __init__(self, model: str = "qwen0.5b", n_ctx: int = 4096, n_threads: int = 2) -> None:
        self.model = LlamaModel(model)
        self.ctx = LlamaContext(
            self.model, ContextConfig(n_ctx=n_ctx, n_batch=512, n_ubatch=512, n_seq_max=1, n_threads=n_threads)
        )
        self._tokens: list[int] = []  # what sequence 0 currently holds, positions 0..len-1
        self.n_decoded = 0  # tokens actually decoded (for reporting the saving)

    def render(self, messages: list[dict[str, str]]) -> list[int]:
        """Chat-template the messages (with the assistant generation prompt) and tokenise."""
        text = self.model.apply_chat_template(messages, add_generation_prompt=True)
        return self.model.tokenize(text, add_special=False, parse_special=True)

    def logits_after(self, tokens: Sequence[int]) -> npt.NDArray[np.float32]:
        """Logits (float32 [n_vocab]) for the token following ``tokens``, decoding only the unshared suffix."""
        toks = list(tokens)
        common = 0
        n = min(len(toks), len(self._tokens))
        while common < n and toks[common] == self._tokens[common]:
            common += 1
        if common == len(toks):  # fully cached: re-decode the last token to get its logits
            common -= 1
        if common < len(self._tokens):
            self.ctx.seq_rm(0, common, -1)
        out = self.ctx.decode(toks[common:], pos0=common, seq=0, n_logits=1)
        self.n_decoded += len(toks) - common
        self._tokens = toks
        assert out is not None
        return out[0]

    def token_id(self, text: str) -> int:
        ids = self.model.tokenize(text, add_special=False, parse_special=True)
        if len(ids) != 1:
            raise ValueError(f"{text!r} is not a single token in {self.model.path.name}: {ids}")
        return ids[0]
