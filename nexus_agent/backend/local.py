"""The in-process backend: the llama.cpp :class:`~nexus_agent.engine.Engine`, lanes and all."""

from __future__ import annotations

from contextlib import AbstractContextManager

from nexus_agent.backend.base import JsonConstraint, TokenCallback
from nexus_agent.engine import Engine, Generation


class LocalBackend:
    """Generation on ``engine``: the grammar constrains the sampler, a lane's KV stays warm between calls."""

    local = True

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.label = f"llama.cpp in-process ({engine.model.path.name})"

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
        prompt = self.engine.tokenize_chat(messages)
        return self.engine.generate(
            prompt,
            seq=lane,
            grammar=json.gbnf if json is not None else None,
            max_tokens=max_tokens,
            on_token=on_token,
            keep=keep,
            repeat_penalty=repeat_penalty,
        )
