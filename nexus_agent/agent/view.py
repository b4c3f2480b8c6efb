"""What the answer step reads of a tool's output: a compact, structured view instead of the whole payload.

Prefilling the whole output (up to 6,000 characters, ~2,000 tokens) before the first answer token cost 20 s on two
cores for three issues, most of it bodies, avatar URLs, timestamps and page cursors that the answer never names. The
view keeps:

* every row of a list, up to ``max_items`` (a note says how many were left out, so the answer can say so too);
* for each row or object: the fields that identify it (number, title, name, login, state, path, a short SHA, …),
  the fields the request names (``labels`` for "…with their labels", ``created_at`` for "when…", a body for "what
  does it say"), and short scalars of a single object;
* a nested object as its identifying value (``user`` → its login, ``commit`` → its message's first line), a list of
  objects as their names.

The whole output is shown instead when the request asks for details ("show me the details of…", "the full …") or
when the output is not JSON (a file's text, a diff): then the request is about the content itself.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from nexus_agent.agent.grounding import mentioned
from nexus_agent.agent.request import Request
from nexus_agent.signature import words


class AnswerView(StrEnum):
    """What an answer reads of a tool's output: ``compact`` (this module's view) or ``full`` (the whole output)."""

    COMPACT = "compact"
    FULL = "full"


MAX_TOOL_CHARS = 6000  # the whole output, shown on demand, is cut here
MAX_ITEMS = 20  # rows of a list the answer reads (AgentConfig.answer_items)

# identifying fields, kept in every row (in this order of preference when a nested object is cut to one value)
_IDS = (
    "number",
    "title",
    "name",
    "full_name",
    "login",
    "tag_name",
    "path",
    "ref",
    "sha",
    "state",
    "status",
    "merged",
    "draft",
    "conclusion",
    "commit",  # a commit listing's row: its message's first line
)
_NESTED_IDS = ("login", "name", "full_name", "title", "ref", "tag_name", "path", "message", "sha")
_SHORT = 80  # a string longer than this is a body, not a label: kept only when the request names it
_BODY = 600  # a named body is kept up to this many characters
# words by which a request names a field: the field's own words, and these
_SYNONYMS = {
    "user": {"author", "opened", "wrote", "reporter", "who", "creator"},
    "author": {"who", "wrote", "by"},
    "assignees": {"assigned", "assignee", "who", "owner"},
    "created_at": {"when", "date", "dates", "created", "opened", "oldest", "newest", "age"},
    "updated_at": {"updated", "last"},
    "body": {"say", "says", "describe", "description", "content", "text", "details", "mention"},
    "comments": {"comment", "comments", "discussion"},
    "html_url": {"link", "links", "url", "urls"},
    "url": {"link", "links", "url", "urls"},
    "labels": {"label", "labels", "labeled", "tagged", "tag"},
    # a pull request's branch: "from the branch of the rate limiting PR" had no branch in the search's rows, and
    # the branch was written as the pull request's number
    "head": {"branch", "branches"},
    "description": {"about", "describe", "description", "what"},
    "message": {"message", "messages", "said", "say", "commit", "commits"},
}


@dataclass(frozen=True)
class View:
    """``text``: what the answer prompt shows; ``full``: whether it is the whole output (cut at ``MAX_TOOL_CHARS``);
    ``items``: rows of the list shown, ``total``: rows the list had (None: not a list)."""

    text: str
    full: bool
    items: int | None = None
    total: int | None = None


def wants_detail(request: Request | str) -> bool:
    """Whether the request asks for the whole output rather than the fields it names."""
    return Request.of(request).detail


def whole(text: str, limit: int = MAX_TOOL_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + " …(truncated)"


def answer_view(text: str, request: Request | str, max_items: int = MAX_ITEMS) -> View:
    """The view of one tool output ``text`` that answering ``request`` reads (module docstring)."""
    req = Request.of(request)
    if req.detail:
        return View(whole(text), full=True)
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return View(whole(text), full=True)  # text: a file, a diff, a message — the content is the point
    asked = set(req.words)
    rows, rest = _rows(data)
    if rows is None:
        if not isinstance(data, dict):
            return View(whole(text), full=True)
        return View(whole(_dump(_object(numbered(data), asked, single=True))), full=False)
    shown = [_object(r, asked) if isinstance(r, dict) else r for r in rows[:max_items]]
    lines = [_dump(r) for r in shown]
    meta = {k: v for k, v in (rest or {}).items() if isinstance(v, int | float | bool) and not isinstance(v, bool)}
    head = f"{len(rows)} item{'' if len(rows) == 1 else 's'}" + (f" ({_dump(meta)[1:-1]})" if meta else "")
    if len(rows) > max_items:
        head += f"; the first {max_items} are shown, {len(rows) - max_items} more were left out"
    return View(whole(head + ":\n" + "\n".join(lines)), full=False, items=len(shown), total=len(rows))


STEP_ITEMS = 8  # rows of a listed result the next-step decision and the next arguments read


def step_view(text: str, request: Request | str, limit: int = 1500) -> str:
    """What the next step of the agent loop reads of an earlier result: the compact view with links kept (ids,
    numbers, names, URLs, SHAs, paths), at most ``STEP_ITEMS`` rows and ``limit`` characters."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return whole(text, limit)  # a file, a diff: its content is what a later step quotes
    asked = set(Request.of(request).words) | {"url", "link"}  # identifying links are kept, bodies stay out
    rows, _ = _rows(data)
    if rows is None:
        shown: Any = _object(numbered(data), asked, single=True) if isinstance(data, dict) else data
        return whole(_dump(shown), limit)
    head = f"{len(rows)} items" + (f" (the first {STEP_ITEMS} shown)" if len(rows) > STEP_ITEMS else "")
    lines = [_dump(_object(r, asked) if isinstance(r, dict) else r) for r in rows[:STEP_ITEMS]]
    return whole(head + ":\n" + "\n".join(lines), limit)


# fields that hold people, as logins or as objects with one
_PEOPLE = frozenset(
    {"assignees", "assignee", "user", "author", "owner", "reviewers", "requested_reviewers", "closed_by", "merged_by"}
)


def named_logins(text: str, request: Request | str) -> list[str]:
    """The logins an output ``text`` (a JSON object or listing) holds in the fields ``request`` names: "whoever is
    assigned" names ``assignees``, "the author" ``user``; in order, once each. Empty when it is not JSON."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return []
    asked = set(Request.of(request).words)
    rows, _ = _rows(data)
    objs = rows if rows is not None else [data]
    found: list[str] = []
    for obj in objs:
        if not isinstance(obj, dict):
            continue
        for k, v in obj.items():
            if k not in _PEOPLE or not _named(k, asked):
                continue
            for x in v if isinstance(v, list) else [v]:
                login = x.get("login") if isinstance(x, dict) else x
                if isinstance(login, str) and login and login not in found:
                    found.append(login)
    return found


# the number at the end of an issue's, pull request's or discussion's URL
_URL_NUMBER = re.compile(r"/(?:issues|pull|pulls|discussions)/(\d+)/?$")


def numbered(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with a ``number`` first, read from its URL, when it has none: GitHub's create answers
    ``{"id": "26", "url": ".../issues/8"}``, and measured on the multi-step tune tasks (qwen1.5b) the next step
    took the id for the new issue's number."""
    if "number" in obj:
        return obj
    for key in ("html_url", "url"):
        if isinstance(v := obj.get(key), str) and (m := _URL_NUMBER.search(v)):
            return {"number": int(m.group(1)), **obj}
    return obj


def _rows(data: Any) -> tuple[list[Any] | None, dict[str, Any] | None]:
    """The list a listing returns (bare, or wrapped as ``{"issues": [...], "totalCount": 3}``) and its wrapper."""
    if isinstance(data, list):
        return data, None
    if isinstance(data, dict):
        lists = [k for k, v in data.items() if isinstance(v, list) and (not v or isinstance(v[0], dict))]
        if len(lists) == 1:
            return data[lists[0]], {k: v for k, v in data.items() if k != lists[0]}
    return None, None


def _named(key: str, asked: set[str]) -> bool:
    own = {w for w in words(key) if len(w) >= 3}  # not "at" of created_at
    # the key's own words by prefix ("label" names labels); synonyms exactly ("opened" is not "open")
    return mentioned(own, asked) or bool(_SYNONYMS.get(key, set()) & asked)


def _object(obj: dict[str, Any], asked: set[str], single: bool = False) -> dict[str, Any]:
    """The fields of ``obj`` an answer reads: identifying ones, named ones and, for a ``single`` object (not a row
    of a list), every short scalar."""
    out: dict[str, Any] = {}
    for k, v in obj.items():
        named = _named(k, asked)
        if k in _IDS or named or (single and _plain(v)):
            kept = _value(k, v, named)
            if kept is not None:
                out[k] = kept
    if not out:  # nothing identifies it: its first few short scalars
        out = {k: v for k, v in list(obj.items())[:4] if _plain(v)}
    return out


def _plain(v: Any) -> bool:
    return v is None or isinstance(v, int | float | bool) or (isinstance(v, str) and len(v) <= _SHORT)


def _value(key: str, v: Any, named: bool) -> Any:
    """``v`` cut to what an answer names: a short SHA, a body when asked for, a nested object's identifier."""
    if isinstance(v, str):
        if key == "sha" or (key.endswith("_sha") and len(v) == 40):
            return v[:12]
        if v.startswith(("http://", "https://")) and not named:
            return None
        if len(v) > _SHORT:
            return (v[:_BODY] + " …" if len(v) > _BODY else v) if named else None
        return v
    if isinstance(v, dict):
        return _ident(v)
    if isinstance(v, list):
        if not v:
            return [] if named else None
        vals = [_ident(x) if isinstance(x, dict) else x for x in v[:10]]
        vals = [x for x in vals if x is not None and _plain(x)]
        return vals or None
    return v


def _ident(obj: dict[str, Any]) -> Any:
    """One value that identifies a nested object: its login, name, …, a commit's message's first line."""
    for k in _NESTED_IDS:
        v = obj.get(k)
        if isinstance(v, str) and v:
            return v.splitlines()[0][:_SHORT] if k == "message" else v[:12] if k == "sha" else v
    for v in obj.values():  # a wrapper such as a commit's {"message": …, "author": {…}} one level down
        if isinstance(v, dict) and (inner := _ident(v)) is not None:
            return inner
    return None


def _dump(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, separators=(", ", ": "))
