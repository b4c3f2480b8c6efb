"""Synthetic example requests: prompt shapes, parsing, and the shipped caches (current, complete, not eval data)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nexus_agent.registry import load_registry
from nexus_agent.routing.synth import load_cache, queries_for
from nexus_agent.training.synth import (
    STYLES,
    banned_token_ids,
    build_prompt,
    grounded_in,
    leans_to_sibling,
    main,
    name_words,
    parse_queries,
    sibling_stems,
    uses_name_words,
)


def test_parse_queries_drops_numbering_echoes_and_duplicates(registry_dir: Path) -> None:
    tool = next(t for t in load_registry(registry_dir).profile("github_all") if t.name == "list_issues")
    text = '1. show open bugs in acme/api\n- "show open bugs in acme/api"\nuse list_issues on acme/web\nok:\n\nhi\n'
    assert parse_queries(text, tool, 8) == ["show open bugs in acme/api"]


@pytest.mark.parametrize("style", sorted(STYLES))
def test_prompt_shows_the_tool_and_a_worked_example_of_the_style(registry_dir: Path, style: str) -> None:
    tool = next(t for t in load_registry(registry_dir).profile("github_all") if t.name == "issue_write")
    msgs = build_prompt(tool, 4, STYLES[style])
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    # the example asks for as many requests as it shows, so the model sees a consistent worked example
    shown = msgs[2]["content"].count("\n") + 1
    assert f"Write {shown} different" in msgs[1]["content"]
    assert "Write 4 different" in msgs[3]["content"]
    assert "issue_write(" in msgs[3]["content"] and "method" in msgs[3]["content"]  # signature + variants hint


@pytest.mark.parametrize("style", sorted(STYLES))
def test_shipped_cache_covers_the_registry_and_holds_no_eval_queries(
    registry_dir: Path, eval_queries: frozenset[str], style: str
) -> None:
    reg = load_registry(registry_dir)
    tools = reg.profile(None)
    cache = STYLES[style].cache
    current = queries_for(tools, cache)
    # every tool has requests made from its *current* definition (a changed schema would drop its entry)
    assert set(current) == {t.qualified_name for t in tools}
    # a completion can parse to nothing (stripe finalize_invoice did, once); such a tool still trains on its
    # description and name, but more than a handful would mean the prompt or the parser broke
    empty = sorted(k for k, v in current.items() if not v)
    # indirect requests lose every line that uses a word of the tool's name, so a few more tools end up empty
    assert len(empty) <= (15 if STYLES[style].forbid_name_words else 3), empty
    assert {e["model"] for e in load_cache(cache)["tools"].values()} == {"qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"}
    made = {q.strip().lower() for qs in current.values() for q in qs}
    leaked = made & eval_queries
    assert len(leaked) <= 2, f"eval queries in the synthetic set: {sorted(leaked)[:5]}"


@pytest.mark.parametrize("shard", ["x/4", "4/4", "1/2/3"])
def test_bad_shard_is_a_usage_error_naming_the_value(
    registry_dir: Path, shard: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--registry", str(registry_dir), "--shard", shard])
    assert exc.value.code == 2
    assert f"--shard '{shard}'" in capsys.readouterr().err


def test_indirect_prompt_forbids_the_name_words_and_the_example_shows_how(registry_dir: Path) -> None:
    tool = next(t for t in load_registry(registry_dir).profile("github_all") if t.name == "merge_pull_request")
    msgs = build_prompt(tool, 6, STYLES["indirect"])
    assert "Forbidden words: merge, pull, request" in msgs[3]["content"]
    assert "Forbidden words: get, forecast" in msgs[1]["content"]
    assert not any(uses_name_words(q, "get_forecast") for q in msgs[2]["content"].splitlines())
    assert "Forbidden" not in build_prompt(tool, 6, STYLES["short"])[3]["content"]
    # the parser enforces the ban the model may ignore
    assert parse_queries("merge PR 5 pls\nLGTM, land it", tool, 6, forbid_name_words=True) == ["LGTM, land it"]


def test_name_words_match_by_stem_and_leave_short_words_allowed() -> None:
    assert name_words("get_me") == ["get"]
    assert name_words("API-post-search") == ["api", "post", "search"]
    assert uses_name_words("Merging PR 5 now", "merge_pull_request") is False  # "merging" ≠ stem "merge"
    assert uses_name_words("merge PR 5", "merge_pull_request")
    assert uses_name_words("forget that entity", "delete_entities")  # entities → stem "entit"
    assert not uses_name_words("LGTM, land it", "merge_pull_request")


def test_banned_tokens_spell_a_name_word_or_most_of_one() -> None:
    vocab = [" issue", "Issues", " iss", " repo", " repository", "wr", " Write", "ue", " collaborator", " coll"]
    banned = {vocab[i] for i in banned_token_ids(vocab, "issue_write")}
    assert banned == {" issue", "Issues", " Write"}
    banned = {vocab[i] for i in banned_token_ids(vocab, "list_repository_collaborators")}
    # "repo" is a word of its own and stays; "coll" is too short a piece to ban
    assert banned == {" repository", " collaborator"}


def test_indirect_requests_that_lean_to_a_sibling_or_touch_nothing_of_the_tool_are_flagged(registry_dir: Path) -> None:
    reg = load_registry(registry_dir)
    github = reg.profile("github_all")
    issue_write = next(t for t in github if t.name == "issue_write")
    stems = sibling_stems(issue_write, github)
    assert "pull" in stems and "issue" not in stems  # its own document says "issue"
    assert "get" not in stems  # a stop-word (get_me, get_label …) is no lean
    assert leans_to_sibling("update existing pull request #987", stems)
    assert not leans_to_sibling("close bug #789", stems)
    assert grounded_in("close bug #789", issue_write)  # "closed" is one of its state options
    echo = next(t for t in reg.profile(None) if t.qualified_name == "everything__echo")
    assert not grounded_in("what's the capital of france?", echo)
