"""Pointwise LLM reranker: score = logit("yes") − logit("no") for "does this tool fulfil the request?".

The query sits before the candidate in the prompt, so consecutive candidates share the whole head
(instructions + conversation + request) and the engine decodes only each candidate's own tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

from nexus_agent.backend import SCRATCH, Decider
from nexus_agent.registry import Tool
from nexus_agent.routing.followup import PreviousTurn
from nexus_agent.routing.rerank.base import Reranker, RerankResult, history_text, register_reranker
from nexus_agent.signature import SignatureOptions, signature

_SIG = SignatureOptions(max_enum=6, max_nested_keys=2, max_params=8, tool_desc_chars=160)
_SYSTEM = "You judge whether a tool can fulfil a user's request. Answer yes or no."
_YES, _NO = ("yes",), ("no",)


@register_reranker("llm-pointwise")
class LLMPointwiseReranker(Reranker):
    """One yes/no question per candidate on ``decider``, in the ``SCRATCH`` lane."""

    uses_llm = True

    def __init__(self, decider: Decider, min_score: float | None = None, top: int = 5) -> None:
        if not decider.separable(_YES, _NO):
            raise ValueError("the model's vocabulary does not tell 'yes' from 'no' in one token")
        self.decider = self._ask = decider  # ``decider`` is the base class's optional view of it
        self.min_score = min_score  # below this for every candidate → no tool fits
        # Pointwise costs one prompt suffix per candidate, so only the retrieval top few are judged; the rest
        # of the pool keeps -inf (recall@5 is what bounds this reranker).
        self.top = top

    def rerank(
        self,
        query: str,
        candidates: Sequence[Tool],
        history: Sequence[dict[str, str]] = (),
        previous: PreviousTurn | None = None,
        examples: Sequence[str] = (),
    ) -> RerankResult:
        ctx = history_text(history)
        head = (f"Earlier conversation:\n{ctx}\n\n" if ctx else "") + f"Request: {query}\n\n"
        scores: list[float] = []
        for t in candidates[: self.top]:
            user = head + f"Tool: {signature(t, _SIG)} [{t.server}]\nCan this tool fulfil the request? yes or no."
            messages = [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]
            scores.append(self._ask.log_odds(messages, _YES, _NO, lane=SCRATCH))
        best = max(range(len(scores)), key=scores.__getitem__) if scores else -1
        scores += [float("-inf")] * (len(candidates) - len(scores))
        choice = None
        if best >= 0 and (self.min_score is None or scores[best] >= self.min_score):
            choice = candidates[best].key
        return RerankResult(scores=scores, choice=choice)
