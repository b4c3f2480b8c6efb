"""Final decision by the chat model over the candidates' compact signatures, constrained to their names.

The prompt lists the pool (``name(…) — short description``, ~25 tokens each; past the first ten, the name alone)
plus ``none``; the model then writes a tool name, constrained by the backend (:meth:`Decider.choose
<nexus_agent.backend.decision.Decider.choose>`: in-process a token trie masks every token that would not continue a
listed name; on a server, a grammar or an enum), so it can only pick a real candidate (or ``none``). Scores are the
backend's per-name confidence (in-process, the log-softmax of each candidate's first token over the allowed ones); the
decision itself is the constrained greedy decode.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from nexus_agent.backend import SIDECAR, Decider
from nexus_agent.examples import Example
from nexus_agent.registry import Tool
from nexus_agent.routing.followup import CallSoFar, PreviousTurn
from nexus_agent.routing.rerank.base import Reranker, RerankResult, history_text, register_reranker
from nexus_agent.signature import SignatureOptions, signature, truncate

NONE = "none"
DONE = "done"  # the next-step decision's "no further call"
# Name and description only: as accurate as typed parameters at half the prompt
# (docs/measurements.md#final-decision).
_SIG = SignatureOptions(max_params=0, tool_desc_chars=120)  # no parameter shown: enum/nesting limits are moot
# Candidates below the first ten are listed by name alone: their descriptions cost prefill on every escalated
# decision for candidates the model seldom takes (docs/measurements.md#final-decision).
_DESCRIBED = 10
_SIG_BARE = SignatureOptions(max_params=0, tool_desc_chars=0)
# one operation of a consolidated tool is described by what it does and its first examples (examples/operations.py)
OPERATION_DESC_CHARS = 160
# The instructions, then worked examples over a made-up ticket tracker (no registry or eval tool, no eval request):
# a small model took a consolidated write tool's generic name for a read, and a search tool for a question about
# one object. The system message is the same for every decision, so its KV is reused and the examples cost no time
# after the first one (docs/measurements.md#final-decision).
_SYSTEM = (
    "You pick the single tool that fulfils the user's latest request. Tools are listed as "
    "name(…) — description. Consider what the user wants done or wants to know, and which operation does it. "
    "A generic write tool (a name ending in _write, or one that takes a method or a state) covers every change "
    "to its object: create, edit, assign, label, close, reopen. A read tool answers questions about one object; "
    "a list tool filters a collection; a search tool finds by free text. "
    f"Answer with the tool name only. If the request needs no tool (chit-chat, general knowledge, math, "
    f"writing), answer {NONE}.\n\n"
    "Examples, for a made-up ticket tracker with the tools ticket_read (get a ticket's details and comments), "
    "ticket_write (create or update a ticket), list_tickets (list a project's tickets by state, label or date), "
    "search_tickets (search tickets by text), add_ticket_comment (comment on a ticket):\n"
    "who is working on TK-12? → ticket_read\n"
    "hand TK-12 over to maria → ticket_write\n"
    "close TK-7, we won't do it → ticket_write\n"
    "any tickets about login timeouts? → search_tickets\n"
    "open tickets in project web, newest first → list_tickets\n"
    "tell them on TK-3 that the fix ships friday → add_ticket_comment\n"
    f"what's the capital of Peru? → {NONE}"
)
# The same, where a consolidated tool's operations are listed as choices of their own (``name.operation``,
# examples/operations.py): the worked examples name the operation.
_SYSTEM_OPERATIONS = (
    "You pick the single tool that fulfils the user's latest request. Tools are listed as "
    "name(…) — description, and a tool that does several things as one entry per operation (name.operation). "
    "Consider what the user wants done or wants to know, and which operation does it: changing an existing object "
    "(close, reopen, rename, label, assign, edit) is its update operation, making a new one its create operation. "
    "A read tool answers questions about one object; a list tool filters a collection; a search tool finds by free "
    f"text. Answer with the tool name only. If the request needs no tool (chit-chat, general knowledge, math, "
    f"writing), answer {NONE}.\n\n"
    "Examples, for a made-up ticket tracker with the tools ticket_read.get (a ticket's details), "
    "ticket_read.get_comments (its comments), ticket_write.create (new ticket), ticket_write.update (change a "
    "ticket), list_tickets (list a project's tickets by state, label or date), search_tickets (search tickets by "
    "text), add_ticket_comment (comment on a ticket):\n"
    "who is working on TK-12? → ticket_read.get\n"
    "hand TK-12 over to maria → ticket_write.update\n"
    "close TK-7, we won't do it → ticket_write.update\n"
    "file a ticket: export is slow → ticket_write.create\n"
    "any tickets about login timeouts? → search_tickets\n"
    "open tickets in project web, newest first → list_tickets\n"
    "tell them on TK-3 that the fix ships friday → add_ticket_comment\n"
    f"what's the capital of Peru? → {NONE}"
)


def system_prompt(candidates: Sequence[Tool]) -> str:
    """The decision's instructions: the ones that name operations when the list has any."""
    return _SYSTEM_OPERATIONS if any(t.operation for t in candidates) else _SYSTEM


def display_names(candidates: Sequence[Tool]) -> list[str]:
    """Bare names (``name.operation`` for one operation of a consolidated tool), except ``server__name`` where two
    candidates share a bare name (e.g. github/gitlab)."""
    counts: dict[str, int] = {}
    for t in candidates:
        counts[t.label] = counts.get(t.label, 0) + 1
    return [t.label if counts[t.label] == 1 else f"{t.server}__{t.label}" for t in candidates]


# The last turn of the conversation (two messages); a follow-up sees two turns, so a small-talk turn ("thanks!")
# between a tool turn and the follow-up does not hide the turn it leans on. Only follow-ups pay for the longer
# prompt (docs/measurements.md#follow-ups).
HISTORY_MESSAGES = 2
FOLLOW_UP_HISTORY_MESSAGES = 4


def follow_up_hint(shown: str) -> str:
    """What a follow-up's prompt says about the call it follows (``shown``: that tool as the list names it)."""
    return (
        f"The request follows the call of {shown}: more results, another page or the same for something else → "
        f"usually {shown} again; one item of its result → the tool that reads one such item; undoing it → the "
        "opposite operation; another app the request names → that app's tool."
    )


def candidate_lines(candidates: Sequence[Tool]) -> list[str]:
    """One line per candidate (with its newline), as the decision lists them. Each line's text depends only on the
    tool, its display name and whether it is among the first ten: the stable renderings a compiled block holds."""
    names = display_names(candidates)
    return [
        candidate_line(t, shown, i < _DESCRIBED) for i, (t, shown) in enumerate(zip(candidates, names, strict=True))
    ]


def candidate_line(tool: Tool, shown: str, described: bool) -> str:
    sig = signature(tool, _SIG if described and not tool.operation else _SIG_BARE)
    if described and tool.operation:
        # an operation's description is what it does and its first examples: whole, not cut at a sentence's end
        sig += " — " + truncate(tool.description, OPERATION_DESC_CHARS)
    return f"- {shown}{sig[len(tool.name) :]}" + (f" [{tool.server}]" if shown == tool.label else "") + "\n"


EXAMPLE_CHARS = 90  # of a candidate's closest example request


def example_line(request: str) -> str:
    """A candidate's closest example, on the line after it (a line of its own, so the candidate's line stays the
    stable text a compiled block holds)."""
    return f'  e.g. "{truncate(request, EXAMPLE_CHARS)}"\n'


def build_messages(
    query: str,
    candidates: Sequence[Tool],
    history: Sequence[dict[str, str]],
    history_messages: int = HISTORY_MESSAGES,
    previous: PreviousTurn | None = None,
    examples: Sequence[str] = (),
) -> list[dict[str, str]]:
    """The decision's chat: the fixed system message, then the list, the conversation, a follow-up's hint and the
    request. ``previous``: the request is a follow-up of that tool turn (only used when that tool is listed);
    ``examples``: the first candidates' closest example requests, each shown under its candidate."""
    names = display_names(candidates)
    lines = [
        line[:-1] + ("\n" + example_line(ex)[:-1] if i < len(examples) and (ex := examples[i]) else "")
        for i, line in enumerate(candidate_lines(candidates))
    ]
    lines.append(f"- {NONE} — no tool needed")
    ctx = history_text(history, max_messages=history_messages)
    user = "Tools:\n" + "\n".join(lines) + "\n\n"
    if ctx:
        user += f"Earlier conversation:\n{ctx}\n\n"
    keys = [t.qualified_name for t in candidates]
    if previous is not None and previous.tool in keys:
        user += follow_up_hint(names[keys.index(previous.tool)]) + "\n\n"
    user += f"Request: {query}\nWhich tool?"
    return [{"role": "system", "content": system_prompt(candidates)}, {"role": "user", "content": user}]


def decision_prompt(
    query: str,
    candidates: Sequence[Tool],
    history: Sequence[dict[str, str]],
    previous: PreviousTurn | None,
    examples: Sequence[str] = (),
) -> tuple[list[str], list[dict[str, str]]]:
    """(the candidates' names as the list shows them, the decision's chat): a follow-up sees two turns of history."""
    n_messages = HISTORY_MESSAGES if previous is None else FOLLOW_UP_HISTORY_MESSAGES
    return display_names(candidates), build_messages(query, candidates, history, n_messages, previous, examples)


# The next-step question, after the calls so far (the system message is the decision's, so its head stays warm).
NEXT_STEP = (
    "Pick the tool for the next call only if the request still needs one: a change it asks for that no call above "
    "made yet (a search only finds the object; the change is still to be made), or a lookup that change needs. "
    f"If the calls above already did or answered everything the request asks, answer {DONE}. A failed call may be "
    "tried again with another tool."
)
RESULT_CHARS = 400  # of each earlier call's compact result, in the next-step prompt


def calls_text(calls: Sequence[CallSoFar]) -> str:
    """The calls so far, one numbered line each: tool, arguments, and the compact result (or the failure)."""
    lines = []
    for i, c in enumerate(calls, 1):
        name = c.tool.split("__", 1)[-1]
        args = json.dumps(dict(c.arguments), ensure_ascii=False, separators=(",", ":"))
        res = c.result if len(c.result) <= RESULT_CHARS else c.result[:RESULT_CHARS] + " …"
        outcome = "NOT RUN: " if not c.ran else "FAILED: " if c.failed else "done: " if c.wrote else ""
        lines.append(f"{i}. {name} {args} → {outcome}{res}")
    return "\n".join(lines)


def plan_line(example: Example, tools: Sequence[Tool] = ()) -> str:
    """A multi-step example as the next-step decision reads it: its request and its calls in order (an operation
    of a consolidated tool as ``name.operation``)."""
    params = {t.name: t.operation_param for t in tools}
    steps = []
    for c in example.calls:
        op = c.operation(params.get(c.tool)) or c.operation("method") or c.operation("action")
        steps.append(f"{c.tool}.{op}" if op else c.tool)
    return f'"{example.request}" → ' + ", then ".join(steps)


def next_step_messages(
    query: str, candidates: Sequence[Tool], calls: Sequence[CallSoFar], examples: Sequence[Example] = ()
) -> list[dict[str, str]]:
    """The next-step decision's chat: the decision's system message, the list with ``done`` instead of ``none``,
    the closest multi-step examples (other objects: the order of calls is what they show), the request, the calls so
    far and the question."""
    lines = [line[:-1] for line in candidate_lines(candidates)]
    lines.append(f"- {DONE} — the request is fully carried out")
    shown = "".join(f"{plan_line(ex, candidates)}\n" for ex in examples)
    plans = f"\n\nRequests done in several calls (other objects):\n{shown}" if shown else "\n\n"
    user = (
        "Tools:\n" + "\n".join(lines) + plans.rstrip("\n") + f"\n\nRequest: {query}\n\nCalls made for it so far:\n"
        f"{calls_text(calls)}\n\n{NEXT_STEP}\nWhich tool next?"
    )
    return [{"role": "system", "content": system_prompt(candidates)}, {"role": "user", "content": user}]


@register_reranker("llm-choice")
class LLMChoiceReranker(Reranker):
    """The decision on ``decider``, in the ``SIDECAR`` lane (its head stays warm there between turns)."""

    uses_llm = True

    def __init__(self, decider: Decider) -> None:
        self.decider = self._ask = decider  # ``decider`` is the base class's optional view of it
        # the tokens every decision's prompt starts with (the system message); the engine's arena keeps their KV
        # warm between turns, in the sidecar's slot or as a donor for any lane, and a process loads them from disk
        self._variants = {
            system: [[{"role": "system", "content": system}, {"role": "user", "content": u}] for u in "ab"]
            for system in (_SYSTEM, _SYSTEM_OPERATIONS)
        }
        self.head_tokens = decider.head(self._variants[_SYSTEM])

    def warm(self, system: str = _SYSTEM) -> None:
        self._ask.warm(self._variants[system], lane=SIDECAR)

    def rerank(
        self,
        query: str,
        candidates: Sequence[Tool],
        history: Sequence[dict[str, str]] = (),
        previous: PreviousTurn | None = None,
        examples: Sequence[str] = (),
    ) -> RerankResult:
        names, messages = decision_prompt(query, candidates, history, previous, examples)
        self.warm(messages[0]["content"])  # the head from disk or the arena, never decoded with the request
        # the candidate lines are separate segments, so a compiled block can stand in for each (--splice)
        res = self._ask.choose(messages, [*names, NONE], lane=SIDECAR, stable=candidate_lines(candidates))
        # a server's unconstrained reply that names no candidate: retrieval's pick stands
        picked = res.name if res.name is not None else (names[0] if names else NONE)
        choice = None if picked == NONE else candidates[names.index(picked)].key
        return RerankResult(scores=res.scores[: len(names)], choice=choice, n_prompt_tokens=res.n_prompt_tokens)

    def next_step(
        self, query: str, candidates: Sequence[Tool], calls: Sequence[CallSoFar], examples: Sequence[Example] = ()
    ) -> RerankResult:
        names = display_names(candidates)
        messages = next_step_messages(query, candidates, calls, examples)
        self.warm(messages[0]["content"])
        res = self._ask.choose(messages, [*names, DONE], lane=SIDECAR, stable=candidate_lines(candidates))
        picked = res.name if res.name is not None else DONE  # a server's reply that names nothing: stop
        choice = None if picked == DONE else candidates[names.index(picked)].key
        return RerankResult(scores=res.scores[: len(names)], choice=choice, n_prompt_tokens=res.n_prompt_tokens)
