"""From a chat's parts to its tokens' segments: what the memory manager reads of the trace
(:mod:`nexus_agent.kv.segments`).

The agent says what each message is made of (:class:`~nexus_agent.kv.segments.Part`: the system head, a request, a
call's arguments, a result with its pinned identifiers, an answer, a recalled note). Here the chat is rendered with
the model's template and tokenised as the engine will see it, and every token is given the part its first byte
falls in: token byte offsets come from the tokens' own bytes, whose concatenation is the rendered text for the
byte-level BPE vocabularies of the chat models (checked each time; a vocabulary for which it is not, such as a
SentencePiece one that adds a leading space, gets no segments and the lane's cells count as the transient prompt).
Tokens between parts (role headers, ends of messages) are ``frame`` pins of the message they belong to (a message's
closing tokens are its own, the next one's role header is the next one's); a token that overlaps a pinned character
range is pinned. Messages after the ones with parts (the request being answered,
an argument request) are the transient ``prompt``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from itertools import accumulate

import numpy as np

from nexus_agent.kv.segments import Part, SegKind, Segment, SegmentMap
from nexus_agent.llm.model import LlamaModel

log = logging.getLogger(__name__)

Messages = list[dict[str, str]]


def render(model: LlamaModel, messages: Messages, generation_prompt: bool = True) -> tuple[str, list[int]]:
    text = model.apply_chat_template(messages, add_generation_prompt=generation_prompt)
    return text, model.tokenize(text)


def segment(
    model: LlamaModel, messages: Messages, parts: Sequence[Sequence[Part]], generation_prompt: bool = True
) -> tuple[list[int], SegmentMap | None]:
    """The tokens of ``messages`` (chat-templated) and their segments. ``parts[i]`` are message ``i``'s parts (their
    texts concatenated are its content, else ValueError); messages past ``len(parts)`` are the transient prompt.
    The map is None when the vocabulary's token bytes do not spell the rendered text."""
    if len(parts) > len(messages):
        raise ValueError(f"{len(parts)} messages' parts for {len(messages)} messages")
    for i, ps in enumerate(parts):
        if "".join(p.text for p in ps) != messages[i]["content"]:
            raise ValueError(f"message {i}: its parts do not spell its content")
    text, tokens = render(model, messages, generation_prompt)
    data = text.encode("utf-8")
    ends = list(accumulate(len(model.token_bytes(t, special=True)) for t in tokens))
    if not ends or ends[-1] != len(data):
        log.debug("token bytes do not spell the rendered chat (%s): no segments", model.path.name)
        return tokens, None
    starts = [0, *ends[:-1]]
    # each part's byte range in the rendered text; its pins too
    spans: list[tuple[int, int, Part]] = []
    pins: list[tuple[int, int]] = []
    at = 0
    for i, ps in enumerate(parts):
        content = messages[i]["content"]
        ci = text.find(content, at) if content else at
        if ci < 0:
            log.debug("message %d's content is not in the rendered chat: no segments", i)
            return tokens, None
        b = len(text[:ci].encode("utf-8"))
        for p in ps:
            n = len(p.text.encode("utf-8"))
            spans.append((b, b + n, p))
            for x, y in p.pins:
                pins.append((b + len(p.text[:x].encode("utf-8")), b + len(p.text[:y].encode("utf-8"))))
            b += n
        at = ci + len(content)
    # where each message with parts ends in the rendered text (its closing frame included), when the template
    # renders a conversation's first messages as a prefix of the whole (the chat templates of these models do)
    msg_ends = [
        len(model.apply_chat_template(messages[: i + 1], add_generation_prompt=False).encode("utf-8"))
        for i in range(len(parts))
    ]
    prefix_ok = data.startswith(
        model.apply_chat_template(messages[: len(parts)], add_generation_prompt=False).encode("utf-8")
    )
    trace_end = msg_ends[-1] if msg_ends and prefix_ok else (spans[-1][1] if spans else 0)
    turn_of = [ps[0].turn if ps else 0 for ps in parts]
    # per token: the index of its part in ``spans`` (-1: a frame inside the trace, -2: the transient prompt), and
    # for a frame, the turn of the message it belongs to (a message's closing tokens are its own)
    owner: list[int] = []
    frame_turn: list[int] = []
    k = m = 0
    for s in starts:
        while m < len(msg_ends) - 1 and msg_ends[m] <= s:
            m += 1
        frame_turn.append(turn_of[m] if prefix_ok and turn_of else -1)
        if s >= trace_end:
            owner.append(-2)
            continue
        while k < len(spans) and spans[k][1] <= s:
            k += 1
        owner.append(k if k < len(spans) and spans[k][0] <= s else -1)
    marked = np.zeros(len(data) + 1, np.int32)  # pinned bytes, as a prefix count
    for a, b in pins:
        marked[a + 1 : b + 1] = 1
    count = np.cumsum(marked)
    pinned = [bool(count[e] - count[s]) for s, e in zip(starts, ends, strict=True)]
    return tokens, SegmentMap(_segments(owner, spans, pinned, frame_turn))


def _segments(
    owner: list[int], spans: list[tuple[int, int, Part]], pinned: list[bool], frame_turn: list[int]
) -> list[Segment]:
    out: list[Segment] = []
    i, n = 0, len(owner)
    while i < n:
        j = i
        while j < n and owner[j] == owner[i] and (owner[i] != -1 or frame_turn[j] == frame_turn[i]):
            j += 1
        o = owner[i]
        if o >= 0:
            part = spans[o][2]
            runs = tuple(_runs(pinned, i, j)) if part.kind.scored else ()
            out.append(Segment(part.kind, part.turn, i, j, part.span, runs))
        elif o == -1:
            turn = frame_turn[i] if frame_turn[i] >= 0 else _frame_turn(owner, spans, i, j)
            out.append(Segment(SegKind.FRAME, turn, i, j))
        else:
            out.append(Segment(SegKind.PROMPT, -1, i, j))
        i = j
    return out


def _runs(mask: list[bool], a: int, b: int) -> list[tuple[int, int]]:
    out = []
    i = a
    while i < b:
        if mask[i]:
            j = i
            while j < b and mask[j]:
                j += 1
            out.append((i, j))
            i = j
        else:
            i += 1
    return out


def _frame_turn(owner: list[int], spans: list[tuple[int, int, Part]], a: int, b: int) -> int:
    """A frame belongs to the turn of the part it opens (the next one), else of the one it closes."""
    if b < len(owner) and owner[b] >= 0:
        return spans[owner[b]][2].turn
    if a > 0 and owner[a - 1] >= 0:
        return spans[owner[a - 1]][2].turn
    return 0
