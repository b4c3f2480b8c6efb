"""Where a write's value comes from (issue 54, §2.5 and §2.8): a file nobody named is found by listing the folder the
request names; the files the request names as a value's source are read before the write; a value written as its
source (a repository, a path) is the value read there, and only a value the read returned."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from nexus_agent.agent.args import ArgumentWriter
from nexus_agent.agent.request import Request
from nexus_agent.agent.sources import (
    described_entry,
    listed_files,
    listing_first,
    read_again,
    source_in_text,
    unread_source,
    value_at,
)
from nexus_agent.agent.turn import _Step, _value_read, _with_value
from nexus_agent.registry import Tool


def _fs(name: str, required: list[str], read_only: bool = True, **props: Any) -> Tool:
    return Tool(
        "filesystem",
        name,
        name.replace("_", " "),
        {"type": "object", "properties": props, "required": required},
        read_only_hint=read_only,
    )


S = {"type": "string"}
READ = _fs("read_text_file", ["path"], path=S, head={"type": "number"})
LIST = _fs("list_directory", ["path"], path=S)
SIZES = _fs("list_directory_with_sizes", ["path"], path=S, sortBy=S)
MANY = _fs("read_multiple_files", ["paths"], paths={"type": "array", "items": S})
EDIT = _fs("edit_file", ["path", "edits"], read_only=False, path=S, edits={"type": "array"})
MOVE = _fs("move_file", ["source", "destination"], read_only=False, source=S, destination=S)
TOOLS = {t.qualified_name: t for t in (READ, LIST, SIZES, MANY, EDIT, MOVE)}


def _read_only(q: str) -> bool:
    return bool(TOOLS[q].read_only_hint)


SEPTEMBER = Request.parse(
    "Take September's revenue from the Q3 report in /h/reports and write it to /h/reports/summary.txt as "
    "'September: <amount>'."
)
LISTING = "[FILE] 2026-q2.csv\n[FILE] 2026-q3.csv\n[DIR] old"


def test_a_made_up_file_in_a_named_folder_is_found_by_listing_the_folder() -> None:
    made_up = {"path": "/h/reports/Q3-revenue.txt"}
    got = listing_first(READ, made_up, SEPTEMBER, SEPTEMBER.text, [], TOOLS, _read_only)
    assert got == (LIST.qualified_name, {"path": "/h/reports"})  # the plain listing, not the one with sizes
    # listed already, or the file is named (by the request, or a listing of this turn): read as written
    assert listing_first(READ, made_up, SEPTEMBER, SEPTEMBER.text, ["/h/reports"], TOOLS, _read_only) is None
    named = {"path": "/h/reports/2026-q3.csv"}
    assert listing_first(READ, named, SEPTEMBER, SEPTEMBER.text + "\n" + LISTING, [], TOOLS, _read_only) is None
    # outside every folder the request names: nothing to list
    assert listing_first(READ, {"path": "/elsewhere/x.txt"}, SEPTEMBER, SEPTEMBER.text, [], TOOLS, _read_only) is None
    # the folder itself, given to a tool that reads one file, is listed; a listing tool is left as it is
    notes = Request.parse("My meeting notes in /h/notes say when the budget is due.")
    assert listing_first(READ, {"path": "/h/notes"}, notes, notes.text, [], TOOLS, _read_only) == (
        LIST.qualified_name,
        {"path": "/h/notes"},
    )
    assert listing_first(LIST, {"path": "/h/notes"}, notes, notes.text, [], TOOLS, _read_only) is None


def test_the_file_described_is_read_after_the_listing() -> None:
    assert listed_files(LISTING) == ["2026-q2.csv", "2026-q3.csv"]
    assert described_entry(LISTING, SEPTEMBER) == "2026-q3.csv"  # "Q3": a short code with a digit
    # a path's words name a file, they do not describe the one read: "meeting notes" is not todo.md
    notes = Request.parse("My meeting notes in /h/notes say when it is due. Add that date to /h/notes/todo.md.")
    listing = "[FILE] ideas.txt\n[FILE] meeting-2026-11-28.md\n[FILE] todo.md"
    assert described_entry(listing, notes) == "meeting-2026-11-28.md"
    # two alike, or none: no file is picked
    assert described_entry("[FILE] q3-a.csv\n[FILE] q3-b.csv", SEPTEMBER) is None
    assert described_entry("[FILE] x.txt", SEPTEMBER) is None
    # read again with the tool and arguments it was to be read with; with the file the write changes, when the
    # server reads several in one call
    again = read_again(
        (READ.qualified_name, {"path": "/h/notes/x", "head": 5}),
        "/h/notes/m.md",
        notes,
        ["/h/notes/m.md", "/h/notes/todo.md"],
        TOOLS,
        _read_only,
    )
    assert again == (MANY.qualified_name, {"paths": ["/h/notes/m.md", "/h/notes/todo.md"]})
    alone = read_again(
        (READ.qualified_name, {"path": "/h/x", "head": 5}),
        "/h/reports/2026-q3.csv",
        SEPTEMBER,
        ["/h/reports/2026-q3.csv"],
        TOOLS,
        _read_only,
    )
    assert alone == (READ.qualified_name, {"path": "/h/reports/2026-q3.csv", "head": 5})


RAVI = Request.parse(
    "Add a P.S. to /h/drafts/letter.txt saying the plumber can call Ravi on his number from /h/contacts.csv."
)


def test_a_file_the_request_takes_a_value_from_is_read_before_the_write() -> None:
    edit = {"path": "/h/drafts/letter.txt", "edits": [{"oldText": "Sam", "newText": "Sam\nP.S. call Ravi"}]}
    got = unread_source(EDIT, edit, RAVI, ["/h/drafts/letter.txt"], READ.qualified_name)
    assert got == (READ.qualified_name, {"path": "/h/contacts.csv"})
    assert unread_source(EDIT, edit, RAVI, ["/h/drafts/letter.txt", "/h/contacts.csv"], READ.qualified_name) is None
    # no file read yet this turn (no reader), a quoted text, or a move (it writes no text): not held
    assert unread_source(EDIT, edit, RAVI, [], None) is None
    quoted = Request.parse("Write 'hi' to /h/a.txt and then show me /h/b.txt")
    assert (
        unread_source(EDIT, {"path": "/h/a.txt", "edits": [{"newText": "hi"}]}, quoted, [], READ.qualified_name) is None
    )
    moved = Request.parse("Move /h/a.txt and /h/b.txt into /h/archive")
    move = {"source": "/h/a.txt", "destination": "/h/archive/a.txt"}
    assert unread_source(MOVE, move, moved, ["/h/a.txt"], READ.qualified_name) is None


def test_a_text_that_holds_the_source_path_in_place_of_its_value_is_found() -> None:
    wrote = {
        "path": "/h/drafts/letter.txt",
        "edits": [{"newText": "P.S. call Ravi on his number from /h/contacts.csv."}],
    }
    assert source_in_text(wrote, RAVI, ["/h/contacts.csv"]) == "/h/contacts.csv"
    assert source_in_text(wrote, RAVI, []) is None  # not read: nothing to take its place yet
    assert source_in_text({"path": "/h/contacts.csv"}, RAVI, ["/h/contacts.csv"]) is None  # the object itself
    fixed = _with_value(wrote, "/h/contacts.csv", "555-0199")
    assert fixed["edits"][0]["newText"] == "P.S. call Ravi on his number 555-0199."
    assert _with_value({"content": "September: <amount>"}, "<amount>", "1410") == {"content": "September: 1410"}


def test_a_value_asked_for_alone_is_written_only_when_the_read_returned_it() -> None:
    read = _Step(
        READ.qualified_name, READ, {"path": "/h/contacts.csv"}, "name,phone\nRavi Patel,555-0199\n", False, False
    )

    def deps(reply: str) -> Any:
        chat = lambda messages, **k: SimpleNamespace(text=reply)  # noqa: E731
        return SimpleNamespace(backend=SimpleNamespace(chat=chat))

    assert _value_read(deps("555-0199\n"), RAVI, "/h/contacts.csv", [read]) == "555-0199"
    assert _value_read(deps('"ravi patel"'), RAVI, "/h/contacts.csv", [read]) == "Ravi Patel"  # as the output writes it
    # made up, a stray character, or the placeholder itself: no value
    assert _value_read(deps("555-0100"), RAVI, "/h/contacts.csv", [read]) is None
    assert _value_read(deps("-"), RAVI, "/h/contacts.csv", [read]) is None
    assert _value_read(deps("a"), RAVI, "/h/contacts.csv", [read]) is None
    assert _value_read(deps("<amount>"), SEPTEMBER, "<amount>", [read]) is None
    # a listing made in place of a read holds file names, not the value
    listing = _Step(
        LIST.qualified_name, LIST, {"path": "/h/reports"}, LISTING, False, False, instead_of=(READ.qualified_name, {})
    )
    assert _value_read(deps("2026-q3.csv"), SEPTEMBER, "<amount>", [listing]) is None


def test_a_value_written_as_its_repository_is_the_described_rows_field_there() -> None:
    request = Request.parse("Create a 'good first issue' label in acme/web with the same colour acme/docs uses for it.")
    labels = {
        "labels": [
            {"name": "documentation", "color": "0075ca"},
            {"name": "good first issue", "color": "7057ff"},
        ]
    }
    wrote = {"method": "create", "owner": "acme", "repo": "web", "name": "good first issue", "color": "acme/docs"}
    reads = [({"owner": "acme", "repo": "docs"}, json.dumps(labels))]
    assert value_at(wrote, "color", "acme/docs", request, reads) == {**wrote, "color": "7057ff"}
    # read in another repository, or not read: no value
    assert (
        value_at(wrote, "color", "acme/docs", request, [({"owner": "acme", "repo": "web"}, json.dumps(labels))]) is None
    )
    assert value_at(wrote, "color", "acme/docs", request, []) is None
    # two rows alike: none is picked
    alike = {"labels": [{"name": "issue a", "color": "1"}, {"name": "issue b", "color": "2"}]}
    assert (
        value_at(wrote, "color", "acme/docs", request, [({"owner": "acme", "repo": "docs"}, json.dumps(alike))]) is None
    )
    # one object read there: its field
    one = [({"owner": "acme", "repo": "docs", "name": "good first issue"}, json.dumps({"name": "x", "color": "abc"}))]
    assert value_at(wrote, "color", "acme/docs", request, one) == {**wrote, "color": "abc"}


WRITE = _fs("write_file", ["path", "content"], read_only=False, path=S, content=S)


def test_in_a_turn_the_folder_is_listed_and_the_described_file_read_before_the_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The loop on the tiny model, routing and arguments scripted: the made-up read becomes the folder's listing,
    the described file is read next with no decision asked, then the write runs with the value read."""
    from nexus_agent.agent.history import Conversation
    from nexus_agent.agent.turn import CallResult, run_turn
    from nexus_agent.engine import Engine, EngineConfig
    from tests.agent.test_loop import _deps, _Script, _write_args

    args = {
        READ.name: {"path": "/h/reports/Q3-revenue.txt"},
        WRITE.name: {"path": "/h/reports/summary.txt", "content": "September: 1410"},
    }
    _write_args(monkeypatch, lambda name: dict(args[name]))
    results: dict[str, CallResult | Exception] = {
        LIST.qualified_name: CallResult(LISTING, False),
        READ.qualified_name: CallResult("month,revenue\nAug,1350\nSep,1410\n", False),
        WRITE.qualified_name: CallResult("Successfully wrote", False),
    }
    router = _Script(READ.qualified_name, [WRITE.qualified_name])
    calls: list[tuple[str, dict[str, Any]]] = []
    engine = Engine(EngineConfig(model="tiny", n_ctx=4096, n_threads=1))
    try:
        tools = {**TOOLS, WRITE.qualified_name: WRITE}
        deps = _deps(engine, router, tools, calls, results, max_steps=3)
        read_only = {q: {"readOnlyHint": True} for q, t in tools.items() if t.read_only_hint}
        deps = replace(deps, annotations=read_only.get)
        events: list[Any] = []
        run_turn(deps, Conversation(), SEPTEMBER.text, events.append)
    finally:
        engine.close()
    assert calls == [
        (LIST.qualified_name, {"path": "/h/reports"}),
        (READ.qualified_name, {"path": "/h/reports/2026-q3.csv"}),
        (WRITE.qualified_name, {"path": "/h/reports/summary.txt", "content": "September: 1410"}),
    ]
    skipped = [e for e in events if e.type == "tool_skipped"]
    assert len(skipped) == 1 and "is a file nobody named" in skipped[0].reason
    # one decision was asked, for the write, after the read made again: the budget's three calls were made then
    assert [[c.tool for c in seen] for seen in router.seen] == [[LIST.qualified_name, READ.qualified_name]]


PR_READ = Tool(
    "github",
    "pull_request_read",
    "Get information on a specific pull request.",
    {
        "type": "object",
        "properties": {
            "method": {"type": "string", "enum": ["get", "get_diff", "get_status"]},
            "owner": S,
            "repo": S,
            "pullNumber": {"type": "number"},
        },
        "required": ["method", "owner", "repo", "pullNumber"],
    },
    read_only_hint=True,
)
SEARCH_PRS = Tool(
    "github",
    "search_pull_requests",
    "Search pull requests.",
    {"type": "object", "properties": {"query": S, "owner": S, "repo": S}, "required": ["query"]},
    read_only_hint=True,
)


def test_a_write_refused_after_a_search_reads_the_object_found() -> None:
    from nexus_agent.agent.sources import found_object_read

    request = Request.parse("In acme/api, start a branch called feature/x from the branch of the rate limiting PR.")
    tools = {t.qualified_name: t for t in (PR_READ, SEARCH_PRS)}
    given = {"query": "rate limit", "owner": "acme", "repo": "api"}
    found = json.dumps({"total_count": 1, "items": [{"number": 5, "title": "Add token bucket rate limiter"}]})
    got = found_object_read(SEARCH_PRS, given, found, request, tools, lambda q: True, [])
    assert got == (PR_READ.qualified_name, {"owner": "acme", "repo": "api", "pullNumber": 5, "method": "get"})
    # read already this turn, a row the request does not describe, or no search: nothing to read
    assert found_object_read(SEARCH_PRS, given, found, request, tools, lambda q: True, [got]) is None
    other = json.dumps({"items": [{"number": 9, "title": "Bump the docs theme"}]})
    assert found_object_read(SEARCH_PRS, given, other, request, tools, lambda q: True, []) is None
    assert found_object_read(PR_READ, given, found, request, tools, lambda q: True, []) is None
    # a read tool that may write is not one to call unasked
    assert found_object_read(SEARCH_PRS, given, found, request, tools, lambda q: False, []) is None


def test_the_label_the_request_tags_with_is_in_the_labels_written() -> None:
    from nexus_agent.agent.turn import _with_label_named

    def labels(request: str, written: list[str]) -> Any:
        return _with_label_named({"issue_number": 7, "labels": written}, Request.parse(request))["labels"]

    keep = "tag the acme/api issue about the health endpoint as a good first issue (keep whatever labels it has)"
    assert labels(keep, ["enhancement"]) == ["enhancement", "good first issue"]
    assert labels(keep, ["enhancement", "Good First Issue"]) == ["enhancement", "Good First Issue"]  # there already
    assert labels("mark it as priority:high, keeping its labels", ["bug"]) == ["bug", "priority:high"]
    # a state is no label, and nothing named after "as": unchanged
    assert labels("mark it as closed", ["bug"]) == ["bug"]
    assert labels("Add the bug label to acme/web #6.", ["bug"]) == ["bug"]
    # a write that sets no labels is left alone
    assert _with_label_named({"state": "closed"}, Request.parse(keep)) == {"state": "closed"}


def test_in_a_turn_a_branch_refused_after_the_search_reads_the_pull_request_then_is_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The loop on the tiny model, routing and arguments scripted: the search's rows carry no head branch, so the
    write refused for its branch is followed by the read of the pull request found, and then written again."""
    from nexus_agent.agent.history import Conversation
    from nexus_agent.agent.turn import CallResult, run_turn
    from nexus_agent.engine import Engine, EngineConfig
    from tests.agent.test_local_paths import CREATE_BRANCH
    from tests.agent.test_loop import _deps, _Script

    branches = iter(["rate-limiting-pr", "5", "feature/rate-limit"])

    def write(self: Any, tool: Tool, *a: Any, **k: Any) -> Any:
        if tool.name == SEARCH_PRS.name:
            args: dict[str, Any] = {"query": "rate limit", "owner": "acme", "repo": "api"}
        else:
            args = {"owner": "acme", "repo": "api", "branch": "feature/x", "from_branch": next(branches)}
        return SimpleNamespace(arguments=args, schema_error=None)

    monkeypatch.setattr(ArgumentWriter, "write", write)
    pr = {"number": 5, "title": "Add token bucket rate limiter", "head": {"ref": "feature/rate-limit"}}
    results: dict[str, CallResult | Exception] = {
        SEARCH_PRS.qualified_name: CallResult(json.dumps({"items": [{"number": 5, "title": pr["title"]}]}), False),
        PR_READ.qualified_name: CallResult(json.dumps(pr), False),
        CREATE_BRANCH.qualified_name: CallResult(json.dumps({"ref": "refs/heads/feature/x"}), False),
    }
    tools = {t.qualified_name: t for t in (SEARCH_PRS, PR_READ, CREATE_BRANCH)}
    router = _Script(CREATE_BRANCH.qualified_name, [SEARCH_PRS.qualified_name, CREATE_BRANCH.qualified_name])
    calls: list[tuple[str, dict[str, Any]]] = []
    request = "In acme/api, start a branch called feature/x from the branch of the rate limiting PR."
    engine = Engine(EngineConfig(model="tiny", n_ctx=4096, n_threads=1))
    try:
        deps = _deps(engine, router, tools, calls, results, max_steps=3)
        reads = {SEARCH_PRS.qualified_name: {"readOnlyHint": True}, PR_READ.qualified_name: {"readOnlyHint": True}}
        run_turn(replace(deps, annotations=reads.get), Conversation(), request, lambda e: None)
    finally:
        engine.close()
    assert [c[0] for c in calls] == [SEARCH_PRS.qualified_name, PR_READ.qualified_name, CREATE_BRANCH.qualified_name]
    assert calls[1][1] == {"owner": "acme", "repo": "api", "pullNumber": 5, "method": "get"}
    assert calls[2][1]["from_branch"] == "feature/rate-limit"
    # the decision was asked for the search and for the write after it, not after the pull request's read
    assert len(router.seen) == 2
