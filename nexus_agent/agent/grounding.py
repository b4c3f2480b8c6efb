"""Grounding: whether the conversation supports an argument value, or the model made it up.

A value is grounded when the conversation spells it as it is or states it in another form (a date, a number in words,
another unit, a paraphrased enum value: ``agent/forms/``). Argument writing drops optional values that are not
(:func:`drop_ungrounded`); the run policy (``agent/policy.py``) asks whether required identifiers and values are
(:func:`ungrounded_identifiers`, :func:`gives_a_required_value`).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from nexus_agent.agent import forms
from nexus_agent.agent.request import NUMBER, Request
from nexus_agent.agent.schema import validate
from nexus_agent.registry import IDENTIFIER, Tool
from nexus_agent.signature import mentioned, words


def conversation_text(request: str, history: Sequence[Mapping[str, str]], user_only: bool = False) -> str:
    """The words argument writing may draw on: every earlier message (or only the user's), then the request."""
    return "\n".join([*(m["content"] for m in history if not user_only or m["role"] == "user"), request])


def _grounded(
    value: Any, prop: Mapping[str, Any], name: str, text: str, text_words: set[str], today: dt.date | None = None
) -> bool:
    """Whether a value is supported by the conversation rather than invented: spelled as it is, or stated in
    another form (a date, a number in words, another unit, a paraphrased enum value: ``agent/forms/``), relative
    dates read from ``today``."""
    if isinstance(value, list):
        items = prop.get("items") or {}
        if not value:
            return _clears(name, text)
        return all(_grounded(v, items, name, text, text_words, today) for v in value)
    if isinstance(value, dict):
        return bool(value) and any(_grounded(v, {}, k, text, text_words, today) for k, v in value.items())
    return _spelled(value, name, text, text_words) or forms.stated(
        value, prop, name, forms.Context(text, today or dt.date.today())
    )


# a request to empty a list: "remove all labels", "unassign everyone", "clear the reviewers", "with no labels"
_CLEAR = re.compile(
    r"\b(?:remove|clear|drop|strip|delete|take (?:off|away)|un\w+|none|without)\b|\bno\s+\w", re.IGNORECASE
)


def _clears(name: str, text: str) -> bool:
    """Whether ``text`` asks to empty the list parameter ``name``: a verb of removal and the parameter's own word
    ("label" in "unlabel" or "labels", "assign" in "unassign everyone")."""
    low = text.lower()
    stems = {w[:-1] if w.endswith("s") else w for w in words(name)}
    stems |= {w[:-2] for w in stems if w.endswith("ee")}  # assignee -> assign
    return bool(_CLEAR.search(text)) and any(len(st) >= 4 and st in low for st in stems)


# Words that point at something without naming it: never a value of their own. Measured on reworded tune requests
# (qwen1.5b): ``label_write {"name": "there", "new_name": "it"}`` for "Label the acme/api issue where the server
# crashes …", and an assignee "there" for "… the commit that added the CI workflow there", both grounded because
# the request holds the word.
_POINTERS = frozenset(
    {
        "it", "its", "this", "that", "these", "those", "there", "here", "them", "they", "him", "her", "his", "hers",
        "me", "my", "mine", "us", "we", "our", "you", "your", "one", "ones", "who", "whoever", "someone", "somebody",
        "anyone", "everyone", "the", "a", "an",
    }
)  # fmt: skip


def _spelled(value: Any, name: str, text: str, text_words: set[str]) -> bool:
    """Whether the conversation spells the scalar ``value`` as it is (a flag: names it; ``false`` always holds)."""
    if isinstance(value, bool):
        return value is False or mentioned(words(name), text_words)
    if isinstance(value, int | float):
        # "+1" is a reaction, not the number 1 (as request.NUMBER)
        return bool(re.search(rf"(?<![\w.+]){re.escape(str(value))}(?![\w])", text)) or (
            float(value).is_integer() and bool(re.search(rf"(?<![\w.+]){int(value)}(?![\w])", text))
        )
    if isinstance(value, str):
        if value.strip().lower() in _POINTERS:
            return False
        vw = words(value)
        if value and value.lower() in text.lower():
            return True
        return bool(vw) and sum(1 for w in vw if mentioned({w}, text_words)) / len(vw) >= 0.5
    return False


def _is_option(prop: Mapping[str, Any]) -> bool:
    """An enum or a flag: a choice of how to do something, which only the user makes."""
    return "enum" in prop or prop.get("type") == "boolean"


def drop_ungrounded(
    tool: Tool, args: dict[str, Any], context: str, user_context: str | None = None, today: dt.date | None = None
) -> dict[str, Any]:
    """Remove optional arguments the conversation does not support: placeholders such as ``your_username``,
    default-looking ``page: 1``, unrequested ``fields`` lists. Required arguments always stay.

    ``user_context`` (the user's own messages) grounds options (enums, flags): earlier tool output is full of
    words such as ``created_at`` that would otherwise ground ``orderBy: CREATED_AT`` nobody asked for."""
    props = tool.input_schema.get("properties") or {}
    required = set(tool.input_schema.get("required") or [])
    anyone = (context, words(context))
    user = anyone if user_context is None else (user_context, words(user_context))

    def supported(name: str, value: Any) -> bool:
        prop = props.get(name) or {}
        text, text_words = user if _is_option(prop) or _unasked_number(name, value, user[1]) else anyone
        return _grounded(value, prop, name, text, text_words, today)

    kept = {k: v for k, v in args.items() if k in required or supported(k, v)}
    return kept if validate(tool, kept) is None else args


def _unasked_number(name: str, value: Any, user_words: set[str]) -> bool:
    """A number for a parameter that is no identifier and that the user's words never name (``duplicate_of`` for
    "reopen it and give it to carol-ops"): it must be the user's own number, not any number an output holds.
    Measured on a reworded tune request (qwen1.5b): the reopen was written with ``"duplicate_of": 11``, the other
    row of the search that found the issue."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return number and not IDENTIFIER.search(name) and not mentioned(words(name), user_words)


def _kind_words(name: str, prop: Mapping[str, Any]) -> set[str]:
    """What an identifier parameter points at, as words: ``pullNumber`` → pull, pr; ``sub_issue_id`` → sub, issue.
    A description that says "issue or pull request number" adds the pull-request words."""
    kind = words(name) - {"number", "id", "ids"}
    if "pull" in kind or "pull request" in str(prop.get("description", "")).lower():
        kind |= {"pull", "pr", "prs"}
    return kind


def result_identifiers(results: Sequence[str], request: Request | str = "", numbers: bool = False) -> set[str]:
    """Identifier values that earlier results of the same turn pinned down, as strings: the scalar values of fields
    named like identifiers (``number``, ``id``, ``issue_number``, ``pullNumber`` …) in a JSON object, or in the one
    row of a list that returned exactly one (bare, or wrapped as ``{"items": [...], "total_count": 1}``), and the
    ``#N`` of a plain-text output that names exactly one. The number a search returned is then the next call's to
    use. A list of several leaves the choice open, so a number picked from it is not given, unless ``request``
    describes one row better than every other (:func:`described_row`: "close the rate limiting issue" and a search
    that also returned an issue about API keys). ``numbers``: only the values of fields named like numbers
    (``number``, ``pullNumber``): what an ``issue_number`` takes, not an object's database ``id``."""
    found: set[str] = set()
    field = NUMBER_FIELD if numbers else IDENTIFIER
    req = Request.of(request) if request else None

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                scalar = isinstance(x, int | str) and not isinstance(x, bool)
                if scalar and isinstance(k, str) and field.search(k):
                    found.add(str(x))
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    for text in results:
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, ValueError):
            refs = set(re.findall(r"(?<![\w&])#(\d+)\b", text))
            found.update(refs if len(refs) == 1 else ())
            continue
        lists = [v for v in data.values() if isinstance(v, list)] if isinstance(data, dict) else []
        rows = data if isinstance(data, list) else lists[0] if len(lists) == 1 else [data]
        if len(rows) == 1 and (req is None or _label(rows[0]) is None):
            walk(rows[0])  # one object with nothing to tell it by (a commit, a file): the read pinned it down
        elif req is not None and (row := described_row(rows, req)) is not None:
            # a list's row, or a single object (an issue read by a number nobody gave), counts only when the request
            # describes it: measured, "close the issue about X" with no such issue read #1 and wrote to it
            walk(row)
    return found


# A field or parameter that holds an object's number (issue_number, pullNumber, number), not its id.
NUMBER_FIELD = re.compile(r"(?:^|_)number$|[a-z0-9]Number$")


def _label(row: Any) -> str | None:
    """What a result row is known by: its title or name."""
    label = row.get("title") or row.get("name") if isinstance(row, dict) else None
    return label if isinstance(label, str) and label.strip() else None


def described_row(rows: Sequence[Any], request: Request | str) -> Any | None:
    """The row of a list whose title (or name) shares more words with ``request`` than any other row's does, with
    at least one shared: the object the request describes. None when no row or two rows match best. The words of an
    ``owner/repo`` the request names do not count (every row of a repository's search has them)."""
    asked = Request.of(request).describing
    scored = []
    for row in rows:
        label = _label(row)
        # "timezones" in the request names the issue titled "… timezone …" (mentioned: a shared prefix)
        scored.append(sum(mentioned({w}, words(label)) for w in asked) if label is not None else 0)
    best = max(scored, default=0)
    if best == 0 or scored.count(best) > 1:
        return None
    return rows[scored.index(best)]


def ungrounded_identifiers(
    tool: Tool,
    args: Mapping[str, Any],
    request: Request | str,
    history: Sequence[Mapping[str, str]] = (),
    results: Sequence[str] = (),
) -> dict[str, Any]:
    """Required identifier arguments (``issue_number``, ``pullNumber``, ``page_id`` …) the conversation does not
    give, so the model made them up: name → value. The grammar makes the model write every required value, and with
    none given it writes one (docs/measurements.md#made-up-identifiers).

    Given means: in the request itself, or in an earlier message (the user's words or a tool's output) that also
    names the identifier's kind or writes it as ``#N``. "close issue 1" earlier does not give a pull request 1;
    it does give the issue that "reopen it" means.

    ``results``: the outputs of the calls already made in this turn (the agent loop); an identifier one of them
    returned (:func:`result_identifiers`) is given too."""
    props = tool.input_schema.get("properties") or {}
    required = set(tool.input_schema.get("required") or [])
    req = Request.of(request)
    returned = result_identifiers(results, req)
    returned_numbers = result_identifiers(results, req, numbers=True)
    # Text the request gives as another argument's value is not where it names its object: in "Leave a comment
    # 'Handled in #5' on the issue about rate limiting", 5 is part of the comment (measured: the comment went on #5)
    own = req.text
    for v in args.values():
        if isinstance(v, str) and " " in v.strip() and v.strip() in own:
            own = own.replace(v.strip(), " ")
    own_words = set(req.words) if own == req.text else words(own)

    def given(name: str, value: Any, prop: Mapping[str, Any]) -> bool:
        # a number parameter takes an earlier result's number, not its id (a pull request's id 6 is no #6)
        if _grounded(value, prop, name, own, own_words):
            return True
        if str(value) in (returned_numbers if NUMBER_FIELD.search(name) else returned):
            return True
        kind = _kind_words(name, prop)
        for m in history:
            text = m.get("content", "")
            tw = words(text)
            as_ref = re.search(rf"#{re.escape(str(value))}(?!\w)", text)  # "#12" is no "#1"
            if _grounded(value, prop, name, text, tw) and (not kind or kind & tw or as_ref):
                return True
        return False

    return {
        k: v
        for k, v in args.items()
        if k in required
        and IDENTIFIER.search(k)
        and not isinstance(v, bool)
        and isinstance(v, int | float | str)
        and not given(k, v, props.get(k) or {})
    }


# a parameter that takes a local path (the filesystem's ``path``/``source``/``destination``, git's ``files``)
_PATH_PARAM = re.compile(r"^(?:path|paths|source|destination|src|dest|files?|file_?path|file_?name)$|_path$")
# of those, the ones that name the object a local write acts on, not where it puts it or which repository
_OBJECT_PATH = frozenset({"source", "src", "path", "paths", "file", "files", "file_path", "filepath"})
# a tool that says it creates: the path it is given may be new, so no one need have named it before
_CREATES = re.compile(r"\bcreat", re.IGNORECASE)
# a request that asks for something new, where such a tool's new path may be the model's: "write it to …", "save the
# README in my notes", "copy … into …". Not "update it": measured on a reworded tune request (qwen1.5b), "My risotto
# recipe in …/recipes needs twice the rice, update it" (there is none) listed the folder, then wrote
# ``…/recipes/risotto.txt``
_ASKS_NEW = re.compile(
    r"\b(?:create|new|write|save|make|draft|start|copy|duplicate|back\s*up|export|download|store|keep|put|"
    r"add\s+(?:an?|the)\s+(?:new\s+)?(?:file|folder|directory|note))\b",
    re.IGNORECASE,
)


def _local(args: Mapping[str, Any]) -> bool:
    """Whether a call works on local paths: one of its values is an absolute path (the filesystem's, git's
    ``repo_path``), which no remote API's arguments hold."""
    return any(isinstance(v, str) and v.startswith("/") for v in args.values())


def _names_file(value: str, text: str) -> bool:
    """Whether ``text`` names the path ``value`` (:func:`names_path`); the folder itself or a pattern is named
    always, as it is no one file's name."""
    base = value.rstrip("/").rsplit("/", 1)[-1]
    if base in ("", ".", "..") or any(ch in base for ch in "*?["):
        return True  # the folder itself, or a pattern: no one file's name
    return names_path(value, text)


def names_path(value: str, text: str) -> bool:
    """Whether ``text`` names the path ``value``: the whole path, or its last part as a word of its own
    ("ideas-2026.txt" in "rename it to ideas-2026.txt", "src/calc.py" in a status line); "Q2-report" is not
    named by "the Q2 report", nor "tax-return.pdf" by "the tax return PDF"."""
    base = value.rstrip("/").rsplit("/", 1)[-1]
    low = text.lower()
    return value.lower() in low or bool(re.search(rf"(?<![\w.-]){re.escape(base.lower())}(?![\w-]|\.\w)", low))


def paths_in(text: str) -> list[str]:
    """The absolute paths ``text`` writes, without a sentence's closing punctuation or a folder's closing slash."""
    return [p.rstrip(".,;:!?)").rstrip("/") for p in re.findall(r"/[^\s'\"`]+", text)]


# a folder the request names as where its object is: "the Q2 report from …/reports", "my recipe in …/recipes"
_CONTAINER = re.compile(r"\b(?:from|in|under|inside|within)\s+(/[^\s'\"`]+)", re.IGNORECASE)


def _containers(text: str) -> set[str]:
    """The folders ``text`` names as where its object is (:data:`_CONTAINER`), without a sentence's end; a path
    whose last part has an extension names a file ("tick it off in …/todo.md": the object itself)."""
    paths = {m.rstrip(".,;:!?)").rstrip("/") for m in _CONTAINER.findall(text)}
    return {p for p in paths if "." not in p.rsplit("/", 1)[-1]}


# a file the request describes rather than names: "the modified test files", "my risotto recipe", "the harbour
# picture"; group 1 holds the words before the noun
_DESCRIBED_FILE = re.compile(
    r"\b(?:the|my|our|his|her|their|every|all|each|any)\s+((?:[\w-]+\s+){1,3}?)(?:files?|pages?|reports?|"
    r"recipes?|pictures?|photos?|images?|spreadsheets?|documents?|scripts?|sheets?)\b",
    re.IGNORECASE,
)
# git status's sections, and the states a request describes files by that each holds
_STATUS_SECTIONS = (
    ("changes to be committed", {"staged", "modified", "changed", "new", "deleted"}),
    ("changes not staged for commit", {"modified", "changed", "unstaged", "deleted"}),
    ("untracked files", {"untracked", "new"}),
)
_STATES = frozenset({"staged", "modified", "changed", "unstaged", "deleted", "untracked", "new"})
# words that say which state a file is in, or how many, not which file it is
_STATE_WORDS = _STATES | frozenset(
    {
        "uncommitted", "committed", "other", "same", "whole", "only", "last", "latest", "first", "old",
        "remaining", "rest", "of", "the", "my", "two", "three", "both", "these", "those", "this", "that",
    }
)  # fmt: skip


def _described_file(text: str) -> tuple[set[str], set[str]]:
    """The git states ``text`` describes a file it does not name by (:data:`_DESCRIBED_FILE`, :data:`_STATES`), and
    its other words for it, less those of state or number (:data:`_STATE_WORDS`): "stage the modified test files"
    → ({"modified"}, {"test"}); "every untracked file" → ({"untracked"}, set())."""
    said = {w for m in _DESCRIBED_FILE.finditer(text) for w in words(m.group(1))}
    return said & _STATES, said - _STATE_WORDS


def status_states(text: str) -> dict[str, set[str]]:
    """The files a ``git status`` output lists, each with the states a request may describe it by (``_STATES``):
    "src/calc.py" under "Changes not staged for commit" is modified; "docs/" under "Untracked files" untracked.
    Empty when ``text`` is no status output."""
    states: dict[str, set[str]] = {}
    section: set[str] | None = None
    for line in text.splitlines():
        head = line.strip().rstrip(":").lower()
        if (found := next((st for name, st in _STATUS_SECTIONS if head == name), None)) is not None:
            section = found
        elif section is not None and line.startswith("\t"):
            entry = line.strip().split(":", 1)[-1].strip() if ":" in line else line.strip()
            states.setdefault(entry.split(" -> ")[-1], set()).update(section)
        elif line.strip() and not line.startswith(" "):
            section = None
    return states


def _in_state(path: str, state: set[str], results: Sequence[str]) -> bool | None:
    """Whether a status output of ``results`` lists ``path`` (or a folder it is in) in one of ``state``'s
    sections; None when no output lists it at all (nothing to tell)."""
    listed = False
    for text in results:
        for entry, states in status_states(text).items():
            if path == entry or (entry.endswith("/") and path.startswith(entry)):
                listed = True
                if states & state:
                    return True
    return False if listed else None


def described_files(request: Request | str, results: Sequence[str]) -> list[str]:
    """The files a ``git status`` output of ``results`` lists in the state the request describes its files by, and
    with its words for them (:func:`_described_file`), in the output's order: "Stage every
    untracked file …" → ["docs/", "notes.txt"]. Empty when the request describes no state or no output lists one."""
    own = Request.of(request).text
    state, described = _described_file(own)
    if not state:
        return []
    found = [
        entry
        for text in results
        for entry, states in status_states(text).items()
        if states & state and (not described or mentioned(described, words(entry)))
    ]
    return list(dict.fromkeys(found))


def folder_of(text: str, path: str) -> str:
    """The longest path ``text`` writes that ``path`` is inside ("" when none): the part of ``path`` the request
    gave, whose words describe nothing the lookup found."""
    inside = [p for p in paths_in(text) if path.startswith(p + "/")]
    return max(inside, key=len, default="")


def unnamed_paths(
    tool: Tool,
    args: Mapping[str, Any],
    request: Request | str,
    history: Sequence[Mapping[str, str]] = (),
    results: Sequence[str] = (),
) -> dict[str, Any]:
    """The local paths a write was given (:data:`_PATH_PARAM`, in a call with an absolute path) that name a file
    nobody named: not in the request, an earlier message or an output of this turn. Such a path was made up from a
    description, like a number nobody gave (measured on the multi-step tune tasks, qwen1.5b: "move the Q2 report
    from …/reports" moved ``…/reports/Q2-report``, and "the untracked usage docs page" staged ``usage_docs.md``;
    both failed, and the step that could have listed the folder was spent). A tool that says it creates is not
    checked when the request asks for something new (:data:`_ASKS_NEW`), as the path it makes is new
    (``write_file``'s, ``create_directory``'s). Nor is the folder the request
    finds its object in ("from …/reports") that object, and a move onto its own path moves nothing it was asked to
    (the source was written as the destination the request names).

    param → value, for the params whose value (or one of whose values) is not named."""
    own = Request.of(request).text
    if (_CREATES.search(tool.description) and _ASKS_NEW.search(own)) or not _local(args):
        return {}
    text = "\n".join([conversation_text(own, history), *results])
    # the folder the request finds its object in is not that object (measured: "move the Q2 report from …/reports
    # into it" moved the whole reports folder)
    around = _containers(own)
    unnamed: dict[str, Any] = {}
    for k, v in args.items():
        if not _PATH_PARAM.search(k):
            continue
        values = v if isinstance(v, list) else [v]
        inside = k in _OBJECT_PATH  # not a destination, nor a repository's own path
        if any(
            isinstance(x, str) and (not _names_file(x, text) or (inside and x.rstrip("/") in around)) for x in values
        ):
            unnamed[k] = v
    # a file found by a lookup must be the one the request describes: measured on the tune tasks, "stage the
    # modified test files" (there are none) staged the one modified file, src/calc.py; and in the state it
    # describes it by: "Stage every untracked file …, but not the modified one" staged the modified one
    # The words count only beside a state: a folder's listing names files in words of their own, and on the check
    # split "the third-quarter report" (q3-2026.csv) was refused for sharing none of them; a status names the
    # files a request describes by state, and "the modified test files" then lists none that is a test.
    state, described = _described_file(own)
    described = described if state else set()
    # named by the user, not by a lookup's output (which the loop's note for this step carries too)
    named_before = conversation_text(own, history, user_only=True)
    for k, v in args.items():
        if k not in _OBJECT_PATH or k in unnamed or not (described or state):
            continue
        values = [x for x in (v if isinstance(v, list) else [v]) if isinstance(x, str)]
        found = [x for x in values if not _names_file(x, named_before)]
        undescribed = any(
            described and not mentioned(described, words(x.replace(folder_of(own, x), ""))) for x in found
        )
        if undescribed or (state and any(_in_state(x, state, results) is False for x in found)):
            unnamed[k] = v
    source, destination = args.get("source"), args.get("destination")
    if isinstance(source, str) and source and source == destination:
        unnamed["source"] = source
    return unnamed


# the parameters a write takes an existing branch by, to start from or to merge (not the name of one it creates)
_FROM_REF = frozenset({"from_branch", "base_branch", "base", "head", "source_branch", "target_branch"})
# the branches every repository is taken to have: the API's default when none is named
_DEFAULT_BRANCHES = frozenset({"main", "master"})


def unnamed_branches(
    tool: Tool,
    args: Mapping[str, Any],
    request: Request | str,
    history: Sequence[Mapping[str, str]] = (),
    results: Sequence[str] = (),
) -> dict[str, Any]:
    """The branches a write starts from or merges (:data:`_FROM_REF`) that nobody named: not written as they are in
    the request, an earlier message or an output of this turn, nor a default branch. Measured on the tune split
    (qwen1.5b): "start a branch … from the branch of the rate limiting PR" was written with ``"from_branch":
    "rate-limiting-pr"``, a slug of the request's words; the call failed as not found and the step that could have
    found the pull request's branch was spent. param → value."""
    text = "\n".join([conversation_text(Request.of(request).text, history), *results]).lower()
    text = text.replace("refs/heads/", " ")  # a ref a create returned names its branch
    unnamed: dict[str, Any] = {}
    for k, v in args.items():
        if k not in _FROM_REF or not isinstance(v, str) or not v.strip() or v.lower() in _DEFAULT_BRANCHES:
            continue
        # a number is an object's (the pull request's #5), not its branch's name
        if v.strip().isdigit() or not re.search(rf"(?<![\w/.-]){re.escape(v.lower())}(?![\w/-])", text):
            unnamed[k] = v
    return unnamed


MAX_PROBES = 64  # numbers tried as the identifier (a long history's outputs hold hundreds)


def identifier_given(tool: Tool, name: str, request: Request | str, history: Sequence[Mapping[str, str]] = ()) -> bool:
    """Whether the conversation gives a value for ``tool``'s identifier parameter ``name`` before any is written:
    a number of the request outside its quoted values ("Leave 'Handled in #5' on the issue about rate limiting"
    gives no issue), or of an earlier message, that :func:`ungrounded_identifiers` would take for it. True for an
    identifier that is not a number (a SHA, a node id): what names one is not checked here."""
    prop = (tool.input_schema.get("properties") or {}).get(name) or {}
    if prop.get("type") not in ("integer", "number"):
        return True
    req = Request.of(request)
    own = req.text
    for q in req.quoted:
        own = own.replace(q, " ")
    asked = Request.parse(own)
    earlier = [n for m in history for n in NUMBER.findall(m.get("content", ""))]
    said = list(dict.fromkeys([*asked.numbers, *asked.refs, *earlier]))[:MAX_PROBES]
    probe = replace(tool, input_schema={"properties": {name: prop}, "required": [name]})
    return any(not ungrounded_identifiers(probe, {name: int(n)}, asked, history) for n in said)


def gives_a_required_value(
    tool: Tool, args: Mapping[str, Any], request: Request | str, history: list[dict[str, str]]
) -> bool:
    """Whether the conversation gives the value of at least one required argument the model wrote (True when
    it wrote none: a tool that needs no object, such as ``mark_all_notifications_read``, is about none). A question
    routed to a write that gives none is about no object in particular ("what's the difference between a fork and
    a clone?" → ``fork_repository {"owner": "example", "repo": "example"}``)."""
    props = tool.input_schema.get("properties") or {}
    names = set(tool.input_schema.get("required") or [])
    required = [(k, v) for k, v in args.items() if k in names]
    if not required:
        return True
    text = conversation_text(str(request), history)
    tw = words(text)
    return any(_grounded(v, props.get(k) or {}, k, text, tw) for k, v in required)
