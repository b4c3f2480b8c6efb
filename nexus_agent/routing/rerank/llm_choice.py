"""Final decision by the local LLM over the candidates' compact signatures, constrained by the tool-name FSM.

The prompt lists the pool (``name(…) — short description``, ~25 tokens each) plus ``none``; the model
then writes a tool name, and :class:`TokenNameFSM` masks every token that would not continue one of the listed
names, so it can only pick a real candidate (or ``none``). Scores are the log-softmax, over the allowed first
tokens, of each candidate's first token: a cheap confidence for the report; the decision itself is the
constrained greedy decode.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nexus_agent.registry import Tool
from nexus_agent.routing.rerank.base import Reranker, RerankResult, history_text, register_reranker
from nexus_agent.routing.rerank.session import PrefixCachedLLM
from nexus_agent.routing.trie import TokenNameFSM
from nexus_agent.signature import SignatureOptions, signature

NONE = "none"
# Name and description only: on the github_dev items the gate escalates (first 16), listing each candidate as
# ``name(…) — 120 characters of description`` picked right 7 times vs 6 with up to six typed parameters and 80
# characters, at half the prompt (median 547 vs 1,147 tokens, 18 vs 45 s per decision on a loaded machine).
_SIG = SignatureOptions(max_params=0, tool_desc_chars=120)  # no parameter shown: enum/nesting limits are moot
_SYSTEM = (
    "You pick the single tool that fulfils the user's latest request. Tools are listed as "
    "name(parameters) — description. Consider what the user wants done and which operation does it. "
    f"Answer with the tool name only. If the request needs no tool (chit-chat, general knowledge, math, "
    f"writing), answer {NONE}."
)


def display_names(candidates: Sequence[Tool]) -> list[str]:
    """Bare names, except ``server__name`` where two candidates share a bare name (e.g. github/gitlab)."""
    counts: dict[str, int] = {}
    for t in candidates:
        counts[t.name] = counts.get(t.name, 0) + 1
    return [t.name if counts[t.name] == 1 else t.qualified_name for t in candidates]


def build_messages(query: str, candidates: Sequence[Tool], history: Sequence[dict[str, str]]) -> list[dict[str, str]]:
    names = display_names(candidates)
    lines = []
    for t, shown in zip(candidates, names, strict=True):
        sig = signature(t, _SIG)
        lines.append(f"- {shown}{sig[len(t.name) :]}" + (f" [{t.server}]" if shown == t.name else ""))
    lines.append(f"- {NONE} — no tool needed")
    ctx = history_text(history)
    user = "Tools:\n" + "\n".join(lines) + "\n\n"
    if ctx:
        user += f"Earlier conversation:\n{ctx}\n\n"
    user += f"Request: {query}\nWhich tool?"
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]


@register_reranker("llm-choice")
class LLMChoiceReranker(Reranker):
    def __init__(self, model: str = "qwen1.5b", n_threads: int = 2, llm: PrefixCachedLLM | None = None) -> None:
        self.llm = llm or PrefixCachedLLM(model, n_threads=n_threads)
        m = self.llm.model
        # ChatML's <|im_end|> ends the name where the vocabulary has it; models without it end on EOS/newline.
        im_end = m.tokenize("<|im_end|>")
        ends = {m.eos(), *m.tokenize("\n"), *(im_end if len(im_end) == 1 else [])}
        self._end = [t for t in ends if t >= 0]

    def rerank(self, query: str, candidates: Sequence[Tool], history: Sequence[dict[str, str]] = ()) -> RerankResult:
        names = display_names(candidates)
        prompt = self.llm.render(build_messages(query, candidates, history))
        fsm = TokenNameFSM([*names, NONE], lambda s: self.llm.model.tokenize(s), self._end)
        first_logits: list[np.ndarray] = []

        def next_logits(prefix: list[int]) -> np.ndarray:
            lg = self.llm.logits_after(prompt + prefix)
            if not prefix:
                first_logits.append(lg)
            return lg

        chosen = fsm.decode(next_logits)
        lg0 = first_logits[0] if first_logits else self.llm.logits_after(prompt)
        allowed = fsm.allowed([])
        z = lg0[allowed] - np.max(lg0[allowed])
        logp = dict(zip(allowed, (z - np.log(np.exp(z).sum())).tolist(), strict=True))
        scores = [float(logp.get(fsm.token_seqs[n][0], -np.inf)) for n in names]
        choice = None if chosen == NONE else candidates[names.index(chosen)].qualified_name
        return RerankResult(scores=scores, choice=choice, n_prompt_tokens=len(prompt))
