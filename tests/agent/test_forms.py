"""Value forms (agent/forms/): a value the request states in another form is grounded; placeholders, defaults
nobody asked for and ordinals standing in for identifiers still are not."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from nexus_agent.agent import forms
from nexus_agent.agent.grounding import drop_ungrounded, ungrounded_identifiers
from nexus_agent.registry import Tool

TODAY = dt.date(2026, 12, 3)  # a Thursday


@pytest.mark.parametrize(
    ("value", "text", "prop"),
    [
        ("2025-06-03", "the weather in Lyon next Tuesday, 3rd of June 2025", {}),
        ("2025-06-03", "événements du 3 juin 2025", {}),
        ("2025-06-03", "2025年6月3日のイベント", {}),
        ("2025-06-03", "commits between 2025/06/03 and now", {}),
        ("2025-03-01", "since the first of March 2025", {}),
        ("2025-06", "the June 2025 invoices", {}),
        ("2026-12-08", "schedule it for next Tuesday", {}),
        ("2026-12-04T17:00:00", "remind me tomorrow at 5pm", {}),
        ("15:30", "half past three in the afternoon", {}),
        ("15:30", "at 3:30 pm", {}),
        (10, "show me the ten newest", {}),
        (25, "vingt-cinq résultats", {}),
        (12, "zwölf Einträge", {}),
        (12, "a dozen repositories", {}),
        (12, "١٢ عنصرا", {}),
        (10000, "the first 10k rows", {}),
        (120, "a timeout of two hours", {"description": "Timeout in minutes"}),
        (1500, "within 1.5 km", {"description": "Search radius in meters"}),
        (2500, "charge $25 to the card", {"description": "Amount in cents"}),
        ("open", "show the unsolved tickets", {"enum": ["open", "closed"]}),
        ("+1", "give the feature request a thumbs up", {"enum": ["+1", "-1", "heart"]}),
        ("-1", "react 👎 to that comment", {"enum": ["+1", "-1", "heart"]}),
        ("closed", "liste les issues fermées", {"enum": ["open", "closed"]}),
        ("desc", "newest first please", {"enum": ["asc", "desc"]}),
        ("CREATED_AT", "most recently created ones", {"enum": ["CREATED_AT", "UPDATED_AT"]}),
        (30, "最大30件表示して", {}),
        (2000, "refund twenty bucks", {"description": "Amount in cents"}),
        (900, "lasts a quarter of an hour", {"description": "Duration in seconds"}),
        (True, "just show me a preview, don't write it", {"type": "boolean"}),
    ],
)
def test_a_value_stated_in_another_form_is_grounded(value: Any, text: str, prop: dict[str, Any]) -> None:
    name = "dryRun" if value is True else "x"
    assert forms.stated(value, prop, name, forms.Context(text, TODAY))


@pytest.mark.parametrize(
    ("value", "text", "prop", "name"),
    [
        ("2025-06-04", "since the 3rd of June 2025", {}, "since"),  # another day
        ("2024-06-03", "since the 3rd of June 2025", {}, "since"),  # another year
        ("2026-12-04T18:00:00", "remind me tomorrow at 5pm", {}, "at"),  # another hour
        (1, "show the open issues", {}, "page"),  # a default nobody asked for
        (1, "newest first, desc order", {}, "page"),  # an ordinal that is not about pages
        (1, "close the first issue", {}, "issue_number"),  # an ordinal is not an identifier
        (2, "the second comment", {}, "comment_id"),
        (30, "list my repositories", {}, "per_page"),
        (60, "a timeout of two hours", {"description": "Timeout in seconds"}, "timeout"),  # wrong conversion
        ("closed", "show the unsolved tickets", {"enum": ["open", "closed"]}, "state"),  # the opposite
        ("your_username", "list my repositories", {}, "owner"),  # a placeholder
        (True, "delete the file", {"type": "boolean"}, "dryRun"),  # a flag nobody turned on
    ],
)
def test_a_value_the_request_does_not_state_is_not(value: Any, text: str, prop: dict[str, Any], name: str) -> None:
    assert not forms.stated(value, prop, name, forms.Context(text, TODAY))


def test_an_ordinal_gives_a_page_number_and_nothing_else() -> None:
    assert forms.stated(2, {}, "page", forms.Context("show the second page", TODAY))
    assert not forms.stated(2, {}, "issue_number", forms.Context("show the second page", TODAY))


def _tool(props: dict[str, Any], required: list[str]) -> Tool:
    return Tool("demo", "demo", "A demo tool.", {"type": "object", "properties": props, "required": required})


def test_drop_ungrounded_keeps_values_in_other_forms_and_still_drops_inventions() -> None:
    tool = _tool(
        {
            "repo": {"type": "string"},
            "since": {"type": "string", "description": "ISO 8601 date"},
            "state": {"type": "string", "enum": ["open", "closed", "all"]},
            "per_page": {"type": "integer"},
            "page": {"type": "integer"},
            "author": {"type": "string"},
        },
        ["repo"],
    )
    text = "unsolved issues in acme/api since the 3rd of June 2025, ten per page"
    args = {"repo": "api", "since": "2025-06-03", "state": "open", "per_page": 10, "page": 1, "author": "your_name"}
    kept = drop_ungrounded(tool, args, text, text, TODAY)
    assert kept == {"repo": "api", "since": "2025-06-03", "state": "open", "per_page": 10}


def test_a_made_up_identifier_is_still_caught_when_the_request_uses_ordinals() -> None:
    tool = _tool({"issue_number": {"type": "integer"}, "owner": {"type": "string"}}, ["issue_number", "owner"])
    made_up = ungrounded_identifiers(tool, {"issue_number": 1, "owner": "acme"}, "close the first issue of acme")
    assert made_up == {"issue_number": 1}
    given = ungrounded_identifiers(tool, {"issue_number": 12, "owner": "acme"}, "close issue twelve of acme")
    assert given == {}


def test_every_form_is_registered_once() -> None:
    assert set(forms.FORMS) == {"date", "number", "unit", "enum", "flag"}


def test_a_description_that_says_how_to_write_the_value_stays_in_the_signature() -> None:
    from nexus_agent.agent.args import arg_view, value_hint

    assert value_hint("The amount to refund in cents. Defaults to the full amount.") == (
        "The amount to refund in cents. Defaults to the"
    )
    assert value_hint("Repository owner") is None
    tool = _tool(
        {
            "payment_intent": {"type": "string", "description": "The ID of the PaymentIntent to refund."},
            "amount": {"type": "integer", "description": "The amount to refund in cents."},
            "reason": {"type": "string", "description": "Why the refund is made."},
        },
        ["payment_intent"],
    )
    props = arg_view(tool, "refund twenty bucks on pi_123").input_schema["properties"]
    assert props["amount"]["description"] == "The amount to refund in cents."  # not named, but it says the unit
    assert "description" not in props["reason"]  # not named, says nothing about how to write it


def test_an_empty_list_is_stated_only_by_a_request_to_empty_it() -> None:
    tool = Tool(
        "github",
        "issue_write",
        "Update an issue.",
        {
            "type": "object",
            "properties": {
                "issue_number": {"type": "number"},
                "labels": {"type": "array", "items": {"type": "string"}},
                "assignees": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["issue_number"],
        },
    )
    assert drop_ungrounded(tool, {"issue_number": 46, "assignees": []}, "unassign everyone from #46") == {
        "issue_number": 46,
        "assignees": [],
    }
    assert drop_ungrounded(tool, {"issue_number": 3, "labels": []}, "remove all labels from issue 3")["labels"] == []
    # an empty list nobody asked for (it would wipe the labels) is dropped
    assert drop_ungrounded(tool, {"issue_number": 3, "labels": []}, "close issue 3") == {"issue_number": 3}
    assert drop_ungrounded(tool, {"issue_number": 3, "labels": []}, "unassign everyone from #3") == {"issue_number": 3}
