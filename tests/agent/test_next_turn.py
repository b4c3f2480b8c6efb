"""Between turns the agent prefills the history the next turn's prompts start with (``warm_next``): the lane then
holds it exactly, the next prompt decodes only what follows, and its output is what a cold prefill gives. A request
that arrives meanwhile stops the prefill after one chunk and goes on from what the lane holds."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nexus_agent.agent.history import Conversation, Turn
from nexus_agent.agent.prompts import SYSTEM_CHAT, SYSTEM_MAIN
from nexus_agent.agent.turn import next_heads
from nexus_agent.backend import LocalBackend
from nexus_agent.backend.local import PREFILL_CHUNK, common_head
from nexus_agent.engine import CHAT, MAIN, Engine, EngineConfig


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalBackend]:
    eng = Engine(EngineConfig(model="tiny", n_ctx=2048, n_batch=64, n_threads=1))
    yield LocalBackend(eng, heads=False)
    eng.close()


def _convo() -> Conversation:
    turns = [
        Turn(
            user="list the open pull requests in acme/web",
            tool="github__list_pull_requests",
            arguments={"owner": "acme", "repo": "web", "state": "open"},
            tool_result='2 items: {"number": 4, "title": "Add dark mode toggle"}; {"number": 6, "title": "Fix login"}',
            answer="There are two open pull requests: #4 Add dark mode toggle and #6 Fix login.",
        )
    ]
    return Conversation(turns)


def test_next_heads_are_the_history_under_each_lanes_system_prompt() -> None:
    convo = _convo()
    heads = next_heads(convo, lane=MAIN, window_turns=4, full_trace=False)
    assert [lane for _, lane in heads] == [MAIN, CHAT]
    for (a, b), system in zip([v for v, _ in heads], (SYSTEM_MAIN, SYSTEM_CHAT), strict=True):
        assert a[0] == b[0] == {"role": "system", "content": system}
        assert a[1:-1] == b[1:-1] == convo.window(4) and a[-1] != b[-1]
    # a budgeted lane answers everything in its own lane: nothing for CHAT
    assert [lane for _, lane in next_heads(convo, lane=5, window_turns=4, full_trace=True)] == [5]
    assert next_heads(Conversation(), lane=MAIN, window_turns=4, full_trace=False) == []


def test_prefill_holds_the_head_and_the_next_chat_decodes_only_the_rest(backend: LocalBackend) -> None:
    eng = backend.engine
    variants, _ = next_heads(_convo(), lane=MAIN, window_turns=4, full_trace=False)[0]
    head = common_head([eng.tokenize_chat(v) for v in variants])
    assert len(head) > 2 * PREFILL_CHUNK  # several chunks
    nxt = [*variants[0][:-1], {"role": "user", "content": "who opened the first one?"}]

    eng.truncate(MAIN, 0)
    cold = backend.chat(nxt, lane=MAIN, max_tokens=12, keep=False)
    assert cold.n_reused < len(head)

    eng.truncate(MAIN, 0)
    assert backend.prefill(variants, MAIN, lambda: False) == len(head)
    lane = eng.lane(MAIN)
    assert lane.tokens[: len(head)] == head and lane.exact >= len(head)
    warm = backend.chat(nxt, lane=MAIN, max_tokens=12, keep=False)
    assert warm.n_reused >= len(head)
    assert warm.tokens == cold.tokens  # the same greedy reply: prefilled KV is what a prefill computes
    # held already: nothing more to decode
    assert backend.prefill(variants, MAIN, lambda: False) == len(head)


def test_a_stopped_prefill_ends_after_one_chunk_and_the_next_chat_continues(backend: LocalBackend) -> None:
    eng = backend.engine
    variants, _ = next_heads(_convo(), lane=MAIN, window_turns=4, full_trace=False)[0]
    head = common_head([eng.tokenize_chat(v) for v in variants])
    eng.truncate(MAIN, 0)
    calls = iter([False, True])
    held = backend.prefill(variants, MAIN, lambda: next(calls))
    assert held == PREFILL_CHUNK < len(head)
    nxt = [*variants[0][:-1], {"role": "user", "content": "who opened the first one?"}]
    gen = backend.chat(nxt, lane=MAIN, max_tokens=12, keep=False)
    assert gen.n_reused == PREFILL_CHUNK
