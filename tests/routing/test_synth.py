"""Synthetic example requests: prompt shapes, parsing, and the shipped caches (current, complete, not eval data)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nexus_agent.registry import load_registry
from nexus_agent.routing.synth import STYLES, build_prompt, load_cache, main, parse_queries, queries_for


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
    assert len(empty) <= 3, empty
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
