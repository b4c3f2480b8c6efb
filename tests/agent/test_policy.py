"""The turn policy as a table: tool, annotations, written arguments, request, window and ``--yes`` in, one
decision out. No model, no router, no registry: the tools are built here with the parameters that matter."""

from __future__ import annotations

from typing import Any

import pytest

from nexus_agent.agent.policy import (
    REFUSED_QUESTION,
    REFUSED_UNCONFIRMED,
    SKIP_QUESTION,
    Ask,
    Decision,
    Refuse,
    Run,
    Skip,
    decide,
    needs_confirmation,
)
from nexus_agent.registry import Tool

STR: dict[str, Any] = {"type": "string"}
NUM: dict[str, Any] = {"type": "number"}


def _tool(name: str, props: dict[str, Any], required: list[str], read_only_hint: bool | None) -> Tool:
    schema = {"type": "object", "properties": props, "required": required}
    return Tool(server="github", name=name, description="", input_schema=schema, read_only_hint=read_only_hint)


MERGE = _tool(
    "merge_pull_request",
    {"owner": STR, "repo": STR, "pullNumber": {**NUM, "description": "Pull request number"}, "commit_message": STR},
    ["owner", "repo", "pullNumber"],
    False,
)
FORK = _tool("fork_repository", {"owner": STR, "repo": STR, "organization": STR}, ["owner", "repo"], False)
CREATE_REPO = _tool(
    "create_repository", {"name": STR, "private": {"type": "boolean"}, "description": STR}, ["name"], False
)
COMMENT = _tool(
    "add_issue_comment",
    {"owner": STR, "repo": STR, "issue_number": {**NUM, "description": "Issue number"}, "body": STR},
    ["owner", "repo", "issue_number"],
    False,
)
REPLY = _tool(
    "add_reply_to_pull_request_comment",
    {"owner": STR, "repo": STR, "pullNumber": NUM, "commentId": NUM, "body": STR},
    ["owner", "repo", "pullNumber", "commentId", "body"],
    False,
)
MARK_ALL_READ = _tool("mark_all_notifications_read", {"owner": STR, "repo": STR, "lastReadAt": STR}, [], False)
GET_ME = _tool("get_me", {}, [], True)
DELETE_FILE = _tool(
    "delete_file",
    {"owner": STR, "repo": STR, "path": STR, "message": STR, "branch": STR},
    ["owner", "repo", "path", "message", "branch"],
    False,
)
# a read-only tool whose counter is named like an identifier
THINK = _tool(
    "sequentialthinking",
    {"thought": STR, "thoughtNumber": {"type": "integer"}, "totalThoughts": {"type": "integer"}},
    ["thought", "thoughtNumber", "totalThoughts"],
    True,
)
# declares no hint (google-maps): may write, but its questions are not questions to a writer
GEOCODE = _tool("maps_geocode", {"address": STR}, ["address"], None)

WRITES: dict[str, Any] = {"readOnlyHint": False}
READS: dict[str, Any] = {"readOnlyHint": True}
DESTRUCTIVE: dict[str, Any] = {"readOnlyHint": False, "destructiveHint": True}

MERGE_ARGS: dict[str, Any] = {"owner": "acme", "repo": "api", "pullNumber": 5}


def _made_up(tool: str, names: str, written: str) -> Refuse:
    return Refuse(
        f"{tool} needs {names}, which the conversation does not give (the model wrote {written}), so it was not "
        "run; say which one you mean"
    )


def _asked(tool: Tool, why: str) -> Ask:
    return Ask(f"{tool.name} was not run: {why}")


EARLIER_ISSUE = [
    {"role": "user", "content": "close issue 7 in acme/api"},
    {"role": "assistant", "content": "Issue 7 in acme/api is closed."},
]
EARLIER_PR = [
    {"role": "user", "content": "merge PR 7 in acme/api"},
    {"role": "assistant", "content": "It was merged."},
]

# (tool, annotations, arguments, request, window, auto_yes, decision)
ROWS: list[tuple[str, Tool, dict[str, Any] | None, dict[str, Any], str, list[dict[str, str]], bool, Decision]] = [
    # a question whose PR number is in the request: --yes does not merge it
    ("mergeable? --yes", MERGE, WRITES, {"owner": "acme", "repo": "web", "pullNumber": 2},
     "is acme/web#2 mergeable?", [], True, _asked(MERGE, REFUSED_QUESTION)),
    ("mergeable?", MERGE, WRITES, {"owner": "acme", "repo": "web", "pullNumber": 2},
     "is acme/web#2 mergeable?", [], False, _asked(MERGE, REFUSED_UNCONFIRMED)),
    # a question about no PR in particular (the number is made up): answered without the tool
    ("merge vs rebase --yes", MERGE, WRITES, MERGE_ARGS,
     "what's the difference between git merge and git rebase?", [], True, Skip(SKIP_QUESTION)),
    ("merge vs rebase", MERGE, WRITES, MERGE_ARGS,
     "what's the difference between git merge and git rebase?", [], False, Skip(SKIP_QUESTION)),
    # the repository is named but the PR number is made up: still about no PR in particular
    ("any PR mergeable? --yes", MERGE, WRITES, MERGE_ARGS, "can anything in acme/api be merged yet?", [], True,
     Skip(SKIP_QUESTION)),
    # a command with a made-up number: which one?
    ("merge which PR --yes", MERGE, WRITES, MERGE_ARGS, "merge the pull request in acme/api", [], True,
     _made_up("merge_pull_request", "pullNumber", '{"pullNumber": 5}')),
    ("merge which PR", MERGE, WRITES, MERGE_ARGS, "merge the pull request in acme/api", [], False,
     _made_up("merge_pull_request", "pullNumber", '{"pullNumber": 5}')),
    # a polite command ends in "?" and is no question
    ("can you merge --yes", MERGE, WRITES, MERGE_ARGS, "can you merge acme/api#5?", [], True, Run(may_write=True)),
    ("merge named --yes", MERGE, WRITES, MERGE_ARGS, "merge acme/api#5", [], True, Run(may_write=True)),
    ("merge named", MERGE, WRITES, MERGE_ARGS, "merge acme/api#5", [], False, _asked(MERGE, REFUSED_UNCONFIRMED)),
    # nothing made up, but no required value the conversation gives: not about a repository
    ("fork vs clone --yes", FORK, WRITES, {"owner": "example", "repo": "example"},
     "what's the difference between a fork and a clone?", [], True, Skip(SKIP_QUESTION)),
    # the live annotations say read-only, the registry declares a write: the question is still answered without it
    ("fork vs clone, live read-only", FORK, READS, {"owner": "example", "repo": "example"},
     "what's the difference between a fork and a clone?", [], True, Skip(SKIP_QUESTION)),
    # the question names the repository: held for a yes
    ("should I fork --yes", FORK, WRITES, {"owner": "acme", "repo": "api"}, "should I fork acme/api?", [], True,
     _asked(FORK, REFUSED_QUESTION)),
    ("should I fork", FORK, WRITES, {"owner": "acme", "repo": "api"}, "should I fork acme/api?", [], False,
     _asked(FORK, REFUSED_UNCONFIRMED)),
    ("fork --yes", FORK, WRITES, {"owner": "acme", "repo": "api"}, "fork acme/api", [], True, Run(may_write=True)),
    ("create repo --yes", CREATE_REPO, WRITES, {"name": "nexus-demo", "private": True},
     "create a repository called nexus-demo", [], True, Run(may_write=True)),
    ("create repo", CREATE_REPO, WRITES, {"name": "nexus-demo", "private": True},
     "create a repository called nexus-demo", [], False, _asked(CREATE_REPO, REFUSED_UNCONFIRMED)),
    ("private? --yes", CREATE_REPO, WRITES, {"name": "nexus-demo", "private": True},
     "should nexus-demo be a private repository?", [], True, _asked(CREATE_REPO, REFUSED_QUESTION)),
    # no required argument: about nothing in particular, so a question is not skipped for it
    ("all read? --yes", MARK_ALL_READ, WRITES, {}, "have I read all my notifications?", [], True,
     _asked(MARK_ALL_READ, REFUSED_QUESTION)),
    ("mark all read --yes", MARK_ALL_READ, WRITES, {}, "mark all my notifications as read", [], True,
     Run(may_write=True)),
    # an issue nobody named
    ("comment on which issue --yes", COMMENT, WRITES, {"owner": "acme", "repo": "api", "issue_number": 1},
     "add a comment to the issue in acme/api saying thanks", [], True,
     _made_up("add_issue_comment", "issue_number", '{"issue_number": 1}')),
    # every made-up identifier is named, in the order written
    ("reply to which comment --yes", REPLY, WRITES,
     {"owner": "acme", "repo": "api", "pullNumber": 3, "commentId": 12345, "body": "thanks"},
     "reply 'thanks' to the review comment in acme/api", [], True,
     _made_up(REPLY.name, "pullNumber, commentId", '{"pullNumber": 3, "commentId": 12345}')),
    # "it" is the issue an earlier turn named
    ("comment on it --yes", COMMENT, WRITES, {"owner": "acme", "repo": "api", "issue_number": 7, "body": "done"},
     "comment 'done' on it", EARLIER_ISSUE, True, Run(may_write=True)),
    # an earlier PR 7 does not give an issue 7
    ("comment on PR's number --yes", COMMENT, WRITES, {"owner": "acme", "repo": "api", "issue_number": 7},
     "comment 'done' on it", EARLIER_PR, True, _made_up("add_issue_comment", "issue_number", '{"issue_number": 7}')),
    ("get_me", GET_ME, READS, {}, "show my GitHub profile", [], False, Run(may_write=False)),
    ("get_me, a question", GET_ME, READS, {}, "who am I on GitHub?", [], False, Run(may_write=False)),
    # no annotations at all: may write
    ("get_me, no annotations", GET_ME, None, {}, "show my GitHub profile", [], False,
     _asked(GET_ME, REFUSED_UNCONFIRMED)),
    ("get_me, no annotations --yes", GET_ME, None, {}, "show my GitHub profile", [], True, Run(may_write=True)),
    # destructive wins over read-only
    ("destructive read-only", GET_ME, {"readOnlyHint": True, "destructiveHint": True}, {},
     "show my GitHub profile", [], False, _asked(GET_ME, REFUSED_UNCONFIRMED)),
    ("delete file --yes", DELETE_FILE, DESTRUCTIVE,
     {"owner": "acme", "repo": "api", "path": "docs/old.md", "message": "remove", "branch": "main"},
     "delete the file docs/old.md from acme/api on branch main", [], True, Run(may_write=True)),
    ("delete file", DELETE_FILE, DESTRUCTIVE,
     {"owner": "acme", "repo": "api", "path": "docs/old.md", "message": "remove", "branch": "main"},
     "delete the file docs/old.md from acme/api on branch main", [], False, _asked(DELETE_FILE, REFUSED_UNCONFIRMED)),
    # identifiers are checked for writes only: a read's counters are its own
    ("think, read-only", THINK, READS, {"thought": "plan", "thoughtNumber": 3, "totalThoughts": 5},
     "think it through step by step", [], True, Run(may_write=False)),
    ("think, no annotations --yes", THINK, None, {"thought": "plan", "thoughtNumber": 3, "totalThoughts": 5},
     "think it through step by step", [], True, _made_up(THINK.name, "thoughtNumber", '{"thoughtNumber": 3}')),
    # a tool that declares no hint: a question to it is no question to a writer, so --yes covers it
    ("geocode? --yes", GEOCODE, None, {"address": "Lisbon"}, "where is Lisbon?", [], True, Run(may_write=True)),
    ("geocode?", GEOCODE, None, {"address": "Lisbon"}, "where is Lisbon?", [], False,
     _asked(GEOCODE, REFUSED_UNCONFIRMED)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("tool", "annotations", "arguments", "request_text", "window", "auto_yes", "expected"),
    [row[1:] for row in ROWS],
    ids=[row[0] for row in ROWS],
)
def test_decision(
    tool: Tool,
    annotations: dict[str, Any] | None,
    arguments: dict[str, Any],
    request_text: str,
    window: list[dict[str, str]],
    auto_yes: bool,
    expected: Decision,
) -> None:
    assert decide(tool, annotations, arguments, request_text, window, auto_yes) == expected


def test_the_table_reaches_every_decision() -> None:
    assert {type(row[-1]) for row in ROWS} == {Run, Ask, Skip, Refuse}
    assert {row[-1].may_write for row in ROWS if isinstance(row[-1], Run)} == {True, False}


@pytest.mark.parametrize(
    ("annotations", "needed"),
    [
        (None, True),
        ({}, True),
        ({"readOnlyHint": True}, False),
        ({"readOnlyHint": False}, True),
        ({"readOnlyHint": "true"}, True),  # only the boolean counts
        ({"destructiveHint": False}, True),  # not declared read-only
        ({"readOnlyHint": True, "destructiveHint": False}, False),
        ({"readOnlyHint": True, "destructiveHint": True}, True),
    ],
)
def test_needs_confirmation(annotations: dict[str, Any] | None, needed: bool) -> None:
    assert needs_confirmation(annotations) is needed


def test_the_refusal_texts_are_the_ones_users_see() -> None:
    assert REFUSED_UNCONFIRMED == "it can modify data and was not confirmed (pass --yes to allow such tools)"
    assert "question" in REFUSED_QUESTION and "--yes" in REFUSED_QUESTION
    assert SKIP_QUESTION == "the request is a question and names nothing this tool would change; answered without it"
