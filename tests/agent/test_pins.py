"""The pins of a tool result (agent/pins.py): identifiers and values stay, bodies, links and zero counts do not."""

from __future__ import annotations

import json
from itertools import pairwise

from nexus_agent.agent.pins import pins


def _pinned(text: str) -> list[str]:
    return [text[a:b] for a, b in pins(text)]


def test_json_pins_identifying_fields_numbers_and_names_not_bodies_links_or_zero_counts() -> None:
    issue = {
        "number": 12,
        "title": "Server crashes when the request body is empty JSON",
        "body": "Posting {} to /items raises KeyError: 'name' and returns 500 instead of 422. " * 3,
        "state": "open",
        "html_url": "https://github.com/acme/api/issues/12",
        "user": {"login": "alice-lee", "id": 2, "avatar_url": "https://avatars.example/u/2"},
        "labels": ["bug", "priority:high"],
        "assignees": ["bob-kim"],
        "comments": 0,
        "additions": 36,
        "merged": False,
        "head": {"sha": "f4fc54c1c3a8116bb2146331ecdc5f9c94496989"},
        "commit": {"message": "Fix the crash\n\nLong explanation"},
    }
    text = json.dumps(issue)
    got = " | ".join(_pinned(text))
    for kept in (
        '"number": 12',
        '"title": "Server crashes when the request body is empty JSON"',
        '"state": "open"',
        '"login": "alice-lee"',
        '"labels": ["bug", "priority:high"]',
        '"assignees": ["bob-kim"]',
        '"additions": 36',
        '"merged": false',
        '"sha": "f4fc54c1c3a8',  # the view's short SHA
        '"message": "Fix the crash',  # the first line
    ):
        assert kept in got, kept
    for dropped in ("Posting", "html_url", "avatar", '"id": 2', '"comments": 0', "f4fc54c1c3a8116", "explanation"):
        assert dropped not in got, dropped


def test_text_pins_settings_and_values_with_their_word() -> None:
    text = "# config\nport = 8443\ntheme: light\nThe release notes are long and say nothing in particular.\n"
    text += "See https://example.com/docs and src/app/main.py, commit 5e48fefd97f4.\n"
    got = _pinned(text)
    assert "port = 8443" in got and "theme: light" in got
    assert any("https://example.com/docs" in g for g in got)
    assert any("src/app/main.py" in g for g in got)
    assert any("5e48fefd97f4" in g for g in got)
    assert not any("release notes" in g for g in got)


def test_pins_are_sorted_disjoint_ranges_inside_the_text() -> None:
    for text in ("", "{}", "[]", '{"a": [1, 2, {"number": 3}]}', "plain words only", "x = 1\ny = 2"):
        ps = pins(text)
        assert all(0 <= a < b <= len(text) for a, b in ps)
        assert all(b1 < a2 for (_, b1), (a2, _) in pairwise(ps))
