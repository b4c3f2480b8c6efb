"""Argument writing without a model: the argument view, grammars for every registry tool, validation,
grounding, and the BFCL-style checker used by eval-args."""

from __future__ import annotations

from pathlib import Path

import pytest

from nexus_agent.agent.args import arg_view
from nexus_agent.agent.grounding import drop_ungrounded, gives_a_required_value, ungrounded_identifiers
from nexus_agent.agent.schema import _ANY_OBJECT, grammar_for, validate
from nexus_agent.llm import LlamaModel, Sampler
from nexus_agent.registry import Registry, load_registry


@pytest.fixture(scope="module")
def reg(registry_dir: Path) -> Registry:
    return load_registry(registry_dir)


def test_arg_view_puts_named_parameters_first_and_drops_unnamed_lists(reg: Registry) -> None:
    tool = reg.find("get_file_contents", "github")
    view = arg_view(tool, "show me README.md in astral-sh/uv at ref main")
    keys = list(view.input_schema["properties"])
    assert keys[:2] == ["owner", "repo"]  # required first
    assert "fields" not in keys  # a list nothing in the request names
    assert keys.index("ref") < keys.index("path") or "ref" in keys[:3]  # named parameter ranked up
    named = arg_view(tool, "which fields does get_file_contents return")
    assert "fields" in named.input_schema["properties"]
    assert validate(tool, {"owner": "a", "repo": "b", "fields": ["name"]}) is None  # full schema still rules


def test_arg_view_describes_only_required_and_named_parameters(reg: Registry) -> None:
    tool = reg.find("issue_write", "github")
    props = arg_view(tool, "assign acme-corp/web#45 to bsmith").input_schema["properties"]
    assert "description" in props["method"]  # required
    assert "description" in props["assignees"]  # named by the request ("assign")
    assert "description" not in props["duplicate_of"]  # optional and never named
    assert "description" in tool.input_schema["properties"]["duplicate_of"]  # the tool itself is untouched


def test_every_registry_tool_gets_a_grammar_llama_cpp_accepts(reg: Registry, tiny_model: LlamaModel) -> None:
    fallback = grammar_for(reg.find("get_me", "github"))  # "any object": get_me has no parameters
    specific = 0
    for tool in reg.tools.values():
        g = grammar_for(tool)
        with Sampler(tiny_model, grammar=g):
            pass
        specific += g != fallback
    assert specific >= 0.9 * len(reg.tools)


def test_grammar_keeps_parameters_named_like_schema_keywords(reg: Registry) -> None:
    # "title" is also a JSON Schema annotation keyword, stripped before grammar compilation; as a *parameter*
    # name it must survive, or a title can never be written (create_pull_request requires one).
    checked = 0
    for tool in reg.tools.values():
        g = grammar_for(tool)
        if g == _ANY_OBJECT:
            continue
        for name in tool.input_schema.get("properties") or {}:
            assert f'\\"{name}\\"' in g, (tool.qualified_name, name)
        checked += 1
    assert checked == len(reg.tools)  # no registry tool falls back to "any JSON object"
    assert '\\"title\\"' in grammar_for(reg.find("create_pull_request", "github"))


def test_validate_names_the_field(reg: Registry) -> None:
    tool = reg.find("issue_read", "github")
    err = validate(tool, {"method": "get", "owner": "a", "repo": "b", "issue_number": "seven"})
    assert err is not None and err.startswith("issue_number")
    assert "required" in (validate(tool, {"method": "get"}) or "")
    assert validate(tool, []) == "arguments must be a JSON object, got list"


def test_ungrounded_optional_values_are_dropped_required_kept(reg: Registry) -> None:
    tool = reg.find("search_pull_requests", "github")
    args = {"query": "is:pr review-requested:@me", "owner": "your_username", "page": 1, "order": "desc"}
    kept = drop_ungrounded(tool, args, "which PRs am I requested to review? newest first, desc order")
    assert kept == {"query": "is:pr review-requested:@me", "order": "desc"}
    args2 = {"query": "x", "perPage": 50}
    assert drop_ungrounded(tool, args2, "show 50 per page") == args2


def test_options_are_grounded_in_the_users_own_words(reg: Registry) -> None:
    # Earlier tool output ("created_at") must not ground an ordering the user never asked for; the sandbox, like
    # GitHub, rejects orderBy without direction, so the call would fail.
    tool = reg.find("list_issues", "github")
    args = {"owner": "acme", "repo": "api", "state": "OPEN", "orderBy": "CREATED_AT"}
    user = "who am I?\nlist the open issues in acme/api"
    context = 'who am I?\n(used get_me {}) → {"login": "octo-dev", "created_at": "2020-01-01"}\n' + user
    assert drop_ungrounded(tool, args, context) == args  # the whole conversation grounds it
    assert drop_ungrounded(tool, args, context, user) == {"owner": "acme", "repo": "api", "state": "OPEN"}
    newest = "list the open issues in acme/api, newest created first"
    assert drop_ungrounded(tool, args, context, newest) == args  # the user asked for it


def test_made_up_identifiers_are_found_given_ones_are_not(reg: Registry) -> None:
    pr = reg.find("update_pull_request", "github")
    args = {"owner": "acme", "repo": "api", "pullNumber": 1, "title": "Hotfix"}
    # "open a pull request" routed to update_pull_request: the grammar made the model write some number
    assert ungrounded_identifiers(pr, args, "open a pull request from hotfix to main in acme/api titled 'Hotfix'") == {
        "pullNumber": 1
    }
    assert ungrounded_identifiers(pr, args, "retitle PR 1 in acme/api to 'Hotfix'") == {}
    assert ungrounded_identifiers(pr, args, "retitle PR 12 in acme/api") == {"pullNumber": 1}
    # from earlier messages, only where they name the kind (or write #N): an earlier "issue 1" is no pull request 1
    listed = [
        {"role": "user", "content": "list the open pull requests in acme/api"},
        {"role": "assistant", "content": '(used list_pull_requests {"owner": "acme"}) → [{"number": 1}]'},
    ]
    assert ungrounded_identifiers(pr, args, "retitle it to 'Hotfix'", listed) == {}
    closed = [{"role": "user", "content": "close issue 1 in acme/api"}, {"role": "assistant", "content": "Closed."}]
    assert ungrounded_identifiers(pr, args, "open a pull request from hotfix to main", closed) == {"pullNumber": 1}
    assert ungrounded_identifiers(pr, args, "retitle it", [{"role": "user", "content": "what's acme/api#1?"}]) == {}
    assert ungrounded_identifiers(pr, args, "retitle it", [{"role": "user", "content": "top 1 is acme/api#12"}]) == {
        "pullNumber": 1
    }
    comment = reg.find("add_issue_comment", "github")
    said = {"owner": "acme", "repo": "api", "issue_number": 1, "body": "why?"}
    assert ungrounded_identifiers(comment, said, "ask why on it", closed) == {}  # the issue "it" means
    assert ungrounded_identifiers(comment, said, "ask why on the issue") == {"issue_number": 1}
    # string identifiers too; parameters that are not identifiers (owner, title) are never flagged
    page = reg.find("API-move-page", "notion")
    moved = {"page_id": "59833787-2cf9-4fdf-8782-e53db20768a5", "parent": {"page_id": "x"}}
    assert list(ungrounded_identifiers(page, moved, "move my notes page under Projects")) == ["page_id"]
    assert ungrounded_identifiers(page, moved, "move page 59833787-2cf9-4fdf-8782-e53db20768a5 under x") == {}
    assert ungrounded_identifiers(pr, {**args, "owner": "someone"}, "retitle PR 1") == {}


def test_a_required_value_is_given_by_the_conversation_or_not(reg: Registry) -> None:
    fork = reg.find("fork_repository", "github")
    made_up = {"owner": "example", "repo": "example"}
    assert not gives_a_required_value(fork, made_up, "what's the difference between a fork and a clone?", [])
    assert gives_a_required_value(fork, {"owner": "acme", "repo": "api"}, "should I fork acme/api?", [])
    said = [{"role": "user", "content": "show me example/example"}]
    assert gives_a_required_value(fork, made_up, "should I fork it?", said)  # from an earlier message
    # optional values do not count ("organization" is optional)
    assert not gives_a_required_value(fork, {**made_up, "organization": "acme"}, "fork or clone for acme?", [])
    # a tool that needs no object is not "about none"
    mark = reg.find("mark_all_notifications_read", "github")
    assert not (mark.input_schema.get("required") or [])
    assert gives_a_required_value(mark, {}, "can I mark all my notifications read?", [])


def test_todays_date_is_told_only_when_the_user_names_a_date(reg: Registry) -> None:
    import datetime as dt

    from nexus_agent.agent.args import arg_messages

    tool = reg.find("list_commits", "github")
    today = dt.date(2026, 12, 3)

    def told(request: str, history: list[dict[str, str]] | None = None) -> bool:
        return "Today is 2026-12-03" in arg_messages(tool, request, history or [], today)[-1]["content"]

    assert told("commits to acme-corp/api since monday")
    assert told("what landed in octo-org/web between March 1st and March 15th, 2025")
    assert told("commits in acme/api since 2025-06-01")
    assert not told("list the commits in acme/api")  # told unasked, a small model adds it as a filter
    # a follow-up of a request that named one
    assert told("and in acme/web?", [{"role": "user", "content": "commits in acme/api since yesterday"}])
    # a date only tool output names is not the user's
    assert not told("and in acme/web?", [{"role": "assistant", "content": '{"date": "2026-12-01T10:00:00Z"}'}])


def test_a_value_copied_from_an_example_is_found_and_a_stated_one_or_an_enum_choice_is_not(reg: Registry) -> None:
    from nexus_agent.agent.args import copied_from_examples
    from nexus_agent.examples import Usage
    from nexus_agent.examples.bank import Example

    tool = reg.find("list_issues", "github")
    shown = Example(
        request="which issues in halyard-works/larkspur are closed?",
        calls=[{"tool": "list_issues", "arguments": {"owner": "halyard-works", "repo": "larkspur", "state": "CLOSED"}}],
    )
    examples = [Usage(shown, 0, "github__list_issues", None)]
    request = "list the open issues in the acme/api repository"
    # the repository of the example, not of the request (what qwen0.5b wrote once the examples were shown)
    assert copied_from_examples(tool, {"owner": "acme/api", "repo": "larkspur"}, examples, request) == ["larkspur"]
    assert copied_from_examples(tool, {"owner": "acme", "repo": "api", "state": "CLOSED"}, examples, request) == []
    # stated in the request: not a copy
    said = "which issues in acme/larkspur are closed"
    assert copied_from_examples(tool, {"owner": "acme", "repo": "larkspur"}, examples, said) == []
    assert copied_from_examples(tool, {"owner": "acme", "repo": "larkspur"}, [], request) == []


def test_an_owner_written_as_owner_slash_repo_is_split(reg: Registry) -> None:
    from nexus_agent.agent.args import owner_and_repo

    tool = reg.find("list_issues", "github")
    assert owner_and_repo(tool, {"owner": "acme/web", "repo": "web"}) == {"owner": "acme", "repo": "web"}
    assert owner_and_repo(tool, {"owner": "acme/web"}) == {"owner": "acme", "repo": "web"}
    # a different repository beside it, or no slash: left as written
    assert owner_and_repo(tool, {"owner": "acme/web", "repo": "api"}) == {"owner": "acme/web", "repo": "api"}
    assert owner_and_repo(tool, {"owner": "acme", "repo": "web"}) == {"owner": "acme", "repo": "web"}


def test_an_owner_slash_repo_the_request_names_wins_over_the_repo_written_beside_it(reg: Registry) -> None:
    """ "acme/docs … on main" was written ``{"owner": "acme/docs", "repo": "main"}``: the request names acme/docs
    as a repository, so that is the owner and the repository; one it does not name is left as written."""
    from nexus_agent.agent.args import owner_and_repo

    tool = reg.find("search_issues", "github")
    said = "acme/docs has an issue saying the guide pins an old version. Update the pin on main."
    assert owner_and_repo(tool, {"owner": "acme/docs", "repo": "main"}, said) == {"owner": "acme", "repo": "docs"}
    assert owner_and_repo(tool, {"owner": "acme/doc", "repo": "main"}, said) == {"owner": "acme/doc", "repo": "main"}
    assert owner_and_repo(tool, {"owner": "acme/docs", "repo": "main"}) == {"owner": "acme/docs", "repo": "main"}


def test_the_owner_of_the_repository_the_request_names_wins_over_another_owner(reg: Registry) -> None:
    """ "Assign the acme/api issue … to me" read get_me first, and its lookup searched ``octo-dev/api``: the request
    names one repository called api, acme's. A pair it names, two of that name, or a path are left as written."""
    from nexus_agent.agent.args import named_owner

    tool = reg.find("search_issues", "github")
    said = "Assign the acme/api issue about upgrading the CI runner to me."
    assert named_owner(tool, {"owner": "octo-dev", "repo": "api", "query": "ci"}, said) == {
        "owner": "acme",
        "repo": "api",
        "query": "ci",
    }
    assert named_owner(tool, {"owner": "acme", "repo": "api"}, said) == {"owner": "acme", "repo": "api"}
    both = "Copy the label from acme/api to other/api."
    assert named_owner(tool, {"owner": "octo-dev", "repo": "api"}, both) == {"owner": "octo-dev", "repo": "api"}
    path = "What does src/api/app.py say?"
    assert named_owner(tool, {"owner": "octo-dev", "repo": "api"}, path) == {"owner": "octo-dev", "repo": "api"}
    assert named_owner(tool, {"owner": "octo-dev", "repo": "web"}, said) == {"owner": "octo-dev", "repo": "web"}


def test_a_value_the_request_quotes_is_written_as_quoted_not_as_a_slug() -> None:
    """ "Create a 'good first issue' label" looked up ``good-first-issue``, which does not exist; a branch or a path
    is a slug by nature and stays as written."""
    from nexus_agent.agent.args import as_quoted

    quoted = ("good first issue", "my feature")
    assert as_quoted({"name": "good-first-issue", "color": "7057ff"}, quoted) == {
        "name": "good first issue",
        "color": "7057ff",
    }
    assert as_quoted({"branch": "my-feature", "title": "My_Feature"}, quoted) == {
        "branch": "my-feature",
        "title": "my feature",
    }
    assert as_quoted({"name": "good-first"}, quoted) == {"name": "good-first"}
    # a list's items too (a label put on an issue was written "good_first_issue")
    assert as_quoted({"labels": ["enhancement", "good_first_issue"], "number": 7}, quoted) == {
        "labels": ["enhancement", "good first issue"],
        "number": 7,
    }
    assert as_quoted({"files": ["my-feature"]}, quoted) == {"files": ["my-feature"]}
