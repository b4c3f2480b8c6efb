"""Where a write's value comes from: the places the request names as its source, read before the write needs them.

A request that moves a value ("the colour acme/docs uses for it", "Ravi's number from …/contacts.csv", "September's
revenue from the Q3 report in …/reports") names where the value is. These are the steps of such a turn that are not
the model's to get wrong:

* :func:`listing_first`: a read of a local file nobody named, in a folder the request names and nobody listed this
  turn, lists that folder instead (the file was made up from a description);
* :func:`unread_source`: a local write waits for a read of each other file the request names by its whole path;
* :func:`source_in_text`: a text that holds the source's path in place of the value read there is written again;
* :func:`found_object_read`: a write refused after a search that found its object reads that object whole next;
* :func:`value_at`: a value written as the repository it is at takes the same-named field of the row read there
  that the request describes.

Each is measured on the multi-step tune tasks (qwen1.5b); the measurement is in its docstring.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nexus_agent.agent.grounding import NUMBER_FIELD, described_row, folder_of, names_path, paths_in
from nexus_agent.agent.request import Request
from nexus_agent.agent.view import numbered
from nexus_agent.registry import Tool
from nexus_agent.signature import mentioned, words

# a whole local path whose last part has an extension: a file, as a request names one ("…/contacts.csv")
_FILE_PATH = re.compile(r"(?<![\w/])(/[^\s'\"`]+?\.[A-Za-z0-9]{1,8})(?=[\s'\"`.,;:!?)]|$)")


def _lister(tools: Mapping[str, Tool], server: str, read_only: Callable[[str], bool]) -> str | None:
    """The read-only tool of ``server`` that lists a folder by its ``path`` alone (``list_directory``): a ``list``
    tool whose only required parameter is ``path``, the one with the fewest parameters."""
    found = [
        (len(t.input_schema.get("properties") or {}), q)
        for q, t in tools.items()
        if t.server == server
        and "list" in t.name.lower()
        and list(t.input_schema.get("required") or []) == ["path"]
        and read_only(q)
    ]
    return min(found)[1] if found else None


def listing_first(
    tool: Tool,
    args: Mapping[str, Any],
    request: Request,
    seen: str,
    listed: Sequence[str],
    tools: Mapping[str, Tool],
    read_only: Callable[[str], bool],
) -> tuple[str, dict[str, Any]] | None:
    """The listing to make instead of a read of ``args["path"]``, a local file that ``seen`` (the conversation and
    this turn's outputs) does not name, inside a folder the request names that no call of this turn listed
    (``listed``: the paths this turn's successful reads were given), or that folder itself given to a tool that
    reads one file: (the server's listing tool, ``{"path": folder}``). None otherwise.

    Measured on the multi-step tune tasks (qwen1.5b): "Take September's revenue from the Q3 report in …/reports"
    read ``…/reports/Q3-revenue.txt`` (the report is ``2026-q3.csv``), the read failed, and the one call left went
    to the write."""
    path = args.get("path")
    if not isinstance(path, str) or not path.startswith("/"):
        return None
    if "." not in path.rsplit("/", 1)[-1]:
        # a folder the request names, given to a tool that reads one file: measured on the tune split, "My meeting
        # notes in …/notes say when …" read …/notes itself (EISDIR)
        reads_a_file = "read" in tool.name.lower() and list(tool.input_schema.get("required") or []) == ["path"]
        folder = path.rstrip("/")
        if not reads_a_file or folder not in paths_in(request.text):
            return None
    else:
        folder = folder_of(request.text, path)
        if names_path(path, seen) or not folder:
            return None
    if folder in {p.rstrip("/") for p in listed}:
        return None
    lister = _lister(tools, tool.server, read_only)
    return (lister, {"path": folder}) if lister is not None else None


def unread_source(
    tool: Tool,
    args: Mapping[str, Any],
    request: Request,
    read_paths: Sequence[str],
    reader: str | None,
) -> tuple[str, dict[str, Any]] | None:
    """The read to make before a local write (``args`` hold an absolute path) whose content the request does not
    quote and that writes text (not a move): a read of the first file the request names by its whole path that the
    write does not act on and no read of this turn was given (``read_paths``), with ``reader``, the tool this turn
    read a file with. None otherwise.

    Measured on the multi-step tune tasks (qwen1.5b): "Add a P.S. to …/letter-to-landlord.txt saying the plumber can
    call Ravi on his number from …/contacts.csv" read the letter, then wrote the P.S. with the path of the contacts
    file in place of the number, which was never read."""
    if reader is None or request.quoted:
        return None
    own = {v for v in args.values() if isinstance(v, str)} | {
        x for v in args.values() if isinstance(v, list) for x in v if isinstance(x, str)
    }
    if not any(v.startswith("/") for v in own) or not _writes_text(args):
        return None  # not local, or a move or a copy: it writes no text the value could go into
    read = set(read_paths)
    for path in dict.fromkeys(_FILE_PATH.findall(request.text)):
        if path not in own and path not in read and not any(path in v for v in own):
            return reader, {"path": path}
    return None


def source_in_text(args: Mapping[str, Any], request: Request, read_paths: Sequence[str]) -> str | None:
    """The first file the request names by its whole path, that a read of this turn was given (``read_paths``),
    which a text value of ``args`` holds inside other words: the path written where the value it holds belongs
    (a value that is the path alone is the object a call acts on). None otherwise.

    Measured on the multi-step tune tasks (qwen1.5b): with …/contacts.csv read and "Ravi Patel,…,555-0199" in the
    step's view, "saying the plumber can call Ravi on his number from …/contacts.csv" wrote "P.S. The plumber can
    call Ravi on his number from …/contacts.csv."."""
    read = set(read_paths)
    sources = [p for p in dict.fromkeys(_FILE_PATH.findall(request.text)) if p in read]

    def holds(value: Any, path: str) -> bool:
        if isinstance(value, str):
            return path in value and value.strip() != path
        if isinstance(value, Mapping):
            return any(holds(v, path) for v in value.values())
        if isinstance(value, list):
            return any(holds(v, path) for v in value)
        return False

    return next((p for p in sources if holds(dict(args), p)), None)


# a listing's line: an optional kind in brackets ("[FILE] 2026-q3.csv", "[DIR] old")
_LISTED = re.compile(r"^\s*(?:\[(\w+)\]\s*)?(\S.*?)\s*$")


def listed_files(listing: str) -> list[str]:
    """The files of a folder's ``listing``, one entry a line ("[FILE] 2026-q3.csv"); folders (``[DIR]``) left out."""
    names = []
    for line in listing.splitlines():
        m = _LISTED.match(line)
        if m and (m.group(1) or "FILE").upper() == "FILE":
            names.append(m.group(2))
    return names


def read_again(
    instead_of: tuple[str, dict[str, Any]],
    path: str,
    request: Request,
    listed: Sequence[str],
    tools: Mapping[str, Tool],
    read_only: Callable[[str], bool],
) -> tuple[str, dict[str, Any]]:
    """The read made after a listing in place of ``instead_of`` (its tool and arguments), of ``path``, the file the
    listing showed the request describes; with the other files the request names by their whole path that the
    listing showed (``listed``: whole paths; a file to be written anew is not there), in one call, when the server
    has a read-only tool that takes a list of ``paths`` (``read_multiple_files``): the write after it changes one of
    them in place, which needs its text.

    Measured on the multi-step tune tasks (qwen1.5b, three calls): "My meeting notes in …/notes say when the Q3
    budget is due. Add that date to the budget item in …/notes/todo.md" listed, read the notes, and edited todo.md
    unread (its edit's old text was a line of the notes; it failed)."""
    tool, args = instead_of
    others = [p for p in dict.fromkeys(_FILE_PATH.findall(request.text)) if p != path and p in set(listed)]
    server = tools[tool].server if tool in tools else None
    many = next(
        (
            q
            for q, t in tools.items()
            if t.server == server
            and ((t.input_schema.get("properties") or {}).get("paths") or {}).get("type") == "array"
            and list(t.input_schema.get("required") or []) == ["paths"]
            and read_only(q)
        ),
        None,
    )
    if others and many is not None:
        return many, {"paths": [path, *others]}
    return tool, {**args, "path": path}


def described_entry(listing: str, request: Request) -> str | None:
    """The file of a folder's ``listing`` (one entry a line) whose name shares more of the words that describe the
    request's object than any other's ("the Q3 report" → ``2026-q3.csv``); None when none does, or two do alike.
    Folders (``[DIR]``) are not files."""
    names = listed_files(listing)
    # a short code with a digit describes a file too ("the Q3 report": 2026-q3.csv), though too short for a
    # description elsewhere (Request.describing keeps words of 3 letters or more); a path's words name, not describe
    # ("…/notes/todo.md" does not describe todo.md as the "meeting notes")
    codes = {w for w in request.words if len(w) == 2 and any(c.isdigit() for c in w) and any(c.isalpha() for c in w)}
    paths = {w for p in paths_in(request.text) for w in words(p)}
    asked = (request.describing | codes) - paths
    scored = [sum(mentioned({w}, words(name)) for w in asked) for name in names]
    best = max(scored, default=0)
    return names[scored.index(best)] if best and scored.count(best) == 1 else None


def _writes_text(value: Any) -> bool:
    """Whether ``value`` (arguments) holds text other than paths: a file's content, an edit, a message."""
    if isinstance(value, str):
        return bool(value.strip()) and not value.startswith("/")
    if isinstance(value, Mapping):
        return any(_writes_text(v) for v in value.values())
    if isinstance(value, list):
        return any(_writes_text(v) for v in value)
    return False


def rows_with(value: Any, key: str) -> list[dict[str, Any]]:
    """The objects anywhere in ``value`` (a parsed result) that hold ``key`` as a string or a number."""
    found: list[dict[str, Any]] = []
    if isinstance(value, dict):
        if isinstance(value.get(key), str | int) and not isinstance(value.get(key), bool):
            found.append(value)
        for v in value.values():
            found.extend(rows_with(v, key))
    elif isinstance(value, list):
        for v in value:
            found.extend(rows_with(v, key))
    return found


def value_at(
    args: Mapping[str, Any],
    param: str,
    ref: str,
    request: Request,
    reads: Sequence[tuple[Mapping[str, Any], str]],
) -> dict[str, Any] | None:
    """``args`` with ``param`` (written as ``ref``, the repository the value is at: ``color: "acme/docs"``) set to
    the field of that name of the row a read of this turn at ``ref`` returned (``reads``: each read's arguments and
    output) that the request describes (:func:`grounding.described_row`; the only row, when there is one). None
    when no read at ``ref`` returned that field, or no one row is described.

    Measured on the multi-step tune tasks (qwen1.5b): "Create a 'good first issue' label in acme/web with the same
    colour acme/docs uses for it" listed acme/docs's labels, then wrote ``color: "acme/docs"`` again, with
    ``"good first issue", "color": "7057ff"`` in the step's view."""
    owner, _, repo = ref.partition("/")
    rows: list[dict[str, Any]] = []
    for given, text in reads:
        if str(given.get("owner", "")).lower() != owner.lower() or str(given.get("repo", "")).lower() != repo.lower():
            continue
        try:
            rows.extend(rows_with(json.loads(text), param))
        except ValueError:
            continue
    row = rows[0] if len(rows) == 1 else described_row(rows, request)
    return {**args, param: row[param]} if row is not None else None


def found_object_read(
    search: Tool,
    given: Mapping[str, Any],
    text: str,
    request: Request,
    tools: Mapping[str, Tool],
    read_only: Callable[[str], bool],
    read_before: Sequence[tuple[str, Mapping[str, Any]]],
) -> tuple[str, dict[str, Any]] | None:
    """The read of the object a search (``search``, called with ``given``, returned ``text``) found that the request
    describes (:func:`grounding.described_row`): the server's read-only tool for that kind of object
    (``search_pull_requests`` → ``pull_request_read`` or ``get_pull_request``), with its number, the search's
    ``owner`` and ``repo``, and its ``get`` operation when it has operations. None when the search is no
    ``search_…`` tool, no row is described, there is no such tool, or a call of this turn (``read_before``) read
    that object already.

    Measured on the multi-step tune tasks (qwen1.5b): "start a branch … from the branch of the rate limiting PR"
    found PR #5 by a search (its rows carry no head branch), then wrote ``from_branch: "5"`` twice; the read of the
    pull request, which names its head branch, was never made."""
    if not search.name.startswith("search_"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    rows = [numbered(r) for r in (data.get("items") if isinstance(data, dict) else data) or [] if isinstance(r, dict)]
    row = described_row(rows, request)  # a lone row too: a search's only row may be another object
    if row is None or not isinstance(row.get("number"), int):
        return None
    noun = search.name[len("search_") :].rstrip("s")
    for q, t in tools.items():
        if t.server != search.server or t.name not in (f"{noun}_read", f"get_{noun}") or not read_only(q):
            continue
        props = t.input_schema.get("properties") or {}
        number = next((k for k in props if NUMBER_FIELD.search(k)), None)
        if number is None:
            return None
        args: dict[str, Any] = {k: given[k] for k in ("owner", "repo") if k in props and k in given}
        args[number] = row["number"]
        if t.operation_param is not None:
            if "get" not in t.operations():
                return None
            args[t.operation_param] = "get"
        if any(q == done and all(a.get(k) == v for k, v in args.items()) for done, a in read_before):
            return None
        return q, args
    return None
