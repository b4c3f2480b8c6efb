"""The user's request, parsed once, on arrival: the turn's every step reads this object (its words, numbers,
quoted values, the repositories and objects it names, whether it asks for a change or a question), not the raw
string again.

Before, the view, the grounding rules (seven times in one turn), the policy and the loop each split the string into
words and searched it with their own patterns. Functions that take a request accept the raw string too
(:meth:`Request.of`), for callers outside a turn (evaluation, tests); inside a turn they get the parsed object.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from nexus_agent.routing.followup import asks_for_change, steps_named
from nexus_agent.routing.query import OBJECT_REF, is_question, names_branch
from nexus_agent.signature import FILLER, words

_REPO = re.compile(r"[\w.-]+/[\w.-]+")
# a standalone integer ("issue 7", "2026"), not part of a word, a version or an owner/repo, nor a "+1" (a reaction: a
# reworded tune request, "React with +1 to the acme/api issue requesting API keys", commented on issue 1)
NUMBER = re.compile(r"(?<![\w.+])\d+(?![\w])")
# a slot the request leaves for a value it does not know yet: "as 'September: <amount>'", "fix/issue-<that number>",
# "mentioning them by @login"; not an HTML tag ("replace <div> with <section>") or an address (bob@login.com)
_SLOT = re.compile(
    r"(?<!\w)<[A-Za-z][^<>\n]{2,59}>|(?<![\w.])@(?:login|username|handle|user)\b(?!\.?\w)", re.IGNORECASE
)
_TAGS = frozenset(
    {
        "html", "head", "body", "title", "meta", "link", "script", "style", "div", "span", "section", "article",
        "aside", "header", "footer", "main", "nav", "form", "input", "button", "label", "select", "option", "table",
        "thead", "tbody", "code", "pre", "strong", "img",
    }
)  # fmt: skip
# the value a request dictates after a colon that ends it: "…: Looks good once the toggle lands." (a colon followed
# by a space, so no URL or time; the clause holds no further colon), when what comes before asks for the change
_DICTATED = re.compile(r"(?<=\w):\s+[^:]+$")
_QUOTED = re.compile(r"'([^']+)'|\"([^\"]+)\"|“([^”]+)”|‘([^’]+)’")
# a request for the whole output rather than the fields it names (the answer view)
_DETAIL = re.compile(
    r"\b(details?|detailed|in full|full (?:text|output|content|body|description|list)|everything|"
    r"all (?:the )?(?:fields|information|info|data)|raw|verbatim|whole)\b",
    re.I,
)
# words a request names any object with, so they tell no object from another ("the bug about …", "that issue")
GENERIC = frozenset({"issue", "issues", "pr", "prs", "pull", "request", "bug", "about", "please", "can", "you"})
# FILLER is a schema's filler: "page", "content" or "name" say nothing in a parameter's description, but in a
# request they may describe the object ("the pagination bug" had no describing word left, and its lookup searched
# for "assign bob kim")
_OBJECT_WORDS = frozenset({"pagination", "content", "text", "results", "result", "value", "filter"})
# the words a request asks for its change with: what to do, not which object
CHANGE_WORDS = frozenset(
    {
        "assign", "close", "reopen", "tag", "rename", "retitle", "mark", "merge", "give", "add", "remove", "delete",
        "set", "change", "update", "create", "make", "put", "let", "know", "ping", "ask", "move", "keep", "want",
        "need", "could", "would", "should", "now", "done", "back", "fixed", "already", "whatever", "has", "have",
        "squash", "rebase", "sure",
    }
)  # fmt: skip
# words that say something is wrong, not what: "the broken search box" (no such issue) shared only "broken" with
# "Broken link to the API reference in the FAQ", and that issue was reopened
PROBLEM_WORDS = frozenset(
    {
        "broken", "breaks", "crash", "crashes", "crashing", "crashed", "error", "errors", "fail", "fails",
        "failing", "failed", "failure", "wrong", "problem", "problems", "bugs", "fix", "work", "works", "working",
    }
)  # fmt: skip
# what Request.describing leaves out of a request's words
_NOT_DESCRIBING = (FILLER - _OBJECT_WORDS) | GENERIC | CHANGE_WORDS | PROBLEM_WORDS


def _asks_for_change(word: str) -> bool:
    """Whether ``word`` is one of :data:`CHANGE_WORDS` inflected: "closes", "closed", "keeping", "merged" (a
    request's "the issue it closes is closed" asks for a change; it does not describe the object)."""
    stems = {word[:-1] for x in "sd" if word.endswith(x)} | {word[:-2] for x in ("ed", "es") if word.endswith(x)}
    stems |= {word[:-3], word[:-4]} if word.endswith("ing") else set()  # keeping; "tagging"
    # four letters count: "adds" described the object, and "the acme/api PR that adds it" (no such PR) took the one
    # row "Add token bucket rate limiter" a search for "adds" found (a reworded tune request)
    return len(word) > 3 and bool(stems & CHANGE_WORDS)


@dataclass(frozen=True)
class Request:
    """One request as the turn reads it (see module docstring). Fields are derived from ``text`` by :meth:`parse`;
    the slower ones (a date in the words) when first read."""

    text: str
    words: frozenset[str] = field(default_factory=frozenset)  # signature.words of the text
    repos: tuple[str, ...] = ()  # "owner/repo" as written
    numbers: tuple[str, ...] = ()  # standalone integers as written ("issue 7", "#12", "2026")
    refs: tuple[str, ...] = ()  # the numbers written as "#N"
    quoted: tuple[str, ...] = ()  # values in quotes: a comment's text, a title
    slots: tuple[str, ...] = ()  # placeholders for values it does not know yet ("<amount>", "@login")
    question: bool = False  # asks to be told something (routing.query.is_question)
    change: bool = False  # asks for something to be changed (routing.followup.asks_for_change)
    steps: int = 0  # changes and checks it names (routing.followup.steps_named)
    detail: bool = False  # asks for the whole output

    @classmethod
    def parse(cls, text: str) -> Request:
        return cls(
            text=text,
            words=frozenset(words(text)),
            # not a branch named like one ("start a branch called feature/rate-limit"): its words describe
            repos=tuple(m.group() for m in _REPO.finditer(text) if not names_branch(text, m.start(), m.end())),
            numbers=tuple(NUMBER.findall(text)),
            refs=tuple(OBJECT_REF.findall(text)),
            quoted=tuple(next(g for g in m.groups() if g) for m in _QUOTED.finditer(text)),
            slots=tuple(dict.fromkeys(m for m in _SLOT.findall(text) if m.strip("<>").lower() not in _TAGS)),
            question=is_question(text),
            change=asks_for_change(text),
            steps=steps_named(text),
            detail=bool(_DETAIL.search(text)),
        )

    @staticmethod
    def of(request: Request | str) -> Request:
        """``request`` as a parsed request (parsed now when it is still the raw string)."""
        return request if isinstance(request, Request) else Request.parse(request)

    @cached_property
    def describing(self) -> frozenset[str]:
        """The words that describe the object the request is about: its words of 3 letters or more, less filler,
        the words any object is named with (``GENERIC``), the words that ask for the change (``CHANGE_WORDS``) or
        say that something is wrong (``PROBLEM_WORDS``), the words of the repositories it names (every row of a
        repository's search has them) and those of a value it dictates after a colon at its end (:data:`_DICTATED`)."""
        scope = {w for ref in self.repos for w in words(ref)}
        # a value the request dictates after a colon at its end is what to write, not what the object is ("Leave a
        # comment on the acme/api rate limiting PR: needs a changelog entry" searched for "changelog entry")
        own = self.words
        if (m := _DICTATED.search(self.text)) is not None and asks_for_change(self.text[: m.start()]):
            # only after the change is asked for: "…#49 sub-issues: move the daylight saving one" is the request
            own = frozenset(words(self.text[: m.start()]))
        kept = {w for w in own if len(w) > 2 and not _asks_for_change(w)}
        return frozenset(kept - _NOT_DESCRIBING - scope)

    def __str__(self) -> str:
        return self.text
