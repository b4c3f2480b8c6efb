"""Whether a turn runs the tool it was routed to: a pure decision over the tool, its arguments and the conversation.

:func:`decide` returns one of

* :class:`Run`: call the tool now;
* :class:`Ask`: ask the user first, and refuse with ``Ask.refusal`` if the answer is no;
* :class:`Skip`: do not use the tool, answer the request without it (``tool_skipped``);
* :class:`Refuse`: stop the turn with an ``arguments`` error (the arguments name an object nobody gave).

The rules, in order:

1. a tool *may write* when its MCP annotations say ``destructiveHint: true`` or do not say ``readOnlyHint: true``;
2. a question (:func:`~nexus_agent.routing.query.is_question`) routed to a tool that *declares* a write
   (``readOnlyHint: false``) and names none of the objects the write needs (an identifier was made up, or no
   required value comes from the conversation) is not about one: Skip;
3. a tool that may write, with a required identifier (``issue_number``, ``pullNumber`` …) that neither the
   conversation nor an earlier call of the same turn (the agent loop's ``results``) gives, a local path nobody
   named (``grounding.unnamed_paths``) or a branch to start from nobody named (``grounding.unnamed_branches``):
   Refuse, whatever ``--yes`` says;
4. a tool that may write: Ask, unless ``auto_yes``; a question to a tool that declares a write asks even then;
5. otherwise Run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nexus_agent.agent.grounding import (
    gives_a_required_value,
    ungrounded_identifiers,
    unnamed_branches,
    unnamed_paths,
)
from nexus_agent.agent.request import Request
from nexus_agent.registry import Tool

SKIP_QUESTION = "the request is a question and names nothing this tool would change; answered without it"
REFUSED_QUESTION = (
    "the request is a question, and a question does not run a tool that changes data without a yes, even with "
    "--yes; ask for the change itself to run it"
)
REFUSED_UNCONFIRMED = "it can modify data and was not confirmed (pass --yes to allow such tools)"


@dataclass(frozen=True)
class Run:
    """Call the tool without asking. ``may_write``: the answer reports what was done rather than reads data."""

    may_write: bool


@dataclass(frozen=True)
class Ask:
    """Ask for a yes first; on a no, stop with a ``confirm`` error whose message is ``refusal``."""

    refusal: str
    may_write: bool = True  # only a tool that may write is held


@dataclass(frozen=True)
class Skip:
    """Answer without the tool; ``reason`` is the ``tool_skipped`` event's, for people."""

    reason: str


@dataclass(frozen=True)
class Refuse:
    """Stop the turn with an ``arguments`` error whose message is ``reason``."""

    reason: str


Decision = Run | Ask | Skip | Refuse


def needs_confirmation(annotations: Mapping[str, Any] | None) -> bool:
    """MCP annotations: destructive tools, and tools that do not declare themselves read-only, need a yes.

    ``destructiveHint`` defaults to true in the MCP spec when a tool is not read-only, so a missing
    ``readOnlyHint`` is treated as "may write".
    """
    ann = annotations or {}
    if ann.get("destructiveHint") is True:
        return True
    return ann.get("readOnlyHint") is not True


def decide(
    tool: Tool,
    annotations: Mapping[str, Any] | None,
    arguments: Mapping[str, Any],
    request: Request | str,
    window: list[dict[str, str]],
    auto_yes: bool,
    results: Sequence[str] = (),
) -> Decision:
    """What to do with ``tool`` called with ``arguments`` for ``request``, given the earlier messages ``window``
    (the pruned history, chat messages) and ``--yes`` (``auto_yes``). ``annotations`` are the live MCP ones, which
    decide "may write"; ``tool.declares_write`` (the declared ``readOnlyHint: false``) decides what a question is.
    ``results``: the outputs of the calls this turn already made (the agent loop); an identifier they returned
    counts as given."""
    req = Request.of(request)
    may_write = needs_confirmation(annotations)
    # A write must act on an object the user named: a made-up issue or PR number would change the wrong one. Reads
    # are not checked: a wrong read changes nothing, and read-only tools such as sequentialthinking take counters
    # named like identifiers.
    made_up = ungrounded_identifiers(tool, arguments, req, window, results) if may_write else {}
    # so must a write to a local file: a path nobody named was made up from a description ("the Q2 report")
    paths = unnamed_paths(tool, arguments, req, window, results) if may_write else {}
    # and a branch it starts from: one written as a slug of a description ("the branch of the rate limiting PR")
    branches = unnamed_branches(tool, arguments, req, window, results) if may_write else {}
    # A question is answered, not acted on, so --yes does not cover a write routed from one. Only a declared write
    # counts, as for the routing penalty: tools that declare nothing (google-maps, slack) answer questions with
    # reads (docs/measurements.md#questions-and-writes).
    question_to_writer = tool.declares_write and req.question
    if question_to_writer and (
        made_up or paths or branches or not gives_a_required_value(tool, arguments, req, window)
    ):
        return Skip(SKIP_QUESTION)
    if branches:
        return Refuse(
            f"{tool.name} needs {', '.join(branches)}, and no such branch is named in the request or was found by a "
            f"lookup, so it was not run (the model wrote {json.dumps(branches, ensure_ascii=False)}); say which one "
            "you mean"
        )
    if paths:
        return Refuse(
            # the refusal's "not run" stands right before "wrote", so the claim check reads no change in it
            f"{tool.name} needs {', '.join(paths)}, and no such file is named in the request or was found by a "
            f"lookup, so it was not run (the model wrote {json.dumps(paths, ensure_ascii=False)}); say which one "
            "you mean"
        )
    if made_up:
        return Refuse(
            f"{tool.name} needs {', '.join(made_up)}, which the conversation does not give "
            f"(the model wrote {json.dumps(made_up, ensure_ascii=False)}), so it was not run; say which one you mean"
        )
    if may_write and (question_to_writer or not auto_yes):
        why = REFUSED_QUESTION if question_to_writer and auto_yes else REFUSED_UNCONFIRMED
        return Ask(f"{tool.name} was not run: {why}")
    return Run(may_write)
