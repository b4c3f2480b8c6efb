"""Query reformulation for follow-ups, as conversational search does it: the local LLM rewrites a request that
leans on the conversation into one that stands on its own ("and the ones before that?" → "list the releases of
acme/api before v2.3.0"), and retrieval reads the rewrite.

Measured against context retrieval and the prior in ``docs/measurements.md#follow-ups``; off by default
(``bench/followups.py``'s ``rewrite+prior`` variant only): it costs a generation on every follow-up.
"""

from __future__ import annotations

from collections.abc import Sequence

from nexus_agent.engine import SCRATCH, Engine

_SYSTEM = (
    "Rewrite the user's latest request so that it stands on its own, without the conversation: replace pronouns, "
    "ordinals and references ('it', 'the second one', 'the same', 'undo that', 'the ones before') with what they "
    "point to, and keep every name, number and identifier. Write only the rewritten request, one sentence."
)


class QueryRewriter:
    """Rewrites follow-ups with ``engine``'s model, in the scratch sequence (the sidecar keeps the decision's
    pinned head)."""

    def __init__(self, engine: Engine, max_tokens: int = 48) -> None:
        self.engine = engine
        self.max_tokens = max_tokens

    def __call__(self, query: str, history: Sequence[dict[str, str]]) -> str:
        """The standalone form of ``query`` given ``history`` (chat messages, oldest first); ``query`` itself when
        the model writes nothing."""
        convo = "\n".join(
            f"{m.get('role', 'user')}: {' '.join(str(m.get('content', '')).split())[:400]}" for m in history[-4:]
        )
        messages = [
            {"role": "system", "content": _SYSTEM},
            {"role": "user", "content": f"Conversation:\n{convo}\n\nLatest request: {query}\nRewritten request:"},
        ]
        prompt = self.engine.tokenize_chat(messages)
        gen = self.engine.generate(prompt, seq=SCRATCH, max_tokens=self.max_tokens, keep=False)
        text = " ".join(gen.text.split()).strip().strip('"')
        return text or query
