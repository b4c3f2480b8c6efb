"""Follow-ups: a request that leans on the conversation ("and the ones before that?", "undo that", "details on
the critical one") names neither its tool nor its object, so retrieval over its own words misses the tool.

What the router adds for such a request (docs/measurements.md#follow-ups measured each part on dialogues):

- **context retrieval**: the request is also scored together with the previous tool turn's request and that tool's
  name, and the two rankings are averaged, so the conversation's topic pulls its tools into the pool;
- **a prior** on the previous turn's tool, its *siblings* (same server, same object: ``list_releases`` →
  ``get_release_by_tag``, ``star_repository`` → ``unstar_repository``) and its server;
- the previous tool and its closest siblings are kept in the pool the LLM decision sees, and the decision is asked.

Only a request with history *and* a cue word (:func:`leans_on`) counts as a follow-up: a request that stands on
its own pays nothing. Shapes: priors are added to fused scores, which live in [0, 1] (see ``router``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nexus_agent.registry import Tool
from nexus_agent.routing.query import QUOTED


@dataclass(frozen=True)
class PreviousTurn:
    """The most recent earlier turn that called a tool: its request and the tool's qualified name."""

    request: str
    tool: str


@dataclass(frozen=True)
class CallSoFar:
    """A call already made for the current request, as the next-step decision reads it: the tool's qualified name,
    its arguments, a compact form of its output (ids, numbers, names, URLs, SHAs and paths kept) and whether it
    failed."""

    tool: str
    arguments: Mapping[str, Any]
    result: str
    failed: bool = False
    wrote: bool = False  # a tool that may write, and it succeeded
    ran: bool = True  # False: refused before it ran (an identifier nobody gave), so a lookup may make it possible
    # its whole output was an empty result set (``agent.history.carries_nothing``, judged on the output itself: the
    # compact ``result`` of ``{"total_count": 0, "items": []}`` reads "0 items:")
    empty: bool = False


# Verbs of a change, in the base form a request for one uses ("close that issue", "can you assign …"): a request
# without one asks to be told something, and a successful read is then its last call (the next-step decision is not
# asked). "closed issues?" and "the most comments" are no request for a change; "open" and "file" count only before
# an article ("open an issue", not "the open PRs"; "file an issue", not "the file"). Reworded tune requests measured
# the later additions: "file an issue titled …, then comment on issue #3" counted one change and stopped after the
# issue was made.
_CHANGE = re.compile(
    r"\b(?:close|reopen|assign|unassign|comment|label|tag|create|add|update|change|edit|rename|move|delete|remove|"
    r"merge|squash|write|fix|replace|commit|stage|unstage|check\s+out|checkout|switch|bump|mark|ping|make|put|set|"
    r"give|start|leave|tick|approve|post|send|reply|star|unstar|fork|push|upload|archive|notify|submit|cancel|lock|"
    r"unlock|reset|revert|restore|append|insert|copy|double|halve|triple|increase|decrease|reduce|save|swap|"
    r"react|upvote|open\s+(?:an?|the|new)|file\s+(?:an?|the|new)|let\s+\w+\s+know)\b",
    re.IGNORECASE,
)


# A step after a change that a request asks for: "… and then show me", "confirm it shows up", "make sure …".
_CHECK = re.compile(r"\b(?:then|confirm|verify|make\s+sure|show\s+me)\b", re.IGNORECASE)


def asks_for_change(query: str) -> bool:
    """Whether ``query`` asks for something to be changed (a verb of ``_CHANGE``), not only to be told."""
    return bool(_CHANGE.search(query))


# where one step of a request ends: a comma, semicolon or sentence end before a space, "and", and before "then"
_CLAUSE = re.compile(r"[,;.!?]+(?:\s+|$)|\s+and\s+|\s+(?=then\b)", re.IGNORECASE)


def steps_named(query: str) -> int:
    """How many changes and checks ``query`` names (0: it asks to be told something): its clauses (split at commas,
    "and", "then") with a change verb or a check in them, outside quoted values. Once as many writes have
    succeeded, the request is carried out without asking the next-step decision.

    A clause counts once: counting every verb, "Create a label called wontfix in acme/docs, colour ffffff" named
    two changes ("create", "label"), and after the label was made the decision went on to ``create_repository``
    (measured on the check split)."""
    changes = changes_named(query)
    if not changes:
        return 0
    return changes + sum(1 for c in _clauses(query) if _CHECK.search(c) and not _CHANGE.search(c))


def changes_named(query: str) -> int:
    """How many changes ``query`` names: its clauses with a change verb (as :func:`steps_named`, without checks)."""
    return sum(1 for c in _clauses(query) if _CHANGE.search(c))


def _clauses(query: str) -> list[str]:
    """The steps of ``query``, split at :data:`_CLAUSE`, with its quoted values blanked (a value is not a step)."""
    return _CLAUSE.split(QUOTED.sub(" ", query))


# Words that only make sense against something said before: pronouns and demonstratives, ordinals and relative
# positions ("the second one", "the ones before"), repetition and reversal ("the same", "again", "undo", "put it
# back"). "one"/"ones" cover "the critical one". Measured on the dialogues' standalone-style requests as well: a cue
# in a request that stands on its own costs an LLM decision, not a wrong tool.
_CUE = re.compile(
    r"\b(?:it|its|this|that|these|those|them|they|there|one|ones|first|second|third|fourth|fifth|last|other|next|"
    r"previous|prior|older|newer|earlier|before|more|rest|remaining|same|again|too|also|undo|revert|back|instead|"
    r"likewise|above|latter|former)\b",
    re.IGNORECASE,
)


def leans_on(query: str) -> bool:
    """Whether ``query`` has a word that points back into the conversation (see ``_CUE``)."""
    return bool(_CUE.search(query))


# An object a request names itself: a URL, a path, owner/repo, #N, a token with a digit (ids, versions, run-8F5J…),
# quoted text. "Before I commit in /home/dana/shop, …" has a cue word and stands on its own.
_OWN_OBJECT = re.compile(r"https?://|(?<![\w])[~.]?/[\w.-]+|\b[\w.-]+/[\w.-]+\b|#\d+|\b\w*\d\w*\b|\"[^\"]+\"|`[^`]+`")


def names_own_object(query: str) -> bool:
    """Whether ``query`` names an object of its own (``_OWN_OBJECT``)."""
    return bool(_OWN_OBJECT.search(query))


# Operation words: what remains of a tool's name without them is the object it works on.
_VERBS = frozenset(
    (  # noqa: SIM905 (a word list reads better as words)
        "list get create update delete remove add set read write search find query manage run trigger mark request "
        "submit resolve unresolve dismiss assign merge fork star unstar push move edit describe fetch retrieve post "
        "reply upload download close open reopen lock unlock cancel show make new all my by for of the a an to from "
        "with in on batch bulk multiple info details detail"
    ).split()
)


def _stem(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def objects(tool: Tool) -> frozenset[str]:
    """The object words of ``tool``'s name (``get_release_by_tag`` → {release, tag}); the server's name and
    operation words are left out."""
    server = set(re.split(r"[-_]", tool.server.lower()))
    words = (w for w in re.split(r"[_\-]+|(?<=[a-z])(?=[A-Z])", tool.name) if w)
    return frozenset(_stem(w.lower()) for w in words if w.lower() not in _VERBS and w.lower() not in server)


def siblings(tool: Tool, tools: Iterable[Tool]) -> list[str]:
    """Qualified names of the tools on ``tool``'s server that share an object word with it, most shared first
    (``tool`` itself excluded)."""
    mine = objects(tool)
    scored = []
    for t in tools:
        if t.server != tool.server or t.qualified_name == tool.qualified_name:
            continue
        shared = len(mine & objects(t))
        if shared:
            scored.append((-shared, t.qualified_name))
    return [q for _, q in sorted(scored)]


def context_text(query: str, previous: PreviousTurn) -> str:
    """What context retrieval embeds: the request, then the previous request and its tool's name in words."""
    tool_words = previous.tool.split("__", 1)[-1].replace("_", " ")
    return f"{query} (after: {previous.request}; {tool_words})"


# The agent's own record of a call in an assistant message: "(used list_releases {...})" (agent.prompts.call_note)
_CALL_NOTE = re.compile(r"\(used ([\w.\-]+) [\[{]")


def named_tools(message: Mapping[str, Any]) -> list[str]:
    """Tool names a history message says were called, in order: OpenAI-style ``tool_calls``, a ``tool`` message's
    ``name``, or the agent's call notes in an assistant message's text. Names are as written (bare or qualified)."""
    names: list[str] = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function", call) if isinstance(call, Mapping) else None
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            names.append(fn["name"])
    if message.get("role") == "tool" and isinstance(message.get("name"), str):
        names.append(message["name"])
    if message.get("role") == "assistant":
        names += _CALL_NOTE.findall(str(message.get("content") or ""))
    return names


def resolve_name(name: str, tools: Mapping[str, Tool]) -> str | None:
    """The qualified name ``name`` (bare, ``server__name`` or ``server/name``) stands for; None when unknown or
    when several servers share the bare name."""
    name = name.replace("/", "__", 1) if "/" in name else name
    if name in tools:
        return name
    hits = [q for q, t in tools.items() if t.name == name]
    return hits[0] if len(hits) == 1 else None


def user_turns(history: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[str]]]:
    """``(request, tools named after it)`` per user message of ``history``, newest first."""
    out: list[tuple[str, list[str]]] = []
    for m in history:
        if m.get("role") == "user":
            out.append((str(m.get("content") or ""), []))
        elif out:
            out[-1][1].extend(named_tools(m))
    return out[::-1]
