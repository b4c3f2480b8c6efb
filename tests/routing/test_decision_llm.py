"""The LLM decision asks its model only through a backend's ``Decider``; the in-process decider reads a lane through
``TokenModel``, so a fake lane drives the whole path (no model needed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from nexus_agent.backend import LocalDecider
from nexus_agent.backend.local import TokenModel
from nexus_agent.backend.session import PrefixCachedLLM
from nexus_agent.engine.blocks import Segment
from nexus_agent.registry import load_registry
from nexus_agent.routing.rerank import reranker_class
from nexus_agent.routing.rerank.llm_choice import LLMChoiceReranker
from nexus_agent.routing.rerank.llm_pointwise import LLMPointwiseReranker


class CharLLM:
    """One token per character (its code point); the next-token logits spell ``answer`` after the prompt."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.prompt_len = 0
        self.n_decoded = 0

    def render(self, messages: list[dict[str, str]]) -> list[int]:
        toks = self.tokenize("".join(f"<{m['role']}>{m['content']}" for m in messages))
        self.prompt_len = len(toks)
        return toks

    def logits_after(self, tokens: Sequence[int]) -> npt.NDArray[np.float32]:
        self.n_decoded += 1
        out = np.zeros(0x250, dtype=np.float32)
        said = len(tokens) - self.prompt_len
        out[ord(self.answer[said]) if said < len(self.answer) else self.eos()] = 1.0
        return out

    def render_parts(self, messages: list[dict[str, str]], stable: Sequence[str]) -> list[Segment]:
        return [Segment(tuple(self.render(messages)))]

    def logits_after_parts(self, parts: Sequence[Segment]) -> npt.NDArray[np.float32]:
        return self.logits_after([t for p in parts for t in p.tokens])

    def settle(self) -> None:
        self.settled = True

    def tokenize(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def eos(self) -> int:
        return 0


def decider(llm: TokenModel) -> LocalDecider:
    """The in-process decider over one fake lane (every lane is the same fake)."""
    return LocalDecider(lambda lane: llm)


def test_the_choice_follows_the_model_through_the_protocol(registry_dir: Path) -> None:
    tools = load_registry(registry_dir).profile("github_all")[:12]
    target = tools[7]
    llm = CharLLM(target.name)
    rr = LLMChoiceReranker(decider(llm))
    res = rr.rerank("whatever", tools)
    assert res.choice == target.qualified_name
    assert res.scores[7] == max(res.scores) and len(res.scores) == len(tools)
    assert rr.head_tokens > 100  # the shared system message
    assert LLMChoiceReranker(decider(CharLLM("none"))).rerank("whatever", tools).choice is None
    rr.settle()  # after the turn: the decider's lanes do their deferred work
    assert getattr(llm, "settled", False)


def test_pointwise_reads_yes_and_no_through_the_protocol(registry_dir: Path) -> None:
    tools = load_registry(registry_dir).profile("github_all")[:3]

    class YesNo(CharLLM):
        """One token per character, except "yes" and "no" (one token each); "yes" wins by 1 after any prompt."""

        def tokenize(self, text: str) -> list[int]:
            return [0x240 + ("yes", "no").index(text)] if text in ("yes", "no") else super().tokenize(text)

        def logits_after(self, tokens: Sequence[int]) -> npt.NDArray[np.float32]:
            out = np.zeros(0x250, dtype=np.float32)
            out[0x240] = 1.0
            return out

    res = LLMPointwiseReranker(decider(YesNo(""))).rerank("whatever", tools)
    assert res.choice == tools[0].qualified_name and res.scores == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="yes"):  # a vocabulary that spells "yes" in three tokens cannot answer
        LLMPointwiseReranker(decider(CharLLM("yes")))


def test_the_llm_rerankers_say_they_need_an_llm_and_the_engine_lane_is_a_token_model() -> None:
    assert reranker_class("llm-choice").uses_llm and reranker_class("llm-pointwise").uses_llm
    assert not reranker_class("cross-encoder").uses_llm
    # structural: the engine's lane offers every method of the protocol
    assert all(callable(getattr(PrefixCachedLLM, m, None)) for m in ("render", "logits_after", "tokenize", "eos"))
    llm: TokenModel = CharLLM("x")  # a fake is a TokenModel for the type checker too
    assert llm.eos() == 0
