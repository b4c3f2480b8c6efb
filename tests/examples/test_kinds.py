"""A request that names the kind of object it is about (issues, pull requests, discussions …) is routed among the
tools whose examples are about that kind, or about no one kind (``Router._of_kind``)."""

from __future__ import annotations

import pytest

from nexus_agent.examples import Example, ExampleSet
from nexus_agent.registry import Tool
from nexus_agent.routing.followup import CallSoFar
from nexus_agent.routing.query import kinds_named
from nexus_agent.routing.router import Candidate, Router, _numbered
from tests.examples.test_local_scope import _ex
from tests.examples.test_operations import _Words


@pytest.mark.parametrize(
    ("query", "kinds"),
    [
        ("list the open pull requests in acme/api", {"pull request"}),
        ("Add the bug label to acme/web #6.", {"issue", "label"}),
        ("Close the issue.", {"issue"}),
        ("comment 'see the PR' on issue 5", {"issue"}),  # a quoted value names no kind
        ("what's open against release-1.4 in acme/api", set()),  # a piece of a name is no kind
        ("show me pr.md", set()),
        ("merge #6 in acme/api", set()),
        ("pull up the comments on acme-corp/web#88", set()),  # the verb
        ("review pull #88 and the open pulls", {"pull request"}),
    ],
)
def test_the_kinds_a_request_names(query: str, kinds: set[str]) -> None:
    assert kinds_named(query) == kinds


def _tool(name: str) -> Tool:
    return Tool("hub", name, f"{name}.", {"type": "object", "properties": {"repo": {"type": "string"}}})


ISSUES, PULLS, DISCUSS, MERGE = _tool("list_issues"), _tool("list_pulls"), _tool("reply"), _tool("merge")
TOOLS = [ISSUES, PULLS, DISCUSS, MERGE]


BANK = ExampleSet(
    [
        _ex(ISSUES, "list the issues in octo/tools"),
        _ex(ISSUES, "which bugs are open in octo/kit?"),
        _ex(PULLS, "show the open PRs of octo/tools"),
        _ex(PULLS, "pull requests in octo/kit please"),
        _ex(DISCUSS, "reply 'thanks' in discussion 4 of octo/kit"),
        _ex(DISCUSS, "answer the discussions about the logo in octo/kit"),
        _ex(MERGE, "merge PR 5 in octo/tools"),
        _ex(MERGE, "merge #7 in octo/kit"),  # names no kind: merge is for no one kind
    ],
    {t.qualified_name: t for t in TOOLS},
)


def test_the_kinds_each_tool_is_asked_about() -> None:
    kinds = Router(TOOLS, _Words(), examples=BANK).examples.kinds
    assert kinds == {
        (ISSUES.qualified_name, None): {"issue"},
        (PULLS.qualified_name, None): {"pull request"},
        (DISCUSS.qualified_name, None): {"discussion"},
    }


def test_a_request_naming_a_kind_keeps_the_tools_for_it_and_for_no_one_kind() -> None:
    r = Router(TOOLS, _Words(), examples=BANK)
    query = "list the open pull requests in acme/api"
    cands = r.retrieve(query)
    assert {c.key for c in cands} == {t.key for t in TOOLS}
    assert {c.key for c in r._of_kind(query, cands)} == {PULLS.key, MERGE.key}
    both = "list the PRs and the issues of acme/api"
    assert {c.key for c in r._of_kind(both, cands)} == {ISSUES.key, PULLS.key, MERGE.key}
    # no kind named: every tool stays
    assert r._of_kind("what changed in acme/api this week", cands) == cands
    # none of the pool fits: the pool stays as it was, never empty
    only_issues = [c for c in cands if c.key == ISSUES.key]
    assert r._of_kind(query, only_issues) == only_issues


LABEL = Tool(
    "hub",
    "label_write",
    "Create a label.",
    {"type": "object", "properties": {"name": {"type": "string"}, "color": {"type": "string"}}},
)
EDIT = Tool(
    "hub",
    "issue_write",
    "Update an issue.",
    {"type": "object", "properties": {"issue_number": {"type": "number"}, "labels": {"type": "array"}}},
)


@pytest.mark.parametrize(
    ("query", "kept"),
    [
        ("Add the bug label to acme/web #6.", {EDIT.key}),  # a tool with no number cannot act on #6
        ("Create a label bug in acme/web", {EDIT.key, LABEL.key}),  # no number: both stay
        ("Post 'Fixed in #6' on the login issue", {EDIT.key, LABEL.key}),  # a number in a quoted value is no object
    ],
)
def test_a_request_naming_its_object_by_number_keeps_the_tools_that_take_one(query: str, kept: set[str]) -> None:
    tools = {t.key: t for t in (LABEL, EDIT)}
    cands = [Candidate(t.key, 1.0, 0.0, 0.0) for t in (LABEL, EDIT)]
    assert {c.key for c in _numbered(query, cands, tools)} == kept
    only = cands[:1]  # none takes one: the pool stays as it was, never empty
    assert _numbered(query, only, tools) == only


def test_a_lookup_is_of_the_kind_the_request_names() -> None:
    """ "Close the pull request that adds WebSocket support" (there is none) was looked up with the issue search its
    write's examples use, which found an issue about it, and that issue was closed."""
    query = {"type": "object", "properties": {"query": {"type": "string"}}}
    find_issues = Tool("hub", "search_issues", "Search issues.", query, read_only_hint=True)
    find_pulls = Tool("hub", "search_pulls", "Search pull requests.", query, read_only_hint=True)
    close = Tool("hub", "close", "Close one.", {"type": "object", "properties": {"number": {"type": "integer"}}})
    tools = [find_issues, find_pulls, close]
    find = {"tool": find_issues.name, "arguments": {"query": "x"}}
    bank = ExampleSet(
        [
            _ex(find_issues, "find the issues about the logo in octo/kit"),
            _ex(find_issues, "search octo/tools issues for crash"),
            _ex(find_pulls, "find the PRs about the logo in octo/kit"),
            _ex(find_pulls, "search octo/tools pull requests for crash"),
            Example(
                request="close the bug about the logo in octo/kit",
                calls=[find, {"tool": close.name, "arguments": {}, "from": {"number": 0}}],
                server="hub",
            ),
        ],
        {t.qualified_name: t for t in tools},
    )
    r = Router(tools, _Words(), examples=bank)
    waiting = CallSoFar(close.qualified_name, {}, "not run yet", failed=True, ran=False)
    out = r.next_step("Close the pull request in acme/api that adds WebSocket support", [], [waiting])
    assert out.decision == "auto" and [c.key for c in out.candidates] == [find_pulls.key]
    # an issue named: the examples' lookup, as before
    out = r.next_step("Close the issue in acme/api about WebSocket support", [], [waiting])
    assert [c.key for c in out.candidates] == [find_issues.key]


def test_a_terse_example_that_names_no_kind_does_not_undo_the_kind_of_the_others() -> None:
    """ "reviews on halyard-works/larkspur #7" names no kind; the other examples of the tool name pull requests, so
    a request about an issue is not offered it. One example naming a kind is not enough to give the tool one."""
    bank = ExampleSet(
        [
            _ex(PULLS, "list the pull requests of halyard-works/larkspur"),
            _ex(PULLS, "open PRs in marrow-tools/juniper-cli?"),
            _ex(PULLS, "what's waiting for review in halyard-works/tern-ui #7"),
            _ex(MERGE, "merge the PR halyard-works/larkspur#41"),
            _ex(MERGE, "squash halyard-works/larkspur#41"),
        ],
        {t.qualified_name: t for t in TOOLS},
    )
    kinds = bank.common_to_requests(kinds_named)
    assert kinds[(PULLS.qualified_name, None)] == {"pull request"}
    assert (MERGE.qualified_name, None) not in kinds


@pytest.mark.parametrize(
    ("query", "kept"),
    [
        # a label put on an issue is a value: the issue's write (reworded tune request, it went to label_write)
        ("Add the 'good first issue' label to the health endpoint issue in acme/api", {EDIT.key}),
        ("Label the acme/api issue where the server crashes with priority:high", {EDIT.key}),
        # the label itself: both stay
        ("Create a 'good first issue' label in acme/web like the issues label in acme/docs", {EDIT.key, LABEL.key}),
        ("Change the colour of acme/api's bug label", {EDIT.key, LABEL.key}),
    ],
)
def test_a_label_put_on_an_issue_is_no_write_of_labels(query: str, kept: set[str]) -> None:
    tools = [LABEL, EDIT]
    bank = ExampleSet(
        [
            _ex(LABEL, "create a label called p1-urgent in octo/kit"),
            _ex(LABEL, "rename the wontfix label in octo/tools to not-planned"),
            _ex(EDIT, "label issue 4 of octo/kit as p1-urgent"),
            _ex(EDIT, "tag the octo/tools bug about the logo with area/ui"),
        ],
        {t.qualified_name: t for t in tools},
    )
    r = Router(tools, _Words(), examples=bank)
    cands = [Candidate(t.key, 1.0, 0.0, 0.0) for t in tools]
    assert {c.key for c in r._of_kind(query, cands)} == kept
