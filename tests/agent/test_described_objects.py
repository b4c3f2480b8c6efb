"""A write acts on an object an earlier read returned only when the request describes that object (issue 54): a
single object is checked like the one row of a list, a number parameter takes a number, not an id."""

from __future__ import annotations

import json

from nexus_agent.agent.grounding import described_row, drop_ungrounded, result_identifiers, ungrounded_identifiers
from nexus_agent.agent.request import Request
from nexus_agent.registry import Tool

COMMENT = Tool(
    "github",
    "add_issue_comment",
    "Add a comment.",
    {
        "type": "object",
        "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}, "issue_number": {"type": "number"}},
        "required": ["owner", "repo", "issue_number"],
    },
)
READ_ONE = json.dumps({"number": 1, "id": 101, "title": "Login fails after password reset"})
ONE_ROW = json.dumps({"total_count": 1, "items": [{"number": 4, "id": 104, "title": "Dark mode toggle flickers"}]})


def test_a_single_object_counts_only_when_the_request_describes_it() -> None:
    about_dark = "close the acme/api issue about dark mode"
    # an issue read by a number nobody gave is not the issue the request is about
    assert result_identifiers([READ_ONE], about_dark) == set()
    assert ungrounded_identifiers(
        COMMENT, {"owner": "acme", "repo": "api", "issue_number": 1}, about_dark, (), [READ_ONE]
    )
    # the same object, described: its number is given
    about_login = "comment on the acme/api issue about the login failing after a password reset"
    assert "1" in result_identifiers([READ_ONE], about_login)
    # the one row of a search: the same rule
    assert result_identifiers([ONE_ROW], "close the issue about the flickering dark mode toggle") >= {"4"}
    assert result_identifiers([ONE_ROW], "close the issue about slow exports") == set()
    # with no request (a caller that only asks what a read pinned down), the one object is pinned down as before
    assert result_identifiers([READ_ONE]) == {"1", "101"}
    # an object with nothing to tell it by (no title, no name) was pinned down by the read itself
    assert result_identifiers([json.dumps({"sha": "abc", "id": 9})], about_dark) == {"9"}


def test_a_number_parameter_takes_a_number_not_an_id() -> None:
    request = "comment on the issue about the flickering dark mode toggle in acme/web"
    args = {"owner": "acme", "repo": "web"}
    assert ungrounded_identifiers(COMMENT, {**args, "issue_number": 4}, request, (), [ONE_ROW]) == {}
    assert ungrounded_identifiers(COMMENT, {**args, "issue_number": 104}, request, (), [ONE_ROW]) == {
        "issue_number": 104
    }


def test_a_plural_in_the_request_describes_a_singular_title() -> None:
    rows = [{"title": "Per-schedule timezone support"}, {"title": "Retry storms"}]
    assert described_row(rows, "close the issue about per-schedule timezones") == rows[0]


def test_a_word_that_only_says_something_is_wrong_describes_no_object() -> None:
    # no issue about a search box: "broken" alone does not make the broken FAQ link the one meant
    assert (
        described_row([{"title": "Broken link to the API reference in the FAQ"}], "reopen the broken search box")
        is None
    )
    # nor does the word a schema calls filler ("page") when the request describes a checkout crash
    rows = [{"title": "Timezone is wrong on the profile page"}]
    assert described_row(rows, "Assign the acme/web issue about the checkout page crashing to bob-kim.") is None
    # a word a schema calls filler may be what the request describes its object by
    rows = [{"title": "Pagination returns duplicate items"}]
    assert described_row(rows, "Can you assign the pagination bug in acme/api to bob-kim?") == rows[0]
    rows = [{"title": "Server crashes when the request body is empty JSON"}]
    assert described_row(rows, "mark the issue about the server crashing on empty JSON as priority:high") == rows[0]


def test_a_value_dictated_after_a_colon_does_not_describe_the_object() -> None:
    from nexus_agent.agent.request import Request

    asked = Request.parse("Leave a comment on the acme/api rate limiting PR: needs a changelog entry.")
    assert {"rate", "limiting"} <= asked.describing and not {"changelog", "entry"} & asked.describing
    rows = [{"title": "Add a changelog entry"}, {"title": "Token bucket rate limiting"}]
    assert described_row(rows, asked) == rows[1]
    # a colon inside a URL or a time dictates nothing
    assert "login" in Request.parse("the issue at https://example.org/x about the login").describing
    # a colon after a heading, before the change is asked for, dictates nothing: the request follows it
    terse = Request.parse("acme/api#49 sub-issues: move the daylight saving one to the bottom")
    assert {"daylight", "saving"} <= terse.describing


LABEL = Tool(
    "github",
    "label_write",
    "Rename a label.",
    {
        "type": "object",
        "properties": {
            "owner": {"type": "string"},
            "repo": {"type": "string"},
            "name": {"type": "string"},
            "new_name": {"type": "string"},
        },
        "required": ["owner", "repo", "name"],
    },
)


def test_a_reaction_and_a_pointing_word_give_no_value() -> None:
    """Reworded tune requests: "+1" grounded issue 1, and "there" a label's name (qwen1.5b wrote
    ``{"name": "there", "new_name": "it"}``); a value spelled in the request is given as before."""
    args = {"owner": "acme", "repo": "api"}
    react = "React with +1 to the acme/api issue requesting API keys."
    assert Request.parse(react).numbers == ()
    assert ungrounded_identifiers(COMMENT, {**args, "issue_number": 1}, react) == {"issue_number": 1}
    assert ungrounded_identifiers(COMMENT, {**args, "issue_number": 1}, "React with +1 to acme/api issue 1") == {}
    there = "Label the acme/api issue where the server crashes there with priority:high; keep it"
    assert drop_ungrounded(LABEL, {**args, "name": "priority:high", "new_name": "it"}, there) == {
        **args,
        "name": "priority:high",
    }


def test_a_number_nobody_asked_for_is_not_taken_from_an_output() -> None:
    """``duplicate_of: 11`` on a reopen: 11 was the other row of the search (reworded tune request, qwen1.5b)."""
    reopen = Tool(
        "github",
        "issue_write",
        "Update an issue.",
        {
            "type": "object",
            "properties": {
                "issue_number": {"type": "number"},
                "state": {"type": "string", "enum": ["open", "closed"]},
                "duplicate_of": {"type": "number"},
            },
            "required": ["issue_number"],
        },
    )
    request = "reopen the acme/api issue about the auth flow"
    rows = '{"number": 3, "title": "Document the authentication flow"}; {"number": 11, "title": "Upgrade CI"}'
    args = {"issue_number": 3, "state": "open", "duplicate_of": 11}
    assert drop_ungrounded(reopen, args, f"{request}\n{rows}", request) == {"issue_number": 3, "state": "open"}
    # the user's own number, or a parameter the user names, keeps it
    dup = "close the acme/api issue about the auth flow as a duplicate of 11"
    closed = {"issue_number": 3, "state": "closed", "duplicate_of": 11}
    assert drop_ungrounded(reopen, closed, f"{dup}\n{rows}", dup) == closed
