"""The answer's view of a tool output: every listed row is named, the limit is stated, detail asks for all."""

from __future__ import annotations

import json

from nexus_agent.agent.view import MAX_TOOL_CHARS, answer_view, wants_detail, whole


def _issue(n: int) -> dict[str, object]:
    return {
        "number": n,
        "title": f"Issue number {n}",
        "state": "open",
        "body": "A long body that nobody asked about. " * 10,
        "user": {"login": f"dev{n}", "avatar_url": "https://example.com/a.png"},
        "labels": [{"name": "bug"}],
        "html_url": f"https://github.com/acme/api/issues/{n}",
        "created_at": "2026-11-01T10:00:00Z",
    }


def test_every_row_keeps_what_identifies_it_and_drops_the_rest() -> None:
    text = json.dumps({"issues": [_issue(n) for n in range(1, 4)], "totalCount": 3})
    v = answer_view(text, "list the open issues in acme/api")
    assert not v.full and v.items == 3 and v.total == 3
    for n in range(1, 4):
        assert f"Issue number {n}" in v.text and f'"number": {n}' in v.text
    assert "nobody asked" not in v.text and "https://" not in v.text and "2026-11-01" not in v.text
    assert "3 items" in v.text and len(v.text) < len(text) / 3


def test_fields_the_request_names_are_kept() -> None:
    text = json.dumps([_issue(1), _issue(2)])
    v = answer_view(text, "who opened the issues in acme/api and when, with their labels?")
    assert "dev1" in v.text and "dev2" in v.text  # user → its login
    assert "2026-11-01" in v.text and "bug" in v.text
    assert "avatar" not in v.text


def test_a_long_list_says_how_many_were_left_out() -> None:
    text = json.dumps([_issue(n) for n in range(1, 31)])
    v = answer_view(text, "list the issues", max_items=20)
    assert v.items == 20 and v.total == 30
    assert "the first 20 are shown, 10 more were left out" in v.text
    assert "Issue number 20" in v.text and "Issue number 21" not in v.text


def test_details_and_non_json_get_the_whole_output() -> None:
    text = json.dumps(_issue(7))
    assert wants_detail("show me the details of issue 7")
    assert answer_view(text, "show me the details of issue 7").text == text
    readme = "# acme/api\n\nThe server listens on port 8080 by default.\n"
    assert answer_view(readme, "what port does it use?").text == readme
    big = "x" * (MAX_TOOL_CHARS + 10)
    assert whole(big).endswith("…(truncated)") and len(whole(big)) < len(big) + 20


def test_a_single_object_keeps_its_short_fields() -> None:
    text = json.dumps({"full_name": "acme/api", "stargazers_count": 42, "private": False, "description": "x" * 300})
    v = answer_view(text, "how many stars does acme/api have?")
    got = json.loads(v.text)
    assert got["full_name"] == "acme/api" and got["stargazers_count"] == 42
    assert "description" not in got


def test_a_created_objects_number_is_read_from_its_url() -> None:
    """GitHub's create answers ``{"id": "26", "url": ".../issues/8"}``: the next step took the id for the new issue's
    number. The step view puts the URL's number first; an object with a number, or a URL without one, as it is."""
    from nexus_agent.agent.view import step_view

    created = json.dumps({"id": "26", "url": "https://github.com/acme/web/issues/8"})
    assert json.loads(step_view(created, "open an issue"))["number"] == 8
    assert step_view(created, "open an issue").startswith('{"number": 8')
    pull = json.dumps({"id": "7", "url": "https://github.com/acme/web/pull/12"})
    assert json.loads(step_view(pull, "open a PR"))["number"] == 12
    own = json.dumps({"number": 3, "html_url": "https://github.com/acme/web/issues/4"})
    assert json.loads(step_view(own, "x"))["number"] == 3
    repo = json.dumps({"id": "1", "url": "https://github.com/acme/web"})
    assert "number" not in json.loads(step_view(repo, "fork it"))
