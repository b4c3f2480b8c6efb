"""A lane of the engine seen as a scorer: logits after a prompt, reusing the KV of the longest common token
prefix with what any slot holds.

Why: decision prompts share a long head (instructions, worked examples, the candidate list); re-decoding it for
every candidate or every request would dominate latency. Prefix reuse itself lives in ``Engine.prefill``; this class
adds the prompt's segmentation into spliceable candidate lines (``--splice``) and the logits row after it. It
always borrows an engine (the agent's, or one a command opened for itself); :class:`~nexus_agent.backend.local.
LocalDecider` asks it, and ``atb-compile`` uses its segmentation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from nexus_agent.engine import Engine
from nexus_agent.engine.blocks import Segment, Splicer


class PrefixCachedLLM:
    """Lane ``seq`` of ``engine``; ``splicer``: where the stable segments' compiled blocks come from (None: never
    spliced). One splicer may serve several lanes: it holds the block cache, not a lane."""

    def __init__(self, engine: Engine, seq: int, splicer: Splicer | None = None) -> None:
        self.engine = engine
        self.model = engine.model
        self.seq = seq
        self.n_decoded = 0  # tokens actually decoded (for reporting the saving)
        self.splicer = splicer
        self._spliced: list[int] = []  # the last prompt this LLM spliced: its continuations may reuse that KV
        self.n_tokenization_mismatch = 0  # prompts whose segmented tokens differed from the whole text's

    def render(self, messages: list[dict[str, str]]) -> list[int]:
        """Chat-template the messages (with the assistant generation prompt) and tokenise."""
        return self.engine.tokenize_chat(messages)

    def render_parts(self, messages: list[dict[str, str]], stable: Sequence[str]) -> list[Segment]:
        """The rendered prompt's tokens cut into segments, each string of ``stable`` (in order, once each in the
        text) its own spliceable segment.

        The whole text is tokenised once and cut where token boundaries meet the strings' boundaries, so splice on
        and off always see the same tokens; a string whose boundary falls inside a token is left in the text.
        """
        text = self.model.apply_chat_template(messages, add_generation_prompt=True)
        whole = self.model.tokenize(text)
        ends = self._token_ends(text, whole)
        if ends is None:
            self.n_tokenization_mismatch += 1
            return [Segment(tuple(whole))]
        cuts: list[tuple[int, int]] = []
        pos = 0
        for piece in stable:
            i = text.find(piece, pos)
            if i < 0:
                raise ValueError(f"stable segment {piece[:40]!r} is not in the rendered prompt")
            a = len(text[:i].encode("utf-8"))
            b = a + len(piece.encode("utf-8"))
            if a in ends and b in ends:
                cuts.append((ends[a], ends[b]))
            else:
                self.n_tokenization_mismatch += 1
            pos = i + len(piece)
        parts: list[Segment] = []
        done = 0
        for a, b in cuts:
            if a > done:
                parts.append(Segment(tuple(whole[done:a])))
            parts.append(Segment(tuple(whole[a:b]), splice=True))
            done = b
        parts.append(Segment(tuple(whole[done:])))
        return parts

    def _token_ends(self, text: str, tokens: list[int]) -> dict[int, int] | None:
        """Byte offset in ``text`` -> how many of ``tokens`` end at or before it (None: they do not spell it)."""
        pieces = [self.model.token_bytes(t, special=True) for t in tokens]
        data = text.encode("utf-8")
        joined = b"".join(pieces)
        # SentencePiece vocabularies may add a leading space the text does not have
        if not joined.endswith(data):
            return None
        ends: dict[int, int] = {}
        at = len(data) - len(joined)
        for i, b in enumerate(pieces):
            at += len(b)
            ends[at] = i + 1
        return ends

    def tokens_in_context(self, piece: str, before: str) -> list[int] | None:
        """The tokens of ``piece`` as it tokenises after ``before`` (how a compiler gets a line's tokens as the
        prompt holds them); None if a token straddles the boundary."""
        text = before + piece
        whole = self.model.tokenize(text)
        ends = self._token_ends(text, whole)
        cut = len(before.encode("utf-8"))
        if ends is None or cut not in ends:
            return None
        return whole[ends[cut] :]

    def logits_after_parts(self, parts: Sequence[Segment]) -> npt.NDArray[np.float32]:
        """Logits after the segments' tokens, splicing the stable ones from compiled blocks when configured."""
        if self.splicer is None:
            self._spliced = []
            return self.logits_after([t for p in parts for t in p.tokens])
        st = self.splicer.prefill_segments(parts, self.seq)
        self._spliced = [t for p in parts for t in p.tokens] if st.n_blocks else []
        self.n_decoded += st.n_decoded
        return self.engine.logits()

    def settle(self) -> None:
        """After a decision: compile the blocks it found missing (``--splice auto``)."""
        if self.splicer is not None:
            self.splicer.compile_pending()

    def logits_after(self, tokens: Sequence[int]) -> npt.NDArray[np.float32]:
        """Logits (float32 [n_vocab]) for the token following ``tokens``, decoding only the unshared suffix."""
        toks = list(tokens)
        n = len(self._spliced)
        reuse_approx = bool(n) and toks[:n] == self._spliced
        reused = self.engine.prefill(toks, seq=self.seq, reuse_approx=reuse_approx)
        self.n_decoded += len(toks) - reused
        return self.engine.logits()

    def tokenize(self, text: str) -> list[int]:
        """Token ids of ``text`` (the model's defaults: no BOS, special tokens parsed)."""
        return self.model.tokenize(text)

    def eos(self) -> int:
        return self.model.eos()
