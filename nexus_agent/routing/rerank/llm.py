"""What an LLM decision needs of its model, as a Protocol, so the decision logic does not depend on the engine.

:class:`nexus_agent.routing.rerank.session.PrefixCachedLLM` implements it over an :class:`~nexus_agent.engine.Engine`
(its own, or the agent's sidecar sequence); a test can implement it with a fake.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from nexus_agent.engine.blocks import Segment, SpliceConfig
from nexus_agent.routing.rerank.session import PrefixCachedLLM


class DecisionLLM(Protocol):
    def render(self, messages: list[dict[str, str]]) -> list[int]:
        """Chat-template the messages (with the assistant generation prompt) and tokenise."""
        ...

    def logits_after(self, tokens: Sequence[int]) -> npt.NDArray[np.float32]:
        """Logits (float32 ``[n_vocab]``) for the token following ``tokens``."""
        ...

    def render_parts(self, messages: list[dict[str, str]], stable: Sequence[str]) -> list[Segment]:
        """The rendered prompt as segments; each string of ``stable`` is its own spliceable segment."""
        ...

    def logits_after_parts(self, parts: Sequence[Segment]) -> npt.NDArray[np.float32]:
        """Logits after the segments' tokens (stable ones may come from compiled blocks)."""
        ...

    def settle(self) -> None:
        """Housekeeping after a decision (compiling blocks found missing)."""
        ...

    def tokenize(self, text: str) -> list[int]:
        """Token ids of ``text`` (no BOS; special tokens such as ``<|im_end|>`` map to their ids)."""
        ...

    def eos(self) -> int:
        """The end-of-sequence token id."""
        ...


def standalone_llm(model: str, n_threads: int, splice: SpliceConfig | None = None) -> DecisionLLM:
    """A decision LLM on its own small engine (the CLI and benchmarks; the agent lends its engine instead)."""
    return PrefixCachedLLM(model, n_threads=n_threads, splice=splice)
