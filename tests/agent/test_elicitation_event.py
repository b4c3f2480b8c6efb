"""The Python API's side of elicitation: a server's question during a tool call becomes an ``elicitation`` event of
that turn, and the app's answer (from any thread) goes back. No model is loaded: the agent is not started."""

from __future__ import annotations

import asyncio
import threading

from nexus_agent.agent.api import AgentConfig, NexusAgent
from nexus_agent.agent.events import ElicitationEvent, Event
from nexus_agent.mcp import ElicitationRequest

SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "default": "Ada"}}}


async def test_an_elicitation_is_an_event_of_the_calling_turn_and_the_app_answers_it() -> None:
    agent = NexusAgent(AgentConfig(yes=True))  # yes approves tool calls; it never answers an elicitation
    events: list[Event] = []
    agent._asking["github"] = [events.append]
    ask = asyncio.ensure_future(agent._elicit(ElicitationRequest("github", "Your name?", schema=SCHEMA)))
    while not events:
        await asyncio.sleep(0.01)  # polling for the emitted event, not ordering
    assert not ask.done()  # nothing answers on the app's behalf
    [event] = events
    assert isinstance(event, ElicitationEvent)
    assert (event.server, event.message, event.requested_schema) == ("github", "Your name?", SCHEMA)
    assert event.model_dump()["type"] == "elicitation"  # serialisable for --json like every event
    answer = threading.Thread(target=event.accept, args=({"name": "Grace"},))  # an app thread answers
    answer.start()
    reply = await asyncio.wait_for(ask, 30)
    answer.join()
    assert (reply.action, reply.content) == ("accept", {"name": "Grace"})
    event.decline()  # a second answer is ignored
    assert ask.result() is reply


async def test_decline_cancel_and_nobody_to_ask() -> None:
    agent = NexusAgent(AgentConfig())
    assert (await agent._elicit(ElicitationRequest("github", "?"))).action == "cancel"  # no turn calls github
    for answer in ("decline", "cancel"):
        events: list[Event] = []
        agent._asking["github"] = [events.append]
        ask = asyncio.ensure_future(agent._elicit(ElicitationRequest("github", "?")))
        while not events:
            await asyncio.sleep(0.01)  # polling for the emitted event, not ordering
        event = events[0]
        assert isinstance(event, ElicitationEvent)
        getattr(event, answer)()
        reply = await asyncio.wait_for(ask, 30)
        assert (reply.action, reply.content) == (answer, None)
